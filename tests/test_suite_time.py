"""A run's time bounded before it starts (planning.suite_time), and the precision mark in `show`.

The planner is pure arithmetic over the engine's benchmark table: no MPI needed for the first
tests. The last runs the engine through the CLI and checks the announcement and the mark."""
from __future__ import annotations

import pytest

from fabricbench import suite
from fabricbench.analysis.precision import missed_precision, missed_share, precision_of
from fabricbench.store import Measurement
from fabricbench.planning.suite_time import GUARD, SHARE_S, iteration_s, plan_time

MBIT = 1e6 / 8


def test_fast_or_unknown_links_change_nothing_and_the_bound_covers_every_ceiling():
    steps = suite.plan(["quick"], 4)
    tp = plan_time(steps, 4, None, repeat=1)
    assert tp.steps == steps and not tp.adjustments
    # Every quick point may run to twice its 0.05 s budget: the bound is at least that.
    assert tp.points == 94 and tp.bound_s >= 94 * GUARD * 0.05


def test_a_slow_link_caps_windows_and_skips_what_cannot_fit():
    steps = suite.plan(["quick"], 4)
    rate = 50 * MBIT
    tp = plan_time(steps, 4, rate, repeat=3)
    by = {s.benchmark: s for s in tp.steps}
    for bench in ("bw", "bibw"):
        args = list(by[bench].args)
        cap = int(args[args.index("--max-window-bytes") + 1])
        largest = by[bench].planned_sizes()[-1]
        # One message of the largest kept size fits the share per launch with warm-up and floor.
        assert largest <= cap
        assert (3 + 10) * iteration_s(bench, largest, 1, 4, rate) <= SHARE_S / 3 + 1e-9
        assert 4 * 1024 * 1024 not in by[bench].planned_sizes()
    skipped = {(a.benchmark, a.size) for a in tp.skipped}
    assert ("bibw", 4 * 1024 * 1024) in skipped and ("bw", 4 * 1024 * 1024) in skipped
    # The run is bounded well inside the 3 minutes the 50 Mbit lab quick run must stay within.
    assert tp.bound_s < 180


def test_a_fixed_iteration_count_is_never_cut():
    steps = suite.plan(["bw"], 2, sizes="1M:4M", extra=["--iterations", "20"])
    tp = plan_time(steps, 2, 50 * MBIT)
    assert tp.steps == steps and not tp.adjustments


def _point(detail):
    return Measurement(benchmark="latency", params={"size": 8}, metric="latency", unit="us", value=1.0,
                       median=1.0, n=40, detail=detail)


def test_precision_readers():
    met = _point({"precision": {"confidence": 0.95, "median_ci": [0.99, 1.01], "reached": 0.01, "target": 0.02,
                                "met": True}})
    missed = _point({"precision": {"confidence": 0.95, "reached": 0.2, "target": 0.01, "met": False}})
    none = _point({"precision": {"confidence": 0.95, "reached": None, "target": None}})
    old = _point(None)
    assert precision_of(met).median_ci == (0.99, 1.01) and not missed_precision(met)
    assert missed_precision(missed) and not missed_precision(none) and not missed_precision(old)
    assert precision_of(old) is None
    assert missed_share([met, missed, none, old]) == (1, 2)


@pytest.mark.mpi
def test_run_announces_its_bound_and_show_marks_points_short_of_precision(cli):
    out = cli("run", "latency", "--sizes", "8:16", "--np", "2", "--repeat", "1", "--time-budget", "0.01",
              "--precision", "1e-9").stdout
    assert "2 points in 1 benchmarks" in out and "at most about" in out
    shown = cli("show", "1").stdout
    assert "* 2 of 2 points did not reach their --precision target" in shown
    rows = [line for line in shown.splitlines() if line.strip().startswith(("8 ", "16 "))]
    assert len(rows) == 2 and all(" * " in r for r in rows)
    loose = cli("run", "latency", "--sizes", "8:8", "--np", "2", "--repeat", "1", "--time-budget", "2",
                "--precision", "0.5").stdout
    assert "did not reach" not in cli("show", "2").stdout, loose
    bad = cli("run", "latency", "--iterations", "5", "--precision", "0.01", check=False)
    assert bad.returncode == 2 and "--precision" in bad.stderr and "Traceback" not in bad.stderr


def test_merged_launches_get_the_precision_of_all_their_samples():
    from fabricbench.analysis.precision import from_sketch, median_ci_ranks
    from fabricbench.analysis.stats import merge_launch as merge

    assert median_ci_ranks(5) is None and median_ci_ranks(100) == (39, 60)
    q = [1.0 + k / 100 for k in range(101)]  # uniform on [1, 2]
    rec = from_sketch(q, 100, 0.01)
    assert rec["median_ci"] == pytest.approx([1.0 + 39 / 99, 1.0 + 60 / 99])
    assert rec["reached"] == pytest.approx((21 / 99) / 2 / 1.5) and rec["met"] is False

    def launch(n, value):
        return Measurement(benchmark="allreduce", params={"size": 8}, metric="latency", unit="us", value=value,
                           n=n, iterations=n, min=1.0, median=1.5, mean=1.6, p99=2.0, max=2.0, stdev=0.3,
                           detail={"sketch": {"q": q}, "stats_over": "per-call time, max over ranks",
                                   "precision": {"confidence": 0.95, "reached": 0.5, "target": 0.01, "met": False}})
    merged = merge(launch(50, 1.2), launch(150, 1.4))
    pr = merged.detail["precision"]
    assert merged.n == 200 and pr["target"] == 0.01 and pr == from_sketch(merged.detail["sketch"]["q"], 200, 0.01)
    # OSU's collective figure over both launches: weighted by calls, not a harmonic rate.
    assert merged.value == pytest.approx((1.2 * 50 + 1.4 * 150) / 200)


def test_the_report_marks_points_short_of_their_precision(tmp_path):
    import fabricbench
    from fabricbench.cli.report import report_of
    from fabricbench.report import render_html

    def m(size, met):
        return Measurement("latency", {"ranks": 2, "size": size}, "latency", "us", value=2.0, n=100, iterations=100,
                           min=1.0, median=2.0, mean=2.0, p99=3.0, max=3.0, stdev=0.1,
                           detail={"precision": {"confidence": 0.95, "median_ci": [1.9, 2.1], "reached": 0.05,
                                                 "target": 0.01 if not met else 0.1, "met": met}})

    store = fabricbench.open_db(str(tmp_path / "p.db"))
    run = store.save_run([m(8, True), m(16, False)], status="complete")
    html = render_html(report_of(store, [run.id]))
    assert "* marks a point whose median" in html and "wider than its --precision target" in html
    assert '<td class="r">2.00 *</td>' in html and '<td class="r">2.00</td>' in html  # 16 B marked, 8 B not


def test_the_lab_rate_is_the_slowest_link_between_the_hosts_used():
    from types import SimpleNamespace

    from fabricbench.planning.suite_time import launch_seconds, link_rate_Bps

    rates = {"n1": 1e9, "n2": 1e9, "n3": 50e6}
    lab = SimpleNamespace(node_names=list(rates), node=lambda h: SimpleNamespace(rate_bps=rates[h], switch="sw1"),
                          spec=SimpleNamespace(uplink_bps=lambda: None))
    assert link_rate_Bps(SimpleNamespace(lab=lab, layout=SimpleNamespace(hosts=["n1", "n2"]))) == 1e9 / 8
    assert link_rate_Bps(SimpleNamespace(lab=lab, layout=SimpleNamespace(hosts=["n1", "n3", "n1"]))) == 50e6 / 8
    assert link_rate_Bps(SimpleNamespace(layout=SimpleNamespace(hosts=["a", "b"]))) is None  # no lab: unknown
    assert launch_seconds(load=0.5, cores=2) == launch_seconds(load=2.0, cores=2) < launch_seconds(load=8.0, cores=2)
