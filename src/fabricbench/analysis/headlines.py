"""The few figures that say what a benchmark run found: lowest latency, peak bandwidth (and its
share of the link when the link is known), a collective at one message size.

``headline_figures(measurements, ceiling_MBps=None, link="")`` -> ``[Headline]``; pure, for the
summary ``fabricbench run`` ends with (``fabricbench show`` and the report have everything).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Optional

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
        out.append(Headline("lowest latency", headline(best), best.unit, _size(best)))
    for bench, metric, name, directions in (("bw", "bandwidth", "peak bandwidth", 1),
                                            ("bibw", "bibandwidth", "peak bi-bandwidth", 2)):
        pts = _points(items, bench, metric)
        if not pts:
            continue
        best = max(pts, key=headline)
        pct = 100.0 * headline(best) / (ceiling_MBps * directions) if ceiling_MBps and best.unit == "MB/s" else None
        out.append(Headline(name, headline(best), best.unit, _size(best), pct, link if pct is not None else ""))
    shown = 0
    for bench in COLLECTIVES:
        pts = [m for m in items if m.benchmark == bench and m.metric in ("latency", "time") and headline(m) is not None]
        if not pts or shown >= MAX_COLLECTIVES:
            continue
        sized = [m for m in pts if _size(m)]
        at = next((m for m in sized if _size(m) == COLLECTIVE_SIZE), None) or (min(sized, key=_size) if sized else pts[0])
        out.append(Headline(bench, headline(at), at.unit, _size(at)))
        shown += 1
    return out
