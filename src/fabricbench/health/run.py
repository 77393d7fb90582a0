"""Run the all-pairs link check: the engine's ``allpairs`` through a launcher into a run of kind ``health``.

The run is created first (status ``running``) with its provenance and the check's
settings; points are stored as they arrive (in small batches: a large cluster sends
N (N - 1) x 3 of them); the run ends ``complete``, ``failed`` (the message says why:
a dead rank, a timeout, an engine error) or ``interrupted`` (Ctrl-C). Whatever was
measured stays. Analysis is separate (``analysis.health``): a stored run is analysed the
same way whether it was measured just now, earlier, or imported from mpiGraph.
"""
from __future__ import annotations

import math
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional

from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.launch import Launcher
from fabricbench.measure import EngineOutputError, RunFailed, RunInterrupted, collect_provenance, engine_records, explain_failure
from fabricbench.native import engine_path
from fabricbench.procs import Job
from fabricbench import provenance as prov
from fabricbench.store import Host, Measurement, Run, Store

MiB = 1 << 20
DEFAULT_SIZE = MiB
WINDOW_BYTES = 16 * MiB  # bytes per timed window when --window is not given
MAX_WINDOW = 64
MODES = {"exchange": "allpairs", "pairs": "allpairs_pairs"}
FLUSH_POINTS = 256
FLUSH_SECONDS = 0.5


class HealthCannotRun(FabricbenchError):
    """The check could not measure (bad arguments, too few ranks, a failed launch): exit status 2."""

    exit_code = 2


@dataclass
class CheckPlan:
    """How the check measures: the engine arguments, in the health command's words."""

    size: int = DEFAULT_SIZE
    window: Optional[int] = None  # None: enough messages for WINDOW_BYTES (2 .. 64)
    repetitions: int = 3
    mode: str = "exchange"
    retest: int = 4

    def __post_init__(self):
        if self.size < 1 or self.size & (self.size - 1):
            raise UsageError(f"--size {self.size}: the engine measures powers of two, e.g. 256K or 1M")
        if self.mode not in MODES:
            raise UsageError(f"--mode {self.mode}: choose exchange or pairs")
        if self.repetitions < 1:
            raise UsageError("--repetitions must be at least 1")
        if self.retest < 1:
            raise UsageError("--retest must be at least 1 (the engine always retests the slowest pairs)")
        if self.window is not None and self.window < 1:
            raise UsageError("--window must be at least 1")

    @property
    def effective_window(self) -> int:
        if self.window:
            return self.window
        return max(2, min(MAX_WINDOW, math.ceil(WINDOW_BYTES / self.size)))

    @property
    def benchmark(self) -> str:
        return MODES[self.mode]

    def engine_args(self) -> List[str]:
        return [self.benchmark, "--sizes", f"{self.size}:{self.size}", "--window", str(self.effective_window),
                "--iterations", str(self.repetitions), "--pairs", str(self.retest)]

    def planned_points(self, ranks: int) -> int:
        """Sweep records (latency, bandwidth send and recv per ordered pair, 3 matrix records); retests come on top."""
        return 3 * ranks * (ranks - 1) + 3

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["window"] = self.effective_window
        d["benchmark"] = self.benchmark
        return d


Progress = Callable[[int, int], None]  # (points stored, sweep points planned)


def run_check(store: Store, launcher: Launcher, plan: CheckPlan, label: Optional[str] = None,
              tags: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
              command: Optional[str] = None, progress: Optional[Progress] = None) -> Run:
    """Measure every pair through `launcher` into a new run of kind health; returns the finished run.

    Raises HealthCannotRun (exit 2) when nothing usable was measured, RunInterrupted on Ctrl-C.
    """
    ranks = launcher.layout.np or 0
    if ranks < 2:
        raise HealthCannotRun(f"the link check needs at least 2 ranks, one per node (got {ranks}); "
                              "give --np N with a --hostfile, or --launcher lab")
    deadline = time.monotonic() + timeout if timeout else None
    try:
        info = collect_provenance(launcher, timeout=min(timeout or 120.0, 120.0))
    except (RunFailed, TimeoutError) as exc:
        raise HealthCannotRun(f"could not start the check: {exc}") from None
    args = plan.engine_args()
    run = store.create_run(
        kind="health",
        label=label,
        tags=tags,
        command=command or " ".join(shlex.quote(a) for a in sys.argv),
        provenance=info["run"] | {"health": plan.to_dict(), "steps": [args], "launch": launcher.command(["fabricbench-mpi"])},
        ranks=info["run"]["ranks"],
    )
    store.add_hosts(run.id, [Host(f.get("hostname", "?"), prov.digest(f), f) for f in info["hosts"]])
    planned = plan.planned_points(ranks)
    try:
        points = _measure(store, run, launcher, args, deadline, planned, progress)
    except KeyboardInterrupt:
        store.finish_run(run.id, "interrupted", "interrupted by the user")
        raise RunInterrupted(f"run {run.id} interrupted; the pairs measured so far are kept") from None
    except HealthCannotRun as exc:
        store.finish_run(run.id, "failed", str(exc))
        raise HealthCannotRun(f"run {run.id} failed: {exc}") from None
    except BaseException as exc:
        store.finish_run(run.id, "failed", f"fabricbench error: {exc!r}")
        raise
    store.finish_run(run.id, "complete", f"{points} points")
    return store.get_run(run.id)


def _measure(store: Store, run: Run, launcher: Launcher, args: List[str], deadline: Optional[float],
             planned: int, progress: Optional[Progress]) -> int:
    argv = launcher.command([str(engine_path()), *args, "--format", "jsonl"])
    job = Job(argv, env=launcher.environment())
    pending: List[Measurement] = []
    stored, ended = 0, False
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal stored, last_flush
        if pending:
            store.add_measurements(run.id, pending)
            stored += len(pending)
            pending.clear()
            if progress:
                progress(stored, planned)
        last_flush = time.monotonic()

    try:
        for rec in engine_records(job, deadline, "allpairs"):
            kind = rec.get("record")
            if kind == "point":
                pending.append(Measurement.from_record(rec))
                if len(pending) >= FLUSH_POINTS or time.monotonic() - last_flush > FLUSH_SECONDS:
                    flush()
            elif kind == "end":
                ended = True
        rc = job.wait(timeout=30)
    except TimeoutError:
        job.stop()
        flush()
        raise HealthCannotRun(f"the check exceeded --timeout after {stored} points") from None
    except EngineOutputError as exc:
        job.stop()
        flush()
        raise HealthCannotRun(str(exc)) from None
    except BaseException:
        job.stop()
        flush()
        raise
    job.stop()
    flush()
    if rc != 0 or not ended:
        raise HealthCannotRun(f"allpairs stopped after {stored} points: {explain_failure(job.stderr)} (exit status {rc})")
    return stored
