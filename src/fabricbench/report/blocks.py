"""Building blocks sections reuse: curve figures, per-size tables, run-vs-baseline notes.

- ``series_labels(series)`` -> legend/column labels (run name, plus only the parameters that differ)
- ``band_of(m)`` / ``percentile_band(m)`` -> the spread drawn around a point (ranks; samples)
- ``curves_figure(ctx, series, slug, title, ylabel, ...)`` -> ``Figure``: one curve per series with
  bands and peak lines; a ratio panel under it when runs are compared; bars for one-point series
- ``series_tables(ctx, series, unit, extras=...)`` -> ``[Table]`` (rows: sizes; columns: series)
- ``baseline_notes(ctx, series)`` -> each run's comparison with the baseline, one sentence per series (``analysis.compare``)
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from fabricbench.analysis.precision import missed_precision
from fabricbench.analysis.series import Series, headline, variant_label
from fabricbench import numbers as fmt
from fabricbench.report.model import Column, Figure, Section, Table
from fabricbench.report.plots import Curve, RefLine, line_plot, line_style, run_color, size_x, value_bars

# An extra column per series: (title, unit, cell function of a Measurement).
Extra = Tuple[str, Optional[str], Callable[[Any, Series], Any]]


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "plot"


def _varying_keys(series: Sequence[Series]) -> List[str]:
    """Variant keys that take more than one value among the series that have them. A key only some
    series have (an engine run records cache and validate, an imported one does not) says nothing
    about the curves, so it stays out of the labels."""
    values: Dict[str, set] = {}
    for s in series:
        for k, v in s.variant.items():
            values.setdefault(k, set()).add(str(v))
    return [k for k in sorted(values) if len(values[k]) > 1]


def _label(s: Series, keys: Sequence[str]) -> str:
    name = getattr(s.run, "name", "") or "run"
    extra = ", ".join(f"{k}={s.variant[k]}" for k in keys if k in s.variant)
    return f"{name} [{extra}]" if extra else name


def series_labels(series: Sequence[Series]) -> List[str]:
    """Run name, plus the parameters that differ between the curves ('ranks=8'); more of a curve's
    parameters only when two curves would otherwise share a label."""
    varying = _varying_keys(series)
    labels = [_label(s, varying) for s in series]
    for i, s in enumerate(series):
        if labels.count(labels[i]) > 1:
            twins = [t for t in series if _label(t, varying) == labels[i]]
            extra = [k for k in sorted(s.variant) if k not in varying and len({str(t.variant.get(k)) for t in twins}) > 1]
            labels[i] = _label(s, varying + extra)
    return labels


def _run_index(s: Series) -> int:
    return getattr(s.run, "index", 0) or 0


SKETCH_LOW, SKETCH_HIGH = 1, 99  # the percentiles a sample band spans when the engine stored its sketch


def percentile_band(m: Any) -> Tuple[Optional[float], Optional[float]]:
    """The spread of a point's samples: its 1st to 99th percentile from ``detail.sketch`` (101
    quantiles), else min to p99; (None, None) for a point without samples (an import)."""
    detail = m.detail if isinstance(m.detail, dict) else {}
    q = (detail.get("sketch") or {}).get("q") if isinstance(detail.get("sketch"), dict) else None
    if isinstance(q, list) and len(q) == 101 and all(isinstance(v, (int, float)) for v in (q[SKETCH_LOW], q[SKETCH_HIGH])):
        return float(q[SKETCH_LOW]), float(q[SKETCH_HIGH])
    if m.min is not None and m.p99 is not None:
        return float(m.min), float(m.p99)
    return None, None


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


BAND_CAPTIONS = {
    "ranks": "Shaded: fastest to slowest rank.",
    "samples": "Shaded: 1st to 99th percentile of the samples (min to p99 where no percentiles were stored).",
}


def _band(kind: str) -> Optional[Callable[[Any], Tuple[Optional[float], Optional[float]]]]:
    return {"ranks": band_of, "samples": percentile_band}.get(kind) if kind else None


def _ratio_curves(ctx: Any, series: Sequence[Series], styles: Dict[int, str]) -> Tuple[List[Curve], Optional[Any]]:
    """Each run's series divided by the reference run's matching series (same benchmark, metric,
    variant) at every common size, from analysis.compare; the reference is the baseline run when
    it has the series, else the first run that does."""
    runs = list(dict.fromkeys(id(s.run) for s in series))
    if len(runs) < 2:
        return [], None
    base = ctx.baseline
    by_key: Dict[Tuple, List[Series]] = {}
    for s in series:
        by_key.setdefault(s.key, []).append(s)
    ratios, reference = [], None
    for group in by_key.values():
        if len({id(s.run) for s in group}) < 2:
            continue
        ref = next((s for s in group if s.run is base), group[0])
        reference = reference or ref.run
        for s in group:
            if s is ref:
                continue
            pts = _ratios(ref, s)
            if pts:
                ratios.append(Curve("", [x for x, _ in pts], [r for _, r in pts], color=run_color(_run_index(s)),
                                    style=styles.get(id(s), "-")))
    return ratios, reference


def _ratios(ref: Series, s: Series) -> List[Tuple[float, float]]:
    """(x, s / ref) at the sizes both series measured, for the ratio panel."""
    base = ref.by_size()
    out = []
    for size, m in s.by_size().items():
        a, b = headline(base[size]) if size in base else None, headline(m)
        if a and b is not None:
            out.append((size_x(size), b / a))
    return out


def _ratio_label(metric: str, reference: Any) -> Tuple[str, str]:
    """The ratio panel's axis label and the note naming the reference run."""
    from fabricbench.analysis.direction import lower_is_better

    name = getattr(reference, "name", "") or "the reference run"
    better = "below 1: faster" if lower_is_better(metric) else "above 1: better"
    return f"ratio\n({better})", f"each run / {name}"


def _bars_figure(ctx: Any, series: Sequence[Series], labels: Sequence[str], slug: str, title: str, ylabel: str,
                 band: Optional[Callable], notes: List[str]) -> Figure:
    """Series of one point each: one bar per series with its value written on it."""
    values = [headline(s.points[0]) if s.points else None for s in series]
    spread = [band(s.points[0]) if band and s.points else (None, None) for s in series]
    result = value_bars(labels, values, [run_color(_run_index(s)) for s in series], title, ylabel,
                        lo=[b[0] for b in spread], hi=[b[1] for b in spread], fmt=ctx.plot_format)
    if band and any(b != (None, None) for b in spread):
        notes = notes + ["Whiskers: " + BAND_CAPTIONS["ranks" if band is band_of else "samples"][len("Shaded: "):]]
    return Figure(slug=slug, title=title, data=result.data, fmt=result.fmt, alt=f"{title}: {ylabel} per run",
                  caption=" ".join(notes))


def curves_figure(
    ctx: Any,
    series: Sequence[Series],
    slug: str,
    title: str,
    ylabel: str,
    logy: bool = True,
    bands: Any = False,
    ref_lines: Sequence[RefLine] = (),
    caption: str = "",
    compare: bool = True,
) -> Optional[Figure]:
    """One curve per series over message size; a run keeps its colour, variants get line styles.

    ``bands``: "samples" (percentiles of each point's samples), "ranks" (fastest to slowest
    rank; True means this too) or nothing. With ``compare`` and two or more runs sharing a
    series, a ratio panel underneath shows each run against the reference run (slug
    ``<slug>-comparison``). Series of a single point each are drawn as bars with their values.
    """
    if not series:
        return None
    total = len(series)
    series, pick_note = pick_for_plot(series, ctx.options.max_curves)
    labels = series_labels(series)
    band = _band("ranks" if bands is True else bands or "")
    notes = [caption] if caption else []
    if pick_note:
        notes.append(pick_note)
    if all(len(s.points) <= 1 for s in series):
        return _bars_figure(ctx, series, labels, slug, title, ylabel, band, notes)
    variant_index: Dict[str, int] = {}
    curves, styles = [], {}
    for s, label in zip(series, labels):
        vkey = variant_label(s.variant, quiet=False)
        style = styles[id(s)] = line_style(variant_index.setdefault(vkey, len(variant_index)))
        xs = [size_x(p.params.get("size")) for p in s.points]
        ys = [headline(p) for p in s.points]
        lo = hi = None
        if band is not None:
            pairs = [band(p) for p in s.points]
            lo, hi = [b[0] for b in pairs], [b[1] for b in pairs]
        curves.append(Curve(label, xs, ys, lo, hi, color=run_color(_run_index(s)), style=style))
    ratios, reference = _ratio_curves(ctx, series, styles) if compare else ([], None)
    result = line_plot(
        curves, title, ylabel=ylabel, logy=logy, ref_lines=ref_lines,
        fmt=ctx.plot_format, max_curves=ctx.options.max_curves,
        ratios=ratios, ratio_label=_ratio_label(series[0].metric, reference) if ratios else ("", ""),
    )
    if band is not None and any(c.lo for c in curves):
        notes.append(BAND_CAPTIONS["ranks" if band is band_of else "samples"])
    if ratios:
        notes.append(f"Lower panel: each run divided by {getattr(reference, 'name', 'the reference run')} at the same size.")
        slug = f"{slug}-comparison"
    if result.omitted or result.drawn < total:
        notes.append(f"{result.drawn} of {total} curves drawn; the table has every value.")
    return Figure(slug=slug, title=title, data=result.data, fmt=result.fmt, alt=f"{title}: {ylabel} by message size", caption=" ".join(notes))


def _record_value(m: Any) -> str:
    return fmt.number(headline(m)) + (" *" if missed_precision(m) else "")


def record_caption(series: Iterable[Series]) -> str:
    """'Values: the median of the samples.' - which statistic the cells show (analysis.record)."""
    from fabricbench.analysis import record

    said = {record.statistic_of(p) for s in series for p in s.points} - {None}
    words = {record.MEDIAN: "the median of the samples", record.RATE_ALL: "the rate over all iterations",
             record.MEAN_NO_CALLS: "the mean over ranks (no per-call distribution recorded)",
             record.MEAN_ONLY: "the mean (no distribution recorded)", record.DEFINED: "the value as the benchmark defines it"}
    order = [record.MEDIAN, record.RATE_ALL, record.MEAN_NO_CALLS, record.MEAN_ONLY, record.DEFINED]
    return f"Values: {'; '.join(words[k] for k in order if k in said)}." if said else ""


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
    value = value or _record_value
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
            row: List[Any] = [fmt.size(size)]
            for (s, _label), points in zip(chunk, index):
                m = points.get(size)
                row.append(value(m) if m is not None else "")
                for _t, _u, fn in extras:
                    row.append(fn(m, s) if m is not None else "")
            rows.append(row)
        cap = caption if value is not _record_value else f"{caption} {record_caption(s for s, _ in chunk)}".strip()
        if any(missed_precision(p) for s, _ in chunk for p in s.points):
            cap = (f"{cap}; * marks a point whose median's 95% confidence interval stayed wider than its "
                   "--precision target when its time budget ran out").strip("; ")
        if len(series) > per_table:
            cap = f"{caption} (columns {start + 1}-{start + len(chunk)} of {len(series)})".strip()
        tables.append(Table(columns, rows, caption=cap))
    return tables


def baseline_notes(ctx: Any, series: Sequence[Series], limit: int = 10) -> List[str]:
    """What analysis.compare says of each non-baseline run against the baseline, for these series' benchmarks."""
    from fabricbench.report.words.compare import series_summary

    base = ctx.baseline
    if base is None or len(ctx.runs) < 2:
        return []
    wanted = {(s.benchmark, s.metric) for s in series}
    notes = []
    runs = {s.run.index: s.run for s in series if s.run is not base}
    for run in runs.values():
        for sc in ctx.comparison(run).series:
            if (sc.benchmark_b, sc.metric) in wanted or (sc.definition, sc.metric) in wanted:
                notes.append(f"{run.name}, {sc.title}: {series_summary(sc, base.name, run.name)}")
            if len(notes) >= limit:
                return notes
    return notes


def benchmark_title(benchmark: str) -> str:
    """A benchmark's heading from the engine's table (its ``title``: a collective's is its MPI call,
    "allreduce" -> "MPI_Allreduce"); a benchmark the table lacks (an import's) is its own name."""
    from fabricbench.native import NativeMissing
    from fabricbench.suite import BENCHMARKS

    try:
        spec = BENCHMARKS.get(benchmark)
    except NativeMissing:
        spec = None
    return spec.title if spec is not None and spec.title else benchmark


METRIC_AXES = {
    "latency": ("Latency", "us"),
    "time": ("Time", "us"),
    "bandwidth": ("Bandwidth", "MB/s"),
    "bibandwidth": ("Bi-bandwidth", "MB/s"),
    "message_rate": ("Message rate", "msg/s"),
    "pure_comm": ("Pure communication time", "us"),
    "overlap": ("Overlap", "%"),
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
    bands: Any = False,
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
    name = title or benchmark_title(benchmark)
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


def grouped_section(section_id: str, title: str, intro: str, subs: Sequence[Any], notes: Sequence[Any] = ()) -> Optional[Section]:
    """A section holding one subsection per benchmark and metric, or None when there are none."""
    if not subs:
        return None
    section = Section(section_id, title)
    section.intro = intro
    section.add(*notes)
    section.subsections = list(subs)
    return section
