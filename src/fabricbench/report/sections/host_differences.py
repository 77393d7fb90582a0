"""Host differences: within each run, hosts whose provenance digest differs from the majority, and how."""
from __future__ import annotations

from fabricbench.analysis.comparability import host_outliers
from fabricbench.report.model import Column, Paragraph, Section, Table

ORDER = 25


def build(ctx):
    runs = [r for r in ctx.runs if r.hosts]
    if not runs:
        return None
    section = Section("host-differences", "Hosts that differ")
    section.add(Paragraph(
        "Hosts of a run are grouped by the digest of their recorded facts; every host outside the largest group "
        "is listed with the facts that differ from that group (clock speed and host name are ignored)."
    ))
    rows, clean = [], []
    for r in runs:
        groups = host_outliers(r.hosts)
        if not groups.outliers:
            clean.append(f"{r.name} ({groups.total} host{'s' if groups.total != 1 else ''})")
            continue
        majority = groups.groups[groups.majority_digest]
        for o in groups.outliers:
            if not o.differences:
                rows.append([r.name, o.hostname, o.digest[:12], "(digest differs; no differing facts recorded)", "-", "-"])
            for d in o.differences:
                rows.append([r.name, o.hostname, o.digest[:12], d.key, d.b if d.b is not None else "-",
                             f"{d.a if d.a is not None else '-'} ({len(majority)} hosts)"])
    if rows:
        cols = [Column("Run", align="left"), Column("Host", align="left"), Column("Digest", align="left"),
                Column("Fact", align="left"), Column("This host", align="left"), Column("Majority", align="left")]
        section.add(Table(cols, rows))
    if clean:
        section.add(Paragraph("All hosts identical in: " + "; ".join(clean) + "."))
    return section
