"""What an MPI profile says: share of wall time in MPI, the calls that dominate it and at
which message sizes, how evenly ranks spend it, and who talks to whom.

``summarize`` turns a profile into plain data (a dict of numbers and names);
``report/words/profile.py`` writes that dict as text (the headline, each call's sentence). Percentages follow mpiP: a call's share
of MPI time is its time summed over ranks over the MPI time summed over ranks; its share of
wall time divides by the application time (MPI_Init to MPI_Finalize) summed over ranks.
Threads: a call's time is summed over the threads that made it, so both bases are summed
over threads too (``share_bases``): the calls' time of all threads, and the run time times
the threads that called MPI. No share exceeds 100%.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, Dict, List

from fabricbench.analysis.profile_cpu import cpu_floor
from fabricbench.analysis.profile_data import bin_range, matrix_cells, share_bases

MOSTLY = 0.5  # a size is "mostly" used when it holds at least half of the call's time


def _spread(values: List[float]) -> Dict[str, Any]:
    mean = statistics.fmean(values) if values else 0.0
    lo = min(range(len(values)), key=values.__getitem__) if values else 0
    hi = max(range(len(values)), key=values.__getitem__) if values else 0
    cov = statistics.pstdev(values) / mean if len(values) > 1 and mean > 0 else 0.0
    return {
        "mean": mean,
        "min": values[lo] if values else 0.0,
        "min_rank": lo,
        "max": values[hi] if values else 0.0,
        "max_rank": hi,
        "cov": cov,
    }


def summarize(profile: Dict[str, Any], top: int = 5, talkers: int = 5) -> Dict[str, Any]:
    """Summary of a loaded profile (see load_profile); numbers in seconds, bytes and percent."""
    info = profile["rank_info"]
    app = [float(r["app_time"]) for r in info]
    mpi = [float(r["mpi_time"]) for r in info]
    pct = [100.0 * m / a if a > 0 else 0.0 for m, a in zip(mpi, app)]
    total_app, total_mpi = sum(app), sum(mpi)

    def new_call() -> Dict[str, Any]:
        return {"time": 0.0, "count": 0, "bytes": 0, "bins": defaultdict(lambda: [0.0, 0, 0])}

    per_call: Dict[str, Dict[str, Any]] = defaultdict(new_call)
    for _rank, call, b, count, nbytes, t, _tmin, _tmax in profile["calls"]:
        entry = per_call[call]
        entry["time"] += t
        entry["count"] += count
        entry["bytes"] += nbytes
        acc = entry["bins"][b]
        acc[0] += t
        acc[1] += count
        acc[2] += nbytes

    calls_base, wall_base = share_bases(profile)
    calls = []
    for name, entry in per_call.items():
        # The dominant size: the bin holding most of the call's time (most calls on a tie).
        b, (bt, bc, bb) = max(entry["bins"].items(), key=lambda kv: (kv[1][0], kv[1][1]))
        share = bt / entry["time"] if entry["time"] > 0 else (bc / entry["count"] if entry["count"] else 0.0)
        size = bb / bc if bc else 0.0
        pct_mpi = 100.0 * entry["time"] / calls_base if calls_base > 0 else 0.0
        pct_wall = 100.0 * entry["time"] / wall_base if wall_base > 0 else 0.0
        calls.append({
            "call": name,
            "time": entry["time"],
            "count": entry["count"],
            "bytes": entry["bytes"],
            "percent_mpi": pct_mpi,
            "percent_wall": pct_wall,
            "dominant_bin": b,
            "dominant_bin_range": list(bin_range(b)),
            "dominant_size": size,
            "dominant_share": share,
        })
    calls.sort(key=lambda c: (-c["time"], -c["count"], c["call"]))

    pairs = []
    for (src, dst), cell in matrix_cells(profile).items():
        pairs.append({"src": src, "dst": dst, **cell})
    pairs.sort(key=lambda c: (-c["bytes"], -c["messages"], c["src"], c["dst"]))
    total_bytes = sum(c["bytes"] for c in pairs)

    overall = 100.0 * total_mpi / total_app if total_app > 0 else 0.0
    shared = cpu_floor(profile)
    return {
        "ranks": profile["ranks"],
        "hosts": list(profile.get("hosts", [])),
        "mpi_library": profile.get("mpi", {}).get("library", ""),
        "command": list(profile.get("command", [])),
        "app_time": _spread(app),
        "mpi_time": {**_spread(mpi), "total": total_mpi},
        "mpi_percent": {**_spread(pct), "overall": overall},
        "calls_total": len(calls),
        "top_calls": calls[:top],
        "imbalance": _spread(mpi),
        "matrix_bytes": total_bytes,
        "top_talkers": pairs[:talkers],
        "cpu_sharing": shared.to_dict() if shared else None,
    }
