"""Imports into PostgreSQL: the bulk path (the driver's executemany), digests found through the
JSON provenance, and a failed import that leaves nothing, as on SQLite."""
from __future__ import annotations

from pathlib import Path

import pytest

from fabricbench.importers import ImportFormatError
from fabricbench.importers.ingest import ImportOptions, import_files
from fabricbench.store import open_db

import test_postgres

pg_url = test_postgres.pg_url  # the private server of the store's PostgreSQL tests

DATA = Path(__file__).parent / "data" / "import"


def test_import_into_postgresql(pg_url, tmp_path):
    store = open_db(pg_url)
    files = [str(DATA / n) for n in ("osu_latency_7.4_all_datatypes.txt", "mpip_known_calls_4ranks.mpiP",
                                     "iperf3_server_tcp_loopback.json")]
    results = import_files(store, files, ImportOptions(tags={"fabric": "shm"}))
    assert [r["status"] for r in results] == ["complete"] * 3
    osu = store.get_run(results[0]["run"])
    assert osu.tags == {"fabric": "shm"} and store.count_measurements(osu.id) == 66
    stored = store.measurements(osu.id)
    assert stored[-1].params == {"size": 4194304, "ranks": 2, "datatype": "MPI_FLOAT"}
    assert stored[0].detail == {"source": "osu_latency_7.4_all_datatypes.txt:4", "datatype": "MPI_CHAR"}
    assert store.get_run(results[1]["run"]).kind == "profile"
    assert store.artifact(results[1]["run"], "profile")["ranks"] == 4
    again = import_files(store, files[:1])
    assert again[0]["status"] == "duplicate" and again[0]["run"] == osu.id
    before = len(store.list_runs())
    bad = tmp_path / "bad_osu.txt"
    bad.write_text((DATA / "osu_bw.txt").read_text().replace("\n8 ", "\n8 x ", 1))
    with pytest.raises(ImportFormatError, match="bad_osu.txt"):
        import_files(store, [str(DATA / "osu_bibw.txt"), str(bad)])
    assert len(store.list_runs()) == before
    store.close()
