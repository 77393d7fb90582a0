"""The head of every study's report: the conditions it ran under, the exact command that
reproduces it and the paper's sentences computed from the data, each with its verdict.

``conditions_lines`` and ``finding_sentence`` are also what the study commands print, so the
terminal and the report say the same thing.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from fabricbench.analysis.studies import Conditions, Finding
from fabricbench import numbers as f
from fabricbench.report.model import BulletList, Notice, Paragraph, Section
from fabricbench.report.words.compare import reason

NOT_JUDGED = ("not judged", "host busy", "host changed", "isolated")


def conditions_lines(c: Conditions) -> List[str]:
    """The conditions as short lines: where, rates, ranks, MPI, host load."""
    where = "the lab (network namespaces, tc-shaped links)" if c.where == "lab" else "a cluster"
    lines = [f"where: {where}; launcher {', '.join(c.launchers) or '-'}; {f.count(c.runs)} runs"]
    if c.rates:
        lines.append("link rates: " + ", ".join(f"{name} {rate}" for name, rate in c.rates.items()))
    if c.nodes or c.ranks:
        lines.append(f"nodes: {', '.join(f.exact(n) for n in c.nodes) or '-'}; "
                     f"ranks: {', '.join(f.exact(n) for n in c.ranks) or '-'}")
    lines.append(f"MPI: {'; '.join(c.mpi) or 'not recorded'}")
    if c.load_max is not None:
        span = f.number(c.load_max) if c.load_min == c.load_max else f"{f.number(c.load_min)} to {f.number(c.load_max)}"
        cpus = f" on {f.exact(c.cpus)} CPUs" if c.cpus else ""
        lines.append(f"host load: {span} other runnable tasks{cpus} while the runs started")
    return lines


def finding_sentence(x: Finding) -> str:
    """The paper's sentence for one figure: '"slow" has 48.2% lower bandwidth than "fast" at 1 MiB
    (B/A 0.52x; worse)', or says that it cannot be judged."""
    at = f"at {f.binary_size(x.size)}" if x.size is not None else ""
    if x.ratio is None:
        return f"{x.kind} {at}: not measured on both fabrics"
    if x.kind == "latency":
        diff = (x.b or 0.0) - (x.a or 0.0)
        what = (f"{x.b_name} adds {f.number(abs(diff))} {x.unit} of latency to {x.a_name}'s {f.number(x.a)} {x.unit}"
                if diff >= 0 else f"{x.b_name} takes {f.number(abs(diff))} {x.unit} less latency than {x.a_name}'s "
                f"{f.number(x.a)} {x.unit}")
    else:
        change = 100.0 * (x.ratio - 1.0)
        word = "higher" if change >= 0 else "lower"
        what = (f"{x.b_name} has {f.percent(abs(change))} {word} bandwidth than {x.a_name} "
                f"({f.number(x.b)} against {f.number(x.a)} {x.unit})")
    verdict = x.verdict if x.verdict not in NOT_JUDGED else f"cannot judge: {x.verdict}"
    why = reason(x.point) if x.point is not None else x.reason
    reason_text = f" ({why})" if why and x.verdict in NOT_JUDGED else ""
    return f"{what} {at} (B/A {f.ratio(x.ratio)}; {verdict}{reason_text})"


def study_head(title: str, conditions: Conditions, command: str, findings: Sequence[Finding] = (),
               sentences: Sequence[str] = (), intro: str = "", notes: Sequence[str] = ()) -> Section:
    """The first section of a study's report."""
    section = Section("study", title, intro=intro)
    lines = [finding_sentence(x) for x in findings] + list(sentences)
    if lines:
        section.add(Paragraph("Findings, computed from the runs below:"), BulletList(lines))
    section.add(Paragraph("Conditions:"), BulletList(conditions_lines(conditions)))
    section.add(Paragraph(f"Reproduce with: {command}"))
    for note in notes:
        section.add(Notice(note, "warning"))
    return section


def prepend(report, section: Optional[Section]):
    """The report with `section` first."""
    if section is not None:
        report.sections.insert(0, section)
    return report


# ---- seed 000: `study osu-fabric` ----------------------------------------------------------------

OSU_INTRO = (
    "Seed 000's page for every fabric studied: OSU-style one-way latency and bandwidth between two "
    "nodes (the Latency and Bandwidth sections), the fabric manager's view of each fabric (the Fabric "
    "sections: topology, link width and speed, error counters, the subnet manager's state) and each "
    "application's performance relative to the first fabric, the baseline (the Applications section). "
    "The comparison section has every size's verdict; bandwidth is decimal MB/s (10^6 B/s)."
)


def osu_findings_of(engine_runs) -> List[Finding]:
    """B against the first fabric, for every other fabric: latency at the smallest size, bandwidth at
    the largest (engine_runs: {fabric name: its loaded engine run, ``store.RunData``})."""
    from fabricbench.analysis.compare import compare
    from fabricbench.analysis.studies import osu_findings

    names = list(engine_runs)
    if len(names) < 2:
        return []
    a = engine_runs[names[0]]
    found = []
    for name in names[1:]:
        found += osu_findings(compare(a, engine_runs[name]), names[0], name)
    return found


def fabric_sentence(name: str, snap, verdict) -> str:
    """One fabric manager's view in a line: size, link widths and speeds, the subnet manager, the verdict
    (verdict: analysis.fabric's FabricReport of the snapshot, judged as `fabric check` judges it)."""
    from fabricbench.report.words.fabric import describe_sm, verdict as fabric_verdict
    from fabricbench.analysis.fabric_model import link_label

    labels = sorted({link_label(link.width, link.speed) for link in snap.links()})
    return (f"{name} as its manager sees it: {_count(len(snap.switches()), 'switch', 'switches')}, "
            f"{_count(len(snap.cas()), 'HCA', 'HCAs')}, {_count(len(snap.links()), 'link', 'links')} at {', '.join(labels) or '-'}; "
            f"{describe_sm(snap) or 'no master subnet manager'}; {fabric_verdict(verdict)}")


def _study_fabric(run) -> str:
    """The fabric's name as the study was given it (engine runs: provenance study.fabric; applications:
    study.application.study_fabric)."""
    from fabricbench.analysis.apps import fabric_of

    study = (run.provenance or {}).get("study") or {}
    return str(study.get("fabric") or fabric_of(run))


def _count(n: int, one: str, many: str) -> str:
    return f"{f.count(n)} {one if n == 1 else many}"


def osu_fabric_report(runs, given, command: str, findings: Sequence[Finding] = (), options=None,
                      fabric_views=None, problems: Sequence[str] = ()):
    """The one page of `study osu-fabric`: the study's head, then the report of every run (loaded:
    ``store.RunData``, with what was loaded and fitted for them: ``report.context.Given``; options:
    ``osu_fabric_options``). fabric_views: {fabric name: (snapshot, its verdict)}, loaded and judged
    by the caller."""
    from fabricbench.analysis.studies import conditions_of
    from fabricbench.report import build_report

    conditions = conditions_of([lr.run for lr in runs], fabric_of=_study_fabric)
    report = build_report(runs, given, options or osu_fabric_options())
    from fabricbench.analysis.apps import slowdown_summary
    from fabricbench.report.sections.apps import studies_of_runs

    apps = studies_of_runs([lr for lr in report.runs if lr.run.kind == "scaling"])
    sentences = [fabric_sentence(name, snap, verdict) for name, (snap, verdict) in (fabric_views or {}).items()]
    sentences += [f"{app}: on {fab} {f.ratio(x)} the performance of the baseline at {f.exact(n)} nodes"
                 for app, fab, n, x in slowdown_summary(apps) if x is not None]
    return prepend(report, study_head("Study osu-fabric: latency, bandwidth, the fabric manager's view, applications",
                                      conditions, command, findings, sentences, OSU_INTRO, notes=problems))


def osu_fabric_options(plot_format: str = "svg"):
    """The report options of `study osu-fabric`'s page."""
    from fabricbench.report import ReportOptions

    return ReportOptions(title="Study osu-fabric (seed 000)", plot_format=plot_format)


# ---- seed 003: `study scaling-claims` ------------------------------------------------------------

CLAIMS_INTRO = (
    "Seed 003's claims, measured: each application's efficiency against its smallest scale (the "
    "normalised base), its performance under every setting of the tuning variable relative to the "
    "first setting, each with its verdict, and the full configuration of every series. Relative "
    "performance above 1: the setting is faster."
)


def setting_sentence(x) -> str:
    """'lammps-lj with btl_tcp_eager_limit=65536: 1.02x the performance of 4096 at 2 nodes (verdict)'."""
    axis = x.axis if x.scale != 1 else x.axis.rstrip("s")
    return (f"{x.app + ' ' if x.app else ''}with {x.variable}={x.setting}: {f.ratio(x.ratio)} the performance of "
            f"{x.variable}={x.reference} at {f.exact(x.scale)} {axis} ({x.verdict}{_busy(x.busy)})")


def _busy(busy) -> str:
    if not busy:
        return ""
    load, cpus = busy
    return f": {f.number(load)} other runnable tasks on {f.count(cpus)} CPUs"


def efficiency_sentence(x) -> str:
    """'lammps-lj btl_tcp_eager_limit=4096: 84% scaling efficiency at 2 nodes relative to the 1 node result'."""
    base = f"the {f.exact(x.base)} {x.axis.rstrip('s')} result" if x.base is not None else "its smallest scale"
    return f"{x.series}: {f.percent(100.0 * x.efficiency, decimals=0)} scaling efficiency at {f.exact(x.scale)} {x.axis} relative to {base}"


def claims_report(runs, names: Sequence[str], analysis, variable: str, command: str, plot_format: str = "svg"):
    """The report of `study scaling-claims`: the head (findings, conditions, command) and the scaling
    section (efficiency, relative performance by the variable, the configuration disclosed), from
    the study's runs (``store.Run``), their names and the analysis of their series (fitted by the
    caller: ``cli.studies.claims_analysis``)."""
    import datetime as _dt
    from types import SimpleNamespace

    from fabricbench import __version__
    from fabricbench.analysis.studies import conditions_of, efficiency_findings, setting_findings
    from fabricbench.report.model import Report
    from fabricbench.report.sections.scaling import scaling_section

    conditions = conditions_of(runs)
    sentences = [efficiency_sentence(x) for x in efficiency_findings(analysis)]
    sentences += [setting_sentence(x) for x in setting_findings(analysis, variable, conditions)]
    head = study_head(f"Study scaling-claims: efficiency and the tuning variable {variable}", conditions, command,
                      sentences=sentences, intro=CLAIMS_INTRO)
    return Report(
        title=f"Study scaling-claims (seed 003): {variable}",
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        runs=[SimpleNamespace(name=n) for n in names],
        sections=[head, scaling_section(analysis, plot_format, runs=runs, names=names)],
    )
