"""The runs a report covers and the options every section sees.

The runs come loaded (``store.RunData``, from ``Store.load_runs``) and the models come fitted
(``models.fabric.fit_runs``): ``ReportContext`` is what a section's ``build(ctx)`` receives:
``ctx.runs``, ``ctx.options``, ``ctx.models``, ``ctx.series(...)`` (curves across runs) and
``ctx.plot_format``. It adds what analysis makes of each run (its series, fabric and
bandwidth ceiling) once, before any section renders; nothing here reads the database beyond
the loaded run's own queries (its artifacts, its replicates).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from fabricbench.analysis.peaks import choose_fabric, run_ceiling
from fabricbench.analysis.series import Series, group_series
from fabricbench.store import RunData

unique_names = RunData.unique_names  # runs' display names, '<name> (#<id>)' where two share one


@dataclass
class ReportOptions:
    title: str = "fabricbench report"
    plot_format: str = "svg"  # "svg" or "png"
    max_curves: int = 12  # curves drawn per plot; every value is still in the tables
    max_table_columns: int = 24  # runs (value columns) per table before it is split
    baseline: int = 0  # index of the run others are compared against
    history: bool = True  # comparisons take run-to-run noise from stored runs (compare --no-history: False)


class ReportContext:
    """What a section builder receives."""

    def __init__(self, runs: List[RunData], options: Optional[ReportOptions] = None,
                 models: Optional[Dict[int, Any]] = None):
        self.runs = runs
        self.options = options or ReportOptions()
        self.models: Dict[int, Any] = dict(models or {})  # run id -> models.fabric.FabricModel, fitted before
        self._claimed: set = set()
        for r in runs:
            analyse(r)

    @property
    def plot_format(self) -> str:
        return self.options.plot_format

    @property
    def baseline(self) -> Optional[RunData]:
        if not self.runs:
            return None
        return self.runs[min(max(self.options.baseline, 0), len(self.runs) - 1)]

    def benchmarks(self) -> List[str]:
        """Every benchmark in any run, in first-seen order."""
        out: Dict[str, None] = {}
        for r in self.runs:
            out.update(dict.fromkeys(r.benchmarks))
        return list(out)

    def series(self, benchmark: Optional[str] = None, metric: Optional[str] = None) -> List[Series]:
        """Curves across all runs (run order), filtered by benchmark and/or metric."""
        out = []
        for r in self.runs:
            for s in r.series:
                if (benchmark is None or s.benchmark == benchmark) and (metric is None or s.metric == metric):
                    out.append(s)
        return out

    def metrics(self, benchmark: str) -> List[str]:
        return list(dict.fromkeys(s.metric for s in self.series(benchmark)))

    def comparison(self, run: RunData) -> Any:
        """`run` against the baseline run (analysis.compare.compare), computed once per report, with
        the stored runs of each side's configuration as its history (``RunData.replicates``): the
        verdicts and noise `fabricbench compare BASELINE RUN` gives."""
        from fabricbench.analysis.compare import compare

        cache = self.__dict__.setdefault("_comparisons", {})
        if run.index not in cache:
            base = self.baseline
            pair = [base, run]
            history = (base.replicates(pair), run.replicates(pair)) if self.options.history else ((), ())
            cache[run.index] = compare(base, run, history=history)
            cache[run.index].history_ignored = not self.options.history
        return cache[run.index]


def analyse(run: RunData) -> RunData:
    """What analysis makes of a loaded run for the report, once: its curves, fabric and ceiling."""
    if run.series is None:
        run.series = group_series(run.measurements, run=run)
    if run.peak is None:
        run.fabric = choose_fabric(run.run, run.hosts)
        run.peak = run_ceiling(run.run, run.hosts)
    return run
