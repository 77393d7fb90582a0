"""Configuration: a server-configuration table per run (hosts, CPU, memory, OS, kernel, MPI, fabric, tuning)."""
from __future__ import annotations

from fabricbench.analysis.comparability import run_facts
from fabricbench.numbers import number
from fabricbench.report.words.comparability import fact_text
from fabricbench.report.model import Cell, Column, Notice, Paragraph, Section, Table

ORDER = 20


def build(ctx):
    if not ctx.runs:
        return None
    facts = [run_facts(r.run, r.hosts) for r in ctx.runs]
    keys = list(dict.fromkeys(k for f in facts for k in f))
    rows = []
    for key in keys:
        values = [fact_text(f[key].value) if key in f else None for f in facts]
        if all(v is None for v in values) and key != "hosts":
            continue
        label = next(f[key].label for f in facts if key in f)
        differs = len(ctx.runs) > 1 and len(set(values)) > 1
        rows.append([Cell(label, "")] + [Cell(v if v is not None else "-", "warn" if differs else ("muted" if v is None else "")) for v in values])
    peaks = []
    for r in ctx.runs:
        c = r.ceiling
        peaks.append(number(c.limit_MBps) if c else (r.peak.why_none or "-"))
    rows.append([Cell("Bandwidth ceiling per direction (MB/s)")] + [Cell(p) for p in peaks])
    cols = [Column("Item", align="left")] + [Column(r.name, align="left") for r in ctx.runs]
    section = Section("configuration", "Configuration")
    section.add(Paragraph(
        "What each run ran on, summarised over its hosts (values separated by commas when hosts disagree). "
        "Rows where runs differ are highlighted; tuning variables and driver module parameters are listed one per row."
    ))
    section.add(Table(cols, rows, caption="Server and software configuration"))
    sparse = [r.name for r, f in zip(ctx.runs, facts) if sum(1 for x in f.values() if x.value is not None) <= 2]
    if sparse:
        section.add(Notice("Little or no provenance recorded for: " + ", ".join(sparse) + " (imported results?).", "note"))
    return section
