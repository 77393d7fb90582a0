"""A prediction (``models.predict``) as a report: headline with its band, the per-call breakdown
on A and as predicted on B (table and bars), the assumptions, and the models of both fabrics.

Predictions are not runs, so this module has no ``build``: ``prediction_report`` makes the
report that ``fabricbench predict PROFILE --on B --report FILE`` writes.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from fabricbench import numbers as f
from fabricbench.report.model import BulletList, Cell, Column, Figure, Paragraph, Section, Table
from fabricbench.report.words.models import interval_words


def breakdown_table(p) -> Table:
    rows = []
    for c in p.calls:
        size = f.binary_size(c.bytes / c.count) if c.count and c.bytes else "0 B"
        style = "better" if c.change_s < 0 else "worse" if c.change_s > 0 else ""
        rows.append([Cell(c.call), Cell(c.how), f.number(c.count), Cell(size), f.number(c.time_a_s), f.number(c.time_b_s),
                     f"{f.number(c.low_b_s)} .. {f.number(c.high_b_s)}", Cell(f.signed(c.change_s), style)])
    return Table([Column("Call", align="left"), Column("How", align="left"), Column("Calls"), Column("Mean size", align="left"),
                  Column("On A", "s"), Column("On B", "s"), Column("Band on B", "s"), Column("Change", "s")], rows,
                 caption="Time per rank (mean over ranks) of each MPI call on A and as predicted on B, largest change first")


def _band_sentence(p) -> str:
    b = getattr(p, "band", None) or {}
    if not b:
        return ""
    measured = b.get("profiles_measured_s") or []
    interval = b.get("interval")
    spread = (f"the spread of {b['profiles']} profiles of the application on A ({f.number(min(measured))} .. "
              f"{f.number(max(measured))} s), each predicted on B" + (f": {interval_words(interval)}" if interval else "")
              if b["profiles"] > 1 else
              "one profile only: the application's run-to-run spread is not in it")
    fit = f", and the models' fit error ({f.number(100 * b['fit_error'])}%)" if b.get("fit_error") else ""
    own = b.get("this_profile")
    point = (f" Both times are the medians over the application's {b['profiles']} profiles and their predictions; "
             f"profile run {p.profile_run} alone took {f.number(own['measured_s'])} s on A and predicts "
             f"{f.number(own['predicted_s'])} s." if own else "")
    return (f"{point} The band holds the re-costing choices ({f.number(b['recosting'][0])} .. {f.number(b['recosting'][1])} s "
            f"for this profile), {spread}{fit}.")


def _check_sentence(c) -> str:
    where = "inside" if c["in_band"] else "outside"
    text = (f"Checked against run {c['run']}" + (f" ({c['label']})" if c["label"] else "") +
            f", measured on B: {f.number(c['measured_s'])} s ({c['figure']}); the prediction's error is "
            f"{f.signed(100 * c['error'])}%, {where} the band.")
    from fabricbench.report.words.models import check_notes

    return text + "".join(f" Caution: {n}." for n in check_notes(c))


def prediction_section(p, fmt: str = "svg", check: Optional[dict] = None) -> Section:
    from fabricbench.report.plots.models import prediction_bars

    faster = p.predicted_s < p.measured_s
    factor = p.speedup if faster else (1 / p.speedup if p.speedup > 0 else float("inf"))
    app = getattr(p, "application", None)
    section = Section("prediction", f"Prediction: {app + ' on ' if app else ''}{p.target}")
    what = (f"{app} (profile run {p.profile_run})" if app else
            f"Profile run {p.profile_run}" if getattr(p, "profile_run", None) else "The profile")
    section.add(Paragraph(
        f"{what}, measured on A, {p.source_ref or p.source}: {f.number(p.measured_s)} s on {p.ranks} ranks "
        f"(MPI_Init to MPI_Finalize of the slowest rank; {'this profile: ' if (p.band or {}).get('this_profile') else ''}"
        f"compute {f.number(p.compute_s)} s, "
        f"MPI {f.number(p.mpi_a_s)} s per rank on average). Predicted on B, {p.target_ref or p.target}: "
        f"{f.number(p.predicted_s)} s (band {f.number(p.low_s)} .. {f.number(p.high_s)} s), {f.ratio(factor)} "
        f"{'faster' if faster else 'slower'}.{_band_sentence(p)}"))
    if check:
        section.add(Paragraph(_check_sentence(check)))
    if p.cpu_floor:
        from fabricbench.analysis.profile_cpu import sharing_sentence

        c = p.cpu_floor
        section.add(Paragraph(
            f"Ranks shared cores on A: {sharing_sentence(c)}. Their computation needs {f.number(c['demand_s'])} s "
            f"of CPU" + (f" and their messages {f.number(c['messaging_s'])} s of core time on B" if c["messaging_s"] else "")
            + f", so the run cannot be shorter than {f.number(c['floor_s'])} s on B; the network alone predicts "
            f"{f.number(c['network_s'])} s" + (", so the floor sets the prediction." if p.floor_applies else ".")))
    data = prediction_bars([c for c in p.calls if c.time_a_s > 0 or c.time_b_s > 0][:10], p.source, p.target, fmt)
    if data is not None:
        section.add(Figure("prediction-calls", "MPI time per call on A and B", data, fmt,
                           caption="Per call, the time per rank on A (measured) and on B (predicted, with the band).",
                           alt="horizontal bars per MPI call: time on A and predicted time on B"))
    from fabricbench.report.words.models import assumption_lines

    section.add(breakdown_table(p), Paragraph("Assumptions:"), BulletList(assumption_lines(p)))
    return section


def prediction_report(p, models: Sequence[Any], points: Sequence[Optional[dict]], fmt: str = "svg",
                      check: Optional[dict] = None):
    """A report of one prediction: its section, then the model of A and of B (fitted or catalogue)."""
    import datetime as _dt
    from types import SimpleNamespace

    from fabricbench import __version__
    from fabricbench.report.model import Report
    from fabricbench.report.sections.models import model_section

    sections: List[Section] = [prediction_section(p, fmt, check)]
    for tag, model, pts in zip(("a", "b"), models, points):
        sections.append(model_section(model, pts, fmt, f"model-{tag}"))
    app = getattr(p, "application", None)
    return Report(title=f"fabricbench prediction: {app + ' on ' if app else ''}{p.target}",
                  generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), tool_version=__version__,
                  runs=[SimpleNamespace(name=p.source)], sections=sections)
