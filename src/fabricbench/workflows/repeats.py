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
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.precision import from_sketch, precision_of
from fabricbench.store import Measurement
from fabricbench.suite import BENCHMARKS, Step
from fabricbench import numbers

ENGINE_TIME_BUDGET = 0.2  # the engine's default --time-budget (fabricbench-mpi --help)
LAUNCH_FIELDS = ("value", "median", "min", "max", "n", "iterations")


def _grid():
    """The 101 quantile levels of a sketch (numpy imported here: `fabricbench --help` loads this module)."""
    import numpy as np

    return np.linspace(0.0, 1.0, 101)


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


def point_key(m: Measurement) -> Tuple[str, str, str]:
    """What makes two launches' records the same point."""
    params = {k: v for k, v in m.params.items() if k not in ("seed", "order")}
    return m.benchmark, m.metric, json.dumps(params, sort_keys=True, default=str)


def launch_figures(m: Measurement) -> Dict[str, Any]:
    return {k: getattr(m, k) for k in LAUNCH_FIELDS if getattr(m, k) is not None}


def launches(m: Measurement) -> List[Dict[str, Any]]:
    """Each launch's own figures of a merged point (empty for a point from one launch)."""
    found = (m.detail or {}).get("launches")
    return [x for x in found if isinstance(x, dict)] if isinstance(found, list) else []


def merge(stored: Measurement, new: Measurement) -> Measurement:
    """The point `stored` (one or more launches) with launch `new` added."""
    import numpy as np

    before = launches(stored) or [launch_figures(stored)]
    parts = [stored, new]
    weights = [float(p.n or 1) for p in parts]
    total = sum(weights)
    detail = dict(stored.detail or {})
    sketches = [_sketch(p) for p in parts]
    merged_q = _mixture(sketches, weights) if all(q is not None for q in sketches) else None
    if merged_q is not None:
        detail["sketch"] = dict(detail.get("sketch") or {}, q=[float(x) for x in merged_q])
    else:
        detail.pop("sketch", None)
    per_rank = [(p.detail or {}).get("per_rank") for p in parts]
    if all(isinstance(r, list) for r in per_rank) and len({len(r) for r in per_rank}) == 1:
        detail["per_rank"] = [_weighted([r[i] for r in per_rank], weights) for i in range(len(per_rank[0]))]
    if isinstance(detail.get("elapsed_s"), (int, float)) and isinstance((new.detail or {}).get("elapsed_s"), (int, float)):
        detail["elapsed_s"] = detail["elapsed_s"] + new.detail["elapsed_s"]
    detail["launches"] = before + [launch_figures(new)]
    if merged_q is not None and isinstance(detail.get("precision"), dict) and all(p.n for p in parts):
        detail["precision"] = from_sketch(merged_q, int(total), precision_of(stored).target)
    mean = _weighted([p.mean for p in parts], weights)
    out = replace(
        stored,
        n=int(total) if all(p.n is not None for p in parts) else None,
        iterations=sum(p.iterations for p in parts) if all(p.iterations is not None for p in parts) else None,
        min=_extreme(min, [p.min for p in parts]),
        max=_extreme(max, [p.max for p in parts]),
        mean=mean,
        median=float(np.interp(0.5, _grid(), merged_q)) if merged_q is not None else _weighted([p.median for p in parts], weights),
        p99=float(np.interp(0.99, _grid(), merged_q)) if merged_q is not None else _extreme(max, [p.p99 for p in parts]),
        stdev=_pooled_stdev(parts, weights, mean),
        detail=detail,
    )
    out.value = _merged_value(stored, new, out)
    return out


def _merged_value(stored: Measurement, new: Measurement, out: Measurement) -> Optional[float]:
    """The headline figure over all launches, of the same kind as one launch's: the mean when a
    launch's value is its mean, the median when it is its median, else (a rate over the whole
    point, such as bandwidth) the rate over every launch's iterations together."""
    if stored.value is None or new.value is None:
        return stored.value if new.value is None else new.value
    if _same(stored.value, stored.mean) and _same(new.value, new.mean):
        return out.mean
    if _same(stored.value, stored.median) and _same(new.value, new.median):
        return out.median
    if str((stored.detail or {}).get("stats_over", "")).startswith("per-call"):
        # Collectives: OSU's mean over ranks of each rank's average call, over all calls.
        its = [float(p.iterations or p.n or 1) for p in (stored, new)]
        return (stored.value * its[0] + new.value * its[1]) / sum(its)
    its = [p.iterations or p.n or 1 for p in (stored, new)]
    if stored.value > 0 and new.value > 0:
        prior = (stored.iterations or stored.n or 1)
        return (prior + its[1]) / (prior / stored.value + its[1] / new.value)
    return out.median


def _same(a: Optional[float], b: Optional[float]) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _sketch(m: Measurement) -> Optional[np.ndarray]:
    from fabricbench.analysis.stats import sketch

    return sketch(m)


def _mixture(qs: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The 101 quantiles of a weighted mixture of distributions given by their 101 quantiles."""
    import numpy as np

    grid = _grid()
    xs = np.unique(np.concatenate(qs))
    cdf = np.zeros_like(xs)
    for q, w in zip(qs, weights):
        if q[-1] > q[0]:
            cdf += w * np.interp(xs, q, grid, left=0.0, right=1.0)
        else:
            cdf += w * (xs >= q[0])
    cdf /= sum(weights)
    # invert the (non-decreasing) CDF: the smallest x whose CDF reaches each level
    idx = np.searchsorted(cdf, grid * (1 - 1e-12), side="left")
    out = xs[np.clip(idx, 0, len(xs) - 1)]
    out[0], out[-1] = xs[0], xs[-1]
    return np.maximum.accumulate(out)


def _weighted(values: Sequence[Optional[float]], weights: Sequence[float]) -> Optional[float]:
    if any(v is None for v in values):
        return None
    return float(sum(v * w for v, w in zip(values, weights)) / sum(weights))


def _extreme(pick, values: Sequence[Optional[float]]) -> Optional[float]:
    found = [v for v in values if v is not None]
    return pick(found) if found else None


def _pooled_stdev(parts: Sequence[Measurement], weights: Sequence[float], mean: Optional[float]) -> Optional[float]:
    if mean is None or any(p.stdev is None or p.mean is None for p in parts):
        return None
    total = sum(weights)
    var = sum(w * (p.stdev ** 2 + (p.mean - mean) ** 2) for p, w in zip(parts, weights)) / total
    return math.sqrt(max(var, 0.0))
