"""Collectives: time per call averaged over ranks, with the fastest-to-slowest rank band, by message size."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.blocks import band_of
from fabricbench.analysis.series import headline
from fabricbench.suite import family
from fabricbench import numbers

ORDER = 50
COLLECTIVES = family("collective")  # the engine's table, in its order
BENCHMARKS = set(COLLECTIVES)


def _cell(m):
    lo, hi = band_of(m)
    text = numbers.number(headline(m))
    if lo is not None and hi is not None:
        text += f" [{numbers.number(lo)}-{numbers.number(hi)}]"
    return text


def build(ctx):
    subs = []
    for bench in COLLECTIVES:
        for metric in ctx.metrics(bench):
            sub = blocks.benchmark_section(
                ctx, bench, metric, f"{bench}-{metric}", logy=True, bands="ranks", value=_cell,
                caption="Line: the figure of record (the mean over ranks while collectives record no per-call distribution).",
            )
            if sub is not None:
                subs.append(sub)
    return blocks.grouped_section("collectives", "Collectives",
                                  "Cells show the mean over ranks and, in brackets, the fastest and slowest rank.", subs)
