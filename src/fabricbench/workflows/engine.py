"""A measurement run: engine steps through a launcher, recorded as they arrive.

Each step is one ``fabricbench-mpi BENCHMARK`` launch whose JSON Lines records become
points of one run (``workflows.session``): the run ends ``complete``, ``failed`` (a dead
rank, a timeout, an engine silent for longer than the watchdog allows
(``planning.watchdog``), an engine error: the message names benchmark, message size
and, when known, rank and host) or ``interrupted`` (Ctrl-C, SIGTERM, SIGHUP). Points
measured before a failure stay.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from fabricbench.launch import Launcher
from fabricbench.launch.failure import explain_failure, launcher_line
from fabricbench.launch.mpirun import report_exits
from fabricbench.launch.procs import Job, Silent
from fabricbench.native import engine_path
from fabricbench.store import HOST_PROBE, Measurement, Run
from fabricbench.suite import Step
from fabricbench.planning import repeats
from fabricbench.workflows.hosts import run_provenance
from fabricbench.workflows.session import RunFailed, RunInterrupted, Session
from fabricbench import numbers
from fabricbench.planning.watchdog import Watchdog, fixed_limit

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

__all__ = ["Observer", "Outcome", "RunFailed", "RunInterrupted", "measure", "engine_records", "EngineOutputError"]


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
    watchdog: Optional[float] = None,
    repeat: int = 1,
) -> Outcome:
    """Run every step into a new run of `store`; raises RunFailed / RunInterrupted after recording the end.

    `repeat`: launches of every step, interleaved, merged into one point each (planning.repeats).

    `watchdog`: seconds of engine silence that fail the run (0: never); None derives them from
    each step's plan (see planning.watchdog), or takes $FABRICBENCH_WATCHDOG."""
    observer = observer or Observer()
    fixed = fixed_limit(watchdog)
    deadline = time.monotonic() + timeout if timeout else None
    observer.provenance_started()
    info = run_provenance(launcher, timeout=min(timeout or 120.0, 120.0), launch=launcher.command(["fabricbench-mpi"]),
                          engine=True)
    provenance = info["run"] | {"steps": [s.engine_args() for s in steps]}
    if repeat > 1:
        provenance["repeat"] = repeat
    launches = repeats.schedule(steps, repeat)
    with Session(store, kind=kind, label=label, tags=tags, command=command,
                 provenance=provenance | dict(extra_provenance or {}), ranks=info["run"]["ranks"]) as session:
        session.record_provenance(info)
        ranks = info["run"]["ranks"] or launcher.layout.np or 2
        points: Dict[Any, Measurement] = {}  # each point as stored so far, for the later launches
        for index, step in enumerate(launches):
            _run_step(session, launcher, step, index, len(launches), deadline, observer, Watchdog(step, ranks, fixed), points)
    return Outcome(run=session.run, points=session.points, status=session.status, message=session.message)


class EngineOutputError(RunFailed):
    """The engine printed something that is not a JSON Lines record."""


def engine_records(job: Job, deadline: Optional[float], benchmark: str,
                   watchdog: Optional[Watchdog] = None, launcher_said: Optional[List[str]] = None) -> Iterator[Dict[str, Any]]:
    """The engine's records as they arrive; TimeoutError past `deadline`, Silent past the watchdog.
    Lines the launcher printed on the same stdout (MPICH's Hydra does) go to `launcher_said`."""
    silence = watchdog.allowed if watchdog is not None and watchdog.enabled else None
    for line in job.lines(deadline=deadline, silence=silence):
        line = line.strip()
        if not line:
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if launcher_said is not None and launcher_line(line):
                launcher_said.append(line)
                continue
            raise EngineOutputError(f"{benchmark}: the engine printed a line that is not JSON: {line[:120]!r}") from None


def _run_step(session: Session, launcher: Launcher, step: Step, index: int, total: int,
              deadline: Optional[float], observer: Observer, watchdog: Watchdog,
              points: Optional[Dict[Any, Measurement]] = None) -> None:
    argv = report_exits(launcher.command([str(engine_path()), *step.engine_args(), "--format", "jsonl"]))
    job = Job(argv, env=launcher.environment())
    planned_sizes = step.planned_sizes()
    done, ended, last_size = 0, False, None
    launcher_said: List[str] = []
    rank_hosts = None
    try:
        for rec in engine_records(job, deadline, step.benchmark, watchdog, launcher_said):
            kind = rec.get("record")
            if kind == "run":
                rank_hosts = rec.get("hosts")
                if isinstance(rec.get("host_probe"), dict):
                    session.artifact(HOST_PROBE, dict(rec["host_probe"], benchmark=step.benchmark, launch=step.launch))
                observer.step_started(index, total, step, rec.get("points_planned"))
            elif kind == "point":
                m = Measurement.from_record(rec)
                _record(session, m, points if points is not None else {}, step.launch)
                done += 1
                last_size = m.size
                observer.point(step, m, done)
            elif kind == "end":
                ended = True
            watchdog.saw(last_size)
        rc = job.wait(timeout=30)
    except TimeoutError:
        job.stop()
        raise RunFailed(f"{step.benchmark} exceeded the run's --timeout {_where(planned_sizes, last_size, done)}") from None
    except Silent as quiet:
        stopped = job.stopped()
        job.stop()
        cause = (f"process {', '.join(map(str, stopped))} of the job was stopped (SIGSTOP or a debugger)" if stopped
                 else "a rank may be hung, swapped out or waiting for a peer that is")
        raise RunFailed(f"{step.benchmark} printed nothing for {numbers.seconds(quiet.seconds)} s "
                        f"{_where(planned_sizes, last_size, done)}: {cause}; the watchdog ended it "
                        "(--watchdog SECONDS or FABRICBENCH_WATCHDOG allows longer, 0 never stops)") from None
    finally:
        job.stop()
        session.flush()
    if rc != 0 or not ended:
        raise RunFailed(f"{step.benchmark} {_where(planned_sizes, last_size, done)}: "
                        f"{explain_failure(chr(10).join([job.stderr, *launcher_said]), rank_hosts)} (exit status {rc})")
    observer.step_finished(step)


def _record(session: Session, m: Measurement, points: Dict[Any, Measurement], launch: int) -> None:
    """A new point, or a later launch of one stored before: merged into it (analysis.stats)."""
    from fabricbench.analysis.stats import merge_launch, point_key

    key = point_key(m)
    stored = points.get(key)
    if launch == 1 or stored is None or stored.seq is None:
        session.add(m)
        points.setdefault(key, m)
        return
    merged = merge_launch(stored, m)
    session.replace(merged)
    points[key] = merged


def _where(planned: List[int], last_size: Optional[int], done: int) -> str:
    """'at message size X' for the point being measured when things went wrong."""
    if planned:
        later = [s for s in planned if last_size is None or s > last_size]
        if later:
            return f"at message size {later[0]} B (after {done} points)"
    if last_size is not None:
        return f"after message size {last_size} B ({done} points)"
    return f"after {done} points"
