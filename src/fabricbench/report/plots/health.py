"""Plots of the all-pairs link check (matplotlib object API, no pyplot).

- ``heatmap``    an N x N matrix (row = sender, column = receiver) in the order given (the
                 section orders by host name), flagged nodes' labels in red, the diagonal grey
- ``histogram``  the distribution of pair figures with the median and the flag threshold

Each returns the image bytes (SVG or PNG).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from matplotlib.ticker import MaxNLocator

from fabricbench.report.plots import colorbar_ticks, safe_label, save_figure
from fabricbench import numbers

_RC = {
    "svg.hashsalt": "fabricbench",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.titlesize": 10,
    "path.simplify": True,
}
MAX_TICK_LABELS = 48  # more nodes than this: every k-th label
FLAG_COLOR = "#d62728"


def heatmap(matrix: np.ndarray, labels: Sequence[str], title: str, unit: str, fmt: str = "svg",
            lower_is_better: bool = False, flagged: Sequence[str] = ()) -> bytes:
    """Cells coloured by value; the better end bright. NaN (the diagonal, missing pairs) grey."""
    n = len(labels)
    side = min(9.0, max(4.2, 2.2 + 0.16 * n))
    m = np.ma.masked_invalid(np.asarray(matrix, dtype=float))
    with rc_context(_RC):
        fig = Figure(figsize=(side + 1.2, side), layout="constrained")
        ax = fig.add_subplot()
        import matplotlib

        cmap = matplotlib.colormaps["viridis_r" if lower_is_better else "viridis"].with_extremes(bad="#d9d9d9")
        finite = m.compressed()
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        vmin, vmax = _honest_range(vmin, vmax, lower_is_better)
        img = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="equal")
        bar = fig.colorbar(img, ax=ax, shrink=0.8)
        bar.set_label(unit)
        colorbar_ticks(bar, [t for t in MaxNLocator(nbins=6).tick_values(vmin, vmax) if vmin <= t <= vmax])
        step = max(1, math.ceil(n / MAX_TICK_LABELS))
        ticks = list(range(0, n, step))
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.set_xticklabels([safe_label(labels[i], 16) for i in ticks], rotation=90, fontsize=7 if n > 16 else 8)
        ax.set_yticklabels([safe_label(labels[i], 16) for i in ticks], fontsize=7 if n > 16 else 8)
        flagged_set = set(flagged)
        for lab in list(ax.get_xticklabels()) + list(ax.get_yticklabels()):
            if lab.get_text().strip() in flagged_set:
                lab.set_color(FLAG_COLOR)
                lab.set_fontweight("bold")
        ax.set_xlabel("receiver")
        ax.set_ylabel("sender")
        ax.set_title(safe_label(title))
        return save_figure(fig, fmt)


MIN_SPAN = 0.25  # the colour scale spans at least this share of the best value


def _honest_range(vmin: float, vmax: float, lower_is_better: bool):
    """A colour range of at least MIN_SPAN of the best value, so pairs within a few percent of each
    other get nearly the same colour instead of the two ends of the scale."""
    if vmax <= 0:
        return vmin, vmax + 1.0
    if lower_is_better:
        return vmin, max(vmax, vmin * (1 + MIN_SPAN))
    return min(vmin, vmax * (1 - MIN_SPAN)), vmax


def histogram(values: Sequence[float], title: str, unit: str, fmt: str = "svg", median: Optional[float] = None,
              threshold: Optional[float] = None, threshold_label: str = "") -> bytes:
    """Pair figures in bins, with the median and the flag threshold as vertical lines."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    with rc_context(_RC):
        fig = Figure(figsize=(7.2, 3.4), layout="constrained")
        ax = fig.add_subplot()
        if v.size:
            bins = int(min(60, max(8, math.sqrt(v.size) * 2)))
            ax.hist(v, bins=bins, color="#1f77b4", alpha=0.85)
        if median is not None and math.isfinite(median):
            ax.axvline(median, color="#444444", linestyle="--", label=f"median {numbers.short(median, 4)} {unit}")
        if threshold is not None and math.isfinite(threshold):
            ax.axvline(threshold, color=FLAG_COLOR, linestyle=":", label=threshold_label or f"threshold {numbers.short(threshold, 4)}")
        ax.set_xlabel(unit)
        ax.set_ylabel("pairs")
        ax.set_title(safe_label(title))
        if median is not None or threshold is not None:
            ax.legend(loc="best", fontsize=8)
        ax.grid(True, alpha=0.3)
        return save_figure(fig, fmt)
