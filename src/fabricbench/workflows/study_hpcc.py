"""`fabricbench study hpcc-fabrics`: HPCC with an MPI profile per test on two or more fabrics.

On the lab (the default) each fabric is a lab shape (``fdr:1gbit``); the lab (its own name,
default ``fbhpcc``) is brought up with each shape in turn and torn down at the end. On a
cluster (``--launcher srun|mpirun --hosts ...``) a fabric is a name and the launcher
arguments that select it (``edr:`` for the default network, ``tcp:--mca btl tcp,self``).
Each fabric runs ``hpcc --profile`` ``repeat`` times (workflows.hpcc.run_hpcc); every run is
stored with its provenance and tagged ``study=ID``, ``study_kind=hpcc-fabrics`` and
``fabric=NAME`` (the fabric's lab shape or launcher arguments in the run's provenance under
``study``), so the report can be rebuilt from the store alone.
"""
from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.workflows.app_study import parse_fabric

KIND = "hpcc-fabrics"


@dataclass
class ClusterFabric:
    name: str
    launcher_args: List[str]


def parse_cluster_fabric(text: str) -> ClusterFabric:
    """'edr' or 'tcp:--mca btl tcp,self' -> ClusterFabric."""
    name, _, rest = text.partition(":")
    if not name.strip():
        raise UsageError(f"--fabric {text!r}: expected NAME or NAME:LAUNCHER_ARGS on a cluster")
    try:
        args = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"--fabric {text!r}: {exc}") from None
    return ClusterFabric(name.strip(), args)


@dataclass
class HpccStudySpec:
    fabric_texts: List[str]
    np: int = 2
    nodes: int = 2
    n: Optional[int] = None
    nb: Optional[int] = None
    repeat: int = 1
    launcher: str = "lab"
    hosts: List[str] = field(default_factory=list)
    hostfile: Optional[str] = None
    launcher_args: List[str] = field(default_factory=list)
    timeout: Optional[float] = None
    lab_name: str = "fbhpcc"
    hpcc: str = "hpcc"
    command: str = ""
    workdir: Optional[str] = None  # each run's folder goes under it (default: ./fabricbench-results)

    def __post_init__(self):
        if len(self.fabric_texts) < 2:
            raise UsageError("give two or more --fabric to compare (e.g. --fabric fdr:1gbit --fabric edr:500mbit)")
        if self.launcher == "lab":
            self.fabrics = [parse_fabric(t) for t in self.fabric_texts]
        elif self.launcher in ("srun", "mpirun"):
            if self.launcher == "mpirun" and not (self.hosts or self.hostfile):
                raise UsageError("--launcher mpirun needs --hosts or --hostfile (the cluster's nodes)")
            self.fabrics = [parse_cluster_fabric(t) for t in self.fabric_texts]
        else:
            raise UsageError(f"--launcher {self.launcher}: a study runs on the lab, or with srun or mpirun")
        if len({f.name for f in self.fabrics}) != len(self.fabrics):
            raise UsageError("two --fabric options have the same name")
        if self.np < 2:
            raise UsageError("--np must be at least 2: HPCC's network tests need two ranks")


@dataclass
class HpccStudyOutcome:
    study: str
    runs: Dict[str, List[int]] = field(default_factory=dict)  # fabric name -> run ids
    failures: List[str] = field(default_factory=list)

    @property
    def run_ids(self) -> List[int]:
        return [i for ids in self.runs.values() for i in ids]


def _one_fabric(store, spec: HpccStudySpec, fabric, outcome: HpccStudyOutcome, launcher: str, hosts: List[str],
                extra: List[str], shape: Dict[str, str], say: Callable[[str], None]) -> None:
    from fabricbench.workflows.hpcc import HpccError, run_hpcc
    from fabricbench.workflows.study_site import attempt

    tags = {"study": outcome.study, "study_kind": KIND, "fabric": fabric.name}
    for rep in range(1, spec.repeat + 1):
        where = f"{spec.workdir}/{outcome.study}-{fabric.name}-{rep}" if spec.workdir else None
        result = attempt(lambda: run_hpcc(store, np=spec.np, launcher=launcher, hosts=hosts, hostfile=spec.hostfile,
                                          n=spec.n, workdir=where, nb=spec.nb,
                                          label=f"hpcc on {fabric.name} ({rep}/{spec.repeat})", tags=tags,
                                          hpcc=spec.hpcc, timeout=spec.timeout, launcher_args=extra, profile=True),
                         outcome.failures, f"{fabric.name} repetition {rep}", f"{fabric.name} {rep}/{spec.repeat}",
                         say, errors=(HpccError,))
        if result is None:
            continue
        run = result.run
        provenance = dict(run.provenance or {})
        provenance["study"] = {"id": outcome.study, "kind": KIND, "fabric": fabric.name, "shape": shape,
                               "repetition": rep, "repeat": spec.repeat, "command": spec.command}
        store.update_run(run.id, provenance=provenance)
        outcome.runs.setdefault(fabric.name, []).append(run.id)
        say(f"  {fabric.name} {rep}/{spec.repeat}: run {run.id} ({result.status})")


def run_hpcc_study(store, spec: HpccStudySpec, say: Callable[[str], None] = lambda _t: None,
                   study: Optional[str] = None) -> HpccStudyOutcome:
    """Run HPCC with its profile on every fabric; the runs' ids per fabric."""
    outcome = HpccStudyOutcome(study=study or uuid.uuid4().hex[:8])
    if spec.launcher != "lab":
        for fabric in spec.fabrics:
            say(f"fabric {fabric.name}: {spec.launcher} {' '.join(fabric.launcher_args)}".rstrip())
            _one_fabric(store, spec, fabric, outcome, spec.launcher, spec.hosts,
                        spec.launcher_args + fabric.launcher_args, {"launcher_args": fabric.launcher_args}, say)
        return outcome
    from fabricbench.workflows.study_site import study_lab

    for fabric in spec.fabrics:
        with study_lab(fabric, spec.nodes, spec.lab_name, say) as lab:
            hosts = list(lab.node_names)[:spec.nodes]
            _one_fabric(store, spec, fabric, outcome, "lab", hosts, spec.launcher_args, dict(lab.shape), say)
    if not outcome.run_ids:
        raise FabricbenchError("no HPCC run of the study completed: " + "; ".join(outcome.failures))
    return outcome


def study_runs(store, study: str) -> Dict[str, List]:
    """The stored runs of one study, per fabric in the order they ran (for the report)."""
    runs = store.list_runs(kind="hpcc", tags={"study": study})
    by_fabric: Dict[str, List] = {}
    for r in sorted(runs, key=lambda r: r.id):
        by_fabric.setdefault(r.tags.get("fabric", "?"), []).append(r)
    return by_fabric


def load_study(store, study: str) -> Dict[str, Any]:
    """Everything the report of a study shows, read from the store: per fabric its runs'
    facts, HPCC values and per-test profile leads. Raises UsageError for an unknown study."""
    from fabricbench.analysis.hpcc import hpcc_values
    from fabricbench.analysis.hpcc_sections import ALL_CALLS, hpcc_phases, leading_calls
    from fabricbench.lab.rates import parse_rate

    by_fabric = study_runs(store, study)
    if not by_fabric:
        raise UsageError(f"no hpcc run belongs to study '{study}' (see 'fabricbench runs --kind hpcc')")
    fabrics, runs, values, leads, rates = list(by_fabric), {}, {}, {}, {}
    for name, stored in by_fabric.items():
        runs[name], values[name], leads[name] = [], [], []
        for run in stored:
            prov = run.provenance or {}
            facts = prov.get("study") or {}
            shape = facts.get("shape") or {}
            try:
                rates[name] = parse_rate(shape["link"]) if shape.get("link") else None
            except (ValueError, UsageError):
                rates[name] = None
            plan = (prov.get("hpcc") or {}).get("plan") or {}
            runs[name].append({"id": run.id, "status": run.status, "created": run.created, "shape": shape,
                               "launcher_args": shape.get("launcher_args"), "plan": plan,
                               "ranks": prov.get("ranks"), "nodes": prov.get("nodes"), "hosts": prov.get("hosts"),
                               "mpi": prov.get("mpi_library"), "launcher": prov.get("launcher"),
                               "load": (prov.get("host_load") or {}).get("loadavg_1m"),
                               "cpus": (prov.get("host_load") or {}).get("cpus"), "command": facts.get("command")})
            if run.status == "complete":
                values[name].append(hpcc_values(store.measurements(run.id)))
            sections, profile = store.artifact(run.id, "hpcc_sections"), store.artifact(run.id, "profile")
            if sections is not None and profile is not None:
                result = hpcc_phases(profile, sections, top=ALL_CALLS)
                if not result.get("unnamed"):
                    leads[name].append(leading_calls(result))
    return {"study": study, "fabrics": fabrics, "runs": runs, "values": values, "leads": leads, "rates": rates}
