"""Two runs compared point by point: A, B, B - A, B / A, "% better" and whether it is significant.

``compare_runs(store, a, b, benchmark=None)`` -> ``Comparison`` (with the comparability check of
``analysis.comparability`` first); ``compare_measurements(a_meas, b_meas)`` does the matching
and arithmetic on plain lists. Points match on benchmark, metric, params without size (the
*variant*: ranks, window, ordering, HPCC test, ...) and size. Nothing here prints.

Improvement ("B is 68% better") follows ``analysis.direction``: (B - A)/A where higher is
better, (A - B)/A where lower is better (latency, time).

Significance rule (``significance(a, b)``), from the statistics a measurement carries:

1. Both points have samples (n >= 2, a mean and a stdev): the difference is significant only
   if it is *outside the spread of the samples* - |mean_B - mean_A| > max(stdev_A, stdev_B),
   i.e. larger than one standard deviation of either run's own samples - *and* Welch's
   t-test (t = d / sqrt(sA^2/nA + sB^2/nB), Welch-Satterthwaite degrees of freedom) rejects
   equal means at the 5% level, two-sided. The first condition keeps a huge n from calling a
   difference that is small against the run-to-run noise "significant"; the second keeps a
   handful of noisy samples from doing the same.
2. Otherwise, when both points have a min and a max: significant when the two [min, max]
   ranges do not overlap.
3. Otherwise (single published numbers, e.g. a vendor's chart): unknown (None) - shown as
   "no spread recorded", never as significant.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.direction import describe, improvement, lower_is_better
from fabricbench.analysis.series import Series, group_series, headline, variant_label
from fabricbench.report.format import number

# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)
_Z975 = 1.959963984540054


def t_critical_975(df: float) -> float:
    """Two-sided 95% critical t for `df` degrees of freedom (table to 30, Cornish-Fisher beyond)."""
    if df < 1:
        df = 1
    if df <= 30:
        return _T975[int(math.floor(df)) - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def welch(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int) -> Tuple[float, float]:
    """Welch's t statistic and degrees of freedom (inf t when both spreads are zero)."""
    va, vb = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    se2 = va + vb
    d = mean_b - mean_a
    if se2 <= 0:
        return (math.inf if d else 0.0), float(n_a + n_b - 2)
    t = d / math.sqrt(se2)
    denom = (va * va / (n_a - 1) if va else 0.0) + (vb * vb / (n_b - 1) if vb else 0.0)
    df = se2 * se2 / denom if denom > 0 else float(n_a + n_b - 2)
    return t, df


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def significance(a: Any, b: Any) -> Tuple[Optional[bool], str]:
    """Whether B differs from A beyond the spread of their samples; (verdict, reason). See module doc."""
    ma, mb = _num(a.mean) if a.mean is not None else headline(a), _num(b.mean) if b.mean is not None else headline(b)
    sa, sb = _num(a.stdev), _num(b.stdev)
    na, nb = a.n or 0, b.n or 0
    if ma is not None and mb is not None and sa is not None and sb is not None and na >= 2 and nb >= 2:
        d = abs(mb - ma)
        spread = max(sa, sb)
        if d <= spread:
            return False, f"|difference| {d:.4g} within one stdev ({spread:.4g})"
        t, df = welch(ma, sa, na, mb, sb, nb)
        crit = t_critical_975(df)
        if abs(t) <= crit:
            return False, f"Welch |t|={abs(t):.3g} <= {crit:.3g} (df={df:.0f})"
        return True, f"outside one stdev and Welch |t|={abs(t):.3g} > {crit:.3g} (df={df:.0f})"
    lo_a, hi_a, lo_b, hi_b = _num(a.min), _num(a.max), _num(b.min), _num(b.max)
    if None not in (lo_a, hi_a, lo_b, hi_b):
        if hi_a < lo_b or hi_b < lo_a:
            return True, "[min, max] ranges do not overlap"
        return False, "[min, max] ranges overlap"
    return None, "no spread recorded"


@dataclass
class PointComparison:
    size: Optional[int]
    a: Optional[float]
    b: Optional[float]
    diff: Optional[float]  # B - A, in the unit
    ratio: Optional[float]  # B / A
    improvement: Optional[float]  # fraction; > 0 means B better
    significant: Optional[bool]
    reason: str
    verdict: str  # "B is 17% worse", "not significant", ...


@dataclass
class SeriesComparison:
    benchmark: str
    metric: str
    unit: str
    variant: Dict[str, Any]
    points: List[PointComparison] = field(default_factory=list)

    @property
    def variant_text(self) -> str:
        return variant_label(self.variant)

    @property
    def lower_is_better(self) -> bool:
        return lower_is_better(self.metric)

    def _diffs(self) -> List[float]:
        return [p.diff for p in self.points if p.diff is not None]

    @property
    def mean_diff(self) -> Optional[float]:
        d = self._diffs()
        return sum(d) / len(d) if d else None

    @property
    def diff_range(self) -> Optional[Tuple[float, float]]:
        d = self._diffs()
        return (min(d), max(d)) if d else None

    @property
    def mean_improvement(self) -> Optional[float]:
        """Improvement of the geometric mean of the B/A ratios (ratios average geometrically;
        an arithmetic mean of percentages lets one noisy point dominate)."""
        ratios = [p.ratio for p in self.points if p.ratio is not None and p.ratio > 0]
        if not ratios:
            return None
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        return improvement(1.0, gm, self.metric)

    @property
    def significant_points(self) -> int:
        return sum(1 for p in self.points if p.significant)

    @property
    def judged_points(self) -> int:
        return sum(1 for p in self.points if p.significant is not None)

    def summary(self, a_name: str = "A", b_name: str = "B") -> str:
        """One sentence, e.g. 'B adds 0.125 us on average vs A (0.12 to 0.13 us over 11 sizes); B is 15% worse ...'."""
        md, rng, imp = self.mean_diff, self.diff_range, self.mean_improvement
        if md is None:
            return "no points to compare"
        n = len(self._diffs())
        what = "sizes" if any(p.size is not None for p in self.points) else "points"
        if self.lower_is_better:
            verb = "adds" if md > 0 else "saves"
        else:
            verb = "gains" if md > 0 else "loses"
        text = f"{b_name} {verb} {_fmt(abs(md))} {self.unit} on average vs {a_name}"
        if rng and n > 1:
            text += f" ({_fmt(rng[0])} to {_fmt(rng[1])} {self.unit} over {n} {what})"
        text += f"; {describe(imp, b_name)} (geometric mean of B/A)"
        if self.judged_points:
            text += f"; significant at {self.significant_points} of {self.judged_points} points"
        else:
            text += "; significance unknown (no spread recorded)"
        return text + "."

    def to_dict(self) -> Dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "metric": self.metric,
            "unit": self.unit,
            "variant": self.variant,
            "lower_is_better": self.lower_is_better,
            "mean_diff": self.mean_diff,
            "diff_range": list(self.diff_range) if self.diff_range else None,
            "mean_improvement": self.mean_improvement,
            "significant_points": self.significant_points,
            "judged_points": self.judged_points,
            "summary": self.summary(),
            "points": [asdict(p) for p in self.points],
        }


_fmt = number  # the one number formatter (report.format)


def compare_points(a: Any, b: Any, metric: str, size: Optional[int] = None) -> PointComparison:
    va, vb = headline(a), headline(b)
    diff = vb - va if va is not None and vb is not None else None
    ratio = vb / va if va not in (None, 0) and vb is not None else None
    imp = improvement(va, vb, metric)
    sig, reason = significance(a, b)
    if sig is False:
        verdict = f"{describe(imp)} (not significant)"
    else:
        verdict = describe(imp)
    return PointComparison(size, va, vb, diff, ratio, imp, sig, reason, verdict)


def compare_series(sa: Series, sb: Series) -> SeriesComparison:
    out = SeriesComparison(sa.benchmark, sa.metric, sa.unit, dict(sa.variant))
    b_points = sb.by_size()
    for pa in sa.points:
        size = pa.params.get("size")
        pb = b_points.get(size)
        if pb is not None:
            out.points.append(compare_points(pa, pb, sa.metric, size))
    return out


def _series_name(s: Series) -> str:
    v = variant_label(s.variant)
    return f"{s.benchmark} {s.metric}" + (f" ({v})" if v else "")


def compare_measurements(
    a: Sequence[Any], b: Sequence[Any], benchmark: Optional[str] = None
) -> Tuple[List[SeriesComparison], List[str], List[str]]:
    """Matched series comparisons, and the series found only in A and only in B (as names)."""
    if benchmark:
        a = [m for m in a if m.benchmark == benchmark]
        b = [m for m in b if m.benchmark == benchmark]
    series_a, series_b = group_series(a), group_series(b)
    index_b = {s.key: s for s in series_b}
    matched, only_a = [], []
    for s in series_a:
        other = index_b.pop(s.key, None)
        if other is None:
            only_a.append(_series_name(s))
            continue
        c = compare_series(s, other)
        if c.points:
            matched.append(c)
        else:
            only_a.append(_series_name(s) + " (no common sizes)")
    only_b = [_series_name(s) for s in index_b.values()]
    return matched, only_a, only_b


@dataclass
class Comparison:
    a: Any  # Run
    b: Any  # Run
    comparability: Any  # analysis.comparability.Comparability
    series: List[SeriesComparison]
    only_a: List[str]
    only_b: List[str]

    def to_dict(self) -> Dict[str, Any]:
        def run_info(r):
            return {"id": r.id, "uuid": r.uuid, "name": r.name, "label": r.label, "tags": r.tags}

        return {
            "a": run_info(self.a),
            "b": run_info(self.b),
            "comparability": self.comparability.to_dict(),
            "series": [s.to_dict() for s in self.series],
            "only_a": self.only_a,
            "only_b": self.only_b,
        }


def compare_runs(store: Any, ref_a: Any, ref_b: Any, benchmark: Optional[str] = None) -> Comparison:
    """Compare two stored runs (ids, uuids or 'last'); raises StoreError for an unknown run."""
    from fabricbench.analysis.comparability import check_comparability

    run_a, run_b = store.get_run(ref_a), store.get_run(ref_b)
    meas_a = store.measurements(run_a.id, benchmark=benchmark)
    meas_b = store.measurements(run_b.id, benchmark=benchmark)
    comp = check_comparability(run_a, store.hosts(run_a.id), run_b, store.hosts(run_b.id))
    series, only_a, only_b = compare_measurements(meas_a, meas_b)
    return Comparison(run_a, run_b, comp, series, only_a, only_b)
