"""The precision a point reached against the one it was measured to (engine ``--precision``).

The engine writes ``detail.precision`` on every point it measured from samples: the 95 %
confidence interval of the median (order statistics), its relative half-width (``reached``),
the point's ``target`` and whether it ``met`` it. Numbers only; the words are the caller's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Tuple


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
