"""HPCC-style network tests: ping-pong over pairs (min/avg/max) and natural vs random rings."""
from __future__ import annotations

from fabricbench.analysis.direction import direction_word
from fabricbench.analysis.series import headline, variant_label
from fabricbench.report import blocks
from fabricbench.report.blocks import band_of
from fabricbench.report.model import Cell, Column, Section, Table
from fabricbench.report.plots import bar_plot, run_color
from fabricbench.suite import family
from fabricbench import numbers

ORDER = 60
BENCHMARKS = set(family("hpcc"))  # the engine's table: pingpong_pairs, ring
_NAMES = {"pingpong_pairs": "Ping-pong over pairs", "ring": "Ring"}


def _row_label(bench, variant):
    v = dict(variant)
    v.pop("ranks", None)
    order = v.pop("ordering", None)
    name = _NAMES.get(bench, bench)
    if order:
        name = f"{'Naturally' if order == 'natural' else 'Randomly' if order == 'random' else order} ordered ring"
    rest = variant_label(v, skip=("pairs",))
    return f"{name} ({rest})" if rest else name


def _cell(m):
    lo, hi = band_of(m)
    text = numbers.number(headline(m))
    if lo is not None and hi is not None and (lo != headline(m) or hi != headline(m)):
        text += f" [{numbers.number(lo)}-{numbers.number(hi)}]"
    return text


def _vs_base(ctx, run, m):
    """The cell comparing a point with the baseline run: analysis.compare's figure and verdict."""
    found = ctx.comparison(run).point_of(m) if m is not None else None
    if found is None or found[1].improvement is None:
        return Cell("-")
    p = found[1]
    text = numbers.improvement_pct(p.improvement * 100)
    if not p.flagged:
        text += {"isolated": " (isolated)", "not judged": " (not judged)"}.get(p.verdict, " (n.s.)")
    return Cell(text, p.verdict if p.flagged else "")


def build(ctx):
    series = [s for s in ctx.series() if s.benchmark in BENCHMARKS]
    if not series:
        return None
    section = Section("hpcc-network", "HPCC network tests")
    section.intro = ("Ping-pong over pairs: average over the pairs measured. Rings: naturally ordered, and randomly "
                     "ordered (geometric mean over random rings, as HPCC b_eff defines it). Brackets: [min-max] over "
                     "pairs, repeated measurements or random rings, as each record's statistics are defined.")
    base = ctx.baseline
    for metric in dict.fromkeys(s.metric for s in series):
        ms = [s for s in series if s.metric == metric]
        title, unit = blocks.metric_title(metric, ms[0].unit)
        # rows: (benchmark, variant without ranks, size); columns: runs
        keys = list(dict.fromkeys((s.benchmark, _row_label(s.benchmark, s.variant), p.params.get("size")) for s in ms for p in s.points))
        values = {}
        for s in ms:
            for p in s.points:
                values[(s.run.index, s.benchmark, _row_label(s.benchmark, s.variant), p.params.get("size"))] = p
        others = [r for r in ctx.runs if r is not base]
        cols = [Column("Test", align="left"), Column("Message size", "bytes")]
        cols += [Column(f"{r.name}: {title}", unit) for r in ctx.runs]
        if len(ctx.runs) > 1:
            cols += [Column(f"{r.name} vs {base.name}", "% better") for r in others]
        rows = []
        for bench, label, size in keys:
            row = [label, numbers.size(size)]
            for r in ctx.runs:
                m = values.get((r.index, bench, label, size))
                row.append(_cell(m) if m is not None else "")
            if len(ctx.runs) > 1:
                for r in others:
                    row.append(_vs_base(ctx, r, values.get((r.index, bench, label, size))))
            rows.append(row)
        caption = f"{title} ({direction_word(metric)})"
        if len(ctx.runs) > 1:
            caption += ("; % better than the baseline run from fabricbench compare: coloured when significant and "
                        "at least 3%, n.s. = not significant, not judged = no spread recorded")
        section.add(Table(cols, rows, caption=caption))
        if max(len(s.points) for s in ms) >= 3:
            section.add(blocks.curves_figure(ctx, ms, blocks.slugify(f"hpcc-network-{metric}"), f"HPCC network: {title.lower()}",
                                             f"{title} ({unit})", logy=metric in ("latency", "time")))
        else:
            cats = [f"{label}, {numbers.size(size)} B" for _b, label, size in keys]
            groups = []
            for r in ctx.runs[: ctx.options.max_curves]:
                vals = [headline(values[(r.index, b, l, sz)]) if (r.index, b, l, sz) in values else None for b, l, sz in keys]
                groups.append((r.name, vals, run_color(r.index)))
            res = bar_plot(cats, groups, f"HPCC network: {title.lower()}", f"{title} ({unit})", fmt=ctx.plot_format,
                           zero_line=False, max_groups=ctx.options.max_curves)
            section.add(res.figure(blocks.slugify(f"hpcc-network-{metric}"), f"HPCC network: {title.lower()}",
                                   alt=f"HPCC network {title.lower()} per run"))
    return section
