"""``fabricbench import``: other tools' output files as runs in the results database."""
from __future__ import annotations

import os
import re
from typing import Optional, Tuple

import click
from rich.markup import escape
from rich.table import Table

from fabricbench.cli.app import console, json_option, label_option, main, parse_tags, pass_state, print_json
from fabricbench.cli.app import tag_option
from fabricbench.importers import DEFAULT_MAX_BYTES, MODULES
from fabricbench.importers.ingest import ImportOptions, import_files


class ByteSize(click.ParamType):
    """A size in bytes: 1048576, 512K, 100M, 2G (powers of 1024)."""

    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)i?[bB]?\s*", str(value))
        if not m:
            self.fail(f"{value!r} is not a size (e.g. 4096, 512K, 100M, 2G)", param, ctx)
        return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")


def _hosts(ctx, param, value: Optional[str]):
    if value is None:
        return []
    hosts = [h.strip() for h in value.split(",")]
    if not all(hosts):
        raise click.BadParameter("give host names separated by commas, e.g. node01,node02")
    return hosts


@main.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--format", "fmt", type=click.Choice(MODULES), help="The tool that wrote the files (default: detected from content).")
@click.option("--allow-truncated", is_flag=True,
              help="Import what a file whose last line is cut off holds; the run is marked interrupted.")
@click.option("--ranks", type=click.IntRange(min=1), help="The job's rank count, for files that do not say it "
              "(OSU collectives, multi_lat); without it an unknown count stays unknown.")
@click.option("--hosts", callback=_hosts, metavar="A,B,...", help="The hosts the job ran on, for files that do not say.")
@click.option("--ppn", type=click.IntRange(min=1), help="Ranks per host; with --hosts and no --ranks, ranks = hosts x ppn.")
@click.option("--max-message-size", type=ByteSize(), metavar="BYTES",
              help="The largest message size the runs were asked for (OSU's -m); an OSU table that stops below it "
                   "is stored as interrupted. Default: each OSU program's own default.")
@click.option("--max-file-size", type=ByteSize(), default=DEFAULT_MAX_BYTES, show_default="1G", metavar="BYTES",
              help="Refuse files larger than this (e.g. 4G).")
@click.option("--again", is_flag=True, help="Store files whose content was imported before (detected by digest).")
@label_option
@tag_option
@json_option
@pass_state
def import_files_command(state, files: Tuple[str, ...], fmt: Optional[str], allow_truncated: bool, ranks: Optional[int],
                         hosts, ppn: Optional[int], max_message_size: Optional[int], max_file_size: int, again: bool,
                         label: Optional[str], tags: Tuple[str, ...], as_json: bool) -> None:
    """Import results of OSU, IMB, HPCC, perftest, mpiGraph, NCCL-tests, iperf3 (-J), NetPIPE or mpiP.

    Each FILE becomes one run (an mpiP report a run of kind profile). Units are converted to
    the project's (bandwidth in decimal MB/s) and each conversion is recorded. The files are
    stored in one transaction: a broken file stops the import with one message naming it and
    its line, and nothing of any file is stored. A run that stopped early (no end marker, or
    an OSU table short of its largest size) is stored as interrupted, with a note. A file
    imported before (same content) is reported and skipped unless --again.
    """
    options = ImportOptions(format=fmt, allow_truncated=allow_truncated, max_bytes=max_file_size, again=again,
                            label=label, tags=parse_tags(tags), ranks=ranks, hosts=hosts, ppn=ppn,
                            max_message_size=max_message_size)
    store = state.store
    results = import_files(store, list(files), options)
    if as_json:
        print_json(results)
        return
    stored = [r for r in results if r["status"] != "duplicate"]
    if stored:
        table = Table(title=f"Imported into {escape(store.where)}", title_justify="left")
        for column in ("run", "file", "format", "points", "ranks", "benchmarks", "converted"):
            table.add_column(column, justify="right" if column in ("run", "points", "ranks") else "left")
        for r in stored:
            benches = r["benchmarks"]
            shown = ", ".join(benches[:6]) + (f", ... ({len(benches)})" if len(benches) > 6 else "")
            fmt_text = r["format"] + (" (interrupted)" if r["status"] != "complete" else "")
            table.add_row(str(r["run"]), escape(os.path.basename(r["file"])), fmt_text, str(r["measurements"]),
                          "?" if r["ranks"] is None else str(r["ranks"]), shown, ", ".join(r["unit_conversions"]) or "-")
        console.print(table)
    for r in results:
        name = escape(r["file"])
        if r["status"] == "duplicate":
            console.print(f"[yellow]skipped:[/] {name}: {escape(r['message'])}", highlight=False)
            continue
        if r["status"] != "complete":
            console.print(f"[yellow]interrupted:[/] {name}: {escape(r['message'] or '')}", highlight=False)
        for warning in r["warnings"]:
            console.print(f"[yellow]note:[/] {name}: {escape(warning)}", highlight=False)
