"""Link health (all pairs): the verdict, the flagged list, N x N heatmaps and the pair histogram.

One subsection per run holding ``allpairs`` measurements (``fabricbench health`` or an
imported mpiGraph run), analysed by ``analysis.health_check.check`` (the same verdict as ``fabricbench health``) with the default thresholds (report
option ``health_threshold`` overrides the bandwidth one). Heatmaps are ordered by host
name, rows sending and columns receiving; flagged nodes are labelled in red.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from fabricbench.analysis.health import Thresholds, host_order
from fabricbench.analysis.health_check import NoAllPairsData, check
from fabricbench.report.words.health import evidence, notes, verdict_line
from fabricbench.report.blocks import slugify
from fabricbench.report.model import Cell, Column, Figure, Notice, Paragraph, Section, Table
from fabricbench.report.plots.health import heatmap, histogram
from fabricbench import numbers

ORDER = 58
BENCHMARKS = {"allpairs"}
_STYLE = {"critical": "worse", "warning": "warn", "info": "muted"}


def _thresholds(ctx: Any) -> Thresholds:
    value = getattr(ctx.options, "health_threshold", None)
    return Thresholds(threshold=value) if value else Thresholds()


def _run_section(ctx: Any, loaded: Any, several: bool) -> Optional[Section]:
    try:
        result = check(loaded.run, loaded.measurements, loaded.hosts, _thresholds(ctx))
    except NoAllPairsData:
        return None
    data, report, th = result.data, result.report, result.thresholds
    sid = slugify(f"health-{loaded.name}") if several else "health"
    title = f"Link health: {loaded.name}" if several else "Link health (all pairs)"
    section = Section(sid, title)
    section.intro = ("Every ordered pair of nodes measured under the same load (rows send, columns receive), then "
                     "the suspicious pairs measured again alone. A node is flagged when most of its links are slow "
                     "(its row or column median well below the median of the pairs that do not involve it); a link when it is slow against "
                     "what its two ends do elsewhere; a pair when one direction is much slower than the other. "
                     "Bandwidth in MB/s (10^6 bytes/s).")
    section.add(Notice(verdict_line(report), "note" if report.healthy else "warning"))
    how = [f"{data.n} nodes"]
    if data.size:
        how.append(f"bandwidth at {numbers.count(data.size)} bytes" + (f", timed by the {'receiver' if data.direction == 'recv' else 'sender'}"
                                                         if data.direction else ""))
    if data.mode:
        how.append(f"{data.mode} mode")
    how.append(f"flag below {numbers.share(th.threshold)} (bandwidth) or above {numbers.fixed(1 / th.latency_threshold, 1)}x (latency) of the expectation")
    section.add(Paragraph("; ".join(how) + "."))
    for note in notes(result):
        section.add(Notice(note, "note"))

    if report.findings:
        rows: List[List[Any]] = []
        for f in report.findings:
            rows.append([Cell(f.severity, _STYLE.get(f.severity, "")), f.kind, f.metric, ", ".join(f.nodes),
                         "-" if f.ratio is None else numbers.share(f.ratio), evidence(f)])
        cols = [Column("Severity", align="left"), Column("Kind", align="left"), Column("Metric", align="left"),
                Column("Nodes", align="left"), Column("Measured / expected", "%"), Column("Evidence", align="left")]
        section.add(Table(cols, rows, caption="Flagged"))
        if report.omitted:
            section.add(Notice(f"{report.omitted} more link or asymmetry findings are not listed.", "warning"))

    order = host_order(data.labels)
    labels = [data.labels[i] for i in order]
    flagged = sorted({n for f in report.problems for n in f.nodes})
    fmt = ctx.plot_format
    for metric, mat, unit, lower in (("bandwidth", data.bandwidth, "MB/s", False), ("latency", data.latency, "us", True)):
        if mat is None:
            continue
        ordered = mat[np.ix_(order, order)]
        name = "Bandwidth" if metric == "bandwidth" else "Latency (8 bytes)"
        slug = slugify(f"{sid}-{metric}-heatmap")
        section.add(Figure(slug, f"{name} of every pair", heatmap(ordered, labels, f"{name}: sender (row) to receiver (column)",
                                                                    unit, fmt=fmt, lower_is_better=lower, flagged=flagged),
                           fmt, alt=f"{name} heatmap of {data.n} nodes ordered by host name",
                           caption=f"{unit}; nodes ordered by host name; flagged nodes in red; grey: not measured"))
    bw = report.summaries.get("bandwidth")
    if data.bandwidth is not None and bw and bw.median:
        values = data.bandwidth[np.isfinite(data.bandwidth)]
        slug = slugify(f"{sid}-bandwidth-histogram")
        section.add(Figure(slug, "Pair bandwidths", histogram(values, "Bandwidth of the pairs", "MB/s", fmt=fmt,
                                                              median=bw.median, threshold=th.threshold * bw.median,
                                                              threshold_label=f"{numbers.share(th.threshold)} of the median"),
                           fmt, alt="histogram of pair bandwidths",
                           caption=f"{bw.pairs} pairs; median {numbers.short(bw.median, 4)} MB/s"))
    return section


def build_all(ctx: Any) -> List[Section]:
    runs = [r for r in ctx.runs if any(m.benchmark == "allpairs" for m in r.measurements)]
    sections = []
    for loaded in runs:
        s = _run_section(ctx, loaded, len(runs) > 1)
        if s is not None:
            sections.append(s)
    return sections
