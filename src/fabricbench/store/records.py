"""Runs, measurements and hosts as plain records (dataclasses), the store's public shape."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

STAT_FIELDS = ("n", "iterations", "value", "min", "median", "mean", "p99", "max", "stdev")


@dataclass
class Run:
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

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class Measurement:
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

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


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
class Baseline:
    """A name for the runs later runs are checked against (``baseline set NAME RUN [RUN...]``):
    one run, or replicate runs of one configuration that show how much runs vary."""

    name: str
    run_ids: List[int]
    created: str
    note: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


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
    """A run loaded for analysis: the run, its measurements and its hosts, and the engine's host
    probe of each launch (``Store.artifacts(run, "host_probe")``; empty for imports)."""

    run: Run
    measurements: List[Measurement]
    hosts: List[Host]
    probes: List[Dict[str, Any]] = field(default_factory=list)
