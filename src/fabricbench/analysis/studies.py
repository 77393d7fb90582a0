"""What every study's report states, as data: the conditions its runs were measured under and
the findings (the paper's sentences before they are written) of seed 000's OSU latency and
bandwidth comparison. Pure functions of stored runs; the words are chosen in
``report.sections.study``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence


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
    reason: str = ""
    lower_is_better: bool = True

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
                             point.reason, series.lower_is_better))
    return found
