"""Comparison with the baseline run: the verdicts of ``analysis.compare`` (the same as
``fabricbench compare``), what could confound them, and what could not be compared."""
from __future__ import annotations

from fabricbench.analysis.compare import check_verdict
from fabricbench.report.words import compare as words
from fabricbench.report.words.compare import describe_point, single_row
from fabricbench.report.words.matching import mismatch_paragraph
from fabricbench.report.words.comparability import cautions
from fabricbench.numbers import percent
from fabricbench.report.model import BulletList, Cell, Column, Notice, Paragraph, Section, Table
from fabricbench import numbers

ORDER = 28


def build(ctx):
    base = ctx.baseline
    if base is None or len(ctx.runs) < 2:
        return None
    section = Section("comparison", f"Comparison with '{base.name}'")
    section.intro = ("Each point's figure of record is compared with its 95% confidence interval (the median; for "
                     "bandwidth the rate over all iterations); a point is called better or worse "
                     "only when the difference is significant after correcting for the number of points compared "
                     "(Holm) and at least 3%, allowing for how much identical runs differ (from the stored runs of "
                     "the same configuration, as fabricbench compare does). Points without a recorded spread are "
                     "shown but not judged. 'Check' is what fabricbench check against this baseline answers: ok, worse, "
                     "or cannot judge (a worse point held because of the host, or nothing judgeable).")
    rows = []
    for r in ctx.runs:
        if r is base:
            continue
        comp = ctx.comparison(r)
        rows.append([r.name, str(len(comp.flagged("worse"))), str(len(comp.flagged("better"))),
                     str(sum(1 for _s, p in comp.points if p.verdict in ("no significant difference", "below threshold", "isolated", "host changed", "host busy"))),
                     str(sum(1 for _s, p in comp.points if p.significant is None)), check_verdict(comp).status,
                     words.summary(comp, base.name, r.name)])
    section.add(Table([Column("Run", align="left"), Column("Worse", "points"), Column("Better", "points"),
                       Column("Not called different", "points"), Column("Not judged", "points"),
                       Column("Check", align="left"), Column("Summary", align="left")], rows))
    for r in ctx.runs:
        if r is base:
            continue
        comp = ctx.comparison(r)
        sub = Section(f"comparison-{r.index}", f"{r.name} against {base.name}")
        if comp.comparability.differences:
            labels = ", ".join(d.label for d in comp.comparability.differences)
            sub.add(Notice(f"The runs differ in {labels}: any of these can explain a difference "
                           "(the configuration section has the values).", "warning"))
        for caution in cautions(comp.comparability):
            sub.add(Notice(f"Caution: {caution}.", "warning"))
        if comp.judged_series:
            sub.add(BulletList([f"{s.title}: {words.series_summary(s, base.name, r.name)}" for s in comp.judged_series]))
        elif not comp.series:
            sub.add(Paragraph("No common points to compare."))
        if comp.single_valued:
            sub.add(_single_table(comp, base.name, r.name))
            line = words.cannot_judge(comp)
            sub.add(Notice(line[0].upper() + line[1:] + ".", "warning"))
        note = words.noise_note(comp)
        if note:
            sub.add(Paragraph(note) if comp.noise_from == "history" else Notice(note, "warning"))
        if words.host_note(comp):
            sub.add(Notice(words.host_note(comp), "warning"))
        flagged = comp.flagged("worse") + comp.flagged("better")
        if flagged:
            sub.add(Paragraph("Points called different:"),
                    BulletList([describe_point(s, p).replace("B is", f"{r.name} is") for s, p in flagged[:40]]))
            if len(flagged) > 40:
                sub.add(Paragraph(f"... and {len(flagged) - 40} more (fabricbench compare {base.run.id} {r.run.id} lists them all)."))
        if comp.mismatches:
            sub.add(Paragraph(mismatch_paragraph(comp.mismatches)))
        section.subsections.append(sub)
    return section


def _single_table(comp, a_name: str, b_name: str) -> Table:
    """The figures measured once on each side, side by side (the table ``fabricbench compare`` prints)."""
    rows = []
    for s, p in comp.single_valued:
        r = single_row(s, p)
        big = abs(r["improvement"] or 0.0) >= comp.options.min_effect  # smaller changes get no word
        way = r["direction"] if r["direction"] in ("better", "worse") and big or r["direction"] == "within resolution" else ""
        rows.append([r["name"], r["unit"], numbers.number(r["a"]), numbers.number(r["b"]),
                     Cell(percent(None if r["change"] is None else 100.0 * r["change"], signed=True), way), way])
    return Table([Column("Figure", align="left"), Column("Unit", align="left"), Column(a_name, "value in Unit"),
                  Column(b_name, "value in Unit"), Column("Change", "%"),
                  Column(f"{b_name} is", align="left")], rows,
                 caption=f"Measured once on each side ({len(rows)} figures)")
