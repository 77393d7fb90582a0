"""Real applications: the study's relative-performance chart and tables (seeds 000 and 004), and
single application runs (``fabricbench app run``) with the application's own timers.

``study_tables`` / ``study_report`` give the same tables and chart to ``fabricbench study apps``
(terminal and HTML); ``timer_table`` is what ``app run`` prints.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis import apps as aa
from fabricbench import numbers as f
from fabricbench.report.model import Cell, Column, Figure, Paragraph, Section, Table

ORDER = 68
BENCHMARKS = {"app"}
TOP_TIMERS = 8

INTRO = (
    "Each application ran at every node count on every fabric (the first fabric is the reference). "
    "Relative performance is the fabric's performance divided by the reference's at the same node "
    "count (above 1: faster); x faster is the same ratio; efficiency is against the fabric's own "
    "smallest scale (strong scaling, from the figure of merit). The repetitions table below has "
    "every scale's statistics over its repetitions (n, mean, spread, 95% interval)."
)


def timer_table(timers: Dict[str, float], elapsed: Optional[float]) -> Table:
    """The application's own timers, largest first, with their share of its elapsed time."""
    rows = []
    for name, seconds in sorted(timers.items(), key=lambda kv: -kv[1])[:TOP_TIMERS]:
        share = f.percent(100.0 * seconds / elapsed) if elapsed else "-"
        rows.append([Cell(name), f.number(seconds), share])
    notes = [f"{len(timers) - TOP_TIMERS} more timers are stored with the run."] if len(timers) > TOP_TIMERS else []
    return Table([Column("Timer", align="left"), Column("Time", "s"), Column("Share of elapsed")], rows,
                 caption="The application's own timers", notes=notes)


def study_table(st: aa.AppStudy) -> Table:
    """Seed 004's table for one application: value per fabric, x faster, efficiency per fabric."""
    others = st.fabrics[1:]
    columns = [Column("Nodes"), Column("Ranks")]
    columns += [Column(fab, st.unit or None) for fab in st.fabrics]
    columns += [Column(f"{fab} x faster" if len(others) > 1 else "x faster") for fab in others]
    columns += [Column(f"Efficiency {fab}", secondary=True) for fab in st.fabrics]
    rows = []
    for r in st.rows:
        row: List[Any] = [f.exact(r.nodes), f.exact(r.ranks) if r.ranks is not None else "-"]
        row += [f.number(r.values.get(fab)) if r.values.get(fab) is not None else "-" for fab in st.fabrics]
        for fab in others:
            x = r.relative.get(fab)
            style = _ratio_style(x, r.significant.get(fab))
            tip = "" if r.significant.get(fab) is None else ("significant (Welch, 5%)" if r.significant[fab] else "not significant (Welch, 5%)")
            row.append(Cell(f.ratio(x), style, tip))
        row += [f.fixed(r.efficiency.get(fab)) if r.efficiency.get(fab) is not None else "-" for fab in st.fabrics]
        rows.append(row)
    direction = "higher is better" if st.higher_is_better else "lower is better"
    caption = f"{st.app}: {st.metric} ({st.unit}, {direction}) per fabric; reference {st.reference}"
    return Table(columns, rows, caption=caption,
                 notes=["x faster: the fabric's performance over the reference's at the same node count."])


def _ratio_style(x: Optional[float], significant: Optional[bool]) -> str:
    """Colour a ratio as a gain or a loss only when it reads as one: never a cell printed 1.00x
    (0.9996 is no loss), never a difference Welch's test calls not significant."""
    if x is None or significant is False or f.ratio(x) == f.ratio(1.0):
        return ""
    return "better" if x > 1 else "worse"


def repetitions_table(st: aa.AppStudy) -> Table:
    """Every (fabric, node count) of one application: its repetitions' n, mean, spread and interval."""
    rows = []
    for fab in st.fabrics:
        for r in st.rows:
            p = r.points.get(fab)
            if p is None:
                continue
            interval = f"{f.number(p.ci_low)} to {f.number(p.ci_high)}" if p.ci_low is not None and p.ci_high is not None else "-"
            rows.append([Cell(fab), f.exact(r.nodes), f.exact(p.ranks) if p.ranks is not None else "-", f.exact(p.n),
                         f.number(p.mean), f.number(p.stdev) if p.stdev is not None else "-",
                         f.number(p.min), f.number(p.max), Cell(interval), f.exact(p.failed)])
    columns = [Column("Fabric", align="left"), Column("Nodes"), Column("Ranks"), Column("n"),
               Column("Mean", st.unit or None), Column("Stdev", st.unit or None), Column("Min", st.unit or None),
               Column("Max", st.unit or None), Column("95% interval", align="left"), Column("Failed")]
    return Table(columns, rows, caption=f"{st.app}: every scale's repetitions ({st.metric})",
                 notes=["Stdev and the interval need two or more repetitions (--repeat)."])


def _figure(studies: Sequence[aa.AppStudy], plot_format: str) -> Optional[Figure]:
    from fabricbench.report.plots.apps import relative_chart

    data = relative_chart(studies, plot_format)
    if data is None:
        return None
    return Figure("apps-relative", "Relative performance per node count", data, plot_format,
                  caption="Relative performance per node count: each application's performance on the other fabric "
                          "over its performance on the reference (1.0 = the same; seed 000's chart).",
                  alt="bars of each application's performance on the other fabric relative to the reference, per node count")


def study_section(studies: Sequence[aa.AppStudy], plot_format: str = "svg", plots: bool = True) -> Section:
    section = Section("apps", "Applications on the fabrics", intro=INTRO)
    figure = _figure(studies, plot_format) if plots else None
    if figure is not None:
        section.add(figure)
    section.add(*[study_table(st) for st in studies])
    section.add(*[repetitions_table(st) for st in studies])
    lines = [f"{app}: on {fab} {f.fixed(x)} of the performance on the reference at {f.exact(n)} nodes"
             for app, fab, n, x in aa.slowdown_summary(studies) if x is not None]
    if lines:
        section.add(Paragraph("; ".join(lines) + "."))
    return section


def runs_table(runs: Sequence[Any]) -> Optional[Table]:
    """Single application runs: app, scale, figure of merit, run time (the headline: MPI_Init to
    MPI_Finalize, else an own time whose clock is fine enough), own time (with its clock's step
    when that is too coarse to compare), wall time, top timers."""
    from fabricbench.analysis.app_figures import coarse, headline_figure

    rows = []
    for lr in runs:
        items = [m for m in lr.measurements if m.benchmark == "app"]
        fom = next((m for m in items if m.metric == "fom"), None)
        if fom is None:
            continue
        by = {m.metric: m for m in items if m.metric in ("time", "wall")}
        timers = sorted(((m.params.get("section"), m.value) for m in items if m.metric == "timer" and m.value is not None),
                        key=lambda kv: -kv[1])[:3]
        elapsed = by["time"].value if "time" in by else None
        top = ", ".join(f"{k} {f.percent(100 * v / elapsed)}" for k, v in timers) if elapsed else "-"
        p = fom.params
        headline = headline_figure(items)
        own = f.number(elapsed) if elapsed is not None else "-"
        step = (by["time"].detail or {}).get("resolution_s") if "time" in by else None
        if elapsed is not None and coarse(elapsed, step):
            own = Cell(f"{own} ({f.number(step)} s clock)", "muted", title="read from a clock too coarse to compare runs by")
        rows.append([Cell(lr.name), Cell(str(p.get("app"))), f.exact(p.get("nodes")), f.exact(p.get("ranks")),
                     f.exact(p.get("size")), Cell(f"{f.number(fom.value)} {fom.unit}"),
                     f.number(headline.value) if headline is not None else "-", own,
                     f.number(by["wall"].value) if "wall" in by else "-", Cell(top)])
    if not rows:
        return None
    columns = [Column("Run", align="left"), Column("Application", align="left"), Column("Nodes"), Column("Ranks"),
               Column("Size"), Column("Figure of merit", align="left"), Column("Run time", "s"), Column("Own time", "s"),
               Column("Launch", "s"), Column("Largest timers (share of own time)", align="left", secondary=True)]
    return Table(columns, rows, caption="Application runs",
                 notes=["Run time: MPI_Init to MPI_Finalize of the slowest rank (the figure predictions target), "
                        "else the application's own time when its clock is fine enough; an own time read from a "
                        "coarse clock (OpenFOAM's whole-second ClockTime) shows the clock's step."])


def studies_of_runs(runs: Sequence[Any]) -> List[aa.AppStudy]:
    return aa.compare_apps(aa.series_of([(lr.run, lr.measurements) for lr in runs]))


def build(ctx):
    studies = [st for st in studies_of_runs(ctx.runs)]
    table = runs_table(ctx.runs)
    if not studies and table is None:
        return None
    section = study_section(studies, ctx.plot_format) if studies else Section("apps", "Applications")
    if table is not None:
        section.add(table)
    return section


# ---- what `fabricbench study apps` prints and writes ---------------------------------------------


def study_tables(runs: Sequence[Any]) -> List[Table]:
    """The study's tables over loaded runs (``store.RunData``)."""
    return [study_table(st) for st in studies_of_runs(runs)]


def study_report(runs: Sequence[Any], plot_format: str = "svg", command: Optional[str] = None):
    """A report over loaded runs (``store.RunData``) holding the study's head (findings,
    conditions, `command`) and its section (what `study apps -o FILE.html` writes)."""
    import datetime as _dt
    from types import SimpleNamespace

    from fabricbench import __version__
    from fabricbench.analysis.studies import conditions_of
    from fabricbench.report.model import Report
    from fabricbench.report.sections.study import study_head

    studies = studies_of_runs(runs)
    sentences = [f"{app}: on {fab} {f.ratio(x)} the performance of {st.reference} at {f.exact(n)} nodes"
                 for st in studies for app, fab, n, x in aa.slowdown_summary([st]) if x is not None]
    head = study_head("Study apps: applications on the fabrics", conditions_of([r.run for r in runs], fabric_of=aa.fabric_of),
                      command or "-", sentences=sentences)
    return Report(
        title="fabricbench application study",
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        runs=[SimpleNamespace(name=r.run.label or r.run.name) for r in runs],
        sections=[head, study_section(studies, plot_format)],
    )
