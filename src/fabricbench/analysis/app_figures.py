"""The figures of an application run (``workflows.app``): which one is its headline, and the
time between MPI_Init and MPI_Finalize that predictions target.

A figure carries ``resolution_s`` in its detail, the step it was measured or printed with; a
figure whose step is over 1% of its value (OpenFOAM's whole-second ClockTime) is never a headline.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

BENCHMARK = "app"
RUNTIME = "runtime"  # the metric of MPI_Init to MPI_Finalize (slowest rank)
WALL_RESOLUTION_S = 1e-6  # the launch is timed with a monotonic clock, stored to the microsecond
PROFILER_RESOLUTION_S = 1e-6


def profile_runtime(profile: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """MPI_Init to MPI_Finalize of the slowest rank, from a profile: {"value", "rank", "resolution_s"}."""
    info = (profile or {}).get("rank_info") or []
    timed = [r for r in info if isinstance(r.get("app_time"), (int, float))]
    if not timed:
        return None
    slowest = max(timed, key=lambda r: r["app_time"])
    # The profiler's clock (TSC or CLOCK_MONOTONIC) ticks in nanoseconds; it prints nine significant
    # digits: a microsecond is a safe bound for any run up to 1000 s.
    return {"value": float(slowest["app_time"]), "rank": slowest.get("rank"), "resolution_s": PROFILER_RESOLUTION_S}


def coarse(value: Optional[float], resolution: Optional[float], limit: float = 0.01) -> bool:
    """Whether a figure's resolution is too coarse for it to be a headline: a step above 1% of the
    value (a whole-second clock reading 2 s can be anything from 1.0 to 2.99 s)."""
    return bool(resolution) and (not value or resolution > limit * abs(value))


def headline_figure(points: Sequence[Any]) -> Optional[Any]:
    """The time an application run is quoted by: MPI_Init to MPI_Finalize when measured, else the
    application's own elapsed time when its clock is fine enough, else None (only a coarse clock)."""
    by_metric = {m.metric: m for m in points if m.benchmark == BENCHMARK and "section" not in m.params}
    for metric in (RUNTIME, "time"):
        m = by_metric.get(metric)
        if m is not None and not coarse(m.value, (m.detail or {}).get("resolution_s")):
            return m
    return None
