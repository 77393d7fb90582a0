"""Benchmark specifications: the engine's benchmarks, their rank needs and defaults, and suites.

The benchmarks are the engine's own table (``fabricbench-mpi list``, installed by the build
as ``share/benchmarks.jsonl`` next to the engine), read on first use, so importing this
module never needs the native parts. Suites are defined here. A suite is an ordered list
of steps; a step is one engine invocation (a benchmark with its arguments). `plan()` turns
what the user typed (suite and benchmark names, size and iteration overrides) into steps,
checking names and rank counts before anything starts.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from fabricbench.errors import UsageError
from fabricbench.native import NativeMissing, benchmark_table_path


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    family: str  # pt2pt, collective, hpcc, health, info
    sizes: Optional[str] = None  # default MIN:MAX for sized benchmarks; None = not sized
    min_ranks: int = 2
    even_ranks: bool = False
    summary: str = ""
    title: str = ""  # a report's heading (a collective's MPI call)
    metrics: Tuple[str, ...] = ()
    options: Tuple[str, ...] = ()  # every option the engine accepts for it
    fixed_sizes: Tuple[int, ...] = ()  # what an unsized benchmark measures
    size_floor: int = 0  # the engine skips smaller sizes
    pairing: str = "none"  # how ranks pair: none, halves (rank i with i + np/2), sampled

    @classmethod
    def from_record(cls, rec: Dict[str, Any]) -> "BenchmarkSpec":
        """One line of ``fabricbench-mpi list --format jsonl``; KeyError/TypeError/ValueError if malformed."""
        return cls(
            name=str(rec["name"]),
            family=str(rec["family"]),
            sizes=None if rec["sizes"] is None else str(rec["sizes"]),
            min_ranks=int(rec["min_ranks"]),
            even_ranks=bool(rec["even_ranks"]),
            summary=str(rec["summary"]),
            title=str(rec.get("title") or rec["name"]),
            metrics=tuple(str(m) for m in rec["metrics"]),
            options=tuple(str(o) for o in rec["options"]),
            fixed_sizes=tuple(int(n) for n in rec["fixed_sizes"]),
            size_floor=int(rec["size_floor"]),
            pairing=str(rec.get("pairing") or "none"),
        )


def load_benchmarks(path: Optional[Path] = None) -> Dict[str, BenchmarkSpec]:
    """The engine's benchmark table, in its order; NativeMissing when it is absent or unreadable."""
    path = path or benchmark_table_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise NativeMissing(
            f"the engine's benchmark table {path} is missing ({exc.strerror}), so fabricbench does not know "
            "its benchmarks: reinstall fabricbench with an MPI compiler on PATH (pip install .), or build and "
            "install the native parts (cmake --install BUILD --prefix DIR) and set FABRICBENCH_NATIVE_DIR=DIR"
        ) from None
    return _read_table(str(path), stamp)


@lru_cache(maxsize=4)
def _read_table(path: str, stamp: int) -> Dict[str, BenchmarkSpec]:
    table: Dict[str, BenchmarkSpec] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                spec = BenchmarkSpec.from_record(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise NativeMissing(
                    f"{path}:{lineno}: not a line of `fabricbench-mpi list` ({type(exc).__name__}: {exc}); "
                    "rebuild and reinstall the native parts"
                ) from None
            table[spec.name] = spec
    return table


class _EngineBenchmarks(Mapping[str, BenchmarkSpec]):
    """BENCHMARKS: the engine's table, read when first asked (see load_benchmarks)."""

    def __getitem__(self, name: str) -> BenchmarkSpec:
        return load_benchmarks()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(load_benchmarks())

    def __len__(self) -> int:
        return len(load_benchmarks())

    def __repr__(self) -> str:
        return f"BENCHMARKS({benchmark_table_path()})"


BENCHMARKS: Mapping[str, BenchmarkSpec] = _EngineBenchmarks()


def family(name: str, metrics: Optional[Sequence[str]] = None, metric: Union[str, Sequence[str], None] = None) -> Tuple[str, ...]:
    """The engine's benchmarks of family `name` (the table's ``family``: pt2pt, collective, nbc,
    onesided, hpcc, health, info), in the table's order; only those whose metrics are exactly
    `metrics`, or that measure `metric` (or any of several), when given. What a report section,
    the watchdog or a suite lists instead of naming benchmarks by hand."""
    wanted = (metric,) if isinstance(metric, str) else metric
    return tuple(s.name for s in BENCHMARKS.values() if s.family == name
                 and (metrics is None or s.metrics == tuple(metrics))
                 and (wanted is None or any(m in s.metrics for m in wanted)))


@dataclass(frozen=True)
class Step:
    """One engine invocation."""

    benchmark: str
    sizes: Optional[str] = None
    args: Tuple[str, ...] = ()
    launch: int = 1  # which of the run's `launches` of this step (planning.repeats)
    launches: int = 1

    def engine_args(self) -> List[str]:
        argv = [self.benchmark]
        if self.sizes:
            argv += ["--sizes", self.sizes]
        return argv + list(self.args)

    def planned_sizes(self) -> List[int]:
        """The message sizes the engine will measure, in order (empty for unsized benchmarks)."""
        if not self.sizes:
            return []
        floor = BENCHMARKS[self.benchmark].size_floor if self.benchmark in BENCHMARKS else 0
        return [s for s in expand_sizes(self.sizes, include_zero=True) if s >= floor]


QUICK_BUDGET = ("--time-budget", "0.05")
STANDARD_FAMILIES = ("pt2pt", "collective", "hpcc")  # not the health check's allpairs, not info


class _Suites(Mapping[str, List[Step]]):
    """SUITES: name -> steps. "standard" is every benchmark of STANDARD_FAMILIES at its default
    sizes, so it reads the engine's table; the names are known without it."""

    _steps: Dict[str, Callable[[], List[Step]]] = {
        "quick": lambda: [
            Step("latency", "0:64K", QUICK_BUDGET),
            Step("bw", "1:4M", QUICK_BUDGET),
            Step("bibw", "1:4M", QUICK_BUDGET),
            Step("allreduce", "4:64K", QUICK_BUDGET),
            Step("alltoall", "1:16K", QUICK_BUDGET),
        ],
        "standard": lambda: [Step(s.name, s.sizes) for s in BENCHMARKS.values() if s.family in STANDARD_FAMILIES],
        "hpcc-net": lambda: [Step("pingpong_pairs"), Step("ring")],
    }

    def __getitem__(self, name: str) -> List[Step]:
        return self._steps[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


SUITES: Mapping[str, List[Step]] = _Suites()

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
    order: Optional[str] = None,
    where_taken: Sequence[Tuple[str, str]] = (),
) -> List[Step]:
    """Steps for suite and benchmark names; `sizes` and `extra` engine args apply to every step,
    `order` ("ascending" or "random") to every step that measures several sizes, each
    (option, value) of `where_taken` (--win-sync fence) to the steps that take that option."""
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
        if order and spec.sizes and "--order" in spec.options:
            new = replace(new, args=tuple(new.args) + ("--order", order))
        for option, value in where_taken:
            if option in spec.options:
                new = replace(new, args=tuple(new.args) + (option, value))
        check_options(spec, new.args)
        overridden.append(new)
    for option, _value in where_taken:
        if not any(option in BENCHMARKS[s.benchmark].options for s in overridden):
            raise UsageError(f"{option} applies to none of {', '.join(s.benchmark for s in overridden)}")
    return overridden


def check_options(spec: BenchmarkSpec, args: Sequence[str]) -> None:
    """Every option in args is one the engine accepts for spec (its table says which)."""
    for arg in args:
        name = arg.partition("=")[0]
        if name.startswith("--") and name not in spec.options:
            raise UsageError(f"{spec.name} does not take {name}; it takes {', '.join(spec.options)}")


def check_ranks(spec: BenchmarkSpec, ranks: int) -> None:
    if ranks < spec.min_ranks:
        raise UsageError(f"{spec.name} needs at least {spec.min_ranks} ranks; --np is {ranks}")
    if spec.even_ranks and ranks % 2:
        how = "pairs rank i with i + np/2" if spec.pairing == "halves" else "measures between a pair of ranks"
        raise UsageError(f"{spec.name} {how} and needs an even rank count; --np is {ranks}: "
                         f"use --np {max(spec.min_ranks, ranks - 1)} or --np {ranks + 1}")
