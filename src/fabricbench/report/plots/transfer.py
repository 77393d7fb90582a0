"""Plots of a transfer run (seed 002's charts), from an ``analysis.transfer.TransferSummary``.

- ``throughput_vs_readers``  aggregate and per-reader throughput against the number of readers,
  one colour per protocol and cache state, the server link's goodput as the ceiling (and an
  equal share of it on the per-reader side)
- ``raw_vs_file``            point to point: raw TCP (network+protocol only) beside file transfer

Each returns the image bytes (SVG or PNG); matplotlib's object API, no pyplot.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from fabricbench.analysis.transfer import RAW, TransferRow, TransferSummary
from fabricbench.report.plots import run_color, safe_label, save_figure
from fabricbench import numbers

_RC = {"svg.hashsalt": "fabricbench", "svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8}
CEILING_COLOR = "#444444"


def _variants(summary: TransferSummary) -> Dict[tuple, List[TransferRow]]:
    out: Dict[tuple, List[TransferRow]] = {}
    for r in summary.rows:
        out.setdefault((r.protocol, r.cache), []).append(r)
    return out


def _style(protocol: str) -> str:
    # As in the seed: dashed is network+protocol only, solid is file transfer.
    return "--" if protocol == RAW else "-"


def _readers_axis(ax, counts: Sequence[int]) -> None:
    ticks = sorted(set(counts))
    if len(ticks) > 1 and ticks[-1] / ticks[0] >= 4:
        ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: numbers.short(v)))
    lo, hi = ticks[0], ticks[-1]
    if ax.get_xscale() == "log":
        ax.set_xlim(lo / 1.3, hi * 1.3)
    else:
        ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.set_xlabel("readers at the same time")
    ax.grid(True, alpha=0.3)


def _errorbar(ax, rows: Sequence[TransferRow], pick, color: str, style: str, label: str) -> None:
    pts = [(r.readers, pick(r)) for r in rows if pick(r).median is not None]
    if not pts:
        return
    xs = [x for x, _ in pts]
    ys = [s.median for _, s in pts]
    lo = [s.median - (s.low if s.low is not None else s.median) for _, s in pts]
    hi = [(s.high if s.high is not None else s.median) - s.median for _, s in pts]
    ax.errorbar(xs, ys, yerr=[lo, hi], color=color, linestyle=style, marker="o", markersize=4, capsize=3,
                linewidth=1.4, label=safe_label(label, 40))


def throughput_vs_readers(summary: TransferSummary, fmt: str = "svg") -> bytes:
    """Two panels: aggregate (left) and per-reader (right) MB/s against readers; medians with the
    range over repetitions (per reader: over single readers)."""
    variants = _variants(summary)
    counts = [r.readers for r in summary.rows]
    with rc_context(_RC):
        fig = Figure(figsize=(9.6, 4.0), layout="constrained")
        agg, per = fig.subplots(1, 2, sharey=True)
        for i, ((protocol, _cache), rows) in enumerate(variants.items()):
            color = run_color(i)
            _errorbar(agg, rows, lambda r: r.aggregate, color, _style(protocol), rows[0].label)
            _errorbar(per, rows, lambda r: r.per_reader, color, _style(protocol), rows[0].label)
        by_count: Dict[int, Optional[float]] = {}
        for r in summary.rows:
            if r.ceiling:
                by_count[r.readers] = r.ceiling
        if by_count:
            xs = sorted(by_count)
            label = "server link goodput (ceiling)"
            if len(set(by_count.values())) == 1:
                agg.axhline(by_count[xs[0]], color=CEILING_COLOR, linestyle=":", linewidth=1.2, label=label)
            else:
                agg.plot(xs, [by_count[x] for x in xs], color=CEILING_COLOR, linestyle=":", linewidth=1.2, label=label)
            per.plot(xs, [by_count[x] / x for x in xs], color=CEILING_COLOR, linestyle=":", marker="_", linewidth=1.2,
                     label="ceiling / readers (equal share)")
        for ax, title in ((agg, "Aggregate throughput"), (per, "Per-reader throughput")):
            if counts:
                _readers_axis(ax, counts)
            ax.set_title(title)
            ax.set_ylim(bottom=0)
            ax.legend(loc="lower left" if ax is agg else "upper right", frameon=False, fontsize=7)
        agg.set_ylabel("MB/s (1e6 bytes/s)")
        return save_figure(fig, fmt)


def raw_vs_file(summary: TransferSummary, fmt: str = "svg") -> Optional[bytes]:
    """Bars of the fewest readers (point to point when 1): every protocol and cache state, with the ceiling."""
    if not summary.rows:
        return None
    fewest = min(r.readers for r in summary.rows)
    rows = [r for r in summary.rows if r.readers == fewest and r.aggregate.median is not None]
    if not rows:
        return None
    variants = list(_variants(summary))
    with rc_context(_RC):
        fig = Figure(figsize=(7.2, 0.5 + 0.45 * len(rows) + 1.2), layout="constrained")
        ax = fig.add_subplot()
        for y, r in enumerate(rows):
            s = r.aggregate
            err = [[s.median - (s.low if s.low is not None else s.median)], [(s.high if s.high is not None else s.median) - s.median]]
            ax.barh(y, s.median, xerr=err, capsize=3, color=run_color(variants.index((r.protocol, r.cache))),
                    hatch="//" if r.protocol == RAW else None, edgecolor="white")
            ax.text(s.median, y, f" {numbers.short(s.median, 4)}", va="center", ha="left", fontsize=8)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([("network+protocol only: " if r.protocol == RAW else "file transfer: ") + r.label for r in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ceilings = {r.ceiling for r in rows if r.ceiling}
        if len(ceilings) == 1:
            ax.axvline(ceilings.pop(), color=CEILING_COLOR, linestyle=":", linewidth=1.2, label="link goodput (ceiling)")
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=7)
        ax.set_xlabel("MB/s (1e6 bytes/s), median over repetitions")
        ax.set_title("Point to point" if fewest == 1 else f"{fewest} readers", loc="left")
        ax.grid(True, axis="x", alpha=0.3)
        return save_figure(fig, fmt)
