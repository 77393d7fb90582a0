"""The runs a report covers, what was loaded and fitted for them, and the options every section sees.

The runs come loaded (``store.RunData``, from ``Store.load_runs``) and everything else a section
shows that needs the database or a fit comes in a ``Given``, made by the caller before the report
renders (``fabricbench.cli.report.given_for``): the fitted models, the stored replicates each
comparison takes its noise from, the artifacts the sections draw and the earlier fabric snapshots.
``ReportContext`` is what a section's ``build(ctx)`` receives: ``ctx.runs``, ``ctx.options``,
``ctx.models``, ``ctx.given``, ``ctx.artifact_of(run, name)``, ``ctx.series(...)`` (curves across runs)
and ``ctx.plot_format``. It adds what analysis makes of each run (its series, fabric and bandwidth
ceiling) once, before any section renders; nothing here reads the database or fits a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

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


# The artifacts report sections draw, by run kind: what the caller loads into ``Given.artifacts``.
ARTIFACTS = {"fabric": ("fabric",), "profile": ("profile",)}


@dataclass
class Given:
    """What the caller loads from the store and fits before the report renders; a section only reads it.

    models: run id -> ``models.fabric.FabricModel`` (``models.fabric.fit_runs``);
    history: run index -> (the baseline's, the run's) stored replicates, the run-to-run noise of
    the comparison of that run with the baseline (``store.replicates.replicate_history``);
    artifacts: (run id, name) -> the run's artifact of that name (``ARTIFACTS`` by the run's kind);
    previous: fabric run id -> (run, snapshot) of the earlier stored snapshot of the same fabric
    it is judged against, or None (no earlier one); a run not in it is judged against the
    report's own earlier snapshot;
    scaling: the analysis of the runs' scaling series (``analysis.scaling.analyse``: fitted
    models), or the error's text when they cannot be analysed, None without series."""

    models: Dict[int, Any] = field(default_factory=dict)
    history: Dict[int, Tuple[Sequence[RunData], Sequence[RunData]]] = field(default_factory=dict)
    artifacts: Dict[Tuple[int, str], Any] = field(default_factory=dict)
    previous: Dict[int, Any] = field(default_factory=dict)
    scaling: Any = None


class ReportContext:
    """What a section builder receives."""

    def __init__(self, runs: List[RunData], options: Optional[ReportOptions] = None,
                 given: Optional[Given] = None):
        self.runs = runs
        self.options = options or ReportOptions()
        self.given = given or Given()
        self.models: Dict[int, Any] = self.given.models  # run id -> models.fabric.FabricModel, fitted before
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

    def artifact_of(self, run: RunData, name: str) -> Any:
        """The run's artifact `name` as the caller loaded it (``Given.artifacts``), or None."""
        return self.given.artifacts.get((run.run.id, name))

    def comparison(self, run: RunData) -> Any:
        """`run` against the baseline run (analysis.compare.compare), computed once per report, with
        the stored runs of each side's configuration as its history (``Given.history``, loaded by
        the caller): the verdicts and noise `fabricbench compare BASELINE RUN` gives."""
        from fabricbench.analysis.compare import compare

        cache = self.__dict__.setdefault("_comparisons", {})
        if run.index not in cache:
            base = self.baseline
            history = self.given.history.get(run.index, ((), ())) if self.options.history else ((), ())
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
