"""What every study's report states, as data: the conditions its runs were measured under and
the findings (the paper's sentences before they are written) of seed 000's OSU latency and
bandwidth comparison. Pure functions of stored runs; the words are chosen in
``report.sections.study``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple



@dataclass
class Conditions:
    """Where and how a study's runs ran: lab or cluster, link rates, ranks, MPI, host load."""

    where: str  # "lab" or "cluster"
    launchers: List[str] = field(default_factory=list)
    rates: Dict[str, str] = field(default_factory=dict)  # fabric name -> lab link rate ("1gbit")
    ranks: List[int] = field(default_factory=list)
    nodes: List[int] = field(default_factory=list)
    mpi: List[str] = field(default_factory=list)
    load_min: Optional[float] = None  # tasks runnable besides the run, over the runs
    load_max: Optional[float] = None
    cpus: Optional[int] = None
    runs: int = 0


def conditions_of(runs: Sequence[Any], fabric_of=lambda run: (run.tags or {}).get("fabric")) -> Conditions:
    """The conditions of the runs (store.Run), gathered from their recorded provenance."""
    launchers: List[str] = []
    rates: Dict[str, str] = {}
    ranks, nodes, mpi, loads = set(), set(), [], []
    cpus = None
    for run in runs:
        p = run.provenance or {}
        launcher = p.get("launcher") or ("lab" if p.get("lab") else None)
        if launcher and launcher not in launchers:
            launchers.append(launcher)
        lab = p.get("lab") or (p.get("study") or {}).get("application", {}).get("lab")
        name = fabric_of(run)
        if isinstance(lab, dict) and lab.get("link") and name:
            rates.setdefault(str(name), str(lab["link"]))
        if run.ranks:
            ranks.add(int(run.ranks))
        if p.get("nodes"):
            nodes.add(int(p["nodes"]))
        library = p.get("mpi_library")
        if library:
            short = str(library).split(",")[0]
            if short not in mpi:
                mpi.append(short)
        load = p.get("host_load") or {}
        value = load.get("runnable_others", load.get("loadavg_1m"))
        if value is not None:
            loads.append(float(value))
            cpus = load.get("cpus") or cpus
    where = "lab" if launchers and all(x == "lab" for x in launchers) else "cluster" if launchers else "lab" if rates else "cluster"
    return Conditions(where=where, launchers=launchers, rates=rates, ranks=sorted(ranks), nodes=sorted(nodes), mpi=mpi,
                      load_min=min(loads) if loads else None, load_max=max(loads) if loads else None, cpus=cpus,
                      runs=len(runs))


@dataclass
class Finding:
    """One figure of a study as a comparison of B against the reference A, with its verdict."""

    kind: str  # "latency" (the smallest size) or "bandwidth" (the largest size)
    a_name: str
    b_name: str
    size: Optional[int]
    a: Optional[float]
    b: Optional[float]
    unit: str
    ratio: Optional[float]  # B / A
    verdict: str  # compare's verdict: better, worse, no significant difference, not judged, ...
    reason: str = ""  # compare's reason in words, when it has no figure in it (see `point`)
    lower_is_better: bool = True
    point: Any = None  # compare's PointComparison, for a reason with figures (report.words.compare.reason)

    @property
    def b_slower(self) -> Optional[bool]:
        """True when B is the worse fabric by this figure (whether or not the difference is judged)."""
        if self.ratio is None:
            return None
        return self.ratio > 1 if self.lower_is_better else self.ratio < 1


def osu_findings(comparison: Any, a_name: str, b_name: str) -> List[Finding]:
    """Seed 000's two figures from a ``compare`` of B's engine run against A's: the latency of the
    smallest message and the bandwidth of the largest, each with compare's verdict."""
    found = []
    for series in comparison.series:
        kind = "latency" if series.metric == "latency" else "bandwidth" if series.metric == "bandwidth" else None
        if kind is None or not series.points or series.benchmark_a not in ("latency", "bw"):
            continue
        sized = [p for p in series.points if p.size is not None and p.a is not None and p.b is not None]
        if not sized:
            continue
        point = sized[0] if kind == "latency" else sized[-1]
        found.append(Finding(kind, a_name, b_name, point.size, point.a, point.b, series.unit, point.ratio, point.verdict,
                             point.reason, series.lower_is_better, point))
    return found


# ---- seed 003: tuning variables and the configuration disclosed ----------------------------------

ENV_PREFIXES = ("OMPI_MCA_", "UCX_", "FI_", "I_MPI_", "MPIR_CVAR_", "PSM2_", "HFI_", "MV2_", "NCCL_")


def tuning_of(run: Any) -> Dict[str, str]:
    """The MPI tuning a run was launched with: every ``--mca NAME VALUE`` (and ``-mca``),
    ``-x NAME=VALUE`` and srun ``--export=...,NAME=VALUE`` (``OMPI_MCA_NAME`` read as ``NAME``) of its
    recorded launch line, and the MPI environment variables it recorded."""
    p = run.provenance or {}
    argv = [str(a) for a in p.get("launch") or []]
    found: Dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--mca", "-mca", "--gmca", "-gmca") and i + 2 < len(argv):
            found[argv[i + 1]] = argv[i + 2]
            i += 3
            continue
        if arg.startswith("--export=") or (arg == "--export" and i + 1 < len(argv)):  # srun
            listed = arg[len("--export="):] if arg.startswith("--export=") else argv[i + 1]
            for item in listed.split(","):
                name, eq, value = item.partition("=")
                if eq:
                    found[name[len("OMPI_MCA_"):] if name.startswith("OMPI_MCA_") else name] = value
            i += 1 if arg.startswith("--export=") else 2
            continue
        if arg == "-x" and i + 1 < len(argv) and "=" in argv[i + 1]:
            name, _, value = argv[i + 1].partition("=")
            found[name] = value
            i += 2
            continue
        i += 1
    for name, value in (p.get("env") or {}).items():
        if str(name).startswith(ENV_PREFIXES):
            found.setdefault(str(name), str(value))
    return found


def tuning_differences(runs: Sequence[Any]) -> Dict[str, List[Optional[str]]]:
    """The tuning variables whose setting differs between the runs: name -> each run's value (None: unset)."""
    settings = [tuning_of(r) for r in runs]
    names = sorted({k for s in settings for k in s})
    return {k: [s.get(k) for s in settings] for k in names if len({s.get(k) for s in settings}) > 1}


def disclosure(runs: Sequence[Any]) -> List[Tuple[str, List[str]]]:
    """Seed 003's full configuration, one (item, value per run) row each: what ran, where, with what
    MPI and tuning. Items every run lacks are left out; a run lacking an item others have shows '-'."""
    rows: List[Tuple[str, List[str]]] = []

    def add(item: str, values: List[Any]) -> None:
        texts = ["-" if v in (None, "", [], {}) else str(v) for v in values]
        if any(t != "-" for t in texts):
            rows.append((item, texts))

    provs = [r.provenance or {} for r in runs]
    studies = [p.get("study") or {} for p in provs]
    apps = [s.get("application") or {} for s in studies]
    add("application", [" ".join(filter(None, [a.get("name"), a.get("version")])) or " ".join(s.get("app") or [])
                        for a, s in zip(apps, studies)])
    add("problem size", [a.get("size") for a in apps])
    add("figure of merit", [a.get("fom") or s.get("primary_metric") for a, s in zip(apps, studies)])
    add("scales (nodes x ranks)", [", ".join(f"{q.get('nodes') or '-'}x{q.get('ranks')}" for q in s.get("points") or [])
                                   for s in studies])
    add("repetitions", [s.get("repeat") for s in studies])
    add("mode", [s.get("mode") for s in studies])
    add("launcher", [p.get("launcher") for p in provs])
    labs = [p.get("lab") or (a.get("lab") or {}) for p, a in zip(provs, apps)]
    add("lab link", [lab.get("link") for lab in labs])
    add("lab MTU", [lab.get("mtu") for lab in labs])
    add("MPI library", [str(p.get("mpi_library") or "").split(",")[0] for p in provs])
    add("MPI launcher", [(p.get("mpi_launcher") or {}).get("version") for p in provs])
    add("fabric tag", [(r.tags or {}).get("fabric") for r in runs])
    settings = [tuning_of(r) for r in runs]
    for name in sorted({k for s in settings for k in s}):
        add(f"tuning: {name}", [s.get(name) for s in settings])
    return rows


@dataclass
class SettingFinding:
    """One setting of a tuning variable against the reference setting, at one scale."""

    app: str
    variable: str
    reference: str  # the reference setting's value
    setting: str
    scale: float
    axis: str
    ratio: Optional[float]  # > 1: the setting is faster (scaling.relative_performance)
    verdict: str  # better, worse, no significant difference, cannot judge: ...
    busy: Optional[Tuple[float, int]] = None  # host busy: (other runnable tasks, CPUs)


@dataclass
class EfficiencyFinding:
    series: str
    base: Optional[float]
    scale: float
    axis: str
    efficiency: Optional[float]


def host_busy(conditions: Conditions) -> bool:
    """As many other runnable tasks as CPUs while a run started: a difference may be the load's."""
    return conditions.load_max is not None and conditions.cpus is not None and conditions.load_max >= conditions.cpus


def setting_findings(analysis: Any, variable: str, conditions: Conditions) -> List[SettingFinding]:
    """Every setting against the reference at every compared scale, with a verdict that says when it
    cannot be judged (one repetition, a busy host)."""
    tags = {sa.series.name: sa.series.tags for sa in analysis.series}
    axis = analysis.series[0].series.axis if analysis.series else "nodes"
    busy = host_busy(conditions)
    found = []
    for c in analysis.comparisons:
        ta, tb = tags.get(c.a, {}), tags.get(c.b, {})
        if variable not in ta or variable not in tb:
            continue
        for p in c.points:
            if p.ratio is None:
                verdict = "not measured on both"
            elif p.significant is None:
                verdict = "cannot judge: one repetition (--repeat 2 or more)"
            elif not p.significant:
                verdict = "no significant difference"
            elif busy:
                verdict = "cannot judge: host busy"
            else:
                verdict = "better" if p.ratio > 1 else "worse"
            found.append(SettingFinding(str(ta.get("app") or c.group.get("app") or ""), variable, ta[variable],
                                        tb[variable], p.scale, axis, p.ratio, verdict,
                                        (conditions.load_max, conditions.cpus) if verdict.endswith("host busy") else None))
    return found


def efficiency_findings(analysis: Any) -> List[EfficiencyFinding]:
    """Seed 003's '91% scaling efficiency relative to the 8 node result': each series at its largest scale."""
    found = []
    for sa in analysis.series:
        measured = [e for e in sa.efficiency if e.efficiency is not None]
        if measured:
            last = measured[-1]
            found.append(EfficiencyFinding(sa.series.name, sa.baseline, last.scale, sa.series.axis, last.efficiency))
    return found
