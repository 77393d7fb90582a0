"""Plots of communication models and predictions, from ``models/``.

- ``model_panels(panels)``: one small log-log panel per fitted benchmark, the measured points
  (what the fit used) against the fitted model, each regime in its own shade with the
  breakpoints as vertical lines, and the model continued (dotted) past the largest size
  measured, where it is an extrapolation.
- ``prediction_bars(calls)``: per MPI call, its time per rank on A and as predicted on B, the
  prediction's low..high band as an error bar.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from fabricbench.report.plots import _RC, run_color, safe_label, save_figure, size_label, size_x, value_axis


def model_panels(panels: Sequence[Tuple[str, Sequence[float], Sequence[float], object]], fmt: str = "svg") -> Optional[bytes]:
    """panels: (title, sizes, measured us, HockneyModel); None when no panel has two sizes."""
    panels = [p for p in panels if len(set(p[1])) >= 2]
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    with rc_context(_RC):
        fig = Figure(figsize=(3.2 * cols, 2.7 * rows), layout="constrained")
        for i, (title, sizes, times, model) in enumerate(panels):
            ax = fig.add_subplot(rows, cols, i + 1)
            xs = [size_x(s) for s in sizes]
            ax.plot(xs, times, "o", color="#444444", markersize=3, label="measured")
            for k, r in enumerate(model.regimes):
                grid = np.geomspace(max(size_x(r.size_min), 0.5), max(size_x(r.size_max), 1.0), 40)
                ax.plot(grid, [model.time_us(0 if g <= 0.5 else g) for g in grid], "-", color=run_color(k), linewidth=1.6,
                        label=safe_label(f"regime {k + 1}", 20))
            hi = model.valid_sizes[1]
            beyond = np.geomspace(max(hi, 1), max(hi, 1) * 4, 12)
            ax.plot(beyond, [model.time_us(g) for g in beyond], ":", color="#777777", linewidth=1.2, label="extrapolated")
            for b in model.breakpoints:
                ax.axvline(b, color="#999999", linestyle="--", linewidth=0.8)
            ax.set_xscale("log", base=2)
            ticks = [2.0 ** e for e in range(0, int(math.log2(max(hi, 2) * 4)) + 1, 4)]
            ax.set_xticks(ticks)
            ax.set_xticklabels([size_label(t) for t in ticks])
            value_axis(ax, [t for t in times if t and t > 0] + [model.time_us(beyond[-1])], True)
            ax.set_title(safe_label(title, 40))
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("time (us)")
            ax.grid(True, alpha=0.3)
            if i == 0:
                ax.legend(loc="upper left", fontsize=7, frameon=False)
        return save_figure(fig, fmt)


def prediction_bars(calls: Sequence, source: str, target: str, fmt: str = "svg") -> Optional[bytes]:
    """calls: CallChange objects (largest change first); bars of A and B per call with B's band."""
    calls = list(calls)
    if not calls:
        return None
    labels: List[str] = [c.call for c in calls]
    ys = np.arange(len(calls))
    with rc_context(_RC):
        fig = Figure(figsize=(7.2, max(2.0, 0.5 * len(calls) + 1.2)), layout="constrained")
        ax = fig.add_subplot()
        ax.barh(ys - 0.2, [c.time_a_s for c in calls], height=0.38, color=run_color(0), label=safe_label(f"A: {source}", 40))
        err = [[max(c.time_b_s - c.low_b_s, 0) for c in calls], [max(c.high_b_s - c.time_b_s, 0) for c in calls]]
        ax.barh(ys + 0.2, [c.time_b_s for c in calls], height=0.38, color=run_color(1), xerr=err, capsize=3,
                error_kw={"elinewidth": 0.8}, label=safe_label(f"B: {target} (predicted, band)", 40))
        ax.set_yticks(ys)
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.set_xlabel("time per rank (s)")
        ax.set_title("MPI time per call on A and predicted on B")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
        return save_figure(fig, fmt)
