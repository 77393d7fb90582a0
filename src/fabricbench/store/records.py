"""Runs, measurements and hosts as plain records (dataclasses), the store's public shape."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Dict, Iterator, List, Optional, Sequence

STAT_FIELDS = ("n", "iterations", "value", "min", "median", "mean", "p99", "max", "stdev")


class _Record:
    """A record that reads as a plain dict (``to_dict``), as JSON output and DataFrames take it."""

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class Run(_Record):
    id: int
    uuid: str
    created: str
    label: Optional[str]
    tags: Dict[str, str]
    kind: str
    command: Optional[str]
    tool_version: str
    status: str
    message: Optional[str] = None
    finished: Optional[str] = None
    ranks: Optional[int] = None
    provenance: Dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How a run is shown in legends: its label, else its fabric tag, else #id."""
        return self.label or self.tags.get("fabric") or f"run {self.id}"


@dataclass
class Measurement(_Record):
    benchmark: str
    params: Dict[str, Any]
    metric: str
    unit: str
    value: Optional[float] = None
    n: Optional[int] = None
    iterations: Optional[int] = None
    min: Optional[float] = None
    median: Optional[float] = None
    mean: Optional[float] = None
    p99: Optional[float] = None
    max: Optional[float] = None
    stdev: Optional[float] = None
    detail: Optional[Dict[str, Any]] = None
    run_id: Optional[int] = None
    seq: Optional[int] = None

    @property
    def size(self) -> Optional[int]:
        return self.params.get("size")

    @classmethod
    def from_record(cls, record: Dict[str, Any]) -> "Measurement":
        """From an engine 'point' record (see data/record.schema.json)."""
        kwargs = {k: record.get(k) for k in STAT_FIELDS}
        if kwargs["value"] is None:
            kwargs["value"] = record.get("mean")
        return cls(
            benchmark=record["benchmark"],
            params=dict(record.get("params") or {}),
            metric=record["metric"],
            unit=record["unit"],
            detail=record.get("detail"),
            **kwargs,
        )


@dataclass
class Host:
    hostname: str
    digest: str
    facts: Dict[str, Any]


def to_dataframe(records: List[Any]):
    """A pandas DataFrame of runs or measurements (needs pandas installed)."""
    try:
        import pandas as pd
    except ImportError:
        from fabricbench.errors import FabricbenchError

        raise FabricbenchError("to_dataframe() needs pandas: pip install pandas") from None
    rows = []
    for rec in records:
        row = rec.to_dict()
        params = row.pop("params", None)
        if isinstance(params, dict):
            row.update({f"param_{k}": v for k, v in params.items()})
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class Baseline(_Record):
    """A name for the runs later runs are checked against (``baseline set NAME RUN [RUN...]``):
    one run, or replicate runs of one configuration that show how much runs vary."""

    name: str
    run_ids: List[int]
    created: str
    note: Optional[str] = None


@dataclass
class SlurmJob:
    """A job `fabricbench submit` handed to Slurm, and the run it produced (once it started one)."""

    id: int
    job_id: str
    cluster: Optional[str]
    submitted: str
    command: str
    script: Optional[str]
    output: Optional[str]
    options: Dict[str, Any]
    state: Optional[str]
    run_id: Optional[int]


HOST_PROBE = "host_probe"  # the artifact each engine launch adds: its host probe (analysis.host_state)


@dataclass
class RunData:
    """A loaded run: the one shape every layer above the store takes (analysis, models, report, cli).

    The run, its measurements and its hosts, the engine's host probe of each launch
    (``HOST_PROBE`` artifacts; empty for imports), and where the run was loaded from, so that
    its other artifacts (``artifact``), its replicates (``replicates``: stored runs of the same
    configuration, the run-to-run noise's history) and the earlier runs of its kind (``earlier``)
    are store queries of the type itself. ``Store.load``/``Store.load_runs`` make it; a RunData
    built by hand (tests, imports) has no store: those queries then find nothing.

    ``index`` and ``name`` place the run among the runs loaded together (a report's legend);
    ``series``, ``fabric`` and ``peak`` are what analysis made of it, set by whoever analyses it
    (``report.context.ReportContext``) and None until then.
    """

    STAT_FIELDS: ClassVar[tuple] = STAT_FIELDS

    run: Run
    measurements: List[Measurement]
    hosts: List[Host]
    probes: List[Dict[str, Any]] = field(default_factory=list)
    index: int = 0
    name: str = ""
    store: Any = field(default=None, repr=False, compare=False)
    series: Optional[List[Any]] = field(default=None, repr=False, compare=False)  # analysis.series.Series
    fabric: Any = field(default=None, repr=False, compare=False)  # analysis.peaks.FabricChoice
    peak: Any = field(default=None, repr=False, compare=False)  # analysis.peaks.RunPeak

    @property
    def id(self) -> int:
        return self.run.id

    @staticmethod
    def unique_names(runs: Sequence[Any]) -> List[str]:
        """Runs' display names, '<name> (#<id>)' where two runs share a name (``unique_names``)."""
        return unique_names(runs)

    def artifact(self, name: str) -> Any:
        """A named artifact of the run (e.g. 'profile', 'fabric'), or None."""
        return self.store.artifact(self.run.id, name) if self.store is not None else None

    def replicates(self, compared: Sequence["RunData"] = (), limit: int = 10) -> List["RunData"]:
        """Stored replicate runs of this run's configuration (``store.replicates``), oldest first."""
        if self.store is None:
            return []
        from fabricbench.store.replicates import replicates

        return replicates(self.store, self, compared or [self], limit)

    def earlier(self, kind: Optional[str] = None, benchmark: Optional[str] = None) -> Iterator["RunData"]:
        """Complete stored runs (of `kind`) made before this one, newest first, loaded one by one
        (with only `benchmark`'s measurements when given)."""
        if self.store is None:
            return
        for other in reversed(self.store.list_runs(kind=kind, status="complete")):
            if other.id < self.run.id:
                yield self.store.load(other.id, benchmark=benchmark)

    @property
    def benchmarks(self) -> List[str]:
        """The benchmarks of its series (in first-seen order), else of its measurements."""
        if self.series is not None:
            return list(dict.fromkeys(s.benchmark for s in self.series))
        return list(dict.fromkeys(m.benchmark for m in self.measurements))

    @property
    def ceiling(self) -> Any:
        return self.peak.ceiling if self.peak is not None else None

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


def unique_names(runs: Sequence[Any]) -> List[str]:
    """Runs' display names, '<name> (#<id>)' where two runs share a name."""
    names = [r.name for r in runs]
    counts: Dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return [n if counts[n] == 1 else f"{n} (#{r.id})" for n, r in zip(names, runs)]
