"""The results database: writes, reads, versions, migration, corruption, the Python API."""
import sqlite3

import pytest

import fabricbench
from fabricbench.store import Measurement, StoreError, open_db
from fabricbench.store.schema import SCHEMA_VERSION


def point(size, value):
    return Measurement("latency", {"size": size, "ranks": 2}, "latency", "us", value=value, n=10, min=value, max=value * 2)


def test_write_and_read_back(db_path):
    db = fabricbench.open_db(str(db_path))
    run = db.create_run(label="edr", tags={"fabric": "edr"}, ranks=2)
    db.add_measurement(run.id, point(0, 1.1))
    db.add_measurements(run.id, [point(8, 1.2), point(16, 1.3)])
    db.finish_run(run.id, "complete")
    again = open_db(str(db_path))
    stored = again.get_run(run.id)
    assert stored.status == "complete" and stored.tags == {"fabric": "edr"} and stored.finished
    assert [m.size for m in again.measurements(run.id)] == [0, 8, 16]
    assert [m.seq for m in again.measurements(run.id)] == [1, 2, 3]
    assert again.get_run("last").id == run.id
    assert again.get_run(run.uuid[:8]).id == run.id
    with pytest.raises(StoreError, match="no run '99'"):
        again.get_run(99)


def test_save_run_is_all_or_nothing(db_path):
    db = open_db(str(db_path))
    bad = Measurement("latency", {"size": 1}, None, "us")  # metric is NOT NULL
    with pytest.raises(StoreError):
        db.save_run([point(1, 1.0), bad], label="broken")
    assert db.list_runs() == []


def test_to_dataframe(db_path):
    pytest.importorskip("pandas")
    db = open_db(str(db_path))
    run = db.create_run()
    db.add_measurements(run.id, [point(8, 1.2), point(16, 1.3)])
    frame = fabricbench.to_dataframe(db.measurements(run.id))
    assert list(frame["param_size"]) == [8, 16]
    assert list(frame["value"]) == [1.2, 1.3]


def test_newer_schema_is_refused_and_left_alone(db_path):
    open_db(str(db_path)).create_run(label="keep")
    con = sqlite3.connect(db_path)
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    before = dump(db_path)
    with pytest.raises(StoreError, match="newer than this fabricbench"):
        open_db(str(db_path))
    assert dump(db_path) == before


def dump(path):
    con = sqlite3.connect(path)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def test_corrupt_file_is_named(tmp_path):
    bad = tmp_path / "broken.db"
    bad.write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(StoreError, match="broken.db"):
        open_db(str(bad))


def make_v1_database(path):
    """The schema of version 1: runs and measurements only, no schema_version table."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, uuid VARCHAR(36) NOT NULL UNIQUE,
            created VARCHAR(32) NOT NULL, finished VARCHAR(32), label TEXT, tags JSON NOT NULL, command TEXT,
            tool_version VARCHAR(32) NOT NULL, status VARCHAR(16) NOT NULL, message TEXT, ranks INTEGER,
            provenance JSON NOT NULL);
        CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL, benchmark VARCHAR(64) NOT NULL, size INTEGER, params JSON NOT NULL,
            metric VARCHAR(32) NOT NULL, unit VARCHAR(16) NOT NULL, n INTEGER, iterations INTEGER, value FLOAT,
            min FLOAT, median FLOAT, mean FLOAT, p99 FLOAT, max FLOAT, stdev FLOAT, detail JSON);
        INSERT INTO runs VALUES (1, 'aaaaaaaa-0000-0000-0000-000000000001', '2026-01-01T00:00:00+00:00', NULL,
            'old', '{"fabric": "fdr"}', 'fabricbench run', '0.0.9', 'complete', NULL, 2, '{}');
        INSERT INTO measurements (run_id, seq, benchmark, size, params, metric, unit, value)
            VALUES (1, 1, 'latency', 8, '{"size": 8, "ranks": 2}', 'latency', 'us', 1.5);
        """
    )
    con.commit()
    con.close()


def test_migration_from_version_1(db_path, cli):
    make_v1_database(db_path)
    refused = cli("runs", check=False)
    assert refused.returncode == 1 and "fabricbench db migrate" in refused.stderr
    out = cli("db", "migrate").stdout
    assert "from schema version 1 to" in out
    db = open_db(str(db_path))
    assert db.schema_version() == SCHEMA_VERSION
    run = db.get_run(1)
    assert run.kind == "benchmark" and run.tags == {"fabric": "fdr"}
    assert db.measurements(1)[0].value == 1.5
    db.add_hosts(1, [])  # the new tables exist
    assert db.hosts(1) == []
    assert "nothing to do" in cli("db", "migrate").stdout


def test_db_path_command(cli, db_path):
    assert cli("db", "path").stdout.strip() == str(db_path.resolve())
