"""The runs a report covers, loaded once, and the options every section sees.

``load_runs(store, refs)`` reads each run, its measurements and its hosts (one query each
per run) into ``LoadedRun`` objects; ``ReportContext`` is what a section's ``build(ctx)``
receives: ``ctx.runs``, ``ctx.options``, ``ctx.series(...)`` (curves across runs) and
``ctx.plot_format``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence

from fabricbench.analysis.peaks import Ceiling, FabricChoice, RunPeak, choose_fabric, run_ceiling
from fabricbench.analysis.series import Series, group_series
from fabricbench.store.records import HOST_PROBE


@dataclass
class ReportOptions:
    title: str = "fabricbench report"
    plot_format: str = "svg"  # "svg" or "png"
    max_curves: int = 12  # curves drawn per plot; every value is still in the tables
    max_table_columns: int = 24  # runs (value columns) per table before it is split
    baseline: int = 0  # index of the run others are compared against
    history: bool = True  # comparisons take run-to-run noise from stored runs (compare --no-history: False)


@dataclass
class LoadedRun:
    run: Any  # store.Run
    measurements: List[Any]
    hosts: List[Any]
    index: int = 0
    name: str = ""  # unique display name (legend)
    fabric: Optional[FabricChoice] = None
    store: Any = field(default=None, repr=False)  # for artifact(): a profile, a study's files
    _series: Optional[List[Series]] = field(default=None, repr=False)
    _ceiling: Optional[tuple] = field(default=None, repr=False)

    @property
    def id(self) -> int:
        return self.run.id

    def artifact(self, name: str) -> Any:
        """A named artifact of the run (e.g. 'profile'), or None."""
        return self.store.artifact(self.run.id, name) if self.store is not None else None

    @property
    def probes(self) -> List[Dict[str, Any]]:
        """The engine's host probe of each launch (``analysis.host_state``)."""
        return self.store.artifacts(self.run.id, HOST_PROBE) if self.store is not None else []

    @property
    def series(self) -> List[Series]:
        if self._series is None:
            self._series = group_series(self.measurements, run=self)
        return self._series

    @property
    def benchmarks(self) -> List[str]:
        return list(dict.fromkeys(s.benchmark for s in self.series))

    @property
    def host_facts(self) -> List[Dict[str, Any]]:
        return [h.facts for h in self.hosts if isinstance(h.facts, dict)]

    @property
    def node_count(self) -> Optional[int]:
        prov = self.run.provenance or {}
        nodes = prov.get("nodes")
        if isinstance(nodes, int) and nodes > 0:
            return nodes
        names = prov.get("hosts")
        if isinstance(names, list) and names:
            return len(set(map(str, names)))
        if self.hosts:
            return len({h.hostname for h in self.hosts})
        return None

    @property
    def peak(self) -> RunPeak:
        """The bandwidth ceiling per direction (fabric or PCIe), or why there is none (analysis.peaks.run_ceiling)."""
        if self._ceiling is None:
            self._ceiling = (run_ceiling(self.run, self.hosts),)
        return self._ceiling[0]

    @property
    def ceiling(self) -> Optional[Ceiling]:
        return self.peak.ceiling


def unique_names(runs: Sequence[Any]) -> List[str]:
    """Runs' display names, '<name> (#<id>)' where two runs share a name."""
    names = [r.name for r in runs]
    counts: Dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return [n if counts[n] == 1 else f"{n} (#{r.id})" for n, r in zip(names, runs)]


def load_runs(store: Any, refs: Iterable[Any]) -> List[LoadedRun]:
    """Runs by id/uuid/'last' with their measurements and hosts; a run named twice is loaded once."""
    return loaded_from(store, store.get_runs(refs))


def loaded_from(store: Any, runs: Sequence[Any]) -> List[LoadedRun]:
    out = []
    measurements = store.measurements_by_run([r.id for r in runs])
    for index, (run, name) in enumerate(zip(runs, unique_names(runs))):
        hosts = store.hosts(run.id)
        lr = LoadedRun(run=run, measurements=measurements.get(run.id, []), hosts=hosts, index=index, name=name, store=store)
        lr.fabric = choose_fabric(run, hosts)
        out.append(lr)
    return out


class ReportContext:
    """What a section builder receives."""

    def __init__(self, runs: List[LoadedRun], options: Optional[ReportOptions] = None):
        self.runs = runs
        self.options = options or ReportOptions()
        self._claimed: set = set()

    @property
    def plot_format(self) -> str:
        return self.options.plot_format

    @property
    def baseline(self) -> Optional[LoadedRun]:
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

    def comparison(self, run: LoadedRun) -> Any:
        """`run` against the baseline run (analysis.compare.compare), computed once per report, with
        the stored runs of each side's configuration as its history (``workflows.replicates``, read
        through the store the runs were loaded from): the verdicts and noise `fabricbench compare
        BASELINE RUN` gives."""
        from fabricbench.analysis.compare import compare
        from fabricbench.workflows.replicates import replicate_history

        cache = self.__dict__.setdefault("_comparisons", {})
        if run.index not in cache:
            base = self.baseline
            store = base.store if base.store is not None else run.store
            use = store is not None and self.options.history
            history = replicate_history(store, [base], [run]) if use else ((), ())
            cache[run.index] = compare(base, run, history=history)
            cache[run.index].history_ignored = not self.options.history
        return cache[run.index]
