"""Bandwidth: uni- and bidirectional bandwidth against message size with the link's peak, and % of peak.

The peak is the run's ceiling from ``analysis.peaks``: its fabric's data rate per direction
(x2 for bi-bandwidth), or the NIC's PCIe link when that is lower. Runs whose ranks all sat on
one host get no peak (their traffic never crossed the fabric) unless a fabric tag says otherwise.
"""
from __future__ import annotations

from fabricbench.analysis.peaks import percent_of_peak
from fabricbench.analysis.series import headline
from fabricbench.report import blocks
from fabricbench.report.model import Notice, Section
from fabricbench.report.plots import RefLine, run_color

ORDER = 40
BENCHMARKS = {"bw", "bibw"}
_DIRECTIONS = {"bw": 1, "bibw": 2, "mbw_mr": 1}


def _peak(run, benchmark):
    c = run.ceiling
    return c.limit_MBps * _DIRECTIONS.get(benchmark, 1) if c else None


def build(ctx):
    subs = []
    notes = []
    for r in ctx.runs:
        c = r.ceiling
        if c is not None and c.by == "pcie":
            notes.append(Notice(f"{r.name}: {c.note}.", "warning"))
        elif c is None and r.fabric is not None and r.node_count == 1:
            notes.append(Notice(f"{r.name}: all ranks ran on one host, so traffic did not cross {r.fabric.fabric.name}; no % of peak is given.", "note"))
        elif c is not None and r.node_count == 1:
            notes.append(Notice(f"{r.name}: all ranks ran on one host, so traffic did not cross the fabric; % of peak is "
                                f"against the tagged {c.fabric.name if c.fabric else 'link'} all the same.", "note"))
    for bench in ("bw", "bibw", "mbw_mr"):
        metrics = [m for m in ctx.metrics(bench) if m in ("bandwidth", "bibandwidth")]
        for metric in metrics:
            series = ctx.series(bench, metric)
            refs, seen = [], set()
            for s in series:
                peak = _peak(s.run, bench)
                if peak is None or round(peak) in seen:
                    continue
                seen.add(round(peak))
                c = s.run.ceiling
                what = c.pcie.name if c.by == "pcie" else c.fabric.name
                dirs = " x2 directions" if _DIRECTIONS.get(bench, 1) == 2 else ""
                refs.append(RefLine(peak, f"peak {what}{dirs}: {peak:,.0f} MB/s", color=run_color(s.run.index)))
            extras = []
            if any(_peak(s.run, bench) for s in series):
                extras.append(("% of peak", "%", lambda m, s, b=bench: blocks.fmt_pct(percent_of_peak(headline(m), _peak(s.run, b)))))
            sub = blocks.benchmark_section(
                ctx, bench, metric, f"{bench}-{metric}", logy=False, bands="samples", ref_lines=refs[:6], extras=extras,
                caption="Dashed lines: theoretical peak per run (data rate after line encoding).",
            )
            if sub is not None:
                subs.append(sub)
    if not subs:
        return None
    section = Section("bandwidth", "Bandwidth")
    section.intro = "Bandwidth is decimal MB/s (10^6 bytes/s). Peaks come from data/fabrics.toml."
    section.add(*notes)
    section.subsections = subs
    return section
