"""The figure of record of a stored point: the one number its headline, plot and verdict use.

``figure_of_record(point)`` -> ``Figure`` (value, statistic, CI, flags) or None. The rules:

- Times and per-message rates (latency, collective time, message rate, LogGP terms): the
  **median** of the samples, with its distribution-free CI (``stats.median_ci``). One call the
  scheduler took off the core moves a mean by its whole length; it moves a median by one rank.
- Bandwidth and bi-bandwidth from the engine's window benchmarks: the **rate over all
  iterations** (bytes moved / time of all timed iterations, the engine's ``value``), which is
  what a stream of messages sustains, with its CI from the window times (``stats.rate_ci``); the
  per-window samples stay as the distribution. ``compare`` and ``check`` judge this same figure.
- A point whose samples are not calls (a collective that records only each rank's average call
  time, ``detail.stats_over = "per-rank ..."``): the **mean**, labelled "mean (no per-call
  distribution)": the median of a few rank averages is not the median of calls.
- Figures defined by their benchmark (HPCC's ping-pong and ring tests; a foreign tool's single
  published number): the recorded **value**, labelled as such.

The mean stays available as OSU's comparable column (``Figure.mean``); it is never the headline
of a point that has a median.

``over_ceiling(point, peak_MBps)`` -> ``[CeilingExcess]``: every shown statistic of a bandwidth
point (figure of record, median, p99, max, sketch percentiles) above the physical ceiling of what
carried it, so that a caller can flag it where it shows it. Pure; no formatting of sentences.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

MEDIAN = "median"
RATE_ALL = "rate over all iterations"
MEAN_NO_CALLS = "mean (no per-call distribution)"
MEAN_ONLY = "mean (no distribution recorded)"
DEFINED = "value (as the benchmark defines it)"

BANDWIDTH_METRICS = frozenset({"bandwidth", "bibandwidth"})
WINDOW_BENCHMARKS = frozenset({"bw", "bibw", "mbw_mr"})  # value = bytes of all iterations / their time
# Benchmarks whose value is a defined figure (HPCC b_eff: average ping-pong, geometric mean of
# rings), not a summary of the samples we keep.
DEFINED_BENCHMARKS = frozenset({"pingpong_pairs", "ring"})

FLAG_NO_CALLS = "no per-call distribution"
FLAG_MEAN_ONLY = "no distribution recorded"
FLAG_OVER_CEILING = "above ceiling"


@dataclass(frozen=True)
class Figure:
    """A point's figure of record."""

    value: float
    statistic: str  # MEDIAN, RATE_ALL, MEAN_NO_CALLS, MEAN_ONLY, DEFINED
    unit: str = ""
    ci: Optional[Tuple[float, float]] = None  # of the median (MEDIAN) or of the rate (RATE_ALL), when n allows
    mean: Optional[float] = None  # OSU's comparable column (the engine's value for times)
    flags: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_median(self) -> bool:
        return self.statistic == MEDIAN

    @property
    def short(self) -> str:
        """A one-word label for tight columns: median, rate, mean, value."""
        return {MEDIAN: "median", RATE_ALL: "rate", DEFINED: "value"}.get(self.statistic, "mean")

    def to_dict(self) -> dict:
        return {"value": self.value, "statistic": self.statistic, "unit": self.unit,
                "ci": list(self.ci) if self.ci else None, "mean": self.mean, "flags": list(self.flags)}


def _num(x: Any) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _detail(m: Any) -> dict:
    d = getattr(m, "detail", None)
    return d if isinstance(d, dict) else {}


def per_call_distribution(m: Any) -> bool:
    """False when the point's statistics summarise rank averages rather than calls or samples."""
    return not str(_detail(m).get("stats_over", "")).startswith("per-rank")


def _osu_mean(m: Any) -> Optional[float]:
    """The OSU-comparable average: the engine's value for times (total time / iterations), else mean."""
    return _num(getattr(m, "value", None)) if _num(getattr(m, "value", None)) is not None else _num(getattr(m, "mean", None))


def statistic_of(m: Any) -> Optional[str]:
    """Which statistic is the point's figure of record (None when it records no number)."""
    value, mean, median = (_num(getattr(m, k, None)) for k in ("value", "mean", "median"))
    bench, metric = getattr(m, "benchmark", ""), getattr(m, "metric", "")
    if bench in DEFINED_BENCHMARKS or str(bench).startswith("hpcc"):
        return DEFINED if (value if value is not None else mean if mean is not None else median) is not None else None
    if metric in BANDWIDTH_METRICS and value is not None and (bench in WINDOW_BENCHMARKS or "elapsed_s" in _detail(m)):
        return RATE_ALL
    if not per_call_distribution(m):
        return MEAN_NO_CALLS if (value is not None or mean is not None) else None
    if median is not None:
        return MEDIAN
    if value is None and mean is None:
        return None
    n = getattr(m, "n", None)
    return MEAN_ONLY if isinstance(n, int) and n > 1 else DEFINED  # many samples, or one published number


def figure_of_record(m: Any, with_ci: bool = True, level: float = 0.95) -> Optional[Figure]:
    """The point's headline figure, its statistic, the CI of a median and flags (see the module doc).
    ``with_ci=False`` skips the CI (no numpy/scipy import: for plotting many points)."""
    statistic = statistic_of(m)
    if statistic is None:
        return None
    value, mean, median = (_num(getattr(m, k, None)) for k in ("value", "mean", "median"))
    unit = getattr(m, "unit", "") or ""
    ci = None
    flags: Tuple[str, ...] = ()
    if statistic == MEDIAN:
        figure = median
        if with_ci:
            from fabricbench.analysis import stats

            interval = stats.median_ci(m, level)
            ci = (interval.low, interval.high) if interval is not None else None
    elif statistic == RATE_ALL:
        figure = value
        if with_ci:  # of the rate itself, from the window times (stats.rate_ci)
            from fabricbench.analysis import stats

            interval = stats.rate_ci(m, level)
            ci = (interval.low, interval.high) if interval is not None else None
    elif statistic == DEFINED:
        figure = next(v for v in (value, mean, median) if v is not None)
    else:
        figure = value if value is not None else mean
        flags = (FLAG_NO_CALLS,) if statistic == MEAN_NO_CALLS else (FLAG_MEAN_ONLY,)
    return Figure(float(figure), statistic, unit, ci, _osu_mean(m), flags)


def headline_value(m: Any) -> Optional[float]:
    """Just the number of the figure of record (None without one); cheap, no CI."""
    f = figure_of_record(m, with_ci=False)
    return f.value if f is not None else None


# -- physical ceilings ----------------------------------------------------------------

@dataclass(frozen=True)
class CeilingExcess:
    """One shown statistic of a point above the ceiling of what carried it."""

    statistic: str  # "rate over all iterations", "median", "p99", "max", "p95", ...
    value: float
    ceiling: float
    unit: str

    @property
    def ratio(self) -> float:
        return self.value / self.ceiling if self.ceiling else math.inf


def shown_statistics(m: Any) -> List[Tuple[str, float]]:
    """(name, value) of every statistic of a point a table or plot shows: the figure of record,
    median, p99, max and the sketch's percentiles (a plotted band)."""
    out: List[Tuple[str, float]] = []
    f = figure_of_record(m, with_ci=False)
    if f is not None:
        out.append((f.statistic, f.value))
    for name in ("median", "mean", "p99", "max"):
        v = _num(getattr(m, name, None))
        if v is not None:
            out.append((name, v))
    q = _detail(m).get("sketch", {}).get("q") if isinstance(_detail(m).get("sketch"), dict) else None
    if isinstance(q, list):
        for pct, v in enumerate(q):
            v = _num(v)
            if v is not None and pct not in (50, 100):
                out.append((f"p{pct}", v))
    return out


# HPCC figures of one link: ping-pong and ring bandwidth per process. PTRANS (all pairs at once),
# STREAM (memory), DGEMM, HPL, FFT and RandomAccess are not bounded by a link's rate.
HPCC_LINK_TESTS = ("PingPongBandwidth", "RingBandwidth")


def held_to_link(m: Any) -> bool:
    """Whether a bandwidth figure is bounded by the link's ceiling: network figures yes; HPCC's
    memory, compute and all-pairs figures no."""
    if getattr(m, "metric", None) not in BANDWIDTH_METRICS:
        return False
    if getattr(m, "benchmark", None) == "hpcc":
        test = str((getattr(m, "params", None) or {}).get("test", ""))
        return any(t in test for t in HPCC_LINK_TESTS)
    return True


def over_ceiling(m: Any, peak_MBps: Optional[float], tolerance: float = 0.0) -> List[CeilingExcess]:
    """The point's shown statistics above `peak_MBps` x (1 + tolerance), highest first; [] when the
    point is not a bandwidth in MB/s or no ceiling is known."""
    if not peak_MBps or peak_MBps <= 0 or getattr(m, "unit", None) != "MB/s":
        return []
    if not held_to_link(m):
        return []
    limit = peak_MBps * (1.0 + tolerance)
    seen = set()
    found = []
    for name, v in shown_statistics(m):
        if v > limit and name not in seen:
            seen.add(name)
            found.append(CeilingExcess(name, v, peak_MBps, "MB/s"))
    return sorted(found, key=lambda e: -e.value)


def with_ceiling_flag(f: Figure, excess: List[CeilingExcess]) -> Figure:
    """The figure flagged "above ceiling" when any of its point's shown statistics is."""
    if not excess or FLAG_OVER_CEILING in f.flags:
        return f
    return Figure(f.value, f.statistic, f.unit, f.ci, f.mean, f.flags + (FLAG_OVER_CEILING,))
