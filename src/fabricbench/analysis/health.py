"""All-pairs link health: find the bad nodes, bad links and asymmetric pairs in N x N matrices.

Pure functions on numpy matrices; nothing here prints, launches or reads a database
(``analysis.health_data`` turns stored measurements into matrices). A matrix has one row
per sending node and one column per receiving node, NaN where nothing was measured (always
on the diagonal). Bandwidth is analysed as it is (higher is better); latency as its
inverse, a "speed", so one set of rules serves both and every ratio below 1 is worse.

The rules (thresholds are parameters, defaults in ``Thresholds``):

- Robust scale. ``g`` is the median of all cells; a node's send side is the median of its
  row, its receive side the median of its column. Noise is estimated with the median
  absolute deviation (MAD x 1.4826, on logarithms, so it is relative): of the node
  medians for nodes, of the cell residuals (below) for cells.
- Bad node: a side whose median is below ``threshold`` x its reference (bandwidth; for
  latency: ``latency_threshold``, i.e. latency above reference / 0.5 = 2 x by default) *and*
  more than ``z`` robust standard deviations below it. The reference of a node is what the
  pairs that do not share it carry (the median of the cells outside its row and column;
  above LEAVE_ONE_OUT_MAX nodes the median of all nodes' medians): the bad node cannot drag
  its own expectation down. With g instead, a 4x slower node of 4 in exchange mode touches
  half of all pairs, the median falls to about half the link and the node sits at the
  threshold (named in 1 of 3 runs on the lab). A median below the threshold means most of
  the node's links are slow: the node (its NIC, cable or port), not one path. Send and
  receive sides are told apart.
- Bad link: a cell's expectation is what its sender sends and its receiver receives
  elsewhere, ``min(row median of i, column median of j)`` (a transfer is bounded by the
  slower end), so a bad node explains its own links and only what is worse remains. A
  cell below ``threshold`` x its expectation and ``z`` robust standard deviations below
  is slow. Slow in both directions of a pair: a bad link (or path); slow in one direction
  only: an asymmetric pair. A pair whose directions differ by more than ``asymmetry``
  (the slower below that share of the faster, relative to expectations) and by ``z``
  robust standard deviations, without either being slow, is asymmetric too.
- Retest (optional matrices of the pairs measured again alone): a finding whose pairs
  are at or above the threshold when measured alone was a busy moment, not a fault; it
  becomes a ``transient`` finding of severity ``info``. A finding whose pairs stay slow
  alone is ``confirmed``; pairs not retested say so.
- Absolute floor (optional, bandwidth, e.g. a share of the link's data rate from the
  fabric catalog): a fabric whose median is below it, and nodes below it that the relative
  rules did not catch (when most nodes are slow, slow is the median).
- Link ceiling (optional, bandwidth: the run's known link, e.g. the lab's shaped rate): no
  reference is above it (a burst cannot raise the bar), and with retests a node side at or
  below HALF of it and below ``threshold`` x its reference is a suspect whatever the noise,
  so the retest alone decides. A degraded node cannot hide behind a reference it dragged down, nor behind a
  sweep so noisy that nothing passes the noise guard.

Severity: ``critical`` below half the expectation (or the floor), ``warning`` otherwise,
``info`` for transient findings and notes. A report is healthy when no finding is
``warning`` or ``critical``.

A finding is its kind, nodes, ratio and figures, and the clauses that befell it since (a retest, a
bad node that explains it, a host too busy to judge); ``report.words.health`` writes its evidence
and the verdict line from them.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fabricbench.analysis.verdict import Verdict

MAD_SCALE = 1.4826  # MAD -> standard deviation for normal noise
MIN_NODES_FOR_NODES = 3  # with 2 nodes a slow pair cannot be told from a slow node
HALF = 0.5  # a node side at or below this share of its reference is retested whatever the noise
INCONSISTENT = 3.0  # a retest this many times off the sweep's reading (either way) cannot confirm it
LEAVE_ONE_OUT_MAX = 256  # nodes: above, one node touches under 1% of the pairs (and N^3 work is slow)


@dataclass(frozen=True)
class Thresholds:
    threshold: float = 0.75  # bandwidth: flag below this share of the expectation
    latency_threshold: float = 0.5  # latency: flag above 1 / this (2 x) the expectation
    asymmetry: float = 0.6  # the slower direction below this share of the faster
    z: float = 3.5  # and this many robust standard deviations away (noise guard)
    floor_MBps: Optional[float] = None  # absolute bandwidth floor, e.g. 50% of the link rate
    floor_note: str = ""  # where the floor comes from, in words, for the evidence (or `floor_of`)
    floor_of: Optional[Tuple[float, str, float]] = None  # (percent, fabric, its MB/s) the floor is a share of
    ceiling_MBps: Optional[float] = None  # bandwidth: what one link carries at most (the run's known link)
    max_findings: int = 50  # link/asymmetry findings listed (the rest are counted)

    def for_metric(self, metric: str) -> float:
        return self.latency_threshold if metric == "latency" else self.threshold


@dataclass
class Finding:
    kind: str  # node, link, asymmetric, fabric, transient, note
    severity: str  # critical, warning, info
    metric: str  # bandwidth, latency
    nodes: List[str]
    evidence: str = ""  # what other checks add in words, after the finding's own ("; crosses ...")
    ratio: Optional[float] = None  # measured / expected as a speed: < 1 is worse
    side: Optional[str] = None  # node: send, receive, both
    pairs: List[Tuple[str, str]] = field(default_factory=list)
    retest: Optional[str] = None  # confirmed, cleared, not retested; None without retest data
    values: Dict[str, Any] = field(default_factory=dict)
    # What the evidence is made of (report.words.health words it): the figures of its kind ...
    figures: Dict[str, Any] = field(default_factory=dict)
    # ... and what befell it since, in order: (clause, its figures), e.g. ("confirmed", {"alone": 0.4, ...})
    clauses: List[Tuple[str, Dict[str, Any]]] = field(default_factory=list)

    @property
    def problem(self) -> bool:
        return self.severity in ("warning", "critical")

    @property
    def first_kind(self) -> str:
        """The kind it was found as (a transient finding was a node, link or asymmetric pair)."""
        return self.values.get("was", self.kind) if self.kind == "transient" else self.kind


@dataclass
class MetricSummary:
    metric: str
    unit: str
    pairs: int
    median: Optional[float]
    min: Optional[float]
    max: Optional[float]
    p5: Optional[float]
    p95: Optional[float]
    worst_pair: Optional[Tuple[str, str]]
    worst_value: Optional[float]
    noise: Optional[float]  # robust relative spread of the cells (MAD of log residuals x 1.4826)
    send: Dict[str, float] = field(default_factory=dict)  # node -> median of its row
    receive: Dict[str, float] = field(default_factory=dict)  # node -> median of its column
    retested: int = 0

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["worst_pair"] = list(self.worst_pair) if self.worst_pair else None
        return d


@dataclass
class HealthReport(Verdict):
    nodes: List[str]
    findings: List[Finding]
    summaries: Dict[str, MetricSummary]
    thresholds: Thresholds
    omitted: int = 0  # link/asymmetry findings beyond max_findings

    def names(self, kind: str) -> List[str]:
        """The problems of a kind by name, first seen first: 'n3' (node), 'n1<->n2' (link), 'n1->n2'."""
        names: List[str] = []
        for f in self.problems:
            if f.kind != kind:
                continue
            name = f.nodes[0] if kind == "node" else f"{f.nodes[0]}{'<->' if kind == 'link' else '->'}{f.nodes[1]}"
            if name not in names:
                names.append(name)
        return names


# ---- robust statistics ----------------------------------------------------------------------

SAMPLE_ABOVE = 4_000_000  # cells: noise and percentiles from a systematic sample above this
SAMPLE_SIZE = 1_000_000


def natural_key(text: str) -> List[Any]:
    """'n10' after 'n9': digit runs compare as numbers."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text))]


def host_order(labels: Sequence[str]) -> List[int]:
    """Indices of labels sorted by host name (naturally: n2 before n10)."""
    return sorted(range(len(labels)), key=lambda i: natural_key(labels[i]))


def robust_sigma(values: np.ndarray) -> float:
    """MAD x 1.4826 of the finite values (0 when there are fewer than 3)."""
    x = values[np.isfinite(values)]
    if x.size < 3:
        return 0.0
    med = np.median(x)
    x = np.abs(x - med)
    return float(MAD_SCALE * np.median(x, overwrite_input=True))


def matrix_median(m: np.ndarray) -> float:
    x = m[np.isfinite(m)]
    return float(np.median(x, overwrite_input=True)) if x.size else float("nan")


def sample_cells(m: np.ndarray) -> np.ndarray:
    """All cells, or above SAMPLE_ABOVE a systematic sample of about SAMPLE_SIZE spread over every
    row and column (the stride is coprime with the row length)."""
    flat = m.ravel()
    if flat.size <= SAMPLE_ABOVE:
        return flat
    stride = -(-flat.size // SAMPLE_SIZE)
    while math.gcd(stride, m.shape[-1]) != 1:
        stride += 1
    return flat[::stride]


def row_col_medians(m: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Median of every row (sending side) and column (receiving side), ignoring NaN.

    The common case - every cell measured but the diagonal - takes a partition-based path
    that is an order of magnitude faster than numpy's nanmedian on large matrices.
    """
    n = m.shape[0]
    finite = np.isfinite(m)
    if n >= 2 and int(finite.sum()) == n * (n - 1) and not finite.diagonal().any():
        k1, k2 = (n - 2) // 2, (n - 1) // 2
        x = m.copy()
        np.fill_diagonal(x, np.inf)  # sorts last: the n - 1 measured values come first
        x.partition([k1, k2], axis=1)
        rows = 0.5 * (x[:, k1] + x[:, k2])
        np.copyto(x, m)
        np.fill_diagonal(x, np.inf)
        x.partition([k1, k2], axis=0)
        cols = 0.5 * (x[k1, :] + x[k2, :])
        return rows, cols
    import warnings

    x = np.where(finite, m, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with nothing measured: NaN
        return np.nanmedian(x, axis=1), np.nanmedian(x, axis=0)


# ---- one metric -----------------------------------------------------------------------------

class _Metric:
    """One metric's matrix in log space as a speed (higher is better): log bandwidth, -log latency.

    Logarithms make every comparison relative (a ratio is a difference) and let one set of
    rules serve both metrics; ``value`` converts back to the metric's unit.
    """

    def __init__(self, metric: str, values: np.ndarray, unit: str):
        self.metric = metric
        self.unit = unit
        self.latency = metric == "latency"
        self.raw = np.asarray(values, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(self.raw)
        logs[~np.isfinite(logs)] = np.nan  # zero, negative, infinite, missing: not measured
        if self.latency:
            np.negative(logs, out=logs)
        self.log = logs

    def value(self, log_speed: float) -> float:
        """A log speed back in the metric's unit."""
        return float(math.exp(-log_speed if self.latency else log_speed))

@dataclass
class _Assessed:
    lg: float  # log of the global median speed
    rows: np.ndarray  # log median speed of each row (sending side)
    cols: np.ndarray  # ... of each column (receiving side)
    res: np.ndarray  # per cell: log(speed / min(row median, column median))
    sigma_cell: float
    sigma_node: float
    ref: np.ndarray  # per node: log of the median speed of the pairs that do not share it

    @property
    def g(self) -> float:
        return math.exp(self.lg) if math.isfinite(self.lg) else float("nan")

    def expect(self, i: int, j: int) -> float:
        return min(self.rows[i], self.cols[j])


def _assess(m: _Metric) -> _Assessed:
    logs = m.log
    lg = matrix_median(logs)
    rows, cols = row_col_medians(logs)
    res = np.minimum.outer(rows, cols)
    np.subtract(logs, res, out=res)
    sigma_cell = robust_sigma(sample_cells(res))
    ref = node_references(logs, rows, cols)
    sigma_node = robust_sigma(np.concatenate([rows - lg, cols - lg])) if rows.size >= 4 else 0.0
    return _Assessed(lg, rows, cols, res, sigma_cell, sigma_node, ref)


def node_references(logs: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Per node, the expectation it cannot drag down: the median of the cells that neither start
    nor end at it (leave-one-out); above LEAVE_ONE_OUT_MAX nodes the median of every node's send and
    receive medians (one node then moves it by less than 1%). NaN where nothing else was measured."""
    n = logs.shape[0]
    if n > LEAVE_ONE_OUT_MAX:
        sides = np.concatenate([rows, cols])
        sides = sides[np.isfinite(sides)]
        return np.full(n, float(np.median(sides)) if sides.size else float("nan"))
    finite = np.isfinite(logs)
    out = np.full(n, float("nan"))
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        keep[i] = False
        sub = logs[np.ix_(keep, keep)]
        sub = sub[finite[np.ix_(keep, keep)]]
        keep[i] = True
        if sub.size:
            out[i] = float(np.median(sub))
    return out


def _limit(threshold: float, z: float, sigma: float) -> float:
    """Log-ratio below which a value is flagged: below the threshold and z sigmas below."""
    return min(math.log(threshold), -z * sigma)


def _severity(ratio: float, metric: str) -> str:
    return "critical" if ratio < 0.5 else "warning"


def _retest_ratio(values: np.ndarray) -> Optional[float]:
    x = values[np.isfinite(values)]
    return float(np.median(x)) if x.size else None


def _node_findings(m: _Metric, a: _Assessed, labels: Sequence[str], th: Thresholds,
                   retest: Optional[np.ndarray]) -> Tuple[List[Finding], np.ndarray, np.ndarray]:
    n = len(labels)
    t = th.for_metric(m.metric)
    out: List[Finding] = []
    send_bad = np.zeros(n, dtype=bool)
    recv_bad = np.zeros(n, dtype=bool)
    if n < MIN_NODES_FOR_NODES or not math.isfinite(a.lg):
        return out, send_bad, recv_bad
    lim = _limit(t, th.z, a.sigma_node)
    if retest is not None:
        # Half of its reference or worse is a suspect however noisy the sweep: the retest alone decides
        # (a busy moment clears, a slow link stays). Under load the node medians spread so much
        # (51 to 100 MB/s through srun at load 20) that the noise guard alone hid a 4x slower node.
        lim = max(lim, math.log(min(t, HALF)))
    with np.errstate(invalid="ignore"):
        send_bad = (a.rows - a.ref) < lim
        recv_bad = (a.cols - a.ref) < lim
        if retest is not None and not m.latency and th.ceiling_MBps:
            # below its reference's threshold too: a fabric slow everywhere is the floor's question
            below, cut = math.log(HALF * th.ceiling_MBps), math.log(t)
            send_bad |= (a.rows <= below) & ((a.rows - a.ref) < cut)
            recv_bad |= (a.cols <= below) & ((a.cols - a.ref) < cut)

    def side_figures(side: str, median: float, cells: np.ndarray, ref: float) -> Dict[str, Any]:
        """One slow side of a node: its median against the reference, and how many of its links are slow."""
        return {"side": side, "ratio": math.exp(median - ref), "median": m.value(median), "reference": m.value(ref),
                "slow": int(np.sum(cells < ref + math.log(t))), "links": int(np.sum(np.isfinite(cells)))}

    for i in np.nonzero(send_bad | recv_bad)[0]:
        i = int(i)
        sides, pairs, ratios, parts, logs_alone = [], [], [], [], []
        if send_bad[i]:
            row = m.log[i, :]
            sides.append("send")
            ratios.append(math.exp(a.rows[i] - a.ref[i]))
            pairs += [(labels[i], labels[j]) for j in np.nonzero(np.isfinite(row))[0] if j != i]
            parts.append(side_figures("send", a.rows[i], row, a.ref[i]))
            if retest is not None:
                logs_alone.append(retest[i, :])
        if recv_bad[i]:
            col = m.log[:, i]
            sides.append("receive")
            ratios.append(math.exp(a.cols[i] - a.ref[i]))
            pairs += [(labels[j], labels[i]) for j in np.nonzero(np.isfinite(col))[0] if j != i]
            parts.append(side_figures("receive", a.cols[i], col, a.ref[i]))
            if retest is not None:
                logs_alone.append(retest[:, i])
        side = "both" if len(sides) == 2 else sides[0]
        ratio = min(ratios)
        worst = min(a.rows[i] if send_bad[i] else math.inf, a.cols[i] if recv_bad[i] else math.inf)
        finding = Finding("node", _severity(ratio, m.metric), m.metric, [labels[i]], ratio=ratio, side=side, pairs=pairs,
                          values={"node_median": m.value(worst), "global_median": m.value(a.lg),
                                  "reference": m.value(a.ref[i]),
                                  "send_median": m.value(a.rows[i]), "receive_median": m.value(a.cols[i])},
                          figures={"sides": parts, "threshold": t, "unit": m.unit})
        if retest is not None:
            alone = np.concatenate(logs_alone)
            alone = alone[np.isfinite(alone)]
            base = max(a.ref[i], _alone_reference(retest, i, th if not m.latency else None))
            rr = float(math.exp(np.median(alone) - base)) if alone.size else None
            _apply_retest(finding, rr, t, count=int(alone.size), against="nodes")
        out.append(finding)
    return out, send_bad, recv_bad


def _alone_reference(retest: np.ndarray, i: int, th: Optional[Thresholds]) -> float:
    """What the other nodes' pairs carried when measured alone too (log; -inf when fewer than 2):
    a suspect's pairs alone are held against pairs alone, not against a crowded sweep, where a
    busy host holds every pair below what one pair alone gets (a 500mbit node of 8 at load 20:
    43 MB/s in the sweep against 65, 57 alone, the others' pairs alone 90-100)."""
    keep = np.ones(retest.shape[0], dtype=bool)
    keep[i] = False
    cells = retest[np.ix_(keep, keep)]
    cells = cells[np.isfinite(cells)]
    if cells.size < 2:
        return -math.inf
    ref = float(np.median(cells))
    return min(ref, math.log(th.ceiling_MBps)) if th is not None and th.ceiling_MBps else ref


def _apply_retest(f: Finding, ratio_alone: Optional[float], t: float, count: int, against: str = "expectation") -> None:
    """The retest's clause: `against` what the ratio alone is ("nodes": the other nodes' median, else
    the expectation)."""
    if ratio_alone is None:
        f.retest = "not retested"
        f.clauses.append(("not retested", {}))
        return
    f.values["retest_ratio"] = ratio_alone
    f.values["retested_pairs"] = count
    said = {"alone": ratio_alone, "count": count, "against": against}
    if f.ratio and ratio_alone < t and abs(math.log(ratio_alone / f.ratio)) > math.log(INCONSISTENT):
        # a fault is as slow alone as in the sweep; a reading that moves this much is the host's load
        f.retest = "inconsistent"
        f.values["was"] = f.kind
        f.severity = "info"
        f.clauses.append(("inconsistent", dict(said, sweep=f.ratio, limit=INCONSISTENT)))
        return
    if ratio_alone >= t:
        f.retest = "cleared"
        f.values["was"] = f.kind
        f.kind = "transient"
        f.severity = "info"
        f.clauses.append(("cleared", said))
    else:
        f.retest = "confirmed"
        f.clauses.append(("confirmed", said))


def _pair_findings(m: _Metric, a: _Assessed, labels: Sequence[str], th: Thresholds, retest: Optional[np.ndarray],
                   flagged_nodes: np.ndarray) -> Tuple[List[Finding], int]:
    """Bad links, and asymmetric pairs; only the few candidate cells are looked at one by one."""
    n = len(labels)
    t = th.for_metric(m.metric)
    if not math.isfinite(a.lg):
        return [], 0
    if n < MIN_NODES_FOR_NODES:  # too few nodes for node expectations: against the global median
        res = m.log - a.lg
        expect = lambda i, j: a.lg  # noqa: E731
    else:
        res = a.res
        expect = a.expect
    lim = _limit(t, th.z, a.sigma_cell)
    asym_lim = _limit(th.asymmetry, th.z, a.sigma_cell * math.sqrt(2.0))
    with np.errstate(invalid="ignore"):
        si, sj = np.nonzero(res < lim)  # NaN compares False
        # Asymmetry candidates: one direction at least half the gap below, or the other half above.
        ci, cj = np.nonzero(res < asym_lim / 2)
        fi, fj = np.nonzero(res > -asym_lim / 2)
    slow_set = set(zip(si.tolist(), sj.tolist()))

    def explained(i: int, j: int) -> bool:
        # Between two flagged nodes the node findings explain it (their faults compound).
        return bool(flagged_nodes[i] and flagged_nodes[j])

    def q(i: int, j: int) -> float:
        return float(math.exp(res[i, j]))

    def alone(i: int, j: int) -> float:
        return float(math.exp(retest[i, j] - expect(i, j))) if retest is not None else float("nan")

    def pair(kind: str, i: int, j: int, ratio: float, severity: str, form: str, values: Dict[str, Any]) -> Finding:
        """A link (both directions) or an asymmetric pair (i->j slow): the figures of both directions,
        once, for either kind (``report.words.health`` words them)."""
        forward, backward = float(m.raw[i, j]), float(m.raw[j, i])
        return Finding(kind, severity, m.metric, [labels[i], labels[j]], ratio=ratio,
                       pairs=[(labels[i], labels[j])] + ([(labels[j], labels[i])] if kind == "link" else []),
                       values=values, figures={"form": form, "forward": forward, "backward": backward, "unit": m.unit,
                                               "ratios": (q(i, j), q(j, i)) if form != "reverse" else ()})

    found: List[Tuple[float, Finding]] = []
    for i, j in sorted(slow_set):
        if explained(i, j) or ((j, i) in slow_set and j < i):
            continue
        r1 = q(i, j)
        if (j, i) in slow_set:
            ratio = min(r1, q(j, i))
            f = pair("link", i, j, ratio, _severity(ratio, m.metric), "link",
                     {"forward": float(m.raw[i, j]), "backward": float(m.raw[j, i]),
                      "expected_forward": m.value(expect(i, j)), "expected_backward": m.value(expect(j, i))})
            if retest is not None:
                both = [x for x in (alone(i, j), alone(j, i)) if math.isfinite(x)]
                # Confirmed while any retested direction stays slow.
                _apply_retest(f, min(both) if both else None, t, len(both))
            found.append((ratio, f))
        else:
            f = pair("asymmetric", i, j, r1, _severity(r1, m.metric), "one direction",
                     {"slow": float(m.raw[i, j]), "reverse": float(m.raw[j, i]), "expected": m.value(expect(i, j))})
            if retest is not None:
                x = alone(i, j)
                _apply_retest(f, x if math.isfinite(x) else None, t, int(math.isfinite(x)))
            found.append((r1, f))

    mild = set(zip(ci.tolist(), cj.tolist())) | set(zip(fj.tolist(), fi.tolist()))
    for i, j in sorted(mild):
        if i == j or (i, j) in slow_set or (j, i) in slow_set or explained(i, j):
            continue
        # Both as measured and relative to expectations: a direction that only looks fast
        # because its node's other links are slow (a partly bad node) is no asymmetry.
        gap = res[i, j] - res[j, i]
        raw_gap = m.log[i, j] - m.log[j, i]
        if not (gap < asym_lim and raw_gap < asym_lim):
            continue
        rel = float(math.exp(raw_gap))
        f = pair("asymmetric", i, j, rel, "warning", "reverse", {"slow": float(m.raw[i, j]), "reverse": float(m.raw[j, i])})
        if retest is not None:
            x1, x2 = alone(i, j), alone(j, i)
            if math.isfinite(x1) and math.isfinite(x2):
                rel_alone = x1 / x2
                f.values["retest_ratio"] = rel_alone
                f.values["retested_pairs"] = 2
                if rel_alone >= th.asymmetry:
                    f.retest, f.kind, f.severity = "cleared", "transient", "info"
                    f.values["was"] = "asymmetric"
                    f.clauses.append(("cleared against the reverse", {"alone": rel_alone}))
                else:
                    f.retest = "confirmed"
                    f.clauses.append(("confirmed against the reverse", {"alone": rel_alone}))
            else:
                f.retest = "not retested"
                f.clauses.append(("not retested both ways", {}))
        found.append((rel, f))

    found.sort(key=lambda rf: (not rf[1].problem, rf[0]))
    kept = [f for _r, f in found[: th.max_findings]]
    return kept, max(0, len(found) - th.max_findings)


def _floor_findings(m: _Metric, a: _Assessed, labels: Sequence[str], th: Thresholds,
                    flagged: Sequence[str]) -> List[Finding]:
    if m.latency or not th.floor_MBps or not math.isfinite(a.lg):
        return []
    floor = th.floor_MBps
    out = []
    g = a.g
    if g < floor:
        out.append(Finding("fabric", "critical", m.metric, [], ratio=g / floor, values={"median": g, "floor": floor},
                           figures={"floor_note": th.floor_note, "floor_of": th.floor_of}))
    for i, name in enumerate(labels):
        if name in flagged:
            continue
        send, recv = m.value(a.rows[i]), m.value(a.cols[i])
        low = min(send, recv)
        if math.isfinite(low) and low < floor:
            side = "both" if send < floor and recv < floor else ("send" if send < floor else "receive")
            out.append(Finding("node", "critical", m.metric, [name], ratio=low / floor, side=side,
                               values={"node_median": low, "floor": floor},
                               figures={"below_floor": True, "floor_note": th.floor_note, "floor_of": th.floor_of}))
    return out


def _summary(m: _Metric, a: _Assessed, labels: Sequence[str], retest: Optional[np.ndarray]) -> MetricSummary:
    finite = np.isfinite(m.log)
    npairs = int(finite.sum())
    if not npairs:
        return MetricSummary(m.metric, m.unit, 0, None, None, None, None, None, None, None, None)
    sample = sample_cells(m.log)
    sample = sample[np.isfinite(sample)]
    lo, hi = (float(v) for v in np.percentile(sample, [5, 95]))
    # Percentiles of a speed: the slow 5% of a latency is its high end.
    p5, p95 = (m.value(hi), m.value(lo)) if m.latency else (m.value(lo), m.value(hi))
    worst = int(np.nanargmin(m.log))
    best = int(np.nanargmax(m.log))
    wi, wj = divmod(worst, m.log.shape[1])
    low_v, high_v = float(m.raw.flat[worst]), float(m.raw.flat[best])
    mn, mx = (high_v, low_v) if m.latency else (low_v, high_v)
    send = {labels[i]: m.value(a.rows[i]) for i in range(len(labels)) if math.isfinite(a.rows[i])}
    recv = {labels[i]: m.value(a.cols[i]) for i in range(len(labels)) if math.isfinite(a.cols[i])}
    return MetricSummary(m.metric, m.unit, npairs, m.value(a.lg), mn, mx, p5, p95, (labels[wi], labels[wj]),
                         float(m.raw[wi, wj]), a.sigma_cell, send, recv,
                         int(np.isfinite(retest).sum()) if retest is not None else 0)


def analyse_metric(values: np.ndarray, labels: Sequence[str], metric: str = "bandwidth", unit: Optional[str] = None,
                   thresholds: Thresholds = Thresholds(), retest: Optional[np.ndarray] = None
                   ) -> Tuple[List[Finding], MetricSummary, int]:
    """Findings and summary of one N x N matrix (row = sender); retest: same shape, NaN where not retested."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != values.shape[1] or values.shape[0] != len(labels):
        raise ValueError(f"expected an N x N matrix with N = {len(labels)} labels, got shape {values.shape}")
    m = _Metric(metric, values, unit or ("us" if metric == "latency" else "MB/s"))
    rt = _Metric(metric, retest, m.unit).log if retest is not None else None
    a = _assess(m)
    if not m.latency and thresholds.ceiling_MBps:
        a.ref = np.minimum(a.ref, math.log(thresholds.ceiling_MBps))  # NaN stays NaN
    findings, send_bad, recv_bad = _node_findings(m, a, labels, thresholds, rt)
    pair_findings, omitted = _pair_findings(m, a, labels, thresholds, rt, send_bad | recv_bad)
    flagged = [f.nodes[0] for f in findings if f.kind == "node"]
    findings = _floor_findings(m, a, labels, thresholds, flagged) + findings + pair_findings
    return findings, _summary(m, a, labels, rt), omitted


def analyse(labels: Sequence[str], bandwidth: Optional[np.ndarray] = None, latency: Optional[np.ndarray] = None,
            thresholds: Thresholds = Thresholds(), retest_bandwidth: Optional[np.ndarray] = None,
            retest_latency: Optional[np.ndarray] = None) -> HealthReport:
    """The health report of an all-pairs measurement: bandwidth (MB/s) and/or latency (us) matrices."""
    labels = list(labels)
    findings: List[Finding] = []
    summaries: Dict[str, MetricSummary] = {}
    omitted = 0
    if len(labels) < MIN_NODES_FOR_NODES:
        findings.append(Finding("note", "info", "bandwidth", list(labels), figures={"few_nodes": len(labels)}))
    for metric, mat, rt in (("bandwidth", bandwidth, retest_bandwidth), ("latency", latency, retest_latency)):
        if mat is None:
            continue
        f, s, o = analyse_metric(mat, labels, metric, thresholds=thresholds, retest=rt)
        findings += f
        summaries[metric] = s
        omitted += o
    _explain_by_bad_nodes(findings)
    order = {"critical": 0, "warning": 1, "info": 2}
    kinds = {"fabric": 0, "node": 1, "link": 2, "asymmetric": 3, "transient": 4, "note": 5}
    findings.sort(key=lambda f: (order.get(f.severity, 3), kinds.get(f.kind, 9), f.metric != "bandwidth",
                                 f.ratio if f.ratio is not None else 1.0))
    return HealthReport(labels, findings, summaries, thresholds, omitted)


def _explain_by_bad_nodes(findings: List[Finding]) -> None:
    """A slow or asymmetric pair with an end named as a bad node (by either metric) is that node's
    doing: a link at a quarter of the rate also queues the other metric's messages, and its two
    directions differ by the noise of a slow link. It stays listed, as information, so the verdict
    names the node and not its partners."""
    bad: Dict[str, str] = {}
    for f in findings:
        if f.kind == "node" and f.problem:
            bad.setdefault(f.nodes[0], f.metric)
    for f in findings:
        if f.kind not in ("link", "asymmetric") or not f.problem:
            continue
        ends = [n for n in f.nodes if n in bad]
        if ends:
            f.values["was"] = f.severity
            f.severity = "info"
            f.clauses.append(("explained", {"node": ends[0], "metric": bad[ends[0]]}))


def set_aside_busy_latency(report: HealthReport, factor: float, busy: Any = None) -> int:
    """Latency findings within `factor` (how far the host's CPU contention alone can move the
    latency of two ranks, ``host_state.HostLoad.factor``) become information: on a host that busy
    an 8-byte round trip times the scheduler, not the link. Bandwidth findings stay (retests and
    the link ceiling judge them). `busy`: the ``host_state.HostLoad`` (its load, CPUs and ranks are
    the evidence). Returns how many were set aside."""
    count = 0
    for f in report.findings:
        if f.metric != "latency" or not f.problem or not f.ratio or 1.0 / f.ratio > factor:
            continue
        f.values["was"] = f.severity
        f.severity = "info"
        f.clauses.append(("host busy", {"busy": busy, "factor": factor}))
        count += 1
    return count
