"""Figures of an MPI profile for reports: MPI time by call per rank, message sizes, and the
communication matrix. Each function returns a matplotlib Figure (no pyplot state), which
the report code saves or embeds.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Sequence, Union

import math

import matplotlib
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fabricbench.analysis.profile_data import MATRIX_LAYERS, bin_range, matrix_dense
from fabricbench.numbers import binary_size as format_bytes
from fabricbench.numbers import distinct_labels
from fabricbench.report.plots import colorbar_ticks
from fabricbench import numbers

LOG_FROM = 100.0  # a colour scale spans this ratio of largest to smallest cell before it turns logarithmic
_BINARY = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))


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


def _scale(values, metric: str):
    """The colour scale of a matrix and its colour-bar ticks with labels that all differ.

    Cells within LOG_FROM of each other are coloured on a linear scale from 0, so nearly equal
    byte counts get nearly equal colours (a scale from the smallest to the largest cell would
    paint a 0.001% difference as the whole colour range); wider ranges get a log scale with
    ticks at powers of two (bytes) or ten (messages)."""
    if not values:
        return None, [], []
    lo, hi = min(values), max(values)
    if hi / lo < LOG_FROM:
        norm = Normalize(vmin=0.0, vmax=hi)
        scale, unit = next(((s, u) for s, u in _BINARY if hi >= s), (1, "B")) if metric == "bytes" else (1, "")
        ticks = [t * scale for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(0, hi / scale) if 0 <= t * scale <= hi]
        if metric == "bytes":
            labels = [f"{numbers.short(t / scale)} {unit}" if t else "0" for t in ticks]
            if len(set(labels)) < len(labels):
                labels = [f"{lab} {unit}" for lab in distinct_labels([t / scale for t in ticks])]
        else:
            labels = distinct_labels(ticks)
        return norm, ticks, labels
    norm = LogNorm(vmin=lo, vmax=hi)
    base = 2 if metric == "bytes" else 10
    exps = list(range(math.ceil(math.log(lo, base)), math.floor(math.log(hi, base)) + 1))
    step = max(1, math.ceil(len(exps) / 7))
    ticks = [float(base ** e) for e in exps[::step]] or [lo, hi]
    labels = [format_bytes(t) for t in ticks] if metric == "bytes" else distinct_labels(ticks)
    return norm, ticks, labels if len(set(labels)) == len(labels) else distinct_labels(ticks)


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
    norm, ticks, labels = _scale(values, metric)
    image = ax.imshow(masked, cmap="viridis", norm=norm, interpolation="nearest", origin="upper")
    if values:
        bar = fig.colorbar(image, ax=ax)
        bar.set_label(metric + (" (scale from 0: similar cells look similar)" if isinstance(norm, Normalize)
                                and not isinstance(norm, LogNorm) else " (log scale)"))
        colorbar_ticks(bar, ticks, labels)
    else:
        ax.text(0.5, 0.5, "no traffic recorded", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title(f"Communication matrix, {metric}\n({' + '.join(layers)})", fontsize="medium")
    if n <= 32:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    return fig
