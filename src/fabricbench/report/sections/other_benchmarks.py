"""Other benchmarks: anything no section claims (new engine benchmarks, importers' extras), as plain tables."""
from __future__ import annotations

from fabricbench.report import blocks
from fabricbench.report.model import Section

ORDER = 90


def build(ctx):
    from fabricbench.report.sections import claimed_benchmarks

    claimed = claimed_benchmarks()
    rest = [b for b in ctx.benchmarks() if b not in claimed]
    if not rest:
        return None
    section = Section("other-benchmarks", "Other benchmarks")
    for bench in rest:
        for metric in ctx.metrics(bench):
            series = ctx.series(bench, metric)
            has_sizes = any(p.params.get("size") is not None for s in series for p in s.points)
            sub = blocks.benchmark_section(ctx, bench, metric, f"other-{bench}-{metric}",
                                           logy=metric in ("latency", "time", "message_rate")) if has_sizes else None
            if sub is None:
                title, unit = blocks.metric_title(metric, series[0].unit)
                sub = Section(f"other-{bench}-{metric}", f"{bench}: {title.lower()}")
                sub.add(*blocks.series_tables(ctx, series, title, unit))
            section.subsections.append(sub)
    return section
