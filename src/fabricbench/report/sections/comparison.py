"""Comparison with the baseline run: the verdicts of ``analysis.compare`` (the same as
``fabricbench compare``), what could confound them, and what could not be compared."""
from __future__ import annotations

from fabricbench.analysis.compare import describe_point
from fabricbench.report.model import BulletList, Column, Notice, Paragraph, Section, Table

ORDER = 28


def build(ctx):
    base = ctx.baseline
    if base is None or len(ctx.runs) < 2:
        return None
    section = Section("comparison", f"Comparison with '{base.name}'")
    section.intro = ("Medians are compared with their 95% confidence intervals; a point is called better or worse "
                     "only when the difference is significant after correcting for the number of points compared "
                     "(Holm) and at least 3%, allowing for how much identical runs differ (from the stored runs of "
                     "the same configuration, as fabricbench compare does). Points without a recorded spread are "
                     "shown but not judged.")
    rows = []
    for r in ctx.runs:
        if r is base:
            continue
        comp = ctx.comparison(r)
        rows.append([r.name, str(len(comp.flagged("worse"))), str(len(comp.flagged("better"))),
                     str(sum(1 for _s, p in comp.points if p.verdict in ("no significant difference", "below threshold", "isolated", "host changed"))),
                     str(sum(1 for _s, p in comp.points if p.significant is None)), comp.summary(base.name, r.name)])
    section.add(Table([Column("Run", align="left"), Column("Worse", "points"), Column("Better", "points"),
                       Column("No significant difference", "points"), Column("Not judged", "points"),
                       Column("Summary", align="left")], rows))
    for r in ctx.runs:
        if r is base:
            continue
        comp = ctx.comparison(r)
        sub = Section(f"comparison-{r.index}", f"{r.name} against {base.name}")
        if comp.comparability.differences:
            labels = ", ".join(d.label for d in comp.comparability.differences)
            sub.add(Notice(f"The runs differ in {labels}: any of these can explain a difference "
                           "(the configuration section has the values).", "warning"))
        for caution in comp.comparability.cautions:
            sub.add(Notice(f"Caution: {caution}.", "warning"))
        sub.add(BulletList([f"{s.title}: {s.summary(base.name, r.name)}" for s in comp.series]) if comp.series
                else Paragraph("No common points to compare."))
        note = comp.noise_note()
        if note:
            sub.add(Paragraph(note) if comp.noise_from == "history" else Notice(note, "warning"))
        if comp.host_note():
            sub.add(Notice(comp.host_note(), "warning"))
        flagged = comp.flagged("worse") + comp.flagged("better")
        if flagged:
            sub.add(Paragraph("Points called different:"),
                    BulletList([describe_point(s, p).replace("B is", f"{r.name} is") for s, p in flagged[:40]]))
            if len(flagged) > 40:
                sub.add(Paragraph(f"... and {len(flagged) - 40} more (fabricbench compare {base.run.id} {r.run.id} lists them all)."))
        if comp.mismatch_text:
            sub.add(Paragraph(comp.mismatch_text))
        section.subsections.append(sub)
    return section
