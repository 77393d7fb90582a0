"""`fabricbench history --benchmark bw --size 4M [--tag fabric=edr]`: one figure across runs, a table and a plot."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, parse_tags, pass_state, print_json
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench import numbers


@main.command()
@click.option("--benchmark", "-b", required=True, metavar="NAME", help="Benchmark, e.g. bw, latency, allreduce.")
@click.option("--size", metavar="BYTES", help="Message size, e.g. 4M or 8 (omit for unsized benchmarks).")
@click.option("--metric", default=None, help="Metric when the benchmark has several (e.g. message_rate for mbw_mr).")
@click.option("--tag", "tag_filter", multiple=True, metavar="KEY=VALUE", help="Only runs with this tag (repeatable).")
@click.option("--last", type=click.IntRange(min=1), help="Only the last N runs that have the point.")
@click.option("-o", "--plot", "plot_path", type=click.Path(dir_okay=False), help="Plot file (.svg or .png; default history-BENCHMARK-SIZE.svg).")
@click.option("--no-plot", is_flag=True, help="Print the table only.")
@json_option
@pass_state
def history(state, benchmark: str, size: Optional[str], metric: Optional[str], tag_filter: Tuple[str, ...],
            last: Optional[int], plot_path: Optional[str], no_plot: bool, as_json: bool) -> None:
    """Show one figure (a benchmark at one size) across runs over time, as a table and a plot.

    Each row is compared with the first run of its line: a change is called only when it is
    significant after correction and at least 3%.
    """
    from fabricbench.analysis.history import history as build
    from fabricbench.analysis.history import metrics_of
    from fabricbench.numbers import exact_binary_size as size_label
    from fabricbench.suite import parse_size

    store = state.reader
    nbytes = parse_size(size) if size else None
    runs = store.list_runs(tags=parse_tags(tag_filter))
    loaded = store.loaded(runs, hosts=False)  # one query; hosts are not needed here
    hist = build(loaded, benchmark, nbytes, metric)
    if not hist.rows:
        known = metrics_of(loaded, benchmark)
        what = f"{benchmark} at {size}" if size else benchmark
        if known and metric and metric not in known:
            raise UsageError(f"{benchmark} has no metric '{metric}' (it has {', '.join(known)})")
        raise UsageError(f"no run{' with those tags' if tag_filter else ''} has {what}"
                         + ("" if known else f" (no run has benchmark '{benchmark}')"))
    if last and len(hist.rows) > last:
        keep = {r.run.id for r in hist.rows[-last:]}
        hist = build([rd for rd in loaded if rd.run.id in keep], benchmark, nbytes, metric)
    from fabricbench.report.words.compare import point_dict, point_short

    if as_json:
        data = hist.to_dict()
        for row, r in zip(data["rows"], hist.rows):
            row["vs_first"] = point_dict(r.vs_first) if r.vs_first else None
        print_json(data)
        return
    where = f" {size_label(nbytes)}" if nbytes is not None else ""
    title = f"{benchmark}{where}: {hist.metric} ({hist.unit}) across {len(hist.rows)} runs"
    t = Table(title=title, title_justify="left")
    lines = len(hist.lines) > 1
    for name, just in (("run", "right"), ("date (UTC)", "left"), ("label", "left"), ("tags", "left")) + \
            ((("line", "left"),) if lines else ()) + ((f"{hist.metric} ({hist.unit})", "right"), ("95% CI", "right"),
                                                     ("n", "right"), ("vs first", "left")):
        t.add_column(name, justify=just, overflow="fold")
    for r in hist.rows:
        ci = "-" if r.ci is None else f"{numbers.number(r.ci[0])}-{numbers.number(r.ci[1])}"
        vs = "first" if r.vs_first is None and r is hist.rows[0] else (point_short(r.vs_first) if r.vs_first else "-")
        if r.vs_first is not None and r.vs_first.ratio is not None:
            vs += f" (x{numbers.short(r.vs_first.ratio, 3)})"
        cells = [str(r.run.id), r.run.created.replace("T", " ")[:19], r.run.label or "",
                 " ".join(f"{k}={v}" for k, v in sorted(r.run.tags.items()))]
        cells += [r.line] if lines else []
        cells += [numbers.number(r.value) + ("" if r.statistic == "median" else f" ({'avg' if r.statistic == 'mean' else r.statistic})"), ci, str(r.n or "-"), vs]
        style = "red" if r.vs_first is not None and r.vs_first.verdict == "worse" else ""
        t.add_row(*[Text(c) for c in cells[:-1]], Text(cells[-1], style=style))
    console.print(t)
    if no_plot:
        return
    from fabricbench.report.plots.history import history_plot

    out = Path(plot_path or f"history-{benchmark}{'-' + size if size else ''}.svg")
    fmt = "png" if out.suffix.lower() == ".png" else "svg"
    try:
        out.write_bytes(history_plot(hist, title, fmt))
    except OSError as exc:
        raise FabricbenchError(f"cannot write {out}: {exc.strerror}") from None
    console.print(f"plot: {out}", highlight=False)
