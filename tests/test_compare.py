"""Comparing runs: direction, significance, comparability, the CLI, and seed 000's switch latency."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fabricbench
from fabricbench.analysis import direction
from fabricbench.analysis.comparability import check_comparability, host_outliers, run_facts
from fabricbench.analysis.compare import compare
from fabricbench.report.words import compare as words
from fabricbench.report.words import direction as direction_words
from fabricbench.report.words.comparability import cautions, comparability_dict
from fabricbench.analysis.stats import t_critical_975, welch
from fabricbench.store import Host, Measurement, RunData
from fabricbench.store.records import Run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _m(value, size=8, metric="latency", bench="latency", **stats):
    unit = "us" if metric in ("latency", "time") else "MB/s"
    return Measurement(bench, {"size": size, "ranks": 2}, metric, unit, value=value, **stats)


def test_direction_rule_is_one_place():
    assert direction.lower_is_better("latency") and direction.lower_is_better("time")
    for metric in ("overhead_send", "overhead_recv", "gap", "cpu_per_message"):  # costs per message
        assert direction.lower_is_better(metric)
    for metric in ("bandwidth", "bibandwidth", "message_rate", "flops", "update_rate"):
        assert direction.higher_is_better(metric)
    # seed 001: "EDR outperforms FDR by 68% in PTRANS"; "ring latency is reduced by 51%"
    assert direction.improvement(100.0, 168.0, "bandwidth") == pytest.approx(0.68)
    assert direction.improvement(2.0, 0.98, "latency") == pytest.approx(0.51)
    assert direction_words.describe(0.68) == "B is 68% better"
    assert direction_words.describe(-0.169, "Switch") == "Switch is 17% worse"
    assert direction.improvement(0, 1, "latency") is None


def test_t_critical_values_come_from_scipy():
    assert t_critical_975(1) == pytest.approx(12.706, abs=1e-3) and t_critical_975(30) == pytest.approx(2.042, abs=1e-3)
    assert t_critical_975(60) == pytest.approx(2.000, abs=2e-3)
    assert t_critical_975(1e9) == pytest.approx(1.95996, abs=1e-4)
    t, df = welch(10.0, 1.0, 10, 12.0, 1.0, 10)
    assert t == pytest.approx(4.4721, rel=1e-4) and df == pytest.approx(18.0)


def test_compare_matches_by_variant_and_size():
    a = [_m(1.0, size=s) for s in (0, 8, 64)] + [_m(100.0, size=8, metric="bandwidth", bench="bw")]
    b = [_m(1.2, size=s) for s in (8, 64, 512)] + [_m(90.0, size=8, metric="bandwidth", bench="bibw")]
    result = compare(RunData(_run(1), a, []), RunData(_run(2), b, []))
    assert len(result.series) == 1 and [p.size for p in result.series[0].points] == [8, 64]
    p = result.series[0].points[0]
    assert p.diff == pytest.approx(0.2) and p.ratio == pytest.approx(1.2) and p.improvement == pytest.approx(-0.2)
    assert p.verdict == "not judged" and p.reason == "one measurement each"  # single numbers are shown, never called
    from fabricbench.report.words.matching import mismatch_paragraph

    text = mismatch_paragraph(result.mismatches)
    assert text == ("Not compared: latency: size 0 B only in A, size 512 B only in B; bw bandwidth only in A (1 size); "
                    "bibw bandwidth only in B (1 size).")
    # engine bookkeeping params (loop_length, measurements) do not stop points matching
    ra = Measurement("ring", {"size": 8, "ranks": 4, "ordering": "natural", "loop_length": 829, "measurements": 8}, "latency", "us", value=1.0)
    rb = Measurement("ring", {"size": 8, "ranks": 4, "ordering": "natural", "loop_length": 700, "measurements": 5}, "latency", "us", value=0.8)
    result = compare(RunData(_run(1), [ra], []), RunData(_run(2), [rb], []))
    assert result.series and result.series[0].points[0].improvement == pytest.approx(0.2)


def _facts(**over):
    f = {"cpu": {"model": "Xeon Gold 6148", "cores": 40, "sockets": 2, "threads": 80, "governor": "performance"},
         "memory_bytes": 192 * 2**30, "numa_nodes": 2, "kernel": "5.10", "os": "Debian 12",
         "mpi": {"library": "Open MPI", "version": "4.1.4"}, "compiler": "gcc 12",
         "env": {"OMPI_MCA_btl": "^openib"}, "module_params": {"hfi1": {"eager_buffer_size": "8388608"}},
         "infiniband": [{"device": "mlx5_0", "port": 1, "rate": "100 Gb/sec (4X EDR)", "state": "4: ACTIVE", "fw_ver": "16.35"}]}
    for path, value in over.items():
        d = f
        keys = path.split(".")
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return f


def _run(rid, prov=None, tags=None):
    return Run(id=rid, uuid=str(rid), created="", label=f"r{rid}", tags=tags or {}, kind="benchmark", command=None,
               tool_version="0", status="complete", ranks=(prov or {}).get("ranks"), provenance=prov or {})


def test_comparability_lists_every_confounder():
    prov = {"nodes": 2, "ranks": 64, "ppn": 32, "launcher": "mpirun", "mpi_library": "Open MPI 4.1.4", "env": {"UCX_TLS": "rc"}}
    hosts = [Host("n1", "d", _facts()), Host("n2", "d", _facts())]
    same = check_comparability(_run(1, prov), hosts, _run(2, copy.deepcopy(prov)), [Host("m1", "d", _facts()), Host("m2", "d", _facts())])
    assert same.comparable and same.differences == []
    prov_b = dict(prov, ppn=36, ranks=72, env={"UCX_TLS": "dc"})
    other = _facts(**{"cpu.model": "Xeon Platinum 8360Y", "cpu.cores": 36, "mpi.version": "4.1.5", "kernel": "6.1",
                      "module_params": {"hfi1": {"eager_buffer_size": "2097152"}}, "memory_bytes": 256 * 2**30})
    other["infiniband"][0]["rate"] = "56 Gb/sec (4X FDR)"
    diff = check_comparability(_run(1, prov), hosts, _run(2, prov_b), [Host("m1", "e", other)])
    keys = {d.key for d in diff.differences}
    assert {"ppn", "ranks", "cpu_model", "cores", "memory", "mpi_version", "kernel", "fabric", "link",
            "module.hfi1.eager_buffer_size", "env.UCX_TLS"} <= keys
    assert not diff.comparable
    d = next(d for d in diff.differences if d.key == "env.UCX_TLS")
    assert (d.a, d.b) == ("rc", "dc")
    # a fact recorded on one side only is a difference too
    one = check_comparability(_run(1, prov), hosts, _run(2, prov), [])
    assert any(x.key == "cpu_model" and x.b is None and "recorded for A only" in x.why for x in one.differences)


def test_a_run_started_on_a_busy_host_is_a_caution_not_a_difference():
    idle = {"nodes": 1, "ranks": 2, "host_load": {"loadavg_1m": 0.3, "cpus": 2}}
    busy = dict(idle, host_load={"loadavg_1m": 9.8, "cpus": 2})
    hosts = [Host("n1", "d", _facts())]
    assert cautions(check_comparability(_run(1, idle), hosts, _run(2, idle), hosts)) == []
    comp = check_comparability(_run(1, idle), hosts, _run(2, busy), hosts)
    assert comp.comparable  # the configuration is the same ...
    [caution] = cautions(comp)  # ... but B's timings may be the host's, not the fabric's
    assert caution.startswith("run B (load 9.8 on 2 CPUs) started on a busy host")
    assert comparability_dict(comp)["cautions"] == [caution]
    both = cautions(check_comparability(_run(1, busy), hosts, _run(2, busy), hosts))
    assert both and "run A (load 9.8 on 2 CPUs) and run B (load 9.8 on 2 CPUs)" in both[0]


def test_run_facts_summarise_hosts_that_disagree():
    hosts = [Host("n1", "a", _facts()), Host("n2", "b", _facts(kernel="6.1"))]
    facts = run_facts(_run(1, {"nodes": 2, "ranks": 4}), hosts)
    assert facts["kernel"].value == "5.10, 6.1"
    assert facts["ppn"].value == "2"
    assert "InfiniBand EDR 4x (detected)" == facts["fabric"].value


def test_host_outliers():
    hosts = [Host("n1", "a", dict(_facts(), hostname="n1")), Host("n2", "a", dict(_facts(), hostname="n2")),
             Host("n3", "b", dict(_facts(kernel="6.1", **{"cpu.governor": "powersave"}), hostname="n3"))]
    groups = host_outliers(hosts)
    assert groups.majority_digest == "a" and [o.hostname for o in groups.outliers] == ["n3"]
    assert {(d.key, d.a, d.b) for d in groups.outliers[0].differences} == {("kernel", "5.10", "6.1"), ("cpu.governor", "performance", "powersave")}
    assert host_outliers([]).outliers == []


def _load_example():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import seed000_switch_latency as example
    finally:
        sys.path.pop(0)
    return example


def test_seed000_switch_adds_about_013_us(tmp_path):
    """Seed 000, Figure 10: 0.77 us back-to-back vs 0.9 us through the switch - about 0.13 us added."""
    example = _load_example()
    result = example.run_example(str(tmp_path / "seed.db"), tmp_path / "out")
    comp = result["comparison"]
    assert [s.benchmark for s in comp.series] == ["latency"]
    s = comp.series[0]
    assert len(s.points) == 11
    assert s.mean_diff == pytest.approx(0.125, abs=0.005)
    lo, hi = s.diff_range
    assert 0.11 <= lo and hi <= 0.135
    assert all(p.improvement < 0 for p in s.points)  # through the switch is slower at every size
    assert s.points[2].a == 0.77 and s.points[2].b == 0.9
    assert "Switch adds 0.125 us on average vs B2B" in words.series_summary(s, "B2B", "Switch")
    claim = example.paper_sentence(s, "B2B", "Switch")  # what the script and examples/README.md say
    assert claim.startswith("Switch is 14.7% slower than B2B on average (12.6% to 16.9% over 11 sizes); not judged")
    # published single numbers: the difference is stated, never called significant
    assert all(p.verdict == "not judged" for p in s.points) and "not judged at 11 (one measurement each)" in words.series_summary(s)
    # the runs differ only in their path; nothing else confounds the comparison
    assert [d.key for d in comp.comparability.differences] == ["provenance.path"]

    # and the same story from the command line
    from fabricbench.cli import main

    runner = CliRunner()
    db = str(tmp_path / "seed.db")
    a, b = result["runs"]
    res = runner.invoke(main, ["--db", db, "compare", str(a.id), str(b.id)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.index("Comparability") < out.index("Measured once on each side")
    assert "0.770" in out and "+16.9%" in out and "+15.4%" in out  # 0.90 / 0.77, 0.90 / 0.78
    assert "B adds 0.125 us on average vs A (0.120 to 0.130 us over 11 sizes)" in out  # the one formatter: 3 digits
    assert "not judged" in out and "one measurement each" in out
    res = runner.invoke(main, ["--db", db, "compare", str(a.id), str(b.id), "--json", "--benchmark", "latency"])
    data = json.loads(res.output)
    assert data["series"][0]["mean_diff"] == pytest.approx(0.125, abs=0.005)
    assert data["series"][0]["points"][0]["diff"] == pytest.approx(0.12)
    assert data["comparability"]["comparable"] is False


def test_cli_compare_comparable_runs_and_errors(tmp_path):
    from fabricbench.cli import main

    store = fabricbench.open_db(str(tmp_path / "c.db"))
    stats = dict(n=50, stdev=0.01, min=0.98, max=1.05, p99=1.04, median=1.0)
    prov = {"nodes": 2, "ranks": 2, "ppn": 1}
    hosts = [Host("n1", "d", _facts()), Host("n2", "d", _facts())]
    a = store.save_run([_m(1.0, size=s, mean=1.0, **stats) for s in (8, 64)], label="a", provenance=prov, hosts=hosts)
    b = store.save_run([_m(1.001, size=s, mean=1.001, **stats) for s in (8, 64)], label="b", provenance=prov, hosts=hosts)
    runner = CliRunner()
    res = runner.invoke(main, ["--db", str(tmp_path / "c.db"), "compare", str(a.id), str(b.id)])
    assert res.exit_code == 0, res.output
    assert "Comparable: no recorded provenance differences." in res.output
    res = runner.invoke(main, ["--db", str(tmp_path / "c.db"), "compare", str(a.id), str(b.id), "--json"])
    data = json.loads(res.output)
    assert data["comparability"] == {"comparable": True, "differences": [], "cautions": [],
                                     "not_recorded": data["comparability"]["not_recorded"]}
    points = data["series"][0]["points"]
    assert [p["significant"] for p in points] == [False, False]
    assert points[0]["verdict"] == "no significant difference" and points[0]["text"] == "no significant difference"
    assert data["summary"].startswith("Overall: no significant difference between A and B at 2 points")
    res = runner.invoke(main, ["--db", str(tmp_path / "c.db"), "compare", str(a.id), "77"])
    assert res.exit_code == 1 and "no run '77'" in res.output
    res = runner.invoke(main, ["--db", str(tmp_path / "c.db"), "compare", str(a.id), str(b.id), "--benchmark", "nope"])
    assert res.exit_code == 2 and "neither run has benchmark 'nope'" in res.output


def test_a_fact_that_is_a_figure_differs_only_when_it_reads_differently():
    """Memory, an uneven ranks per node and a PCIe link are Quantities rounded as they read:
    12.01 and 12.02 GiB are the same fact ('12 GiB'), 9.5 and 12 GiB are not (words: fact_text)."""
    from fabricbench.report.words.comparability import comparability_dict, fact_text

    def hosts(gib):
        return [Host("n1", "d", _facts(memory_bytes=int(gib * 2**30)))]

    prov = {"nodes": 2, "ranks": 3}
    same = check_comparability(_run(1, prov), hosts(12.01), _run(2, prov), hosts(12.02))
    assert "memory" not in {d.key for d in same.differences}
    assert fact_text(run_facts(_run(1, prov), hosts(12.01))["ppn"].value) == "1.5 (uneven)"
    other = check_comparability(_run(1, prov), hosts(9.5), _run(2, prov), hosts(12.0))
    [memory] = [d for d in comparability_dict(other)["differences"] if d["key"] == "memory"]
    assert (memory["a"], memory["b"]) == ("9.5 GiB", "12 GiB")


def test_a_change_within_a_figures_resolution_is_not_seen():
    """OpenFOAM's ClockTime is whole seconds: 2 s against 1 s may be runs 0.01 s apart, so compare
    shows them side by side as within the resolution, never as 50% better; a change larger than
    the step is shown with its direction."""
    from fabricbench.report.words.compare import reason, single_row

    def app(value, res):
        return Measurement("openfoam-cavity", {"case": "cavity"}, "time", "s", value=value, detail={"resolution_s": res})

    result = compare(RunData(_run(1), [app(2.0, 1.0)], []), RunData(_run(2), [app(1.0, 1.0)], []))
    ((s, p),) = result.single_valued
    assert p.reason == "within the figure's resolution" and p.verdict == "not judged"
    assert reason(p) == "the change is within the figure's resolution (1 s)"
    assert single_row(s, p)["direction"] == "within resolution"
    fine = compare(RunData(_run(1), [app(2.0, 0.01)], []), RunData(_run(2), [app(1.0, 0.01)], []))
    ((s, p),) = fine.single_valued
    assert p.reason == "one measurement each" and single_row(s, p)["direction"] == "better"
