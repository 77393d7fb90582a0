"""What an MPI profile says: share of wall time in MPI, the calls that dominate it and at
which message sizes, how evenly ranks spend it, and who talks to whom.

``summarize`` turns a profile into plain data (a dict of numbers and short strings);
``format_summary`` writes that dict as text (``head_lines``, ``call_rows``, ``talker_rows`` and
``imbalance_line`` are its parts, for a caller that lays the tables out itself). Percentages follow mpiP: a call's share
of MPI time is its time summed over ranks over the MPI time summed over ranks; its share of
wall time divides by the application time (MPI_Init to MPI_Finalize) summed over ranks.
Threads: a call's time is summed over the threads that made it, so both bases are summed
over threads too (``share_bases``): the calls' time of all threads, and the run time times
the threads that called MPI. No share exceeds 100%.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, Dict, List, Sequence

from fabricbench.analysis.profile_cpu import cpu_floor, sharing_sentence
from fabricbench.analysis.profile_data import bin_range, format_bytes, matrix_cells, share_bases
from fabricbench import numbers as fmt
from fabricbench.numbers import fixed, number, percent
from fabricbench import numbers

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


size_label = fmt.sentence_size  # message size for a sentence: '0-byte', '8 B', '16 KiB' 


def _pct(x: float) -> str:
    """A share in a sentence: whole percent from 10%, one decimal below, '<0.1%' for a trace."""
    if x >= 10 or x == 0:
        return percent(x, decimals=0)
    if x >= 0.1:
        return percent(x)
    return "<0.1%"


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
        label = size_label(size)
        if share >= MOSTLY:
            sizes = f"mostly {label}"
        else:
            sizes = f"sizes vary, most time at {label} ({numbers.fixed(share * 100, 0)}%)"
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
            "size_label": label,
            "sentence": f"{name} {_pct(pct_mpi)} of MPI time ({_pct(pct_wall)} of wall time), {sizes}",
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
        "headline": f"About {_pct(overall)} of overall runtime spent in MPI",
        "calls_total": len(calls),
        "top_calls": calls[:top],
        "imbalance": _spread(mpi),
        "matrix_bytes": total_bytes,
        "top_talkers": pairs[:talkers],
        "cpu_sharing": shared.to_dict() if shared else None,
    }


def head_lines(s: Dict[str, Any]) -> List[str]:
    """Who ran, where, for how long, and the share of time in MPI."""
    hosts = s["hosts"]
    host_text = f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}"
    if hosts:
        host_text += f" ({', '.join(hosts[:4])}{', ...' if len(hosts) > 4 else ''})"
    lines = [f"MPI profile: {s['ranks']} rank{'s' if s['ranks'] != 1 else ''} on {host_text}"]
    if s["mpi_library"]:
        lines.append(f"MPI library: {s['mpi_library']}")
    if s["command"]:
        lines.append(f"Command: {' '.join(s['command'])}")
    app, mp = s["app_time"], s["mpi_percent"]
    lines.append(f"Wall time (MPI_Init to MPI_Finalize): {number(app['mean'])} s mean, "
                 f"{number(app['min'])} to {number(app['max'])} s")
    lines.append(
        f"{s['headline']} (per rank: mean {_pct(mp['mean'])}, min {_pct(mp['min'])} on rank {mp['min_rank']}, "
        f"max {_pct(mp['max'])} on rank {mp['max_rank']})"
    )
    c = s.get("cpu_sharing")
    if c:
        wait = f", waiting for a core {number(c['run_delay_s'])} s in all" if c["run_delay_s"] is not None else ""
        lines.append(f"Ranks shared cores: {sharing_sentence(c)}{wait}; their computation needs at least "
                     f"{number(c['floor_s'])} s on any fabric")
    return lines


CALL_HEADERS = ("call", "% MPI", "% wall", "calls", "time (s)", "bytes", "typical size")
TALKER_HEADERS = ("from rank", "to rank", "bytes", "messages", "by layer")


def call_rows(s: Dict[str, Any]) -> List[List[str]]:
    """The top calls as table rows (CALL_HEADERS)."""
    return [[c["call"], percent(c["percent_mpi"]), percent(c["percent_wall"], decimals=2), fmt.count(c["count"]),
             number(c["time"]), format_bytes(c["bytes"]), f"{c['size_label']} ({numbers.fixed(c['dominant_share'] * 100, 0)}% of its time)"]
            for c in s["top_calls"]]


def talker_rows(s: Dict[str, Any]) -> List[List[str]]:
    """The top talkers as table rows (TALKER_HEADERS)."""
    rows = []
    for t in s["top_talkers"]:
        parts = ", ".join(f"{layer} {format_bytes(t[layer])}" for layer in ("p2p", "rma", "coll") if t[layer])
        rows.append([str(t["src"]), str(t["dst"]), format_bytes(t["bytes"]), fmt.count(t["messages"]), parts])
    return rows


def imbalance_line(s: Dict[str, Any]) -> str:
    im = s["imbalance"]
    return (f"MPI time per rank: min {number(im['min'])} s (rank {im['min_rank']}), max {number(im['max'])} s "
            f"(rank {im['max_rank']}), mean {number(im['mean'])} s, coefficient of variation {fixed(im['cov'])}")


def _text_table(headers: Sequence[str], rows: List[List[str]], right: Sequence[bool]) -> List[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(headers)] + [line(r) for r in rows]


def format_summary(summary: Dict[str, Any]) -> str:
    """Plain text for a terminal or a file: every column as wide as its widest cell."""
    s = summary
    lines = head_lines(s) + [""]
    if s["top_calls"]:
        lines.append("Top MPI calls by time (summed over ranks):")
        lines += [f"  - {c['sentence']}" for c in s["top_calls"]]
        lines.append("")
        lines += _text_table(CALL_HEADERS, call_rows(s), (False, True, True, True, True, True, False))
        if s["calls_total"] > len(s["top_calls"]):
            lines.append(f"  ... and {s['calls_total'] - len(s['top_calls'])} more calls")
    else:
        lines.append("No MPI calls were recorded.")
    lines += ["", imbalance_line(s)]
    if s["top_talkers"]:
        lines.append(f"Top talkers (bytes from source to destination rank; {format_bytes(s['matrix_bytes'])} in all):")
        rows = [[f"{r[0]} -> {r[1]}"] + r[2:] for r in talker_rows(s)]
        lines += _text_table(("ranks",) + TALKER_HEADERS[2:], rows, (False, True, True, False))
    else:
        lines.append("No point-to-point, one-sided or collective traffic between ranks was recorded.")
    return "\n".join(lines)
