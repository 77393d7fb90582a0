"""`fabricbench app list|show|run` (the application catalogue) and `fabricbench study apps`."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import console, json_option, label_option, main, parse_tags, pass_state, print_json, safe_markup, tag_option
from fabricbench.cli.measure import build_layout, launch_options, make_launcher
from fabricbench.cli.output import print_model_table
from fabricbench.errors import UsageError
from fabricbench import numbers as f


@main.group("app")
def app_group() -> None:
    """Real applications with standard inputs: list, show, run (LAMMPS, Quantum ESPRESSO, OpenFOAM)."""


@app_group.command("list")
@json_option
def app_list(as_json: bool) -> None:
    """The catalogue: every application, its field, figure of merit and whether it is installed."""
    from fabricbench.apps import all_recipes

    recipes = all_recipes()
    if as_json:
        print_json([dict(r.describe(), installed=r.installed()) for r in recipes])
        return
    table = Table()
    for title in ("Name", "Field", "Figure of merit", "Package", "Installed"):
        table.add_column(title)
    for r in recipes:
        ok = r.installed()
        table.add_row(r.name, r.field, f"{r.fom.name} ({r.fom.unit}, {r.fom.direction})", r.package,
                      "yes" if ok else f"no: apt-get install {r.package}")
    console.print(table)


@app_group.command("show")
@click.argument("name")
@json_option
def app_show(name: str, as_json: bool) -> None:
    """What NAME runs, how --size scales it, what it communicates and what is parsed."""
    from fabricbench.apps import get_recipe

    r = get_recipe(name)
    info = dict(r.describe(), installed=r.installed())
    if as_json:
        print_json(info)
        return
    lines = [
        ("application", r.title), ("field", r.field), ("package", r.package),
        ("program", r.executable + ("" if info["installed"] else f" (not installed: apt-get install {r.package})")),
        ("figure of merit", f"{r.fom.name} ({r.fom.unit}, {r.fom.direction})"), ("--size", r.size_note),
        ("traffic", r.traffic), ("own output file", r.output_file),
    ]
    for key, value in lines:
        console.print(f"{key + ':':17} {value}", highlight=False, markup=False)
    console.print(f"run it with: fabricbench app run {r.name} --np 2 --size 1", highlight=False, markup=False)


@app_group.command("run")
@click.argument("name")
@launch_options
@click.option("--size", type=click.IntRange(min=1), default=1, show_default=True, help="Problem size (see 'app show NAME').")
@click.option("--profile", is_flag=True, help="Run the ranks under the MPI profiler and store the profile with the run.")
@click.option("--workdir", type=click.Path(file_okay=False), help="Keep the input and the application's output in this folder.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop the application after this long (run failed).")
@label_option
@tag_option
@json_option
@pass_state
def app_run(state, name, np, hostfile, hosts, ppn, launcher, mpirun_args, size, profile, workdir, timeout, label, tags, as_json):
    """Run application NAME once at --np ranks and store a run of kind `app`.

    Stored: the run time from MPI_Init to MPI_Finalize (what `predict` targets; the ranks run
    under the MPI profiler for it), the figure of merit, the application's own elapsed time and
    timers, the wall time of the launch, each with its resolution, provenance and, with
    --profile, the MPI profile (fabricbench show-profile RUN, fabricbench predict RUN).
    """
    from fabricbench.apps import get_recipe
    from fabricbench.analysis.app_figures import RUNTIME, coarse, headline_figure
    from fabricbench.workflows.app import AppSpec, run_app

    recipe = get_recipe(name)
    recipe.find()  # one line naming the package before anything else happens
    tag_map = parse_tags(tags)
    store = state.store
    the_launcher = make_launcher(launcher, build_layout(np, hostfile, hosts, ppn, mpirun_args))
    spec = AppSpec(recipe, size=size, timeout=timeout, profile=profile, workdir=Path(workdir) if workdir else None,
                   label=label, tags=tag_map)
    with console.status(f"running {recipe.name} at {the_launcher.layout.np} ranks, size {size}"):
        run, outcome = run_app(store, spec, the_launcher)
    r = outcome.result
    points = state.store.measurements(run.id)
    figures = {m.metric: m for m in points if "section" not in m.params}
    runtime = figures.get(RUNTIME)
    headline = headline_figure(points)
    if as_json:
        print_json({
            "run": run.id, "uuid": run.uuid, "app": recipe.name, "size": size, "ranks": the_launcher.layout.np,
            "nodes": the_launcher.node_count(), "fom": r.fom, "fom_name": recipe.fom.name, "fom_unit": recipe.fom.unit,
            "higher_is_better": recipe.fom.higher_is_better, "runtime_s": runtime.value if runtime else None,
            "time_s": r.elapsed_s, "wall_s": outcome.wall_s, "headline": headline.metric if headline else None,
            "resolution_s": {k: (m.detail or {}).get("resolution_s") for k, m in figures.items()},
            "timers": r.timers, "facts": r.facts, "profile": outcome.profile is not None and profile,
            "profile_note": outcome.profile_note,
        })
        return
    step = r.resolution.get("elapsed")
    own = f"own time {f.number(r.elapsed_s)} s"
    if coarse(r.elapsed_s, step):
        own += f" (its clock counts {f.number(step)} s steps: not a figure to compare)"
    lead = (f"run time [bold]{f.number(runtime.value)}[/] s (MPI_Init to MPI_Finalize, slowest rank); " if runtime
            else "no MPI_Init to MPI_Finalize time (the profiler is not built); ")
    console.print(f"{recipe.name} at {the_launcher.layout.np} ranks, size {size}: {lead}{recipe.fom.name} "
                  f"[bold]{f.number(r.fom)}[/] {recipe.fom.unit} ({recipe.fom.direction}); "
                  f"{own}, launch {f.number(outcome.wall_s)} s", highlight=False)
    if r.timers:
        from fabricbench.report.sections.apps import timer_table

        print_model_table(timer_table(r.timers, r.elapsed_s))
    if profile:
        console.print(safe_markup(outcome.profile_note or ""), highlight=False)
    console.print(f"stored as run [bold]{run.id}[/] in {safe_markup(state.store.where)}"
                  + (f"; see the profile with: fabricbench show-profile {run.id}" if outcome.profile and profile else ""),
                  highlight=False)


# ---- the study ---------------------------------------------------------------------------------


@main.group("study")
def study_group() -> None:
    """Studies in the published papers' form, run end to end."""


@study_group.command("apps")
@click.option("--fabric", "fabrics", multiple=True, required=True, metavar="NAME:LAB_SPEC",
              help="A fabric to study, as a lab shape: 'gige:1gbit', 'slow:link=100mbit,switches=2' (give two or more).")
@click.option("--apps", "apps_text", required=True, metavar="LIST", help="Applications, e.g. lammps-lj,lammps-eam,qe-si.")
@click.option("--nodes", "nodes_text", default="1,2,4", show_default=True, metavar="LIST", help="Node counts.")
@click.option("--ppn", type=click.IntRange(min=1), default=1, show_default=True, help="Ranks per node.")
@click.option("--size", type=click.IntRange(min=1), default=1, show_default=True, help="Problem size of every application.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Repetitions of every scale.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop a repetition after this long (failed).")
@click.option("--install", is_flag=True, help="Install missing applications with apt-get first (needs root).")
@click.option("--lab-name", default="fbapps", show_default=True, help="Name of the lab the study brings up (and down).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the study's report (HTML) to this file.")
@pass_state
def study_apps(state, fabrics: Tuple[str, ...], apps_text, nodes_text, ppn, size, repeat, timeout, install, lab_name, output):
    """Run applications at several node counts on two or more fabrics (the lab, one shape per fabric).

    The lab is brought up with each fabric's shape in turn; every application runs at every
    node count, --repeat times. The report shows each fabric's performance relative to the
    first (per node count), the time per fabric, x faster and the efficiency against the
    smallest scale.
    """
    from fabricbench.apps import parse_app_list
    from fabricbench.report.files import check_output
    from fabricbench.workflows.app_study import AppStudySpec, ensure_installed, parse_fabric, run_app_study
    from fabricbench.workflows.scaling import parse_int_list

    if output:
        check_output(output)
    spec = AppStudySpec(
        fabrics=[parse_fabric(text) for text in fabrics], recipes=parse_app_list(apps_text),
        nodes=parse_int_list(nodes_text, "--nodes"), ppn=ppn, size=size, repeat=repeat, timeout=timeout, lab_name=lab_name,
    )
    ensure_installed(spec.recipes, install=install, say=lambda text: console.print(text, highlight=False, markup=False))
    store = state.store

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False)

    outcome = run_app_study(store, spec, say=say)
    _print_study(store, outcome.run_ids)
    ids = " ".join(str(i) for i in outcome.run_ids)
    if output:
        from fabricbench.report import render_html
        from fabricbench.report.sections.apps import study_report

        from fabricbench.report.files import write_text

        from fabricbench.cli.studies import reproduce_command

        write_text(output, render_html(study_report([store.load(i) for i in outcome.run_ids], command=reproduce_command())))
        say(f"wrote {output}")
    say(f"study runs: {ids}; the full report: fabricbench report {ids} -o apps.html")


def _print_study(store, run_ids) -> None:
    from fabricbench.report.sections.apps import study_tables

    for table in study_tables([store.load(i) for i in run_ids]):
        print_model_table(table)
        console.print()


# The other studies attach themselves to study_group when their module is imported (one line each).
from fabricbench.cli import studies as _studies  # noqa: E402,F401
from fabricbench.cli.study_hpcc import study_hpcc_fabrics  # noqa: E402  (the study's own module)
study_group.add_command(study_hpcc_fabrics)
from fabricbench.cli.study_site import study_site  # noqa: E402  (the study's own module)
study_group.add_command(study_site)
