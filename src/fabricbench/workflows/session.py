"""THE run lifecycle: every workflow that records a run goes through a ``Session``.

    with Session(store, kind="benchmark", label=..., provenance=...) as s:
        s.record_provenance(info)   # workflows.hosts.run_provenance: the same facts for every run kind
        s.add(measurement)          # batched: committed every half second or 256 points
        s.note("...")               # the run's message when it ends complete
    # -> complete; KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP: launch.procs.Stopped) ->
    #    interrupted (RunInterrupted raised, exit status 128 + signal); RunFailed -> failed
    #    (re-raised with the points kept); any other error -> failed

The run is created (status ``running``) when the session opens, so whatever ends the
process later still leaves a row that says what happened; points measured before a
failure stay. ``finish_run`` is called here and nowhere else.

The run's provenance names its owner (host, boot, pid and the pid's start time) and, inside a
Slurm job, the job (which `fabricbench jobs` links to the run). A run
still ``running`` whose owner no longer exists (SIGKILL, the OOM killer, a power cut) is
marked failed by ``recover_abandoned`` when the database is next opened. When the
database itself fails (a full disk, a read-only file), the run is marked failed if the
database still takes that write, else left to that recovery; either way the error is
one line that says how many points are kept.
"""
from __future__ import annotations

import shlex
import sys
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional

from fabricbench import provenance as prov
from fabricbench.errors import FabricbenchError
from fabricbench.launch.procs import process_identity, signals_deferred, still_running, stop_cause
from fabricbench.launch.slurm import allocation_facts
from fabricbench.store import Host, Measurement, Run, StoreError

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

OWNER = "owner"  # the provenance key naming the process that records the run
END_LOAD = "host_load_end"  # the provenance key of the host's load when the run ended
SLURM_JOB = "slurm_job"  # the provenance key of the Slurm job the run was recorded in (SLURM_JOB_ID set)
ABANDONED = "the fabricbench process ended without finishing the run"


class RunFailed(FabricbenchError):
    exit_code = 1


class RunInterrupted(FabricbenchError):
    """The run was stopped by a signal; exit status 128 + the signal (Ctrl-C: 130, SIGTERM: 143, SIGHUP: 129)."""

    def __init__(self, message: str, exit_code: int = 130):
        super().__init__(message)
        self.exit_code = exit_code


class PendingPoints:
    """Points on their way to the store: committed together every FLUSH_S seconds or FLUSH_POINTS
    points, so an all-pairs sweep of a large cluster does not pay one transaction per point,
    and a killed run loses at most the last fraction of a second."""

    FLUSH_POINTS = 256
    FLUSH_S = 0.5

    def __init__(self, store: Store, run_id: int):
        self.store, self.run_id = store, run_id
        self.items: List[Measurement] = []
        self.replaced: List[Measurement] = []  # points stored before, with new figures
        self.last = time.monotonic()

    def add(self, m: Measurement) -> int:
        """Queue a point; returns how many points this call committed."""
        self.items.append(m)
        if len(self.items) >= self.FLUSH_POINTS or time.monotonic() - self.last >= self.FLUSH_S:
            return self.flush()
        return 0

    def replace(self, m: Measurement) -> None:
        self.replaced.append(m)

    def flush(self) -> int:
        n = self.store.add_measurements(self.run_id, self.items) if self.items else 0
        self.items = []
        if self.replaced:
            self.store.replace_measurements(self.run_id, self.replaced)
            self.replaced = []
        self.last = time.monotonic()
        return n

    def drop(self) -> int:
        """Forget what could not be stored; returns how many points that was."""
        n, self.items, self.replaced = len(self.items), [], []
        return n


def command_line() -> str:
    return " ".join(shlex.quote(a) for a in sys.argv)


class Session:
    """One run from creation to its end; see the module docstring."""

    def __init__(self, store: Store, *, kind: str, label: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 command: Optional[str] = None, provenance: Optional[Dict[str, Any]] = None,
                 ranks: Optional[int] = None, unit: str = "points"):
        self.store = store
        self.owner = process_identity()
        extra: Dict[str, Any] = {OWNER: self.owner}
        job = allocation_facts()
        if job:
            extra[SLURM_JOB] = job
        self._kept = extra  # provenance the lifecycle owns, kept through update()
        self._facts: Dict[str, Any] = {}  # run-level facts of record_provenance, kept under update()'s
        self._provenance: Dict[str, Any] = dict(provenance or {})
        self.run: Run = store.create_run(kind=kind, label=label, tags=tags, command=command or command_line(),
                                         provenance=dict(provenance or {}, **extra), ranks=ranks)
        if job:  # a job `fabricbench submit` made: `fabricbench jobs` shows this run next to it
            store.link_slurm_job(job["job_id"], job.get("cluster"), self.run.id)
        self.points = 0  # measurements committed so far
        self.done: Optional[int] = None  # what messages count, when not the measurements (repetitions)
        self.progress_total: Optional[int] = None  # "after 1 of 3 repetitions" when set
        self.unit = unit  # what messages call them: "points", "repetitions"
        self.status = "complete"
        self.message: Optional[str] = None
        self._pending = PendingPoints(store, self.run.id)
        self._finished = False

    # -- recording ------------------------------------------------------------------------

    @property
    def run_id(self) -> int:
        return self.run.id

    def record_provenance(self, info: Dict[str, Any]) -> None:
        """Store what ``workflows.hosts.run_provenance`` (or ``local_provenance``) collected: every
        host's facts as the run's hosts, the run-level facts merged into its provenance (a
        workflow's own keys win; later ``update(provenance=...)`` calls keep these facts)."""
        self._facts = dict(info.get("run") or {})
        self.add_hosts(info.get("hosts") or [])
        self.update(provenance=self._provenance)

    def add_hosts(self, facts: Iterable[Dict[str, Any]]) -> None:
        self.store.add_hosts(self.run.id, [Host(f.get("hostname", "?"), prov.digest(f), f) for f in facts])

    def add(self, m: Measurement) -> None:
        self.points += self._pending.add(m)

    def replace(self, m: Measurement) -> None:
        """New figures for a point already added (the same point's later launch merged in)."""
        self._pending.replace(m)

    def add_now(self, items: Iterable[Measurement]) -> None:
        """Commit these (and anything pending) at once."""
        for m in items:
            self._pending.items.append(m)
        self.flush()

    def flush(self) -> None:
        self.points += self._pending.flush()

    def artifact(self, name: str, data: Any) -> None:
        self.store.add_artifact(self.run.id, name, data)

    def update(self, **fields: Any) -> None:
        if "provenance" in fields:  # owner, job and collected facts stay, whatever the workflow's own provenance says
            self._provenance = {k: v for k, v in (fields["provenance"] or {}).items() if k not in self._kept}
            fields["provenance"] = {**self._facts, **{k: v for k, v in self._provenance.items() if v is not None or k not in self._facts},
                                    **self._kept}
            self.run.provenance = fields["provenance"]
        self.store.update_run(self.run.id, **fields)

    def note(self, message: Optional[str]) -> None:
        """The message a run that ends `complete` keeps (e.g. '2 of 9 repetitions failed')."""
        self.message = message

    # -- ending ---------------------------------------------------------------------------

    def finish(self, status: str, message: Optional[str] = None) -> None:
        """Record the run's end once; later calls are ignored.

        Raises StoreError when the database refuses the end (then the run stays
        `running` until the next start's recovery marks it failed)."""
        if self._finished:
            return
        self._finished = True
        with signals_deferred():  # a signal now would cut the final write in half
            try:
                self._record_end_load()
                self.flush()
            except StoreError as exc:
                lost = self._pending.drop()
                if status == "failed" and message:
                    message = f"{message}; {lost} more points could not be stored"
                else:
                    status, message = "failed", f"{lost} points could not be stored: {exc}"
            self.store.finish_run(self.run.id, status, message)
        self.run.status, self.run.message = status, message
        self.status, self.message = status, message

    def _record_end_load(self) -> None:
        """The host's load as the run ends (provenance ``host_load_end``), beside the one its start
        recorded (``host_load``): a host that became busy mid-way is seen by what judges the run."""
        facts = self.run.provenance if isinstance(self.run.provenance, dict) else {}
        if not isinstance(facts.get("host_load"), dict) or END_LOAD in facts:
            return
        from fabricbench.workflows.hosts import host_load

        self._kept[END_LOAD] = host_load()
        try:
            self.update(provenance=self._provenance)
        except StoreError:  # the run's own end, written next, says what the database refused
            pass

    def _count(self, of: bool = False) -> str:
        """'12 points' (of=True: '1 of 3 repetitions'); kept=True: '12 measured points'."""
        n = self.points if self.done is None else self.done
        if of:
            total = f" of {self.progress_total}" if self.progress_total is not None else ""
            return f"{n}{total} {self.unit}"
        return f"{n} measured {self.unit}"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._finished and exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            return False
        if exc_type is None:
            if self._finished:
                return False
            self._end(self.status, self.message)
            if self.status == "failed":
                raise RunFailed(f"run {self.run.id} failed: {self.message}")
            return False
        if issubclass(exc_type, KeyboardInterrupt):
            cause = stop_cause(exc)
            by = "the user (Ctrl-C)" if cause.name == "SIGINT" else cause.name
            self._end("interrupted", f"interrupted by {by} after {self._count(of=True)}")
            raise RunInterrupted(f"run {self.run.id} interrupted by {cause.name}; its {self._count()} are kept",
                                 exit_code=cause.exit_code) from None
        if issubclass(exc_type, (RunFailed, StoreError)):  # StoreError: a full disk, a read-only file under the run
            self._end("failed", str(exc))
            raise RunFailed(f"run {self.run.id} failed: {exc}; {self._count()} are kept") from None
        what = str(exc) if isinstance(exc, FabricbenchError) else f"{exc_type.__name__}: {exc}"
        self._end("failed", f"fabricbench error: {what}")
        return False

    def _end(self, status: str, message: Optional[str]) -> None:
        """finish(), or when the database refuses even that, one line saying the recovery will do it."""
        try:
            self.finish(status, message)
        except StoreError as exc:
            raise RunFailed(f"run {self.run.id} could not be ended ({exc}); its {self._count()} are kept and the "
                            "next fabricbench command that opens this database marks it failed") from None


def recover_abandoned(store: Store) -> List[int]:
    """Mark failed the runs left `running` by a process of this host that no longer exists; their ids.

    A run's owner is compared by pid and the pid's start time, so a reused pid does not keep
    a dead run alive. Runs of other hosts, and runs without an owner, are left alone. A
    read-only database is left as it is.
    """
    recovered = []
    for run in store.list_runs(status="running"):
        owner = (run.provenance or {}).get(OWNER)
        if still_running(owner) is False:
            try:
                if store.finish_run(run.id, "failed", ABANDONED, only_if_running=True):
                    recovered.append(run.id)
            except StoreError:
                break  # read-only or full: reading still works, the next start tries again
    return recovered
