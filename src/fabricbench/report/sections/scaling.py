"""Application scaling: time (or figure of merit) per scale, speedup, efficiency, fabric against fabric, model.

``build(ctx)`` adds the section to any report over runs holding ``scale`` measurements (from
``fabricbench scale`` or ``import-scaling``), from the analysis (fitted models included) its
caller made of ``series_of_runs`` (``Given.scaling``). ``scaling_section(analysis)`` builds the same
section from an ``analysis.scaling.StudyAnalysis`` (``fabricbench scaling-report`` uses it),
and ``scaling_tables(analysis)`` / ``model_lines(analysis)`` give its tables and sentences to
the text and Markdown outputs, so every output shows the same figures.

The caller reads the report options ``scaling_baseline`` (a scale, default the smallest) and
``scaling_threshold`` (default 0.7) when present.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from fabricbench.analysis import scaling as sc
from fabricbench.analysis.direction import direction_word
from fabricbench.report.words.models import format_model
from fabricbench import numbers as f
from fabricbench.report.model import BulletList, Cell, Column, Figure, Notice, Paragraph, Section, Table
from fabricbench.report.words.scaling import threshold_note
from fabricbench import numbers

ORDER = 70
BENCHMARKS = {"scale"}


fmt = f.number  # measured values
num = f.exact  # scales: 16 nodes, 0.5
ratio_text = f.ratio


def _direction(s: sc.ScalingSeries) -> str:
    if s.metric in ("time", "latency"):
        return direction_word(s.metric)
    return "higher is better" if s.higher_is_better else "lower is better"


def series_caption(sa: sc.SeriesAnalysis) -> str:
    s = sa.series
    mode = "weak scaling" if s.weak else "strong scaling"
    base = f"baseline {num(sa.baseline)} {s.axis}" if sa.baseline is not None else "no baseline value"
    run = f" (run {s.run_id})" if s.run_id is not None and s.name != f"run {s.run_id}" else ""
    unit = f" ({s.unit})" if s.unit else ""
    return f"{s.name}{run}: {s.metric}{unit}, {_direction(s)}; {mode}, {base}"


def series_table(sa: sc.SeriesAnalysis, threshold: float) -> Table:
    s = sa.series
    unit = s.unit or None
    other_axis = "ranks" if s.axis == "nodes" else "nodes"
    columns = [
        Column(s.axis.capitalize()),
        Column(other_axis.capitalize()),
        Column("n"),
        Column(f"Mean {s.metric}", unit),
        Column("+- 95% CI", unit, secondary=True),
        Column("Stdev", unit, secondary=True),
        Column("Min", unit, secondary=True),
        Column("Max", unit, secondary=True),
        Column("Speedup"),
        Column("Ideal", secondary=True),
        Column("Efficiency"),
        Column("Failed", secondary=True),
    ]
    rows = []
    for p, e in zip(s.points, sa.efficiency):
        other = p.ranks if s.axis == "nodes" else p.nodes
        eff = Cell("-")
        if e.efficiency is not None:
            eff = Cell(f.fixed(e.efficiency), "worse" if e.efficiency < threshold else "")
        rows.append(
            [
                num(p.scale),
                num(other),
                str(p.n),
                fmt(p.mean),
                fmt(p.ci_half) if p.ci_half is not None else "-",
                fmt(p.stdev),
                fmt(p.min),
                fmt(p.max),
                Cell(f.fixed(e.speedup), "worse" if e.speedup < 1 else "") if e.speedup is not None else "-",
                f.fixed(e.ideal),
                eff,
                Cell(str(p.failed), "warn" if p.failed else "muted"),
            ]
        )
    notes = []
    if any(p.n == 1 for p in s.points if p.mean is not None):
        notes.append("n = 1: a single value, no confidence interval.")
    return without_empty_columns(Table(columns, rows, caption=series_caption(sa), notes=notes))


def without_empty_columns(table: Table) -> Table:
    """The table without the columns no row has a value in ('-' everywhere: one repetition has no spread)."""
    cells = table.cells()
    keep = [i for i in range(len(table.columns)) if not cells or any(row[i].text not in ("-", "") for row in cells)]
    if len(keep) == len(table.columns):
        return table
    table.columns = [table.columns[i] for i in keep]
    table.rows = [[row[i] for i in keep] for row in table.rows]
    return table


def comparison_table(analysis: sc.StudyAnalysis, tuning: Sequence[str] = ()) -> Optional[Table]:
    """Relative performance of every compared pair; `tuning`: the tuning variables the runs differ in."""
    if not analysis.comparisons:
        return None
    axis = analysis.series[0].series.axis if analysis.series else "scale"
    metric = analysis.comparisons[0].metric
    unit = next((sa.series.unit for sa in analysis.series if sa.series.metric == metric), "")
    columns = [
        Column("Group", align="left"),
        Column("A (reference)", align="left"),
        Column("B", align="left"),
        Column(axis.capitalize()),
        Column(f"A {metric}", unit or None),
        Column(f"B {metric}", unit or None),
        Column("B is x times faster"),
        Column("B % faster"),
        Column("Time saved"),
        Column("Significant", align="left"),
    ]
    timed = metric == "time"  # time saved is a time's figure; a figure of merit has no such column
    rows = []
    for c in analysis.comparisons:
        group = ", ".join(f"{k}={v}" for k, v in c.group.items()) or "-"
        for p in c.points:
            style = "" if p.ratio is None else ("better" if p.ratio > 1 else "worse" if p.ratio < 1 else "")
            rows.append(
                [
                    Cell(group),
                    Cell(c.a),
                    Cell(c.b),
                    num(p.scale),
                    fmt(p.a_mean),
                    fmt(p.b_mean),
                    Cell(ratio_text(p.ratio), style),
                    Cell(f.percent(p.percent_faster, signed=True), style),
                    f.percent(p.time_saved) if timed else None,
                    Cell("no spread recorded", "muted") if p.significant is None else ("yes" if p.significant else Cell("no", "muted")),
                ]
            )
    by = analysis.comparisons[0].compare_by
    caption = f"Relative performance by {by}" if by else "Relative performance against the first series"
    if tuning:
        caption += f"; the runs differ in {', '.join(tuning)}"
    if not timed:
        columns.remove(columns[8])
        rows = [[c for i, c in enumerate(row) if i != 8] for row in rows]
    notes = [
        "x times faster = A/B for times, B/A for a figure of merit where higher is better; % faster = (x - 1) * 100.",
        "Significant: Welch's t-test at 5% when both points have repetitions.",
    ]
    return without_empty_columns(Table(columns, rows, caption=caption, notes=notes))


def model_table(analysis: sc.StudyAnalysis) -> Table:
    pct = numbers.share(analysis.threshold)
    columns = [
        Column("Series", align="left"),
        Column("Model", align="left"),
        Column("Leave-one-out SMAPE", "%"),
        Column("Adj. R^2"),
        Column(f"Below {pct} efficiency: measured at"),
        Column(f"Below {pct} efficiency: predicted at"),
    ]
    rows = []
    for sa in analysis.series:
        m = sa.model
        t = sa.threshold
        axis = sa.series.axis
        predicted = f"{t.predicted_at} {axis} ({f.number(t.predicted_scale)})" if t.predicted_at is not None else (threshold_note(t, sa.series) or "-")
        rows.append(
            [
                Cell(sa.series.name),
                Cell(format_model(m) if m else sa.model_note, "" if m else "muted"),
                fmt(m.cv_smape) if m and m.cv_smape is not None else "-",
                f.fixed(m.adj_r2, 4) if m else "-",
                f"{num(t.measured_scale)} {axis}" if t.measured_scale is not None else "-",
                Cell(predicted, "" if t.predicted_at is not None else "muted"),
            ]
        )
    notes = [
        "Model t(p) = c0 + c1 * p^i * log2(p)^j (Extra-P's form, one term), chosen among "
        "i in {-1, -2/3, -1/2, -1/3, 0, 1/3, 1/2, 2/3, 1, 3/2, 2}, j in {0, 1, 2} and the constant "
        "by leave-one-out cross-validation over the means; needs 3 or more scales.",
    ]
    return without_empty_columns(Table(columns, rows, caption="Scaling model and efficiency threshold", notes=notes))


def scaling_tables(analysis: sc.StudyAnalysis, runs: Sequence[Any] = (), names: Sequence[str] = (),
                   full: bool = True) -> List[Table]:
    """Per series, the relative performance, the models; with the runs (store.Run) also the
    configuration they disclose, the tuning variables they differ in marked (``full=False``: only
    the items that differ, for an 80-column terminal)."""
    from fabricbench.analysis.studies import tuning_differences

    tables = [series_table(sa, analysis.threshold) for sa in analysis.series]
    comp = comparison_table(analysis, list(tuning_differences(runs)) if runs else ())
    if comp is not None:
        tables.append(comp)
    tables.append(model_table(analysis))
    disclosed = disclosure_table(runs, names, full) if runs else None
    if disclosed is not None:
        tables.append(disclosed)
    return tables


def disclosure_table(runs: Sequence[Any], names: Sequence[str], full: bool = True) -> Optional[Table]:
    """Seed 003's full configuration disclosure: one row per item, one column per run; an item
    whose value differs between the runs (a swept tuning variable, a link rate) is marked."""
    from fabricbench.analysis.studies import disclosure

    rows, same = [], 0
    for item, values in disclosure(runs):
        differs = len(set(values)) > 1
        if not (differs or full):
            same += 1
            continue
        rows.append([Cell(item + (" (differs)" if differs else ""), "warn" if differs else "")]
                    + [Cell(v, "warn" if differs else "") for v in values])
    if not rows:
        return None if full else Table([Column("Configuration", align="left")], [[Cell("the same in every series")]],
                                       caption="What differs between the series' configurations")
    columns = [Column("Configuration", align="left")] + [Column(n, align="left") for n in names]
    notes = ["tuning: every --mca and -x setting of the launch line and the MPI environment recorded."]
    if same:
        notes.append(f"{same} more items are the same in every series (the HTML or Markdown report lists them).")
    caption = "The configuration of every series, as recorded with its run" if full else \
        "What differs between the series' configurations"
    return Table(columns, rows, caption=caption, notes=notes)


def model_lines(analysis: sc.StudyAnalysis) -> List[str]:
    """One sentence per series: the model with its errors, and where efficiency drops below the threshold."""
    out = []
    for sa in analysis.series:
        s, t = sa.series, sa.threshold
        text = f"{s.name}: "
        text += format_model(sa.model, errors=True) if sa.model else sa.model_note
        parts = []
        if t.measured_scale is not None:
            parts.append(f"measured below {numbers.share(t.threshold)} at {num(t.measured_scale)} {s.axis}")
        if t.predicted_at is not None:
            parts.append(f"model predicts efficiency below {numbers.share(t.threshold)} from {t.predicted_at} {s.axis}")
        elif sa.model is not None and threshold_note(t, s):
            parts.append(threshold_note(t, s))
        if parts:
            text += "; " + "; ".join(parts)
        out.append(text + ".")
    return out


def failure_lines(analysis: sc.StudyAnalysis) -> List[str]:
    out = []
    for sa in analysis.series:
        for fail in sa.series.failures:
            rep = f"repetition {fail.repetition}" if fail.repetition is not None else "a repetition"
            out.append(f"{sa.series.name}: {num(fail.scale)} {sa.series.axis}, {rep}: {fail.reason}")
    return out


def figures(analysis: sc.StudyAnalysis, plot_format: str = "svg") -> List[Figure]:
    from fabricbench.report.plots import scaling as ps

    metric = analysis.series[0].series.metric if analysis.series else "time"
    out = [
        Figure("scaling-value", "Time per scale" if metric == "time" else "Figure of merit per scale",
               ps.value_plot(analysis, plot_format), plot_format,
               alt="mean value per scale with 95% confidence intervals and the fitted model"),
        Figure("scaling-speedup", "Speedup", ps.speedup_plot(analysis, plot_format), plot_format,
               alt="speedup against scale with the ideal line"),
        Figure("scaling-efficiency", "Parallel efficiency", ps.efficiency_plot(analysis, plot_format), plot_format,
               alt="parallel efficiency against scale with the threshold"),
    ]
    rel = ps.relative_plot(analysis, plot_format)
    if rel is not None:
        out.append(Figure("scaling-relative", "Relative performance", rel, plot_format,
                          alt="relative performance bars at each scale"))
    return out


INTRO = (
    "Efficiency is relative to the baseline scale N0: for times, strong scaling "
    "E = N0*t(N0) / (N*t(N)) and weak scaling E = t(N0)/t(N); for a figure of merit where higher "
    "is better, E = (f(N)/N) / (f(N0)/N0). Speedup = E * N/N0. Means come with 95% confidence "
    "intervals (Student's t); failed repetitions are listed and left out."
)


def scaling_section(analysis: sc.StudyAnalysis, plot_format: str = "svg", plots: bool = True,
                    runs: Sequence[Any] = (), names: Sequence[str] = ()) -> Section:
    section = Section("scaling", "Application scaling", intro=INTRO)
    tables = scaling_tables(analysis, runs, names)
    section.add(*tables[: len(analysis.series)])
    if plots and any(p.mean is not None for sa in analysis.series for p in sa.series.points):
        section.add(*figures(analysis, plot_format))
    section.add(*tables[len(analysis.series):])
    section.add(Paragraph(" ".join(model_lines(analysis))))
    failures = failure_lines(analysis)
    if failures:
        section.add(Notice(f"{len(failures)} failed repetition(s), left out of the statistics:", "warning"), BulletList(failures))
    return section


def study_report(analysis: sc.StudyAnalysis, names: Sequence[str], plot_format: str = "svg", plots: bool = True,
                 runs: Sequence[Any] = ()):
    """A report holding only this study's section (what `fabricbench scaling-report` writes)."""
    import datetime as _dt
    from types import SimpleNamespace

    from fabricbench import __version__
    from fabricbench.report.model import Report

    return Report(
        title="fabricbench scaling report",
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        runs=[SimpleNamespace(name=n) for n in names],
        sections=[scaling_section(analysis, plot_format, plots=plots, runs=runs, names=names)],
    )


def series_of_runs(runs: List[Any]) -> List[sc.ScalingSeries]:
    """Scaling series of loaded runs (store.RunData) that hold `scale` measurements."""
    out = []
    for lr in runs:
        items = [m for m in lr.measurements if m.benchmark == sc.BENCHMARK]
        if not items:
            continue
        study = sc.study_of(lr.run)
        metric = study.get("primary_metric") if study.get("primary_metric") in sc.metrics_in(items) else None
        out.append(sc.build_series(items, lr.name, metric=metric, weak=study.get("mode") == "weak", run_id=lr.run.id, tags=lr.run.tags))
    return out


def build(ctx):
    """The scaling section from the analysis the caller made of the runs' series (``Given.scaling``:
    ``analysis.scaling.analyse`` over ``series_of_runs``; its text when they could not be analysed)."""
    analysis = ctx.given.scaling
    if analysis is None:
        return None
    if isinstance(analysis, str):
        return Section("scaling", "Application scaling").add(Notice(analysis, "warning"))
    scaled = [lr for lr in ctx.runs if any(m.benchmark == sc.BENCHMARK for m in lr.measurements)]
    return scaling_section(analysis, ctx.plot_format, runs=[lr.run for lr in scaled], names=[lr.name for lr in scaled])
