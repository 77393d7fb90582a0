"""Two runs compared point by point, with verdicts that survive noise.

``compare(a, b, options)`` takes two loaded runs (``store.RunData``: run, measurements,
hosts; the caller loads them) and returns a ``Comparison``: the comparability check of
``analysis.comparability``, the matched points grouped in series (``analysis.matching``
decides what matches), the grouped mismatches, and the verdicts. Nothing here reads the
database or prints.

The rule for one point (``analysis.stats`` has the statistics):

- Both points record a median: compare medians. Otherwise (an import that records only an
  average) compare each point's headline value, as the tools print them. A side given as
  replicate runs (the same configuration measured again) contributes the geometric mean.
- The ratio B/A is tested on the log scale with the CIs of both medians (from the sample
  sketch, else from n and stdev) plus the run-to-run noise: a single launch's samples cannot
  show how much the next would differ. Replicate runs, or the launches a run merged into
  each point (``run --repeat``, the default), show it (``stats.between_run_variance``);
  without them, the jitter between neighbouring sizes does (``stats.roughness_variance``).
  A point merged from 3 or more launches is tested even without a CI of its own (the
  launches' spread is its spread). Otherwise a point without a CI on both
  sides (a published number, an import that records only averages, a handful of rank
  averages) is shown but "not judged": a [min, max] over ranks is no sampling spread.
- The p-values of all tested points are corrected together (Holm by default,
  Benjamini-Hochberg on request).
- A point is called better or worse only when its corrected p-value is below alpha *and*
  the difference reaches the practical threshold (default 3%, ``min_effect``) *and*, on a
  curve of 3 or more sizes, a neighbouring size differs the same way (else "isolated").
  Which way is better comes from ``analysis.direction``.

The summary of a series is the geometric mean of B/A over the points called different,
with its 95% CI; when none is, it says "no significant difference".
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis import stats
from fabricbench.analysis.direction import change_words, describe, describe_ratio, improvement, lower_is_better
from fabricbench.analysis.matching import Mismatch, Pair, family, match, mismatch_paragraph, size_label
from fabricbench.report.format import number


@dataclass(frozen=True)
class Options:
    min_effect: float = 0.03  # smallest difference worth calling (fraction of A)
    alpha: float = 0.05
    correction: str = "holm"  # or "bh"
    level: float = 0.95  # confidence level of the intervals shown

    def describe(self) -> str:
        name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(self.correction, self.correction)
        return f"{name}-corrected at {self.alpha:g}, threshold {self.min_effect * 100:g}%"


@dataclass
class PointComparison:
    size: Optional[int]
    a: Optional[float]  # A's median (or value, see statistic)
    b: Optional[float]
    statistic: str  # "median" or "value"
    metric: str = "latency"
    a_ci: Optional[Tuple[float, float]] = None
    b_ci: Optional[Tuple[float, float]] = None
    ratio: Optional[float] = None  # B / A
    ratio_ci: Optional[Tuple[float, float]] = None
    improvement: Optional[float] = None  # fraction; > 0 means B better
    p: Optional[float] = None
    p_adjusted: Optional[float] = None
    significant: Optional[bool] = None  # None: not judged
    verdict: str = "not judged"  # better, worse, isolated, below threshold, no significant difference, not judged
    reason: str = ""
    log_se: Optional[float] = None
    ma: Any = field(default=None, repr=False, compare=False)  # the Measurements compared (not serialised)
    mb: Any = field(default=None, repr=False, compare=False)

    @property
    def diff(self) -> Optional[float]:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def flagged(self) -> bool:
        return self.verdict in ("better", "worse")

    def text(self, b_name: str = "B") -> str:
        """The verdict as a table shows it: 'B is 17% worse', 'no significant difference', ..."""
        if self.flagged:
            return describe_ratio(self.ratio, self.metric, b_name)
        if self.verdict == "below threshold":
            return f"{describe(self.improvement, b_name)}: below the threshold"
        if self.verdict == "isolated":
            return f"{describe_ratio(self.ratio, self.metric, b_name)} at this size only: {self.reason}"
        if self.verdict == "no significant difference":
            return "no significant difference"
        return f"not judged: {self.reason}"

    def short(self) -> str:
        """The verdict in a few words for a table column: '17% worse', '2.1x better', 'not significant'."""
        if self.flagged:
            return change_words(self.ratio, self.metric)
        if self.verdict == "isolated":
            return f"isolated ({change_words(self.ratio, self.metric)})"
        return {"below threshold": "below threshold", "no significant difference": "not significant"}.get(
            self.verdict, "not judged")

    def to_dict(self) -> Dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("ma", "mb")}
        d["diff"] = self.diff
        d["text"] = self.text()
        return d


@dataclass
class SeriesComparison:
    definition: str
    metric: str
    unit: str
    variant: Dict[str, Any]
    benchmark_a: str
    benchmark_b: str
    points: List[PointComparison] = field(default_factory=list)
    run_noise: float = 0.0  # run-to-run standard deviation of ln(B/A)
    noise_from: str = "curve"  # "curve" (jitter between neighbouring sizes), "replicates" (runs) or "launches"

    @property
    def benchmark(self) -> str:
        return self.definition

    @property
    def title(self) -> str:
        name = self.definition if self.metric == self.definition else f"{self.definition} {self.metric}"
        if self.benchmark_a != self.definition or self.benchmark_b != self.definition:
            name += f" (A: {self.benchmark_a}, B: {self.benchmark_b})"
        v = ", ".join(f"{k}={v}" for k, v in self.variant.items())
        return f"{name} [{v}]" if v else name

    @property
    def lower_is_better(self) -> bool:
        return lower_is_better(self.metric)

    def _diffs(self, points: Optional[Sequence[PointComparison]] = None) -> List[float]:
        return [p.diff for p in (self.points if points is None else points) if p.diff is not None]

    @property
    def mean_diff(self) -> Optional[float]:
        d = self._diffs()
        return sum(d) / len(d) if d else None

    @property
    def diff_range(self) -> Optional[Tuple[float, float]]:
        d = self._diffs()
        return (min(d), max(d)) if d else None

    def flagged(self, verdict: Optional[str] = None) -> List[PointComparison]:
        return [p for p in self.points if p.flagged and (verdict is None or p.verdict == verdict)]

    @property
    def judged(self) -> List[PointComparison]:
        return [p for p in self.points if p.significant is not None]

    def geometric_mean(self, verdict: str) -> Optional[Tuple[float, float, float]]:
        """(geometric mean of B/A, CI low, CI high) over the points called `verdict`."""
        pts = [p for p in self.flagged(verdict) if p.ratio]
        return stats.geometric_mean_ci([p.ratio for p in pts], log_se=[p.log_se or 0.0 for p in pts])

    def summary(self, a_name: str = "A", b_name: str = "B") -> str:
        """One sentence: what differs, by how much, over how many points, or that nothing does."""
        n = len(self.points)
        if not n:
            return "no points to compare."
        what = "sizes" if any(p.size is not None for p in self.points) else "points"
        judged = self.judged
        parts = []
        for verdict in ("worse", "better"):
            pts = self.flagged(verdict)
            if pts:
                gm = self.geometric_mean(verdict)
                head = describe_ratio(gm[0], self.metric, b_name)
                parts.append(f"{head} at {len(pts)} of {n} {what} (geometric mean of {b_name}/{a_name} "
                             f"{_ratio(gm[0])}, 95% CI {_ratio(gm[1])}-{_ratio(gm[2])})")
        isolated = sum(1 for p in judged if p.verdict == "isolated")
        rest = len(judged) - sum(1 for p in judged if p.flagged) - isolated
        if parts:
            text = "; ".join(parts)
            if rest:
                text += f"; no significant difference at {rest}"
        elif rest:
            text = f"no significant difference at {'any of the' if rest > 1 else 'the'} {rest} {what} judged"
        elif not judged:
            text = self._absolute(self.points, a_name, b_name) or "nothing to judge"
        else:
            text = "no confirmed difference"
        if isolated:
            text += f"; isolated differences at {isolated} (one size only, re-measure)"
        unjudged = n - len(judged)
        if unjudged:
            reasons = sorted({p.reason for p in self.points if p.significant is None})
            text += f"; not judged at {unjudged} ({', '.join(reasons)})"
        if self.run_noise >= 0.01:
            where = {"replicates": "between replicate runs", "launches": "between launches"}.get(self.noise_from,
                                                                                                 "along the curve")
            text += f"; run-to-run noise {where} about {self.run_noise * 100:.0f}%"
        return text + "."

    def _absolute(self, pts: Sequence[PointComparison], a_name: str, b_name: str) -> str:
        d = self._diffs(pts)
        if not d:
            return ""
        md = sum(d) / len(d)
        if self.lower_is_better:
            verb = "adds" if md > 0 else "saves"
        else:
            verb = "gains" if md > 0 else "loses"
        text = f"{b_name} {verb} {_fmt(abs(md))} {self.unit} on average vs {a_name}"
        if len(d) > 1:
            text += f" ({_fmt(min(d))} to {_fmt(max(d))} {self.unit} over {len(d)} sizes)"
        return text

    def to_dict(self) -> Dict[str, Any]:
        return {
            "definition": self.definition,
            "benchmark_a": self.benchmark_a,
            "benchmark_b": self.benchmark_b,
            "metric": self.metric,
            "unit": self.unit,
            "variant": self.variant,
            "lower_is_better": self.lower_is_better,
            "mean_diff": self.mean_diff,
            "run_noise": self.run_noise,
            "noise_from": self.noise_from,
            "worse": len(self.flagged("worse")),
            "better": len(self.flagged("better")),
            "judged": len(self.judged),
            "summary": self.summary(),
            "points": [p.to_dict() for p in self.points],
        }


_fmt = number  # the one number formatter (report.format)


def _ratio(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


# -- one point --------------------------------------------------------------------------

def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _headline(m: Any) -> Optional[float]:
    for name in ("value", "mean", "median"):
        v = _num(getattr(m, name, None))
        if v is not None:
            return v
    return None


def _why_not_judged(a: Any, b: Any, ca: Optional[stats.Center], cb: Optional[stats.Center]) -> str:
    averages_only = [s for s, c in (("A", ca), ("B", cb)) if c is not None and c.statistic == "mean"]
    if len(averages_only) == 1:
        return f"{averages_only[0]} records only an average"
    reasons = [_no_ci(a), _no_ci(b)]
    if reasons[0] and reasons[1]:
        return reasons[0] if reasons[0] == reasons[1] else f"A: {reasons[0]}, B: {reasons[1]}"
    return f"{'A' if reasons[0] else 'B'}: {reasons[0] or reasons[1]}"


def _no_ci(m: Any) -> Optional[str]:
    """Why a point has no CI of its median (None when it has one)."""
    if stats.median_ci(m) is not None:
        return None
    n = getattr(m, "n", None)
    if isinstance(n, int) and 2 <= n < stats.MIN_SAMPLES:
        return f"{n} samples, too few for a CI"
    return "no spread recorded"


MIN_LAUNCHES = 3  # launches that give a side a spread when its points have no CI of their own


@dataclass
class Side:
    """One side's figure for a point: from one run, or the geometric mean over replicate runs;
    a run whose point merges several launches (``run --repeat``) contributes each launch."""

    center: float  # the geometric mean of `logs`: what is tested
    logs: List[float]  # ln of each replicate's figure (runs, or launches)
    within: float  # variance of ln(center) from the points' own CIs (mean se^2 / runs)
    ci: Optional[Tuple[float, float]] = None  # a single run's own CI of its median
    source: str = "runs"  # what the replicates are: "runs" or "launches"

    @property
    def k(self) -> int:
        return len(self.logs)


def _side(reps: Sequence[Any], statistic: str, level: float) -> Tuple[Optional[float], Optional[Side]]:
    """(the figure shown, the Side to test or None when it has no spread to test with)."""
    values = [stats.center(m).value if statistic == "median" else _headline(m) for m in reps]
    if any(v is None for v in values):
        return None, None
    if len(values) == 1 or any(v <= 0 for v in values):
        shown = values[0] if len(values) == 1 else sum(values) / len(values)
    else:
        shown = math.exp(sum(math.log(v) for v in values) / len(values))
    if shown <= 0 or any(v <= 0 for v in values):
        return shown, None
    per_run = [stats.launch_values(m, statistic) for m in reps]
    launched = all(len(lv) >= 2 and min(lv) > 0 for lv in per_run)
    logs = ([math.log(x) for lv in per_run for x in lv] if launched else [math.log(v) for v in values])
    cis = [stats.median_ci(m, level) for m in reps] if statistic == "median" else [None] * len(reps)
    if any(ci is None for ci in cis):
        if not (launched and len(logs) >= MIN_LAUNCHES):
            return shown, None
        within = 0.0  # the launches' spread is all there is (a few rank averages, say)
    else:
        within = sum(ci.rel_se ** 2 for ci in cis) / len(cis) ** 2
    own = (cis[0].low, cis[0].high) if len(cis) == 1 and cis[0] is not None else None
    center = math.exp(sum(logs) / len(logs))
    return shown, Side(center, logs, within, own, "launches" if launched else "runs")


def measure_point(a_reps: Sequence[Any], b_reps: Sequence[Any], metric: str, size: Optional[int],
                  level: float = 0.95) -> Tuple[PointComparison, Optional[Tuple[Side, Side]]]:
    """One matched point before correction: figures, what can be tested, or why not."""
    a, b = a_reps[0], b_reps[0]
    centers = [stats.center(m) for m in list(a_reps) + list(b_reps)]
    statistic = "median" if all(c is not None and c.statistic == "median" for c in centers) else "value"
    va, sa = _side(a_reps, statistic, level)
    vb, sb = _side(b_reps, statistic, level)
    pc = PointComparison(size, va, vb, statistic, metric)
    if va is None or vb is None:
        pc.reason = "no value"
        return pc, None
    pc.ratio = vb / va if va else None
    pc.improvement = improvement(va, vb, metric)
    if sa and sb:
        return pc, (sa, sb)
    pc.reason = _why_not_judged(a, b, stats.center(a), stats.center(b))
    return pc, None


def _decide(pc: PointComparison, options: Options) -> None:
    """Verdict from significance and the practical threshold (after correction)."""
    if pc.significant is None:
        pc.verdict = "not judged"
        return
    if not pc.significant:
        pc.verdict = "no significant difference"
        return
    if pc.improvement is None or abs(pc.improvement) < options.min_effect:
        pc.verdict = "below threshold"
        return
    pc.verdict = "better" if pc.improvement > 0 else "worse"


def _confirm_by_neighbours(s: SeriesComparison, options: Options) -> None:
    """On a curve (3 or more sizes), a difference is called only when a neighbouring size differs
    the same way, beyond the threshold and significant on its own (before correction): a fabric
    changes a range of sizes, while a stall of the host during one point changes that point
    alone. Unconfirmed: "isolated" (shown, not counted)."""
    pts = [p for p in s.points if p.size is not None]
    if len(pts) < 3:
        return

    def agrees(q: PointComparison, sign: int) -> bool:
        return (q.p is not None and q.p < options.alpha and q.improvement is not None
                and sign * q.improvement >= options.min_effect)

    isolated = []
    for i, p in enumerate(pts):
        neighbours = [pts[j] for j in (i - 1, i + 1) if 0 <= j < len(pts)]
        if p.flagged and not any(agrees(q, 1 if p.improvement > 0 else -1) for q in neighbours):
            isolated.append(p)
    for p in isolated:
        p.verdict = "isolated"
        p.reason = "no neighbouring size differs the same way: re-measure to confirm"


# -- two runs ---------------------------------------------------------------------------

@dataclass
class Comparison:
    a: Any  # Run (the first of A's replicate runs)
    b: Any  # Run
    comparability: Any  # analysis.comparability.Comparability
    series: List[SeriesComparison]
    mismatches: List[Mismatch]
    options: Options = field(default_factory=Options)
    tested: int = 0  # points in the multiple-comparison family
    a_runs: List[Any] = field(default_factory=list)  # every Run of side A (replicates), a first
    b_runs: List[Any] = field(default_factory=list)

    @property
    def points(self) -> List[Tuple[SeriesComparison, PointComparison]]:
        return [(s, p) for s in self.series for p in s.points]

    def flagged(self, verdict: str) -> List[Tuple[SeriesComparison, PointComparison]]:
        return [(s, p) for s, p in self.points if p.verdict == verdict]

    def point_of(self, m: Any) -> Optional[Tuple[SeriesComparison, PointComparison]]:
        """The comparison a measurement of A or B took part in (None when it found no partner)."""
        for s, p in self.points:
            if p.ma is m or p.mb is m:
                return s, p
        return None

    @property
    def mismatch_text(self) -> str:
        return mismatch_paragraph(self.mismatches)

    def summary(self, a_name: str = "A", b_name: str = "B") -> str:
        total = len(self.points)
        if not total:
            return "No common points to compare."
        worse, better = len(self.flagged("worse")), len(self.flagged("better"))
        judged = sum(1 for _s, p in self.points if p.significant is not None)
        unjudged = total - judged
        tail = f" ({self.options.describe()}; {self.tested} points tested)" if self.tested else ""
        isolated = len(self.flagged("isolated"))
        if not worse and not better:
            text = f"Overall: no significant difference between {a_name} and {b_name}"
            quiet = judged - isolated
            text += f" at {quiet} point{'s' if quiet != 1 else ''}" if quiet else ""
        else:
            text = f"Overall: {b_name} is worse at {worse} and better at {better} of {total} points"
            rest = judged - worse - better - isolated
            if rest:
                text += f"; no significant difference at {rest}"
        if isolated:
            text += f"; {isolated} isolated (one size only, re-measure)"
        if unjudged:
            text += f"; {unjudged} not judged"
        return text + tail + "."

    def to_dict(self) -> Dict[str, Any]:
        def run_info(r):
            return {"id": r.id, "uuid": r.uuid, "name": r.name, "label": r.label, "tags": r.tags}

        return {
            "a": run_info(self.a),
            "b": run_info(self.b),
            "a_runs": [r.id for r in self.a_runs or [self.a]],
            "b_runs": [r.id for r in self.b_runs or [self.b]],
            "options": asdict(self.options),
            "comparability": self.comparability.to_dict(),
            "summary": self.summary(),
            "tested": self.tested,
            "series": [s.to_dict() for s in self.series],
            "mismatches": [m.to_dict() for m in self.mismatches],
            "not_compared": self.mismatch_text,
        }


def _variant_shown(strict: Sequence[Tuple[str, Any]]) -> Dict[str, Any]:
    """The key parameters worth naming in a title (cache only when cold, window only when not 64)."""
    out = {}
    for k, v in strict:
        if (k == "cache" and v == "warm") or (k == "window" and v == 64):
            continue
        out[k] = v
    return out


@dataclass
class Compared:
    series: List[SeriesComparison]
    tested: int  # points in the multiple-comparison family
    points: List[PointComparison]  # one per input pair, in input order


def compare_pairs(pairs: Sequence[Pair], options: Options = Options()) -> Compared:
    """Series comparisons of matched pairs, with corrected verdicts (series points sorted by size)."""
    groups: Dict[Tuple, SeriesComparison] = {}
    testable: Dict[int, List[Tuple[PointComparison, Side, Side]]] = {}
    per_pair: Dict[int, PointComparison] = {}
    for pair in sorted(pairs, key=lambda p: (p.key.size is None, p.key.size or 0)):
        k = pair.key
        s = groups.get(k.series_key)
        if s is None:
            s = groups[k.series_key] = SeriesComparison(k.definition, k.metric, pair.a.unit, _variant_shown(k.strict),
                                                        pair.a.benchmark, pair.b.benchmark)
        pc, sides = measure_point(pair.a_reps, pair.b_reps, k.metric, k.size, options.level)
        pc.ma, pc.mb = pair.a, pair.b
        s.points.append(pc)
        per_pair[id(pair)] = pc
        if sides:
            testable.setdefault(id(s), []).append((pc, *sides))
    tested: List[PointComparison] = []
    z = float(stats.norm_quantile(0.5 + options.level / 2))
    for s in groups.values():
        items = testable.get(id(s), [])
        sigma2, s.noise_from = _run_to_run(items)
        s.run_noise = math.sqrt(2 * sigma2)
        for pc, sa, sb in items:
            d = math.log(sb.center / sa.center)
            se = math.sqrt(sa.within + sb.within + sigma2 * (1 / sa.k + 1 / sb.k))
            test = stats.log_ratio_test(d, se)
            pc.p, pc.log_se = test.p, test.log_se
            pc.ratio_ci = test.interval(options.level)
            pc.a_ci = _side_ci(sa, sigma2, z)
            pc.b_ci = _side_ci(sb, sigma2, z)
            tested.append(pc)
    adjust = stats.CORRECTIONS.get(options.correction)
    if adjust is None:
        raise ValueError(f"unknown correction '{options.correction}'; use one of {', '.join(stats.CORRECTIONS)}")
    for pc, padj in zip(tested, adjust([pc.p for pc in tested])):
        pc.p_adjusted = padj
        pc.significant = padj < options.alpha
        pc.reason = f"p={padj:.2g} after correction"
    for s in groups.values():
        for pc in s.points:
            _decide(pc, options)
        _confirm_by_neighbours(s, options)
    return Compared(list(groups.values()), len(tested), [per_pair[id(p)] for p in pairs])


def _side_ci(side: Side, sigma2: float, z: float) -> Tuple[float, float]:
    """The CI of a side's figure: one run's own CI, or for replicates their CIs and the run-to-run noise."""
    if side.ci is not None and side.k == 1:
        return side.ci
    m = sum(side.logs) / side.k
    half = z * math.sqrt(side.within + (sigma2 / side.k if side.k > 1 else 0.0))
    return stats.clipped_exp(m - half), stats.clipped_exp(m + half)


def _run_to_run(items: Sequence[Tuple[PointComparison, Side, Side]]) -> Tuple[float, str]:
    """Variance of ln(one replicate's figure), and where it came from: replicate runs or launches of
    either side when there are any (stats.between_run_variance), else the jitter along the curve."""
    groups = [side.logs for _pc, sa, sb in items for side in (sa, sb) if side.k > 1]
    if groups:
        launched = all(side.source == "launches" for _pc, sa, sb in items for side in (sa, sb) if side.k > 1)
        return stats.between_run_variance(groups), "launches" if launched else "replicates"
    logs = [math.log(sb.center / sa.center) for _pc, sa, sb in items]
    return stats.roughness_variance(logs, [sa.within + sb.within for _pc, sa, sb in items]) / 2, "curve"


def _relevant(comparability: Any, series: Sequence[SeriesComparison]) -> Any:
    """Drop the total rank count from the confounders when only single-pair tests were compared."""
    if series and all(family(s.definition) == "single-pair" for s in series):
        comparability.differences = [d for d in comparability.differences if d.key != "ranks"]
    return comparability


def compare(a: Any, b: Any, options: Options = Options(), benchmark: Optional[str] = None) -> Comparison:
    """Compare B against A; each a run (``RunData``) or a list of replicate runs. See the module doc."""
    from fabricbench.analysis.comparability import check_comparability

    side_a = list(a) if isinstance(a, (list, tuple)) else [a]
    side_b = list(b) if isinstance(b, (list, tuple)) else [b]
    matching = match(side_a, side_b, benchmark)
    done = compare_pairs(matching.pairs, options)
    first_a, first_b = side_a[0], side_b[0]
    comp = _relevant(check_comparability(first_a.run, first_a.hosts, first_b.run, first_b.hosts), done.series)
    return Comparison(first_a.run, first_b.run, comp, done.series, matching.mismatches, options, done.tested,
                      [r.run for r in side_a], [r.run for r in side_b])


def describe_point(s: SeriesComparison, p: PointComparison) -> str:
    """'bw 4M: B is 52% worse (B/A 0.48)' - how check names a point."""
    where = f"{s.title} {size_label(p.size)}" if p.size is not None else s.title
    ratio = f" (B/A {_ratio(p.ratio)})" if p.ratio is not None else ""
    return f"{where}: {p.text()}{ratio}"
