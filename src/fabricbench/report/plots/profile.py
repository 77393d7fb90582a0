"""Figures of an MPI profile for reports: MPI time by call per rank, message sizes, and the
communication matrix. Each function returns a matplotlib Figure (no pyplot state), which
the report code saves or embeds.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Sequence, Union

import matplotlib
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from fabricbench.analysis.profile_data import MATRIX_LAYERS, bin_range, format_bytes, matrix_dense


def _top_calls(profile: Dict[str, Any], top: int):
    totals: Dict[str, float] = defaultdict(float)
    for _rank, call, _b, _count, _bytes, t, _mn, _mx in profile["calls"]:
        totals[call] += t
    ranked = sorted(totals, key=lambda c: (-totals[c], c))
    return ranked[:top], ranked[top:]


def mpi_time_by_rank(profile: Dict[str, Any], top: int = 8) -> Figure:
    """Stacked bars: MPI time per rank split by call (the top calls, the rest as 'other')."""
    n = profile["ranks"]
    shown, rest = _top_calls(profile, top)
    per = {c: [0.0] * n for c in shown + (["other"] if rest else [])}
    for rank, call, _b, _count, _bytes, t, _mn, _mx in profile["calls"]:
        per[call if call in shown else "other"][rank] += t
    fig = Figure(figsize=(max(6.0, min(16.0, 0.35 * n + 4)), 4.5), layout="constrained")
    ax = fig.add_subplot()
    ranks = list(range(n))
    bottom = [0.0] * n
    cmap = matplotlib.colormaps["tab20"]
    for i, (call, values) in enumerate(per.items()):
        color = "lightgrey" if call == "other" else cmap(i % 20)
        ax.bar(ranks, values, bottom=bottom, label=call, color=color, width=0.8)
        bottom = [b + v for b, v in zip(bottom, values)]
    app = [r["app_time"] for r in profile["rank_info"]]
    ax.plot(ranks, app, linestyle="none", marker="_", markersize=14, color="black", label="wall time")
    ax.set_xlabel("rank")
    ax.set_ylabel("time [s]")
    ax.set_title("MPI time per rank by call")
    if n <= 32:
        ax.set_xticks(ranks)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def message_size_histogram(profile: Dict[str, Any], top: int = 6, weight: str = "count") -> Figure:
    """Calls (weight='count') or time (weight='time') per power-of-two message-size bin,
    summed over ranks and stacked by call."""
    if weight not in ("count", "time"):
        raise ValueError("weight must be 'count' or 'time'")
    shown, rest = _top_calls(profile, top)
    bins = sorted({row[2] for row in profile["calls"]})
    index = {b: i for i, b in enumerate(bins)}
    per = {c: [0.0] * len(bins) for c in shown + (["other"] if rest else [])}
    for _rank, call, b, count, _bytes, t, _mn, _mx in profile["calls"]:
        per[call if call in shown else "other"][index[b]] += count if weight == "count" else t
    fig = Figure(figsize=(max(6.0, 0.6 * len(bins) + 3), 4.5), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(bins)))
    bottom = [0.0] * len(bins)
    for call, values in per.items():
        ax.bar(xs, values, bottom=bottom, label=call, color="lightgrey" if call == "other" else None)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(xs)
    ax.set_xticklabels([_bin_label(b) for b in bins], rotation=45, ha="right")
    ax.set_xlabel("message size (bytes per call, power-of-two bins)")
    ax.set_ylabel("calls" if weight == "count" else "time [s]")
    ax.set_title("MPI calls by message size" if weight == "count" else "MPI time by message size")
    if per:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _bin_label(b: int) -> str:
    lo, hi = bin_range(b)
    if b == 0:
        return "0"
    if lo == hi:
        return format_bytes(lo)
    return f"{format_bytes(lo)}+"


def matrix_heatmap(profile: Dict[str, Any], layers: Union[str, Sequence[str]] = MATRIX_LAYERS,
                   metric: str = "bytes") -> Figure:
    """Heatmap of the communication matrix (row: sending rank, column: receiving rank)."""
    if metric not in ("bytes", "messages"):
        raise ValueError("metric must be 'bytes' or 'messages'")
    if isinstance(layers, str):
        layers = (layers,)
    dense = matrix_dense(profile, layers, metric)
    n = profile["ranks"]
    fig = Figure(figsize=(min(12.0, 3.5 + 0.3 * n), min(10.0, 3.0 + 0.3 * n)), layout="constrained")
    ax = fig.add_subplot()
    values = [v for row in dense for v in row if v > 0]
    masked = [[v if v > 0 else float("nan") for v in row] for row in dense]
    norm = LogNorm(vmin=min(values), vmax=max(values)) if values and max(values) > min(values) else None
    image = ax.imshow(masked, cmap="viridis", norm=norm, interpolation="nearest", origin="upper")
    if values:
        fig.colorbar(image, ax=ax).set_label(metric)
    else:
        ax.text(0.5, 0.5, "no traffic recorded", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title(f"Communication matrix, {metric}\n({' + '.join(layers)})", fontsize="medium")
    if n <= 32:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    return fig
