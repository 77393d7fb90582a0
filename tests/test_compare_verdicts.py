"""Verdicts that survive noise: medians, corrected significance, the practical threshold, the summary."""
from __future__ import annotations

import numpy as np
import pytest

from fabricbench.analysis.compare import Options, compare
from fabricbench.report.words import compare as words
from fabricbench.store import Measurement, RunData
from fabricbench.store.records import Run

SIZES = [1 << k for k in range(0, 23)]


def _run(rid, label=None):
    return Run(id=rid, uuid=str(rid), created="2024-01-01T00:00:00+00:00", label=label or f"r{rid}", tags={},
               kind="benchmark", command=None, tool_version="0", status="complete", ranks=2,
               provenance={"ranks": 2, "nodes": 1})


def point(bench, metric, unit, size, samples, **params):
    x = np.asarray(samples, dtype=float)
    q = np.percentile(x, np.arange(101))
    # the engine's value: a time's mean; a window benchmark's rate over all iterations (bytes / total time)
    value = float(len(x) / np.sum(1.0 / x)) if metric == "bandwidth" else float(x.mean())
    return Measurement(bench, {"size": size, "ranks": 2, **params}, metric, unit, value=value, n=len(x),
                       min=float(x.min()), median=float(np.median(x)), mean=float(x.mean()), p99=float(q[99]),
                       max=float(x.max()), stdev=float(x.std(ddof=1)), detail={"sketch": {"q": [float(v) for v in q]}})


def bw_run(rid, rng, scale=lambda size: 1.0, n=200, noise=0.05, outliers=0.02):
    """A bandwidth curve with lognormal noise and a few very slow windows (as a loaded host gives)."""
    out = []
    for size in SIZES:
        true = 10000.0 * size / (size + 8192.0) * scale(size)
        x = true * rng.lognormal(0.0, noise, n)
        slow = rng.random(n) < outliers
        x[slow] /= 20.0
        out.append(point("bw", "bandwidth", "MB/s", size, x, window=64))
    return RunData(_run(rid), out, [])


def test_a_and_a_again_show_no_difference():
    rng = np.random.default_rng(11)
    flagged = 0
    for rep in range(10):
        result = compare(bw_run(1, rng), bw_run(2, rng))
        flagged += len(result.flagged("worse")) + len(result.flagged("better"))
    assert flagged == 0
    s = result.series[0]
    assert words.series_summary(s).startswith("no significant difference at any of the 23 sizes judged")
    assert words.summary(result).startswith("Overall: no significant difference between A and B at 23 points")


def test_a_real_drop_is_flagged_where_it_is_and_nowhere_else():
    # few stalled windows: the rate over all iterations (the figure judged) is then as steady as the median
    rng = np.random.default_rng(12)
    a = bw_run(1, rng, outliers=0.002)
    b = bw_run(2, rng, scale=lambda size: 0.5 if size >= 65536 else 1.0, outliers=0.002)
    result = compare(a, b)
    worse = sorted(p.size for _s, p in result.flagged("worse"))
    assert worse == [s for s in SIZES if s >= 65536] and not result.flagged("better")
    s = result.series[0]
    assert words.series_summary(s).startswith("B is ") and " worse at 7 of 23 sizes (geometric mean of B/A 0." in words.series_summary(s)
    p = next(p for p in s.points if p.size == 1 << 20)
    assert p.statistic == "rate" and p.a == p.ma.value and p.b == p.mb.value  # the figure of record is judged
    assert p.ratio_ci[0] < p.ratio < p.ratio_ci[1] and p.ratio == pytest.approx(0.5, abs=0.05)
    assert p.p_adjusted < 0.05 and words.point_short(p).endswith("worse")


def test_stalled_windows_that_move_the_rate_alone_are_not_called():
    """A host that stalls 3% of B's windows 20x moves B's rate over all iterations 1.6x while the median
    window does not move: a slower fabric slows every window, so the rate alone is no call."""
    rng = np.random.default_rng(14)
    a = bw_run(1, rng, outliers=0.0)
    b = bw_run(2, rng, outliers=0.03)
    result = compare(a, b)
    rates = [p.ratio for _s, p in result.points if p.statistic == "rate"]
    assert len(rates) == len(SIZES) and float(np.median(rates)) < 0.75  # the rate moved ...
    assert not result.flagged("worse") and not result.flagged("better")  # ... and was not called


def test_small_real_differences_fall_below_the_threshold():
    rng = np.random.default_rng(13)
    a = bw_run(1, rng, n=4000, noise=0.01, outliers=0)
    b = bw_run(2, rng, scale=lambda size: 0.98, n=4000, noise=0.01, outliers=0)
    result = compare(a, b)
    assert not result.flagged("worse")
    assert sum(p.verdict == "below threshold" for _s, p in result.points) >= 20
    assert len(compare(a, b, Options(min_effect=0.01)).flagged("worse")) >= 20


def test_bh_flags_at_least_what_holm_flags():
    rng = np.random.default_rng(14)
    a = bw_run(1, rng, n=60, noise=0.15)
    b = bw_run(2, rng, scale=lambda size: 0.9, n=60, noise=0.15)
    holm = len(compare(a, b).flagged("worse"))
    bh = len(compare(a, b, Options(correction="bh")).flagged("worse"))
    assert bh >= holm
    with pytest.raises(ValueError, match="unknown correction"):
        compare(a, b, Options(correction="bonferroni"))


def test_means_and_medians_are_not_mixed_and_rank_averages_are_not_samples():
    rng = np.random.default_rng(15)
    native = RunData(_run(1), [point("latency", "latency", "us", 8, rng.lognormal(0, 0.1, 500))], [])
    imported = RunData(_run(2), [Measurement("latency", {"size": 8, "ranks": 2}, "latency", "us", value=1.3)], [])
    p = compare(native, imported).series[0].points[0]
    assert p.statistic == "value" and p.b == 1.3 and p.a == pytest.approx(native.measurements[0].value)
    assert p.verdict == "not judged" and p.reason == "B records only an average"
    two_ranks = RunData(_run(3), [point("allreduce", "latency", "us", 8, [1.0, 1.2])], [])
    two_more = RunData(_run(4), [point("allreduce", "latency", "us", 8, [3.0, 3.3])], [])
    p = compare(two_ranks, two_more).series[0].points[0]
    assert p.verdict == "not judged" and p.reason == "2 samples, too few for a CI"


def test_latency_verdicts_follow_the_direction_rule():
    rng = np.random.default_rng(16)
    a = RunData(_run(1), [point("latency", "latency", "us", s, rng.lognormal(0, 0.05, 300)) for s in (0, 8, 64)], [])
    b = RunData(_run(2), [point("latency", "latency", "us", s, 1.3 * rng.lognormal(0, 0.05, 300)) for s in (0, 8, 64)], [])
    result = compare(a, b)
    assert [p.verdict for _s, p in result.points] == ["worse"] * 3
    assert words.point_text(result.series[0].points[0]) == "B is 30% worse"
    assert [p.verdict for _s, p in compare(b, a).points] == ["better"] * 3


def test_a_stall_at_one_size_is_isolated_not_called():
    rng = np.random.default_rng(17)
    a = bw_run(1, rng)
    b = bw_run(2, rng)
    spike = next(i for i, m in enumerate(b.measurements) if m.params["size"] == 4096)
    b.measurements[spike] = point("bw", "bandwidth", "MB/s", 4096, 200.0 * rng.lognormal(0, 0.04, 200), window=64)
    result = compare(a, b)
    p = next(p for _s, p in result.points if p.size == 4096)
    assert p.verdict == "isolated" and words.point_short(p).startswith("isolated (") and "re-measure" in words.point_text(p)
    assert not result.flagged("worse") and "1 isolated (one size only, re-measure)" in words.summary(result)
    # two neighbouring sizes that drop together are a difference
    nxt = spike + 1
    b.measurements[nxt] = point("bw", "bandwidth", "MB/s", 8192, 300.0 * rng.lognormal(0, 0.04, 200), window=64)
    assert sorted(p.size for _s, p in compare(a, b).flagged("worse")) == [4096, 8192]


def test_replicate_runs_supply_the_run_to_run_noise():
    rng = np.random.default_rng(18)

    def shifted(rid, factor):  # a whole run slower or faster, as another state of a busy host makes it
        return bw_run(rid, rng, scale=lambda size: factor, outliers=0.0)

    base = [shifted(1, 1.0), shifted(2, 0.85), shifted(3, 1.1)]
    new = shifted(4, 0.9)
    alone = compare(base[0], new)
    assert len(alone.flagged("worse")) > 10  # one run against one run: a 10% shift of the whole run is called
    together = compare(base, new)
    assert together.a_runs == [r.run for r in base] and together.series[0].noise_from == "replicates"
    assert not together.flagged("worse") and not together.flagged("better")
    assert len(compare(base, shifted(5, 0.5)).flagged("worse")) == 23  # a real halving still is
