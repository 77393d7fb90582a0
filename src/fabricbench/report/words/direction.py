"""Findings -> words for which way a figure moved (``analysis.direction`` decides which way is
better): 'B is 68% better', '17% worse', 'B is 3.2x worse'. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Optional

from fabricbench.analysis.direction import improvement, lower_is_better
from fabricbench.numbers import factor, fixed


def describe(improvement_fraction: Optional[float], subject: str = "B", digits: Optional[int] = None) -> str:
    """'B is 68% better', 'B is 17% worse', 'B is 2.5% better', 'B is the same' (for an improvement fraction).

    Whole percent from 10% up, one decimal below (unless `digits` says otherwise).
    """
    if improvement_fraction is None:
        return "n/a"
    pct = abs(improvement_fraction) * 100.0
    if digits is None:
        digits = 0 if round(pct) >= 10 else 1
    if round(pct, digits) == 0:
        return f"{subject} is the same"
    word = "better" if improvement_fraction > 0 else "worse"
    return f"{subject} is {fixed(pct, digits)}% {word}"


def change_words(ratio: Optional[float], metric: str) -> str:
    """B/A in words: '17% worse', '2.1% better', 'the same'; large factors as '3.2x worse'."""
    if ratio is None or ratio <= 0:
        return "n/a"
    times = ratio if lower_is_better(metric) else 1.0 / ratio  # > 1: B worse
    if times >= 2:
        return f"{factor(times)}x worse"
    if times <= 0.5:
        return f"{factor(1 / times)}x better"
    return describe(improvement(1.0, ratio, metric), "").strip().removeprefix("is ")


def describe_ratio(ratio: Optional[float], metric: str, subject: str = "B") -> str:
    """Like describe() for a ratio B/A, but large factors as 'B is 3.2x worse' rather than '220% worse'."""
    words = change_words(ratio, metric)
    return words if words == "n/a" else f"{subject} is {words}"
