"""Runs: which runs the report covers (label, tags, status, when, what ran) and units used."""
from __future__ import annotations

from fabricbench.report.model import Cell, Column, Notice, Paragraph, Section, Table

ORDER = 10


def _tags(tags) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((tags or {}).items())) or "-"


def build(ctx):
    if not ctx.runs:
        return None
    section = Section("runs", "Runs")
    section.add(Paragraph(
        "Latency and time in microseconds (us); bandwidth in decimal MB/s (1 MB/s = 10^6 bytes/s, as OSU, "
        "IMB and HPCC report it); message rate in messages per second; message sizes in bytes. "
        "Plots use a log2 size axis with 0-byte messages drawn at the left edge."
    ))
    rows = []
    for r in ctx.runs:
        run = r.run
        status = Cell(run.status, "" if run.status == "complete" else "warn", run.message or "")
        fabric = r.fabric.fabric.name if r.fabric else "-"
        rows.append([
            str(run.id), r.name, run.label or "-", _tags(run.tags), run.kind, status, run.created,
            str(len(r.measurements)), fabric, run.tool_version, run.command or "-",
        ])
    cols = [Column("#", align="left"), Column("Name", align="left"), Column("Label", align="left"),
            Column("Tags", align="left"), Column("Kind", align="left"), Column("Status", align="left"),
            Column("Created", "UTC", align="left"), Column("Points", "count"), Column("Fabric", align="left"),
            Column("fabricbench", "version", align="left"), Column("Command", align="left")]
    section.add(Table(cols, rows))
    if ctx.baseline is not None and len(ctx.runs) > 1:
        section.add(Paragraph(f"Comparisons in this report are against the baseline run '{ctx.baseline.name}'."))
    for r in ctx.runs:
        if r.run.status != "complete":
            msg = f": {r.run.message}" if r.run.message else ""
            section.add(Notice(f"Run '{r.name}' is {r.run.status}{msg}; its results are partial.", "warning"))
    return section
