"""The fabric: the verdict, the topology picture, the link table and the error table of a snapshot.

One section per fabric snapshot (a run of kind ``fabric``) in the report, judged by
``analysis.fabric.check`` - the same verdict as ``fabricbench fabric check`` - against the
earlier stored snapshot of the same fabric the caller found (``Given.previous``), else the
report's previous snapshot of the same fabric when it has one.
"""
from __future__ import annotations

from typing import Any, List, Optional

from fabricbench.analysis.fabric import FabricReport, check, same_fabric
from fabricbench.report.words.fabric import describe_sm, evidence, verdict
from fabricbench.analysis.fabric_model import ERROR_COUNTERS, Snapshot, link_label
from fabricbench.report.blocks import slugify
from fabricbench.report.model import Cell, Column, Figure, Notice, Paragraph, Section, Table
from fabricbench.report.plots.fabric import topology
from fabricbench import numbers

ORDER = 57
BENCHMARKS = {"port_counters"}
_STYLE = {"critical": "worse", "warning": "warn", "info": "muted"}


def snapshot_of(data: Any, measurements: Any) -> Optional[Snapshot]:
    """The snapshot a fabric run's ``fabric`` artifact and port counters hold, or None (none, or unreadable)."""
    if data is None:
        return None
    try:
        return Snapshot.from_stored(data, measurements)
    except (ValueError, KeyError, TypeError):
        return None


def _snapshot(ctx: Any, loaded: Any) -> Optional[Snapshot]:
    return snapshot_of(ctx.artifact_of(loaded, "fabric"), loaded.measurements)


def build_all(ctx: Any) -> List[Section]:
    loaded = [(lr, _snapshot(ctx, lr)) for lr in ctx.runs if lr.run.kind == "fabric"]
    loaded = [(lr, s) for lr, s in loaded if s is not None]
    sections = []
    for i, (lr, snap) in enumerate(loaded):
        sections.append(_section(ctx, lr, _verdict(ctx, lr, snap, loaded[:i]), len(loaded) > 1))
    return sections


def _verdict(ctx: Any, lr: Any, snap: Snapshot, before: List[Any]) -> FabricReport:
    """The verdict `fabric check RUN` gives (as workflows.fabric.judge_stored: against the newest
    earlier stored snapshot of the same fabric, which the caller found: ``Given.previous``); a run
    the caller found none for is judged against the report's own earlier snapshot."""
    if lr.run.id in ctx.given.previous:
        previous = ctx.given.previous[lr.run.id]
        return check(snap, previous[1] if previous else None)
    earlier = [s for other, s in before if other.run.id < lr.run.id and same_fabric(snap, s)]
    return check(snap, earlier[-1] if earlier else None)


def _section(ctx: Any, lr: Any, report: FabricReport, several: bool) -> Section:
    snap = report.snapshot
    sid = slugify(f"fabric-{lr.name}") if several else "fabric"
    section = Section(sid, f"Fabric: {lr.name}" if several else "Fabric")
    section.intro = ("The fabric as infiniband-diags saw it (ibnetdiscover, iblinkinfo, smpquery, ibqueryerrors): every "
                     "cable with the width and speed it runs at against what it should run at, the subnet manager, and "
                     "the ports' error counters. Data rates in Gb/s per direction (10^9 bits/s).")
    section.add(Notice(verdict(report), "note" if report.healthy else "warning"))
    facts = [f"snapshot of {snap.taken} ({snap.source})", f"{len(snap.switches())} switches", f"{len(snap.cas())} HCAs",
             f"{len(snap.links())} cables"]
    sm = describe_sm(snap)
    if sm:
        facts.append(sm)
    if snap.design:
        facts.append(f"design {link_label(snap.design.get('width'), snap.design.get('speed'))}")
    section.add(Paragraph("; ".join(facts) + "."))
    for note in report.notes:
        section.add(Notice(note, "note"))
    section.add(Figure(slugify(f"{sid}-topology"), "Topology",
                       topology(snap, report.findings, fmt=ctx.plot_format, previous=report.previous), ctx.plot_format,
                       alt=f"topology of {len(snap.switches())} switches and {len(snap.cas())} HCAs",
                       caption="spine switches on top, leaf switches below, HCAs at the bottom; green: healthy, orange: "
                               "degraded or errors, red: down or not active (dashed: a cable that went down); "
                               "thicker: faster"))
    if report.findings:
        rows = [[Cell(f.severity, _STYLE.get(f.severity, "")), f.kind, ", ".join(f.ports) or "-", evidence(f)]
                for f in report.findings]
        section.add(Table([Column("Severity", align="left"), Column("Kind", align="left"), Column("Ports", align="left"),
                           Column("Evidence", align="left")], rows, caption="Findings"))
    section.add(_link_table(report))
    errors = _error_table(snap)
    if errors is not None:
        section.add(errors)
    return section


def _link_table(report: FabricReport) -> Table:
    snap = report.snapshot
    flagged = {p: f for f in report.problems for p in f.ports}
    rows = []
    for link in snap.links():
        a, b = snap.ports[link.a], snap.ports[link.b]
        names = [snap.port_name(link.a), snap.port_name(link.b)]
        finding = next((flagged[n] for n in names if n in flagged), None)
        state = a.state if a.state == b.state else f"{a.state} / {b.state}"
        errors = sum(p.counters.get(n, 0) for p in (a, b) for n in ERROR_COUNTERS if n != "PortXmitWait")
        style = _STYLE.get(finding.severity, "") if finding else ""
        rows.append([names[0], names[1], Cell(link_label(link.width, link.speed), style), numbers.number(link.gbps),
                     state or "-", numbers.count(errors) if snap.counters_read else "-",
                     Cell(finding.kind, style) if finding else ""])
    return Table([Column("Port", align="left"), Column("Cable to", align="left"), Column("Width and speed", align="left"),
                  Column("Data rate", "Gb/s"), Column("State", align="left"), Column("Errors", "count"),
                  Column("Finding", align="left")], rows, caption="Links (errors: both ends' error counters)")


def _error_table(snap: Snapshot) -> Optional[Table]:
    if not snap.counters_read:
        return None
    rows = []
    for key in sorted(snap.ports, key=lambda k: snap.port_name(k)):
        port = snap.ports[key]
        counts = {n: port.counters.get(n, 0) for n in ERROR_COUNTERS if port.counters.get(n)}
        if counts:
            rows.append([snap.port_name(key), snap.port_name(port.remote) if port.remote else "-",
                         f"{numbers.count(sum(counts.values()))}", ", ".join(f"{n} {numbers.count(v)}" for n, v in counts.items())])
    if not rows:
        return Table([Column("Port", align="left"), Column("Counters", align="left")], [["-", "every error counter is zero"]],
                     caption="Error counters")
    return Table([Column("Port", align="left"), Column("Cable to", align="left"), Column("Errors", "count"),
                  Column("Counters", align="left")], rows, caption="Error counters (ports with any)")
