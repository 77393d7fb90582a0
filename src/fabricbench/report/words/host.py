"""Findings -> words for the host a run ran on (``analysis.host_state``): how its probe figures
moved between two runs, how busy it was, and what its probe read over a run's launches.
Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

import statistics
from typing import Any, Dict, Sequence

from fabricbench.analysis.host_state import FIGURES, HostLoad, HostShift, launch_figures
from fabricbench.numbers import number


def shift_text(shift: HostShift) -> str:
    """'a cache line's round trip between two cores took 0.088 us in A and 0.32 us in B (3.6x)'."""
    return (f"{FIGURES.get(shift.figure, shift.figure)} took {number(shift.a)} us in A and "
            f"{number(shift.b)} us in B ({number(shift.factor)}x)")


def shift_dict(shift: HostShift) -> Dict[str, Any]:
    """HostShift.to_dict with its sentence ("text")."""
    d = shift.to_dict()
    d["text"] = shift_text(shift)
    return {k: d[k] for k in ("figure", "a_us", "b_us", "factor", "launches", "p", "text", "a_launches", "b_launches")}


def load_text(load: HostLoad) -> str:
    """'load 4.2 on 2 CPUs with 2 ranks in B (run 7)'."""
    return (f"load {number(load.load)} on {load.cpus} CPU{'s' if load.cpus != 1 else ''} with {load.ranks} "
            f"rank{'s' if load.ranks != 1 else ''} in {load.side} (run {load.run_id})")


def load_dict(load: HostLoad) -> Dict[str, Any]:
    """HostLoad.to_dict with its sentence ("text")."""
    return dict(load.to_dict(), text=load_text(load))


def probes_text(probes: Sequence[Dict[str, Any]]) -> str:
    """'host probe over 18 launches: integer chain 142 us; core-to-core round trip 0.32 us
    (0.088 to 0.35)' - the median, and the range when the launches differ by more than 10%."""
    figures = launch_figures(probes)
    names = {"loop_us": "integer chain", "c2c_us": "core-to-core round trip"}
    parts = []
    for figure in ("loop_us", "c2c_us"):
        values = figures[figure]
        if not values:
            continue
        text = f"{names[figure]} {number(float(statistics.median(values)))} us"
        if max(values) > 1.1 * min(values):
            text += f" ({number(min(values))} to {number(max(values))})"
        parts.append(text)
    skipped = sorted({p["c2c_skipped"] for p in probes if p.get("c2c_skipped")})
    if not figures["c2c_us"] and skipped:
        parts.append(f"no core-to-core round trip ({'; '.join(skipped)})")
    if not parts:
        return ""
    n = len(probes)
    return f"host probe over {n} launch{'es' if n != 1 else ''}: " + "; ".join(parts)
