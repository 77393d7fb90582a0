"""Building blocks sections reuse: number formatting, curve figures, per-size tables, run-vs-baseline notes.

- ``fmt_value(v)``, ``fmt_size(bytes)``, ``fmt_pct(p)``
- ``series_labels(series)`` -> legend/column labels (run name, plus the variant when a benchmark has several)
- ``curves_figure(ctx, series, slug, title, ylabel, ...)`` -> ``Figure`` (one curve per series; bands, peak lines)
- ``series_tables(ctx, series, unit, extras=...)`` -> ``[Table]`` (rows: sizes; columns: series)
- ``baseline_notes(ctx, series)`` -> each run's comparison with the baseline, one sentence per series (``analysis.compare``)
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.series import Series, headline, variant_label
from fabricbench.report.model import Column, Figure, Table
from fabricbench.report.plots import Curve, RefLine, line_plot, line_style, run_color, size_x

# An extra column per series: (title, unit, cell function of a Measurement).
Extra = Tuple[str, Optional[str], Callable[[Any, Series], Any]]


def fmt_value(v: Optional[float]) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a >= 1e5:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:,.1f}"
    if a >= 0.1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.3g}"


def fmt_size(size: Any) -> str:
    return f"{int(size):,}" if isinstance(size, (int, float)) else ("-" if size is None else str(size))


def fmt_pct(p: Optional[float], signed: bool = False) -> str:
    if p is None:
        return "-"
    return f"{p:+.1f}%" if signed else f"{p:.1f}%"


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "plot"


def _varying_keys(series: Sequence[Series]) -> List[str]:
    """Variant keys that take more than one value among these series (only those go in labels)."""
    values: Dict[str, set] = {}
    for s in series:
        for k, v in s.variant.items():
            values.setdefault(k, set()).add(str(v))
    return [k for k in sorted(values) if len(values[k]) > 1 or any(k not in s.variant for s in series)]


def series_labels(series: Sequence[Series]) -> List[str]:
    """Run name, plus the varying part of the variant ('ranks=8') when runs have several curves."""
    varying = _varying_keys(series)
    labels = []
    for s in series:
        name = getattr(s.run, "name", "") or "run"
        extra = ", ".join(f"{k}={s.variant[k]}" for k in varying if k in s.variant)
        labels.append(f"{name} [{extra}]" if extra else name)
    return labels


def _run_index(s: Series) -> int:
    return getattr(s.run, "index", 0) or 0


def band_of(m: Any) -> Tuple[Optional[float], Optional[float]]:
    """(fastest, slowest) for a point: per-rank figures in detail when present, else min and max."""
    detail = m.detail if isinstance(m.detail, dict) else {}
    for key in ("per_rank", "ranks", "rank_means", "by_rank"):
        vals = detail.get(key)
        if isinstance(vals, list) and vals:
            nums = [v.get("mean", v.get("value")) if isinstance(v, dict) else v for v in vals]
            nums = [float(v) for v in nums if isinstance(v, (int, float))]
            if nums:
                return min(nums), max(nums)
    return m.min, m.max


def pick_for_plot(series: Sequence[Series], max_curves: int) -> Tuple[List[Series], str]:
    """At most max_curves series to draw. When runs have several variants (rank counts) and not
    all fit, draw one variant for every run rather than every variant of the first runs: the one
    most runs have, the largest rank count on ties."""
    series = list(series)
    if len(series) <= max_curves:
        return series, ""
    by_variant: Dict[str, List[Series]] = {}
    for s in series:
        by_variant.setdefault(variant_label(s.variant, quiet=False), []).append(s)
    if len(by_variant) == 1:
        return series[:max_curves], ""

    def rank(item):
        label, members = item
        ranks = members[0].variant.get("ranks")
        return (len({id(m.run) for m in members}), ranks if isinstance(ranks, (int, float)) else 0)

    label, members = max(by_variant.items(), key=rank)
    return members[:max_curves], f"Plotted: {variant_label(members[0].variant) or label} (other variants are in the table)."


def curves_figure(
    ctx: Any,
    series: Sequence[Series],
    slug: str,
    title: str,
    ylabel: str,
    logy: bool = True,
    bands: bool = False,
    ref_lines: Sequence[RefLine] = (),
    caption: str = "",
) -> Optional[Figure]:
    """One curve per series over message size; a run keeps its colour, variants get line styles."""
    if not series:
        return None
    total = len(series)
    series, pick_note = pick_for_plot(series, ctx.options.max_curves)
    labels = series_labels(series)
    variant_index: Dict[str, int] = {}
    curves = []
    for s, label in zip(series, labels):
        vkey = variant_label(s.variant, quiet=False)
        style = line_style(variant_index.setdefault(vkey, len(variant_index)))
        xs = [size_x(p.params.get("size")) for p in s.points]
        ys = [headline(p) for p in s.points]
        lo = hi = None
        if bands:
            pairs = [band_of(p) for p in s.points]
            lo, hi = [b[0] for b in pairs], [b[1] for b in pairs]
        curves.append(Curve(label, xs, ys, lo, hi, color=run_color(_run_index(s)), style=style))
    result = line_plot(
        curves, title, ylabel=ylabel, logy=logy, ref_lines=ref_lines,
        fmt=ctx.plot_format, max_curves=ctx.options.max_curves,
    )
    notes = [caption] if caption else []
    if pick_note:
        notes.append(pick_note)
    if result.omitted or result.drawn < total:
        notes.append(f"{result.drawn} of {total} curves drawn; the table has every value.")
    return Figure(slug=slug, title=title, data=result.data, fmt=result.fmt, alt=f"{title}: {ylabel} by message size", caption=" ".join(notes))


def series_tables(
    ctx: Any,
    series: Sequence[Series],
    title: str,
    unit: str,
    extras: Sequence[Extra] = (),
    caption: str = "",
    value: Callable[[Any], Any] = None,
) -> List[Table]:
    """Rows: message sizes (union over series); columns: each series' value (+ extra columns)."""
    if not series:
        return []
    labels = series_labels(series)
    value = value or (lambda m: fmt_value(headline(m)))
    per_table = max(1, ctx.options.max_table_columns // (1 + len(extras)))
    tables = []
    for start in range(0, len(series), per_table):
        chunk = list(zip(series[start:start + per_table], labels[start:start + per_table]))
        sizes = sorted({p.params.get("size") for s, _ in chunk for p in s.points}, key=lambda v: (v is None, v or 0))
        columns = [Column("Size", "bytes")]
        for s, label in chunk:
            columns.append(Column(f"{label}: {title}", unit))
            for e_title, e_unit, _fn in extras:
                columns.append(Column(f"{label}: {e_title}", e_unit))
        index = [s.by_size() for s, _ in chunk]
        rows = []
        for size in sizes:
            row: List[Any] = [fmt_size(size)]
            for (s, _label), points in zip(chunk, index):
                m = points.get(size)
                row.append(value(m) if m is not None else "")
                for _t, _u, fn in extras:
                    row.append(fn(m, s) if m is not None else "")
            rows.append(row)
        cap = caption
        if len(series) > per_table:
            cap = f"{caption} (columns {start + 1}-{start + len(chunk)} of {len(series)})".strip()
        tables.append(Table(columns, rows, caption=cap))
    return tables


def baseline_notes(ctx: Any, series: Sequence[Series], limit: int = 10) -> List[str]:
    """What analysis.compare says of each non-baseline run against the baseline, for these series' benchmarks."""
    base = ctx.baseline
    if base is None or len(ctx.runs) < 2:
        return []
    wanted = {(s.benchmark, s.metric) for s in series}
    notes = []
    runs = {s.run.index: s.run for s in series if s.run is not base}
    for run in runs.values():
        for sc in ctx.comparison(run).series:
            if (sc.benchmark_b, sc.metric) in wanted or (sc.definition, sc.metric) in wanted:
                notes.append(f"{run.name}, {sc.title}: {sc.summary(base.name, run.name)}")
            if len(notes) >= limit:
                return notes
    return notes


BENCHMARK_TITLES = {
    "latency": "Point-to-point latency (ping-pong, one-way)",
    "multi_lat": "Multi-pair latency",
    "bw": "Unidirectional bandwidth",
    "bibw": "Bidirectional bandwidth",
    "mbw_mr": "Multi-pair bandwidth and message rate",
    "barrier": "MPI_Barrier",
    "bcast": "MPI_Bcast",
    "reduce": "MPI_Reduce",
    "allreduce": "MPI_Allreduce",
    "allgather": "MPI_Allgather",
    "alltoall": "MPI_Alltoall",
    "reduce_scatter": "MPI_Reduce_scatter",
    "pingpong_pairs": "HPCC ping-pong over pairs",
    "ring": "HPCC ring",
    "allpairs": "All pairs",
}

METRIC_AXES = {
    "latency": ("Latency", "us"),
    "time": ("Time", "us"),
    "bandwidth": ("Bandwidth", "MB/s"),
    "bibandwidth": ("Bi-bandwidth", "MB/s"),
    "message_rate": ("Message rate", "msg/s"),
}


def metric_title(metric: str, unit: str) -> Tuple[str, str]:
    title, default_unit = METRIC_AXES.get(metric, (metric.replace("_", " ").capitalize(), unit))
    return title, unit or default_unit


def benchmark_section(
    ctx: Any,
    benchmark: str,
    metric: str,
    section_id: str,
    logy: bool = True,
    bands: bool = False,
    ref_lines: Sequence[RefLine] = (),
    extras: Sequence[Extra] = (),
    caption: str = "",
    value: Callable[[Any], Any] = None,
    title: Optional[str] = None,
) -> Optional[Any]:
    """A section for one benchmark and metric: overlaid curves, the per-size table, notes vs the baseline."""
    from fabricbench.analysis.direction import direction_word
    from fabricbench.report.model import BulletList, Paragraph, Section

    series = ctx.series(benchmark, metric)
    if not series:
        return None
    unit = series[0].unit
    m_title, m_unit = metric_title(metric, unit)
    name = title or BENCHMARK_TITLES.get(benchmark, benchmark)
    if title is None and metric not in ("latency", "time") and len(ctx.metrics(benchmark)) > 1:
        name = f"{name}: {m_title.lower()}"
    section = Section(section_id, name)
    ylabel = f"{m_title} ({m_unit})"
    fig = curves_figure(ctx, series, slugify(f"{benchmark}-{metric}"), name, ylabel, logy=logy, bands=bands,
                        ref_lines=ref_lines, caption=caption)
    section.add(fig)
    section.add(*series_tables(ctx, series, m_title, m_unit, extras=extras, value=value,
                               caption=f"{name}, {m_title.lower()} by message size ({direction_word(metric)})"))
    notes = baseline_notes(ctx, series)
    if notes:
        section.add(Paragraph(f"Against the baseline run '{ctx.baseline.name}':"), BulletList(notes))
    return section
