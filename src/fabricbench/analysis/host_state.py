"""Whether the host itself changed state between two runs, from the engine's host probe.

Every engine launch starts with a probe of the host, not the fabric (``native/engine/probe.c``):
the time of a fixed chain of integer operations on each rank (the core's clock) and the round
trip of one cache line between two ranks that share a node (where the hypervisor or scheduler
put the cores). On a virtual machine the second moves several-fold between launches (0.09 or
0.32 us here) and the shared-memory ping-pong with it (0.13 or 0.36 us at 8 B): two identical
runs caught in different states differ at every size, and no statistic on the two runs can
tell that from a change of the fabric. The probe can: when the runs ran on the same hosts and
a probe figure moved significantly, a point is attributed to the fabric only when it changed
by more than the host's move could explain (``allowance``); ``analysis.compare`` calls the
rest "host changed". How much a point follows the probe is learnt from the launches when the
host changed state between launches of one run (``sensitivity``: the shared-memory ping-pong
follows the round trip one to one, a 4 MiB TCP transfer hardly at all); otherwise every
point is taken to follow it fully.
"""
from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

FIGURES = {  # probe figure: what it times, for the output (report.words.host)
    "c2c_us": "a cache line's round trip between two cores",
    "loop_us": "a fixed chain of integer operations on a core",
}
ALPHA = 0.01  # a probe figure moved when its launches differ at this level (Welch's t on ln) ...
MOVED = math.log(1.10)  # ... or their geometric means by this much: the states can mix within a
# benchmark's launches (1 of 3 in the fast state), which 3 launches cannot test, while one state's
# launches agree within about 3.5% (so 3 against 3 differ by 10% about once in 1,500 pairs)
MIXED = math.log(1.5)  # the probe varied this much within runs: a point's sensitivity can be learnt


@dataclass(frozen=True)
class HostShift:
    """How one probe figure moved from A to B (the one that moved most), for one benchmark's launches."""

    figure: str
    a: float  # geometric mean over A's launches, microseconds
    b: float
    launches: int  # launches behind the figures (both sides)
    p: Optional[float]  # Welch's t on the launches' ln figures (None: too few launches)
    a_launches: Tuple[float, ...] = ()  # the figure at each of A's launches, in launch order
    b_launches: Tuple[float, ...] = ()

    @property
    def log_shift(self) -> float:
        return abs(math.log(self.b / self.a))

    @property
    def factor(self) -> float:
        return math.exp(self.log_shift)

    def to_dict(self) -> Dict[str, Any]:
        return {"figure": self.figure, "a_us": self.a, "b_us": self.b, "factor": self.factor,
                "launches": self.launches, "p": self.p,
                "a_launches": list(self.a_launches), "b_launches": list(self.b_launches)}


def launch_figures(probes: Sequence[Dict[str, Any]], benchmark: Optional[str] = None) -> Dict[str, List[float]]:
    """{figure: one positive value per launch} of the launches of `benchmark` (all when None);
    a launch's loop time is the median over its ranks."""
    out: Dict[str, List[float]] = {f: [] for f in FIGURES}
    for p in probes:
        if benchmark is not None and p.get("benchmark") != benchmark:
            continue
        c2c = p.get("c2c_us")
        if isinstance(c2c, (int, float)) and c2c > 0:
            out["c2c_us"].append(float(c2c))
        loops = [float(x) for x in p.get("loop_us") or [] if isinstance(x, (int, float)) and x > 0]
        if loops:
            out["loop_us"].append(float(statistics.median(loops)))
    return out


def _shift(figure: str, a: Sequence[float], b: Sequence[float]) -> HostShift:
    import numpy as np  # here, not at the top: `fabricbench show` imports this module and starts fast
    from scipy import stats as sps

    la, lb = np.log(a), np.log(b)
    p = None
    if len(a) >= 2 and len(b) >= 2:
        if np.ptp(la) == 0 and np.ptp(lb) == 0:
            p = 1.0 if la[0] == lb[0] else 0.0
        else:
            with warnings.catch_warnings():  # one side's launches all alike: scipy warns, the test holds
                warnings.simplefilter("ignore", RuntimeWarning)
                p = float(sps.ttest_ind(la, lb, equal_var=False).pvalue)
    return HostShift(figure, float(np.exp(la.mean())), float(np.exp(lb.mean())), len(a) + len(b), p,
                     tuple(a), tuple(b))


def host_shift(a_probes: Sequence[Dict[str, Any]], b_probes: Sequence[Dict[str, Any]],
               a_benchmark: Optional[str] = None, b_benchmark: Optional[str] = None) -> Optional[HostShift]:
    """The probe figure that moved most between A's launches of `a_benchmark` and B's of
    `b_benchmark` (every launch of a side that has none of its benchmark), when it moved
    (significantly, or by MOVED); else None."""
    a_all, b_all = launch_figures(a_probes), launch_figures(b_probes)
    a_own, b_own = launch_figures(a_probes, a_benchmark), launch_figures(b_probes, b_benchmark)
    moved = []
    for figure in FIGURES:
        a = a_own[figure] or a_all[figure]
        b = b_own[figure] or b_all[figure]
        if not a or not b:
            continue
        s = _shift(figure, a, b)
        if (s.p is not None and s.p < ALPHA) or s.log_shift >= MOVED:
            moved.append(s)
    return max(moved, key=lambda s: s.log_shift) if moved else None


def same_hosts(a: Any, b: Any) -> bool:
    """Whether two loaded runs ran on the same hosts (by name): only then is a probe's move the
    host changing state, rather than two different machines."""
    names_a = sorted(h.hostname for h in getattr(a, "hosts", []) or [])
    names_b = sorted(h.hostname for h in getattr(b, "hosts", []) or [])
    return bool(names_a) and names_a == names_b


def sensitivity(shift: HostShift, a_launches: Sequence[float], b_launches: Sequence[float]) -> Optional[float]:
    """How much a point's ln figure follows the probe's ln figure, |slope| within each run's
    launches (pooled over A and B), at most 1; None when the probe did not vary within a run
    by MIXED or the point's launches do not line up with the probe's."""
    import numpy as np

    dy: List[float] = []
    dc: List[float] = []
    for y, c in ((a_launches, shift.a_launches), (b_launches, shift.b_launches)):
        if len(y) != len(c) or len(y) < 2 or min(y) <= 0:
            continue
        ly, lc = np.log(y), np.log(c)
        dy.extend(ly - ly.mean())
        dc.extend(lc - lc.mean())
    sxx = float(np.dot(dc, dc)) if dc else 0.0
    if sxx < MIXED ** 2:
        return None
    return min(1.0, abs(float(np.dot(dy, dc)) / sxx))


def allowance(shift: Optional[HostShift], min_effect: float, follows: Optional[float] = None) -> Optional[float]:
    """The |ln B/A| a point must exceed to be the fabric's doing: the host's own move, times how
    much the point follows it (`follows`, from ``sensitivity``; None: fully), plus the practical
    threshold; None when the host did not move by more than that threshold."""
    if shift is None or shift.log_shift < math.log1p(min_effect):
        return None
    return shift.log_shift * (1.0 if follows is None else follows) + math.log1p(min_effect)


@dataclass(frozen=True)
class HostLoad:
    """How busy the host that ran a side's ranks was: the higher of its load at the run's start and
    end (provenance ``host_load``, ``host_load_end``)."""

    side: str  # "A" or "B"
    run_id: Any
    load: float  # work runnable besides fabricbench at the start or end, the higher (else the 1-minute load average)
    cpus: int
    ranks: int  # ranks that shared those CPUs

    @property
    def share(self) -> float:
        """The share of a core one rank can count on: all runnable work spread over the CPUs."""
        return min(1.0, self.cpus / (self.load + self.ranks)) if self.load + self.ranks > 0 else 1.0

    @property
    def factor(self) -> float:
        """How much a figure of two communicating ranks can move from the contention alone: each
        rank runs a `share` of the time, and the pair makes progress when both run (1 / share^2)."""
        return 1.0 / self.share ** 2

    def to_dict(self) -> Dict[str, Any]:
        return {"side": self.side, "run": self.run_id, "load": self.load, "cpus": self.cpus, "ranks": self.ranks,
                "factor": self.factor}


def _local_ranks(prov: Dict[str, Any]) -> Optional[int]:
    """Ranks that shared the CPUs of the host the run started on: every rank for a lab run (its nodes are
    namespaces of this host) or a one-node local run; None when the ranks ran elsewhere."""
    ranks = prov.get("ranks")
    if not isinstance(ranks, int) or ranks < 1:
        return None
    if prov.get("launcher") == "lab":
        return ranks
    if prov.get("nodes") == 1 and prov.get("launcher") in (None, "mpirun", "local"):
        return ranks
    return None


# The provenance keys of the host's load: when the run started, and when it ended (the session
# records the end; runs stored before it have the start alone).
LOAD_KEYS = ("host_load", "host_load_end")


def recorded_load(prov: Dict[str, Any]) -> Tuple[Optional[float], Optional[int]]:
    """(load, cpus): the highest load the run recorded, at its start or its end, so a run the host
    became busy for mid-way counts as busy. Each is the work runnable besides fabricbench where
    recorded (the 1-minute average still holds the ranks of the run before, or of this run at its
    end, which share no core with the ranks measured), else the 1-minute load average."""
    loads: List[float] = []
    cpus: Optional[int] = None
    for key in LOAD_KEYS:
        facts = prov.get(key) if isinstance(prov.get(key), dict) else {}
        avg = facts.get("runnable_others", facts.get("loadavg_1m"))
        if isinstance(avg, (int, float)) and not isinstance(avg, bool):
            loads.append(float(avg))
        if cpus is None and isinstance(facts.get("cpus"), int):
            cpus = facts["cpus"]
    return (max(loads) if loads else None), cpus


def host_load(side: str, run: Any) -> Optional[HostLoad]:
    """The run's HostLoad when its ranks shared the CPUs of the host whose load it recorded."""
    prov = getattr(run, "provenance", None) or {}
    avg, cpus = recorded_load(prov)
    ranks = _local_ranks(prov)
    if not isinstance(avg, (int, float)) or not isinstance(cpus, int) or cpus < 1 or ranks is None:
        return None
    return HostLoad(side, getattr(run, "id", None), float(avg), cpus, ranks)


def busiest(a_runs: Sequence[Any], b_runs: Sequence[Any]) -> Optional[HostLoad]:
    """The side's run whose host was busiest (largest ``factor``), when its CPUs were oversubscribed
    (more runnable work than CPUs) and busy (other work on half the CPUs or more: one busy loop beside a
    2-rank run on 2 CPUs moved allreduce 1-4 KiB 16% between two identical runs)."""
    loads = [x for side, runs in (("A", a_runs), ("B", b_runs)) for r in runs for x in [host_load(side, r)] if x]
    worst = max(loads, key=lambda x: x.factor, default=None)
    return worst if worst is not None and worst.share < 1.0 and worst.load >= 0.5 * worst.cpus else None


# How long a rank of a communicating pair can wait for a CPU on an oversubscribed host, per runnable
# task per CPU: it waits out the other tasks' turns (the scheduler's slice each) before it runs, and its
# partner waits for it. Calibrated on this 2-CPU VM (docs/methods/statistics.md): at 11.5 runnable tasks
# per CPU the median alltoall call of 8-64 B took 27 ms (2.4 ms each) and single calls up to 94 ms (8.2 ms);
# at 7 recorded when the run started (the load rose during it) a median took 45 ms (6.5 ms). 12 ms keeps
# a margin of 1.5x over the worst single call seen.
SLICE_US = 12000.0


def stall_us(load: HostLoad) -> float:
    """The longest wait for a CPU one sample can suffer on the busy host: a slice per runnable task per CPU."""
    return (load.load + load.ranks) / load.cpus * SLICE_US


def busy_factor(load: Optional[HostLoad], sample_us: Optional[float] = None) -> Optional[float]:
    """How much the busy host's contention alone can move a point's figure: the larger of the long-run
    slowdown (``HostLoad.factor``: both ranks of a pair must run) and one stall in a sample of
    `sample_us` (1 + stall / sample: a 0.3 us ping-pong that waits 12 ms is 40,000x slower, a 50 ms window
    of 4 MiB messages 1.2x); unbounded when the sample's duration is unknown. None when not oversubscribed."""
    if load is None:
        return None
    if sample_us is None or not sample_us > 0:
        return math.inf
    return max(load.factor, 1.0 + stall_us(load) / sample_us)


def busy_allowance(load: Optional[HostLoad], min_effect: float, sample_us: Optional[float] = None) -> Optional[float]:
    """The |ln B/A| a point must exceed to be told from the busy host's own contention: ln of
    ``busy_factor`` plus the practical threshold; None when the host was not oversubscribed."""
    factor = busy_factor(load, sample_us)
    if factor is None:
        return None
    return math.log(factor) + math.log1p(min_effect)
