"""The all-pairs link health check: measure every pair of nodes (``run_check``), then find
the culprits (``check_run``: a stored run -> ``HealthReport``), from the engine's
``allpairs`` benchmark or an imported mpiGraph run.

    from fabricbench.health import CheckPlan, run_check, check_run
    run = run_check(store, launcher, CheckPlan(size=256 * 1024))
    result = check_run(store, run.id)
    result.report.verdict, result.report.exit_status

The rules are in ``fabricbench.analysis.health``; the README section is ``README.md`` here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from fabricbench.analysis.health import HealthReport, Thresholds, analyse
from fabricbench.analysis.health_data import AllPairs, NoAllPairsData, allpairs_from_measurements
from fabricbench.health.run import CheckPlan, HealthCannotRun, run_check

__all__ = ["CheckPlan", "HealthCannotRun", "run_check", "check_run", "HealthResult", "Thresholds",
           "NoAllPairsData", "fabric_floor"]


@dataclass
class HealthResult:
    run: Any  # store.Run
    data: AllPairs
    report: HealthReport
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        d = self.report.to_dict()
        d["exit_status"] = self.report.exit_status
        d["run"] = {"id": self.run.id, "uuid": self.run.uuid, "kind": self.run.kind, "label": self.run.label,
                    "status": self.run.status, "created": self.run.created}
        d["measurement"] = {"size": self.data.size, "direction": self.data.direction, "mode": self.data.mode,
                            "sizes": self.data.sizes, "nodes": self.data.n,
                            "retested_pairs": self.report.summaries["bandwidth"].retested
                            if "bandwidth" in self.report.summaries else 0}
        d["notes"] = self.notes
        return d


def fabric_floor(run: Any, hosts: Any, percent: float) -> Optional[tuple]:
    """(MB/s, note) for `percent` of the run's fabric link rate from the catalog, or None when unknown."""
    from fabricbench.analysis.peaks import fabric_for_run

    fabric = fabric_for_run(run, hosts)
    if fabric is None:
        return None
    floor = fabric.data_rate_MBps * percent / 100.0
    return floor, f"{percent:g}% of {fabric.name}'s {fabric.data_rate_MBps:,.0f} MB/s"


def check_run(store: Any, ref: Union[int, str], thresholds: Thresholds = Thresholds(), size: Optional[int] = None,
              direction: Optional[str] = None, floor_percent: Optional[float] = None) -> HealthResult:
    """Analyse a stored run's all-pairs measurements (measured by fabricbench or imported from mpiGraph)."""
    run = store.get_run(ref)
    data = allpairs_from_measurements(store.measurements(run.id, benchmark="allpairs"), size=size, direction=direction)
    notes = list(data.notes)
    if floor_percent is not None:
        found = fabric_floor(run, store.hosts(run.id), floor_percent)
        if found is None:
            notes.append("--floor ignored: the run's fabric is unknown (tag it with fabric=KEY, e.g. fabric=edr)")
        else:
            from dataclasses import replace

            thresholds = replace(thresholds, floor_MBps=found[0], floor_note=found[1])
    if run.status != "complete":
        notes.append(f"run {run.id} is {run.status}: pairs it did not reach are missing")
    report = analyse(data.labels, data.bandwidth, data.latency, thresholds=thresholds,
                     retest_bandwidth=data.retest_bandwidth, retest_latency=data.retest_latency)
    return HealthResult(run, data, report, notes)
