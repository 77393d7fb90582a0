"""What every check's report shares: problems among its findings, healthy or not, the exit status.

A check (link health, the fabric) lists findings, some of them problems (``f.problem``);
the report is healthy when none is, and the command exits 0 when healthy, 1 otherwise
(2, "could not check", is the command's business).
"""
from __future__ import annotations

from typing import Any, List


class Verdict:
    """Mixin for a report dataclass with a ``findings`` list."""

    findings: List[Any]

    @property
    def problems(self) -> List[Any]:
        return [f for f in self.findings if f.problem]

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def exit_status(self) -> int:
        return 0 if self.healthy else 1
