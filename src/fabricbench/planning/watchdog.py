"""How long an engine step may print nothing before its run is ended as failed.

The engine prints one record per measured point, flushed at once. A rank that is stopped
(SIGSTOP), swapped out or deadlocked stops that stream, and without a limit the run
would wait forever. The silence allowed before the next record comes from the plan:

    allowed = START_S                                 (before a step's first record: launch, MPI_Init)
            + BASE_S
            + FACTOR x GUARD x time budget            (adaptive points: the engine ends a point after
                                                       GUARD budgets once it has its minimum iterations)
              or FACTOR x iterations x FIXED_ITER_S   (fixed counts: --iterations)
            + the bytes the next point must move at least, at SLOW_RATE_BPS
                                                      (MIN_ITERATIONS iterations, or the fixed count;
                                                       allpairs: warm-up and every repetition of a sweep)
    and at least PACE x the longest silence the step has had so far (a slow link shows itself).

With the defaults (0.2 s budget) a small-message point may be silent for 34 s, a 4 MiB
bandwidth point for several minutes. ``--watchdog SECONDS`` (or FABRICBENCH_WATCHDOG)
replaces the derived limit with a fixed one; 0 turns the watchdog off. ``--timeout``
remains the hard limit on the whole run.
"""
from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Sequence

from fabricbench.errors import UsageError
from fabricbench.suite import BENCHMARKS, Step

START_S = 60.0
BASE_S = 30.0
FACTOR = 10.0
GUARD = 2.0  # the engine's GUARD_FACTOR (native/engine/timing.c)
DEFAULT_BUDGET_S = 0.2  # the engine's DEFAULT_TIME_BUDGET
FIXED_ITER_S = 1e-3
MIN_ITERATIONS = 16  # the engine's 10 plus its warm-up rounds
SLOW_RATE_BPS = 10e6  # slower than a 100 Mbit/s link
PACE = 4.0
DEFAULT_WINDOW = 64
HPCC_MESSAGE = 2_000_000  # the largest message of HPCC's ring and ping-pong tests
ENV = "FABRICBENCH_WATCHDOG"

BANDWIDTH_DIRECTIONS = {"bandwidth": 1, "bibandwidth": 2}  # a windowed benchmark's directions, by its metric


def fixed_limit(given: Optional[float]) -> Optional[float]:
    """The user's fixed limit (--watchdog, else $FABRICBENCH_WATCHDOG); None: derive it; 0: off."""
    if given is not None:
        return given
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{ENV}={text!r}: give seconds (0 turns the watchdog off)") from None
    if value < 0:
        raise UsageError(f"{ENV}={text!r}: give seconds (0 turns the watchdog off)")
    return value


def _options(args: Sequence[str]) -> Dict[str, str]:
    opts: Dict[str, str] = {}
    for name, value in zip(args, list(args[1:]) + [""]):
        if name.startswith("--"):
            opts[name] = value
    return opts


def _number(opts: Dict[str, str], name: str, default: float) -> float:
    try:
        return float(opts[name]) if name in opts else default
    except ValueError:
        return default


class Watchdog:
    """The allowed silence of one step, asked before each record: see the module docstring."""

    def __init__(self, step: Step, ranks: int, fixed: Optional[float] = None):
        self.step, self.ranks, self.fixed = step, max(1, ranks), fixed
        opts = _options(step.engine_args()[1:])
        self.iterations = int(_number(opts, "--iterations", 0))
        self.budget = _number(opts, "--time-budget", DEFAULT_BUDGET_S)
        self.window = _number(opts, "--window", DEFAULT_WINDOW)
        self.repetitions = _number(opts, "--repetitions", 3)
        self.warmup = _number(opts, "--warmup", 1)
        self.planned: List[int] = step.planned_sizes() or ([int(_number(opts, "--size", 1 << 20))]
                                                          if step.benchmark == "allpairs" else [])
        self.started = False  # a first record arrived
        self.last_size: Optional[int] = None
        self.longest = 0.0
        self._since = time.monotonic()

    @property
    def enabled(self) -> bool:
        return self.fixed != 0

    def saw(self, size: Optional[int]) -> None:
        """A record arrived (a point of message size `size`, or another record)."""
        self.started = True
        if size is not None:
            self.last_size = size

    def next_size(self) -> Optional[int]:
        """The message size measured next, as planned."""
        later = [s for s in self.planned if self.last_size is None or s > self.last_size]
        return later[0] if later else self.last_size

    def allowed(self) -> float:
        """Seconds of silence allowed from now on (inf when off)."""
        now = time.monotonic()
        if self.started:
            self.longest = max(self.longest, now - self._since)
        self._since = now
        if self.fixed is not None:
            return float("inf") if self.fixed == 0 else self.fixed
        if self.iterations:
            work = FACTOR * self.iterations * FIXED_ITER_S
        else:
            work = FACTOR * GUARD * self.budget
        limit = BASE_S + work + self._bytes(self.next_size()) / SLOW_RATE_BPS
        if not self.started:
            limit += START_S
        return max(limit, PACE * self.longest)

    def _bytes(self, size: Optional[int]) -> float:
        """The bytes the point of message size `size` moves at least (per rank pair)."""
        bench = self.step.benchmark
        iterations = self.iterations or MIN_ITERATIONS
        if bench == "allpairs":
            sweeps = self.warmup + self.repetitions
            return sweeps * self.ranks * self.window * (size or 0) * 2
        if size is None:
            return iterations * HPCC_MESSAGE * 2 * self.ranks
        spec = BENCHMARKS.get(bench)
        family = spec.family if spec else None
        directions = [BANDWIDTH_DIRECTIONS[m] for m in (spec.metrics if spec else ()) if m in BANDWIDTH_DIRECTIONS]
        if family == "pt2pt" and directions:  # bw, bibw, mbw_mr: a window of messages per iteration
            return iterations * self.window * size * max(directions)
        if family == "pt2pt" and spec.metrics == ("latency",):  # latency, multi_lat: ping-pongs
            return iterations * 2 * size
        if family == "collective" and spec.sizes:  # sized collectives: each rank's block
            return iterations * size * self.ranks
        return iterations * HPCC_MESSAGE * 2 * self.ranks
