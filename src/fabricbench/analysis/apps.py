"""Application studies in the published papers' form: per application and node count, each
fabric's value, its performance relative to the reference fabric, x faster, and parallel
efficiency against the smallest scale. Pure functions of stored runs.

A study is scaling runs (``fabricbench scale --app`` or ``study apps``) tagged ``app``; runs of
one application are told apart by their fabric: the name the study was given
(provenance ``study.application.study_fabric``), else the ``fabric`` tag, else the run's name.
The first fabric met is the reference (A); "relative performance" of B is B's performance
divided by A's (a figure of merit where lower is better, or a time, is inverted), so above 1
B is faster: seed 000's relative-performance chart, seed 004's "x faster".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis import scaling as sc


@dataclass
class AppRow:
    """One node count of one application: value, efficiency and relative performance per fabric."""

    nodes: float
    ranks: Optional[int]
    values: Dict[str, Optional[float]] = field(default_factory=dict)  # fabric -> mean of the primary metric
    n: Dict[str, int] = field(default_factory=dict)
    efficiency: Dict[str, Optional[float]] = field(default_factory=dict)  # against the fabric's smallest scale
    relative: Dict[str, Optional[float]] = field(default_factory=dict)  # B against the reference (x faster)
    significant: Dict[str, Optional[bool]] = field(default_factory=dict)
    points: Dict[str, sc.ScalePoint] = field(default_factory=dict)  # fabric -> the repetitions' statistics


@dataclass
class AppStudy:
    app: str
    metric: str
    unit: str
    higher_is_better: bool
    reference: str
    fabrics: List[str]
    rows: List[AppRow]
    run_ids: Dict[str, Optional[int]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "app": self.app, "metric": self.metric, "unit": self.unit, "higher_is_better": self.higher_is_better,
            "reference": self.reference, "fabrics": self.fabrics, "run_ids": self.run_ids,
            "rows": [{"nodes": r.nodes, "ranks": r.ranks, "values": r.values, "n": r.n, "efficiency": r.efficiency,
                      "relative": r.relative, "significant": r.significant} for r in self.rows],
        }


def fabric_of(run: Any) -> str:
    """The fabric a study run measured, as the study named it."""
    app = sc.study_of(run).get("application") or {}
    return str(app.get("study_fabric") or (run.tags or {}).get("fabric") or run.name)


def app_of(run: Any) -> Optional[str]:
    app = sc.study_of(run).get("application") or {}
    return (run.tags or {}).get("app") or app.get("name")


def series_of(runs: Sequence[Tuple[Any, Sequence[Any]]]) -> List[Tuple[str, str, sc.ScalingSeries]]:
    """(app, fabric, series) of every (run, measurements) that is an application study."""
    out = []
    for run, measurements in runs:
        app = app_of(run)
        items = [m for m in measurements if m.benchmark == sc.BENCHMARK]
        if not app or not items:
            continue
        try:
            series = sc.series_of_run(run, items, name=fabric_of(run), axis="nodes")
        except sc.ScalingAnalysisError:
            continue
        out.append((app, fabric_of(run), series))
    return out


def compare_apps(found: Sequence[Tuple[str, str, sc.ScalingSeries]]) -> List[AppStudy]:
    """One AppStudy per application, in the order met; the first fabric of each is the reference."""
    by_app: Dict[str, List[Tuple[str, sc.ScalingSeries]]] = {}
    for app, fabric, series in found:
        by_app.setdefault(app, []).append((fabric, series))
    studies = []
    for app, members in by_app.items():
        ref_name, ref = members[0]
        rows: Dict[float, AppRow] = {}
        for fabric, series in members:
            eff = {e.scale: e.efficiency for e in sc.efficiency(series)}
            for p in series.points:
                row = rows.setdefault(p.scale, AppRow(p.scale, p.ranks))
                row.values[fabric], row.n[fabric], row.efficiency[fabric] = p.mean, p.n, eff.get(p.scale)
                row.points[fabric] = p
            if series is not ref:
                for rp in sc.relative_performance(ref, series):
                    row = rows.setdefault(rp.scale, AppRow(rp.scale, None))
                    row.relative[fabric], row.significant[fabric] = rp.ratio, rp.significant
        studies.append(AppStudy(app, ref.metric, ref.unit, ref.higher_is_better, ref_name, [f for f, _ in members],
                                [rows[k] for k in sorted(rows)], {f: s.run_id for f, s in members}))
    return studies


def slowdown_summary(studies: Sequence[AppStudy]) -> List[Tuple[str, str, float, Optional[float]]]:
    """(app, fabric, nodes, relative performance) at each application's largest common scale."""
    out = []
    for st in studies:
        for fabric in st.fabrics[1:]:
            measured = [r for r in st.rows if r.relative.get(fabric) is not None]
            if measured:
                last = measured[-1]
                out.append((st.app, fabric, last.nodes, last.relative[fabric]))
    return out
