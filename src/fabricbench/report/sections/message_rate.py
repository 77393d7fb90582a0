"""Message rate: messages per second over many pairs (mbw_mr) against message size."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.model import Section

ORDER = 45
BENCHMARKS = {"mbw_mr"}


def build(ctx):
    sub = blocks.benchmark_section(ctx, "mbw_mr", "message_rate", "mbw_mr-message_rate", logy=True,
                                   title="Multi-pair message rate")
    if sub is None:
        return None
    section = Section("message-rate", "Message rate")
    section.subsections = [sub]
    return section
