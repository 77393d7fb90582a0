"""``fabricbench health``: measure every pair of nodes (or analyse a stored all-pairs run) and name the culprits.

Prints the verdict first, then the findings and a per-node table; ``--json`` for
monitoring. Exit status: 0 healthy, 1 problems found, 2 the check could not run, so it
can gate a job or run from cron.
"""
from __future__ import annotations

import sys
from typing import Tuple

import click
from rich.table import Table

from fabricbench.cli.app import console, err_console, json_option, label_option, main, parse_tags, pass_state, print_json, tag_option
from fabricbench.cli.measure import build_layout, launch_options, make_launcher
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.numbers import number
from fabricbench.workflows.session import RunInterrupted
from fabricbench import numbers

NODE_TABLE_MAX = 64  # larger checks list the flagged and the slowest nodes only
EXIT_CANNOT_RUN = 2


def _size(text: str) -> int:
    from fabricbench.suite import parse_size

    return parse_size(text)


@main.command("health")
@launch_options
@click.option("--size", default="1M", show_default=True, metavar="BYTES",
              help="Bandwidth message size (a power of two: 256K, 1M, ...).")
@click.option("--window", type=click.IntRange(min=1), help="Messages per timed window (default: 16 MiB worth, 2 to 64).")
@click.option("--repetitions", type=click.IntRange(min=1, max=1000), default=3, show_default=True,
              help="Sweeps over all pairs; each pair's figure is the median over them.")
@click.option("--mode", type=click.Choice(["exchange", "pairs"]), default="exchange", show_default=True,
              help="exchange: each round every node sends to one and receives from another (mpiGraph); "
                   "pairs: N/2 disjoint pairs per round, one direction at a time.")
@click.option("--retest", "retest", type=click.IntRange(min=1), default=4, show_default=True, metavar="K",
              help="Measure again alone at least the K slowest pairs (plus every suspicious pair and the pairs of suspicious nodes).")
@click.option("--threshold", type=click.FloatRange(0.01, 0.99), default=0.75, show_default=True,
              help="Flag bandwidth below this share of what is expected (the median; for a link, what its ends do elsewhere).")
@click.option("--latency-threshold", type=click.FloatRange(0.01, 0.99), default=0.5, show_default=True,
              help="Flag latency above 1/this times what is expected (0.5: twice).")
@click.option("--asymmetry", type=click.FloatRange(0.01, 0.99), default=0.6, show_default=True,
              help="Flag a pair whose one direction is below this share of the other.")
@click.option("--floor", "floor_percent", type=click.FloatRange(0.1, 100), metavar="PCT",
              help="Also flag anything below PCT% of the fabric's link data rate (fabric from --tag fabric=KEY or detection).")
@click.option("--direction", type=click.Choice(["recv", "send"]), help="Bandwidth as timed by the receiver (default) or the sender.")
@click.option("--from-run", "from_run", metavar="RUN", help="Analyse a stored all-pairs run (e.g. an imported mpiGraph one) without measuring.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop the measurement after this long (exit status 2).")
@label_option
@tag_option
@json_option
@pass_state
def health_cmd(state, np, hostfile, hosts, ppn, launcher, mpirun_args, size, window, repetitions, mode, retest, threshold,
               latency_threshold, asymmetry, floor_percent, direction, from_run, timeout, label, tags: Tuple[str, ...],
               as_json: bool) -> None:
    """Check every link: measure all pairs of nodes, then name the bad nodes, links and asymmetric pairs.

    One rank per node: --launcher lab (every lab node), or --np N with --hostfile. The
    run is stored (kind health); --from-run RUN analyses a stored all-pairs run instead,
    e.g. one imported from mpiGraph. Exit status: 0 healthy, 1 problems found, 2 could not run.
    """
    from fabricbench.analysis.health_check import Thresholds, check
    from fabricbench.workflows.health import CheckPlan

    try:
        thresholds = Thresholds(threshold=threshold, latency_threshold=latency_threshold, asymmetry=asymmetry)
        size_bytes = _size(size)
        if from_run:
            if np or hostfile or hosts:
                raise UsageError("--from-run analyses a stored run: give no --np, --hostfile or --hosts with it")
            data = state.read(from_run).load(from_run)
            result = check(data.run, data.measurements, data.hosts, thresholds, direction=direction,
                           floor_percent=floor_percent, size=size_bytes if _given("size") else None)
        else:
            plan = CheckPlan(size=size_bytes, window=window, repetitions=repetitions, mode=mode, retest=retest)
            chosen = make_launcher(launcher, build_layout(np, hostfile, hosts, ppn, mpirun_args))
            run = _measure(state.store, chosen, plan, label, parse_tags(tags), timeout, as_json)
            data = state.store.load(run.id)
            result = check(data.run, data.measurements, data.hosts, thresholds, direction=direction,
                           floor_percent=floor_percent)
    except RunInterrupted:
        raise
    except FabricbenchError as exc:
        _cannot_run(str(exc), as_json)
        return
    _add_fabric_notes(state, result)
    if as_json:
        from fabricbench.report.words.health import result_dict

        print_json(result_dict(result))
    else:
        show(result)
    sys.exit(result.report.exit_status)


def _add_fabric_notes(state, result) -> None:
    """The cables the slow pairs share, from the newest fabric snapshot with routes (fabric scan --routes)."""
    from fabricbench.workflows.fabric import health_notes

    result.notes.extend(health_notes(state.store, result))


def _given(name: str) -> bool:
    ctx = click.get_current_context()
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _cannot_run(message: str, as_json: bool) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    if as_json:
        print_json({"healthy": None, "verdict": f"COULD NOT RUN: {message}", "exit_status": EXIT_CANNOT_RUN,
                    "error": message})
    sys.exit(EXIT_CANNOT_RUN)


def _measure(store, launcher, plan, label, tags, timeout, as_json):
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from fabricbench.cli.progress import progress as make_progress
    from fabricbench.workflows.health import run_check

    with make_progress(err_console, TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       disable=as_json) as progress:
        task = progress.add_task(f"checking {launcher.layout.np} nodes, all pairs", total=None)

        def update(done: int, planned: int) -> None:
            progress.update(task, completed=min(done, planned), total=planned)

        return run_check(store, launcher, plan, label=label, tags=tags, timeout=timeout, progress=update)


_fmt = number


_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def show(result) -> None:
    from fabricbench.analysis.health import host_order
    from fabricbench.report.words.health import evidence, notes, verdict_line

    report = result.report
    data = result.data
    colour = "bold green" if report.healthy else "bold red"
    console.print(f"[{colour}]{verdict_line(report)}[/]", highlight=False, soft_wrap=True)
    how = [f"run {result.run.id} ({result.run.kind})", f"{data.n} nodes"]
    if data.size:
        how.append(f"bandwidth at {numbers.count(data.size)} bytes, timed by the {'receiver' if data.direction == 'recv' else 'sender'}"
                   if data.direction else f"bandwidth at {numbers.count(data.size)} bytes")
    if data.mode:
        how.append(f"{data.mode} mode")
    th = report.thresholds
    how.append(f"thresholds: bandwidth < {numbers.share(th.threshold)}, latency > {numbers.fixed(1 / th.latency_threshold, 1)}x, "
               f"asymmetry < {numbers.share(th.asymmetry)} of the expectation")
    console.print("; ".join(how), style="dim", highlight=False, soft_wrap=True)

    if report.findings:
        table = Table(title="Findings", title_justify="left", show_lines=False)
        table.add_column("severity")
        table.add_column("kind")
        table.add_column("metric")
        table.add_column("nodes")
        table.add_column("evidence", overflow="fold")
        for f in report.findings:
            table.add_row(f"[{_STYLE.get(f.severity, '')}]{f.severity}[/]", f.kind, f.metric, ", ".join(f.nodes), evidence(f))
        console.print(table)
        if report.omitted:
            console.print(f"{report.omitted} more link/asymmetry findings not listed (see --json)", style="yellow")

    bw = report.summaries.get("bandwidth")
    lat = report.summaries.get("latency")
    flagged = {n for f in report.problems for n in f.nodes}
    order = host_order(report.nodes)
    if len(order) > NODE_TABLE_MAX and bw:
        worst = sorted(order, key=lambda i: min(bw.send.get(report.nodes[i], 0), bw.receive.get(report.nodes[i], 0)))
        keep = set(worst[:10]) | {i for i in order if report.nodes[i] in flagged}
        order = [i for i in order if i in keep]
    nodes = Table(title=f"Nodes (by host name){'; flagged and the 10 slowest' if len(order) < len(report.nodes) else ''}",
                  title_justify="left")
    nodes.add_column("node")
    if bw:
        nodes.add_column("send (MB/s)", justify="right")
        nodes.add_column("receive (MB/s)", justify="right")
        nodes.add_column("vs median", justify="right")
    if lat:
        nodes.add_column("latency (us)", justify="right")
    for i in order:
        name = report.nodes[i]
        row = [f"[bold red]{name}[/]" if name in flagged else name]
        if bw:
            s, r = bw.send.get(name), bw.receive.get(name)
            row += [_fmt(s), _fmt(r), numbers.share(min(s, r) / bw.median) if s and r and bw.median else "-"]
        if lat:
            row.append(_fmt(lat.send.get(name)))
        nodes.add_row(*row)
    console.print(nodes)
    if bw and bw.retested:
        console.print(f"{bw.retested} pairs were measured again alone (retest)", style="dim")
    for note in notes(result):
        console.print(f"[yellow]note:[/] {note}", highlight=False, soft_wrap=True)
