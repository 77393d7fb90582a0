"""`fabricbench study site`: latency and bandwidth, HPCC and many-reader file transfer on one page (seed 002)."""
from __future__ import annotations

import shlex
from typing import Optional, Tuple

import click

from fabricbench.cli.app import console, pass_state
from fabricbench.errors import UsageError


def say(text: str) -> None:
    """One line of a study's progress (a long line wraps, never cut)."""
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def study_store(state, output: str, fabrics: Tuple[str, ...], report_of: Optional[str]):
    """A study command's store, once its report can be written and --report comes without --fabric."""
    from fabricbench.report.files import check_output

    check_output(output)
    store = state.store
    if report_of and fabrics:
        raise UsageError("--report rebuilds a stored study's report: give it without --fabric")
    return store


@click.command("site")
@click.option("--fabric", "fabrics", multiple=True, metavar="NAME:LAB_SPEC",
              help="A fabric as a lab shape, e.g. ge:100mbit (one or more; default lab:1gbit).")
@click.option("--nodes", type=click.IntRange(min=2), default=3, show_default=True,
              help="Lab nodes: the first serves the file, the others read it; MPI runs on the first two.")
@click.option("--readers", default="1,2", show_default=True, metavar="N,N,...", help="Reader counts of the file transfer.")
@click.option("--file-size", "file_size", default="64M", show_default=True, metavar="BYTES",
              help="Size of the file the readers copy (binary suffixes: 64M, 1G).")
@click.option("--n", "n", type=click.IntRange(min=1), help="HPL problem size N of HPCC (default: from memory).")
@click.option("--nb", type=click.IntRange(min=1), help="HPL block size NB.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Repetitions of every part (engine launches, HPCC runs, transfer rounds).")
@click.option("--time-budget", type=click.FloatRange(min=0.001), default=0.05, show_default=True, metavar="SECONDS",
              help="The engine's time budget per message size.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop a part after this long (failed).")
@click.option("--lab-name", default="fbsite", show_default=True, help="Name of the lab the study brings up (and down).")
@click.option("--workdir", type=click.Path(file_okay=False), help="Folder for HPCC's work folders (default: ./fabricbench-results).")
@click.option("--report", "report_of", metavar="STUDY", help="Only write the report of a stored study (its id).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="site.html", show_default=True,
              help="The study's report (HTML).")
@pass_state
def study_site(state, fabrics: Tuple[str, ...], nodes: int, readers: str, file_size: str, n: Optional[int],
               nb: Optional[int], repeat: int, time_budget: float, timeout: Optional[float], lab_name: str,
               workdir: Optional[str], report_of: Optional[str], output: str) -> None:
    """A site's interconnect on one page, in seed 002's form, on the lab.

    Per fabric: MPI latency and bandwidth between two nodes (the engine), HPCC on them, and
    a file served by one node (xrootd, and raw TCP beside it) to 1, 2, ... readers at once.
    Every run is stored; the HTML report has each part's table, figure and sentences with
    their verdicts, the conditions and the command that reproduces it.
    """
    from fabricbench.cli.transfer import _counts, _file_size
    from fabricbench.report.files import write_text
    from fabricbench.report.render import render_html
    from fabricbench.report.sections.study_site import site_report, summary_lines
    from fabricbench.workflows.study_site import SiteStudySpec, load_site, run_site_study

    store = study_store(state, output, fabrics, report_of)
    if report_of:
        data = load_site(store, report_of)
        reproduce = next((f["command"] for f in data["fabrics"].values() if f.get("command")), None) or "(not recorded)"
    else:
        fabrics = fabrics or ("lab:1gbit",)
        argv = ["fabricbench", "study", "site"]
        for f in fabrics:
            argv += ["--fabric", f]
        argv += ["--nodes", str(nodes), "--readers", readers, "--file-size", file_size, "--repeat", str(repeat),
                 "--time-budget", str(time_budget)]
        argv += ["--n", str(n)] if n else []
        argv += ["--nb", str(nb)] if nb else []
        argv += ["--lab-name", lab_name] if lab_name != "fbsite" else []
        reproduce = shlex.join(argv)
        spec = SiteStudySpec(fabric_texts=list(fabrics), nodes=nodes, n=n, nb=nb, readers=_counts(readers),
                             file_size=_file_size(file_size), repeat=repeat, time_budget=time_budget, timeout=timeout,
                             lab_name=lab_name, command=reproduce, workdir=workdir)
        outcome = run_site_study(store, spec, say=say)
        data = load_site(store, outcome.study)
        for failure in outcome.failures:
            say(f"failed: {failure}")
    report = site_report(data, reproduce)
    for line in summary_lines(report):
        say(line)
    write_text(output, render_html(report))
    say(f"site study {data['study']}: report written to {output}")
