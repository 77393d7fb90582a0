"""Reports and comparisons from real fabricbench-mpi runs (2 ranks on this machine)."""
from __future__ import annotations

import json
import subprocess

import pytest

pytestmark = pytest.mark.mpi

import fabricbench
from fabricbench.store import Host, Measurement


def _engine():
    from fabricbench.native import engine_path

    return str(engine_path())


def _launcher():
    from fabricbench.launch import Layout, get_launcher

    return get_launcher("mpirun", Layout(np=2))


def run_engine(benchmark: str, *args: str):
    """(run record, point records) of one fabricbench-mpi invocation."""
    launcher = _launcher()
    cmd = launcher.command([_engine(), benchmark, "--time-budget", "0.02", *args])
    proc = subprocess.run(cmd, env=launcher.environment(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    run = next(r for r in records if r.get("record") == "run")
    points = [r for r in records if r.get("record") == "point"]
    assert points and records[-1].get("record") == "end"
    return run, points


def store_engine_run(store, label, benchmarks):
    measurements, run_record = [], None
    for bench, args in benchmarks:
        run_record, points = run_engine(bench, *args)
        measurements += [Measurement.from_record(p) for p in points]
    hosts = run_record["hosts"]
    prov = {"hosts": sorted(set(hosts)), "nodes": len(set(hosts)), "ranks": run_record["ranks"], "ppn": run_record["ranks"],
            "launcher": "mpirun", "mpi_library": run_record["mpi_library"], "mpi_version": run_record["mpi_version"]}
    host_records = []
    try:  # this host's facts, as `fabricbench run` records them
        from fabricbench import provenance

        facts = provenance.collect()
        host_records = [Host(facts.get("hostname", "?"), provenance.digest(facts), facts)]
    except ImportError:
        pass
    return store.save_run(measurements, kind="benchmark", label=label, tags={"source": "engine"}, provenance=prov,
                          ranks=run_record["ranks"], command=" ".join(b for b, _ in benchmarks), hosts=host_records)


@pytest.fixture(scope="module")
def engine_runs(tmp_path_factory):
    _engine()
    _launcher()
    d = tmp_path_factory.mktemp("engine")
    store = fabricbench.open_db(str(d / "engine.db"))
    first = store_engine_run(store, "engine A", [("latency", ["--sizes", "0:4K"]), ("bw", ["--sizes", "1:64K"]),
                                                 ("allreduce", ["--sizes", "4:1K"]), ("ring", [])])
    second = store_engine_run(store, "engine B", [("latency", ["--sizes", "0:4K"])])
    return store, first, second, d


def test_report_from_engine_runs(engine_runs):
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report

    store, first, second, d = engine_runs
    report = report_of(store, [first.id, second.id])
    ids = {s.id for s in report.sections}
    assert {"runs", "configuration", "latency", "bandwidth", "collectives", "hpcc-network"} <= ids
    assert not [s for s in report.sections if s.id.startswith("error-")]
    # one curve per run: the engine's per-point bookkeeping params do not split series
    lat = [s for s in report.runs[0].series if s.benchmark == "latency"]
    assert len(lat) == 1 and len(lat[0].points) == 14  # 0 and 1 .. 4096
    ring = [s for s in report.runs[0].series if s.benchmark == "ring"]
    assert {s.variant.get("ordering") for s in ring} == {"natural", "random"}
    # all ranks on one host: no % of fabric peak, and the report says why only if a fabric was named
    coll = next(s for s in report.sections if s.id == "collectives")
    table = next(b for sub in coll.subsections for b in sub.blocks if b.kind == "table")
    assert "[" in table.cells()[0][1].text  # mean [fastest rank - slowest rank] from per_rank detail
    html = write_report(report, d / "engine.html").read_text()
    assert "engine A" in html and "engine B" in html and html.count("data:image/svg+xml;base64,") == len(report.figures())
    md = write_report(report, d / "engine.md", fmt="markdown").read_text()
    assert "## Latency" in md


def test_compare_engine_runs(engine_runs):
    from fabricbench.analysis.compare import compare

    store, first, second, _ = engine_runs
    result = compare(store.load(first.id), store.load(second.id))
    assert result.comparability.comparable, result.comparability.differences
    assert [s.benchmark for s in result.series] == ["latency"]
    points = result.series[0].points
    assert [p.size for p in points] == [0] + [2**i for i in range(13)]
    # the engine records n and the spread of its samples: every point with enough of them is judged
    assert all(p.significant is not None for p in points if min(p.ma.n, p.mb.n) >= 6)
    from fabricbench.report.words.matching import reason

    assert any(m.what == "bw bandwidth" and reason(m).startswith("only in A") for m in result.mismatches)
