"""One figure across runs over time: `fabricbench history --benchmark bw --size 4M`.

``history(runs, benchmark, size, metric=None)`` takes loaded runs (``RunData``, any order)
and returns a ``History``: one row per run that measured the point (matched by meaning, as
``analysis.matching`` does: IMB's PingPong latency is a ``latency``), ordered by the run's
date, each with its median and the median's 95% CI, and how it compares with the first run
of its line (``analysis.compare``'s verdict, all rows corrected together; the jitter
between consecutive runs is the run-to-run noise the test allows for). Runs whose key
parameters differ (another window, rank count) form separate lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis import stats
from fabricbench.analysis.record import figure_of_record
from fabricbench.analysis.compare import Options, PointComparison, compare_pairs
from fabricbench.analysis.matching import UNKNOWN, Pair, definition, point_key


@dataclass
class HistoryRow:
    run: Any  # Run
    line: str  # the key parameters of its line ('' when there is one line)
    value: Optional[float]
    statistic: str  # "median" or "value"
    ci: Optional[Tuple[float, float]]
    n: Optional[int]
    benchmark: str  # as stored (imb.PingPong, latency, ...)
    vs_first: Optional[PointComparison] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "run": self.run.id, "created": self.run.created, "label": self.run.label, "tags": self.run.tags,
            "line": self.line, "value": self.value, "statistic": self.statistic,
            "ci": list(self.ci) if self.ci else None, "n": self.n, "benchmark": self.benchmark,
            "vs_first": self.vs_first.to_dict() if self.vs_first else None,
        }


@dataclass
class History:
    benchmark: str
    metric: str
    size: Optional[int]
    unit: str
    rows: List[HistoryRow] = field(default_factory=list)

    @property
    def lines(self) -> List[str]:
        return list(dict.fromkeys(r.line for r in self.rows))

    def to_dict(self) -> Dict[str, Any]:
        return {"benchmark": self.benchmark, "metric": self.metric, "size": self.size, "unit": self.unit,
                "rows": [r.to_dict() for r in self.rows]}


def metrics_of(runs: Sequence[Any], benchmark: str) -> List[str]:
    """The metrics the runs record for a benchmark (by definition), first seen first."""
    return list(dict.fromkeys(m.metric for r in runs for m in r.measurements
                              if definition(m.benchmark, m.metric) == benchmark))


def _line_label(strict: Sequence[Tuple[str, Any]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in strict if not (k == "cache" and v == "warm"))


def history(runs: Sequence[Any], benchmark: str, size: Optional[int], metric: Optional[str] = None,
            options: Options = Options()) -> History:
    """The point (benchmark, size, metric) in every run that has it, oldest first."""
    metric = metric or next(iter(metrics_of(runs, benchmark)), None)
    found: List[Tuple[Any, Any, Any]] = []  # (run data, key, measurement)
    for rd in sorted(runs, key=lambda r: (r.run.created, r.run.id)):
        chosen = None
        for m in rd.measurements:
            if m.metric != metric or definition(m.benchmark, m.metric) != benchmark or m.params.get("size") != size:
                continue
            chosen = (point_key(m, rd.run), m)  # the last one wins, as in a resumed run
        if chosen:
            found.append((rd, *chosen))
    unit = found[0][2].unit if found else ""
    out = History(benchmark, metric or "", size, unit)
    strict_lines = list(dict.fromkeys(k.strict for _rd, k, _m in found))
    for rd, key, m in found:
        f = figure_of_record(m, level=options.level)
        out.rows.append(HistoryRow(rd.run, _line_label(key.strict) if len(strict_lines) > 1 else "",
                                   f.value if f else None, f.short if f and not f.is_median else "median",
                                   f.ci if f else None, m.n, m.benchmark))
    pairs = []
    rows_of_pairs = []
    for strict in strict_lines:
        if any(v is UNKNOWN for _k, v in strict):  # an unknown rank count matches nothing, not even itself
            continue
        members = [(row, key, m) for row, (_rd, key, m) in zip(out.rows, found) if key.strict == strict]
        first_key, first_m = members[0][1], members[0][2]
        for row, key, m in members[1:]:
            pairs.append(Pair(first_key, first_m, m))
            rows_of_pairs.append(row)
    if pairs:
        for row, pc in zip(rows_of_pairs, compare_pairs(pairs, options).points):
            row.vs_first = pc
    return out
