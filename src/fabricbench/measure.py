"""A measurement run: engine steps through a launcher, records into the store as they arrive.

The run is created first (status `running`) with its provenance; each point is committed
on arrival; the run ends `complete`, `failed` (a dead rank, a timeout, an engine error:
the message names benchmark, message size and, when known, rank and host) or
`interrupted` (Ctrl-C). Points measured before a failure stay.
"""
from __future__ import annotations

import json
import re
import shlex
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence

from fabricbench.errors import FabricbenchError
from fabricbench.launch import Launcher, Layout
from fabricbench.native import engine_path
from fabricbench.procs import Job, run_capture
from fabricbench import provenance as prov
from fabricbench.store import Host, Measurement, Run, Store
from fabricbench.suite import Step


class RunFailed(FabricbenchError):
    exit_code = 1


class RunInterrupted(FabricbenchError):
    exit_code = 130


class Observer:
    """What a progress display is told; the default tells nobody."""

    def provenance_started(self) -> None: ...
    def step_started(self, index: int, total: int, step: Step, planned: Optional[int]) -> None: ...
    def point(self, step: Step, measurement: Measurement, done: int) -> None: ...
    def step_finished(self, step: Step) -> None: ...


@dataclass
class Outcome:
    run: Run
    points: int = 0
    status: str = "complete"
    message: Optional[str] = None


_OMPI_DEATH = re.compile(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?")
_OMPI_EXIT = re.compile(r"Primary job\s+terminated normally, but (\d+) process returned|process rank (\d+) with PID \d+ on node (\S+) exited", re.S)
_MPICH_DEATH = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_ENGINE_ERR = re.compile(r"^(?:fabricbench-mpi: )?(?:error|validation)[^\n]*", re.I | re.M)


def explain_failure(stderr: str) -> str:
    """The rank and host that died, or the engine's own error line, from a launcher's stderr."""
    m = _OMPI_DEATH.search(stderr)
    if m:
        rank, _pid, host, sig, name = m.groups()
        return f"rank {rank} on host {host} died (signal {sig}{', ' + name if name else ''})"
    m = _MPICH_DEATH.search(stderr)
    if m:
        return f"a rank (PID {m.group(1)}) on host {m.group(2)} died"
    m = _ENGINE_ERR.search(stderr)
    if m:
        return m.group(0).strip()
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not set(ln.strip()) <= set("-=*")]
    return lines[-1] if lines else "no message on stderr"


def _host_layout(launcher: Launcher) -> Layout:
    hosts = list(dict.fromkeys(launcher.layout.hosts))
    return Layout(np=len(hosts), hosts=hosts, hostfile=None, ppn=1, extra_args=list(launcher.layout.extra_args))


def gather_hosts(launcher: Launcher, timeout: float = 120.0) -> List[Dict[str, Any]]:
    """Provenance facts of every host of the launch: this host directly, remote hosts through the launcher."""
    hosts = list(dict.fromkeys(launcher.layout.hosts))
    if len(hosts) <= 1 and launcher.name == "mpirun":
        return [prov.collect()]
    probe = type(launcher)(_host_layout(launcher))
    rc, out, err = run_capture(probe.command([sys.executable, "-m", "fabricbench.provenance"]), env=probe.environment(), timeout=timeout)
    facts = []
    for line in out.splitlines():
        try:
            facts.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if rc != 0 or not facts:
        raise RunFailed(f"could not collect provenance from the hosts: {explain_failure(err)}")
    return facts


def engine_info(launcher: Launcher, timeout: float = 120.0) -> Dict[str, Any]:
    """The engine's `info` run: MPI library and the host of every rank."""
    rc, out, err = run_capture(launcher.command([str(engine_path()), "info", "--format", "jsonl"]), env=launcher.environment(), timeout=timeout)
    header: Dict[str, Any] = {}
    ranks = []
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("record") == "run":
            header = rec
        elif rec.get("record") == "rank_info":
            ranks.append(rec)
    if rc != 0 or not header:
        raise RunFailed(f"the engine could not start through {launcher.name}: {explain_failure(err)}")
    return {"header": header, "ranks": ranks}


def collect_provenance(launcher: Launcher, timeout: float = 120.0) -> Dict[str, Any]:
    info = engine_info(launcher, timeout)
    header = info["header"]
    rank_hosts = header.get("hosts") or [r.get("host") for r in info["ranks"]]
    facts = gather_hosts(launcher, timeout)
    for f in facts:
        f.setdefault("mpi", {})["library"] = header.get("mpi_library")
    per_node: Dict[str, int] = {}
    for h in rank_hosts:
        per_node[h] = per_node.get(h, 0) + 1
    return {
        "run": {
            "hosts": sorted(per_node),
            "nodes": len(per_node),
            "ranks": header.get("ranks"),
            "ranks_per_node": per_node,
            "ppn": launcher.layout.ppn or (max(per_node.values()) if per_node else None),
            "launcher": launcher.name,
            "mpi_library": header.get("mpi_library"),
            "mpi_version": header.get("mpi_version"),
            "timer_resolution_us": header.get("timer_resolution_us"),
            "engine_version": header.get("version"),
            "env": prov.tuning_environment(launcher.environment()),
            "rank_hosts": rank_hosts,
        },
        "hosts": facts,
    }


def measure(
    store: Store,
    launcher: Launcher,
    steps: Sequence[Step],
    label: Optional[str] = None,
    tags: Optional[Dict[str, str]] = None,
    timeout: Optional[float] = None,
    observer: Optional[Observer] = None,
    command: Optional[str] = None,
    kind: str = "benchmark",
    extra_provenance: Optional[Dict[str, Any]] = None,
) -> Outcome:
    """Run every step into a new run of `store`; raises RunFailed / RunInterrupted after recording the end."""
    observer = observer or Observer()
    deadline = time.monotonic() + timeout if timeout else None
    observer.provenance_started()
    info = collect_provenance(launcher, timeout=min(timeout or 120.0, 120.0))
    run = store.create_run(
        kind=kind,
        label=label,
        tags=tags,
        command=command or " ".join(shlex.quote(a) for a in sys.argv),
        provenance=info["run"]
        | {"steps": [s.engine_args() for s in steps], "launch": launcher.command(["fabricbench-mpi"])}
        | dict(extra_provenance or {}),
        ranks=info["run"]["ranks"],
    )
    store.add_hosts(run.id, [Host(f.get("hostname", "?"), prov.digest(f), f) for f in info["hosts"]])
    outcome = Outcome(run=run)
    try:
        for index, step in enumerate(steps):
            _run_step(store, run, launcher, step, index, len(steps), deadline, observer, outcome)
    except KeyboardInterrupt:
        outcome.status, outcome.message = "interrupted", f"interrupted by the user after {outcome.points} points"
    except RunFailed as exc:
        outcome.status, outcome.message = "failed", str(exc)
    except BaseException as exc:
        store.finish_run(run.id, "failed", f"fabricbench error: {exc!r}")
        raise
    store.finish_run(run.id, outcome.status, outcome.message)
    run.status, run.message = outcome.status, outcome.message
    if outcome.status == "interrupted":
        raise RunInterrupted(f"run {run.id} interrupted; its {outcome.points} measured points are kept")
    if outcome.status == "failed":
        raise RunFailed(f"run {run.id} failed: {outcome.message}; {outcome.points} measured points are kept")
    return outcome


class EngineOutputError(RunFailed):
    """The engine printed something that is not a JSON Lines record."""


def engine_records(job: Job, deadline: Optional[float], benchmark: str) -> Iterator[Dict[str, Any]]:
    """The engine's records as they arrive; TimeoutError past `deadline`."""
    for line in job.lines(deadline=deadline):
        line = line.strip()
        if not line:
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            raise EngineOutputError(f"{benchmark}: the engine printed a line that is not JSON: {line[:120]!r}") from None


def _run_step(store, run, launcher, step, index, total, deadline, observer, outcome: Outcome) -> None:
    argv = launcher.command([str(engine_path()), *step.engine_args(), "--format", "jsonl"])
    job = Job(argv, env=launcher.environment())
    planned_sizes = step.planned_sizes()
    done, ended, last_size = 0, False, None
    pending = PendingPoints(store, run.id)
    try:
        for rec in engine_records(job, deadline, step.benchmark):
            kind = rec.get("record")
            if kind == "run":
                observer.step_started(index, total, step, rec.get("points_planned"))
            elif kind == "point":
                m = Measurement.from_record(rec)
                outcome.points += pending.add(m)
                done += 1
                last_size = m.size
                observer.point(step, m, done)
            elif kind == "end":
                ended = True
        rc = job.wait(timeout=30)
    except TimeoutError:
        job.stop()
        outcome.points += pending.flush()
        raise RunFailed(f"{step.benchmark} exceeded the run's --timeout {_where(step, planned_sizes, last_size, done)}") from None
    except BaseException:
        job.stop()
        outcome.points += pending.flush()
        raise
    job.stop()
    outcome.points += pending.flush()
    if rc != 0 or not ended:
        raise RunFailed(f"{step.benchmark} {_where(step, planned_sizes, last_size, done)}: {explain_failure(job.stderr)} (exit status {rc})")
    observer.step_finished(step)


class PendingPoints:
    """Points on their way to the store: committed together every FLUSH_S seconds or FLUSH_POINTS
    points, so an all-pairs sweep of a large cluster does not pay one transaction per point,
    and a killed run loses at most the last fraction of a second."""

    FLUSH_POINTS = 256
    FLUSH_S = 0.5

    def __init__(self, store: Store, run_id: int):
        self.store, self.run_id = store, run_id
        self.items: List[Measurement] = []
        self.last = time.monotonic()

    def add(self, m: Measurement) -> int:
        """Queue a point; returns how many points this call committed."""
        self.items.append(m)
        if len(self.items) >= self.FLUSH_POINTS or time.monotonic() - self.last >= self.FLUSH_S:
            return self.flush()
        return 0

    def flush(self) -> int:
        n = self.store.add_measurements(self.run_id, self.items)
        self.items = []
        self.last = time.monotonic()
        return n


def _where(step: Step, planned: List[int], last_size: Optional[int], done: int) -> str:
    """'at message size X' for the point being measured when things went wrong."""
    if planned:
        later = [s for s in planned if last_size is None or s > last_size]
        if later:
            return f"at message size {later[0]} B (after {done} points)"
    if last_size is not None:
        return f"after message size {last_size} B ({done} points)"
    return f"after {done} points"
