"""Run the all-pairs link check: the engine's ``allpairs`` through a launcher into a run of kind ``health``.

The run is created first (status ``running``) with its provenance and the check's
settings, by ``workflows.engine.measure`` like any other run: points are stored as they arrive
(in batches of up to half a second: a large cluster sends N (N - 1) x 3 of them); the run
ends ``complete``, ``failed`` (the message says why: a dead rank, a timeout, an engine
error) or ``interrupted`` (Ctrl-C). Whatever was
measured stays. Analysis is separate (``analysis.health``): a stored run is analysed the
same way whether it was measured just now, earlier, or imported from mpiGraph.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.launch import Launcher
from fabricbench.workflows.engine import Observer, RunFailed, measure
from fabricbench.store import Run
from fabricbench.suite import Step

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

MiB = 1 << 20
DEFAULT_SIZE = MiB
WINDOW_BYTES = 16 * MiB  # bytes per timed window when --window is not given
MAX_WINDOW = 64
MODES = ("exchange", "pairs")  # the engine's allpairs --mode
BENCHMARK = "allpairs"


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
        return BENCHMARK

    def engine_args(self) -> List[str]:
        return [self.benchmark, "--mode", self.mode, "--size", str(self.size), "--repetitions", str(self.repetitions),
                "--retest", str(self.retest), "--window", str(self.effective_window)]

    def planned_points(self, ranks: int) -> int:
        """Sweep records (latency, bandwidth send and recv per ordered pair, 3 matrix records); retests come on top."""
        return 3 * ranks * (ranks - 1) + 3

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["window"] = self.effective_window
        d["benchmark"] = self.benchmark
        return d


Progress = Callable[[int, int], None]  # (points stored, sweep points planned)


class _ProgressObserver(Observer):
    """Tells the health command's progress callback (points stored, sweep points planned)."""

    def __init__(self, progress: Optional[Progress], planned: int):
        self.progress, self.planned = progress, planned

    def point(self, step, measurement, done) -> None:
        if self.progress:
            self.progress(done, self.planned)


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
    args = plan.engine_args()
    step = Step(args[0], None, tuple(args[1:]))
    try:
        outcome = measure(store, launcher, [step], label=label, tags=tags, timeout=timeout, command=command,
                          observer=_ProgressObserver(progress, plan.planned_points(ranks)),
                          kind="health", extra_provenance={"health": plan.to_dict()})
    except (RunFailed, TimeoutError) as exc:
        raise HealthCannotRun(str(exc)) from None
    return store.get_run(outcome.run.id)
