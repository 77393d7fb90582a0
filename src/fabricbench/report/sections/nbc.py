"""Non-blocking collectives (OSU's osu_iallreduce, osu_ibcast, ...): the overall time of a call
that overlaps computation, its pure communication time, and the overlap % (how much of the
communication the computation hid), against message size."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.sections.collectives import _cell  # mean over ranks [fastest-slowest rank]

ORDER = 52
NBC = ("iallreduce", "ibcast", "ialltoall", "iallgather", "ibarrier")
BENCHMARKS = set(NBC)
CAPTIONS = {
    "latency": "Line: overall time (start + compute + wait), mean over ranks.",
    "pure_comm": "Line: start + MPI_Wait with nothing in between, mean over ranks.",
    "overlap": "100 % = the call completed while the ranks computed; 0 % = computing hid none of it.",
}


def build(ctx):
    subs = []
    for bench in NBC:
        for metric in ctx.metrics(bench):
            sub = blocks.benchmark_section(
                ctx, bench, metric, f"{bench}-{metric}", logy=metric != "overlap", bands="ranks",
                value=_cell, caption=CAPTIONS.get(metric, ""),
            )
            if sub is not None:
                subs.append(sub)
    return blocks.grouped_section(
        "nbc", "Non-blocking collectives and overlap",
        "Each size is measured as OSU does: the pure communication time first, then a computation "
        "calibrated to last as long, between the call's start and its MPI_Wait. Cells show the mean over "
        "ranks and, in brackets, the fastest and slowest rank.", subs)
