"""Launching every benchmark of a run several times, and one point from its launches.

Two runs on the same machine differ by more than the samples inside one launch show: the
state a job starts in (where its pages and shared-memory segment land, which host cores the
virtual CPUs share) holds for the whole launch and changes between launches. `run --repeat
N` therefore launches every step N times, interleaved (all steps once, then again), so the
launches of one benchmark are spread over the run. Each point is stored once, when its first
launch measures it, and its later launches are merged into it: the samples' sketch, counts
and moments become those of all launches, and ``detail.launches`` keeps each launch's own
figures, from which `compare` takes the spread between launches as run-to-run noise.

The time budget per point, or a fixed --iterations count, is split between the launches, so
a run takes about as long as one launch with the whole budget (plus the launches' start-up).

Here is the schedule of the launches; merging a launch's records into the stored point is
statistics (``analysis.stats.merge_launch``, with ``point_key``).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import List, Sequence

from fabricbench import numbers
from fabricbench.suite import BENCHMARKS, Step

ENGINE_TIME_BUDGET = 0.2  # the engine's default --time-budget (fabricbench-mpi --help)


def schedule(steps: Sequence[Step], repeat: int) -> List[Step]:
    """The steps `repeat` times, interleaved, each launch with its share of the time budget and,
    under --order random, its own shuffle."""
    if repeat <= 1:
        return list(steps)
    return [_launch(step, k, repeat) for k in range(1, repeat + 1) for step in steps]


def _launch(step: Step, k: int, repeat: int) -> Step:
    args = list(step.args)
    if "--iterations" in args:
        i = args.index("--iterations") + 1
        args[i] = str(max(1, math.ceil(int(args[i]) / repeat)))
    else:
        if "--time-budget" in args:
            i = args.index("--time-budget") + 1
            args[i] = numbers.short(float(args[i]) / repeat, 6)
        elif step.benchmark in BENCHMARKS and "--time-budget" in BENCHMARKS[step.benchmark].options:
            args += ["--time-budget", numbers.short(ENGINE_TIME_BUDGET / repeat, 6)]
    if "--order" in args and args[args.index("--order") + 1] == "random" and "--seed" not in args:
        args += ["--seed", str(k)]
    return replace(step, args=tuple(args), launch=k, launches=repeat)
