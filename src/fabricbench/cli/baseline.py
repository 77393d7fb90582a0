"""`fabricbench baseline set NAME RUN [RUN...]` and `baseline list`: names for the runs later runs are checked against."""
from __future__ import annotations

from typing import Optional, Tuple

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json


def _runs_text(ids) -> str:
    return f"run {ids[0]}" if len(ids) == 1 else "runs " + ", ".join(map(str, ids))


@main.group()
def baseline() -> None:
    """Name runs as a baseline; `fabricbench check RUN --against NAME` compares against them."""


@baseline.command("set")
@click.argument("name")
@click.argument("runs", nargs=-1, required=True)
@click.option("--note", default=None, help="Why these runs are the baseline (e.g. 'after the March maintenance').")
@pass_state
def baseline_set(state, name: str, runs: Tuple[str, ...], note: Optional[str]) -> None:
    """Make RUNS (ids, uuids or 'last') the baseline called NAME, replacing what NAME stood for.

    Several runs of the same configuration (replicates) show how much runs vary by themselves:
    check then allows for that instead of estimating it from one run.
    """
    store = state.store
    previous = {b.name: b for b in store.baselines()}.get(name)
    b = store.set_baseline(name, list(runs), note=note)
    was = f" (was {_runs_text(previous.run_ids)})" if previous and previous.run_ids != b.run_ids else ""
    console.print(f"baseline '{b.name}' = {_runs_text(b.run_ids)}{was}", highlight=False)


@baseline.command("list")
@json_option
@pass_state
def baseline_list(state, as_json: bool) -> None:
    """The baselines, with their runs."""
    store = state.reader
    found = store.baselines()
    runs = {b.name: [store.get_run(i) for i in b.run_ids] for b in found}
    if as_json:
        print_json([dict(b.to_dict(), runs=[{"id": r.id, "label": r.label, "tags": r.tags, "created": r.created}
                                             for r in runs[b.name]]) for b in found])
        return
    if not found:
        console.print("no baselines yet; set one with: fabricbench baseline set NAME RUN", highlight=False)
        return
    t = Table(title=f"baselines in {store.where}", title_justify="left")
    for col in ("name", "runs", "labels", "tags", "set (UTC)", "note"):
        t.add_column(col, overflow="fold")
    for b in found:
        rs = runs[b.name]
        labels = ", ".join(dict.fromkeys(r.label or "" for r in rs))
        tags = ", ".join(dict.fromkeys(" ".join(f"{k}={v}" for k, v in sorted(r.tags.items())) for r in rs))
        t.add_row(*[Text(x) for x in (b.name, ", ".join(map(str, b.run_ids)), labels, tags, b.created.replace("T", " ")[:19],
                                      b.note or "")])
    console.print(t)
