"""`fabricbench scale`, `import-scaling` and `scaling-report`: application scaling studies."""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from fabricbench.cli.app import console, label_option, main, parse_tags, pass_state, print_json, safe_markup, tag_option
from fabricbench.cli.measure import build_layout
from fabricbench.cli.output import print_model_table
from fabricbench.cli.progress import progress as make_progress
from fabricbench.errors import UsageError
from fabricbench.launch import get_launcher, launcher_names
from fabricbench.numbers import duration


def _fmt_eta(seconds: Optional[float]) -> str:
    return "left: estimating" if seconds is None else f"left: ~{duration(seconds)}"


class ScaleProgress:
    """Point being run, repetitions done / total, failures, estimated time left."""

    def __init__(self, progress, repeat: int):
        self.progress = progress
        self.repeat = repeat
        self.task = None
        self.failed = 0

    def provenance_started(self) -> None:
        self.task = self.progress.add_task("collecting provenance", total=None, eta=_fmt_eta(None), note="")

    def repetition_started(self, point, repetition, done, total, eta_s) -> None:
        desc = f"{point.describe()}, repetition {repetition}/{self.repeat}"
        if self.progress.tasks and self.progress.tasks[0].total is None:
            self.progress.update(self.task, total=total)
        self.progress.update(self.task, description=desc, completed=done, eta=_fmt_eta(eta_s))

    def repetition_finished(self, point, repetition, result, done, total, eta_s) -> None:
        if not result.ok:
            self.failed += 1
            self.progress.console.print(
                f"[yellow]failed:[/] {safe_markup(point.describe())}, repetition {repetition}: {safe_markup(result.reason)}",
                highlight=False,
            )
        note = f"{self.failed} failed" if self.failed else ""
        self.progress.update(self.task, completed=done, eta=_fmt_eta(eta_s), note=note)


def _launcher_for(name: str, hostfile, hosts, mpirun_args):
    """A function giving the launcher of each scale (hosts resolved once: hostfile, --hosts or the lab)."""
    from fabricbench.workflows.scaling import layout_for

    if name not in launcher_names():
        raise UsageError(f"unknown launcher '{name}'; choose one of: {', '.join(launcher_names())}")
    base_layout = build_layout(None, hostfile, hosts, None, mpirun_args)
    base_layout.np = 1
    base = get_launcher(name, base_layout)
    resolved = list(base.layout.hosts)
    if not resolved and hostfile:
        from fabricbench.launch.mpirun import read_hostfile

        resolved = read_hostfile(hostfile)
    extra = list(base_layout.extra_args)

    def launcher_for(point):
        return get_launcher(name, layout_for(point, name, resolved, extra))

    return launcher_for


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--nodes", "nodes_text", metavar="LIST", help="Node counts, e.g. 1,2,4,8 (locally: N x ppn ranks on this host).")
@click.option("--ppn", type=click.IntRange(min=1), help="Ranks per node with --nodes (default 1).")
@click.option("--np-list", "np_text", metavar="LIST", help="Rank counts instead of node counts, e.g. 1,2,4.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Repetitions of every scale.")
@click.option("--time", "time_source", default="wall", show_default=True, metavar="wall|REGEX|none",
              help="Record the wall time of each launch, or seconds parsed from the output (first group of the last match), or no time.")
@click.option("--fom", metavar="REGEX", help="Figure of merit parsed from the output: first group of the last match, e.g. 'FOM: ([0-9.]+)'.")
@click.option("--fom-unit", default="", metavar="UNIT", help="Unit of the figure of merit, e.g. Mcells/s.")
@click.option("--higher-is-better/--lower-is-better", "higher_is_better", default=True, show_default=True,
              help="Direction of the figure of merit.")
@click.option("--weak", is_flag=True, help="Weak scaling (the problem grows with the scale): efficiency t(N0)/t(N).")
@label_option
@tag_option
@click.option("--launcher", default="mpirun", show_default=True, help="How ranks start: mpirun, srun, lab.")
@click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), help="Hostfile; --nodes N uses its first N hosts.")
@click.option("--hosts", help="Comma-separated host names; --nodes N uses the first N.")
@click.option("--mpirun-args", metavar="ARGS", help='Extra launcher arguments, e.g. "--mca btl tcp,self".')
@click.option("--timeout", type=click.FloatRange(min=0.1), metavar="SECONDS", help="Stop a repetition after this long and record it as failed.")
@click.option("--app", "app_name", metavar="NAME", help="A catalogued application (fabricbench app list) instead of '-- APP': "
              "its standard input, own time and figure of merit.")
@click.option("--size", type=click.IntRange(min=1), default=1, show_default=True, help="Problem size of --app.")
@click.option("--strict", is_flag=True, help="Exit status 1 when any repetition failed (the run stays complete, its "
              "failures counted). A study whose every repetition failed is failed, exit status 1, with or without it.")
@click.argument("app", nargs=-1, required=False, type=click.UNPROCESSED, metavar="-- APP [ARGS]...")
@pass_state
def scale(state, nodes_text, ppn, np_text, repeat, time_source, fom, fom_unit, higher_is_better, weak, label, tags,
          launcher, hostfile, hosts, mpirun_args, timeout, app_name, size, strict, app):
    """Run an application at several scales, repeatedly, and store a scaling study.

    Every repetition is stored as it finishes (wall time and/or the figure of merit, exit
    status); a failed one (non-zero exit, timeout, figure not found) is kept with its reason
    and left out of the averages. Ctrl-C keeps the finished repetitions (exit 130).

    \b
    Examples:
      fabricbench scale --nodes 1,2,4,8 --ppn 4 --repeat 3 --tag fabric=edr -- ./app input.dat
      fabricbench scale --np-list 1,2,4 --fom 'FOM: ([0-9.]+)' --fom-unit Mcells/s -- ./jacobi
      fabricbench scale --app lammps-lj --size 2 --launcher lab --nodes 1,2,4 --repeat 3
    """
    from fabricbench.workflows.scaling import StudySpec, parse_int_list, plan_points, run_study

    tag_map = parse_tags(tags)
    nodes = parse_int_list(nodes_text, "--nodes") if nodes_text else None
    np_list = parse_int_list(np_text, "--np-list") if np_text else None
    points = plan_points(nodes, ppn, np_list)
    time_choice = None if time_source.strip().lower() == "none" else ("wall" if time_source.strip().lower() == "wall" else time_source)
    case = _app_case(app_name, size, app, fom, time_source, tag_map)
    spec = StudySpec(
        app=list(app), points=points, repeat=repeat, time=time_choice, fom=fom, fom_unit=fom_unit,
        higher_is_better=higher_is_better, weak=weak, timeout=timeout, label=label, tags=tag_map, case=case,
    )
    launcher_for = _launcher_for(launcher, hostfile, hosts, mpirun_args)
    store = state.store
    with make_progress(
        console,
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}", style="cyan"),
        TextColumn("{task.fields[note]}", style="yellow"),
    ) as progress:
        try:
            outcome = run_study(store, spec, launcher_for, observer=ScaleProgress(progress, repeat))
        finally:
            if case is not None:
                case.cleanup()
    _print_study_summary(store, outcome.run.id)
    ok = outcome.done - outcome.failed
    console.print(
        f"scaling run [bold]{outcome.run.id}[/] complete: {ok} of {outcome.done} repetitions succeeded "
        f"at {len(points)} scales, stored in {safe_markup(store.where)}",
        highlight=False,
    )
    if outcome.failed:
        console.print(f"[yellow]{outcome.failed} failed repetition(s) are stored with their reasons and left out of the statistics[/]", highlight=False)
    console.print(f"see it with: fabricbench scaling-report {outcome.run.id}", highlight=False)
    if strict and outcome.failed:
        from fabricbench.errors import FabricbenchError

        raise FabricbenchError(f"--strict: {outcome.failed} of {outcome.done} repetitions of run {outcome.run.id} "
                               "failed (stored with their reasons; the run is complete)")


def _app_case(app_name, size, app, fom, time_source, tags):
    """The catalogued application of --app (its input folder made per scale), or None for '-- APP'."""
    if not app_name:
        if not app:
            raise UsageError("name the application: --app NAME (fabricbench app list) or '-- ./app args'")
        return None
    if app:
        raise UsageError("give --app NAME or '-- APP ARGS', not both")
    if fom or time_source.strip().lower() != "wall":
        raise UsageError("--app reads the application's own time and figure of merit; --time and --fom are for '-- APP'")
    from fabricbench.apps import get_recipe
    from fabricbench.workflows.app import AppCase

    recipe = get_recipe(app_name)
    tags.setdefault("app", recipe.name)
    return AppCase(recipe, size)


def _print_study_summary(store, run_id: int) -> None:
    from fabricbench.analysis import scaling as sc
    from fabricbench.report.sections import scaling as section

    try:
        data = store.load(run_id, benchmark=sc.BENCHMARK)
        series = sc.series_of_run(data.run, data.measurements)
        analysis = sc.analyse([series])
    except sc.ScalingAnalysisError:
        return
    print_model_table(section.series_table(analysis.series[0], analysis.threshold))


# ---- import -------------------------------------------------------------------------------


@main.command("import-scaling")
@click.argument("csv_file", type=click.Path(dir_okay=False), metavar="FILE.csv")
@label_option
@tag_option
@click.option("--fom-unit", default="", metavar="UNIT", help="Unit of a 'fom' column.")
@click.option("--higher-is-better/--lower-is-better", "higher_is_better", default=True, show_default=True,
              help="Direction of a 'fom' column.")
@click.option("--weak", is_flag=True, help="The numbers are a weak-scaling study.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
@pass_state
def import_scaling(state, csv_file, label, tags, fom_unit, higher_is_better, weak, as_json):
    """Import published or hand-measured scaling numbers from a CSV file.

    Columns: nodes and/or ranks, time (seconds) and/or fom, optional ppn, repetition, n,
    stdev, label; any other column is a tag (fabric, case, ...). Every (label, tags) group
    becomes one run. A malformed row stops the import with its line; nothing is stored.
    """
    from fabricbench.importers.scaling_csv import import_scaling_csv

    if not Path(csv_file).is_file():
        raise UsageError(f"{csv_file}: no such file")
    runs = import_scaling_csv(
        state.store, csv_file, label=label, tags=parse_tags(tags), fom_unit=fom_unit,
        higher_is_better=higher_is_better, weak=weak, command=" ".join(shlex.quote(a) for a in sys.argv),
    )
    if as_json:
        print_json([{"id": r.id, "uuid": r.uuid, "label": r.label, "tags": r.tags} for r in runs])
        return
    for r in runs:
        tags_text = ", ".join(f"{k}={v}" for k, v in r.tags.items())
        console.print(f"run [bold]{r.id}[/]: {safe_markup(r.label or '-')} ({safe_markup(tags_text)})", highlight=False)
    ids = " ".join(str(r.id) for r in runs)
    console.print(f"imported {len(runs)} series from {csv_file}; see them with: fabricbench scaling-report {ids}",
                  highlight=False, markup=False)


# ---- report -------------------------------------------------------------------------------


@main.command("scaling-report")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]")
@click.option("--baseline", type=click.FloatRange(min=0, min_open=True), metavar="SCALE",
              help="Scale (nodes, or ranks) efficiencies are relative to. Default: the smallest measured.")
@click.option("--threshold", type=click.FloatRange(min=0, max=1, min_open=True), default=0.7, show_default=True,
              help="Efficiency below which a scale is flagged (and predicted by the model).")
@click.option("--metric", type=click.Choice(["time", "fom"]), help="Which metric to analyse when a run has both (default: the study's primary).")
@click.option("--axis", type=click.Choice(["nodes", "ranks"]), help="Scale axis (default: nodes when they vary, else ranks).")
@click.option("--compare-by", metavar="TAG", help="Compare series differing in this tag (default: fabric when the runs' fabrics differ).")
@click.option("--reference", metavar="VALUE", help="The reference series of comparisons: a value of --compare-by's tag (or a run name).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), help="Output format (default: text, html for -o *.html).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file (HTML with plots, or the chosen format); its folder must exist.")
@click.option("--plot-format", type=click.Choice(["svg", "png"]), default="svg", show_default=True)
@pass_state
def scaling_report(state, runs, baseline, threshold, metric, axis, compare_by, reference, fmt, output, plot_format):
    """Tables (mean +- 95% CI, speedup, efficiency, relative performance), the scaling model, and plots.

    RUN is a run id, uuid prefix or 'last'; give the runs of one study (e.g. one per fabric).
    """
    from fabricbench.analysis import scaling as sc
    from fabricbench.report import render_html, render_markdown
    from fabricbench.store.records import unique_names
    from fabricbench.report.files import check_output, write_text
    from fabricbench.report.sections import scaling as section

    if output:
        check_output(output)
    store = state.read(runs[0])
    if fmt is None:
        fmt = "html" if output and output.lower().endswith((".html", ".htm")) else "text"
    series = []
    loaded_runs = store.get_runs(runs)
    names = unique_names(loaded_runs)
    try:
        for run, name in zip(loaded_runs, names):
            data = store.load(run.id, benchmark=sc.BENCHMARK)
            series.append(sc.series_of_run(data.run, data.measurements, metric=metric, axis=axis, name=name))
        metrics = {s.metric for s in series}
        if len(metrics) > 1 and metric is None:
            raise UsageError(f"the runs record different metrics ({', '.join(sorted(metrics))}); choose one with --metric")
        analysis = sc.analyse(series, baseline=baseline, threshold=threshold,
                              compare_by=compare_by if compare_by else "auto", reference=reference)
    except sc.ScalingAnalysisError as exc:
        from fabricbench.report.words.scaling import error_text

        raise UsageError(error_text(exc)) from None

    def emit(text: str) -> None:
        if output:
            write_text(output, text)
        else:
            sys.stdout.write(text)

    if fmt == "json":
        from fabricbench.report.words.models import scaling_model_json
        from fabricbench.report.words.scaling import study_dict

        data = study_dict(analysis)
        for out, sa in zip(data["series"], analysis.series):
            out["model"] = scaling_model_json(sa.model) if sa.model else None
        emit(json.dumps(data, indent=2, default=str) + "\n")
        return
    if fmt == "markdown":
        emit(render_markdown(section.study_report(analysis, names, plots=False, runs=loaded_runs)))
        return
    if fmt == "html":
        if not output:
            raise UsageError("--format html needs -o FILE.html")
        emit(render_html(section.study_report(analysis, names, plot_format, runs=loaded_runs)))
        console.print(f"wrote {output}", highlight=False, markup=False)
        return
    for table in section.scaling_tables(analysis, loaded_runs, names, full=False):
        print_model_table(table)
        console.print()
    for line in section.model_lines(analysis):
        console.print(line, highlight=False, markup=False)
    failures = section.failure_lines(analysis)
    if failures:
        console.print(f"[yellow]{len(failures)} failed repetition(s), left out of the statistics:[/]", highlight=False)
        for f in failures:
            console.print(f"  {f}", highlight=False, markup=False)
    if output:
        write_text(output, render_markdown(section.study_report(analysis, names, plots=False)))
