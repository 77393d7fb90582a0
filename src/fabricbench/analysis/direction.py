"""Which way is better for a metric: the one place that says so.

Lower is better for ``latency`` and ``time``, and for the costs the engine measures per
message (LogGP's ``overhead_send``, ``overhead_recv`` and ``gap``, the exchange's
``cpu_per_message``); higher is better for every other metric
(``bandwidth``, ``bibandwidth``, ``message_rate``, ``flops``, ``update_rate``, ...).
Everything that says "better", "worse" or "% better" goes through this module.
"""
from __future__ import annotations

from typing import Optional

from fabricbench import numbers

LOWER_IS_BETTER = frozenset({"latency", "time", "overhead_send", "overhead_recv", "gap", "cpu_per_message",
                             "pure_comm"})


def lower_is_better(metric: str) -> bool:
    return metric in LOWER_IS_BETTER


def higher_is_better(metric: str) -> bool:
    return metric not in LOWER_IS_BETTER


def direction_word(metric: str) -> str:
    """'lower is better' or 'higher is better', for table captions."""
    return "lower is better" if lower_is_better(metric) else "higher is better"


def improvement(a: Optional[float], b: Optional[float], metric: str) -> Optional[float]:
    """How much better B is than A, as a fraction of A (0.68 = 68% better; negative = worse).

    Higher-is-better metrics: (B - A) / A, as in "EDR outperforms FDR by 68%".
    Lower-is-better metrics:  (A - B) / A, as in "latency is reduced by 51%".
    None when either value is missing or A is zero.
    """
    if a is None or b is None or a == 0:
        return None
    change = (b - a) / abs(a)
    return -change if lower_is_better(metric) else change


def is_better(a: float, b: float, metric: str) -> bool:
    """True when b is strictly better than a."""
    return b < a if lower_is_better(metric) else b > a


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
    return f"{subject} is {pct:.{digits}f}% {word}"


def change_words(ratio: Optional[float], metric: str) -> str:
    """B/A in words: '17% worse', '2.1% better', 'the same'; large factors as '3.2x worse'."""
    if ratio is None or ratio <= 0:
        return "n/a"
    factor = ratio if lower_is_better(metric) else 1.0 / ratio  # > 1: B worse
    if factor >= 2:
        return f"{_factor(factor)}x worse"
    if factor <= 0.5:
        return f"{_factor(1 / factor)}x better"
    return describe(improvement(1.0, ratio, metric), "").strip().removeprefix("is ")


def describe_ratio(ratio: Optional[float], metric: str, subject: str = "B") -> str:
    """Like describe() for a ratio B/A, but large factors as 'B is 3.2x worse' rather than '220% worse'."""
    words = change_words(ratio, metric)
    return words if words == "n/a" else f"{subject} is {words}"


_factor = numbers.factor
