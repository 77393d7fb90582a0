"""The store on PostgreSQL: a private server on a Unix socket (no TCP), started for these tests."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from fabricbench.store import Measurement, StoreError, open_db

PG_ROOT = Path("/usr/lib/postgresql")


def _pg_bin():
    versions = sorted((p for p in PG_ROOT.glob("*/bin") if (p / "initdb").exists()), key=lambda p: int(p.parent.name))
    return versions[-1] if versions else None


def _as_postgres(argv, **kw):
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(prefix + argv, check=True, capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def pg_url():
    pg_bin = _pg_bin()
    if pg_bin is None:
        pytest.skip("PostgreSQL server binaries not installed (Debian: apt-get install postgresql; make test installs them)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root needs runuser to start PostgreSQL as the postgres user")
    base = Path(tempfile.mkdtemp(prefix="fb-pg-"))
    base.chmod(0o755)
    data = base / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(data, "postgres")
    _as_postgres([str(pg_bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "fb"])
    _as_postgres([str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o",
                  f"-k {base} -c listen_addresses='' -p 54329", "start"])
    try:
        _as_postgres([str(pg_bin / "createdb"), "-h", str(base), "-p", "54329", "-U", "fb", "fabricbench"])
        yield f"postgresql+psycopg2://fb@/fabricbench?host={base}&port=54329"
    finally:
        subprocess.run((["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else [])
                       + [str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_store_round_trip_on_postgresql(pg_url):
    db = open_db(pg_url)
    run = db.create_run(label="pg", tags={"fabric": "edr"}, ranks=2, provenance={"hosts": ["a", "b"]})
    db.add_measurements(run.id, [Measurement("bw", {"size": s, "ranks": 2}, "bandwidth", "MB/s", value=float(s), n=3,
                                             detail={"per_pair": [1, 2]}) for s in (1, 2, 4)])
    db.finish_run(run.id, "complete")
    again = open_db(pg_url)
    stored = again.get_run(run.uuid[:8])
    assert stored.status == "complete" and stored.tags == {"fabric": "edr"} and stored.provenance == {"hosts": ["a", "b"]}
    items = again.measurements(run.id)
    assert [(m.size, m.value, m.detail) for m in items] == [(1, 1.0, {"per_pair": [1, 2]}), (2, 2.0, {"per_pair": [1, 2]}),
                                                            (4, 4.0, {"per_pair": [1, 2]})]
    assert again.measurements_by_run([run.id], metric="bandwidth")[run.id][0].params == {"size": 1, "ranks": 2}
    with pytest.raises(StoreError):
        again.save_run([Measurement("bw", {"size": 1}, None, "MB/s")], label="broken")
    assert [r.label for r in again.list_runs()] == ["pg"]


@pytest.mark.mpi
def test_cli_run_into_postgresql(cli, pg_url):
    cli.db = pg_url
    cli("run", "latency", "--np", "2", "--sizes", "1:1K", "--iterations", "100", "--label", "into pg")
    db = open_db(pg_url)
    run = db.list_runs(tags=None)[-1]
    assert run.label == "into pg" and run.status == "complete"
    assert sorted(m.size for m in db.measurements(run.id)) == [2**i for i in range(11)]
    assert db.hosts(run.id)[0].facts["cpu"]["model"]
