"""Measurements grouped into series: one benchmark, metric and parameter set over message size.

A run's long-format measurements become curves the report plots and compare matches:
``group_series(measurements)`` -> ``[Series]``, each with its points sorted by size. The
*variant* of a series is its params without ``size`` and without measurement bookkeeping
(``loop_length``, ``measurements``, ``seed``, ...; see IGNORED_PARAMS): ranks, window,
ordering, root, HPCC test, ... Two runs' series match when benchmark, metric and variant
are equal.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

# Params that say how a point was measured, not what: they never split a curve or stop two
# runs' points from matching (the engine picks loop lengths and sample counts per point).
# The engine now writes loop_length and measurements (HPCC's L and M) into detail, not
# params; they stay listed so that runs stored before that change still group and match.
IGNORED_PARAMS = frozenset({"size", "loop_length", "measurements", "seed", "random_rings", "batch"})
IGNORED_BY_BENCHMARK = {"pingpong_pairs": frozenset({"pairs"})}  # pairs measured: set by the time budget
# Params left out of labels unless they differ between the curves shown together.
QUIET_PARAMS = frozenset({"size_meaning", "pairing", "datatype", "op", "cache", "validate"})


def _ignored(benchmark: Optional[str]) -> frozenset:
    extra = IGNORED_BY_BENCHMARK.get(benchmark or "")
    return IGNORED_PARAMS | extra if extra else IGNORED_PARAMS


def variant_of(params: Dict[str, Any], benchmark: Optional[str] = None) -> Dict[str, Any]:
    """The params that define a curve: everything but size and measurement bookkeeping."""
    ignored = _ignored(benchmark)
    return {k: v for k, v in sorted((params or {}).items()) if k not in ignored}


def variant_key(params: Dict[str, Any], benchmark: Optional[str] = None) -> str:
    """A stable string for a variant."""
    return json.dumps(variant_of(params, benchmark), sort_keys=True, default=str)


def variant_label(variant: Dict[str, Any], skip: Iterable[str] = (), quiet: bool = True) -> str:
    """'ranks=4, window=64' (keys in `skip`, and descriptive ones such as datatype when quiet, left out)."""
    skip = set(skip) | (QUIET_PARAMS if quiet else set())
    return ", ".join(f"{k}={v}" for k, v in variant.items() if k not in skip)


@dataclass
class Series:
    benchmark: str
    metric: str
    unit: str
    variant: Dict[str, Any]
    points: List[Any] = field(default_factory=list)  # Measurements, sorted by size
    run: Any = None  # whatever the caller attached (a Run, a store.RunData)

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.benchmark, self.metric, json.dumps(self.variant, sort_keys=True, default=str))

    @property
    def sizes(self) -> List[Optional[int]]:
        return [p.params.get("size") for p in self.points]

    @property
    def values(self) -> List[Optional[float]]:
        return [headline(p) for p in self.points]

    def by_size(self) -> Dict[Optional[int], Any]:
        return {p.params.get("size"): p for p in self.points}


def headline(m: Any) -> Optional[float]:
    """The figure a measurement stands for: its figure of record (analysis/record.py)."""
    from fabricbench.analysis.record import headline_value

    return headline_value(m)


def _size_sort(m: Any) -> Tuple[int, float]:
    size = m.params.get("size")
    return (0, float(size)) if isinstance(size, (int, float)) else (1, 0.0)


def _fast_key(params: Dict[str, Any], ignored: frozenset) -> Any:
    """A hashable variant key; falls back to JSON for unhashable values (lists, dicts)."""
    try:
        key = tuple(sorted((k, v) for k, v in params.items() if k not in ignored))
        hash(key)
        return key
    except TypeError:
        return json.dumps({k: v for k, v in params.items() if k not in ignored}, sort_keys=True, default=str)


def group_series(measurements: Sequence[Any], run: Any = None) -> List[Series]:
    """Curves from measurements, in first-seen order; points sorted by size.

    When a (benchmark, metric, variant, size) point appears more than once (a resumed run),
    the last one wins.
    """
    groups: Dict[Tuple[str, str, Any], Series] = {}
    seen: Dict[Tuple[str, str, Any], Dict[Any, int]] = {}
    for m in measurements:
        params = _as_asked(m)
        key = (m.benchmark, m.metric, _fast_key(params, _ignored(m.benchmark)))
        s = groups.get(key)
        if s is None:
            s = groups[key] = Series(m.benchmark, m.metric, m.unit, variant_of(params, m.benchmark), [], run)
            seen[key] = {}
        size = m.params.get("size")
        index = seen[key].get(size)
        if index is None:
            seen[key][size] = len(s.points)
            s.points.append(m)
        else:
            s.points[index] = m
    for s in groups.values():
        s.points.sort(key=_size_sort)
    return list(groups.values())


def _as_asked(m: Any) -> Dict[str, Any]:
    """A point's params with the window asked for where the engine cut it to fit a slow link
    (``detail.window_capped_from``): the point stays on its curve."""
    detail = getattr(m, "detail", None)
    capped = detail.get("window_capped_from") if isinstance(detail, dict) else None
    params = m.params or {}
    return dict(params, window=capped) if isinstance(capped, int) and "window" in params else params


def benchmarks_in(measurements: Iterable[Any]) -> List[str]:
    """Benchmark names in first-seen order."""
    return list(dict.fromkeys(m.benchmark for m in measurements))
