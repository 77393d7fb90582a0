"""Which way is better for a metric: the one place that says so.

Lower is better for ``latency`` and ``time``, and for the costs the engine measures per
message (LogGP's ``overhead_send``, ``overhead_recv`` and ``gap``, the exchange's
``cpu_per_message``); higher is better for every other metric
(``bandwidth``, ``bibandwidth``, ``message_rate``, ``flops``, ``update_rate``, ...).
Everything that decides "better" or "worse" goes through this module; the words are in
``report.words.direction``.
"""
from __future__ import annotations

from typing import Optional

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
