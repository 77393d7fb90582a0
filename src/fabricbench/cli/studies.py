"""`fabricbench study list` (the table of studies), `study osu-fabric` (seed 000) and
`study scaling-claims` (seed 003). `study apps` lives in cli/apps.py beside the application
catalogue; other studies attach their own module to ``study_group`` with one import line.
"""
from __future__ import annotations

import shlex
import sys
import textwrap
from dataclasses import asdict, dataclass
from typing import List, Optional, Sequence, Tuple

import click

from fabricbench.cli.app import console, json_option, pass_state, print_json
from fabricbench.cli.apps import study_group


@dataclass(frozen=True)
class Study:
    name: str
    seed: str
    paper: str
    produces: str


# The registry: one row per study, in seed order.
STUDIES = (
    Study("osu-fabric", "000",
          "Dell HPC Omni-Path Fabric: Supported Architecture and Application Study (Dell, 2016)",
          "OSU latency and bandwidth per fabric, the fabric manager's view (topology, link width and speed, error "
          "counters, subnet manager), applications relative to a baseline; one HTML page"),
    Study("hpcc-fabrics", "001",
          "HPCC performance on EDR vs FDR InfiniBand with MPI profiles (HPC Advisory Council)",
          "the seven HPCC tests per fabric side by side, an MPI profile per HPCC test"),
    Study("site", "002",
          "InfiniBand experiences at Forschungszentrum Karlsruhe (DESY Zeuthen, 2005)",
          "latency and bandwidth, HPCC, file transfer with many readers of one server; one report"),
    Study("scaling-claims", "003",
          "Intel Omni-Path Architecture Performance Scaling - The Real Numbers (Intel, 2017)",
          "efficiency against a normalised base, relative performance, the configuration disclosed, a tuning "
          "variable swept with each setting's verdict"),
    Study("apps", "004",
          "Comparing Cluster Interconnects: LS-DYNA Performance Benchmarks for GigE and DDR (Cisco)",
          "applications at several node counts per fabric: time, x faster, efficiency, every repetition"),
)


def reproduce_command() -> str:
    """The command line that ran this process, as a user would type it."""
    args = [a for a in sys.argv[1:]]
    return "fabricbench " + " ".join(shlex.quote(a) for a in args)


@study_group.command("list")
@json_option
def study_list(as_json: bool) -> None:
    """Name every study, its paper (seed) and what it produces."""
    available = set(study_group.commands)
    if as_json:
        print_json([dict(asdict(s), available=s.name in available) for s in STUDIES])
        return
    for s in STUDIES:
        mark = "" if s.name in available else "  (not in this version)"
        console.print(f"{s.name:<15} seed {s.seed}{mark}", highlight=False, markup=False)
        for label, text in (("paper", s.paper), ("produces", s.produces)):
            for line in textwrap.wrap(f"{label}: {text}", 78 - 4, initial_indent="    ", subsequent_indent="      "):
                console.print(line, highlight=False, markup=False)
    console.print("run one: fabricbench study NAME --help", highlight=False, markup=False)


# ---- seed 000 ------------------------------------------------------------------------------------


@study_group.command("osu-fabric")
@click.option("--fabric", "fabrics", multiple=True, metavar="NAME:LAB_SPEC[,ib=WxSPEED]",
              help="A fabric: a lab shape and the simulated InfiniBand fabric's width and speed, e.g. "
                   "'fast:1gbit,ib=4xEDR' (give two or more; default fast:1gbit,ib=4xEDR and slow:200mbit,ib=4xFDR).")
@click.option("--apps", "apps_text", default="lammps-lj", show_default=True, metavar="LIST",
              help="Applications run relative to the first fabric ('none': no applications).")
@click.option("--nodes", "nodes_text", default="1,2", show_default=True, metavar="LIST", help="Node counts of the applications.")
@click.option("--sizes", default="1:1M", show_default=True, metavar="MIN:MAX", help="Message sizes of latency and bandwidth.")
@click.option("--time-budget", type=click.FloatRange(min=0.001), default=0.05, show_default=True, metavar="SECONDS",
              help="The engine's time budget per point.")
@click.option("--repeat", type=click.IntRange(min=1), default=2, show_default=True,
              help="Launches of the engine and repetitions of each application per fabric.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop a run after this long (failed).")
@click.option("--lab-name", default="fbosu", show_default=True, help="Name of the lab (and simulated fabric) the study brings up and down.")
@click.option("--launcher", type=click.Choice(["lab", "mpirun", "srun"]), default="lab", show_default=True,
              help="lab: the emulated cluster; mpirun or srun: a real cluster, on --hosts / --hostfile, each --fabric "
                   "then NAME:LAUNCHER_ARGS, e.g. 'eth:--mca btl tcp,self' 'ib:--mca pml ucx'.")
@click.option("--hosts", "hosts_text", metavar="LIST", help="A cluster's hosts (comma-separated).")
@click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), help="A cluster's hostfile.")
@click.option("-o", "--output", default="osu-fabric.html", show_default=True, type=click.Path(dir_okay=False),
              help="The study's report (HTML).")
@pass_state
def study_osu_fabric(state, fabrics: Tuple[str, ...], apps_text, nodes_text, sizes, time_budget, repeat, timeout, lab_name,
                     launcher, hosts_text, hostfile, output):
    """Seed 000 on the lab: OSU latency and bandwidth, the fabric manager's view and applications per fabric.

    For each fabric the lab comes up at its link rate; the engine measures latency and bw between
    two nodes; a simulated InfiniBand fabric of the given width and speed is scanned with
    infiniband-diags; each application runs at every node count. One report holds it all, with
    the paper's sentences computed from the runs.
    """
    from fabricbench.apps import parse_app_list
    from fabricbench.report.files import check_output, write_text
    from fabricbench.report import render_html
    from fabricbench.cli.report import given_for
    from fabricbench.report.sections.study import finding_sentence, osu_fabric_options, osu_fabric_report, osu_findings_of
    from fabricbench.workflows.app_study import ensure_installed
    from fabricbench.errors import UsageError
    from fabricbench.workflows.osu_fabric import (DEFAULT_FABRICS, OsuFabricSpec, parse_cluster_fabric, parse_osu_fabric,
                                                  run_osu_fabric)
    from fabricbench.workflows.scaling import parse_int_list

    check_output(output)
    recipes = [] if apps_text.strip().lower() in ("", "none") else parse_app_list(apps_text)
    if launcher == "lab":
        chosen = [parse_osu_fabric(t) for t in (fabrics or DEFAULT_FABRICS)]
    elif not fabrics:
        raise UsageError("on a cluster give each fabric as --fabric NAME:LAUNCHER_ARGS, e.g. "
                         "--fabric 'eth:--mca btl tcp,self' --fabric 'ib:--mca pml ucx'")
    else:
        chosen = [parse_cluster_fabric(t) for t in fabrics]
    spec = OsuFabricSpec(fabrics=chosen, recipes=recipes, app_nodes=parse_int_list(nodes_text, "--nodes"), sizes=sizes,
                         time_budget=time_budget, repeat=repeat, app_repeat=repeat, timeout=timeout, lab_name=lab_name,
                         launcher=launcher, hosts=_cluster_hosts(launcher, hosts_text, hostfile))
    ensure_installed(spec.recipes, install=False, say=_say)
    store = state.store
    outcome = run_osu_fabric(store, spec, say=_say)
    findings = osu_findings_of({name: store.load(i) for name, i in outcome.engine_runs.items()})
    for finding in findings:
        for line in textwrap.wrap(finding_sentence(finding), 78, initial_indent="- ", subsequent_indent="  "):
            _say(line)
    command = reproduce_command()
    runs, options = store.load_runs(outcome.run_ids), osu_fabric_options()
    write_text(output, render_html(osu_fabric_report(runs, given_for(runs, options), command, findings, options,
                                                     fabric_views=_fabric_views(store, outcome.fabric_runs),
                                                     problems=outcome.problems)))
    ids = " ".join(str(i) for i in outcome.run_ids)
    _say(f"wrote {output}; runs {ids}")


# ---- seed 003 ------------------------------------------------------------------------------------


@study_group.command("scaling-claims")
@click.option("--tune", "tune_text", default="btl_tcp_eager_limit=4096,65536", show_default=True, metavar="NAME=V1,V2[,...]",
              help="The tuning variable and its settings: an MCA parameter (passed as --mca NAME V) or an "
                   "environment variable in capitals such as UCX_RNDV_THRESH (passed as -x NAME=V). The first "
                   "setting is the reference.")
@click.option("--apps", "apps_text", default="lammps-lj", show_default=True, metavar="LIST", help="Applications.")
@click.option("--nodes", "nodes_text", default="1,2,4", show_default=True, metavar="LIST",
              help="Node counts; the smallest is the normalised base of efficiency.")
@click.option("--link", default="1gbit", show_default=True, metavar="RATE", help="The lab's link rate.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Repetitions of every scale.")
@click.option("--size", type=click.IntRange(min=1), default=1, show_default=True, help="Problem size of every application.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop a repetition after this long (failed).")
@click.option("--lab-name", default="fbclaims", show_default=True, help="Name of the lab the study brings up (and down).")
@click.option("--launcher", type=click.Choice(["lab", "mpirun", "srun"]), default="lab", show_default=True,
              help="lab: the emulated cluster at --link; mpirun or srun: a real cluster, on --hosts / --hostfile.")
@click.option("--hosts", "hosts_text", metavar="LIST", help="A cluster's hosts (comma-separated); --nodes N uses the first N.")
@click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), help="A cluster's hostfile; --nodes N uses its first N hosts.")
@click.option("-o", "--output", default="scaling-claims.html", show_default=True, type=click.Path(dir_okay=False),
              help="The study's report (HTML).")
@pass_state
def study_scaling_claims(state, tune_text, apps_text, nodes_text, link, repeat, size, timeout, lab_name, launcher,
                         hosts_text, hostfile, output):
    """Seed 003 on the lab: efficiency against the smallest scale and a tuning variable's effect.

    Every application runs at every node count once per setting of the variable; the report
    shows efficiency, each setting's performance relative to the first with its verdict, and
    the full configuration of every series.
    """
    from fabricbench.apps import parse_app_list
    from fabricbench.cli.output import print_model_table
    from fabricbench.report import render_html
    from fabricbench.report.files import check_output, write_text
    from fabricbench.report.sections.scaling import scaling_tables
    from fabricbench.report.sections.study import claims_report
    from fabricbench.workflows.app_study import ensure_installed
    from fabricbench.workflows.scaling import parse_int_list
    from fabricbench.workflows.scaling_claims import ScalingClaimsSpec, parse_tuning, run_scaling_claims

    check_output(output)
    tuning = parse_tuning(tune_text)
    spec = ScalingClaimsSpec(tuning=tuning, recipes=parse_app_list(apps_text), nodes=parse_int_list(nodes_text, "--nodes"),
                             link=link, repeat=repeat, size=size, timeout=timeout, lab_name=lab_name, launcher=launcher,
                             hosts=_cluster_hosts(launcher, hosts_text, hostfile))
    ensure_installed(spec.recipes, install=False, say=_say)
    store = state.store
    outcome = run_scaling_claims(store, spec, say=_say)
    command = reproduce_command()
    runs, names, analysis = claims_analysis(store, outcome.run_ids, tuning.name, tuning.values[0])
    report = claims_report(runs, names, analysis, tuning.name, command)
    for table in scaling_tables(analysis, runs, names, full=False):
        if table.caption.startswith("Scaling model"):
            continue
        print_model_table(table)
        console.print()
    _print_head(report.sections[0])
    write_text(output, render_html(report))
    _say(f"wrote {output}; runs {' '.join(str(i) for i in outcome.run_ids)}")


def claims_analysis(store, run_ids: Sequence[int], variable: str, reference: Optional[str]):
    """(runs, names, StudyAnalysis) of a scaling-claims study, loaded from `store` and fitted here
    (``analysis.scaling.analyse``): the settings compared by the variable's tag."""
    from fabricbench.analysis import scaling as sc
    from fabricbench.store.records import unique_names

    runs = store.get_runs([str(i) for i in run_ids])
    names = unique_names(runs)
    series = []
    for run, name in zip(runs, names):
        data = store.load(run.id, benchmark=sc.BENCHMARK)
        series.append(sc.series_of_run(data.run, data.measurements, name=name, axis="nodes"))
    return runs, names, sc.analyse(series, compare_by=variable, reference=reference)


def _cluster_hosts(launcher: str, hosts_text, hostfile) -> List[str]:
    """The hosts of a cluster run (none for the lab, which brings its own)."""
    from fabricbench.errors import UsageError

    if launcher == "lab":
        if hosts_text or hostfile:
            raise UsageError("--hosts and --hostfile are for a cluster (--launcher mpirun or srun); the lab brings its own")
        return []
    if hostfile:
        from fabricbench.launch.mpirun import read_hostfile

        return list(read_hostfile(hostfile))
    return [h.strip() for h in (hosts_text or "").split(",") if h.strip()]


def _print_head(section) -> None:
    """A study's head section at 80 columns: its paragraphs, and its lists as '- ' items."""
    for block in section.blocks:
        items = getattr(block, "items", None)
        if items is None:
            for line in textwrap.wrap(getattr(block, "text", ""), 78):
                _say(line)
            continue
        for item in items:
            for line in textwrap.wrap(item, 78, initial_indent="- ", subsequent_indent="  "):
                _say(line)


def _say(text: str) -> None:
    console.print(text, highlight=False, markup=False)


__all__: List[str] = ["STUDIES", "Study", "study_list", "study_osu_fabric", "study_scaling_claims"]


def _fabric_views(store, fabric_runs) -> dict:
    """{fabric name: (snapshot, verdict)} for the study's report, judged as `fabric check` judges."""
    from fabricbench.workflows.fabric import judge_stored, load_snapshot

    views = {}
    for name, run_id in fabric_runs.items():
        run, snap = load_snapshot(store, run_id)
        views[name] = (snap, judge_stored(store, run, snap)[0])
    return views
