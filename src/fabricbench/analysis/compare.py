"""Two runs compared point by point, with verdicts that survive noise.

``compare(a, b, options)`` takes two loaded runs (``store.RunData``: run, measurements,
hosts; the caller loads them) and returns a ``Comparison``: the comparability check of
``analysis.comparability``, the matched points grouped in series (``analysis.matching``
decides what matches), the grouped mismatches, and the verdicts. Nothing here reads the
database or prints.

The rule for one point (``analysis.stats`` has the statistics):

- The figure compared is each point's figure of record (``analysis.record``), the one its
  headline, table and plot show: for the engine's bandwidth and bi-bandwidth the rate over all
  iterations, with its CI from the window times (``stats.rate_ci``); else, when both points
  record a median, the median with its CI. Otherwise (an import that records only an average)
  compare each point's headline value, as the tools print them. A side given as
  replicate runs (the same configuration measured again) contributes the geometric mean.
- The ratio B/A is tested on the log scale with the CIs of both medians (from the sample
  sketch, else from n and stdev) plus the run-to-run noise: a single launch's samples cannot
  show how much the next would differ. A side's figure from n runs of k launches in all
  varies by launch/k + run/n (``Noise``): the launches a run merged into each point (``run
  --repeat``, the default) show the first part only, as they share the state the host was in
  for the whole run. The run-level part comes from stored replicate runs of the same
  configuration (``history``, chosen by the caller), else from replicate runs given as a
  side; with neither it is not identifiable and taken as 0 (the output says so); a run of
  one launch falls back to the jitter between neighbouring sizes (``stats.roughness_variance``).
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
- When both runs ran on the same hosts and the engine's host probe says the host itself
  changed state between them (``analysis.host_state``), a point is called only when it
  changed by more than the host's move explains; the others are "host changed" (shown, not
  counted).

The summary of a series is the geometric mean of B/A over the points called different,
with its 95% CI; when none is, it says "no significant difference".
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fabricbench.analysis import stats
from fabricbench.analysis.direction import improvement, lower_is_better
from fabricbench.analysis.host_state import (HostLoad, HostShift, allowance, busiest, busy_allowance, busy_factor,
                                             host_shift, same_hosts, sensitivity)
from fabricbench.analysis.matching import Mismatch, Pair, family, match


HOST_BUSY = "host busy"  # the verdict of a point the busy host could have moved as much
# The sentences of a comparison (a point's verdict, a series' summary, the overall line, the notes on
# the noise and the host, the JSON with them) are written in report.words.compare.


@dataclass(frozen=True)
class Options:
    min_effect: float = 0.03  # smallest difference worth calling (fraction of A)
    alpha: float = 0.05
    correction: str = "holm"  # or "bh"
    level: float = 0.95  # confidence level of the intervals shown

@dataclass
class PointComparison:
    size: Optional[int]
    a: Optional[float]  # A's figure of record: median, rate over all iterations or value (see statistic)
    b: Optional[float]
    statistic: str  # "median", "rate" (over all iterations) or "value"
    metric: str = "latency"
    a_ci: Optional[Tuple[float, float]] = None
    b_ci: Optional[Tuple[float, float]] = None
    ratio: Optional[float] = None  # B / A
    ratio_ci: Optional[Tuple[float, float]] = None
    improvement: Optional[float] = None  # fraction; > 0 means B better
    p: Optional[float] = None
    p_adjusted: Optional[float] = None
    significant: Optional[bool] = None  # None: not judged
    verdict: str = "not judged"  # better, worse, isolated, host changed, host busy, below threshold, no significant difference, not judged
    reason: str = ""  # why, in words, when no figure is in it (report.words.compare.reason words the rest)
    held_by: Any = field(default=None, repr=False, compare=False)  # the HostShift or HostLoad that held the call
    held_factor: Optional[float] = None  # how much the busy host (held_by, a HostLoad) can move this figure
    log_se: Optional[float] = None
    log_ratio: Optional[float] = None  # the ln B/A tested and shown: of each side's launches' median
    single: bool = False  # one figure on each side and no spread: shown side by side, never judged
    resolution: Optional[float] = None  # the coarser step either side's figure was measured with (seconds)
    ma: Any = field(default=None, repr=False, compare=False)  # the Measurements compared (not serialised)
    mb: Any = field(default=None, repr=False, compare=False)

    @property
    def diff(self) -> Optional[float]:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def flagged(self) -> bool:
        return self.verdict in ("better", "worse")

    def to_dict(self) -> Dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("ma", "mb", "held_by", "held_factor")}
        d["diff"] = self.diff
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
    run_noise: float = 0.0  # standard deviation of ln(B/A) of two single runs of one configuration
    noise_from: str = "curve"  # "history", "replicates", "launches" or "curve" (see _noise)
    history_runs: int = 0  # stored replicate runs the noise came from (noise_from "history")
    launch_noise: float = 0.0  # sd of ln(one launch's figure) within a run
    run_level_noise: float = 0.0  # sd of ln(one run's figure) beyond what its launches show
    host_shift: Optional[HostShift] = None  # the host's own move between A's and B's launches (host_state)

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
            "history_runs": self.history_runs,
            "host_shift": self.host_shift.to_dict() if self.host_shift else None,
            "launch_noise": self.launch_noise,
            "run_level_noise": self.run_level_noise,
            "worse": len(self.flagged("worse")),
            "better": len(self.flagged("better")),
            "judged": len(self.judged),
            "points": [p.to_dict() for p in self.points],
        }


# -- one point --------------------------------------------------------------------------

def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _headline(m: Any) -> Optional[float]:
    """The figure compared when a side has no median: like for like, the OSU-comparable mean that the
    figure of record keeps (analysis/record.py), never one side's median against the other's mean."""
    from fabricbench.analysis.record import figure_of_record

    f = figure_of_record(m, with_ci=False)
    return None if f is None else f.mean if f.mean is not None else f.value


def _why_not_judged(a: Any, b: Any, ca: Optional[stats.Center], cb: Optional[stats.Center]) -> str:
    averages_only = [s for s, c in (("A", ca), ("B", cb)) if c is not None and c.statistic == "mean"]
    if len(averages_only) == 1:
        return f"{averages_only[0]} records only an average"
    reasons = [_no_ci(a), _no_ci(b)]
    if reasons[0] and reasons[1]:
        return reasons[0] if reasons[0] == reasons[1] else f"A: {reasons[0]}, B: {reasons[1]}"
    return f"{'A' if reasons[0] else 'B'}: {reasons[0] or reasons[1]}"


def _no_ci(m: Any) -> Optional[str]:
    """Why a point has no CI of its figure (None when it has one)."""
    if stats.figure_ci(m, compared_statistic([m])) is not None:
        return None
    n = getattr(m, "n", None)
    if isinstance(n, int) and 2 <= n < stats.MIN_SAMPLES:
        return f"{n} samples, too few for a CI"
    return "no spread recorded"


MIN_LAUNCHES = 3  # launches that give a side a spread when its points have no CI of their own
MIN_HISTORY = 2  # stored replicate runs a side needs before they count (with the compared run: 3 figures)
OWN_SPREAD_RUNS = 5  # runs of a point whose spread is trusted at that size alone (else the series' spread)


@dataclass
class Side:
    """One side's figure for a point: from one run, or the geometric mean over replicate runs;
    each run's figure is the geometric mean of its launches (``run --repeat``) when it merged several.
    ``history`` holds the same point in stored runs of the same configuration: they are not part of
    the figure, only of how much a run's figure varies."""

    center: float  # exp(mean of `runs`): what is tested
    runs: List[float]  # ln of each run's figure
    launches: List[List[float]]  # ln of each launch's figure, per run ([] for a run of one launch)
    within: float  # variance of ln(center) from the points' own CIs (mean se^2 / runs)
    ci: Optional[Tuple[float, float]] = None  # a single run's own CI of its median
    history: List[float] = field(default_factory=list)  # ln of each stored replicate run's figure
    history_launches: List[List[float]] = field(default_factory=list)
    history_ids: Tuple[Any, ...] = ()  # the stored runs in `history`
    guard: Optional[Tuple[float, float]] = None  # a rate's side: (ln of the median window rate, its variance)

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def k(self) -> int:
        """Launches behind the figure (a run of one launch counts one)."""
        return sum(max(1, len(lv)) for lv in self.launches)


def _run_figure(m: Any, statistic: str) -> Optional[Tuple[float, List[float]]]:
    """(ln of a run's figure for a point, ln of each launch's figure): the figure is the point's figure
    of record (its median, or rate over all iterations, over all its launches' samples: what show,
    the report and the headlines print), so that the figure judged is the one shown; the launches'
    own figures only measure how much a launch varies. None without a positive figure."""
    v = _figure(m, statistic)
    if v is None or v <= 0:
        return None
    lv = stats.launch_values(m, statistic)
    return math.log(v), ([math.log(x) for x in lv] if len(lv) >= 2 and min(lv) > 0 else [])


def _figure(m: Any, statistic: str) -> Optional[float]:
    """A point's figure by the statistic compared: its median, its rate over all iterations (the
    engine's value) or its headline value."""
    if statistic == "median":
        c = stats.center(m)
        return c.value if c is not None else None
    if statistic == "rate":
        return _num(getattr(m, "value", None))
    return _headline(m)


def _side(reps: Sequence[Any], statistic: str, level: float,
          history: Sequence[Any] = ()) -> Tuple[Optional[float], Optional[Side]]:
    """(the figure shown, the Side to test or None when it has no spread to test with)."""
    values = [_figure(m, statistic) for m in reps]
    if any(v is None for v in values):
        return None, None
    if len(values) == 1 or any(v <= 0 for v in values):
        shown = values[0] if len(values) == 1 else sum(values) / len(values)
    else:
        shown = math.exp(sum(math.log(v) for v in values) / len(values))
    if shown <= 0 or any(v <= 0 for v in values):
        return shown, None
    figures = [_run_figure(m, statistic) for m in reps]
    launched = all(len(f[1]) >= 2 for f in figures)
    cis = [stats.figure_ci(m, statistic, level) for m in reps]
    if any(ci is None for ci in cis):
        if not ((launched and sum(len(f[1]) for f in figures) >= MIN_LAUNCHES) or len(reps) >= MIN_LAUNCHES):
            return shown, None  # 3 or more runs or repetitions (a scaling study's) spread like launches
        within = 0.0  # the launches' spread is all there is (a few rank averages, say)
    else:
        within = sum(ci.rel_se ** 2 for ci in cis) / len(cis) ** 2
    own = (cis[0].low, cis[0].high) if len(cis) == 1 and cis[0] is not None else None
    runs = [f[0] for f in figures]
    side = Side(shown, runs, [f[1] for f in figures], within, own)  # shown: exp(mean of runs), exactly
    if statistic == "rate":
        side.guard = _median_guard(reps, level)
    for m in history:
        f = _run_figure(m, statistic)
        if f is not None:
            side.history.append(f[0])
            side.history_launches.append(f[1])
            side.history_ids += (m.run_id,)
    return shown, side


def _median_guard(reps: Sequence[Any], level: float) -> Optional[Tuple[float, float]]:
    """(ln of the geometric mean of the sides' median window rates, its variance from their CIs), or
    None when a side lacks a median with a CI."""
    cis = [stats.median_ci(m, level) for m in reps]
    if any(ci is None or ci.center <= 0 for ci in cis):
        return None
    return (sum(math.log(ci.center) for ci in cis) / len(cis), sum(ci.rel_se ** 2 for ci in cis) / len(cis) ** 2)


def _guarded_p(p: float, d: float, sa: Side, sb: Side, noise_var: float) -> float:
    """A rate over all iterations is called different only when the median window moved the same way
    (an intersection-union test: the larger p-value of the two, 1 when they disagree in sign). A
    stall of the host lengthens a few windows and moves the rate, so two identical runs can differ
    in the rate alone (measured: 2 of 20 samples of 200 windows with 2% stalled windows differ
    1.7x); a slower fabric slows every window, the median among them."""
    if sa.guard is None or sb.guard is None:
        return p
    dm = sb.guard[0] - sa.guard[0]
    if dm * d <= 0:
        return 1.0
    return max(p, stats.log_ratio_test(dm, math.sqrt(sa.guard[1] + sb.guard[1] + noise_var)).p)


def measure_point(a_reps: Sequence[Any], b_reps: Sequence[Any], metric: str, size: Optional[int],
                  level: float = 0.95, history: Tuple[Sequence[Any], Sequence[Any]] = ((), ())
                  ) -> Tuple[PointComparison, Optional[Tuple[Side, Side]]]:
    """One matched point before correction: figures, what can be tested, or why not. `history`:
    the point in stored replicate runs of A's and of B's configuration."""
    a, b = a_reps[0], b_reps[0]
    statistic = compared_statistic(list(a_reps) + list(b_reps))
    va, sa = _side(a_reps, statistic, level, history[0])
    vb, sb = _side(b_reps, statistic, level, history[1])
    if sa and sb:  # the figures tested are the ones shown: each run's figure of record
        va, vb = sa.center, sb.center
    pc = PointComparison(size, va, vb, statistic, metric)
    if va is None or vb is None:
        pc.reason = "no value"
        return pc, None
    pc.ratio = vb / va if va else None
    pc.improvement = improvement(va, vb, metric)
    pc.resolution = resolution(list(a_reps) + list(b_reps))
    if pc.resolution is not None and abs(vb - va) <= pc.resolution:
        # A whole-second clock reads 1 s and 2 s for runs 0.01 s apart: no change below its step is seen.
        pc.reason = WITHIN_RESOLUTION
        pc.single = len(a_reps) == 1 and len(b_reps) == 1 and one_measurement(a) and one_measurement(b)
        return pc, None
    if sa and sb:
        return pc, (sa, sb)
    pc.reason = _why_not_judged(a, b, stats.center(a), stats.center(b))
    pc.single = len(a_reps) == 1 and len(b_reps) == 1 and one_measurement(a) and one_measurement(b)
    if pc.single:
        pc.reason = ONE_EACH
    return pc, None


def compared_statistic(points: Sequence[Any]) -> str:
    """Which figure a matched point is compared by, the same on every side: "rate" when every side's
    figure of record is the rate over all iterations, else "median" when every side records a
    median, else "value"."""
    from fabricbench.analysis.record import RATE_ALL, statistic_of

    if points and all(statistic_of(m) == RATE_ALL for m in points):
        return "rate"
    centers = [stats.center(m) for m in points]
    return "median" if all(c is not None and c.statistic == "median" for c in centers) else "value"


ONE_EACH = "one measurement each"
WITHIN_RESOLUTION = "within the figure's resolution"


def resolution(points: Sequence[Any]) -> Optional[float]:
    """The coarsest step (``resolution_s`` in a point's detail, e.g. 1.0 for OpenFOAM's ClockTime) of
    points measured in seconds; None when none records one."""
    steps = [float(r) for m in points if (getattr(m, "unit", None) or "") == "s"
             for r in [(getattr(m, "detail", None) or {}).get("resolution_s")] if isinstance(r, (int, float)) and r > 0]
    return max(steps) if steps else None
REPEATABLE = frozenset({"benchmark", "scaling", "app", "transfer"})  # run kinds whose command takes --repeat


def _figure_order(s: "SeriesComparison") -> int:
    """HPCC figures in the seven tests' order (headlines first), then the rest as they came."""
    from fabricbench.analysis.hpcc import FIGURES

    order = list(FIGURES)
    test = s.variant.get("test")
    return order.index(test) if s.definition == "hpcc" and test in order else len(order)


def one_measurement(m: Any) -> bool:
    """A point that is a single figure: no samples, no CI of its median, no launches merged
    (an HPCC summary value, an application's figure from one run)."""
    if stats.median_ci(m) is not None or len(stats.launch_values(m)) >= 2:
        return False
    n = getattr(m, "n", None)
    return not (isinstance(n, int) and n >= 2)


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


def _allow_for_host(s: SeriesComparison, options: Options) -> None:
    """Points that changed by no more than the host's own move explains (plus the threshold): "host changed".
    The change is the smaller of the one shown (the merged figures) and the one tested (each side's
    launches' geometric mean, as the probe's move is): a mix of states moves the two differently."""
    if allowance(s.host_shift, options.min_effect) is None:
        return
    for pc in s.points:
        if not (pc.flagged and pc.ratio):
            continue
        follows = sensitivity(s.host_shift, stats.launch_values(pc.ma, pc.statistic),
                              stats.launch_values(pc.mb, pc.statistic))
        change = min(abs(math.log(pc.ratio)), abs(pc.log_ratio) if pc.log_ratio is not None else math.inf)
        if change <= allowance(s.host_shift, options.min_effect, follows):
            pc.verdict = "host changed"
            pc.reason, pc.held_by = "", s.host_shift


def _allow_for_busy_host(s: SeriesComparison, busy: Optional[HostLoad], options: Options) -> None:
    """Points whose change a busy host's contention alone could make (``host_state.busy_allowance``):
    "host busy", shown as "host too busy to judge", not called. Measured: two identical runs at load
    2 to 5 on 2 CPUs differed 2.43x at bibw 4 MiB, and at load 21 the median alltoall call of 32 B
    went from 0.77 us to 27 ms; no statistic on the two runs tells that from the fabric."""
    if busy is None:
        return
    for pc in s.points:
        if not pc.ratio:
            continue
        # a call, or a change beyond the threshold that contention left too uncertain to be significant
        # (never "no significant difference" for a 20,000x change the busy host made unreadable)
        unreadable = pc.verdict == "no significant difference" and abs(math.log(pc.ratio)) >= math.log1p(options.min_effect)
        if not (pc.flagged or unreadable):
            continue
        sample = sample_us(pc)
        limit = busy_allowance(busy, options.min_effect, sample)
        change = min(abs(math.log(pc.ratio)), abs(pc.log_ratio) if pc.log_ratio is not None else math.inf)
        if change <= limit:
            pc.verdict = HOST_BUSY
            pc.reason, pc.held_by, pc.held_factor = "", busy, busy_factor(busy, sample)


def sample_us(pc: PointComparison) -> Optional[float]:
    """How long one sample of the point took on the faster side, in microseconds: a time figure times
    the calls per sample (``detail.batch``); a bandwidth's bytes per window (size x window, both ways
    for bi-bandwidth) over its rate (MB/s = bytes/us); None for other units."""
    m = pc.ma if pc.ma is not None else pc.mb
    if m is None or pc.a is None or pc.b is None or min(pc.a, pc.b) <= 0:
        return None
    unit = getattr(m, "unit", None)
    detail = getattr(m, "detail", None) if isinstance(getattr(m, "detail", None), dict) else {}
    params = getattr(m, "params", None) or {}
    if unit == "us":
        batch = detail.get("batch") if isinstance(detail.get("batch"), int) and detail.get("batch") > 0 else 1
        return min(pc.a, pc.b) * batch
    size, window = params.get("size"), params.get("window", 1)
    if unit == "MB/s" and isinstance(size, int) and size > 0 and isinstance(window, int) and window > 0:
        both = 2 if getattr(m, "metric", None) == "bibandwidth" else 1
        return size * window * both / max(pc.a, pc.b)
    return None


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
    history_a: List[Any] = field(default_factory=list)  # stored replicate runs of A's configuration (Run)
    history_b: List[Any] = field(default_factory=list)
    history_ignored: bool = False  # stored runs were not looked at (--no-history)
    busy: Optional[HostLoad] = None  # the busiest side's host, when its CPUs were oversubscribed

    @property
    def points(self) -> List[Tuple[SeriesComparison, PointComparison]]:
        return [(s, p) for s in self.series for p in s.points]

    def flagged(self, verdict: str) -> List[Tuple[SeriesComparison, PointComparison]]:
        return [(s, p) for s, p in self.points if p.verdict == verdict]

    @property
    def single_valued(self) -> List[Tuple[SeriesComparison, PointComparison]]:
        """The points measured once on each side: shown side by side with their change, never judged."""
        found = [(s, p) for s, p in self.points if p.single]
        return sorted(found, key=lambda sp: _figure_order(sp[0]))

    @property
    def judged_series(self) -> List[SeriesComparison]:
        """The series that are not all single figures (those are shown together, see ``single_valued``)."""
        return [s for s in self.series if not all(p.single for p in s.points)]

    def point_of(self, m: Any) -> Optional[Tuple[SeriesComparison, PointComparison]]:
        """The comparison a measurement of A or B took part in (None when it found no partner)."""
        for s, p in self.points:
            if p.ma is m or p.mb is m:
                return s, p
        return None

    @property
    def noise_from(self) -> str:
        """Where the run-to-run noise of most of the points compared came from (see ``_noise``)."""
        counts: Dict[str, int] = {}
        for s in self.series:
            counts[s.noise_from] = counts.get(s.noise_from, 0) + len(s.judged)
        return max(counts, key=lambda k: (counts[k], k == "history")) if counts else "curve"

    @property
    def history_runs(self) -> List[int]:
        """The stored replicate runs that took part (ids), when there were enough of them."""
        found = {r.id: r for r in self.history_a + self.history_b}
        return sorted(found) if any(s.noise_from == "history" for s in self.series) else []

OK, WORSE, CANNOT_JUDGE = "ok", "worse", "cannot judge"
EXIT_STATUS = {OK: 0, WORSE: 1, CANNOT_JUDGE: 3}  # 2: the runs share no point (a usage error)
HELD = ("host busy", "host changed")  # verdicts that withhold a call because of the host, not the data


@dataclass(frozen=True)
class CheckVerdict:
    """The answer to "did B get worse than A?" (``fabricbench check``, the report, ``--fail-on``):
    WORSE when a point was called worse; else CANNOT_JUDGE when a point that moved the wrong way by the
    threshold or more was held because of the host (too busy, or changed state), or when no point could
    be judged at all (every one single-valued, without a spread, or held); else OK."""

    status: str
    worse: Tuple[Tuple[SeriesComparison, PointComparison], ...]
    held: Tuple[Tuple[SeriesComparison, PointComparison], ...]  # held points that moved the wrong way
    judged: int  # points judged on their data (not single-valued, not held, not "not judged")

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.status]


def check_verdict(result: "Comparison") -> CheckVerdict:
    """The one verdict of a regression check on a comparison (see ``CheckVerdict``)."""
    worse = tuple(result.flagged("worse"))
    held = tuple((s, p) for s, p in result.points if p.verdict in HELD and p.improvement is not None
                 and p.improvement <= -result.options.min_effect)
    judged = sum(1 for _s, p in result.points if p.significant is not None and p.verdict not in HELD)
    status = WORSE if worse else CANNOT_JUDGE if held or not judged else OK
    return CheckVerdict(status, worse, held, judged)


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


def compare_pairs(pairs: Sequence[Pair], options: Options = Options(),
                  history: Optional[Sequence[Tuple[Sequence[Any], Sequence[Any]]]] = None,
                  host: Optional[Callable[[str, str], Optional[HostShift]]] = None,
                  busy: Optional[HostLoad] = None) -> Compared:
    """Series comparisons of matched pairs, with corrected verdicts (series points sorted by size).
    `history`, one entry per pair: the point in stored replicate runs of A's and of B's configuration.
    `host(benchmark of A, benchmark of B)`: how the host itself moved between their launches."""
    groups: Dict[Tuple, SeriesComparison] = {}
    testable: Dict[int, List[Tuple[PointComparison, Side, Side]]] = {}
    per_pair: Dict[int, PointComparison] = {}
    past = {id(p): h for p, h in zip(pairs, history)} if history is not None else {}
    for pair in sorted(pairs, key=lambda p: (p.key.size is None, p.key.size or 0)):
        k = pair.key
        s = groups.get(k.series_key)
        if s is None:
            s = groups[k.series_key] = SeriesComparison(k.definition, k.metric, pair.a.unit, _variant_shown(k.strict),
                                                        pair.a.benchmark, pair.b.benchmark)
        pc, sides = measure_point(pair.a_reps, pair.b_reps, k.metric, k.size, options.level,
                                  past.get(id(pair), ((), ())))
        pc.ma, pc.mb = pair.a, pair.b
        s.points.append(pc)
        per_pair[id(pair)] = pc
        if sides:
            testable.setdefault(id(s), []).append((pc, *sides))
    tested: List[PointComparison] = []
    z = float(stats.norm_quantile(0.5 + options.level / 2))
    for s in groups.values():
        items = testable.get(id(s), [])
        noise = _noise(items)
        s.noise_from, s.history_runs = noise.source, noise.history_runs
        s.launch_noise = math.sqrt(noise.launch)
        s.run_noise = math.sqrt(2 * noise.one_run(items))
        s.run_level_noise = math.sqrt(float(np.median(noise.run))) if noise.run else 0.0
        for i, (pc, sa, sb) in enumerate(items):
            d = math.log(sb.center / sa.center)  # the ratio shown (measure_point)
            test = stats.log_ratio_test(d, math.sqrt(sa.within + sb.within + noise.variance(sa, i)
                                                     + noise.variance(sb, i)))
            pc.p, pc.log_se, pc.log_ratio = test.p, test.log_se, d
            if pc.statistic == "rate":
                pc.p = _guarded_p(test.p, d, sa, sb, noise.variance(sa, i) + noise.variance(sb, i))
            pc.ratio_ci = test.interval(options.level)
            pc.a_ci = _side_ci(sa, noise.variance(sa, i), noise.source, z, pc.a)
            pc.b_ci = _side_ci(sb, noise.variance(sb, i), noise.source, z, pc.b)
            tested.append(pc)
    adjust = stats.CORRECTIONS.get(options.correction)
    if adjust is None:
        raise ValueError(f"unknown correction '{options.correction}'; use one of {', '.join(stats.CORRECTIONS)}")
    for pc, padj in zip(tested, adjust([pc.p for pc in tested])):
        pc.p_adjusted = padj
        pc.significant = padj < options.alpha
        pc.reason = ""  # its p-value after correction says why (report.words.compare.reason)
    for s in groups.values():
        for pc in s.points:
            _decide(pc, options)
        s.host_shift = host(s.benchmark_a, s.benchmark_b) if host else None
        _allow_for_host(s, options)
        _allow_for_busy_host(s, busy, options)
        _confirm_by_neighbours(s, options)
    return Compared(list(groups.values()), len(tested), [per_pair[id(p)] for p in pairs])


@dataclass(frozen=True)
class Noise:
    """What varies between runs of one configuration, for a series (variances of ln figures).

    A side's figure from n runs of k launches in all varies by launch/k + run/n (plus its points'
    own sampling, ``Side.within``): the launches of one run share the state the host was in
    during that run, so their spread shows only part of how much the next run would differ.
    """

    launch: float = 0.0  # one launch's figure, within a run
    run: Tuple[float, ...] = ()  # one run's figure beyond what its launches show, per point tested
    source: str = "curve"  # "history", "replicates", "launches" or "curve"
    history_runs: int = 0  # stored replicate runs that took part

    def variance(self, side: Side, i: int) -> float:
        return self.launch / side.k + (self.run[i] if self.run else 0.0) / side.n

    def one_run(self, items: Sequence[Tuple[PointComparison, Side, Side]]) -> float:
        """Variance of one run's figure (its typical point), with as many launches as the compared runs have."""
        per_run = [max(1, len(lv)) for _pc, sa, sb in items for side in (sa, sb) for lv in side.launches]
        launches = float(np.median(per_run)) if per_run else 1.0
        return self.launch / launches + (float(np.median(self.run)) if self.run else 0.0)


def _noise(items: Sequence[Tuple[PointComparison, Side, Side]]) -> Noise:
    """The run-to-run noise of a series, from the best source there is:

    - "history": the spread of each point's figures over the stored replicate runs of its
      configuration (at least MIN_HISTORY of them; never the compared runs, so a real change
      cannot widen its own noise). The series' typical spread is robustly pooled
      (``stats.robust_between_run_variance``); a point's own spread (OWN_SPREAD_RUNS or more
      stored runs) is a plain variance, so a host state the history has shown (a minute at 0.6x
      the bandwidth) counts as noise: measured on 20 A/A pairs at load 2 to 3, leaving such runs
      out called 66 points, keeping them 27;
    - "replicates": the spread of the figures of a side's own replicate runs (``compare 3,4,5 6``);
    - "launches": only the spread between the launches of each run. The run-level part is then
      not identifiable; it is taken as large as the launch level (a run's figure varies at least as
      much as one launch's), since identical runs here differ by more than their launches do: on 20
      A/A pairs on an idle host, taking it as 0 called 56 of 1,880 points (11 of 20 pairs);
    - "curve": the jitter along the curve (``stats.roughness_variance``) when there is none of these.

    A point's runs' spread is its own (from OWN_SPREAD_RUNS or more runs), but never less than the
    series' typical (median) spread: a
    host state moves whole curves, by more at some sizes (latency's 512 B to 1 KiB here) than at
    others. The run-level part is what that spread shows beyond the launches' (never below 0)."""
    sides = [[sa, sb] for _pc, sa, sb in items]
    launch_groups = [lv for pair in sides for side in pair for lv in side.launches + side.history_launches
                     if len(lv) >= 2]
    launch = stats.between_run_variance(launch_groups) if launch_groups else 0.0
    past = [[side for side in pair if len(set(side.history_ids)) >= MIN_HISTORY] for pair in sides]
    if any(past):
        ids = {i for pair in past for side in pair for i in side.history_ids}
        return Noise(launch, _run_level(past, launch, True), "history", len(ids))
    replicated = [[side for side in pair if side.n >= 2] for pair in sides]
    if any(replicated):
        return Noise(launch, _run_level(replicated, launch, False), "replicates")
    if launch_groups:
        return Noise(launch, (launch,) * len(items), "launches")
    logs = [math.log(sb.center / sa.center) for _pc, sa, sb in items]
    curve = stats.roughness_variance(logs, [sa.within + sb.within for _pc, sa, sb in items]) / 2
    return Noise(0.0, (curve,) * len(items), "curve")


def _run_level(usable: Sequence[Sequence[Side]], launch: float, with_history: bool) -> Tuple[float, ...]:
    """Per point: the variance of one run's figure beyond its launches, from the sides' run groups
    (their own runs, and the stored replicates `with_history`) at the point, or of the series if more."""
    if with_history:
        pool = stats.robust_between_run_variance
        groups = [[side.history for side in pair] for pair in usable]
    else:
        pool = stats.between_run_variance
        groups = [[side.runs for side in pair] for pair in usable]
    counts = [max(1, len(lv)) for pair in usable for side in pair
              for lv in side.launches + (side.history_launches if with_history else [])]
    explained = launch * float(np.median([1.0 / c for c in counts]))
    whole = pool([g for point in groups for g in point])
    out = []
    for point in groups:
        own = [g for g in point if len(g) >= OWN_SPREAD_RUNS]
        spread = (stats.between_run_variance(own) if with_history else pool(own)) if own else 0.0
        out.append(max(0.0, max(whole, spread) - explained))
    return tuple(out)


def _side_ci(side: Side, var: float, source: str, z: float, shown: Optional[float] = None) -> Tuple[float, float]:
    """The CI of a side's figure (`shown`, else its runs' figure): one launch's own CI, else its
    CIs and `var`, the noise of its launches and runs."""
    if side.ci is not None and side.k == 1 and source != "history":
        return side.ci
    m = math.log(shown) if shown is not None and shown > 0 else sum(side.runs) / side.n
    half = z * math.sqrt(side.within + var)
    return stats.clipped_exp(m - half), stats.clipped_exp(m + half)


def _relevant(comparability: Any, series: Sequence[SeriesComparison]) -> Any:
    """Drop the total rank count from the confounders when only single-pair tests were compared."""
    if series and all(family(s.definition) == "single-pair" for s in series):
        comparability.differences = [d for d in comparability.differences if d.key != "ranks"]
    return comparability


def compare(a: Any, b: Any, options: Options = Options(), benchmark: Optional[str] = None,
            history: Tuple[Sequence[Any], Sequence[Any]] = ((), ())) -> Comparison:
    """Compare B against A; each a run (``RunData``) or a list of replicate runs. See the module doc.

    `history`: stored replicate runs (``RunData``) of A's and of B's configuration, neither side's
    runs among them (the caller chooses them: ``store.replicates.replicate_history``); with at least
    MIN_HISTORY for a side, their spread is the run-to-run noise."""
    from fabricbench.analysis.comparability import check_comparability

    side_a = list(a) if isinstance(a, (list, tuple)) else [a]
    side_b = list(b) if isinstance(b, (list, tuple)) else [b]
    hist_a, hist_b = list(history[0]), list(history[1])
    matching = match(side_a, side_b, benchmark)
    past_a, past_b = _history_points(side_a, hist_a, benchmark), _history_points(side_b, hist_b, benchmark)
    first_a, first_b = side_a[0], side_b[0]
    host = None
    if same_hosts(first_a, first_b):
        probes_a = [p for r in side_a for p in getattr(r, "probes", None) or []]
        probes_b = [p for r in side_b for p in getattr(r, "probes", None) or []]
        host = (lambda bench_a, bench_b: host_shift(probes_a, probes_b, bench_a, bench_b)) if probes_a and probes_b else None
    busy = busiest([r.run for r in side_a], [r.run for r in side_b])
    done = compare_pairs(matching.pairs, options,
                         [(past_a.get(id(p.a), []), past_b.get(id(p.b), [])) for p in matching.pairs], host, busy)
    comp = _relevant(check_comparability(first_a.run, first_a.hosts, first_b.run, first_b.hosts), done.series)
    result = Comparison(first_a.run, first_b.run, comp, done.series, matching.mismatches, options, done.tested,
                        [r.run for r in side_a], [r.run for r in side_b], [r.run for r in hist_a],
                        [r.run for r in hist_b])
    result.busy = busy
    return result


def _history_points(side: Sequence[Any], history: Sequence[Any], benchmark: Optional[str]) -> Dict[int, List[Any]]:
    """{id of the side's measurement: the same point in each stored replicate run}; empty below MIN_HISTORY."""
    if len(history) < MIN_HISTORY:
        return {}
    return {id(p.a): p.b_reps for p in match(list(side), list(history), benchmark).pairs}

