"""``fabricbench transfer``: many readers copy one file from one xrootd server at once; raw TCP beside it.

Prints a table per reader count (per-reader and aggregate throughput against the
ceiling, fairness, start skew, time to last byte), then the findings; ``--json`` for
scripts. Exit status: 0 measured (failed reader copies are stored and reported; with
--strict 1 when any failed), 1 every reader copy failed or a server failed (the rounds done
are kept, the run is failed), 2 could not start, 130 Ctrl-C (or SIGTERM).
"""
from __future__ import annotations

from typing import List, Tuple

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fabricbench.cli.app import console, err_console, json_option, label_option, main, parse_tags, pass_state, print_json, tag_option
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench import numbers

LAUNCHERS = ("lab", "hosts")


def _list(text: str, option: str, unique: bool = True) -> List[str]:
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not items:
        raise UsageError(f"{option} needs at least one value")
    return list(dict.fromkeys(items)) if unique else items


def _counts(text: str) -> List[int]:
    out = []
    for item in _list(text, "--readers"):
        try:
            out.append(int(item))
        except ValueError:
            raise UsageError(f"--readers {text}: reader counts are whole numbers, e.g. 1,2,4") from None
    return out


def _file_size(text: str) -> int:
    from fabricbench.suite import parse_size

    try:
        return parse_size(text)
    except UsageError:
        raise UsageError(f"--file-size {text}: use bytes or a K/M/G suffix (binary), e.g. 128M or 1G") from None


@main.command("transfer")
@click.option("--server", required=True, metavar="NODE", help="The node (lab: n1; hosts: a host name) that serves the file.")
@click.option("--readers", default="1,2,4", show_default=True, metavar="N,N,...",
              help="Reader counts: each round that many readers copy the file at the same moment.")
@click.option("--file-size", "file_size", default="1G", show_default=True, metavar="BYTES",
              help="Size of the file of random bytes (binary suffixes: 128M, 1G).")
@click.option("--protocol", "protocols", default="xrootd,tcp", show_default=True, metavar="LIST",
              help="xrootd (the file through xrdcp), tcp (a plain stream of the same size from memory: the "
                   "network+protocol-only baseline), or both.")
@click.option("--cache", "caches", default="warm", show_default=True, metavar="LIST",
              help="The server's copy of the file before each round: warm (read into the page cache), cold "
                   "(evicted with posix_fadvise), or both (warm,cold).")
@click.option("--repeat", type=click.IntRange(min=1, max=1000), default=3, show_default=True,
              help="Repetitions of every round; the tables show medians.")
@click.option("--launcher", type=click.Choice(LAUNCHERS), default="lab", show_default=True,
              help="lab: nodes of the lab that is up ($FABRICBENCH_LAB); hosts: host names (this one, or ssh).")
@click.option("--hosts", metavar="LIST", help="Reader nodes in order (lab default: every node but the server; hosts: required).")
@click.option("--link", metavar="RATE", help="hosts: the link rate of the hosts (e.g. 100gbit), for the goodput ceiling.")
@click.option("--data-dir", "data_dir", default="/var/tmp", show_default=True, metavar="DIR",
              help="Where the server keeps the run's file (removed at the end); on a disk for --cache cold.")
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS",
              help="Give up on a round's readers after this long (default: from the file size and the ceiling).")
@click.option("--strict", is_flag=True,
              help="Exit status 1 when any reader transfer failed (the run stays complete, its failures counted). "
                   "A run whose every transfer failed is failed, exit status 1, with or without it.")
@label_option
@tag_option
@json_option
@pass_state
def transfer_cmd(state, server, readers, file_size, protocols, caches, repeat, launcher, hosts, link, data_dir, timeout,
                 strict, label, tags: Tuple[str, ...], as_json: bool) -> None:
    """Many readers, one file server: throughput per reader and in aggregate against the server's link.

    Starts a real xrootd (its own config, data folder and file) on --server and, for
    each count in --readers, has that many readers on other nodes copy the same file
    at the same moment (xrdcp, output discarded); --protocol tcp streams the same bytes
    without the file layer. Every round is stored as it ends (a run of kind transfer);
    servers are stopped by pid at the end, also after Ctrl-C or a failed reader.
    """
    from fabricbench.lab import LabError
    from fabricbench.launch.nodes import host_nodes, lab_nodes
    from fabricbench.launch.procs import sigterm_as_ctrl_c
    from fabricbench.workflows.transfer import TransferCannotRun, TransferPlan, run_transfer

    plan = TransferPlan(
        server=server, readers=_counts(readers), file_size=_file_size(file_size),
        protocols=_list(protocols, "--protocol"), caches=_list(caches, "--cache"), repeat=repeat,
        reader_nodes=_list(hosts, "--hosts", unique=False) if hosts else [], data_dir=data_dir, timeout=timeout,
    )
    if launcher == "hosts":
        if not hosts:
            raise UsageError("--launcher hosts needs the reader hosts: --hosts h1,h2,...")
        nodes = host_nodes(link)
    else:
        if link:
            raise UsageError("--link is for --launcher hosts; the lab knows its link rates")
        try:
            nodes = lab_nodes()
        except LabError as exc:
            raise TransferCannotRun(str(exc)) from None
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True, disable=as_json) as bar:
        task = bar.add_task("starting the servers", total=plan.rounds())

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=what)

        # SIGTERM (timeout(1), a batch system) ends the study as Ctrl-C does: servers stopped, rounds kept.
        with sigterm_as_ctrl_c():
            outcome = run_transfer(state.store, nodes, plan, label=label, tags=parse_tags(tags), progress=update)
    if as_json:
        print_json({"run": outcome.run.id, "status": outcome.run.status, **outcome.summary.to_dict(),
                    "servers": [{k: v for k, v in s.items() if k != "log_tail"} for s in outcome.servers]})
    else:
        show(outcome)
    if strict and outcome.failed_transfers:
        n = outcome.failed_transfers
        raise FabricbenchError(f"--strict: {n} reader transfer{'s' if n != 1 else ''} of run {outcome.run.id} failed "
                               "(stored with the reason; the run is complete)")


def show(outcome) -> None:
    from fabricbench.report.sections.transfer import findings

    summary = outcome.summary
    run = outcome.run
    size = f"{numbers.count(summary.file_size)}-byte file" if summary.file_size else "file"
    console.print(f"run [bold]{run.id}[/] {run.status}: transfer of a {size} from {summary.server}", highlight=False)
    # One narrow table per protocol and cache state, so no number is ever cut on an 80-column terminal.
    for variant in dict.fromkeys((r.protocol, r.cache) for r in summary.rows):
        rows = [r for r in summary.rows if (r.protocol, r.cache) == variant]
        ceilings = {r.ceiling for r in rows}
        one_ceiling = len(ceilings) == 1
        title = f"{rows[0].label}: MB/s = 1e6 bytes/s, medians over {max(r.rounds for r in rows)} repetition(s)"
        if one_ceiling and rows[0].ceiling:
            title += f"; ceiling {numbers.number(rows[0].ceiling)} MB/s"
        table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False)
        headers = ["readers", "per\nreader", "aggregate", *([] if one_ceiling else ["ceiling"]), "of\nceiling",
                   "fairness", "skew\n(ms)", "last\nbyte (s)", "failed"]
        for header in headers:
            table.add_column(header, justify="right", no_wrap=True)
        for r in rows:
            skew = r.start_skew.median * 1e3 if r.start_skew.median is not None else None
            table.add_row(str(r.readers), numbers.number(r.per_reader.median), numbers.number(r.aggregate.median),
                          *([] if one_ceiling else [numbers.number(r.ceiling)]),
                          numbers.share(r.of_ceiling) if r.of_ceiling is not None else "-",
                          numbers.fixed(r.fairness.median, 3) if r.fairness.median is not None else "-", numbers.number(skew),
                          numbers.number(r.time_to_last_byte.median), f"{r.failed} of {r.transfers}" if r.failed else "0")
        console.print(table)
    for line in findings(summary):
        console.print(f"- {line}", highlight=False, soft_wrap=True)
    for r in summary.rows:
        for failure in r.failures:
            console.print(f"[yellow]failed:[/] {r.label}, {r.readers} readers, {failure}", highlight=False, soft_wrap=True)
    stopped = [s for s in outcome.servers if s.get("stopped")]
    if stopped:
        console.print("servers stopped: " + ", ".join(f"{s['server']} (pid {s['pid']})" for s in stopped),
                      style="dim", highlight=False, soft_wrap=True)
    console.print(f"see it with: fabricbench report {run.id} -o transfer.html", style="dim", highlight=False)
