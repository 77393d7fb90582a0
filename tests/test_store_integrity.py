"""The store refuses to write into a damaged SQLite file, a directory or memory (issue 37)."""
from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from conftest import skip_unless

DATA = Path(__file__).parent / "data" / "import"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def damaged_db(cli, db_path):
    """A database with real runs whose middle pages were overwritten with garbage."""
    for name in ("osu_latency_7.4_all_datatypes.txt", "mpigraph_6nodes.txt", "osu_collectives_full.txt", "imb_mpi1.txt"):
        cli("import", str(DATA / name))
    page = sqlite3.connect(db_path).execute("pragma page_size").fetchone()[0]
    pages = db_path.stat().st_size // page
    assert pages > 10
    with open(db_path, "r+b") as f:
        for n in range(pages // 2, pages // 2 + 3):
            f.seek(n * page)
            f.write(bytes((n * 37 + i) % 251 for i in range(page)))
    assert _damaged(db_path)
    return db_path


def _damaged(path: Path) -> bool:
    try:
        return sqlite3.connect(path).execute("pragma quick_check").fetchall() != [("ok",)]
    except sqlite3.DatabaseError:
        return True


def _assert_refused(out, db_path: Path) -> None:
    assert out.returncode == 1, out.stdout + out.stderr
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, out.stderr
    assert "damaged" in lines[0] and str(db_path) in lines[0] and ".recover" in lines[0]
    assert "Traceback" not in out.stderr


def test_import_refuses_a_damaged_database(cli, damaged_db):
    before = _digest(damaged_db)
    out = cli("import", str(DATA / "osu_latency.txt"), check=False)
    _assert_refused(out, damaged_db)
    assert _digest(damaged_db) == before
    assert not Path(str(damaged_db) + "-wal").exists() or Path(str(damaged_db) + "-wal").stat().st_size == 0


def test_run_refuses_a_damaged_database(cli, damaged_db):
    skip_unless("mpi", "engine")
    before = _digest(damaged_db)
    out = cli("run", "latency", "--np", "2", "--sizes", "0:8", "--iterations", "10", check=False, timeout=300)
    _assert_refused(out, damaged_db)
    assert _digest(damaged_db) == before


def test_sound_database_still_written(cli, db_path):
    cli("import", str(DATA / "osu_latency.txt"))
    cli("import", str(DATA / "osu_bw.txt"))
    assert sqlite3.connect(db_path).execute("select count(*) from runs").fetchone()[0] == 2


def test_check_is_skipped_above_the_size_bound(db_path, monkeypatch):
    from fabricbench.store import db as store_db

    monkeypatch.setenv("FABRICBENCH_QUICK_CHECK_MAX_MB", "0.001")
    assert store_db.quick_check_max_bytes() == 1000
    monkeypatch.setenv("FABRICBENCH_QUICK_CHECK_MAX_MB", "junk")
    assert store_db.quick_check_max_bytes() == store_db.QUICK_CHECK_MAX_BYTES


def test_directory_and_memory_databases_named(cli, tmp_path):
    folder = tmp_path / "dir.db"
    folder.mkdir()
    for args in (("runs",), ("import", str(DATA / "osu_latency.txt"))):
        out = cli("--db", f"sqlite:///{folder}", *args, check=False)
        assert out.returncode == 1
        assert "is a directory, not a database file" in out.stderr and str(folder) in out.stderr
        assert "does not exist" not in out.stdout + out.stderr
    out = cli("--db", "sqlite://", "import", str(DATA / "osu_latency.txt"), check=False)
    assert out.returncode == 1
    assert "in-memory database" in out.stderr and "keeps nothing" in out.stderr and "give a file" in out.stderr
    assert "no such table" not in out.stderr
    assert os.listdir(folder) == []
