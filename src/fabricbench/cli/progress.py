"""Progress while a command measures: a live bar at a terminal, a line now and then on stderr
otherwise (a pipe, a log file, a batch job), so a long run shows it is alive without filling
the log with redraws.

``progress(console, *columns)`` returns rich's ``Progress`` at a terminal, else a
``LineProgress`` with the part of its interface the commands use (``add_task``, ``update``,
``remove_task``, ``tasks``, ``console``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from rich.console import Console
from rich.progress import Progress

from fabricbench.cli.output import err_console
from fabricbench.numbers import duration
from fabricbench import numbers

LINE_EVERY = 15.0  # seconds between two progress lines on a non-terminal


@dataclass
class LineTask:
    id: int
    description: str
    total: Optional[float]
    completed: float = 0.0
    fields: Dict[str, Any] = field(default_factory=dict)


class LineProgress:
    """Progress as plain lines on stderr, one every `every` seconds (a short command prints none)."""

    def __init__(self, console: Console, every: float = LINE_EVERY, clock: Callable[[], float] = time.monotonic,
                 out: Optional[Console] = None):
        self.console = console  # where commands print their own lines (failed repetitions, ...)
        self.out = out or err_console
        self.every = every
        self.clock = clock
        self.started = clock()
        self.last = self.started
        self.tasks: List[LineTask] = []
        self._next = 0

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(self, description: str, total: Optional[float] = None, **fields: Any) -> int:
        task = LineTask(self._next, description, total, 0.0, dict(fields))
        self._next += 1
        self.tasks.append(task)
        self._maybe_print(task)
        return task.id

    def remove_task(self, task_id: int) -> None:
        self.tasks = [t for t in self.tasks if t.id != task_id]

    def update(self, task_id: int, *, description: Optional[str] = None, completed: Optional[float] = None,
               total: Optional[float] = None, advance: Optional[float] = None, **fields: Any) -> None:
        task = next((t for t in self.tasks if t.id == task_id), None)
        if task is None:
            return
        if description is not None:
            task.description = description
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if advance:
            task.completed += advance
        task.fields.update(fields)
        self._maybe_print(task)

    def line(self, task: LineTask) -> str:
        parts = [task.description] + [str(v) for v in task.fields.values() if v not in (None, "")]
        if task.total:
            parts.append(f"{numbers.fixed(task.completed, 0)}/{numbers.fixed(task.total, 0)}")
        return f"[{duration(self.clock() - self.started)}] " + " ".join(parts)

    def _maybe_print(self, task: LineTask) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        self.out.print(self.line(task), highlight=False, markup=False, soft_wrap=True)


def progress(console: Console, *columns: Any, disable: bool = False) -> Any:
    """A live progress display at a terminal; occasional stderr lines otherwise."""
    if console.is_terminal or disable:
        return Progress(*columns, console=console, transient=True, disable=disable)
    return LineProgress(console)
