"""`fabricbench baseline set NAME RUN` and `baseline list`: names for runs that later runs are checked against."""
from __future__ import annotations

from typing import Optional

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json


@main.group()
def baseline() -> None:
    """Name a run as a baseline; `fabricbench check RUN --against NAME` compares against it."""


@baseline.command("set")
@click.argument("name")
@click.argument("run")
@click.option("--note", default=None, help="Why this run is the baseline (e.g. 'after the March maintenance').")
@pass_state
def baseline_set(state, name: str, run: str, note: Optional[str]) -> None:
    """Make RUN (id, uuid or 'last') the baseline called NAME, replacing what NAME pointed to."""
    store = state.store
    previous = {b.name: b for b in store.baselines()}.get(name)
    b = store.set_baseline(name, run, note=note)
    was = f" (was run {previous.run_id})" if previous and previous.run_id != b.run_id else ""
    console.print(f"baseline '{b.name}' = run {b.run_id}{was}", highlight=False)


@baseline.command("list")
@json_option
@pass_state
def baseline_list(state, as_json: bool) -> None:
    """The baselines, with their runs."""
    store = state.store
    found = store.baselines()
    runs = {b.name: store.get_run(b.run_id) for b in found}
    if as_json:
        print_json([dict(b.to_dict(), label=runs[b.name].label, tags=runs[b.name].tags, run_created=runs[b.name].created)
                    for b in found])
        return
    if not found:
        console.print("no baselines yet; set one with: fabricbench baseline set NAME RUN", highlight=False)
        return
    t = Table(title=f"baselines in {store.where}", title_justify="left")
    for col in ("name", "run", "label", "tags", "run date (UTC)", "set (UTC)", "note"):
        t.add_column(col, overflow="fold")
    for b in found:
        r = runs[b.name]
        tags = " ".join(f"{k}={v}" for k, v in sorted(r.tags.items()))
        t.add_row(*[Text(x) for x in (b.name, str(b.run_id), r.label or "", tags, r.created.replace("T", " ")[:19],
                                      b.created.replace("T", " ")[:19], b.note or "")])
    console.print(t)
