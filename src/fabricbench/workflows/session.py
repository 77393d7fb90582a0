"""THE run lifecycle: every workflow that records a run goes through a ``Session``.

    with Session(store, kind="benchmark", label=..., provenance=...) as s:
        s.add_hosts(facts)
        s.add(measurement)          # batched: committed every half second or 256 points
        s.note("...")               # the run's message when it ends complete
    # -> complete; KeyboardInterrupt -> interrupted (RunInterrupted raised);
    #    RunFailed -> failed (re-raised with the points kept); any other error -> failed

The run is created (status ``running``) when the session opens, so whatever ends the
process later still leaves a row that says what happened; points measured before a
failure stay. ``finish_run`` is called here and nowhere else.
"""
from __future__ import annotations

import shlex
import sys
import time
from typing import Any, Dict, Iterable, List, Optional

from fabricbench import provenance as prov
from fabricbench.errors import FabricbenchError
from fabricbench.store import Host, Measurement, Run, Store


class RunFailed(FabricbenchError):
    exit_code = 1


class RunInterrupted(FabricbenchError):
    exit_code = 130


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
        n = self.store.add_measurements(self.run_id, self.items) if self.items else 0
        self.items = []
        self.last = time.monotonic()
        return n


def command_line() -> str:
    return " ".join(shlex.quote(a) for a in sys.argv)


class Session:
    """One run from creation to its end; see the module docstring."""

    def __init__(self, store: Store, *, kind: str, label: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 command: Optional[str] = None, provenance: Optional[Dict[str, Any]] = None,
                 ranks: Optional[int] = None, unit: str = "points"):
        self.store = store
        self.run: Run = store.create_run(kind=kind, label=label, tags=tags, command=command or command_line(),
                                         provenance=provenance or {}, ranks=ranks)
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

    def add_hosts(self, facts: Iterable[Dict[str, Any]]) -> None:
        self.store.add_hosts(self.run.id, [Host(f.get("hostname", "?"), prov.digest(f), f) for f in facts])

    def add(self, m: Measurement) -> None:
        self.points += self._pending.add(m)

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
        self.store.update_run(self.run.id, **fields)

    def note(self, message: Optional[str]) -> None:
        """The message a run that ends `complete` keeps (e.g. '2 of 9 repetitions failed')."""
        self.message = message

    # -- ending ---------------------------------------------------------------------------

    def finish(self, status: str, message: Optional[str] = None) -> None:
        """Record the run's end once; later calls are ignored."""
        if self._finished:
            return
        self._finished = True
        try:
            self.flush()
        finally:
            self.store.finish_run(self.run.id, status, message)
            self.run.status, self.run.message = status, message
            self.status, self.message = status, message

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
            self.finish(self.status, self.message)
            if self.status == "failed":
                raise RunFailed(f"run {self.run.id} failed: {self.message}")
            return False
        if issubclass(exc_type, KeyboardInterrupt):
            self.finish("interrupted", f"interrupted by the user after {self._count(of=True)}")
            raise RunInterrupted(f"run {self.run.id} interrupted; its {self._count()} are kept") from None
        if issubclass(exc_type, RunFailed):
            self.finish("failed", str(exc))
            raise RunFailed(f"run {self.run.id} failed: {exc}; {self._count()} are kept") from None
        self.finish("failed", f"fabricbench error: {exc!r}")
        return False
