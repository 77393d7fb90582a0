"""`fabricbench report` and `fabricbench fabrics`: printing only; the work is in analysis/ and report/.

``report_of`` and ``given_for`` are what every caller of the report uses (this command, the
studies, tests, benchmarks): the runs are loaded through store/, the models fitted through
models/ and both handed to ``report.build_report``, which only renders."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench.errors import UsageError
from fabricbench import numbers as fmt


@main.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Output file (default: report.html, or report.md with --format markdown).")
@click.option("--format", "fmt_name", type=click.Choice(["html", "markdown"]), default="html", show_default=True, help="One self-contained HTML file, or Markdown with plot files.")
@click.option("--plots-dir", type=click.Path(file_okay=False), help="Also write every plot as a file here (Markdown default: <output>_plots/).")
@click.option("--plot-format", type=click.Choice(["svg", "png"]), default="svg", show_default=True, help="Plot image format.")
@click.option("--title", default="fabricbench report", show_default=True, help="Report title.")
@click.option("--baseline", default=None, metavar="RUN", help="Run the others are compared against (default: the first).")
@click.option("--max-curves", type=click.IntRange(1, 200), default=12, show_default=True, help="Curves drawn per plot (tables keep every run).")
@click.option("--no-history", is_flag=True, help="Comparisons ignore stored runs of the same configuration (as compare --no-history).")
@pass_state
def report(state, runs: Tuple[str, ...], output: Optional[str], fmt_name: str, plots_dir: Optional[str], plot_format: str,
           title: str, baseline: Optional[str], max_curves: int, no_history: bool) -> None:
    """Write a report over RUNS (ids, uuids or 'last'): plots, tables, configuration, % of peak.

    The output file's folder must exist; --plots-dir (and Markdown's <output>_plots/) is created
    inside an existing folder.
    """
    from fabricbench.report import ReportOptions, build_report, write_report
    from fabricbench.report.files import check_folder, check_output

    out = check_output(output or ("report.html" if fmt_name == "html" else "report.md"))
    if plots_dir:
        check_folder(plots_dir)
    store = state.read(runs[0])
    loaded = store.load_runs(runs)
    base_index = 0
    if baseline is not None:
        base_run = store.get_run(baseline)
        matches = [r.index for r in loaded if r.run.id == base_run.id]
        if not matches:
            raise UsageError(f"--baseline {baseline} is not one of the runs in the report")
        base_index = matches[0]
    options = ReportOptions(title=title, plot_format=plot_format, max_curves=max_curves, baseline=base_index,
                            history=not no_history)
    rep = build_report(loaded, given_for(loaded, options), options)
    path = write_report(rep, out, fmt=fmt_name, plots_dir=plots_dir, create_folders=False)
    n_fig = len(rep.figures())
    console.print(f"wrote {path} ({len(loaded)} run{'s' if len(loaded) != 1 else ''}, {len(rep.sections)} sections, {n_fig} plots)",
                  highlight=False, markup=False)


def report_of(store: Any, refs: Sequence[Any], options: Any = None) -> Any:
    """The report over the runs `refs` names (ids, uuids, 'last') in `store`: loaded, fitted
    (``given_for``), then rendered by ``report.build_report``."""
    from fabricbench.report import build_report

    if not refs:
        raise UsageError("name at least one run to report on (see 'fabricbench runs')")
    runs = store.load_runs(refs)
    return build_report(runs, given_for(runs, options), options)


def given_for(runs: List[Any], options: Any = None) -> Any:
    """What a report over loaded runs (``store.RunData``) shows that needs the store or a fit
    (``report.context.Given``): the fabric models (``models.fabric.fit_runs``), the stored
    replicates of each comparison with the baseline (unless ``options.history`` is off), the
    artifacts the sections draw, each fabric snapshot's earlier stored snapshot of the same
    fabric, and the analysis of the runs' scaling series (its fitted models)."""
    from fabricbench.analysis import scaling as sc
    from fabricbench.models.fabric import fit_runs
    from fabricbench.report.context import ARTIFACTS, Given, ReportOptions
    from fabricbench.report.sections.scaling import series_of_runs
    from fabricbench.store.replicates import replicate_history

    options = options or ReportOptions()
    given = Given(models=fit_runs(runs))
    if options.history and len(runs) > 1:
        base = runs[min(max(options.baseline, 0), len(runs) - 1)]
        given.history = {r.index: replicate_history([base], [r]) for r in runs if r.index != base.index}
    for lr in runs:
        for name in ARTIFACTS.get(lr.run.kind, ()):
            data = lr.artifact(name)
            if data is not None:
                given.artifacts[(lr.run.id, name)] = data
        if lr.run.kind == "fabric" and lr.store is not None:
            given.previous[lr.run.id] = _previous_snapshot(lr, given.artifacts.get((lr.run.id, "fabric")))
    series = series_of_runs(runs)
    if series:
        threshold = getattr(options, "scaling_threshold", None) or sc.DEFAULT_THRESHOLD
        try:
            given.scaling = sc.analyse(series, baseline=getattr(options, "scaling_baseline", None), threshold=threshold)
        except sc.ScalingAnalysisError as exc:
            from fabricbench.report.words.scaling import error_text

            given.scaling = error_text(exc)
    return given


def _previous_snapshot(lr: Any, data: Any) -> Optional[Tuple[Any, Any]]:
    """(run, snapshot) of the newest earlier complete stored snapshot of the same fabric as the
    loaded fabric run `lr` (its ``fabric`` artifact: `data`), as `fabric check` judges against."""
    from fabricbench.analysis.fabric import same_fabric
    from fabricbench.report.sections.fabric import snapshot_of

    snap = snapshot_of(data, lr.measurements)
    if snap is None:
        return None
    source = (lr.run.provenance or {}).get("fabric_source")
    for other in lr.earlier(kind="fabric", benchmark="port_counters"):
        if (other.run.provenance or {}).get("fabric_source") != source:
            continue
        found = snapshot_of(other.artifact("fabric"), other.measurements)
        if found is not None and same_fabric(snap, found):
            return other.run, found
    return None


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
                       ("Switch (ns)", "right")):
        t.add_column(name, justify=just)
    t.secondary = {4, 7}  # encoding and switch latency: a narrow terminal's second table
    sources = Table(title="Sources", title_justify="left")
    sources.add_column("Key")
    sources.add_column("Source")
    for f in cat.values():
        sw = "-" if not f.switch_latency_ns else "-".join(fmt.exact(x) for x in dict.fromkeys(f.switch_latency_ns))
        sources.add_row(Text(f.key), Text(f.source))
        if f.data_rate_MBps <= 0:  # shared memory: no link
            t.add_row(Text(f.key), Text(f.name), "-", "-", Text(f.encoding), "-", "no link ceiling", sw)
            continue
        t.add_row(Text(f.key), Text(f.name), str(f.lanes), fmt.exact(f.signalling_gbps), Text(f.encoding),
                  fmt.number(f.data_rate_gbps), fmt.number(f.data_rate_MBps), sw)
    console.print(t)
    console.print(sources)
