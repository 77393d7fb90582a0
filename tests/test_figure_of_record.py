"""The figure of record (analysis/record.py): which statistic a point's headline is, and every
shown figure above a physical ceiling found; on real engine points and on hand-made ones."""
from __future__ import annotations

import pytest

from fabricbench.analysis import record
from fabricbench.analysis.headlines import headline_figures, points_over_ceiling
from fabricbench.analysis.series import headline
from fabricbench.store import Measurement

Q = [1.0 + i / 10 for i in range(101)]  # a sketch: p0 1.0 .. p100 11.0, median 6.0


def point(benchmark="latency", metric="latency", unit="us", size=8, **kw):
    detail = kw.pop("detail", None)
    return Measurement(benchmark, {"size": size}, metric, unit, detail=detail, **kw)


def test_latency_headline_is_the_median_with_its_ci_not_the_mean_a_preempted_call_moves():
    m = point(value=538.3, mean=538.3, median=8.37, n=200, min=7.0, max=90000.0, stdev=6000.0,
              detail={"sketch": {"q": Q}})
    f = record.figure_of_record(m)
    assert (f.value, f.statistic, f.mean) == (8.37, record.MEDIAN, 538.3)
    assert f.ci is not None and f.ci[0] < 6.0 < f.ci[1]  # the CI is read off the sketch around its median
    assert headline(m) == 8.37


def test_bandwidth_headline_is_the_rate_over_all_iterations():
    m = point("bw", "bandwidth", "MB/s", 4096, value=103.8, median=107.6, mean=105.0, p99=114.0, n=30,
              iterations=300, detail={"elapsed_s": 0.2})
    f = record.figure_of_record(m)
    assert (f.value, f.statistic, f.ci) == (103.8, record.RATE_ALL, None)


def test_collective_with_only_rank_averages_says_mean_without_a_per_call_distribution():
    m = point("allreduce", value=538.3, mean=538.3, median=9.1, n=4,
              detail={"stats_over": "per-rank average call time", "per_rank": [8, 9, 10, 2100]})
    f = record.figure_of_record(m)
    assert (f.value, f.statistic, f.flags) == (538.3, record.MEAN_NO_CALLS, (record.FLAG_NO_CALLS,))
    from fabricbench.analysis import stats

    assert stats.center(m).statistic == "mean"  # compare and history never call a rank median a median
    # once the engine records calls, the median is the headline
    calls = point("allreduce", value=538.3, mean=538.3, median=8.37, n=5000, detail={"stats_over": "calls", "sketch": {"q": Q}})
    assert record.figure_of_record(calls).statistic == record.MEDIAN


def test_single_published_numbers_and_hpcc_figures_are_their_value():
    osu = point(value=0.28)
    assert record.figure_of_record(osu).statistic == record.DEFINED
    ring = point("ring", "bandwidth", "MB/s", 2_000_000, value=62.4, median=63.0, n=10)
    assert (record.figure_of_record(ring).value, record.figure_of_record(ring).statistic) == (62.4, record.DEFINED)
    assert record.figure_of_record(point()) is None


def test_every_shown_bandwidth_figure_above_the_ceiling_is_found():
    q = [100.0 + i * 8 for i in range(101)]  # p99 892 MB/s, a band far above a 125 MB/s line
    m = point("bw", "bandwidth", "MB/s", 4096, value=27.9, median=32.6, p99=892.0, max=900.0, n=39,
              iterations=39, detail={"elapsed_s": 0.3, "sketch": {"q": q}})
    found = record.over_ceiling(m, 125.0)
    names = [e.statistic for e in found]
    assert names[0] == "max" and found[0].ratio == pytest.approx(7.2)
    assert "p99" in names and "median" not in names and record.RATE_ALL not in names
    assert record.over_ceiling(m, None) == [] and record.over_ceiling(m, 1e6) == []
    lat = point(value=5.0, median=4.0, p99=900.0)
    assert record.over_ceiling(lat, 125.0) == []  # a time is never held to a bandwidth ceiling
    over = points_over_ceiling([m, lat], 125.0)
    assert [(p.benchmark, p.size) for p in over] == [("bw", 4096)]
    bibw = point("bibw", "bibandwidth", "MB/s", 4096, value=200.0, median=210.0, p99=240.0, max=245.0, n=30)
    assert points_over_ceiling([bibw], 125.0) == []  # both directions: 2 x the link


def test_headlines_carry_the_statistic_and_the_excess():
    lat = point(value=538.3, mean=538.3, median=8.37, n=200)
    bw = point("bw", "bandwidth", "MB/s", 4096, value=119.0, median=121.0, p99=906.0, max=925.6, n=30,
               iterations=30, detail={"elapsed_s": 0.3})
    hs = {h.name: h for h in headline_figures([lat, bw], 125.0, "lab link")}
    assert (hs["lowest latency"].value, hs["lowest latency"].statistic) == (8.37, record.MEDIAN)
    pb = hs["peak bandwidth"]
    assert (pb.value, pb.statistic, round(pb.percent_of_link, 1)) == (119.0, record.RATE_ALL, 95.2)
    assert [e.statistic for e in pb.over][:2] == ["max", "p99"]


@pytest.mark.mpi
def test_engine_points_get_the_statistic_their_metric_calls_for(cli):
    import fabricbench

    cli("run", "latency", "bw", "allreduce", "--np", "2", "--sizes", "8:64", "--time-budget", "0.01", "--repeat", "1")
    store = fabricbench.open_db(str(cli.db))
    ms = store.measurements(store.get_run("last").id)
    kinds = {m.benchmark: record.figure_of_record(m).statistic for m in ms}
    assert kinds["latency"] == record.MEDIAN and kinds["bw"] == record.RATE_ALL
    assert kinds["allreduce"] in (record.MEDIAN, record.MEAN_NO_CALLS)
    for m in ms:
        f = record.figure_of_record(m)
        want = m.median if f.statistic == record.MEDIAN else m.value
        assert f.value == pytest.approx(want) and headline(m) == pytest.approx(want)
