"""The precision a point reached against the one it was measured to (engine ``--precision``).

The engine writes ``detail.precision`` on every point it measured from samples: the 95 %
confidence interval of the median (order statistics), its relative half-width (``reached``),
the point's ``target`` and whether it ``met`` it. Numbers only; the words are the caller's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Precision:
    reached: Optional[float]  # relative half-width of the median's 95 % CI; None: not computable
    target: Optional[float]   # --precision of the point; None: no target
    met: Optional[bool]       # None when there was no target
    median_ci: Optional[Tuple[float, float]]


def precision_of(m: Any) -> Optional[Precision]:
    """The point's precision record, or None for a point that has none (imports, older runs)."""
    detail = getattr(m, "detail", None)
    rec = detail.get("precision") if isinstance(detail, dict) else None
    if not isinstance(rec, dict):
        return None
    ci = rec.get("median_ci")
    met = rec.get("met")
    return Precision(
        reached=_num(rec.get("reached")),
        target=_num(rec.get("target")),
        met=met if isinstance(met, bool) else None,
        median_ci=(float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None,
    )


def missed_precision(m: Any) -> bool:
    """True for a point measured to a --precision target that it did not reach."""
    p = precision_of(m)
    return p is not None and p.met is False


def missed_share(points: Iterable[Any]) -> Tuple[int, int]:
    """(points that missed their target, points that had one)."""
    missed = judged = 0
    for m in points:
        p = precision_of(m)
        if p is None or p.met is None:
            continue
        judged += 1
        missed += not p.met
    return missed, judged


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def median_ci_ranks(n: int, confidence: float = 0.95) -> Optional[Tuple[int, int]]:
    """The 0-based order statistics [lo, hi] bounding the median's CI in n sorted samples (the
    engine's rule, stats.c: the widest j with P(Binomial(n, 1/2) < j) <= (1 - confidence) / 2;
    exact up to 4096, the normal approximation above); None below 6 samples."""
    import math

    if n < 6:
        return None
    tail = (1.0 - confidence) / 2.0
    if n <= 4096:
        cdf, j = 0.0, 0
        log_half = -n * math.log(2.0)
        for k in range(n):
            pmf = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half)
            if cdf + pmf > tail:
                break
            cdf += pmf
            j = k + 1
    else:
        j = math.floor(0.5 * n - 0.5 * 1.959963984540054 * math.sqrt(n))
    j = max(j, 1)
    return j - 1, n - j


def from_sketch(q: Sequence[float], n: int, target: Optional[float]) -> dict:
    """A detail.precision record for n samples known only by their 101 quantiles q (merged
    launches): the interval's order statistics read off the sketch by interpolation."""
    import numpy as np

    ranks = median_ci_ranks(n)
    rec: dict = {"confidence": 0.95, "reached": None, "target": target}
    if ranks is not None:
        grid = np.linspace(0.0, 1.0, len(q))
        lo, hi = (float(np.interp(r / (n - 1), grid, q)) for r in ranks)
        median = float(np.interp(0.5, grid, q))
        rec["median_ci"] = [lo, hi]
        rec["reached"] = (hi - lo) / 2.0 / abs(median) if median else None
    if target:
        rec["met"] = rec["reached"] is not None and rec["reached"] <= target
    return rec
