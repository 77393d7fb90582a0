"""Where in the program MPI time goes: a profile's call sites, aggregated over ranks.

A call site is one MPI call made from one place (the caller's return address). Each gets
mpiP's figures: calls, time, share of MPI and of wall time (summed over ranks, as in
``analysis.profile``), bytes, and how evenly the ranks that call it spend their time there
(coefficient of variation). Sites are named ``function (file:line)`` where the profile's
``callsite_names`` has them, else by the nearest dynamic symbol, else ``module+0xoffset``.

A profile imported from mpiP (importers/mpip.py) lists its sites as dicts with mpiP's
resolved frames and totals over ranks; those are shown the same way, without the spread.
"""
from __future__ import annotations

import os
import statistics
from collections import defaultdict
from typing import Any, Dict, List, Tuple

from fabricbench.analysis.profile_data import share_bases

def site_label(profile: Dict[str, Any], module: int, address: int, symbol: str,
               names: Dict[Tuple[int, int], Tuple[str, str, int]]) -> Dict[str, Any]:
    """function, file, line and a one-line label for a site."""
    modules = profile.get("modules") or []
    path = modules[module] if 0 <= module < len(modules) else ""
    func, file, line = names.get((module, address), ("", "", 0))
    base = os.path.basename(path) if path else "?"
    if func and file:
        label = f"{func} ({os.path.basename(file)}:{line})" if line else f"{func} ({os.path.basename(file)})"
    elif func:
        label = f"{func} ({base}+{address:#x})"
    elif symbol:
        label = f"{symbol} ({base})"
    else:
        label = f"{base}+{address:#x}"
    return {"function": func or symbol.split("+")[0], "file": file, "line": line, "module": path,
            "address": address, "label": label}


def _mpip_sites(profile: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Sites of an mpiP import: its frames name them; counts and times are over ranks."""
    out = []
    for entry in profile.get("callsites") or []:
        frame = (entry.get("frames") or [{}])[0]
        func, file, line = frame.get("function", ""), frame.get("file", ""), int(frame.get("line", 0) or 0)
        where = f"{os.path.basename(file)}:{line}" if file else frame.get("address", "?")
        out.append({"call": entry.get("call") or "?", "count": int(entry.get("count", 0)),
                    "bytes": int(entry.get("bytes", 0)), "time": float(entry.get("time", 0.0)),
                    "function": func, "file": file, "line": line, "module": "", "address": 0,
                    "label": f"{func} ({where})" if func else where, "ranks": None, "cov": None})
    return out


def callsites(profile: Dict[str, Any], top: int = 20) -> Dict[str, Any]:
    """The call sites by time summed over ranks (plain data); {'sites': [...], 'total': n}."""
    rows = profile.get("callsites") or []
    if rows and isinstance(rows[0], dict):
        return _summarize_sites(profile, _mpip_sites(profile), top)
    names = {(m, a): (f, fl, ln) for m, a, f, fl, ln in profile.get("callsite_names") or []}
    acc: Dict[Tuple[str, int, int], Dict[str, Any]] = {}
    for rank, call, module, address, symbol, count, nbytes, t, tmin, tmax in rows:
        key = (call, module, address)
        a = acc.get(key)
        if a is None:
            a = acc[key] = {"call": call, "count": 0, "bytes": 0, "time": 0.0, "min": tmin, "max": tmax,
                            "per_rank": defaultdict(float), "symbol": symbol,
                            **site_label(profile, module, address, symbol, names)}
        a["count"] += count
        a["bytes"] += nbytes
        a["time"] += t
        a["min"] = min(a["min"], tmin)
        a["max"] = max(a["max"], tmax)
        a["per_rank"][rank] += t
    sites = []
    for a in acc.values():
        per_rank = list(a.pop("per_rank").values())
        mean = statistics.fmean(per_rank)
        a["ranks"] = len(per_rank)
        a["cov"] = statistics.pstdev(per_rank) / mean if len(per_rank) > 1 and mean > 0 else 0.0
        sites.append(a)
    return _summarize_sites(profile, sites, top)


def _summarize_sites(profile: Dict[str, Any], found: List[Dict[str, Any]], top: int) -> Dict[str, Any]:
    total_mpi, total_app = share_bases(profile)  # summed over threads as the calls' times are
    sites = []
    for a in found:
        a["percent_mpi"] = 100.0 * a["time"] / total_mpi if total_mpi > 0 else 0.0
        a["percent_wall"] = 100.0 * a["time"] / total_app if total_app > 0 else 0.0
        a["mean_size"] = a["bytes"] / a["count"] if a["count"] else 0.0
        sites.append(a)
    sites.sort(key=lambda s: (-s["time"], -s["count"], s["call"], s["label"]))
    for i, s in enumerate(sites, 1):
        s["site"] = i
    dropped = sum(int(r.get("callsites_dropped", 0)) for r in profile["rank_info"])
    return {"sites": sites[:top], "total": len(sites), "dropped_calls": dropped,
            "recorded": "callsites" in profile}
