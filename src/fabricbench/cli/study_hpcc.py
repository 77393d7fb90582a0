"""`fabricbench study hpcc-fabrics`: HPCC with a profile per test on two or more fabrics (seed 001)."""
from __future__ import annotations

import shlex
from typing import List, Optional, Tuple

import click

from fabricbench.cli.app import pass_state
from fabricbench.errors import UsageError


def reproduce_command(fabrics, np_, nodes, n, nb, repeat, launcher, hosts, hostfile, mpirun_args, lab_name,
                      hpcc_binary) -> str:
    """The command line that runs the same study again (what the report prints)."""
    argv: List[str] = ["fabricbench", "study", "hpcc-fabrics"]
    for f in fabrics:
        argv += ["--fabric", f]
    argv += ["--np", str(np_), "--nodes", str(nodes), "--repeat", str(repeat)]
    if n:
        argv += ["--n", str(n)]
    if nb:
        argv += ["--nb", str(nb)]
    if launcher != "lab":
        argv += ["--launcher", launcher]
        if hosts:
            argv += ["--hosts", hosts]
        if hostfile:
            argv += ["--hostfile", hostfile]
    elif lab_name != "fbhpcc":
        argv += ["--lab-name", lab_name]
    if mpirun_args:
        argv += ["--mpirun-args", mpirun_args]
    if hpcc_binary != "hpcc":
        argv += ["--hpcc", hpcc_binary]
    return shlex.join(argv)


@click.command("hpcc-fabrics")
@click.option("--fabric", "fabrics", multiple=True, metavar="NAME:SPEC",
              help="A fabric (two or more). On the lab NAME:LAB_SPEC, e.g. fdr:1gbit; with --launcher "
                   "srun|mpirun NAME or NAME:LAUNCHER_ARGS, e.g. tcp:'--mca btl tcp,self'.")
@click.option("--np", "np_", type=click.IntRange(min=2), default=2, show_default=True, help="MPI ranks of each HPCC run.")
@click.option("--nodes", type=click.IntRange(min=1), default=2, show_default=True, help="Lab nodes (the ranks spread over them).")
@click.option("--n", "n", type=click.IntRange(min=1), help="HPL problem size N (default: from the nodes' memory).")
@click.option("--nb", type=click.IntRange(min=1), help="HPL block size NB.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="HPCC runs per fabric; 3 or more let the report judge each difference.")
@click.option("--launcher", type=click.Choice(["lab", "srun", "mpirun"]), default="lab", show_default=True,
              help="Where the study runs: the lab (one shape per fabric), or a cluster.")
@click.option("--hosts", help="Comma-separated hosts on a cluster (mpirun).")
@click.option("--hostfile", type=click.Path(dir_okay=False), help="Hostfile on a cluster (mpirun).")
@click.option("--mpirun-args", default="", help="Extra launcher arguments for every run.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop an HPCC run after this long (failed).")
@click.option("--lab-name", default="fbhpcc", show_default=True, help="Name of the lab the study brings up (and down).")
@click.option("--hpcc", "hpcc_binary", default="hpcc", show_default=True, help="The HPCC binary.")
@click.option("--workdir", type=click.Path(file_okay=False), help="Folder for HPCC's work folders (default: ./fabricbench-results).")
@click.option("--report", "report_of", metavar="STUDY", help="Only write the report of a stored study (its id).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="hpcc-fabrics.html", show_default=True,
              help="The study's report (HTML).")
@pass_state
def study_hpcc_fabrics(state, fabrics: Tuple[str, ...], np_: int, nodes: int, n: Optional[int], nb: Optional[int],
                       repeat: int, launcher: str, hosts: Optional[str], hostfile: Optional[str], mpirun_args: str,
                       timeout: Optional[float], lab_name: str, hpcc_binary: str, workdir: Optional[str],
                       report_of: Optional[str], output: str) -> None:
    """HPCC with an MPI profile per test on two or more fabrics, in seed 001's form.

    Each fabric runs `hpcc --profile` --repeat times (on the lab, the lab is brought up with
    each fabric's link rate in turn and torn down at the end); every run is stored with its
    provenance. The HTML report has the HPCC results per fabric with the relative difference
    and its verdict, the paper's sentences computed from the runs, and per HPCC test each
    fabric's leading MPI call. On a small lab use a small problem, e.g. --n 2000.
    """
    from fabricbench.report.files import write_text
    from fabricbench.report.render import render_html
    from fabricbench.report.sections.study_hpcc import study_report, summary_lines
    from fabricbench.workflows.study_hpcc import HpccStudySpec, load_study, run_hpcc_study

    from fabricbench.cli.study_site import say, study_store

    store = study_store(state, output, fabrics, report_of)
    if report_of:
        data = load_study(store, report_of)
        first = next(r for runs in data["runs"].values() for r in runs)
        reproduce = first.get("command") or "(not recorded)"
    else:
        try:
            extra = shlex.split(mpirun_args)
        except ValueError as exc:
            raise UsageError(f"bad --mpirun-args: {exc}") from None
        reproduce = reproduce_command(fabrics, np_, nodes, n, nb, repeat, launcher, hosts, hostfile, mpirun_args,
                                      lab_name, hpcc_binary)
        spec = HpccStudySpec(fabric_texts=list(fabrics), np=np_, nodes=nodes, n=n, nb=nb, repeat=repeat,
                             launcher=launcher, hosts=[h for h in (hosts or "").split(",") if h], hostfile=hostfile,
                             launcher_args=extra, timeout=timeout, lab_name=lab_name, hpcc=hpcc_binary,
                             command=reproduce, workdir=workdir)
        outcome = run_hpcc_study(store, spec, say=say)
        data = load_study(store, outcome.study)
        for failure in outcome.failures:
            say(f"failed: {failure}")
    for line in summary_lines(data):
        say(line)
    write_text(output, render_html(study_report(data, reproduce)))
    say(f"study {data['study']}: runs {', '.join(str(r['id']) for rs in data['runs'].values() for r in rs)}; "
        f"report written to {output}")
