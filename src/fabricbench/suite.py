"""Benchmark specifications: the engine's benchmarks, their rank needs and defaults, and suites.

A suite is an ordered list of steps; a step is one engine invocation (a benchmark with
its arguments). `plan()` turns what the user typed (suite and benchmark names, size and
iteration overrides) into steps, checking names and rank counts before anything starts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from fabricbench.errors import UsageError


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    family: str  # pt2pt, collective, hpcc, info
    sizes: Optional[str] = None  # default MIN:MAX for sized benchmarks; None = not sized
    min_ranks: int = 2
    even_ranks: bool = False
    summary: str = ""


BENCHMARKS: Dict[str, BenchmarkSpec] = {
    s.name: s
    for s in (
        BenchmarkSpec("latency", "pt2pt", "0:4M", summary="blocking ping-pong, one-way latency"),
        BenchmarkSpec("bw", "pt2pt", "1:4M", even_ranks=True, summary="windowed uni-directional bandwidth"),
        BenchmarkSpec("bibw", "pt2pt", "1:4M", even_ranks=True, summary="windowed bi-directional bandwidth"),
        BenchmarkSpec("mbw_mr", "pt2pt", "1:4M", even_ranks=True, summary="multi-pair bandwidth and message rate"),
        BenchmarkSpec("multi_lat", "pt2pt", "0:1M", even_ranks=True, summary="all pairs ping-pong at once"),
        BenchmarkSpec("barrier", "collective", None, summary="MPI_Barrier time"),
        BenchmarkSpec("bcast", "collective", "1:1M", summary="MPI_Bcast"),
        BenchmarkSpec("reduce", "collective", "4:1M", summary="MPI_Reduce"),
        BenchmarkSpec("allreduce", "collective", "4:1M", summary="MPI_Allreduce"),
        BenchmarkSpec("allgather", "collective", "1:1M", summary="MPI_Allgather"),
        BenchmarkSpec("alltoall", "collective", "1:1M", summary="MPI_Alltoall"),
        BenchmarkSpec("reduce_scatter", "collective", "4:1M", summary="MPI_Reduce_scatter"),
        BenchmarkSpec("pingpong_pairs", "hpcc", None, summary="HPCC ping-pong over all (or sampled) pairs"),
        BenchmarkSpec("ring", "hpcc", None, summary="HPCC natural and random rings"),
        BenchmarkSpec("info", "info", None, min_ranks=1, summary="per-rank host, MPI library, timer"),
    )
}


@dataclass(frozen=True)
class Step:
    """One engine invocation."""

    benchmark: str
    sizes: Optional[str] = None
    args: Tuple[str, ...] = ()

    def engine_args(self) -> List[str]:
        argv = [self.benchmark]
        if self.sizes:
            argv += ["--sizes", self.sizes]
        return argv + list(self.args)

    def planned_sizes(self) -> List[int]:
        """The message sizes the engine will measure, in order (empty for unsized benchmarks)."""
        return expand_sizes(self.sizes, include_zero=self.benchmark in ("latency", "multi_lat")) if self.sizes else []


QUICK_BUDGET = ("--time-budget", "0.05")

SUITES: Dict[str, List[Step]] = {
    "quick": [
        Step("latency", "0:64K", QUICK_BUDGET),
        Step("bw", "1:4M", QUICK_BUDGET),
        Step("bibw", "1:4M", QUICK_BUDGET),
        Step("allreduce", "4:64K", QUICK_BUDGET),
        Step("alltoall", "1:16K", QUICK_BUDGET),
    ],
    "standard": [Step(s.name, s.sizes) for s in BENCHMARKS.values() if s.family in ("pt2pt", "collective", "hpcc")],
    "hpcc-net": [Step("pingpong_pairs"), Step("ring")],
}

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmg]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'4K', '4KiB', '1M', '512' -> bytes (binary multiples, as OSU)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"bad message size '{text}': use bytes or a K/M/G suffix, e.g. 4K or 1M")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def expand_sizes(spec: str, include_zero: bool = False) -> List[int]:
    """'MIN:MAX' -> the powers of two from MIN to MAX (and 0 first when MIN is 0 and it applies)."""
    lo_text, sep, hi_text = spec.partition(":")
    if not sep:
        lo_text = hi_text = spec
    lo, hi = parse_size(lo_text), parse_size(hi_text)
    if hi < lo:
        raise UsageError(f"bad size range '{spec}': the maximum is below the minimum")
    sizes = [0] if lo == 0 and include_zero else []
    size = 1
    while size < max(lo, 1):
        size <<= 1
    while size <= hi:
        sizes.append(size)
        size <<= 1
    return sizes


def names() -> List[str]:
    return list(SUITES) + list(BENCHMARKS)


def plan(
    selection: Sequence[str],
    ranks: int,
    sizes: Optional[str] = None,
    extra: Sequence[str] = (),
) -> List[Step]:
    """Steps for suite and benchmark names; `sizes` and `extra` engine args apply to every step."""
    if not selection:
        selection = ["quick"]
    steps: List[Step] = []
    for name in selection:
        if name in SUITES:
            steps.extend(SUITES[name])
        elif name in BENCHMARKS:
            steps.append(Step(name, BENCHMARKS[name].sizes))
        else:
            raise UsageError(
                f"unknown suite or benchmark '{name}'; suites: {', '.join(SUITES)}; "
                f"benchmarks: {', '.join(BENCHMARKS)}"
            )
    if sizes:
        expand_sizes(sizes)  # validate early
    overridden = []
    for step in steps:
        spec = BENCHMARKS[step.benchmark]
        check_ranks(spec, ranks)
        new = step
        if sizes and spec.sizes:
            new = replace(new, sizes=sizes)
        if extra:
            # User arguments replace a suite's time budget instead of fighting it.
            keep = step.args if not any(a in ("--time-budget", "--iterations") for a in extra) else ()
            new = replace(new, args=tuple(keep) + tuple(extra))
        overridden.append(new)
    return overridden


def check_ranks(spec: BenchmarkSpec, ranks: int) -> None:
    if ranks < spec.min_ranks:
        raise UsageError(f"{spec.name} needs at least {spec.min_ranks} ranks; --np is {ranks}")
    if spec.even_ranks and ranks % 2:
        how = "pairs rank i with i + np/2" if spec.name in ("mbw_mr", "multi_lat") else "measures between a pair of ranks"
        raise UsageError(f"{spec.name} {how} and needs an even rank count; --np is {ranks}: "
                         f"use --np {max(spec.min_ranks, ranks - 1)} or --np {ranks + 1}")
