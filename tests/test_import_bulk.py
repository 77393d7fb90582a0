"""The store's bulk path for imports: what goes in comes out, in order, whatever mix of
statistics the points of a batch have; a failure rolls the whole transaction back."""
from __future__ import annotations

import pytest

from fabricbench.store import Measurement, StoreError, open_db
from fabricbench.store.bulk import BulkWriter


def point(i: int) -> Measurement:
    stats = {}
    if i % 3 == 0:
        stats["min"] = i / 10
    if i % 5 == 0:
        stats.update(n=i, stdev=0.5)
    detail = {"source": f"f.txt:{i}", "datatype": "MPI_INT"} if i % 2 else ({"source": f"f.txt:{i}"} if i % 7 else None)
    params = {"size": i, "ranks": 2} if i % 11 else {"size": i, "peers": [0, 1]}  # unhashable: no cache
    return Measurement("latency", params, "latency", "us", value=i + 0.25, mean=i + 0.25, detail=detail, **stats)


def test_points_round_trip_in_order(tmp_path):
    store = open_db(str(tmp_path / "bulk.db"))
    items = [point(i) for i in range(1, 1234)]
    with BulkWriter(store) as bulk:
        run = bulk.create_run(kind="import", tags={"x": "y"})
        for i in range(0, len(items), 250):  # batches that do not divide by the rows per INSERT
            bulk.add(run.id, items[i:i + 250])
        bulk.set_outcome(run.id, status="complete", ranks=2)
    stored = store.measurements(run.id)
    assert [m.seq for m in stored] == list(range(1, len(items) + 1))
    fields = ("benchmark", "params", "metric", "unit", "value", "mean", "min", "n", "stdev", "median", "detail")
    for want, got in zip(items, stored):
        assert all(getattr(want, f) == getattr(got, f) for f in fields), (want, got)
    assert store.get_run(run.id).status == "complete"
    store.close()


def test_a_failure_stores_nothing(tmp_path):
    store = open_db(str(tmp_path / "bulk.db"))
    with pytest.raises(RuntimeError):  # a parse error after some batches were written
        with BulkWriter(store) as bulk:
            run = bulk.create_run(kind="import")
            bulk.add(run.id, [point(i) for i in range(1, 300)])
            raise RuntimeError("the file turned out broken")
    with pytest.raises(StoreError, match="NOT NULL"):  # the database refuses a row: one message, no traceback
        with BulkWriter(store) as bulk:
            run = bulk.create_run(kind="import")
            bulk.add(run.id, [point(1), Measurement(None, {"size": 1}, "latency", "us", value=1.0)])
    assert store.list_runs() == []
    store.close()


def test_series_rows_store_what_the_parser_emits(tmp_path):
    """The import's fast path for two-column OSU tables (rows, no Measurement each) stores the same
    points, in the same order, as the general path that the parser emits without a sink; short
    tables are held and inserted together, interleaved with points of other tables in file order."""
    from fabricbench.importers import Source, parse_source
    from fabricbench.importers.ingest import ImportOptions, import_files

    path = tmp_path / "log.txt"
    runs = []
    for r in range(3):
        runs.append("# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n# Datatype: MPI_CHAR.\n" +
                    "".join(f"{s:<10d}{0.25 + s * 1e-3 + r:12.2f}\n" for s in (0, 1, 2, 4, 8)))
        runs.append("# OSU MPI Bi-Directional Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n" +
                    "".join(f"{s:<10d}{100.5 * s + r:12.2f}\n" for s in (1, 2, 4)))
    path.write_text("".join(runs))
    expected = parse_source(Source.open(str(path))).measurements
    store = open_db(str(tmp_path / "series.db"))
    [result] = import_files(store, [str(path)], ImportOptions(ranks=2))
    stored = store.measurements(result["run"])
    assert len(stored) == len(expected) == 24
    for want, got in zip(expected, stored):
        want_params = {**want.params, "ranks": 2}
        assert (got.benchmark, got.params, got.metric, got.unit, got.value, got.mean, got.median, got.detail) == \
            (want.benchmark, want_params, want.metric, want.unit, want.value, want.mean, want.median, want.detail)
    assert [m.metric for m in stored[5:8]] == ["bibandwidth"] * 3
    store.close()
