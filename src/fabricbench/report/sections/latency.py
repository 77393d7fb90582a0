"""Latency: one-way ping-pong latency (and multi-pair latency) against message size, log-log."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.model import Section
from fabricbench.suite import family

ORDER = 30
LATENCY = family("pt2pt", metrics=("latency",))  # the engine's ping-pongs: latency, multi_lat
BENCHMARKS = set(LATENCY)


def build(ctx):
    subs = []
    for bench in LATENCY:
        for metric in ctx.metrics(bench):
            sub = blocks.benchmark_section(ctx, bench, metric, f"{bench}-{metric}", logy=True, bands="samples")
            if sub is not None:
                subs.append(sub)
    if not subs:
        return None
    section = Section("latency", "Latency")
    section.subsections = subs
    return section
