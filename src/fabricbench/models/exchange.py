"""What a message costs the cores when ranks share them: the engine's ``exchange`` benchmark.

Every rank swaps halos with its ring neighbours at once. Per size the engine records the
time per message when the ranks only exchange (``latency``) and the core time one message
(a send and a receive) takes from a rank that also computes (``cpu_per_message``), with
the share of a core each rank got when all computed at once (``core_share``: 2 for 4 ranks
on 2 cores). A two-rank ping-pong leaves the other ranks idle, so it cannot show this: on
shared cores a dependent swap also waits for its partner's turn on a core.

``predict`` adds this core time to the CPU-bound floor of a profile whose ranks shared cores.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class ExchangeCost:
    sizes: Tuple[float, ...]
    latency_us: Tuple[float, ...]  # per message, ranks only exchanging
    cpu_us: Tuple[float, ...]  # core time per message of a rank that also computes
    core_share: float
    source: str = ""

    @staticmethod
    def _at(sizes: Sequence[float], values: Sequence[float], n: float) -> float:
        """Linear in size between measured sizes; the smallest size's value below them; above
        them, the last two sizes' slope (never negative) carried on."""
        if n <= sizes[0] or len(sizes) == 1:
            return values[0] if n <= sizes[0] else values[-1]
        i = bisect.bisect_left(sizes, n)
        if i < len(sizes):
            x0, x1, y0, y1 = sizes[i - 1], sizes[i], values[i - 1], values[i]
            return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
        slope = max((values[-1] - values[-2]) / (sizes[-1] - sizes[-2]), 0.0)
        return values[-1] + slope * (n - sizes[-1])

    def cpu_per_message_us(self, n: float) -> float:
        return self._at(self.sizes, self.cpu_us, n)

    def cpu_per_message_low_us(self, n: float) -> float:
        """The lower estimate: the bare exchange's time over the core share (no computation
        in between to be descheduled from), never above the busy one."""
        bare = self._at(self.sizes, self.latency_us, n) / self.core_share
        return min(bare, self.cpu_per_message_us(n))

    def to_dict(self) -> Dict[str, Any]:
        return {"sizes": list(self.sizes), "latency_us": list(self.latency_us), "cpu_us": list(self.cpu_us),
                "core_share": self.core_share, "source": self.source}


def _value(m) -> Optional[float]:
    for v in (m.value, m.median):
        if v is not None:
            return float(v)
    return None


def fit_exchange(measurements: Sequence[Any], source: str = "") -> Optional[ExchangeCost]:
    """The exchange records of a run as costs per size (the median over repeats), or None."""
    per: Dict[float, Dict[str, List[float]]] = {}
    shares: List[float] = []
    for m in measurements:
        if m.benchmark != "exchange" or m.size is None or m.metric not in ("latency", "cpu_per_message"):
            continue
        v = _value(m)
        if v is None:
            continue
        per.setdefault(float(m.size), {}).setdefault(m.metric, []).append(v)
        share = (m.params or {}).get("core_share") if isinstance(getattr(m, "params", None), dict) else None
        if isinstance(share, (int, float)) and share >= 1:
            shares.append(float(share))
    rows = [(n, d["latency"], d["cpu_per_message"]) for n, d in sorted(per.items())
            if d.get("latency") and d.get("cpu_per_message")]
    if not rows:
        return None

    def median(xs: List[float]) -> float:
        xs = sorted(xs)
        k = len(xs) // 2
        return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2

    def smooth(xs: List[float]) -> Tuple[float, ...]:
        # each size with its neighbours' median: one size caught by a descheduled rank (4x its
        # neighbours on the lab) would otherwise set the cost of every message near it
        return tuple(median(xs[max(i - 1, 0):i + 2]) if len(xs) > 2 else xs[i] for i in range(len(xs)))

    return ExchangeCost(sizes=tuple(r[0] for r in rows), latency_us=smooth([median(r[1]) for r in rows]),
                        cpu_us=smooth([median(r[2]) for r in rows]), core_share=median(shares) if shares else 1.0,
                        source=source)
