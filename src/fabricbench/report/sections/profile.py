"""MPI profiles (runs from `fabricbench profile`): where the time went in MPI.

Per profiled run: the share of wall time in MPI, the top calls with their dominant message
sizes, per-rank imbalance, the call sites (where in the program, as mpiP's call-site
table), the phases of the run (when), and three plots (MPI time by call per rank as
stacked bars, the message-size histogram, the communication matrix as a heatmap).
"""
from __future__ import annotations

from typing import Optional

import matplotlib.pyplot as plt

from fabricbench.analysis.profile import summarize
from fabricbench.analysis.profile_phases import phases
from fabricbench.analysis.profile_sites import callsites
from fabricbench.numbers import fixed, number, percent
from fabricbench.report.plots import profile as profile_plots
from fabricbench.report.model import BulletList, Column, Figure, Paragraph, Section, Table
from fabricbench.report.plots import save_figure
from fabricbench.report.words.profile import (call_rows, call_sentence, call_size, headline, phase_rows, site_note,
                                               site_rows)

ORDER = 75
BENCHMARKS = {"mpi_profile"}


def _figure(slug, title, fig, fmt, caption):
    try:
        data = save_figure(fig, fmt)
    finally:
        plt.close(fig)
    return Figure(slug, title, data, fmt, alt=title, caption=caption)


def run_section(lr, fmt: str, data: Optional[dict]):
    """The profile section of a run from its ``profile`` artifact (`data`, loaded by the caller)."""
    if not data:
        return None
    s = summarize(data, top=8, talkers=8)
    section = Section(f"profile-{lr.id}", f"MPI profile: {lr.name}")
    mp, im = s["mpi_percent"], s["imbalance"]
    section.add(
        Paragraph(
            f"{headline(s)} over {s['ranks']} ranks; per rank {percent(mp['min'])} (rank {mp['min_rank']}) to "
            f"{percent(mp['max'])} (rank {mp['max_rank']}). Command: {' '.join(s['command']) or 'not recorded'}."
        ),
        BulletList([call_sentence(c) for c in s["top_calls"]]),
        Table(
            [Column("Call", align="left"), Column("MPI time", "%"), Column("Wall time", "%"), Column("Calls"),
             Column("Time", "s"), Column("Bytes", align="right"), Column("Typical size", align="left")],
            [r[:1] + [r[1].rstrip("%"), r[2].rstrip("%")] + r[3:6] + [call_size(c)]
             for r, c in zip(call_rows(s), s["top_calls"])],
            caption="Top MPI calls by time, summed over ranks",
        ),
        Paragraph(
            f"MPI time per rank: min {number(im['min'])} s (rank {im['min_rank']}), max {number(im['max'])} s "
            f"(rank {im['max_rank']}), coefficient of variation {fixed(im['cov'])}."
        ),
    )
    _add_sites_and_phases(section, data)
    section.add(
        _figure(f"profile-{lr.id}-time", "MPI time by call and rank", profile_plots.mpi_time_by_rank(data), fmt,
                "Stacked: each rank's time in its top MPI calls"),
        _figure(f"profile-{lr.id}-sizes", "Message sizes", profile_plots.message_size_histogram(data), fmt,
                "Calls per power-of-two message-size bin"),
        _figure(f"profile-{lr.id}-matrix", "Communication matrix", profile_plots.matrix_heatmap(data), fmt,
                "Bytes from source rank (rows) to destination rank (columns)"),
    )
    return section


def _add_sites_and_phases(section: Section, data) -> None:
    cs = callsites(data, top=10)
    if cs["sites"]:
        section.add(Table(
            [Column("Site", align="right"), Column("Call", align="left"), Column("Where", align="left"),
             Column("Calls"), Column("Time", "s"), Column("MPI time", "%"), Column("Wall time", "%"),
             Column("Bytes", align="right"), Column("Mean size", align="left"), Column("Ranks"), Column("COV")],
            [r[:5] + [r[5].rstrip("%"), r[6].rstrip("%")] + r[7:] for r in site_rows(cs)],
            caption="MPI time by call site (caller's function, file and line), summed over ranks",
        ))
    note = site_note(cs)
    if note:
        section.add(Paragraph(note))
    ph = phases(data)
    if ph["phases"]:
        how = "the program's MPI_Pcontrol calls" if ph["method"] == "pcontrol" else "changes in the mix of MPI calls"
        section.add(Table(
            [Column("Phase", align="right"), Column("Start", "s"), Column("End", "s"), Column("In MPI", align="right"),
             Column("Top calls", align="left")],
            phase_rows(ph),
            caption=f"Phases of the run, split at {how} (time windows of {number(ph['step'])} s)",
        ))


def build_all(ctx):
    return [run_section(lr, ctx.plot_format, ctx.artifact_of(lr, "profile")) for lr in ctx.runs if lr.run.kind == "profile"]
