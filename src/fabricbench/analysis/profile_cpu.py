"""Whether a profile's ranks shared cores, and the least time their computation needs.

libfabricbench-prof records per rank, over MPI_Init..MPI_Finalize, its CPU time (user +
system, all threads), its run-queue wait (``run_delay``: the main thread was runnable but
not running, from /proc/self/schedstat; null without schedstats), the CPUs online and the
machine (its boot id: the same for ranks in different network namespaces of one machine).
Profiles without these fields give no machines here, and no floor.

A machine shares its cores when it ran more ranks than it has CPUs and they measurably
waited for them: their run-queue wait is at least CONTENTION of their wall time (without
schedstats: their CPU time filled at least BUSY of the CPUs over the run). Its computation
then needs at least its CPU demand over its CPUs, whatever the fabric, plus the core time
its messages take on the fabric predicted for (``messaging``: per rank, from the engine's
``exchange`` benchmark there, ``models.exchange``; none when that was not measured).

A rank's demand is its computation: its time outside MPI less the run-queue wait that fell
there, at most its CPU time. Which part of the wait fell outside MPI is not measured (it is
read at MPI_Init and MPI_Finalize only). With oversubscription Open MPI yields the core
while a rank waits in MPI (the lab sets mpi_yield_when_idle), so a waiting rank is the one
that queues: the wait is put inside MPI first, up to the rank's MPI time, and only the rest
outside. Ranks that poll without yielding share the cores evenly instead, computing or not:
the low demand spreads the wait over the run in proportion to time (never more than the
other). CPU time alone would not do: a rank polling in MPI burns CPU whenever its core is
free, so on an oversubscribed machine the ranks' CPU time fills the cores for the whole run,
however fast the fabric.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

CONTENTION = 0.10  # run-queue wait, as a share of the ranks' wall time, that counts as sharing cores
BUSY = 0.90  # without schedstats: CPU time as a share of the CPUs over the run


@dataclass
class MachineCpu:
    """The ranks of one machine and what their computation asked of its CPUs (seconds)."""

    machine: str
    hosts: List[str]
    ranks: List[int]
    cpus: int
    wall_s: float  # the slowest of its ranks, MPI_Init to MPI_Finalize
    cpu_s: float  # CPU time, summed over its ranks
    run_delay_s: Optional[float]  # run-queue wait summed over its ranks; None if not measured
    demand_s: float  # computation, summed over its ranks (see the module's docstring)
    demand_low_s: float  # the same with the wait spread evenly over the run
    shared: bool = field(default=False)  # more ranks than CPUs, and they waited for them
    messaging_s: float = 0.0  # core time of its ranks' messages on the fabric predicted for
    messaging_low_s: float = 0.0  # the same, lower estimate

    def _floor(self, demand: float, messaging: float) -> float:
        # The computation never above the run on A: the CPUs cannot have given more than they
        # had (what a disagreement of the clocks could add is cut off).
        return min(demand / self.cpus, self.wall_s) + messaging / self.cpus if self.cpus > 0 else 0.0

    @property
    def floor_s(self) -> float:
        """The least wall time its computation and its messages need on its CPUs."""
        return self._floor(self.demand_s, self.messaging_s)

    @property
    def floor_low_s(self) -> float:
        """The same from the low demands: the band's low end."""
        return self._floor(self.demand_low_s, self.messaging_low_s)

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "floor_s": self.floor_s, "floor_low_s": self.floor_low_s}


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 else None


def rank_demand(r: Dict[str, Any], even: bool = False) -> Optional[float]:
    """A rank's computation in CPU seconds: the run-queue wait put in MPI first or, with even,
    spread over the run (see the module's docstring); None for an older profile."""
    cpu, app, mpi = _num(r.get("cpu_time")), _num(r.get("app_time")), _num(r.get("mpi_time"))
    if cpu is None or app is None or mpi is None:
        return None
    outside = max(app - mpi, 0.0)
    delay = _num(r.get("run_delay"))
    if delay is not None:
        waited = delay * outside / app if even and app > 0 else delay - mpi
        outside = max(outside - max(waited, 0.0), 0.0)
    return min(cpu, outside)


def machines(profile: Dict[str, Any], messaging: Optional[Dict[int, Tuple[float, float]]] = None) -> List[MachineCpu]:
    """The profile's machines, in order of their first rank; [] if any rank lacks the fields.
    messaging: rank -> (core time of its messages, lower estimate) on the fabric predicted for."""
    messaging = messaging or {}
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for r in profile.get("rank_info", []):
        cpus = r.get("cpus_online")
        if rank_demand(r) is None or not isinstance(cpus, int) or cpus < 1:
            return []
        key = r.get("machine") or f"host {r.get('host', '')}"
        groups.setdefault(str(key), []).append(r)
    out = []
    for key, rs in groups.items():
        cpus = max(int(r["cpus_online"]) for r in rs)
        wall = max(float(r["app_time"]) for r in rs)
        delays = [_num(r.get("run_delay")) for r in rs]
        delay = sum(delays) if all(d is not None for d in delays) else None
        cpu = sum(float(r["cpu_time"]) for r in rs)
        m = MachineCpu(machine=key, hosts=sorted({str(r.get("host", "")) for r in rs}), ranks=[r["rank"] for r in rs],
                       cpus=cpus, wall_s=wall, cpu_s=cpu, run_delay_s=delay,
                       demand_s=sum(rank_demand(r) for r in rs), demand_low_s=sum(rank_demand(r, True) for r in rs),
                       messaging_s=sum(messaging.get(r["rank"], (0.0, 0.0))[0] for r in rs),
                       messaging_low_s=sum(messaging.get(r["rank"], (0.0, 0.0))[1] for r in rs))
        walls = sum(float(r["app_time"]) for r in rs)
        if len(rs) > cpus and wall > 0:
            m.shared = delay >= CONTENTION * walls if delay is not None else cpu >= BUSY * cpus * wall
        out.append(m)
    return out


def cpu_floor(profile: Dict[str, Any], messaging: Optional[Dict[int, Tuple[float, float]]] = None) -> Optional[MachineCpu]:
    """The machine whose shared cores set the highest floor, or None (none shared, or an older profile)."""
    shared = [m for m in machines(profile, messaging) if m.shared]
    return max(shared, key=lambda m: m.floor_s) if shared else None


def sharing_sentence(m: Dict[str, Any]) -> str:
    """'4 ranks on 2 CPUs (lab1, lab2, ...)' of a machine (MachineCpu.to_dict): who shared which cores."""
    hosts = ", ".join(m["hosts"][:4]) + (", ..." if len(m["hosts"]) > 4 else "")
    return f"{len(m['ranks'])} ranks on {m['cpus']} CPU{'s' if m['cpus'] != 1 else ''} ({hosts})"
