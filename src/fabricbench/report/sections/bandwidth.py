"""Bandwidth: uni- and bidirectional bandwidth against message size with the link's peak, and % of peak.

The peak is the run's ceiling from ``analysis.peaks`` (its fabric's data rate per direction,
the NIC's PCIe link when that is lower, a lab run's shaped rate) times the link directions
the figure can fill (``peaks.point_peak``: 2 for bi-bandwidth, the sending hosts of mbw_mr's
pairs). Runs whose ranks all sat on one host get none ("shared memory: no link ceiling")
unless a fabric tag says otherwise; a figure above 100% comes with a note that explains it.
"""
from __future__ import annotations

from fabricbench.analysis.peaks import SHARED_MEMORY, is_lab, percent_of_peak, point_peak
from fabricbench.report.words.peaks import ceiling_note, over_peak_note
from fabricbench.analysis.record import over_ceiling
from fabricbench.analysis.series import headline
from fabricbench.report import blocks
from fabricbench.report.model import Notice
from fabricbench.report.plots import RefLine, run_color
from fabricbench import numbers
from fabricbench.suite import family

ORDER = 40
BANDWIDTH = ("bandwidth", "bibandwidth")
BENCHMARKS = {name for metric in BANDWIDTH for name in family("pt2pt", metrics=(metric,))}  # bw, bibw (mbw_mr: message rate)


def _peak(run, m):
    """(peak in MB/s, how it was worked out) for one point of a run."""
    return point_peak(run.ceiling, m.benchmark, m.metric, m.params, run.run)


def build(ctx):
    subs = []
    notes = []
    for r in ctx.runs:
        c = r.ceiling
        if c is not None and c.by == "pcie":
            notes.append(Notice(f"{r.name}: {ceiling_note(c)}.", "warning"))
        elif c is None and r.peak.why_none == SHARED_MEMORY:
            notes.append(Notice(f"{r.name}: {SHARED_MEMORY} (all ranks on one host); no % of peak is given.", "note"))
        elif c is None and r.peak.why_none:
            notes.append(Notice(f"{r.name}: {r.peak.why_none}.", "warning"))
        elif c is not None and r.node_count == 1:
            notes.append(Notice(f"{r.name}: all ranks ran on one host, so traffic did not cross the fabric; % of peak is "
                                f"against the tagged {c.fabric.name if c.fabric else 'link'} all the same.", "note"))
    for bench in family("pt2pt", metric=BANDWIDTH):  # bw, bibw, mbw_mr
        metrics = [m for m in ctx.metrics(bench) if m in BANDWIDTH]
        for metric in metrics:
            series = ctx.series(bench, metric)
            refs, seen = [], set()
            for s in series:
                peak, how = _peak(s.run, s.points[0]) if s.points else (None, "")
                if peak is None or round(peak) in seen:
                    continue
                seen.add(round(peak))
                c = s.run.ceiling
                what = c.pcie.name if c.by == "pcie" else c.fabric.name
                times = f" x{numbers.short(peak / c.limit_MBps)}" if abs(peak - c.limit_MBps) > 1e-6 else ""
                refs.append(RefLine(peak, f"peak {what}{times}: {numbers.grouped(peak)} MB/s", color=run_color(s.run.index)))
                if how and times:
                    notes.append(Notice(f"{s.run.name}, {bench}: peak {numbers.grouped(peak)} MB/s ({how}).", "note"))
            over = {}
            for s in series:
                for m in s.points:
                    peak, _how = _peak(s.run, m)
                    excess = over_ceiling(m, peak)  # figure, median, p99, max or a plotted percentile
                    if excess:
                        over.setdefault(s.run.index, (s.run, []))[1].append((m, excess[0]))
            for run, items in over.values():
                top = max((e for _m, e in items), key=lambda e: e.ratio)
                sizes = ", ".join(numbers.size(m.params.get("size")) for m, _e in items[:6]) + (", ..." if len(items) > 6 else "")
                notes.append(Notice(f"{run.name}, {bench} at {sizes} B: shown figures above the peak (worst: {top.statistic} "
                                    f"{numbers.grouped(top.value, 1)} MB/s); {over_peak_note(is_lab(run.ceiling.fabric), 100.0 * top.ratio)}.", "warning"))
            extras = []
            if any(_peak(s.run, m)[0] for s in series for m in s.points[:1]):
                extras.append(("% of peak", "%", lambda m, s: numbers.percent(percent_of_peak(headline(m), _peak(s.run, m)[0]))))
            sub = blocks.benchmark_section(
                ctx, bench, metric, f"{bench}-{metric}", logy=False, bands="samples", ref_lines=refs[:6], extras=extras,
                caption="Dashed lines: theoretical peak per run (data rate after line encoding).",
            )
            if sub is not None:
                subs.append(sub)
    return blocks.grouped_section("bandwidth", "Bandwidth",
                                  "Bandwidth is decimal MB/s (10^6 bytes/s). Peaks come from data/fabrics.toml.",
                                  subs, notes)
