"""Statistics of stored points: the median and its confidence interval, ratio tests, corrections.

A stored point summarises many samples. What this module reads from it, best first:

1. ``detail.sketch.q`` - the 0 %, 1 %, ..., 100 % quantiles of the samples (the engine
   writes them, interpolated like numpy.percentile). The confidence interval of the median
   is distribution-free: the order statistics of ranks l and n - l + 1, with l the
   ``binom.ppf(alpha/2, n, 1/2)`` of the sample count (Hoefler and Belli, SC15, section
   4.2.2), read off the sketch by linear interpolation.
2. ``n`` and ``stdev`` without a sketch (older runs, imports that record them): the
   normal approximation of the median's standard error, sqrt(pi/2) * stdev / sqrt(n).
   Heavy tails inflate the stdev, so this errs on the wide side.
3. Nothing else: a single published number has no interval (``None``).

A CI needs at least ``MIN_SAMPLES`` samples: with five, even [min, max] covers only 94 %.

Ratios of medians are tested on the log scale: ln(B/A) with standard error
sqrt(se_A^2 + se_B^2), each se taken from its median's CI (half-width / z; the delta
method, se(ln m) = se(m) / m), as in Price and Bonett's interval for a ratio of medians.
``holm`` and ``benjamini_hochberg`` adjust p-values for the number of points compared.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import stats as _st

MIN_SAMPLES = 6
SKETCH_POINTS = 101
_GRID = np.linspace(0.0, 100.0, SKETCH_POINTS)


def _finite(x: Any) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def sketch(m: Any) -> Optional[np.ndarray]:
    """The point's 101 quantiles (detail.sketch.q) when it carries a usable sketch."""
    detail = getattr(m, "detail", None)
    q = detail.get("sketch", {}).get("q") if isinstance(detail, dict) and isinstance(detail.get("sketch"), dict) else None
    if not isinstance(q, list) or len(q) != SKETCH_POINTS:
        return None
    values = [_finite(v) for v in q]
    if any(v is None for v in values):
        return None
    arr = np.asarray(values, dtype=float)
    return arr if np.all(np.diff(arr) >= 0) else None


def launch_values(m: Any, statistic: str = "median") -> List[float]:
    """Each launch's own figure of a point merged from several launches (``run --repeat``;
    ``detail.launches``): its median, or its headline value; empty for a point from one launch."""
    detail = getattr(m, "detail", None)
    found = detail.get("launches") if isinstance(detail, dict) else None
    if not isinstance(found, list) or len(found) < 2:
        return []
    key = "median" if statistic == "median" else "value"
    values = [_finite(x.get(key)) if isinstance(x, dict) else None for x in found]
    return [v for v in values if v is not None] if all(v is not None for v in values) else []


def quantile(m: Any, percent: float) -> Optional[float]:
    """A percentile of the point's samples from its sketch (None without one)."""
    q = sketch(m)
    return None if q is None else float(np.interp(percent, _GRID, q))


@dataclass(frozen=True)
class Center:
    """The figure a point is compared by: its median when recorded, else its mean/value."""

    value: float
    statistic: str  # "median" or "mean"


def center(m: Any) -> Optional[Center]:
    from fabricbench.analysis.record import per_call_distribution

    # A median over rank averages (collectives without a per-call sketch) is not a median of calls.
    med = _finite(getattr(m, "median", None)) if per_call_distribution(m) else None
    if med is None and per_call_distribution(m):
        q = sketch(m)
        med = float(q[50]) if q is not None else None
    if med is not None:
        return Center(med, "median")
    for name in ("value", "mean"):
        v = _finite(getattr(m, name, None))
        if v is not None:
            return Center(v, "mean")
    return None


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a point's median, and how it was obtained."""

    center: float
    low: float
    high: float
    level: float
    how: str  # "sketch" or "stdev"

    @property
    def rel_se(self) -> float:
        """Standard error of ln(median): from the interval's width on the log scale when both ends
        are positive (a skewed interval, 0.5 to 4000 around 14, stays a finite spread), else from
        the half-width (delta method)."""
        if self.center == 0:
            return math.inf
        z = float(_st.norm.ppf(0.5 + self.level / 2))
        if self.low > 0 and self.high > 0:
            return (math.log(self.high) - math.log(self.low)) / (2 * z)
        return (self.high - self.low) / (2 * z * abs(self.center))


def order_statistic_ranks(n: int, level: float = 0.95) -> Optional[Tuple[int, int]]:
    """1-based ranks (l, u) of the order statistics bounding the median at >= `level` coverage."""
    if n < MIN_SAMPLES:
        return None
    low = int(_st.binom.ppf((1 - level) / 2, n, 0.5))
    low = max(low, 1)
    return low, n - low + 1


def median_ci(m: Any, level: float = 0.95) -> Optional[Interval]:
    """The median's confidence interval (see the module doc); None when it cannot be had."""
    n = getattr(m, "n", None)
    if not isinstance(n, int) or n < MIN_SAMPLES:
        return None
    q = sketch(m)
    if q is not None:
        low_rank, high_rank = order_statistic_ranks(n, level)
        at = lambda rank: float(np.interp(100.0 * (rank - 1) / (n - 1), _GRID, q))  # noqa: E731
        return Interval(float(q[50]), at(low_rank), at(high_rank), level, "sketch")
    c, sd = center(m), _finite(getattr(m, "stdev", None))
    if c is None or c.statistic != "median" or sd is None:
        return None
    half = float(_st.norm.ppf(0.5 + level / 2)) * math.sqrt(math.pi / 2) * sd / math.sqrt(n)
    return Interval(c.value, c.value - half, c.value + half, level, "stdev")


def rate_ci(m: Any, level: float = 0.95) -> Optional[Interval]:
    """The confidence interval of a bandwidth point's rate over all iterations (its ``value``: bytes of
    all timed windows / their total time), from the sketch of its per-window rates r_i.

    A window moving the same bytes takes a time proportional to 1/r_i, and the rate over all
    iterations is 1 / mean(1/r_i) (times the bytes): its relative standard error is that of the mean
    window time, cv(1/r) / sqrt(n) (delta method), with mean and spread of 1/r integrated over the
    sketch's quantiles. A window the scheduler stalled is a long time, so it widens the interval as it
    moved the rate. None without a value, a usable sketch of positive rates or MIN_SAMPLES windows."""
    n = getattr(m, "n", None)
    value = _finite(getattr(m, "value", None))
    q = sketch(m)
    if not isinstance(n, int) or n < MIN_SAMPLES or value is None or value <= 0 or q is None or q[0] <= 0:
        return None
    t = 1.0 / q  # window times, up to the bytes per window
    w = np.full(SKETCH_POINTS, 1.0 / (SKETCH_POINTS - 1))
    w[0] = w[-1] = 0.5 / (SKETCH_POINTS - 1)  # trapezoid over the quantile grid
    mean = float(np.dot(w, t))
    sd = math.sqrt(max(0.0, float(np.dot(w, (t - mean) ** 2))) * n / (n - 1))
    half = float(_st.norm.ppf(0.5 + level / 2)) * (sd / mean) / math.sqrt(n)
    return Interval(value, value * math.exp(-half), value * math.exp(half), level, "rate")


def figure_ci(m: Any, statistic: str, level: float = 0.95) -> Optional[Interval]:
    """The CI of a point's figure of record by its statistic: "median" (``median_ci``), "rate" (the
    rate over all iterations, ``rate_ci``); None for other figures (a mean of rank averages, a value)."""
    if statistic == "median":
        return median_ci(m, level)
    if statistic == "rate":
        return rate_ci(m, level)
    return None


@dataclass(frozen=True)
class RatioTest:
    ratio: float  # B / A
    log_se: float  # standard error of ln(B/A)
    p: float  # two-sided p-value of "the medians are equal"

    def interval(self, level: float = 0.95) -> Tuple[float, float]:
        z = float(_st.norm.ppf(0.5 + level / 2))
        d = math.log(self.ratio)
        return clipped_exp(d - z * self.log_se), clipped_exp(d + z * self.log_se)


def clipped_exp(x: float) -> float:
    """exp(x) with x clipped to +-700, so that a huge spread gives a huge interval, not an OverflowError."""
    return math.exp(min(max(x, -700.0), 700.0))


def norm_quantile(q: float) -> float:
    return float(_st.norm.ppf(q))


def log_ratio_test(d: float, se: float) -> RatioTest:
    """Test ln(B/A) = d against 0 with standard error se (normal)."""
    if se == 0:
        return RatioTest(clipped_exp(d), 0.0, 0.0 if d else 1.0)
    return RatioTest(clipped_exp(d), se, float(2 * _st.norm.sf(abs(d) / se)))


def ratio_test(a: Interval, b: Interval, extra_var: float = 0.0) -> Optional[RatioTest]:
    """Test B/A = 1 on the log scale from two medians' CIs; `extra_var` adds run-to-run variance of ln(B/A)."""
    if a.center <= 0 or b.center <= 0:
        return None
    return log_ratio_test(math.log(b.center / a.center), math.sqrt(a.rel_se**2 + b.rel_se**2 + max(extra_var, 0.0)))


def between_run_variance(groups: Sequence[Sequence[float]]) -> float:
    """Variance of one run's ln(figure) from replicate runs: one group per point and side (two or more
    runs each). Robustly pooled: each group's sample variance over the median of its chi-square
    distribution (df = runs - 1, so the estimate is consistent), then the median over groups."""
    scaled = []
    for g in groups:
        if len(g) >= 2:
            df = len(g) - 1
            scaled.append(float(np.var(g, ddof=1)) / (float(_st.chi2.median(df)) / df))
    return float(np.median(scaled)) if scaled else 0.0


OUTLYING = 3.5  # a run further than this many robust standard deviations from the others is left out


def _clipped_variances(x: np.ndarray) -> np.ndarray:
    """Per row: the sample variance of the values within OUTLYING normal-scaled MADs of the row's median
    (every value when the MAD is 0); NaN when fewer than 2 remain."""
    med = np.median(x, axis=1, keepdims=True)
    mad = _st.median_abs_deviation(x, axis=1, scale="normal")[:, None]
    keep = (np.abs(x - med) <= OUTLYING * mad) | (mad == 0)
    n = keep.sum(axis=1)
    mean = np.where(keep, x, 0.0).sum(axis=1) / np.maximum(n, 1)
    ss = np.where(keep, (x - mean[:, None]) ** 2, 0.0).sum(axis=1)
    return np.where(n >= 2, ss / np.maximum(n - 1, 1), np.nan)


@functools.lru_cache(maxsize=None)
def _clipped_median_factor(n: int) -> float:
    """The median of ``_clipped_variances`` over samples of n standard normals: what makes the median of
    such estimates consistent (as chi2.median(df)/df does for plain variances). From 40,000 samples
    with a fixed seed, so it is the same on every call."""
    x = np.random.default_rng(20260).standard_normal((40000 if n <= 30 else 10000, n))
    return float(np.nanmedian(_clipped_variances(x)))


def robust_between_run_variance(groups: Sequence[Sequence[float]]) -> float:
    """Variance of one run's ln(figure) from replicate runs, robust to a run that was far off (a host
    in another state for a minute, a change the provenance did not record): per group (a point's
    figures in two or more runs) the variance of the figures within OUTLYING robust standard
    deviations (normal-scaled MAD) of their median, over the median of that estimate for the group's
    size; then the median over groups. Unlike the MAD itself it keeps the moderate spread between
    runs at full weight: that spread is the noise."""
    scaled = []
    for g in groups:
        if len(g) >= 2:
            v = float(_clipped_variances(np.asarray([g], dtype=float))[0])
            if math.isfinite(v):
                scaled.append(v / _clipped_median_factor(len(g)))
    return float(np.median(scaled)) if scaled else 0.0


def holm(pvalues: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p-values (family-wise error control)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * pvalues[i]))
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float]) -> List[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate control)."""
    if not pvalues:
        return []
    return [float(p) for p in _st.false_discovery_control(np.asarray(pvalues, dtype=float), method="bh")]


CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg}


def roughness_variance(log_ratios: Sequence[float], variances: Sequence[float]) -> float:
    """Run-to-run variance of ln(B/A) along a curve that its points' own CIs do not show.

    Neighbouring sizes share the true effect closely, so the jitter between them is noise.
    Robustly, from the median absolute k-th difference of the log ratios: first differences
    (variance 2 sigma^2 for independent points) are inflated by a trend, second differences
    (6 sigma^2) by a bend such as a protocol switch; the smaller estimate is kept. Less what
    the points' sampling variances typically (median) explain. Needs 6 or more points; else 0.
    """
    if len(log_ratios) < 6:
        return 0.0
    x = np.asarray(log_ratios, dtype=float)
    estimates = [(float(np.median(np.abs(np.diff(x, n=k)))) / 0.6744897501960817) ** 2 / factor
                 for k, factor in ((1, 2.0), (2, 6.0))]
    return max(0.0, min(estimates) - float(np.median(np.asarray(variances, dtype=float))))


def geometric_mean_ci(ratios: Sequence[float], level: float = 0.95,
                      log_se: Sequence[float] = ()) -> Optional[Tuple[float, float, float]]:
    """(geometric mean, low, high) of ratios: Student's t over the log ratios; one ratio uses its own se."""
    logs = [math.log(r) for r in ratios if r > 0]
    if not logs:
        return None
    mean = sum(logs) / len(logs)
    if len(logs) == 1:
        if not log_se:
            return math.exp(mean), math.exp(mean), math.exp(mean)
        half = float(_st.norm.ppf(0.5 + level / 2)) * log_se[0]
    else:
        sd = float(np.std(logs, ddof=1))
        half = float(_st.t.ppf(0.5 + level / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return clipped_exp(mean), clipped_exp(mean - half), clipped_exp(mean + half)


# -- Student's t, for the scaling study's means ------------------------------------------

def t_critical_975(df: float) -> float:
    """Two-sided 95% critical value of Student's t with `df` degrees of freedom (df >= 1)."""
    return float(_st.t.ppf(0.975, max(float(df), 1.0)))


def welch(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int) -> Tuple[float, float]:
    """Welch's t statistic and Welch-Satterthwaite degrees of freedom (inf t when both spreads are zero)."""
    va, vb = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    se2 = va + vb
    d = mean_b - mean_a
    if se2 <= 0:
        return (math.inf if d else 0.0), float(n_a + n_b - 2)
    denom = (va * va / (n_a - 1) if va else 0.0) + (vb * vb / (n_b - 1) if vb else 0.0)
    df = se2 * se2 / denom if denom > 0 else float(n_a + n_b - 2)
    return d / math.sqrt(se2), df


# ---- one point from several launches (run --repeat) ------------------------------------------------

LAUNCH_FIELDS = ("value", "median", "min", "max", "n", "iterations")


def _grid():
    """The 101 quantile levels of a sketch."""
    return np.linspace(0.0, 1.0, 101)


def point_key(m: Any) -> Tuple[str, str, str]:
    """What makes two launches' records the same point."""
    params = {k: v for k, v in m.params.items() if k not in ("seed", "order")}
    return m.benchmark, m.metric, json.dumps(params, sort_keys=True, default=str)


def launch_figures(m: Any) -> Dict[str, Any]:
    return {k: getattr(m, k) for k in LAUNCH_FIELDS if getattr(m, k) is not None}


def launches(m: Any) -> List[Dict[str, Any]]:
    """Each launch's own figures of a merged point (empty for a point from one launch)."""
    found = (m.detail or {}).get("launches")
    return [x for x in found if isinstance(x, dict)] if isinstance(found, list) else []


def merge_launch(stored: Any, new: Any) -> Any:
    """The point `stored` (one or more launches of ``run --repeat``) with launch `new` added:
    the sketch, counts and moments of all launches; ``detail.launches`` keeps each launch's own."""
    from fabricbench.analysis.precision import from_sketch, precision_of

    before = launches(stored) or [launch_figures(stored)]
    parts = [stored, new]
    weights = [float(p.n or 1) for p in parts]
    total = sum(weights)
    detail = dict(stored.detail or {})
    sketches = [_sketch(p) for p in parts]
    merged_q = _mixture(sketches, weights) if all(q is not None for q in sketches) else None
    if merged_q is not None:
        detail["sketch"] = dict(detail.get("sketch") or {}, q=[float(x) for x in merged_q])
    else:
        detail.pop("sketch", None)
    per_rank = [(p.detail or {}).get("per_rank") for p in parts]
    if all(isinstance(r, list) for r in per_rank) and len({len(r) for r in per_rank}) == 1:
        detail["per_rank"] = [_weighted([r[i] for r in per_rank], weights) for i in range(len(per_rank[0]))]
    if isinstance(detail.get("elapsed_s"), (int, float)) and isinstance((new.detail or {}).get("elapsed_s"), (int, float)):
        detail["elapsed_s"] = detail["elapsed_s"] + new.detail["elapsed_s"]
    detail["launches"] = before + [launch_figures(new)]
    if merged_q is not None and isinstance(detail.get("precision"), dict) and all(p.n for p in parts):
        detail["precision"] = from_sketch(merged_q, int(total), precision_of(stored).target)
    mean = _weighted([p.mean for p in parts], weights)
    out = replace(
        stored,
        n=int(total) if all(p.n is not None for p in parts) else None,
        iterations=sum(p.iterations for p in parts) if all(p.iterations is not None for p in parts) else None,
        min=_extreme(min, [p.min for p in parts]),
        max=_extreme(max, [p.max for p in parts]),
        mean=mean,
        median=float(np.interp(0.5, _grid(), merged_q)) if merged_q is not None else _weighted([p.median for p in parts], weights),
        p99=float(np.interp(0.99, _grid(), merged_q)) if merged_q is not None else _extreme(max, [p.p99 for p in parts]),
        stdev=_pooled_stdev(parts, weights, mean),
        detail=detail,
    )
    out.value = _merged_value(stored, new, out)
    return out


def _merged_value(stored: Any, new: Any, out: Any) -> Optional[float]:
    """The headline figure over all launches, of the same kind as one launch's: the mean when a
    launch's value is its mean, the median when it is its median, else (a rate over the whole
    point, such as bandwidth) the rate over every launch's iterations together."""
    if stored.value is None or new.value is None:
        return stored.value if new.value is None else new.value
    if _same(stored.value, stored.mean) and _same(new.value, new.mean):
        return out.mean
    if _same(stored.value, stored.median) and _same(new.value, new.median):
        return out.median
    if str((stored.detail or {}).get("stats_over", "")).startswith("per-call"):
        # Collectives: OSU's mean over ranks of each rank's average call, over all calls.
        its = [float(p.iterations or p.n or 1) for p in (stored, new)]
        return (stored.value * its[0] + new.value * its[1]) / sum(its)
    its = [p.iterations or p.n or 1 for p in (stored, new)]
    if stored.value > 0 and new.value > 0:
        prior = (stored.iterations or stored.n or 1)
        return (prior + its[1]) / (prior / stored.value + its[1] / new.value)
    return out.median


def _same(a: Optional[float], b: Optional[float]) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _sketch(m: Any) -> Optional[np.ndarray]:
    return sketch(m)


def _mixture(qs: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The 101 quantiles of a weighted mixture of distributions given by their 101 quantiles."""
    import numpy as np

    grid = _grid()
    xs = np.unique(np.concatenate(qs))
    cdf = np.zeros_like(xs)
    for q, w in zip(qs, weights):
        if q[-1] > q[0]:
            cdf += w * np.interp(xs, q, grid, left=0.0, right=1.0)
        else:
            cdf += w * (xs >= q[0])
    cdf /= sum(weights)
    # invert the (non-decreasing) CDF: the smallest x whose CDF reaches each level
    idx = np.searchsorted(cdf, grid * (1 - 1e-12), side="left")
    out = xs[np.clip(idx, 0, len(xs) - 1)]
    out[0], out[-1] = xs[0], xs[-1]
    return np.maximum.accumulate(out)


def _weighted(values: Sequence[Optional[float]], weights: Sequence[float]) -> Optional[float]:
    if any(v is None for v in values):
        return None
    return float(sum(v * w for v, w in zip(values, weights)) / sum(weights))


def _extreme(pick, values: Sequence[Optional[float]]) -> Optional[float]:
    found = [v for v in values if v is not None]
    return pick(found) if found else None


def _pooled_stdev(parts: Sequence[Any], weights: Sequence[float], mean: Optional[float]) -> Optional[float]:
    if mean is None or any(p.stdev is None or p.mean is None for p in parts):
        return None
    total = sum(weights)
    var = sum(w * (p.stdev ** 2 + (p.mean - mean) ** 2) for p, w in zip(parts, weights)) / total
    return math.sqrt(max(var, 0.0))
