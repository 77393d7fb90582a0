"""`fabricbench study site` (seed 002): a site's interconnect on one page: MPI latency and
bandwidth (the engine), HPCC, and file transfer with many readers of one server.

On the lab (the default) each fabric is a lab shape (``ge:100mbit``), brought up in turn
(its own lab name, default ``fbsite``) and torn down at the end; per fabric the study runs
the engine's ``latency`` and ``bw`` between the first two nodes, HPCC on them, and
``transfer`` with the first node serving one file to the others (xrootd, and raw TCP as the
network-only baseline). Every run is tagged ``study=ID``, ``study_kind=site`` and
``fabric=NAME``, so the report is rebuilt from the store alone (``load_site``).
"""
from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.workflows.app_study import StudyFabric, fabric_lab_up, parse_fabric
from fabricbench.workflows.app_study import study_lab as app_study_lab

KIND = "site"
LATENCY_SIZES = "0:64K"
BANDWIDTH_SIZES = "1K:1M"
WINDOW_BYTES = "2M"


@contextlib.contextmanager
def study_lab(fabric: StudyFabric, nodes: int, name: str, say: Callable[[str], None]) -> Iterator[Any]:
    """The lab `name` up with the fabric's shape for the block (FABRICBENCH_LAB naming it, as the
    lab launcher and `transfer` find their lab by it), down after it, whatever happens."""
    with app_study_lab(name):
        yield fabric_lab_up(fabric, nodes, name, say)


@dataclass
class SiteStudySpec:
    fabric_texts: List[str]
    nodes: int = 3
    n: Optional[int] = None
    nb: Optional[int] = None
    readers: List[int] = field(default_factory=lambda: [1, 2])
    file_size: int = 64 << 20
    repeat: int = 1
    time_budget: float = 0.05
    timeout: Optional[float] = None
    lab_name: str = "fbsite"
    command: str = ""
    workdir: Optional[str] = None  # HPCC's folders go under it (default: ./fabricbench-results)

    def __post_init__(self):
        if not self.fabric_texts:
            raise UsageError("give at least one --fabric NAME:LAB_SPEC, e.g. --fabric ge:100mbit --fabric ib:1gbit")
        self.fabrics = [parse_fabric(t) for t in self.fabric_texts]
        if len({f.name for f in self.fabrics}) != len(self.fabrics):
            raise UsageError("two --fabric options have the same name")
        if self.nodes < 2:
            raise UsageError("--nodes must be at least 2 (a file server and a reader)")
        if max(self.readers) > self.nodes - 1:
            raise UsageError(f"--readers {max(self.readers)} needs {max(self.readers) + 1} nodes (one serves the "
                             f"file); give --nodes {max(self.readers) + 1}")


@dataclass
class SiteOutcome:
    study: str
    runs: Dict[str, Dict[str, List[int]]] = field(default_factory=dict)  # fabric -> part -> run ids
    failures: List[str] = field(default_factory=list)


def attempt(action: Callable[[], Any], failures: List[str], what: str, said: str, say: Callable[[str], None],
            errors: Tuple[type, ...] = (FabricbenchError,)) -> Any:
    """A study's step: what `action` returns, or None once its failure is named in `failures` (as `what`) and
    said (as `said`), so the study goes on; an interruption (Ctrl-C, SIGTERM) stops the study."""
    from fabricbench.workflows.session import RunInterrupted

    try:
        return action()
    except RunInterrupted:
        raise  # the lab comes down; it is no failed step
    except errors as exc:
        failures.append(f"{what}: {exc}")
        say(f"  {said}: failed: {exc}")
        return None


def _part(outcome: SiteOutcome, fabric: str, part: str, say: Callable[[str], None], action: Callable[[], int]) -> None:
    """Run one part of the study; a failed part is named and the study goes on."""
    run_id = attempt(action, outcome.failures, f"{part} on {fabric}", f"{part} on {fabric}", say)
    if run_id is None:
        return
    outcome.runs.setdefault(fabric, {}).setdefault(part, []).append(run_id)
    say(f"  {part} on {fabric}: run {run_id}")


def run_site_study(store, spec: SiteStudySpec, say: Callable[[str], None] = lambda _t: None) -> SiteOutcome:
    """Every part on every fabric; the runs' ids per fabric and part."""
    from fabricbench.launch import Layout, get_launcher
    from fabricbench.launch.nodes import lab_nodes
    from fabricbench.suite import Step
    from fabricbench.workflows.engine import measure
    from fabricbench.workflows.hpcc import run_hpcc
    from fabricbench.workflows.transfer import TransferPlan, run_transfer

    outcome = SiteOutcome(study=uuid.uuid4().hex[:8])
    budget = ("--time-budget", str(spec.time_budget))
    for fabric in spec.fabrics:
        tags = {"study": outcome.study, "study_kind": KIND, "fabric": fabric.name}
        with study_lab(fabric, spec.nodes, spec.lab_name, say) as lab:
            hosts = list(lab.node_names)
            pair = get_launcher("lab", Layout(np=2, hosts=hosts[:2]))
            # A window of 64 x 1 MiB takes seconds on a slow lab link: cap the bytes in flight.
            steps = [Step("latency", LATENCY_SIZES, budget),
                     Step("bw", BANDWIDTH_SIZES, budget + ("--max-window-bytes", WINDOW_BYTES))]
            _part(outcome, fabric.name, "mpi", say, lambda: measure(
                store, pair, steps, label=f"MPI latency and bandwidth on {fabric.name}", tags=tags,
                timeout=spec.timeout, command=spec.command, repeat=spec.repeat).run.id)
            for rep in range(spec.repeat):
                where = f"{spec.workdir}/{outcome.study}-{fabric.name}-hpcc-{rep + 1}" if spec.workdir else None
                _part(outcome, fabric.name, "hpcc", say, lambda: run_hpcc(
                    store, np=2, launcher="lab", hosts=hosts[:2], n=spec.n, nb=spec.nb, tags=tags, workdir=where,
                    label=f"HPCC on {fabric.name}", timeout=spec.timeout).run.id)
            plan = TransferPlan(server=hosts[0], readers=spec.readers, file_size=spec.file_size,
                                protocols=["xrootd", "tcp"], repeat=spec.repeat, reader_nodes=hosts[1:])
            _part(outcome, fabric.name, "transfer", say, lambda: run_transfer(
                store, lab_nodes(), plan, label=f"file transfer on {fabric.name}", tags=tags,
                command=spec.command).run.id)
            shape = dict(lab.shape)
        for part_ids in outcome.runs.get(fabric.name, {}).values():
            for run_id in part_ids:
                _mark(store, run_id, {"id": outcome.study, "kind": KIND, "fabric": fabric.name, "shape": shape,
                                      "command": spec.command})
    if not outcome.runs:
        raise FabricbenchError("no part of the study completed: " + "; ".join(outcome.failures))
    return outcome


def _mark(store, run_id: int, facts: Dict[str, Any]) -> None:
    run = store.get_run(run_id)
    provenance = dict(run.provenance or {})
    provenance["study"] = facts
    store.update_run(run_id, provenance=provenance)


def load_site(store, study: str) -> Dict[str, Any]:
    """The study as its report shows it: per fabric the lab shape, conditions, the engine's
    latency and bandwidth curves, the HPCC values, and the transfer summary."""
    from fabricbench.analysis.hpcc import hpcc_values
    from fabricbench.analysis.transfer import summarize

    runs = sorted(store.list_runs(tags={"study": study, "study_kind": KIND}), key=lambda r: r.id)
    if not runs:
        raise UsageError(f"no run belongs to site study '{study}' (see 'fabricbench runs')")
    fabrics: Dict[str, Dict[str, Any]] = {}
    for run in runs:
        name = run.tags.get("fabric", "?")
        prov = run.provenance or {}
        f = fabrics.setdefault(name, {"shape": (prov.get("study") or {}).get("shape") or {}, "runs": [],
                                      "latency": {}, "bandwidth": {}, "hpcc": [], "transfer": None,
                                      "command": (prov.get("study") or {}).get("command")})
        f["runs"].append({"id": run.id, "kind": run.kind, "status": run.status, "mpi": prov.get("mpi_library"),
                          "load": (prov.get("host_load") or {}).get("loadavg_1m"),
                          "cpus": (prov.get("host_load") or {}).get("cpus")})
        points = store.measurements(run.id)
        if run.kind == "hpcc" and run.status == "complete":
            f["hpcc"].append(hpcc_values(points))
        elif run.kind == "transfer":
            f["transfer"] = summarize(points, prov)
        else:
            for m in points:
                size = (m.params or {}).get("size")
                if m.benchmark == "latency" and m.metric == "latency":
                    f["latency"][size] = m
                elif m.benchmark == "bw" and m.metric == "bandwidth":
                    f["bandwidth"][size] = m
    return {"study": study, "fabrics": fabrics}
