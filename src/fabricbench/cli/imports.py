"""``fabricbench import``: other tools' output files as runs in the results database."""
from __future__ import annotations

import os
from typing import List, Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import (
    console,
    json_option,
    label_option,
    main,
    parse_tags,
    pass_state,
    print_json,
    tag_option,
)
from fabricbench.importers import MODULES, import_file, store_parsed


@main.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--format", "fmt", type=click.Choice(MODULES), help="The tool that wrote the files (default: detected from content).")
@click.option("--allow-truncated", is_flag=True,
              help="Import what a cut-off file holds (a killed run); the run is marked interrupted.")
@label_option
@tag_option
@json_option
@pass_state
def import_files(state, files: Tuple[str, ...], fmt: Optional[str], allow_truncated: bool, label: Optional[str],
                 tags: Tuple[str, ...], as_json: bool) -> None:
    """Import results files of OSU, IMB, HPCC, perftest, mpiGraph, NCCL-tests or iperf3.

    Each FILE becomes one run. Units are converted to the project's (bandwidth in
    decimal MB/s) and each conversion is recorded. All files are read before anything
    is stored: a broken file stops the import with one message naming it and its line,
    and the database is left as it was.
    """
    tag_map = parse_tags(tags)
    parsed = [import_file(path, format=fmt, allow_truncated=allow_truncated) for path in files]
    store = state.store
    results: List[dict] = []
    for item in parsed:
        run = store_parsed(store, item, label=label, tags=tag_map)
        results.append({
            "file": item.path,
            "format": item.format,
            "tool": item.tool,
            "tool_version": item.tool_version,
            "run": run.id,
            "uuid": run.uuid,
            "status": run.status,
            "measurements": len(item.measurements),
            "benchmarks": item.benchmarks(),
            "unit_conversions": item.conversions,
            "warnings": item.warnings,
        })
    if as_json:
        print_json(results)
        return
    table = Table(title=f"Imported into {store.where}", title_justify="left")
    for column in ("run", "file", "format", "points", "benchmarks", "converted"):
        table.add_column(column, justify="right" if column in ("run", "points") else "left")
    for r in results:
        benches = r["benchmarks"]
        shown = ", ".join(benches[:6]) + (f", ... ({len(benches)})" if len(benches) > 6 else "")
        table.add_row(str(r["run"]), os.path.basename(r["file"]), r["format"] + (" (interrupted)" if r["status"] != "complete" else ""),
                      str(r["measurements"]), shown, ", ".join(r["unit_conversions"]) or "-")
    console.print(table)
    for r in results:
        for warning in r["warnings"]:
            console.print(f"[yellow]note:[/] {r['file']}: {warning}", highlight=False)
