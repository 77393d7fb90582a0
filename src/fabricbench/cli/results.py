"""Looking at stored results: `runs`, `show`, `export`, and `db path` / `db migrate`."""
from __future__ import annotations

import csv
import io
import json
import sys
from collections import OrderedDict
from typing import Dict, List

import click
from rich.table import Table

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench.store import Measurement, Run, Store
from fabricbench.store.records import STAT_FIELDS


def _tags_text(tags: Dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(tags.items()))


def run_summary(store: Store, run: Run) -> Dict:
    hosts = run.provenance.get("hosts") or [h.hostname for h in store.hosts(run.id)]
    return {
        "id": run.id,
        "uuid": run.uuid,
        "created": run.created,
        "kind": run.kind,
        "label": run.label,
        "tags": run.tags,
        "ranks": run.ranks,
        "hosts": hosts,
        "status": run.status,
        "message": run.message,
        "points": store.count_measurements(run.id),
    }


@main.command("runs")
@click.option("--kind", help="Only runs of this kind (benchmark, import, profile, hpcc, scaling, health).")
@click.option("--tag", "tag_filter", multiple=True, metavar="KEY=VALUE", help="Only runs with this tag.")
@click.option("--last", type=click.IntRange(min=1), help="Only the last N runs.")
@json_option
@pass_state
def runs_cmd(state, kind, tag_filter, last, as_json):
    """List stored runs."""
    from fabricbench.cli.app import parse_tags

    store = state.store
    found = [run_summary(store, r) for r in store.list_runs(kind=kind, tags=parse_tags(tag_filter), limit=last)]
    if as_json:
        print_json(found)
        return
    table = Table(title=f"runs in {store.where}", title_justify="left")
    for col in ("id", "date (UTC)", "kind", "label", "tags", "ranks", "hosts", "points", "status"):
        table.add_column(col, overflow="fold")
    style = {"complete": "green", "failed": "red", "interrupted": "yellow", "running": "cyan"}
    for r in found:
        hosts = r["hosts"] or []
        host_text = ",".join(hosts) if len(hosts) <= 3 else f"{len(hosts)} hosts"
        table.add_row(
            str(r["id"]), r["created"].replace("T", " ")[:19], r["kind"], r["label"] or "", _tags_text(r["tags"]),
            str(r["ranks"] or ""), host_text, str(r["points"]), f"[{style.get(r['status'], '')}]{r['status']}[/]",
        )
    console.print(table)


def _param_columns(items: List[Measurement]) -> List[str]:
    """The size, and the other parameters whose value changes from row to row."""
    keys: "OrderedDict[str, None]" = OrderedDict()
    for m in items:
        for k in m.params:
            keys[k] = None
    varying = []
    for k in keys:
        values = {json.dumps(m.params.get(k), sort_keys=True) for m in items}
        if k == "size" and values != {"null"} or k != "ranks" and len(values) > 1:
            varying.append(k)
    return varying


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-2:
            return f"{value:.4g}"
        return f"{value:.2f}"
    return str(value)


def measurement_tables(items: List[Measurement]) -> List[Table]:
    """One table per (benchmark, metric), units in the headers."""
    groups: "OrderedDict[tuple, List[Measurement]]" = OrderedDict()
    for m in items:
        groups.setdefault((m.benchmark, m.metric, m.unit), []).append(m)
    tables = []
    for (bench, metric, unit), group in groups.items():
        params = _param_columns(group)
        ranks = {m.params.get("ranks") for m in group} - {None}
        title = f"{bench} — {metric}" + (f" ({', '.join(map(str, sorted(ranks)))} ranks)" if ranks else "")
        table = Table(title=title, title_justify="left")
        for p in params:
            table.add_column("size (B)" if p == "size" else p, justify="right")
        for stat in ("value", "min", "median", "p99", "max", "stdev"):
            table.add_column(f"{stat} ({unit})", justify="right")
        table.add_column("n", justify="right")
        for m in group:
            table.add_row(*[_fmt(m.params.get(p)) for p in params],
                          *[_fmt(getattr(m, s)) for s in ("value", "min", "median", "p99", "max", "stdev")], _fmt(m.n))
        tables.append(table)
    return tables


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--benchmark", help="Only this benchmark.")
@json_option
@pass_state
def show(state, run_ref, benchmark, as_json):
    """Show a run: its summary and a table per benchmark, units in the headers."""
    store = state.store
    run = store.get_run(run_ref)
    items = store.measurements(run.id, benchmark=benchmark)
    if as_json:
        print_json({"run": run.to_dict(), "measurements": [m.to_dict() for m in items]})
        return
    s = run_summary(store, run)
    console.print(f"[bold]run {run.id}[/] {run.label or ''}  {run.kind}  {run.status}  created {run.created}", highlight=False)
    if run.tags:
        console.print(f"tags: {_tags_text(run.tags)}", highlight=False)
    p = run.provenance
    facts = [f"{run.ranks or '?'} ranks", f"hosts: {', '.join(s['hosts']) or '?'}"]
    if p.get("mpi_library"):
        facts.append(f"MPI: {p['mpi_library']}")
    console.print("; ".join(facts), highlight=False)
    if run.message:
        console.print(f"[yellow]{run.message}[/]", highlight=False)
    console.print("Bandwidth is decimal MB/s (1 MB/s = 10^6 bytes/s).", style="dim")
    for table in measurement_tables(items):
        console.print(table)
    if not items:
        console.print("no measurements stored for this run")


def export_rows(items: List[Measurement]) -> List[Dict]:
    params = []
    for m in items:
        for k in m.params:
            if k not in params:
                params.append(k)
    rows = []
    for m in items:
        row = {"benchmark": m.benchmark, **{k: m.params.get(k) for k in params}, "metric": m.metric, "unit": m.unit}
        row.update({k: getattr(m, k) for k in STAT_FIELDS})
        rows.append(row)
    return rows


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@pass_state
def export(state, run_ref, fmt, output):
    """Export a run's measurements (CSV: one row per point; JSON: run, hosts and measurements)."""
    store = state.store
    run = store.get_run(run_ref)
    items = store.measurements(run.id)
    if fmt == "json":
        text = json.dumps(
            {"run": run.to_dict(), "hosts": [h.__dict__ for h in store.hosts(run.id)], "measurements": [m.to_dict() for m in items]},
            indent=2, default=str,
        ) + "\n"
    else:
        rows = export_rows(items)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["benchmark"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        text = buf.getvalue()
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
        console.print(f"wrote {len(items)} measurements of run {run.id} to {output}", highlight=False)
    else:
        sys.stdout.write(text)


@main.group()
def db():
    """The results database."""


@db.command("path")
@pass_state
def db_path(state):
    """Print where the database is."""
    click.echo(Store(state.url).where)


@db.command("migrate")
@pass_state
def db_migrate(state):
    """Upgrade the database schema to this fabricbench's version."""
    from fabricbench.store.schema import SCHEMA_VERSION

    store = Store(state.url)
    before = store.schema_version()
    store.prepare(migrate=True)
    if before is None:
        click.echo(f"created {store.where} at schema version {SCHEMA_VERSION}")
    elif before == SCHEMA_VERSION:
        click.echo(f"{store.where} is at schema version {SCHEMA_VERSION}; nothing to do")
    else:
        click.echo(f"migrated {store.where} from schema version {before} to {SCHEMA_VERSION}")
