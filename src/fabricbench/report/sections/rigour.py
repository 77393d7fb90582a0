"""Rigour check: the report's runs against the rules of scientific benchmarking that stored
data can show (``analysis.lint``, the same as ``fabricbench lint``), with how to fix each finding."""
from __future__ import annotations

from fabricbench.analysis.lint import RULES, lint
from fabricbench.report.model import Cell, Column, Paragraph, Section, Table
from fabricbench.report.words.lint import fix, what

ORDER = 88


def build(ctx):
    if not ctx.runs:
        return None
    result = lint(ctx.runs)
    section = Section("rigour", "Rigour check")
    section.intro = ("Checked against Hoefler and Belli, \"Scientific Benchmarking of Parallel Computing Systems\" "
                     "(SC15): the rules a results database can answer. Same as `fabricbench lint`.")
    names = {r.run.id: r.name for r in ctx.runs}
    if result.findings:
        rows = [[Cell(f"{f.rule} (rule {f.hb_rule})", "worse" if f.severity == "violation" else "warn"),
                 names.get(f.run.id, str(f.run.id)) if f.run is not None else "all", what(f), fix(f)]
                for f in result.findings]
        section.add(Table([Column("Rule", align="left"), Column("Run", align="left"), Column("What", align="left"),
                           Column("How to fix", align="left")], rows))
    passed = [f"{RULES[r][1]} (rule {RULES[r][0]})" for r in result.passed()]
    if passed:
        section.add(Paragraph("Passed: " + "; ".join(passed) + "."))
    return section
