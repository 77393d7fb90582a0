"""MPI profiles (runs from `fabricbench profile`): where the time went in MPI.

Per profiled run: the share of wall time in MPI, the top calls with their dominant message
sizes, per-rank imbalance, and three plots (MPI time by call per rank as stacked bars, the
message-size histogram, the communication matrix as a heatmap).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from fabricbench.analysis.profile import call_rows, summarize
from fabricbench.report.format import fixed, number, percent
from fabricbench.report.plots import profile as profile_plots
from fabricbench.report.model import BulletList, Column, Figure, Paragraph, Section, Table
from fabricbench.report.plots import save_figure

ORDER = 75
BENCHMARKS = {"mpi_profile"}


def _figure(slug, title, fig, fmt, caption):
    try:
        data = save_figure(fig, fmt)
    finally:
        plt.close(fig)
    return Figure(slug, title, data, fmt, alt=title, caption=caption)


def run_section(lr, fmt: str):
    data = lr.artifact("profile")
    if not data:
        return None
    s = summarize(data, top=8, talkers=8)
    section = Section(f"profile-{lr.id}", f"MPI profile: {lr.name}")
    mp, im = s["mpi_percent"], s["imbalance"]
    section.add(
        Paragraph(
            f"{s['headline']} over {s['ranks']} ranks; per rank {percent(mp['min'])} (rank {mp['min_rank']}) to "
            f"{percent(mp['max'])} (rank {mp['max_rank']}). Command: {' '.join(s['command']) or 'not recorded'}."
        ),
        BulletList([c["sentence"] for c in s["top_calls"]]),
        Table(
            [Column("Call", align="left"), Column("MPI time", "%"), Column("Wall time", "%"), Column("Calls"),
             Column("Time", "s"), Column("Bytes", align="right"), Column("Typical size", align="left")],
            [r[:1] + [r[1].rstrip("%"), r[2].rstrip("%")] + r[3:6] + [c["size_label"]]
             for r, c in zip(call_rows(s), s["top_calls"])],
            caption="Top MPI calls by time, summed over ranks",
        ),
        Paragraph(
            f"MPI time per rank: min {number(im['min'])} s (rank {im['min_rank']}), max {number(im['max'])} s "
            f"(rank {im['max_rank']}), coefficient of variation {fixed(im['cov'])}."
        ),
        _figure(f"profile-{lr.id}-time", "MPI time by call and rank", profile_plots.mpi_time_by_rank(data), fmt,
                "Stacked: each rank's time in its top MPI calls"),
        _figure(f"profile-{lr.id}-sizes", "Message sizes", profile_plots.message_size_histogram(data), fmt,
                "Calls per power-of-two message-size bin"),
        _figure(f"profile-{lr.id}-matrix", "Communication matrix", profile_plots.matrix_heatmap(data), fmt,
                "Bytes from source rank (rows) to destination rank (columns)"),
    )
    return section


def build_all(ctx):
    return [run_section(lr, ctx.plot_format) for lr in ctx.runs if lr.run.kind == "profile"]
