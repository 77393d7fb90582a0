"""The health verdict of one stored run: its all-pairs data analysed with the given rules.

``check(run, measurements, hosts, ...)`` is the one place a link-health verdict is
computed; ``fabricbench health`` and the report's health section both call it, so
they name the same nodes, links and pairs for the same run. The rules themselves are
in ``analysis.health``; the data shaping in ``analysis.health_data``; the words (evidence,
verdict, notes, JSON) in ``report.words.health``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis.health import HealthReport, Thresholds, analyse, set_aside_busy_latency
from fabricbench.analysis.health_data import AllPairs, NoAllPairsData, allpairs_from_measurements

__all__ = ["HealthResult", "Thresholds", "NoAllPairsData", "check", "fabric_floor"]


@dataclass
class HealthResult:
    run: Any  # store.Run
    data: AllPairs
    report: HealthReport
    thresholds: Thresholds = field(default_factory=Thresholds)
    # in words, or a host_state.HostLoad: latency not judged on that busy host (report.words.health.notes)
    notes: List[Any] = field(default_factory=list)


def fabric_floor(run: Any, hosts: Any, percent: float) -> Optional[tuple]:
    """(MB/s, (percent, fabric name, its MB/s)) for `percent` of the run's fabric link rate from the
    catalog, or None when unknown."""
    from fabricbench.analysis.peaks import fabric_for_run

    fabric = fabric_for_run(run, hosts)
    if fabric is None or fabric.data_rate_MBps <= 0:  # unknown, or shared memory: no link rate
        return None
    floor = fabric.data_rate_MBps * percent / 100.0
    return floor, (percent, fabric.name, fabric.data_rate_MBps)


def link_ceiling(run: Any, hosts: Any) -> Optional[float]:
    """MB/s one healthy link carries at most per direction, or None when unknown: a lab's nominal
    link rate (not its degraded nodes', which are what the check looks for), else the run's ceiling
    (its fabric from the catalog, or the NIC's PCIe link)."""
    from fabricbench.analysis.peaks import lab_fabric, run_ceiling

    lab = (run.provenance or {}).get("lab") if isinstance(run.provenance, dict) else None
    if isinstance(lab, dict) and isinstance(lab.get("link_bps"), (int, float)) and lab["link_bps"] > 0:
        return lab_fabric(float(lab["link_bps"])).data_rate_MBps
    found = run_ceiling(run, hosts).ceiling
    return found.limit_MBps if found is not None and found.limit_MBps > 0 else None


def check(run: Any, measurements: Sequence[Any], hosts: Sequence[Any] = (), thresholds: Thresholds = Thresholds(),
          size: Optional[int] = None, direction: Optional[str] = None,
          floor_percent: Optional[float] = None) -> HealthResult:
    """Analyse a run's all-pairs measurements (measured by fabricbench or imported from mpiGraph).

    Raises NoAllPairsData when the run has none.
    """
    data = allpairs_from_measurements([m for m in measurements if m.benchmark == "allpairs"], size=size,
                                      direction=direction)
    notes = list(data.notes)
    if floor_percent is not None:
        found = fabric_floor(run, hosts, floor_percent)
        if found is None:
            notes.append("--floor ignored: the run's fabric is unknown (tag it with fabric=KEY, e.g. fabric=edr)")
        else:
            thresholds = replace(thresholds, floor_MBps=found[0], floor_of=found[1])
    if thresholds.ceiling_MBps is None:
        thresholds = replace(thresholds, ceiling_MBps=link_ceiling(run, hosts))
    if run.status != "complete":
        notes.append(f"run {run.id} is {run.status}: pairs it did not reach are missing")
    report = analyse(data.labels, data.bandwidth, data.latency, thresholds=thresholds,
                     retest_bandwidth=data.retest_bandwidth, retest_latency=data.retest_latency)
    busy = busy_host(run)
    if busy is not None and set_aside_busy_latency(report, busy.factor, busy):
        notes.append(busy)
    return HealthResult(run, data, report, thresholds, notes)


def busy_host(run: Any) -> Optional[Any]:
    """HostLoad when the run's ranks shared an oversubscribed host (a lab run, also through the lab's
    Slurm): other work on half the CPUs or more and more runnable work than CPUs; else None."""
    from fabricbench.analysis.host_state import HostLoad, host_load, recorded_load

    prov = run.provenance if isinstance(run.provenance, dict) else {}
    load = host_load("", run)
    if load is None and isinstance(prov.get("lab"), dict) and isinstance(prov.get("ranks"), int):
        avg, cpus = recorded_load(prov)
        if isinstance(avg, (int, float)) and isinstance(cpus, int) and cpus > 0:
            load = HostLoad("", run.id, float(avg), cpus, prov["ranks"])
    if load is None or load.share >= 1.0 or load.load < 0.5 * load.cpus:
        return None
    return load
