"""`fabricbench report` and `fabricbench fabrics`: printing only; the work is in analysis/ and report/."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench.errors import FabricbenchError, UsageError


@main.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Output file (default: report.html, or report.md with --format markdown).")
@click.option("--format", "fmt", type=click.Choice(["html", "markdown"]), default="html", show_default=True, help="One self-contained HTML file, or Markdown with plot files.")
@click.option("--plots-dir", type=click.Path(file_okay=False), help="Also write every plot as a file here (Markdown default: <output>_plots/).")
@click.option("--plot-format", type=click.Choice(["svg", "png"]), default="svg", show_default=True, help="Plot image format.")
@click.option("--title", default="fabricbench report", show_default=True, help="Report title.")
@click.option("--baseline", default=None, metavar="RUN", help="Run the others are compared against (default: the first).")
@click.option("--max-curves", type=click.IntRange(1, 200), default=12, show_default=True, help="Curves drawn per plot (tables keep every run).")
@pass_state
def report(state, runs: Tuple[str, ...], output: Optional[str], fmt: str, plots_dir: Optional[str], plot_format: str,
           title: str, baseline: Optional[str], max_curves: int) -> None:
    """Write a report over RUNS (ids, uuids or 'last'): plots, tables, configuration, % of peak."""
    from fabricbench.report import ReportOptions, build_report_from, load_runs, write_report

    loaded = load_runs(state.store, runs)
    base_index = 0
    if baseline is not None:
        base_run = state.store.get_run(baseline)
        matches = [r.index for r in loaded if r.run.id == base_run.id]
        if not matches:
            raise UsageError(f"--baseline {baseline} is not one of the runs in the report")
        base_index = matches[0]
    options = ReportOptions(title=title, plot_format=plot_format, max_curves=max_curves, baseline=base_index)
    rep = build_report_from(loaded, options)
    out = Path(output or ("report.html" if fmt == "html" else "report.md"))
    try:
        path = write_report(rep, out, fmt=fmt, plots_dir=plots_dir)
    except OSError as exc:
        raise FabricbenchError(f"cannot write {exc.filename or out}: {exc.strerror}") from None
    n_fig = len(rep.figures())
    console.print(f"wrote {path} ({len(loaded)} run{'s' if len(loaded) != 1 else ''}, {len(rep.sections)} sections, {n_fig} plots)", highlight=False)


@main.command()
@json_option
def fabrics(as_json: bool) -> None:
    """List the peak catalog: link rates, encodings and data rates (decimal MB/s, per direction)."""
    from fabricbench.analysis.peaks import load_catalog

    cat = load_catalog()
    if as_json:
        print_json([f.to_dict() for f in cat.values()])
        return
    t = Table(title="Fabric catalog (data/fabrics.toml); data rates per direction", title_justify="left")
    for name, just in (("Key", "left"), ("Name", "left"), ("Lanes", "right"), ("Lane rate (Gb/s)", "right"),
                       ("Encoding", "left"), ("Data rate (Gb/s)", "right"), ("Data rate (MB/s)", "right"),
                       ("Switch (ns)", "right"), ("Source", "left")):
        t.add_column(name, justify=just, overflow="fold")
    for f in cat.values():
        sw = "-" if not f.switch_latency_ns else "-".join(str(x) for x in dict.fromkeys(f.switch_latency_ns))
        if f.data_rate_MBps <= 0:  # shared memory: no link
            t.add_row(f.key, f.name, "-", "-", f.encoding, "-", "no link ceiling", sw, f.source)
            continue
        t.add_row(f.key, f.name, str(f.lanes), f"{f.signalling_gbps:g}", f.encoding, f"{f.data_rate_gbps:.4g}",
                  f"{f.data_rate_MBps:,.0f}", sw, f.source)
    console.print(t)
