"""HPCC summary: the seven HPC Challenge tests side by side across runs, with '% better' vs the baseline.

Reads HPCC results (benchmark ``hpcc``, one measurement per summary key in ``params.test``)
and lays them out with ``analysis.hpcc.hpcc_table`` (the same table ``fabricbench hpcc``
prints): each test's headline figure and its companions, every run's value, and how much
better each run is than the baseline in the right direction for the figure ("EDR
outperforms FDR by 68% in PTRANS"; "ring latency is reduced by 51%"). Summary keys outside
the seven tests are listed after them, their direction from ``analysis.direction``.
"""
from __future__ import annotations

from fabricbench.analysis.direction import improvement, lower_is_better
from fabricbench.report.words.direction import describe
from fabricbench.analysis.hpcc import FIGURES, hpcc_table
from fabricbench.analysis.series import headline
from fabricbench.report.model import BulletList, Cell, Column, Paragraph, Section, Table
from fabricbench.report.plots import bar_plot, run_color
from fabricbench import numbers

ORDER = 65
BENCHMARKS = {"hpcc"}
BAR_LIMIT = 900.0  # % better: past 10x the bar stops and says the factor


def _pct_cell(pct):
    return Cell(numbers.improvement_pct(pct), "" if pct is None else ("better" if pct > 0 else "worse" if pct < 0 else ""))


def build(ctx):
    hpcc = {r.index: [m for m in r.measurements if m.benchmark == "hpcc"] for r in ctx.runs}
    if not any(hpcc.values()):
        return None
    base = ctx.baseline
    ordered = [base] + [r for r in ctx.runs if r is not base]
    others = ordered[1:]
    table_rows = hpcc_table([(r.name, hpcc[r.index]) for r in ordered])

    cols = [Column("HPCC test", align="left"), Column("Figure", align="left"), Column("Summary key", align="left"),
            Column("Unit", align="left"), Column("Better", align="left")]
    cols += [Column(r.name, "value in Unit") for r in ordered]
    cols += [Column(f"{r.name} vs {base.name}", "% better") for r in others]
    rows, findings, bars, cats = [], [], {r.index: [] for r in others}, []
    for row in table_rows:
        line = [row["title"], row["display"], row["key"], row["unit"], "higher" if row["higher_is_better"] else "lower"]
        line += [Cell(numbers.number(v), "better" if row["best"] == i and len(ordered) > 1 else "") for i, v in enumerate(row["values"])]
        line += [_pct_cell(p) for p in row["better_pct"][1:]]
        rows.append(line)
        cats.append(row["display"])
        for r, pct in zip(others, row["better_pct"][1:]):
            bars[r.index].append(pct)
            if pct is not None and abs(pct) >= 5:
                findings.append(f"{row['display']}: {describe(pct / 100.0, r.name)} than {base.name}")

    # Summary keys outside the seven tests' figures
    extra = {}
    for r in ordered:
        for m in hpcc[r.index]:
            key = str(m.params.get("test") or m.metric)
            if key not in FIGURES:
                extra.setdefault(key, {})[r.index] = m
    for key, by_run in extra.items():
        sample = next(iter(by_run.values()))
        base_m = by_run.get(base.index)
        line = ["Other", key, key, sample.unit, "lower" if lower_is_better(sample.metric) else "higher"]
        line += [numbers.number(headline(by_run[r.index])) if r.index in by_run else "" for r in ordered]
        for r in others:
            m = by_run.get(r.index)
            imp = improvement(headline(base_m), headline(m), sample.metric) if base_m is not None and m is not None else None
            line.append(_pct_cell(None if imp is None else imp * 100))
        rows.append(line)

    section = Section("hpcc-summary", "HPC Challenge summary")
    section.add(Paragraph("The seven HPCC tests (HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, communication "
                          "bandwidth and latency) side by side. '% better' is against the baseline run, in the right "
                          "direction for each figure (lower latency is better); the best run of each row is highlighted."))
    section.add(Table(cols, rows, caption="HPCC results"))
    if findings:
        section.add(Paragraph("Differences of 5% or more:"), BulletList(findings[:40]))
    if others and cats:
        groups = [(f"{r.name} vs {base.name}", bars[r.index], run_color(r.index)) for r in others]
        texts = [[numbers.improvement_pct(v) if v is not None else None for v in bars[r.index]] for r in others]
        res = bar_plot(cats, groups, f"HPCC: % better than {base.name}", "% better (positive = better)",
                       fmt=ctx.plot_format, max_groups=ctx.options.max_curves, limit=BAR_LIMIT, texts=texts)
        section.add(res.figure("hpcc-summary-better", f"HPCC: % better than {base.name}",
                               alt="HPCC percent better per test"))
    return section
