"""Latency: one-way ping-pong latency (and multi-pair latency) against message size, log-log."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.model import Section

ORDER = 30
BENCHMARKS = {"latency", "multi_lat"}


def build(ctx):
    subs = []
    for bench in ("latency", "multi_lat"):
        for metric in ctx.metrics(bench):
            sub = blocks.benchmark_section(ctx, bench, metric, f"{bench}-{metric}", logy=True, bands="samples")
            if sub is not None:
                subs.append(sub)
    if not subs:
        return None
    section = Section("latency", "Latency")
    section.subsections = subs
    return section
