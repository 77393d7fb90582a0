"""Plots of scaling studies (matplotlib object API, no pyplot), from an ``analysis.scaling.StudyAnalysis``.

- ``value_plot``       time (or figure of merit) against scale, 95% CI error bars, model curves dashed
- ``speedup_plot``     speedup against scale with the ideal (linear) line
- ``efficiency_plot``  parallel efficiency against scale with the threshold line
- ``relative_plot``    relative performance bars (B against A, x times faster) per scale

Each returns the image bytes (SVG or PNG). Scale axes are log2 (nodes or ranks double).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import List, Optional, Sequence

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from fabricbench.numbers import axis_value, exact, ratio
from fabricbench.report.plots import grouped_bars, run_color, safe_label, save_figure, value_axis
from fabricbench import numbers

_RC = {
    "svg.hashsalt": "fabricbench",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
}
MAX_CURVES = 12



@contextmanager
def _figure():
    """A scaling plot's figure and axes, drawn with the plots' shared style."""
    with rc_context(_RC):
        fig = Figure(figsize=(7.2, 4.0), layout="constrained")
        yield fig, fig.add_subplot()

def _scale_axis(ax, scales: Sequence[float], axis_name: str) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(scales))
    if ticks:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: exact(v)))
        lo, hi = min(ticks), max(ticks)
        ax.set_xlim(lo / 1.25, hi * 1.25) if lo != hi else ax.set_xlim(lo / 2, hi * 2)
    ax.set_xlabel(axis_name)
    ax.grid(True, which="major", alpha=0.3)


def _axis_name(analysis) -> str:
    axes = {sa.series.axis for sa in analysis.series}
    return axes.pop() if len(axes) == 1 else "scale"


def _shown(analysis):
    return analysis.series[:MAX_CURVES]


def value_plot(analysis, fmt: str = "svg", metric_label: Optional[str] = None) -> bytes:
    """Mean value per scale with 95% CI error bars; the fitted model as a dashed curve."""
    shown = _shown(analysis)
    with _figure() as (fig, ax):
        all_scales: List[float] = []
        for i, sa in enumerate(shown):
            s = sa.series
            pts = [p for p in s.points if p.mean is not None]
            if not pts:
                continue
            x = [p.scale for p in pts]
            y = [p.mean for p in pts]
            lo = [p.mean - p.ci_low if p.ci_low is not None else 0.0 for p in pts]
            hi = [p.ci_high - p.mean if p.ci_high is not None else 0.0 for p in pts]
            color = run_color(i)
            ax.errorbar(x, y, yerr=[lo, hi], color=color, marker="o", capsize=3, label=safe_label(s.name))
            all_scales += x
            if sa.model is not None:
                grid = np.geomspace(min(x), max(x) * 2, 60)
                pred = np.asarray(sa.model.predict(grid))
                keep = pred > 0
                ax.plot(grid[keep], pred[keep], color=color, linestyle="--", linewidth=1, alpha=0.8)
        _scale_axis(ax, all_scales, _axis_name(analysis))
        values = [v for sa in shown for p in sa.series.points for v in (p.mean, p.ci_low, p.ci_high) if v is not None]
        value_axis(ax, values, logy=all(sa.series.points and all((p.mean or 1) > 0 for p in sa.series.points) for sa in shown))
        first = shown[0].series if shown else None
        label = metric_label or (f"{first.metric} ({first.unit})" if first and first.unit else (first.metric if first else ""))
        ax.set_ylabel(label)
        ax.set_title("Time per scale (mean, 95% CI; dashed: model)" if first and first.metric == "time" else "Figure of merit per scale (mean, 95% CI; dashed: model)")
        if shown:
            ax.legend(loc="best")
        return save_figure(fig, fmt)


def _plot_efficiency_lines(ax, shown, field: str) -> List[float]:
    """One line per series of its `field` ('speedup' or 'efficiency') against scale; the scales drawn."""
    all_scales: List[float] = []
    for i, sa in enumerate(shown):
        pts = [e for e in sa.efficiency if getattr(e, field) is not None]
        if pts:
            x = [e.scale for e in pts]
            ax.plot(x, [getattr(e, field) for e in pts], color=run_color(i), marker="o", label=safe_label(sa.series.name))
            all_scales += x
    return all_scales


def speedup_plot(analysis, fmt: str = "svg") -> bytes:
    shown = _shown(analysis)
    with _figure() as (fig, ax):
        all_scales = _plot_efficiency_lines(ax, shown, "speedup")
        bases = {sa.baseline for sa in shown if sa.baseline}
        if all_scales and len(bases) == 1:
            b = bases.pop()
            xs = sorted(set(all_scales))
            ax.plot(xs, [x / b for x in xs], color="#444444", linestyle=":", label="ideal")
        _scale_axis(ax, all_scales, _axis_name(analysis))
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: axis_value(v, fractions=True)))
        ax.set_ylabel("speedup (x)")
        ax.set_title("Speedup against the baseline scale")
        ax.legend(loc="best")
        return save_figure(fig, fmt)


def efficiency_plot(analysis, fmt: str = "svg") -> bytes:
    shown = _shown(analysis)
    with _figure() as (fig, ax):
        all_scales = _plot_efficiency_lines(ax, shown, "efficiency")
        top = max([1.05] + [e.efficiency * 1.05 for sa in shown for e in sa.efficiency if e.efficiency is not None])
        ax.axhline(analysis.threshold, color="#d62728", linestyle="--", linewidth=1, label=f"threshold {numbers.share(analysis.threshold)}")
        ax.axhline(1.0, color="#444444", linestyle=":", linewidth=1, label="ideal")
        _scale_axis(ax, all_scales, _axis_name(analysis))
        ax.set_ylim(0, top)
        ax.set_ylabel("parallel efficiency")
        ax.set_title("Parallel efficiency against the baseline scale")
        ax.legend(loc="best")
        return save_figure(fig, fmt)


def relative_plot(analysis, fmt: str = "svg") -> Optional[bytes]:
    """Bars of B against A (x times faster) per scale, one bar group per comparison; None without comparisons."""
    comps = analysis.comparisons[:MAX_CURVES]
    if not comps:
        return None
    scales = sorted({p.scale for c in comps for p in c.points if p.ratio is not None})
    if not scales:
        return None
    with _figure() as (fig, ax):
        groups = []
        for c in comps:
            group = ", ".join(f"{v}" for v in c.group.values())
            groups.append((f"{group}: {c.b} vs {c.a}" if group else f"{c.b} vs {c.a}", {p.scale: p.ratio for p in c.points}))
        grouped_bars(ax, scales, groups, ratio)
        ax.axhline(1.0, color="#333333", linewidth=0.8)
        ax.set_xticklabels([exact(s) for s in scales])
        ax.set_xlabel(_axis_name(analysis))
        ax.set_ylabel("relative performance (x times faster)")
        ax.set_title("Relative performance at each scale (above 1: B is faster)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="best")
        return save_figure(fig, fmt)
