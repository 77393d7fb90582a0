"""A run's time, bounded before it starts: what each point may cost and what does not fit.

Every adaptive point stops at its precision (engine ``--precision``) or, at the latest, after
GUARD x its time budget once it has its minimum iterations. On a slow link the minimum
iterations alone can take far longer than that: a bibw iteration at 4 MiB moves a
64-message window each way, 45 s at 50 Mbit/s, so ten of them (plus the warm-up's three)
took the point ten minutes. When the link's rate is known (a lab's shaped rate), each
point's least cost is estimated from the bytes its iterations move, and a point whose
warm-up and minimum iterations do not fit its share (SHARE_S per launch, or GUARD budgets
when larger) is measured with fewer messages per window (the step gets the engine's
``--max-window-bytes``, which caps window x size per size) or, when even one message per
window does not fit, skipped (with the larger sizes of its step). Numbers and decisions only;
the words are the CLI's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, List, Optional, Sequence, Tuple

from fabricbench.suite import BENCHMARKS, Step

GUARD = 2.0             # the engine's GUARD_FACTOR: an adaptive point ends after 2 budgets (timing.c)
DEFAULT_BUDGET_S = 0.2  # the engine's --time-budget default
MIN_ITERATIONS = 10     # the engine's --min-iterations default
WARMUP_ITERATIONS = 3   # the automatic warm-up's two shortest rounds (1 + 2 iterations)
WARMUP_S = 0.03         # its rounds on a fast link: until one lasts 10 ms (doubling: about 3 x)
DEFAULT_WINDOW = 64
SHARE_S = 3.0           # seconds a point may take on a slow link (all launches together)
LAUNCH_S = 2.0          # starting one engine launch (mpirun, MPI_Init, the host probe)

_HPCC_BYTES = 2_000_000


@dataclass(frozen=True)
class Adjustment:
    """A point that does not fit its share at its window: measured with `window`, or skipped (None)."""

    benchmark: str
    size: int
    need_s: float              # seconds its warm-up and minimum iterations take at the original window
    window: Optional[int]      # the window it is measured with instead; None: skipped
    original_window: Optional[int] = None


@dataclass
class TimePlan:
    steps: List[Step]
    bound_s: float                    # the run cannot take much longer than this (every point at its ceiling)
    points: int                       # points measured, every launch counted once
    rate_Bps: Optional[float]         # the link rate the estimate went by; None: unknown (budgets only)
    adjustments: List[Adjustment] = field(default_factory=list)

    @property
    def skipped(self) -> List[Adjustment]:
        return [a for a in self.adjustments if a.window is None]


def link_rate_Bps(launcher: Any) -> Optional[float]:
    """The slowest shaped link between the launcher's hosts, in bytes/s (a lab's nodes and uplink);
    None when the launcher does not know its links."""
    lab = getattr(launcher, "lab", None)
    if lab is None:
        return None
    try:
        hosts = list(dict.fromkeys(launcher.layout.hosts or [])) or list(lab.node_names)
        nodes = [lab.node(h) for h in hosts]
        rates = [n.rate_bps for n in nodes]
        if len({n.switch for n in nodes}) > 1 and lab.spec.uplink_bps():
            rates.append(lab.spec.uplink_bps())
    except Exception:  # a lab torn down under us: no rate, the budgets still bound the run
        return None
    return min(rates) / 8.0 if rates else None


def _option(args: Sequence[str], name: str) -> Optional[str]:
    args = list(args)
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def iteration_s(benchmark: str, size: int, window: int, ranks: int, rate_Bps: float) -> float:
    """Seconds one iteration spends moving bytes over a link of rate_Bps (the slowest hop)."""
    np_ = max(2, ranks)
    spec = BENCHMARKS.get(benchmark)
    family = spec.family if spec else None
    if family == "pt2pt" and "--window" in spec.options:  # bw, bibw, mbw_mr, loggp
        nbytes = window * size  # bibw and mbw_mr: each direction and pair has its own link
    elif family == "pt2pt" and spec.metrics == ("latency",):  # latency, multi_lat: ping-pongs
        nbytes = 2 * size
    elif benchmark in ("bcast", "reduce"):
        nbytes = size * math.ceil(math.log2(np_))
    elif benchmark == "allreduce":
        nbytes = 2 * size
    elif benchmark in ("allgather", "alltoall", "reduce_scatter"):
        nbytes = (np_ - 1) * size
    elif family == "hpcc":  # pingpong_pairs, ring
        nbytes = 2 * _HPCC_BYTES
    else:
        nbytes = size
    return nbytes / rate_Bps


def launch_seconds(load: Optional[float] = None, cores: Optional[int] = None) -> float:
    """Seconds one launch costs besides its points: LAUNCH_S on an idle machine, stretched by how
    far the host's run queue exceeds its cores (start-up is CPU work that waits its turn)."""
    import os

    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = 0.0
    cores = cores or os.cpu_count() or 1
    return LAUNCH_S * max(1.0, load / cores)


def plan_time(steps: Sequence[Step], ranks: int, rate_Bps: Optional[float], repeat: int = 1,
              launch_s: float = LAUNCH_S) -> TimePlan:
    """The steps adjusted to fit (see the module docstring) and the bound of the whole run:
    every point at its ceiling, plus `launch_s` per launch and one more for the host facts."""
    repeat = max(1, repeat)
    out: List[Step] = []
    adjustments: List[Adjustment] = []
    bound = 0.0
    points = 0
    for step in steps:
        spec = BENCHMARKS[step.benchmark] if step.benchmark in BENCHMARKS else None
        budget = float(_option(step.args, "--time-budget") or DEFAULT_BUDGET_S)
        fixed = _option(step.args, "--iterations")
        iters = int(fixed) if fixed else int(_option(step.args, "--min-iterations") or MIN_ITERATIONS)
        per_size = max(1, len(spec.metrics) if spec is not None else 1)
        window = int(_option(step.args, "--window") or DEFAULT_WINDOW)
        windowed = spec is not None and "--max-window-bytes" in spec.options
        ceiling = GUARD * budget / repeat          # per launch: the guard's ceiling
        share = max(ceiling, SHARE_S / repeat)     # per launch: a point's share on a slow link
        per_launch = math.ceil(iters / repeat) if fixed else iters
        cap_bytes: Optional[int] = None
        kept: List[int] = []
        sizes = step.planned_sizes()
        dropping = False
        for size in sizes or [None]:
            if dropping:  # larger sizes than one that did not fit need longer still
                adjustments.append(Adjustment(step.benchmark, size, 0.0, None, window if windowed else None))
                continue
            t_iter = iteration_s(step.benchmark, size or 0, window, ranks, rate_Bps) if rate_Bps else 0.0
            need = (WARMUP_ITERATIONS + per_launch) * t_iter
            if size is not None and rate_Bps and need > share and not fixed:
                fit = 0
                if windowed:
                    per_message = need / window
                    fit = min(window - 1, int(share // per_message)) if per_message > 0 else window
                adjustments.append(Adjustment(step.benchmark, size, need * repeat, fit or None,
                                              window if windowed else None))
                if not fit:
                    dropping = True
                    continue
                if cap_bytes is None:
                    # One cap for the step: the bytes per window that fit the share.
                    cap_bytes = max(1, int(share * rate_Bps / (WARMUP_ITERATIONS + per_launch)))
                need = need * fit / window
            bound += repeat * (WARMUP_S + (need if fixed else max(ceiling, need)))
            points += per_size
            if size is not None:
                kept.append(size)
        if sizes and not kept:
            continue
        new = step
        if sizes and kept != sizes:
            new = replace(new, sizes=f"{kept[0]}:{kept[-1]}")
        if cap_bytes is not None:
            new = replace(new, args=_without(tuple(new.args), "--max-window-bytes") + ("--max-window-bytes", str(cap_bytes)))
        out.append(new)
        bound += repeat * launch_s
    bound += launch_s  # the host facts are collected through one launch first
    return TimePlan(out, bound, points, rate_Bps, adjustments)


def _without(args: Tuple[str, ...], name: str) -> Tuple[str, ...]:
    out: List[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == name:
            skip = True
            continue
        out.append(a)
    return tuple(out)
