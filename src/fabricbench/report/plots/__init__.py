"""Plots for reports: matplotlib's object API on the Agg/SVG canvases (no pyplot, no global backend).

- ``line_plot(curves, ...)`` -> ``PlotResult``: curves over message size (log2 axis, 0 bytes drawn
  at 1/2 and labelled 0), optional min/max bands and horizontal reference lines (peaks).
- ``bar_plot(categories, groups, ...)`` -> bytes: grouped bars (HPCC-style summaries).
- ``run_color(index)``: one colour per run, the same in every plot of a report.

Figures are SVG (text as <text> in a generic sans-serif: nothing to download, deterministic output) or PNG. At most
``max_curves`` curves are drawn per plot so a 50-run report stays readable and fast; the
caller says how many were left out (the tables keep every value).
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

# Figures are built with matplotlib.figure.Figure and saved through the Agg (PNG) and SVG
# canvases directly: no pyplot, so importing this never changes a user's interactive backend.
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from fabricbench.report.format import axis_value, size_tick

_PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#e7969c", "#7b4173", "#3182bd",
)
_STYLES = ("-", "--", "-.", ":")
_RC = {
    "svg.hashsalt": "fabricbench",  # stable ids: the same data gives the same file
    "svg.fonttype": "none",  # <text> in the browser's sans-serif: 40% faster than glyph paths, still no font files
    "font.size": 9,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "path.simplify": True,
    "axes.titley": 1.02,  # a fixed title position skips a costly tight-bbox pass per draw
}
ZERO_AT = 0.5  # where a 0-byte message goes on a log axis
LEGEND_CHARS = 40  # longer legend labels are cut (the tables carry full names)


def run_color(index: int) -> str:
    return _PALETTE[index % len(_PALETTE)]


def line_style(index: int) -> str:
    return _STYLES[index % len(_STYLES)]


@dataclass
class Curve:
    label: str
    x: Sequence[float]
    y: Sequence[float]
    lo: Optional[Sequence[float]] = None  # band, e.g. fastest rank
    hi: Optional[Sequence[float]] = None  # band, e.g. slowest rank
    color: Optional[str] = None
    style: str = "-"
    marker: str = "o"


@dataclass
class RefLine:
    y: float
    label: str
    color: str = "#444444"
    style: str = "--"


@dataclass
class PlotResult:
    data: bytes
    fmt: str
    drawn: int
    omitted: int = 0


def safe_label(text: str, limit: int = 0) -> str:
    """A user string as literal legend text: no mathtext ($...$), not hidden (leading '_'), at most `limit` chars."""
    text = str(text)
    if limit and len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    text = text.replace("\\", "\\\\").replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def size_label(size: float) -> str:
    """Message size tick: 0, 1, 512, 1K, 64K, 1M, 1G (binary multiples)."""
    return size_tick(size, ZERO_AT)


def size_x(size: Optional[float]) -> float:
    return ZERO_AT if not size else float(size)


def _size_ticks(lo: float, hi: float) -> List[float]:
    if hi <= 0:
        return [ZERO_AT]
    e_lo = int(math.floor(math.log2(max(lo, ZERO_AT))))
    e_hi = int(math.ceil(math.log2(hi)))
    exps = list(range(e_lo, e_hi + 1))
    step = 1
    while len(exps[::step]) > 12:
        step += 1
    ticks = [2.0**e for e in exps[::step]]
    return ticks


def _value_formatter(v: float, _pos=None) -> str:
    return axis_value(v)


def save_figure(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "svg":
        fig.savefig(buf, format="svg", metadata={"Date": None})
    elif fmt == "png":
        fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    else:
        raise ValueError(f"plot format must be svg or png, not {fmt!r}")
    return buf.getvalue()


def line_plot(
    curves: Sequence[Curve],
    title: str,
    xlabel: str = "Message size (bytes)",
    ylabel: str = "",
    logx: bool = True,
    logy: bool = True,
    sizes: bool = True,
    ref_lines: Sequence[RefLine] = (),
    fmt: str = "svg",
    max_curves: int = 12,
    width: float = 9.0,
    height: float = 4.0,
) -> PlotResult:
    """Curves against message size (or any x when sizes=False), with bands and reference lines."""
    drawn = list(curves[:max_curves])
    omitted = max(0, len(curves) - len(drawn))
    with rc_context(_RC):
        # Fixed axes and an outside legend: no layout engine pass (it doubles the drawing time).
        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((0.08, 0.13, 0.60, 0.78))
        xs_all: List[float] = []
        ys_all: List[float] = []
        for i, c in enumerate(drawn):
            pts = [(float(x), float(y)) for x, y in zip(c.x, c.y) if y is not None and x is not None and (not logy or y > 0)]
            if not pts:
                continue
            xs, ys = zip(*pts)
            xs_all.extend(xs)
            ys_all.extend(ys)
            color = c.color or run_color(i)
            ax.plot(xs, ys, c.style, color=color, marker=c.marker, markersize=3, linewidth=1.4, label=safe_label(c.label, LEGEND_CHARS))
            if c.lo is not None and c.hi is not None:
                band = [(float(x), float(l), float(h)) for x, l, h in zip(c.x, c.lo, c.hi)
                        if l is not None and h is not None and x is not None and (not logy or l > 0)]
                if band:
                    bx, bl, bh = zip(*band)
                    ax.fill_between(bx, bl, bh, color=color, alpha=0.18, linewidth=0)
                    ys_all.extend(bl)
                    ys_all.extend(bh)
        for ref in ref_lines:
            ax.axhline(ref.y, color=ref.color, linestyle=ref.style, linewidth=1.0, label=safe_label(ref.label, LEGEND_CHARS))
            ys_all.append(ref.y)
        if logx and xs_all:
            ax.set_xscale("log", base=2)
            if sizes:
                ax.xaxis.set_major_locator(FixedLocator(_size_ticks(min(xs_all), max(xs_all))))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: size_label(v)))
                ax.xaxis.set_minor_locator(NullLocator())
        if logy and ys_all:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(_value_formatter))
            positive = [y for y in ys_all if y > 0]
            decades = math.log10(max(positive) / min(positive)) if positive else 0
            # Few ticks, all labelled (1-2-5 steps inside about two decades); no minor ticks: each
            # tick is an artist, and they dominate drawing time.
            subs = tuple(float(i) for i in range(1, 10)) if decades < 0.7 else (1.0, 2.0, 5.0) if decades < 2.5 else (1.0,)
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=10))
            ax.yaxis.set_minor_locator(NullLocator())
        else:
            ax.yaxis.set_major_formatter(FuncFormatter(_value_formatter))
            if ys_all:
                ax.set_ylim(bottom=0, top=max(ys_all) * 1.08 if max(ys_all) > 0 else 1)
        ax.set_title(safe_label(title))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
        if drawn or ref_lines:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False,
                      fontsize=7 if len(drawn) + len(ref_lines) > 10 else 8)
        data = save_figure(fig, fmt)
    return PlotResult(data, fmt, len(drawn), omitted)


def bar_plot(
    categories: Sequence[str],
    groups: Sequence[Tuple[str, Sequence[Optional[float]], Optional[str]]],
    title: str,
    ylabel: str,
    fmt: str = "svg",
    zero_line: bool = True,
    width: float = 7.2,
    height: float = 3.8,
    max_groups: int = 12,
) -> PlotResult:
    """Grouped horizontal bars: one bar per (category, group); None values are left out."""
    shown = list(groups[:max_groups])
    with rc_context(_RC):
        fig_h = max(height, 0.22 * len(categories) * max(1, len(shown)) ** 0.5 + 1.2)
        fig = Figure(figsize=(width, fig_h))
        longest = max((len(c) for c in categories), default=4)
        left = min(0.45, 0.09 + 0.0105 * longest * 7.2 / width)
        right = 0.72 if len(shown) > 1 else 0.97
        fig.subplots_adjust(left=left, right=right, top=1 - 0.45 / fig_h, bottom=0.55 / fig_h)
        ax = fig.add_subplot()
        n = max(1, len(shown))
        bar_h = 0.8 / n
        for gi, (label, values, color) in enumerate(shown):
            ys, xs = [], []
            for ci, v in enumerate(values):
                if v is not None and math.isfinite(v):
                    ys.append(ci - 0.4 + bar_h * (gi + 0.5))
                    xs.append(v)
            ax.barh(ys, xs, height=bar_h, color=color or run_color(gi), label=safe_label(label, LEGEND_CHARS))
        ax.set_yticks(range(len(categories)))
        ax.set_yticklabels([safe_label(c, 60) for c in categories])
        ax.set_ylim(len(categories) - 0.5, -0.5)  # first category on top, no padding
        if zero_line:
            ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_title(safe_label(title))
        ax.set_xlabel(ylabel)
        ax.grid(True, axis="x", alpha=0.3)
        if len(shown) > 1:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, fontsize=7)
        data = save_figure(fig, fmt)
    return PlotResult(data, fmt, len(shown), max(0, len(groups) - len(shown)))
