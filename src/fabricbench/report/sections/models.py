"""Communication models of engine runs (``models.fabric.fit_run``): the measured points against
the fitted model per benchmark, the regimes with their breakpoints, LogGP, and the fit errors.

Every run that measured what the models need (``latency`` and ``loggp``, as ``fabricbench run
latency loggp ...`` does) gets one section; ``model_section`` is also what the
report of a prediction (``fabricbench predict --report``) shows for its two fabrics.
"""
from __future__ import annotations

from typing import List, Optional

from fabricbench import numbers as f
from fabricbench.models.fabric import FabricModel, fitted_points
from fabricbench.report.model import BulletList, Column, Figure, Paragraph, Section, Table

ORDER = 52

INTRO = (
    "Hockney models, t = alpha + n / beta, fitted to the least disturbed sample of each size (one "
    "regime per protocol range; breakpoints where the data ask for one, chosen by BIC). The fit "
    "error is the relative distance of the measured points from the model. Past the largest size "
    "measured the model is an extrapolation (dotted), capped at the link's steady rate when the "
    "run recorded it."
)


def regime_table(model: FabricModel) -> Table:
    rows = []
    for bench, h in [("point-to-point", model.p2p)] + [(c, m.model) for c, m in model.collectives.items()]:
        for k, r in enumerate(h.regimes):
            fitted = h.fit is not None
            rows.append([bench if k == 0 else "", f"{f.binary_size(r.size_min)} .. {f.binary_size(r.size_max)}" if fitted else "any",
                         f.number(r.alpha_us), f.number(r.beta_MBps) if r.beta_MBps != float("inf") else "-",
                         f.percent(100 * h.fit.median_rel).rstrip("%") if fitted and k == 0 else "",
                         f.percent(100 * h.fit.max_rel).rstrip("%") if fitted and k == 0 else ""])
    return Table([Column("Benchmark", align="left"), Column("Sizes", align="left"), Column("alpha", "us"),
                  Column("beta", "MB/s"), Column("Fit error median", "%"), Column("Fit error worst", "%")], rows,
                 caption=f"Regimes of {model.name} (MB/s decimal; '-': no size dependence)")


def model_section(model: FabricModel, points, fmt: str, slug: str) -> Section:
    """One fabric's model: the panels figure (when fitted), the regimes table, LogGP and notes."""
    from fabricbench.report.plots.models import model_panels

    section = Section(slug, f"Communication model: {model.name}")
    panels = []
    if points:
        panels.append(("point-to-point latency", *points["latency"], model.p2p))
        panels += [(name, *points[name], c.model) for name, c in model.collectives.items() if name in points]
    data = model_panels(panels, fmt) if panels else None
    if data is not None:
        section.add(Figure(f"{slug}-fit", "Measured points against the fitted model", data, fmt,
                           caption="Points: the least disturbed sample per size; lines: the model's regimes; dashed "
                                   "verticals: breakpoints; dotted: extrapolated past the largest size measured.",
                           alt="log-log panels of time against message size, measured points and the fitted model"))
    section.add(regime_table(model))
    if model.loggp:
        g = model.loggp
        section.add(Paragraph(
            f"LogGP (Netgauge's method, sizes {f.binary_size(g.valid_sizes[0])} .. {f.binary_size(g.valid_sizes[1])}): "
            f"L {f.number(g.L_us)} us, o_send {f.number(g.o_send_us)} us, o_recv {f.number(g.o_recv_us)} us, "
            f"g {f.number(g.g_us)} us, G {f.number(g.G_us_per_byte * 1e3)} ns/byte, O {f.number(g.O_us_per_byte * 1e3)} ns/byte; "
            f"fit error median {f.percent(100 * g.fit.median_rel)}."))
    if model.notes:
        from fabricbench.report.words.models import model_notes

        section.add(BulletList(model_notes(model)))
    return section


def build_all(ctx) -> List[Optional[Section]]:
    """A section per run with a fitted model (``ctx.models``: fitted before the report renders)."""
    out = []
    for lr in ctx.runs:
        model = ctx.models.get(lr.run.id)
        if model is None:
            continue
        section = model_section(model, fitted_points(lr.measurements), ctx.plot_format, f"model-{lr.id}")
        section.intro = INTRO
        out.append(section)
    return out
