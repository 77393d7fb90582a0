"""Looking at stored results: `runs`, `show`, `export`, and `db path` / `db migrate`."""
from __future__ import annotations

import difflib
import json
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING, Dict, List, Optional

import click
from rich.table import Table
from rich.text import Text

from fabricbench.analysis.precision import missed_precision, missed_share
from fabricbench.cli.app import NoDatabase, console, json_option, main, pass_state, print_json, safe_markup
from fabricbench.errors import UsageError
from fabricbench import numbers as fmt
from fabricbench.store import HOST_PROBE, Measurement, Run

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported when a command opens it, not for --help
    from fabricbench.store import Store

STATUS_STYLE = {"complete": "green", "failed": "red", "interrupted": "yellow", "running": "cyan"}
STATS = ("value", "min", "median", "p99", "max", "stdev")
PRECISION_MARK = " *"  # after a median whose 95% CI stayed wider than the point's --precision
SECONDARY_STATS = ("max", "stdev")  # with n, what a narrow terminal shows in a second table


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

    tags = parse_tags(tag_filter)
    try:
        store = state.reader
    except NoDatabase:
        if as_json:
            print_json([])
        else:
            console.print(f"no runs: {state.sqlite_file()} does not exist yet (nothing measured or imported there)",
                          highlight=False, markup=False)
        return
    found = [run_summary(store, r) for r in store.list_runs(kind=kind, tags=tags, limit=last)]
    if as_json:
        print_json(found)
        return
    table = Table(title=Text(f"runs in {store.where}"), title_justify="left")
    for col, justify in (("id", "right"), ("date (UTC)", "left"), ("kind", "left"), ("label", "left"), ("tags", "left"),
                         ("ranks", "right"), ("hosts", "left"), ("points", "right"), ("status", "left")):
        table.add_column(col, justify=justify, no_wrap=col == "date (UTC)")
    table.secondary = {5, 6}  # ranks and hosts: the second table of a narrow terminal
    for r in found:
        hosts = r["hosts"] or []
        host_text = ", ".join(hosts) if len(hosts) <= 3 else f"{len(hosts)} hosts"
        table.add_row(
            str(r["id"]), r["created"].replace("T", " ")[:19], r["kind"], Text(r["label"] or ""), Text(_tags_text(r["tags"])),
            str(r["ranks"] or ""), Text(host_text), str(r["points"]), Text(r["status"], style=STATUS_STYLE.get(r["status"], "")),
        )
    console.print(table)
    if not found:
        console.print("no runs match" if (kind or tags) else "no runs stored yet", highlight=False)


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


def _param_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt.size(value) if isinstance(value, int) else fmt.number(value)
    return value if isinstance(value, str) else json.dumps(value)


def measurement_tables(items: List[Measurement]) -> List[Table]:
    """One table per (benchmark, metric), units in the headers; the parameters are the key columns."""
    groups: "OrderedDict[tuple, List[Measurement]]" = OrderedDict()
    for m in items:
        groups.setdefault((m.benchmark, m.metric, m.unit), []).append(m)
    tables = []
    for (bench, metric, unit), group in groups.items():
        params = _param_columns(group)
        ranks = {m.params.get("ranks") for m in group} - {None}
        title = f"{bench} — {metric}" + (f" ({', '.join(map(str, sorted(ranks)))} ranks)" if ranks else "")
        table = Table(title=Text(title), title_justify="left")
        table.key_columns = max(1, len(params))
        stats = [s for s in STATS if any(getattr(m, s) is not None for m in group)]  # an import may have only values
        with_n = any(m.n is not None for m in group)
        for p in params:
            numeric = all(isinstance(m.params.get(p), (int, float, type(None))) for m in group)
            table.add_column("size (B)" if p == "size" else p, justify="right" if numeric else "left")
        for stat in stats:
            table.add_column(f"{stat} ({unit})", justify="right")
        if with_n:
            table.add_column("n", justify="right")
        table.secondary = {len(params) + i for i, s in enumerate(stats) if s in SECONDARY_STATS}
        if with_n:
            table.secondary.add(len(params) + len(stats))
        # A point that did not reach its --precision target is marked after its median; the
        # other rows get a blank in its place so the numbers stay aligned.
        marked = any(missed_precision(m) for m in group)
        for m in group:
            cells = [fmt.number(getattr(m, s)) for s in stats]
            if marked and "median" in stats:
                cells[stats.index("median")] += PRECISION_MARK if missed_precision(m) else " " * len(PRECISION_MARK)
            table.add_row(*[Text(_param_text(m.params.get(p))) for p in params],
                          *cells, *([fmt.count(m.n) if m.n is not None else ""] if with_n else []))
        tables.append(table)
    return tables


def _groups(items: List[Measurement]) -> List[List[Measurement]]:
    """The points of each table measurement_tables makes, in the same order."""
    groups: "OrderedDict[tuple, List[Measurement]]" = OrderedDict()
    for m in items:
        groups.setdefault((m.benchmark, m.metric, m.unit), []).append(m)
    return list(groups.values())


def _ceiling_of(store: Store, run: Run):
    """The run's bandwidth ceiling per direction (analysis.peaks.run_ceiling), None when unknown."""
    from fabricbench.analysis.peaks import run_ceiling

    return run_ceiling(run, store.hosts(run.id)).ceiling


def figure_notes(group: List[Measurement], ceiling) -> List[str]:
    """Under a table: which statistic is the figure of record (headlines, plots, verdicts), and every
    point with a shown figure above the physical ceiling, with the reason."""
    import textwrap

    from fabricbench.analysis.headlines import points_over_ceiling
    from fabricbench.analysis.record import DEFINED, MEAN_NO_CALLS, MEAN_ONLY, MEDIAN, RATE_ALL, figure_of_record

    said = {figure_of_record(m, with_ci=False).statistic for m in group if figure_of_record(m, with_ci=False)}
    words = {MEDIAN: "the median (value: the mean over iterations, OSU's comparable column)",
             RATE_ALL: "the rate over all iterations (the value column; median and p99: per window)",
             MEAN_NO_CALLS: "the mean (value): no per-call distribution recorded, the statistics are over rank averages",
             MEAN_ONLY: "the mean: no distribution recorded", DEFINED: "the value, as the benchmark defines it"}
    lines = [f"figure of record: {' / '.join(words[s] for s in (MEDIAN, RATE_ALL, MEAN_NO_CALLS, MEAN_ONLY, DEFINED) if s in said)}"] if said else []
    found = points_over_ceiling(group, ceiling.limit_MBps if ceiling is not None else None)
    if found:
        where = "; ".join(f"{fmt.binary_size(p.size) if p.size is not None else '-'} "
                          f"({', '.join(f'{e.statistic} {fmt.number(e.value)}' for e in p.excess if e.statistic in ('median', 'p99', 'max') or e is p.excess[0])})"
                          for p in found)
        link = ceiling.fabric.name if ceiling.fabric is not None else "the link"
        lines.append(f"! above the {fmt.number(found[0].ceiling_MBps)} MB/s that {link} can carry, not physical "
                     f"(a burst passed unshaped, or the traffic did not cross the link): {where}")
    return [w for line in lines for w in textwrap.wrap(line, 80, subsequent_indent="  ", break_long_words=False)]


def check_benchmark(run: Run, stored: List[str], benchmark: Optional[str]) -> None:
    """A --benchmark the run does not have is a usage error listing the ones it has."""
    if not benchmark or benchmark in stored:
        return
    if not stored:
        raise UsageError(f"run {run.id} has no measurements, so no benchmark '{benchmark}'")
    close = difflib.get_close_matches(benchmark, stored, n=1, cutoff=0.4)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise UsageError(f"run {run.id} has no benchmark '{benchmark}'; {hint}it has: {', '.join(stored)}")


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--benchmark", help="Only this benchmark.")
@json_option
@pass_state
def show(state, run_ref, benchmark, as_json):
    """Show a run: its summary and a table per benchmark, units in the headers."""
    store = state.read(run_ref)
    run = store.get_run(run_ref)
    items = store.measurements(run.id)
    check_benchmark(run, list(dict.fromkeys(m.benchmark for m in items)), benchmark)
    if benchmark:
        items = [m for m in items if m.benchmark == benchmark]
    probes = store.artifacts(run.id, HOST_PROBE)
    if as_json:
        print_json({"run": run.to_dict(), "measurements": [m.to_dict() for m in items], "host_probes": probes})
        return
    s = run_summary(store, run)
    console.print(f"[bold]run {run.id}[/] {safe_markup(run.label or '')}  {run.kind}  {run.status}  created {run.created}",
                  highlight=False)
    if run.tags:
        console.print(f"tags: {_tags_text(run.tags)}", highlight=False, markup=False)
    p = run.provenance
    facts = [f"{run.ranks or '?'} ranks", f"hosts: {', '.join(s['hosts']) or '?'}"]
    if isinstance(p.get("repeat"), int) and p["repeat"] > 1:
        facts.append(f"each benchmark launched {p['repeat']} times, merged per point")
    if p.get("mpi_library"):
        facts.append(f"MPI: {p['mpi_library']}")
    console.print("; ".join(facts), highlight=False, markup=False)
    if probes:
        from fabricbench.report.words.host import probes_text

        console.print(probes_text(probes), highlight=False, markup=False)
    if run.message:
        console.print(Text(run.message, style="yellow"))
    console.print("Bandwidth is decimal MB/s (1 MB/s = 10^6 bytes/s).", style="dim")
    ceiling = _ceiling_of(store, run)
    for table, group in zip(measurement_tables(items), _groups(items)):
        console.print(table)
        for line in figure_notes(group, ceiling):
            console.print(line, highlight=False, markup=False, style="dim" if not line.startswith("!") else "yellow")
    missed, judged = missed_share(items)
    if missed:
        console.print(f"* {missed} of {judged} points did not reach their --precision target (the 95% CI of the "
                      "median stayed wider when the time budget ran out; a longer --time-budget measures them "
                      "longer)", style="yellow", highlight=False, markup=False)
    if not items:
        console.print("no measurements stored for this run")


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt_name", type=click.Choice(["csv", "json", "openmetrics", "perflog"]), default="csv",
              show_default=True, help="openmetrics: Prometheus/OpenMetrics text for Grafana (ends with # EOF); "
                                      "perflog: ReFrame-style perflog lines, one per point.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout (its folder must exist).")
@pass_state
def export(state, run_ref, fmt_name, output):
    """Export a run's measurements (CSV: one row per point; JSON: run, hosts and measurements; OpenMetrics; perflog)."""
    from fabricbench.report.export import export_run
    from fabricbench.report.files import check_output, write_text

    if output:
        check_output(output)
    store = state.read(run_ref)
    run = store.get_run(run_ref)
    text = export_run(store.load(run.id), fmt_name)
    if output:
        write_text(output, text)
        console.print(f"wrote {store.count_measurements(run.id)} measurements of run {run.id} to {output}",
                      highlight=False, markup=False)
    else:
        sys.stdout.write(text)


@main.group()
def db():
    """The results database."""


@db.command("path")
@pass_state
def db_path(state):
    """Print where the database is (it is created by the first command that stores a run)."""
    from fabricbench.store import Store

    path = state.sqlite_file()
    console.print(str(path.resolve()) if path is not None else Store(state.url).where, highlight=False, markup=False)


@db.command("migrate")
@pass_state
def db_migrate(state):
    """Upgrade the database schema to this fabricbench's version."""
    from fabricbench.store import Store
    from fabricbench.store.schema import SCHEMA_VERSION

    store = Store(state.url)
    before = store.schema_version()
    store.prepare(migrate=True)
    if before is None:
        console.print(f"created {store.where} at schema version {SCHEMA_VERSION}", highlight=False, markup=False)
    elif before == SCHEMA_VERSION:
        console.print(f"{store.where} is at schema version {SCHEMA_VERSION}; nothing to do", highlight=False, markup=False)
    else:
        console.print(f"migrated {store.where} from schema version {before} to {SCHEMA_VERSION}", highlight=False, markup=False)
