"""Non-blocking collectives (OSU's osu_iallreduce, osu_ibcast, ...): the overall time of a call
that overlaps computation, its pure communication time, and the overlap % (how much of the
communication the computation hid), against message size."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.sections.collectives import _cell  # mean over ranks [fastest-slowest rank]
from fabricbench import numbers

ORDER = 52
NBC = ("iallreduce", "ibcast", "ialltoall", "iallgather", "ibarrier")
BENCHMARKS = set(NBC)
CAPTIONS = {
    "latency": "Line: overall time (start + compute + wait), mean over ranks.",
    "pure_comm": "Line: start + MPI_Wait with nothing in between, mean over ranks.",
    "overlap": "100 % = the call completed while the ranks computed; 0 % = computing hid none of it.",
}


STRETCHED = 1.5  # computation / pure communication time above which the host was busy


def _busy_note(ctx):
    """A notice when a computation ran much longer than it was calibrated to (a busy host)."""
    from fabricbench.report.model import Notice

    worst = 0.0
    for bench in NBC:
        for m in (p for s in ctx.series(bench, "overlap") for p in s.points):
            ratio = (m.detail or {}).get("compute_vs_pure_comm")
            if isinstance(ratio, (int, float)):
                worst = max(worst, float(ratio))
    if worst <= STRETCHED:
        return []
    return [Notice(f"Some computations ran up to {numbers.fixed(worst, 1)} times longer than the pure communication time "
                   "they were calibrated to: other work shared the cores, so those overlap figures describe "
                   "the host's load more than the MPI library. Measure on an idle host.", "warning")]


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
        "ranks and, in brackets, the fastest and slowest rank.", subs, notes=_busy_note(ctx) if subs else ())
