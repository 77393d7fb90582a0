"""Application scaling studies: statistics per scale, speedup, efficiency, fabric against fabric, model.

Input is the long format `fabricbench scale` and `import-scaling` store: benchmark ``scale``,
one measurement per repetition (params ``nodes``, ``ranks``, ``ppn``, ``repetition``),
metric ``time`` (s, lower is better) or ``fom`` (the application's figure of merit; its
direction is in ``detail["higher_is_better"]``, default higher). A repetition whose
``detail["status"]`` is ``failed`` (or whose value is missing) is listed with its reason
and left out of every statistic. Nothing here prints or launches.

Definitions (N = scale on the study's axis, N0 = the baseline scale, default the smallest):

- Scale axis: nodes when the series has more than one node count, else ranks.
- Per point: mean, sample standard deviation, min, max, n, and the 95% confidence interval
  of the mean, mean +- t(0.975, n-1) * s / sqrt(n) (Student's t; none for n = 1 unless a
  published row carries its own n and stdev).
- Parallel efficiency E(N), for a time-like value t (lower is better):
  strong scaling E = N0 * t(N0) / (N * t(N)); weak scaling E = t(N0) / t(N).
  For a rate-like figure of merit f (higher is better; it already counts the work done):
  E = (f(N) / N) / (f(N0) / N0), strong or weak.
- Speedup S(N) = E(N) * N / N0 (for weak scaling: the scaled speedup); ideal is N / N0.
- Relative performance of B against A at a scale: ratio = t_A / t_B (or f_B / f_A): "B is
  ratio x faster"; % faster = (ratio - 1) * 100; time saved = (1 - t_B / t_A) * 100.
- Model: ``models.scaling.fit_scaling_model`` over the means (needs 3 or more scales); the
  efficiency threshold scale is the first scale where the measured efficiency falls below the
  threshold, and where the model's efficiency first does beyond the baseline.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from fabricbench.analysis.stats import t_critical_975, welch
from fabricbench.analysis.direction import lower_is_better
from fabricbench.models.scaling import MIN_SCALES, ModelError, ScalingModel, fit_scaling_model

BENCHMARK = "scale"
DEFAULT_THRESHOLD = 0.7
MAX_PREDICTED_SCALE = 2.0**20
_GRID_STEPS_PER_DOUBLING = 16


class ScalingAnalysisError(ValueError):
    """The data cannot answer the question (no scaling measurements, baseline not measured, ...)."""


class NotAMeasuredScale(ScalingAnalysisError):
    """The baseline asked for is not one of the series' scales (report/words/scaling.py says
    which scales there are)."""

    def __init__(self, baseline: float, series: "ScalingSeries"):
        super().__init__(f"the baseline is not a measured scale of {series.name}")
        self.baseline, self.series = float(baseline), series


@dataclass
class Repetition:
    nodes: Optional[int]
    ranks: Optional[int]
    ppn: Optional[int]
    repetition: Optional[int]
    value: Optional[float]
    ok: bool
    reason: Optional[str] = None
    n: Optional[int] = None  # a published row: how many runs its value averages
    stdev: Optional[float] = None  # ... and their spread, when given


@dataclass
class ScalePoint:
    scale: float
    nodes: Optional[int]
    ranks: Optional[int]
    ppn: Optional[int]
    n: int  # values behind the mean (repetitions, or a published row's n)
    mean: Optional[float]
    stdev: Optional[float]
    min: Optional[float]
    max: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    failed: int = 0
    values: List[float] = field(default_factory=list)

    @property
    def ci_half(self) -> Optional[float]:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2.0


@dataclass
class Failure:
    scale: float
    repetition: Optional[int]
    reason: str


@dataclass
class ScalingSeries:
    name: str
    metric: str
    unit: str
    higher_is_better: bool
    weak: bool
    axis: str  # "nodes" or "ranks"
    points: List[ScalePoint]
    failures: List[Failure] = field(default_factory=list)
    run_id: Optional[int] = None
    tags: Dict[str, str] = field(default_factory=dict)

    @property
    def scales(self) -> List[float]:
        return [p.scale for p in self.points]

    def point(self, scale: float) -> Optional[ScalePoint]:
        for p in self.points:
            if p.scale == scale:
                return p
        return None


@dataclass
class EfficiencyPoint:
    scale: float
    mean: Optional[float]
    speedup: Optional[float]
    ideal: float
    efficiency: Optional[float]


@dataclass
class Threshold:
    threshold: float
    measured_scale: Optional[float]  # first measured scale below the threshold
    predicted_scale: Optional[float]  # where the model's efficiency crosses it (continuous)
    predicted_at: Optional[int]  # the first whole scale at or beyond predicted_scale
    # Why there is no predicted scale (report/words/scaling.py words it): "no baseline", "no model",
    # "no positive value" (the model's metric ends at scale `limit`) or "stays above" (up to `limit`).
    unknown: str = ""
    limit: Optional[float] = None


@dataclass
class SeriesAnalysis:
    series: ScalingSeries
    baseline: Optional[float]
    efficiency: List[EfficiencyPoint]
    model: Optional[ScalingModel]
    model_note: str
    threshold: Threshold


@dataclass
class RelativePoint:
    scale: float
    a_mean: Optional[float]
    b_mean: Optional[float]
    ratio: Optional[float]  # > 1: B is faster
    percent_faster: Optional[float]
    time_saved: Optional[float]  # % less time (time-like metrics only)
    significant: Optional[bool]  # Welch's t-test at 5% when both sides have repetitions


@dataclass
class Comparison:
    group: Dict[str, str]  # the tags the two series share (e.g. case=three-car)
    a: str  # reference series name
    b: str
    compare_by: Optional[str]
    metric: str
    points: List[RelativePoint]


@dataclass
class StudyAnalysis:
    threshold: float
    series: List[SeriesAnalysis]
    comparisons: List[Comparison]

    def to_dict(self) -> Dict[str, Any]:
        out_series = []
        for sa in self.series:
            s = sa.series
            out_series.append(
                {
                    "name": s.name,
                    "run_id": s.run_id,
                    "tags": s.tags,
                    "metric": s.metric,
                    "unit": s.unit,
                    "higher_is_better": s.higher_is_better,
                    "mode": "weak" if s.weak else "strong",
                    "axis": s.axis,
                    "baseline": sa.baseline,
                    "points": [_point_dict(p, e) for p, e in zip(s.points, sa.efficiency)],
                    "failures": [asdict(f) for f in s.failures],
                    "model": sa.model.to_dict() if sa.model else None,
                    "model_note": sa.model_note,
                    "threshold": asdict(sa.threshold),
                }
            )
        return {
            "threshold": self.threshold,
            "series": out_series,
            "comparisons": [asdict(c) for c in self.comparisons],
        }


def _point_dict(p: ScalePoint, e: EfficiencyPoint) -> Dict[str, Any]:
    d = asdict(p)
    d["ci_half"] = p.ci_half
    d.update(speedup=e.speedup, ideal_speedup=e.ideal, efficiency=e.efficiency)
    return d


# ---- statistics --------------------------------------------------------------------------


def confidence_interval(mean: float, stdev: Optional[float], n: int) -> Tuple[Optional[float], Optional[float]]:
    """95% interval of the mean from Student's t; (None, None) without a spread or with n < 2."""
    if stdev is None or n < 2 or not math.isfinite(stdev):
        return None, None
    half = t_critical_975(n - 1) * stdev / math.sqrt(n)
    return mean - half, mean + half


def summarise(
    scale: float, nodes, ranks, ppn, reps: Sequence[Repetition]
) -> ScalePoint:
    good = [r for r in reps if r.ok and r.value is not None]
    values = [float(r.value) for r in good]
    failed = len(reps) - len(good)
    if not values:
        return ScalePoint(scale, nodes, ranks, ppn, 0, None, None, None, None, None, None, failed, [])
    if len(good) == 1 and (good[0].n or 1) > 1:
        # One published row standing for the average of several runs.
        r = good[0]
        mean, n, sd = values[0], int(r.n), r.stdev
        lo, hi = confidence_interval(mean, sd, n)
        return ScalePoint(scale, nodes, ranks, ppn, n, mean, sd, values[0], values[0], lo, hi, failed, values)
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    lo, hi = confidence_interval(mean, sd, n)
    return ScalePoint(scale, nodes, ranks, ppn, n, mean, sd, min(values), max(values), lo, hi, failed, values)


# ---- from measurements -------------------------------------------------------------------


def _int_or_none(x: Any) -> Optional[int]:
    if isinstance(x, bool) or x is None:
        return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def repetitions(measurements: Iterable[Any], metric: str) -> List[Repetition]:
    """The repetitions of one metric among `scale` measurements."""
    out = []
    for m in measurements:
        if m.benchmark != BENCHMARK or m.metric != metric:
            continue
        detail = m.detail or {}
        value = m.value if m.value is not None else m.mean
        ok = detail.get("status", "ok") == "ok" and value is not None and math.isfinite(float(value))
        reason = detail.get("reason") or (None if ok else "no value")
        params = m.params or {}
        out.append(
            Repetition(
                nodes=_int_or_none(params.get("nodes")),
                ranks=_int_or_none(params.get("ranks")),
                ppn=_int_or_none(params.get("ppn")),
                repetition=_int_or_none(params.get("repetition")),
                value=float(value) if ok else None,
                ok=ok,
                reason=reason,
                n=m.n,
                stdev=m.stdev,
            )
        )
    return out


def metrics_in(measurements: Iterable[Any]) -> List[str]:
    """Metrics of `scale` measurements, figure of merit first (it is what the user asked for)."""
    found = list(dict.fromkeys(m.metric for m in measurements if m.benchmark == BENCHMARK))
    return sorted(found, key=lambda name: (name != "fom", found.index(name)))


def choose_axis(reps: Sequence[Repetition]) -> str:
    nodes = {r.nodes for r in reps if r.nodes is not None}
    ranks = {r.ranks for r in reps if r.ranks is not None}
    if len(nodes) > 1 or not ranks:
        return "nodes"
    return "ranks"


def build_series(
    measurements: Sequence[Any],
    name: str,
    metric: Optional[str] = None,
    weak: bool = False,
    axis: Optional[str] = None,
    run_id: Optional[int] = None,
    tags: Optional[Dict[str, str]] = None,
) -> ScalingSeries:
    """One study's series: its repetitions grouped by scale (sorted), summarised."""
    metrics = metrics_in(measurements)
    if not metrics:
        raise ScalingAnalysisError(f"{name}: no scaling measurements (benchmark 'scale')")
    metric = metric or metrics[0]
    if metric not in metrics:
        raise ScalingAnalysisError(f"{name}: no '{metric}' measurements; it has {', '.join(metrics)}")
    chosen = [m for m in measurements if m.benchmark == BENCHMARK and m.metric == metric]
    reps = repetitions(chosen, metric)
    axis = axis or choose_axis(reps)
    if axis not in ("nodes", "ranks"):
        raise ScalingAnalysisError(f"axis must be nodes or ranks, not {axis!r}")
    unit = chosen[0].unit
    higher = _higher_is_better(metric, chosen)
    groups: Dict[float, List[Repetition]] = {}
    for r in reps:
        scale = r.nodes if axis == "nodes" else r.ranks
        if scale is None:
            scale = r.ranks if axis == "nodes" else r.nodes
        if scale is None:
            continue
        groups.setdefault(float(scale), []).append(r)
    points, failures = [], []
    for scale in sorted(groups):
        reps_at = groups[scale]
        first = reps_at[0]
        points.append(summarise(scale, first.nodes, first.ranks, first.ppn, reps_at))
        failures.extend(Failure(scale, r.repetition, r.reason or "failed") for r in reps_at if not r.ok)
    return ScalingSeries(name, metric, unit, higher, weak, axis, points, failures, run_id, dict(tags or {}))


def _higher_is_better(metric: str, measurements: Sequence[Any]) -> bool:
    for m in measurements:
        flag = (m.detail or {}).get("higher_is_better")
        if isinstance(flag, bool):
            return flag
    return not lower_is_better(metric)


def study_of(run: Any) -> Dict[str, Any]:
    study = (run.provenance or {}).get("study")
    return study if isinstance(study, dict) else {}


def series_of_run(run: Any, measurements: Sequence[Any], metric: Optional[str] = None, axis: Optional[str] = None,
                  name: Optional[str] = None) -> ScalingSeries:
    """The scaling series of a loaded run (``Store.load``) and its measurements."""
    items = [m for m in measurements if m.benchmark == BENCHMARK]
    if not items:
        raise ScalingAnalysisError(f"run {run.id} ({run.name}) has no scaling measurements; it is a '{run.kind}' run")
    study = study_of(run)
    if metric is None and study.get("primary_metric") in metrics_in(items):
        metric = study["primary_metric"]
    return build_series(items, name or run.name, metric=metric, weak=study.get("mode") == "weak", axis=axis, run_id=run.id, tags=run.tags)


# ---- speedup and efficiency -------------------------------------------------------------


def efficiency_value(v0: float, n0: float, v: float, n: float, higher_is_better: bool, weak: bool) -> Optional[float]:
    """E(N) from the values at the baseline (v0 at n0) and at N (see the module docstring)."""
    if v0 is None or v is None or v0 <= 0 or v <= 0:
        return None
    if higher_is_better:
        return (v / n) / (v0 / n0)
    if weak:
        return v0 / v
    return (n0 * v0) / (n * v)


def baseline_point(series: ScalingSeries, baseline: Optional[float] = None) -> Optional[ScalePoint]:
    """The point efficiencies are relative to: the given scale, else the smallest with a value."""
    if baseline is not None:
        p = series.point(float(baseline))
        if p is None:
            raise NotAMeasuredScale(baseline, series)
        return p if p.mean is not None else None
    for p in series.points:
        if p.mean is not None:
            return p
    return None


def efficiency(series: ScalingSeries, baseline: Optional[float] = None) -> List[EfficiencyPoint]:
    """Speedup, ideal speedup and efficiency at every scale, relative to the baseline scale."""
    base = baseline_point(series, baseline)
    out = []
    for p in series.points:
        if base is None or p.mean is None:
            out.append(EfficiencyPoint(p.scale, p.mean, None, p.scale / (base.scale if base else p.scale), None))
            continue
        e = efficiency_value(base.mean, base.scale, p.mean, p.scale, series.higher_is_better, series.weak)
        ideal = p.scale / base.scale
        out.append(EfficiencyPoint(p.scale, p.mean, e * ideal if e is not None else None, ideal, e))
    return out


# ---- model and threshold ----------------------------------------------------------------


def fit_model(series: ScalingSeries) -> Tuple[Optional[ScalingModel], str]:
    """The scaling model of a series' means, or None and why not."""
    pts = [(p.scale, p.mean) for p in series.points if p.mean is not None]
    if len(pts) < MIN_SCALES:
        return None, f"no model: needs {MIN_SCALES} or more scales with values, has {len(pts)}"
    try:
        model = fit_scaling_model(pts, metric=series.metric, unit=series.unit, variable=series.axis[0])
    except ModelError as exc:
        return None, f"no model: {exc}"
    return model, ""


def predict_threshold(
    series: ScalingSeries,
    model: Optional[ScalingModel],
    threshold: float = DEFAULT_THRESHOLD,
    baseline: Optional[float] = None,
    max_scale: float = MAX_PREDICTED_SCALE,
) -> Threshold:
    """Where efficiency falls below `threshold`: first measured scale, and the model's crossing."""
    base = baseline_point(series, baseline)
    if base is None:
        return Threshold(threshold, None, None, None, "no baseline")
    measured = None
    for e in efficiency(series, base.scale):
        if e.efficiency is not None and e.scale > base.scale and e.efficiency < threshold:
            measured = e.scale
            break
    if model is None:
        return Threshold(threshold, measured, None, None, "no model")

    def eff(n: float) -> Optional[float]:
        v = model.predict(n)
        if not math.isfinite(v) or v <= 0:
            return None
        return efficiency_value(base.mean, base.scale, v, n, series.higher_is_better, series.weak)

    step = 2.0 ** (1.0 / _GRID_STEPS_PER_DOUBLING)
    lo = base.scale
    n = base.scale * step
    while n <= max_scale:
        e = eff(n)
        if e is None:
            return Threshold(threshold, measured, None, None, "no positive value", lo)
        if e < threshold:
            hi = n
            for _ in range(60):
                mid = math.sqrt(lo * hi)
                em = eff(mid)
                if em is None or em < threshold:
                    hi = mid
                else:
                    lo = mid
            return Threshold(threshold, measured, hi, int(math.ceil(hi - 1e-9)), "")
        lo = n
        n *= step
    return Threshold(threshold, measured, None, None, "stays above", max_scale)


# ---- comparisons ------------------------------------------------------------------------


def relative_performance(a: ScalingSeries, b: ScalingSeries) -> List[RelativePoint]:
    """B against A at every scale both measured (A is the reference)."""
    out = []
    for pa in a.points:
        pb = b.point(pa.scale)
        if pb is None:
            continue
        ratio = pct = saved = None
        if pa.mean and pb.mean and pa.mean > 0 and pb.mean > 0:
            ratio = pb.mean / pa.mean if a.higher_is_better else pa.mean / pb.mean
            pct = (ratio - 1.0) * 100.0
            if not a.higher_is_better:
                saved = (1.0 - pb.mean / pa.mean) * 100.0
        out.append(RelativePoint(pa.scale, pa.mean, pb.mean, ratio, pct, saved, _significant(pa, pb)))
    return out


def _significant(a: ScalePoint, b: ScalePoint) -> Optional[bool]:
    if a.mean is None or b.mean is None or a.stdev is None or b.stdev is None or a.n < 2 or b.n < 2:
        return None
    t, df = welch(a.mean, a.stdev, a.n, b.mean, b.stdev, b.n)
    return abs(t) > t_critical_975(df)


def _common_tags(series: Sequence[ScalingSeries]) -> set:
    """Tag keys every series has with the same value (they tell no group apart)."""
    if len(series) < 2:
        return set()
    first = series[0].tags
    return {k for k, v in first.items() if all(s.tags.get(k) == v for s in series[1:])}


def default_compare_by(series: Sequence[ScalingSeries]) -> Optional[str]:
    """'fabric' when the series carry different fabric tags, else None (all against the first)."""
    fabrics = {s.tags.get("fabric") for s in series}
    return "fabric" if len(fabrics) > 1 and None not in fabrics else None


def pair_series(
    series: Sequence[ScalingSeries], compare_by: Optional[str] = None, reference: Optional[str] = None
) -> List[Tuple[Dict[str, str], ScalingSeries, ScalingSeries]]:
    """(shared tags, reference, other) pairs to compare.

    With `compare_by` (a tag key), series sharing every other tag form a group, and in each
    group the series whose tag equals `reference` (default: the group's first) is compared with
    the others. Without it, every series is compared with the first (or the one named
    `reference`). Only series of the same metric are paired.
    """
    pairs = []
    common = _common_tags(series)
    if compare_by:
        groups: Dict[Tuple, List[ScalingSeries]] = {}
        for s in series:
            if compare_by not in s.tags:
                continue
            key = tuple(sorted((k, v) for k, v in s.tags.items() if k != compare_by)) + (("#metric", s.metric),)
            groups.setdefault(key, []).append(s)
        for key, members in groups.items():
            ref = next((s for s in members if s.tags.get(compare_by) == reference), members[0]) if reference else members[0]
            shared = {k: v for k, v in key if k != "#metric" and k not in common}
            pairs.extend((shared, ref, s) for s in members if s is not ref)
        return pairs
    if len(series) < 2:
        return []
    ref = next((s for s in series if s.name == reference), series[0]) if reference else series[0]
    return [({}, ref, s) for s in series if s is not ref and s.metric == ref.metric]


# ---- the whole study --------------------------------------------------------------------


def analyse_series(series: ScalingSeries, baseline: Optional[float] = None, threshold: float = DEFAULT_THRESHOLD) -> SeriesAnalysis:
    base = baseline_point(series, baseline)
    model, note = fit_model(series)
    return SeriesAnalysis(
        series=series,
        baseline=base.scale if base else None,
        efficiency=efficiency(series, base.scale if base else None),
        model=model,
        model_note=note,
        threshold=predict_threshold(series, model, threshold, base.scale if base else None),
    )


def analyse(
    series: Sequence[ScalingSeries],
    baseline: Optional[float] = None,
    threshold: float = DEFAULT_THRESHOLD,
    compare_by: Optional[str] = "auto",
    reference: Optional[str] = None,
) -> StudyAnalysis:
    """Every series analysed against the same baseline scale, and the series compared.

    compare_by: a tag key, None (all against the first series) or 'auto' (``default_compare_by``).
    """
    if compare_by == "auto":
        compare_by = default_compare_by(series)
    analysed = [analyse_series(s, baseline, threshold) for s in series]
    comparisons = [
        Comparison(shared, a.name, b.name, compare_by, a.metric, relative_performance(a, b))
        for shared, a, b in pair_series(series, compare_by, reference)
    ]
    return StudyAnalysis(threshold, analysed, comparisons)

