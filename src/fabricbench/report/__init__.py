"""Reports: one self-contained HTML file (or Markdown + plot files) over one or more runs.

    from fabricbench import open_db
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report
    report = report_of(open_db(), ["3", "4"])           # loads, fits, then report.build_report
    write_report(report, "report.html")                  # or fmt="markdown", plots_dir=...

The report renders what it is given: loaded runs (``store.RunData``) and a ``Given`` (fitted
models, stored replicates, artifacts) made by its caller; it never queries the store or fits.

A report is a list of sections; each section is a small module in ``report/sections/``
found automatically (see ``fabricbench.report.sections`` for how to add one). Plots live in
``report/plots/``, reusable tables and figures in ``report/blocks.py``, templates in
``report/templates/``, every number's text in ``fabricbench/numbers.py``, CSV/JSON export in
``report/export.py``. Output files are written whole or not at all into folders that exist
(``report/files.py``).
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, List, Optional, Union

from fabricbench import __version__
from fabricbench.errors import UsageError
from fabricbench.report.context import Given, ReportContext, ReportOptions
from fabricbench.report.files import check_output, make_folder, write_bytes, write_text
from fabricbench.report.model import Report
from fabricbench import numbers

FORMATS = ("html", "markdown")


def build_report(runs: List[Any], given: Given, options: Optional[ReportOptions] = None) -> Report:
    """A Report over already loaded runs (``store.RunData``; sections in ORDER) and what the caller
    loaded and fitted for them (``Given``: the fitted models, the comparisons' stored replicates,
    the artifacts, the earlier fabric snapshots, the scaling analysis): the sections only render
    what they are given. ``fabricbench.cli.report.report_of`` loads, fits and calls this."""
    from fabricbench.report.sections import build_sections

    options = options or ReportOptions()
    if options.plot_format not in ("svg", "png"):
        raise UsageError(f"plot format must be svg or png, not '{options.plot_format}'")
    ctx = ReportContext(runs, options, given)
    sections = build_sections(ctx)
    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return Report(options.title, generated, __version__, runs, sections)


def write_plots(report: Report, plots_dir: Union[str, Path], relative_to: Optional[Path] = None) -> List[Path]:
    """Write every figure as <nn>-<slug>.<svg|png> into plots_dir (created if its parent exists);
    figures remember their path (relative to the report)."""
    out_dir = make_folder(plots_dir)
    written = []
    used = set()
    for i, fig in enumerate(report.figures(), 1):
        name = f"{numbers.padded(i, 2)}-{fig.slug}.{fig.fmt}"
        while name in used:
            name = f"{numbers.padded(i, 2)}-{fig.slug}-{len(used)}.{fig.fmt}"
        used.add(name)
        path = write_bytes(out_dir / name, fig.data)
        written.append(path)
        if relative_to is not None:
            try:
                fig.path = str(path.resolve().relative_to(relative_to.resolve()))
            except ValueError:
                fig.path = str(path.resolve())
        else:
            fig.path = str(path)
    return written


def write_report(report: Report, output: Union[str, Path], fmt: str = "html", plots_dir: Optional[Union[str, Path]] = None,
                 create_folders: bool = True) -> Path:
    """Write the report; Markdown always writes plot files (default: <output stem>_plots/ beside it).

    The output's folder is created when missing unless ``create_folders`` is False (the command
    line's choice: a missing folder is then a UsageError naming it, and nothing is created)."""
    if fmt not in FORMATS:
        raise UsageError(f"report format must be one of {', '.join(FORMATS)}, not '{fmt}'")
    if create_folders:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        if plots_dir is not None:
            Path(plots_dir).parent.mkdir(parents=True, exist_ok=True)
    output = check_output(output)
    if fmt == "markdown" and plots_dir is None:
        plots_dir = output.parent / f"{output.stem}_plots"
    if plots_dir is not None:
        write_plots(report, plots_dir, relative_to=output.parent)
    from fabricbench.report.render import render_html, render_markdown

    text = render_html(report) if fmt == "html" else render_markdown(report)
    return write_text(output, text)


__all__ = [
    "Report", "ReportOptions", "ReportContext", "Given", "build_report",
    "write_report", "write_plots", "render_html", "render_markdown", "FORMATS",
]


def __getattr__(name: str):
    """render_html and render_markdown, imported on first use: Jinja2 is for writing reports,
    not for every module that formats a number (the formatter, fabricbench.numbers, lives below it)."""
    if name in ("render_html", "render_markdown"):
        from fabricbench.report import render

        return getattr(render, name)
    raise AttributeError(f"module 'fabricbench.report' has no attribute {name!r}")
