"""One-sided communication (OSU's put/get/accumulate/atomics benchmarks): latency and
bandwidth against message size, one subsection per benchmark and metric, each curve labelled
with the window creation and synchronisation it was measured with."""
from __future__ import annotations

from fabricbench.report import blocks

ORDER = 47
ONE_SIDED = ("put_latency", "get_latency", "acc_latency", "fop_latency", "cas_latency", "put_bw", "get_bw",
             "put_bibw")
BENCHMARKS = set(ONE_SIDED)


def build(ctx):
    subs = []
    for bench in ONE_SIDED:
        for metric in ctx.metrics(bench):
            sub = blocks.benchmark_section(
                ctx, bench, metric, f"{bench}-{metric}", logy=True, bands="samples",
                caption="Window creation (win) and synchronisation (sync) are the series' parameters.",
            )
            if sub is not None:
                subs.append(sub)
    return blocks.grouped_section(
        "onesided", "One-sided communication",
        "MPI RMA from rank 0 to rank 1's window, as OSU's osu_put_latency, osu_get_bw, ... define it. "
        "Latency with fence or pscw is half an RMA round trip; bandwidth is decimal MB/s.", subs)
