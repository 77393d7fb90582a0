"""lint's rules scoped to what a figure is: HPCC's memory and compute figures never meet the link's
ceiling, fabric scans get no MPI or figure rules, and a run fabricbench made is never told to
"measure with fabricbench". The report's rigour section shows the same findings (same function)."""
from __future__ import annotations

from fabricbench.analysis.lint import lint
from fabricbench.report.words.lint import fix, what
from fabricbench.store import Host, Measurement, Run, RunData


def run(kind="benchmark", tags=None, provenance=None, rid=1):
    return Run(rid, f"u{rid}", "2026-11-27T12:00:00+00:00", None, dict(tags or {}), kind, "fabricbench x", "0",
               "complete", ranks=4, provenance=dict(provenance or {"hosts": ["a", "b"]}))


def hpcc(test, metric, unit, value):
    return Measurement("hpcc", {"test": test, "ranks": 4}, metric, unit, value=value)


def texts(result):
    return [f"{f.rule}: {what(f)} -- {fix(f)}" for f in result.findings]


def test_hpcc_memory_and_compute_figures_are_not_held_to_the_link():
    ms = [hpcc("StarSTREAM_Triad", "bandwidth", "MB/s", 33624.9), hpcc("SingleSTREAM_Copy", "bandwidth", "MB/s", 30000.0),
          hpcc("PTRANS_GBs", "bandwidth", "MB/s", 900.0), hpcc("StarDGEMM_Gflops", "flops", "Gflop/s", 40.0),
          hpcc("RandomlyOrderedRingBandwidth_GBytes", "bandwidth", "MB/s", 62.4),
          hpcc("MaxPingPongBandwidth_GBytes", "bandwidth", "MB/s", 117.0)]
    rd = RunData(run("hpcc", tags={"fabric": "eth1g"}, provenance={"hosts": ["a", "b"], "mpi_library": "Open MPI"}), ms, [])
    assert not [t for t in texts(lint([rd])) if t.startswith("peak")], texts(lint([rd]))
    # a ring figure above the line is still flagged, and only it
    ms.append(hpcc("NaturallyOrderedRingBandwidth_GBytes", "bandwidth", "MB/s", 900.0))
    peak = [f for f in lint([rd]).findings if f.rule == "peak"]
    assert len(peak) == 1 and "1 bandwidth points" in what(peak[0]) and "900.0 MB/s" in what(peak[0]), texts(lint([rd]))


def test_a_run_fabricbench_made_is_not_told_to_measure_with_fabricbench():
    rd = RunData(run("hpcc", provenance={"hosts": ["a", "b"]}), [hpcc("StarDGEMM_Gflops", "flops", "Gflop/s", 40.0)], [])
    mpi = [f for f in lint([rd]).findings if "MPI library" in what(f)]
    assert len(mpi) == 1 and "measure with fabricbench" not in fix(mpi[0]) and "hpcc run" in fix(mpi[0])
    imp = RunData(run("import", provenance={"import": {"format": "osu", "tool": "osu"}, "hosts": ["a", "b"]}),
                  [Measurement("latency", {"size": 8}, "latency", "us", value=1.0)], [])
    assert any("measure with fabricbench" in fix(f) for f in lint([imp]).findings if "MPI library" in what(f))
    tagged = RunData(run("hpcc", tags={"mpi": "openmpi-4.1"}), rd.measurements, [])
    assert not [f for f in lint([tagged]).findings if "MPI library" in what(f)]


def test_fabric_scans_and_non_mpi_tools_get_no_mpi_rules():
    counters = [Measurement("port", {"port": f"edge1:{i}"}, "symbol_errors", "count", value=float(i)) for i in range(3)]
    fabric = RunData(run("fabric", provenance={}), counters, [])
    assert lint([fabric]).findings == []
    iperf = RunData(run("import", provenance={"import": {"format": "iperf3", "tool": "iperf3"}, "hosts": ["a", "b"]}),
                    [Measurement("iperf3", {"size": 131072}, "bandwidth", "MB/s", value=100.0, median=100.0, n=10)], [])
    assert not [f for f in lint([iperf]).findings if "MPI" in what(f) or "rank count" in what(f)], texts(lint([iperf]))
