"""Message rate: messages per second over many pairs (mbw_mr) against message size."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.model import Section
from fabricbench.suite import family

ORDER = 45
BENCHMARKS = set(family("pt2pt", metric="message_rate"))  # mbw_mr


def build(ctx):
    (bench,) = sorted(BENCHMARKS)
    sub = blocks.benchmark_section(ctx, bench, "message_rate", f"{bench}-message_rate", logy=True,
                                   title="Multi-pair message rate")
    if sub is None:
        return None
    section = Section("message-rate", "Message rate")
    section.subsections = [sub]
    return section
