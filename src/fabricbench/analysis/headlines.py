"""The few figures that say what a benchmark run found: lowest latency, peak bandwidth (and its
share of the link when the link is known), a collective at one message size.

``headline_figures(measurements, ceiling_MBps=None, link="")`` -> ``[Headline]``; pure, for the
summary ``fabricbench run`` ends with (``fabricbench show`` and the report have everything).
Each figure is its point's figure of record (analysis/record.py): the median for times, the rate
over all iterations for bandwidth, labelled; a bandwidth point with any shown statistic above the
link's ceiling carries the excess (``Headline.over``) so that the summary can say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Tuple

from fabricbench.analysis.record import CeilingExcess, figure_of_record, over_ceiling
from fabricbench.analysis.series import headline

COLLECTIVES = ("allreduce", "alltoall", "allgather", "bcast", "reduce", "reduce_scatter", "barrier")
COLLECTIVE_SIZE = 8  # bytes: the small-message figure collectives are usually quoted at
MAX_COLLECTIVES = 2


@dataclass
class Headline:
    name: str  # "lowest latency", "peak bandwidth", "allreduce"
    value: float
    unit: str
    size: Optional[int]  # message size of the point, bytes
    percent_of_link: Optional[float] = None
    link: str = ""
    statistic: str = ""  # the figure of record's statistic (record.MEDIAN, record.RATE_ALL, ...)
    ci: Optional[Tuple[float, float]] = None
    flags: Tuple[str, ...] = ()
    over: List[CeilingExcess] = field(default_factory=list)  # shown statistics above the ceiling


def _headline(name: str, m: Any, pct: Optional[float] = None, link: str = "",
              peak: Optional[float] = None) -> Headline:
    f = figure_of_record(m)
    return Headline(name, f.value, m.unit, _size(m), pct, link, f.statistic, f.ci, f.flags, over_ceiling(m, peak))


def _points(measurements: Iterable[Any], benchmark: str, metric: str) -> List[Any]:
    return [m for m in measurements if m.benchmark == benchmark and m.metric == metric and headline(m) is not None]


def _size(m: Any) -> Optional[int]:
    size = m.params.get("size")
    return int(size) if isinstance(size, (int, float)) else None


def headline_figures(measurements: Iterable[Any], ceiling_MBps: Optional[float] = None, link: str = "") -> List[Headline]:
    """Lowest latency, peak uni- and bi-directional bandwidth (% of the link's per-direction rate,
    x2 for bi-directional), and up to two collectives at 8 bytes (or their smallest size)."""
    items = list(measurements)
    out: List[Headline] = []
    lat = _points(items, "latency", "latency")
    if lat:
        best = min(lat, key=headline)
        out.append(_headline("lowest latency", best))
    for bench, metric, name, directions in (("bw", "bandwidth", "peak bandwidth", 1),
                                            ("bibw", "bibandwidth", "peak bi-bandwidth", 2)):
        pts = _points(items, bench, metric)
        if not pts:
            continue
        best = max(pts, key=headline)
        peak = ceiling_MBps * directions if ceiling_MBps and best.unit == "MB/s" else None
        pct = 100.0 * headline(best) / peak if peak else None
        out.append(_headline(name, best, pct, link if pct is not None else "", peak))
    shown = 0
    for bench in COLLECTIVES:
        pts = [m for m in items if m.benchmark == bench and m.metric in ("latency", "time") and headline(m) is not None]
        if not pts or shown >= MAX_COLLECTIVES:
            continue
        sized = [m for m in pts if _size(m)]
        at = next((m for m in sized if _size(m) == COLLECTIVE_SIZE), None) or (min(sized, key=_size) if sized else pts[0])
        out.append(_headline(bench, at))
        shown += 1
    return out


@dataclass
class OverCeiling:
    """A bandwidth point with shown statistics above its ceiling (per direction x directions)."""

    benchmark: str
    size: Optional[int]
    ceiling_MBps: float
    excess: List[CeilingExcess]


def points_over_ceiling(measurements: Iterable[Any], ceiling_MBps: Optional[float]) -> List[OverCeiling]:
    """Every point-to-point bandwidth point whose figure, median, p99, max or sketch percentile is
    above the link (x2 for bi-bandwidth); [] without a ceiling."""
    if not ceiling_MBps:
        return []
    out = []
    for m in measurements:
        if m.benchmark not in ("bw", "bibw") or m.unit != "MB/s":
            continue
        peak = ceiling_MBps * (2 if m.benchmark == "bibw" else 1)
        excess = over_ceiling(m, peak)
        if excess:
            out.append(OverCeiling(m.benchmark, _size(m), peak, excess))
    return out
