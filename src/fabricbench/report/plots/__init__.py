"""Plots for reports: matplotlib's object API on the Agg/SVG canvases (no pyplot, no global backend).

- ``line_plot(curves, ...)`` -> ``PlotResult``: curves over message size (log2 axis, 0 bytes drawn
  at 1/2 and labelled 0), optional spread bands (percentiles, fastest to slowest rank),
  horizontal reference lines (peaks), and an optional ratio panel underneath (each run
  divided by a reference run at the same size).
- ``value_bars(labels, values, ...)``: one bar per series with its value written on it, for
  series of a single point (a barrier), where a curve would be a lone dot.
- ``bar_plot(categories, groups, ...)`` -> bytes: grouped bars (HPCC-style summaries).
- ``colorbar_ticks(bar, ticks)``: colour-bar ticks labelled so that no two read the same.
- ``run_color(index)``: one colour per run, the same in every plot of a report.

Figures are SVG (text as <text> in a generic sans-serif: nothing to download, deterministic output) or PNG. At most
``max_curves`` curves are drawn per plot so a 50-run report stays readable and fast; the
caller says how many were left out (the tables keep every value).
"""
from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# Figures are built with matplotlib.figure.Figure and saved through the Agg (PNG) and SVG
# canvases directly: no pyplot, so importing this never changes a user's interactive backend.
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from fabricbench.numbers import axis_value, distinct_labels, number, size_tick
from fabricbench.text import has_control, printable
from fabricbench import numbers

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
LEGEND_CHARS = 40  # longer legend labels wrap onto more lines
LEGEND_LINES = 3  # and past this many lines are cut (the tables carry full names)
BAR_LEGEND_CHARS = 28  # bar plots leave less room beside them


def run_color(index: int) -> str:
    return _PALETTE[index % len(_PALETTE)]


def grouped_bars(ax, scales: Sequence[float], groups: Sequence[Tuple[str, Dict[float, Optional[float]]]],
                 annotate: Callable[[float], str], label_chars: int = 0) -> List[float]:
    """One bar per group at each scale (groups side by side, scales on a categorical x axis), each bar
    labelled with its value; returns the values drawn. ``groups`` are (legend label, {scale: value})."""
    width = 0.8 / max(1, len(groups))
    drawn_all: List[float] = []
    for i, (label, by) in enumerate(groups):
        xs, ys = [], []
        for k, scale in enumerate(scales):
            value = by.get(scale)
            if value is not None and math.isfinite(value):
                xs.append(k - 0.4 + width * (i + 0.5))
                ys.append(value)
        bars = ax.bar(xs, ys, width=width, color=run_color(i), label=safe_label(label, label_chars))
        for rect, value in zip(bars, ys):
            ax.annotate(annotate(value), (rect.get_x() + rect.get_width() / 2, rect.get_height()), ha="center",
                        va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
        drawn_all += ys
    ax.set_xticks(range(len(scales)))
    return drawn_all


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

    def figure(self, slug: str, title: str, alt: str = ""):
        """The plot as a report figure (file stem `slug`)."""
        from fabricbench.report.model import Figure as ReportFigure

        return ReportFigure(slug, title, self.data, self.fmt, alt=alt)


def safe_label(text: str, limit: int = 0) -> str:
    """A user string as literal legend text: no mathtext ($...$), not hidden (leading '_'), lines of
    at most `limit` chars (wrapped at words, at most LEGEND_LINES of them), controls escaped (\\x1b)."""
    text = printable(text)
    if limit and len(text) > limit:
        lines = textwrap.wrap(text, limit, break_long_words=True) or [text[:limit]]
        if len(lines) > LEGEND_LINES:
            lines = lines[:LEGEND_LINES]
            lines[-1] = lines[-1][: limit - 1] + "\u2026"
        text = "\n".join(lines)
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


def colorbar_ticks(bar, ticks: Sequence[float], labels: Optional[Sequence[str]] = None) -> None:
    """Put these ticks on a colour bar, labelled so that no two read the same (``distinct_labels``)."""
    ticks = [float(t) for t in ticks]
    bar.set_ticks(ticks)
    bar.set_ticklabels(list(labels) if labels is not None else distinct_labels(ticks))
    bar.ax.minorticks_off()


def printable_figure(fig: Figure) -> None:
    """Escape control characters in every text of `fig`: titles, labels, legends, fixed tick labels."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for t in fig.findobj(Text):
        s = t.get_text()
        if has_control(s):
            t.set_text(printable(s))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                if isinstance(formatter, FixedFormatter) and any(has_control(x) for x in formatter.seq):
                    formatter.seq = [printable(x) for x in formatter.seq]
                elif isinstance(formatter, FuncFormatter) and not getattr(formatter.func, "printable", False):
                    # set_xticks(ticks, labels) keeps the labels in a FuncFormatter
                    formatter.func = _printable_func(formatter.func)


def _printable_func(func):
    def label(x, pos=None):
        return printable(func(x, pos))

    label.printable = True
    return label


def save_figure(fig: Figure, fmt: str) -> bytes:
    """The figure as SVG or PNG bytes; its texts made printable, and a library's warning
    (a glyph missing from the font, ...) re-issued with its text escaped, never shown raw."""
    import warnings

    printable_figure(fig)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = _save_figure(fig, fmt)
    seen = set()
    for w in caught:
        text = printable(w.message)
        if text not in seen:
            seen.add(text)
            warnings.warn(f"plot: {text}", UserWarning, stacklevel=2)
    return data


def _save_figure(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "svg":
        fig.savefig(buf, format="svg", metadata={"Date": None})
    elif fmt == "png":
        fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    else:
        raise ValueError(f"plot format must be svg or png, not {fmt!r}")
    return buf.getvalue()


def _draw_curves(ax, drawn: Sequence[Curve], logy: bool, legend: bool = True) -> Tuple[List[float], List[float]]:
    """Curves (and their bands) on `ax`; the x and y values drawn, for the axis limits."""
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
        ax.plot(xs, ys, c.style, color=color, marker=c.marker, markersize=3, linewidth=1.4,
                label=safe_label(c.label, LEGEND_CHARS) if legend else None)
        if c.lo is not None and c.hi is not None:
            band = [(float(x), float(l), float(h)) for x, l, h in zip(c.x, c.lo, c.hi)
                    if l is not None and h is not None and x is not None and (not logy or l > 0)]
            if band:
                bx, bl, bh = zip(*band)
                ax.fill_between(bx, bl, bh, color=color, alpha=0.18, linewidth=0)
                ys_all.extend(bl)
                ys_all.extend(bh)
    return xs_all, ys_all


def _size_axis(ax, xs_all: Sequence[float], sizes: bool) -> None:
    ax.set_xscale("log", base=2)
    if sizes:
        ax.xaxis.set_major_locator(FixedLocator(_size_ticks(min(xs_all), max(xs_all))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: size_label(v)))
        ax.xaxis.set_minor_locator(NullLocator())


def value_axis(ax, ys_all: Sequence[float], logy: bool) -> None:
    """A value axis whose ticks are all labelled in plain numbers (250, 12k, never 10^4)."""
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


def _ratio_axis(ax, ratios: Sequence[Curve], label: Tuple[str, str]) -> None:
    """Each curve's ratio to the reference run; the line at 1 is 'the same'."""
    values: List[float] = []
    for c in ratios:
        pts = [(float(x), float(y)) for x, y in zip(c.x, c.y) if x is not None and y is not None and y > 0]
        if pts:
            xs, ys = zip(*pts)
            values.extend(ys)
            ax.plot(xs, ys, c.style, color=c.color, marker=c.marker, markersize=3, linewidth=1.2)
    ax.axhline(1.0, color="#444444", linewidth=0.8)
    if values and max(values) / min(values) > 4:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: axis_value(v, fractions=True)))
        ax.yaxis.set_minor_locator(NullLocator())
    else:
        lo, hi = (min(values + [1.0]), max(values + [1.0])) if values else (0.9, 1.1)
        pad = max(0.05, (hi - lo) * 0.15)
        ax.set_ylim(lo - pad, hi + pad)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: numbers.short(v)))
    ax.set_ylabel(label[0], fontsize=8)
    if label[1]:
        ax.set_title(safe_label(label[1], 80).split("\n")[0], loc="left", fontsize=7, color="#444444", pad=3)
    ax.grid(True, which="major", alpha=0.3)


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
    ratios: Sequence[Curve] = (),
    ratio_label: Tuple[str, str] = ("", ""),
) -> PlotResult:
    """Curves against message size (or any x when sizes=False), with bands and reference lines;
    with `ratios`, a second panel underneath shares the x axis and shows them around 1."""
    drawn = list(curves[:max_curves])
    omitted = max(0, len(curves) - len(drawn))
    with rc_context(_RC):
        # Fixed axes and an outside legend: no layout engine pass (it doubles the drawing time).
        if ratios:
            height += 1.6
            fig = Figure(figsize=(width, height))
            bottom = 0.55 / height
            rax = fig.add_axes((0.08, bottom, 0.60, 1.25 / height))
            ax = fig.add_axes((0.08, bottom + 1.55 / height, 0.60, 1 - (bottom + 1.55 / height) - 0.45 / height), sharex=rax)
        else:
            fig = Figure(figsize=(width, height))
            ax = fig.add_axes((0.08, 0.13, 0.60, 0.78))
            rax = None
        xs_all, ys_all = _draw_curves(ax, drawn, logy)
        for ref in ref_lines:
            ax.axhline(ref.y, color=ref.color, linestyle=ref.style, linewidth=1.0, label=safe_label(ref.label, LEGEND_CHARS))
            ys_all.append(ref.y)
        if rax is not None:
            _ratio_axis(rax, ratios, ratio_label)
        if logx and xs_all:
            _size_axis(rax if rax is not None else ax, xs_all, sizes)
        value_axis(ax, ys_all, logy)
        ax.set_title(safe_label(title))
        (rax if rax is not None else ax).set_xlabel(xlabel)
        if rax is not None:
            ax.tick_params(labelbottom=False)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
        if drawn or ref_lines:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False,
                      fontsize=7 if len(drawn) + len(ref_lines) > 10 else 8)
        data = save_figure(fig, fmt)
    return PlotResult(data, fmt, len(drawn), omitted)


def value_bars(
    labels: Sequence[str],
    values: Sequence[Optional[float]],
    colors: Sequence[Optional[str]],
    title: str,
    xlabel: str,
    lo: Optional[Sequence[Optional[float]]] = None,
    hi: Optional[Sequence[Optional[float]]] = None,
    fmt: str = "svg",
    width: float = 7.2,
) -> PlotResult:
    """One horizontal bar per series, its value written at the bar's end, the spread (lo..hi) as
    an error bar: what a series of one point (MPI_Barrier) shows instead of a lone dot."""
    rows = [(label, v, c, (lo[i] if lo else None), (hi[i] if hi else None))
            for i, (label, v, c) in enumerate(zip(labels, values, colors)) if v is not None and math.isfinite(v)]
    with rc_context(_RC):
        height = max(1.8, 0.42 * len(rows) + 1.1)
        fig = Figure(figsize=(width, height))
        longest = max((min(len(str(r[0])), LEGEND_CHARS) for r in rows), default=4)
        left = min(0.45, 0.06 + 0.0105 * longest * 7.2 / width)
        fig.subplots_adjust(left=left, right=0.88, top=1 - 0.45 / height, bottom=0.5 / height)
        ax = fig.add_subplot()
        ys = list(range(len(rows)))
        for y, (_label, v, color, l, h) in zip(ys, rows):
            err = None
            if l is not None and h is not None and l <= v <= h and (l, h) != (v, v):
                err = [[v - l], [h - v]]
            ax.barh([y], [v], height=0.6, color=color or run_color(y), xerr=err, capsize=3,
                    error_kw={"elinewidth": 0.9, "ecolor": "#333333"})
            ax.annotate(number(v), (max(v, h or v), y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_yticks(ys)
        ax.set_yticklabels([safe_label(r[0], LEGEND_CHARS) for r in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        top = max([max(r[1], r[4] or r[1]) for r in rows] + [0.0])
        ax.set_xlim(0, top * 1.18 if top > 0 else 1)
        ax.xaxis.set_major_formatter(FuncFormatter(_value_formatter))
        ax.set_xlabel(xlabel)
        ax.set_title(safe_label(title))
        ax.grid(True, axis="x", alpha=0.3)
        data = save_figure(fig, fmt)
    return PlotResult(data, fmt, len(rows), max(0, len(labels) - len(rows)))


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
    limit: Optional[float] = None,
    texts: Optional[Sequence[Sequence[Optional[str]]]] = None,
) -> PlotResult:
    """Grouped horizontal bars: one bar per (category, group); None values are left out. Bars
    past +-`limit` stop at the limit with their text (``texts``, per group and category) written
    at the end, so one huge value does not flatten every other bar."""
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
                    y = ci - 0.4 + bar_h * (gi + 0.5)
                    ys.append(y)
                    cut = limit is not None and abs(v) > limit
                    xs.append(math.copysign(limit, v) if cut else v)
                    text = texts[gi][ci] if texts is not None else None
                    if text and (cut or len(categories) <= 12):
                        ax.annotate(text, (xs[-1], y), xytext=(3 if v >= 0 else -3, 0), textcoords="offset points",
                                    ha="left" if v >= 0 else "right", va="center", fontsize=6.5)
            ax.barh(ys, xs, height=bar_h, color=color or run_color(gi), label=safe_label(label, BAR_LEGEND_CHARS))
        if limit is not None:
            lo, hi = ax.get_xlim()
            ax.set_xlim(min(lo, -0.05 * limit) * 1.25, max(hi, 0.05 * limit) * 1.25)
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
