"""The statistics behind comparisons: CI of the median from a sketch, ratio tests, corrections, noise."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fabricbench.analysis import stats
from fabricbench.store import Measurement


def point(samples, metric="latency", **extra):
    """A stored point as the engine writes it: summary statistics and the 101-quantile sketch."""
    x = np.asarray(samples, dtype=float)
    q = np.percentile(x, np.arange(101))
    unit = "us" if metric == "latency" else "MB/s"
    return Measurement("latency" if metric == "latency" else "bw", {"size": 8, "ranks": 2, **extra}, metric, unit,
                       value=float(x.mean()), n=len(x), min=float(x.min()), median=float(np.median(x)),
                       mean=float(x.mean()), p99=float(q[99]), max=float(x.max()), stdev=float(x.std(ddof=1)),
                       detail={"sketch": {"q": [float(v) for v in q]}})


def test_median_ci_from_the_sketch_is_the_order_statistic_interval():
    rng = np.random.default_rng(1)
    x = rng.lognormal(0.0, 0.3, 400)
    ci = stats.median_ci(point(x))
    lo_rank, hi_rank = stats.order_statistic_ranks(400)
    exact = np.sort(x)
    # the sketch has 1% resolution: the interval read off it sits within one percentile step of the exact one
    step = np.percentile(x, 51) - np.percentile(x, 49)
    assert ci.how == "sketch" and ci.low == pytest.approx(exact[lo_rank - 1], abs=step)
    assert ci.high == pytest.approx(exact[hi_rank - 1], abs=step)
    assert ci.low < np.median(x) < ci.high
    assert stats.order_statistic_ranks(5) is None and stats.median_ci(point(x[:5])) is None


def test_median_ci_covers_the_true_median():
    rng = np.random.default_rng(7)
    true_median = math.exp(0.0)  # lognormal(0, s) has median 1
    hits = 0
    for _ in range(300):
        ci = stats.median_ci(point(rng.lognormal(0.0, 0.5, 60)))
        hits += ci.low <= true_median <= ci.high
    assert hits / 300 >= 0.93


def test_without_a_sketch_the_ci_comes_from_n_and_stdev():
    m = Measurement("latency", {"size": 8}, "latency", "us", value=1.1, n=100, median=1.0, mean=1.1, stdev=0.2)
    ci = stats.median_ci(m)
    half = 1.959964 * math.sqrt(math.pi / 2) * 0.2 / 10
    assert ci.how == "stdev" and (ci.low, ci.high) == pytest.approx((1.0 - half, 1.0 + half))
    assert stats.median_ci(Measurement("latency", {}, "latency", "us", value=1.0)) is None  # a published number
    # a broken sketch (wrong length, not sorted) is ignored
    bad = Measurement("latency", {}, "latency", "us", value=1.0, n=50, median=1.0, stdev=0.1, detail={"sketch": {"q": [3, 2, 1]}})
    assert stats.median_ci(bad).how == "stdev"


def test_center_prefers_the_median():
    assert stats.center(Measurement("latency", {}, "latency", "us", value=6.4, mean=6.4, median=1.05)) == stats.Center(1.05, "median")
    assert stats.center(Measurement("latency", {}, "latency", "us", value=0.92)) == stats.Center(0.92, "mean")


def test_ratio_test_separates_real_shifts_from_noise():
    rng = np.random.default_rng(3)
    a = stats.median_ci(point(rng.normal(100, 5, 500), "bandwidth"))
    same = stats.median_ci(point(rng.normal(100, 5, 500), "bandwidth"))
    lower = stats.median_ci(point(rng.normal(90, 5, 500), "bandwidth"))
    assert stats.ratio_test(a, same).p > 0.01
    t = stats.ratio_test(a, lower)
    assert t.p < 1e-6 and t.interval()[0] < 0.9 < t.interval()[1] + 0.01 and t.interval()[1] < 1.0
    # run-to-run variance widens the test
    assert stats.ratio_test(a, lower, extra_var=0.2 ** 2).p > 0.5


def test_corrections():
    p = [0.01, 0.04, 0.03, 0.005]
    assert stats.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert stats.holm([]) == [] and stats.benjamini_hochberg([]) == []


def test_roughness_measures_jitter_along_a_curve_not_its_trend():
    smooth = [math.log(r) for r in np.linspace(0.5, 1.0, 12)]
    assert stats.roughness_variance(smooth, [0.0] * 12) < 0.002
    rng = np.random.default_rng(5)
    jitter = list(rng.normal(0.0, 0.1, 40))
    assert math.sqrt(stats.roughness_variance(jitter, [0.0] * 40)) == pytest.approx(0.1, rel=0.35)
    assert stats.roughness_variance(jitter[:4], [0.0] * 4) == 0.0  # too few points to tell


def test_geometric_mean_ci():
    gm, lo, hi = stats.geometric_mean_ci([0.5, 0.5, 0.5])
    assert gm == pytest.approx(0.5) and lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    gm, lo, hi = stats.geometric_mean_ci([0.4, 0.5, 0.6])
    assert lo < gm < hi and gm == pytest.approx((0.4 * 0.5 * 0.6) ** (1 / 3))
