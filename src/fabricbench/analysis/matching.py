"""Which points of two runs are the same measurement: matching by meaning, and why others are not.

Two points match when they measure the same thing:

- the same *definition*: the benchmark name, with other tools' names for the engine's
  definitions mapped to it (IMB's PingPong latency is the engine's ``latency``, IMB's
  Allreduce its ``allreduce``, ...; see DEFINITIONS), and the same metric;
- the same message size;
- the same values of what the figure depends on (KEY_PARAMS by family): the window of a
  windowed bandwidth test (64 when not recorded, as OSU and the engine default; a window the
  engine cut to fit a slow link counts as the one asked for while it carries 1 MiB or more), the pairs
  of a multi-pair test, the ranks of a collective or HPCC test, the ring ordering, the cache
  mode (warm when not recorded); the datatype, reduction, root and whether the pair shares a
  host count only when both runs record them.

Everything else is incidental and never blocks a match: the peer list, validation, the
total rank count of a single-pair test (so a 2-rank and a 4-rank run compare on latency),
loop lengths and other bookkeeping. A key parameter that a run does not record (a rank
count an imported file does not state) is a difference, never a match: ``import --ranks``
supplies it.

``match(a, b)`` takes two ``RunData`` (or two lists of replicate runs) and returns the
matched pairs and the grouped ``Mismatch`` list (``report.words.matching`` says it in one
short paragraph).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple


# Other tools' collectives the engine has no benchmark of (IMB's Reduce_scatter_block), matched
# as collectives with the engine's own (families collective and nbc of its table).
OTHER_COLLECTIVES = frozenset({"reduce_scatter_block", "ireduce_scatter_block"})
# OSU's defaults when a file does not say (OMB 5.x and later): MPI_Win_allocate; flush, but pscw for put_bibw.
ONE_SIDED_DEFAULTS = {"win": "allocate", "sync": "flush"}

# Other tools' benchmarks that follow an engine definition: (benchmark, metric) -> definition.
# IMB PingPong's bandwidth has one message in flight (not a window), so it is not `bw`;
# IMB's Reduce_scatter sizes the whole vector, not one rank's block, so it is not `reduce_scatter`.
DEFINITIONS: Dict[Tuple[str, str], str] = {
    ("imb.PingPong", "latency"): "latency",
    ("imb.Barrier", "latency"): "barrier",
    ("imb.Bcast", "latency"): "bcast",
    ("imb.Reduce", "latency"): "reduce",
    ("imb.Allreduce", "latency"): "allreduce",
    ("imb.Allgather", "latency"): "allgather",
    ("imb.Alltoall", "latency"): "alltoall",
    ("imb.Gather", "latency"): "gather",
    ("imb.Scatter", "latency"): "scatter",
}

WINDOWED = frozenset({"bw", "bibw", "mbw_mr"})
DEFAULT_WINDOW = 64
DEFAULT_CACHE = "warm"
# Compared only when both points record them.
SOFT_PARAMS = ("datatype", "op", "root", "path")
# Never compared: how a point was measured or described, not what.
INCIDENTAL = frozenset({"size", "peers", "validate", "size_meaning", "pairing", "loop_length", "measurements",
                        "seed", "random_rings", "batch", "iterations", "warmup", "repetition"})


class _Unknown:
    """A key parameter a run does not record (points carrying one are never matched)."""

    def __repr__(self) -> str:
        return "unknown"


UNKNOWN = _Unknown()

# How to supply a key parameter a run does not record.
_HOW_TO_RECORD = {
    "ranks": "import it with --ranks N",
    "pairs": "import it with --ranks N (pairs = N/2)",
}


def definition(benchmark: str, metric: str) -> str:
    """The engine definition a benchmark's metric follows (its own name when none is known)."""
    return DEFINITIONS.get((benchmark, metric), benchmark)


@functools.lru_cache(maxsize=1)
def _families() -> Dict[str, str]:
    """engine benchmark -> its matching family, from the engine's table: a single pair (pt2pt,
    unpaired, one figure: latency, bw, bibw), a multi-pair test (pairing halves: mbw_mr,
    multi_lat), a collective (families collective and nbc, and each collective's non-blocking
    name), an HPCC test, a one-sided test (OSU's names: rank 0 on rank 1's window)."""
    from fabricbench.suite import BENCHMARKS

    out: Dict[str, str] = {n: "collective" for n in OTHER_COLLECTIVES}
    for name, spec in BENCHMARKS.items():
        if spec.family == "pt2pt" and spec.pairing == "halves":
            out[name] = "multi-pair"
        elif spec.family == "pt2pt" and spec.pairing == "none" and len(spec.metrics) == 1:
            out[name] = "single-pair"
        elif spec.family == "collective":  # and its non-blocking name, as other tools call it
            out[name] = out["i" + name] = "collective"
        elif spec.family == "nbc":
            out[name] = "collective"
        elif spec.family == "hpcc":
            out[name] = "hpcc"
        elif spec.family == "onesided":
            out[name] = "one-sided"
    return out


def one_sided_windowed(defn: str) -> bool:
    """A one-sided test that sends a window of operations (put_bw, get_bw, put_bibw)."""
    from fabricbench.suite import BENCHMARKS

    spec = BENCHMARKS.get(defn)
    return spec is not None and spec.family == "onesided" and "--window" in spec.options


def family(defn: str) -> str:
    return _families().get(defn, "other")


def _positive_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def run_ranks(run: Any) -> Optional[int]:
    """The run's total rank count: its ranks column, else provenance "ranks"."""
    r = _positive_int(getattr(run, "ranks", None))
    prov = getattr(run, "provenance", None) or {}
    return r or _positive_int(prov.get("ranks") if isinstance(prov, dict) else None)


def pair_path(run: Any, peers: Any) -> Optional[str]:
    """'same host' or 'across hosts' for a single pair, from the run's rank placement; None if unknown."""
    prov = getattr(run, "provenance", None) or {}
    if not isinstance(prov, dict):
        return None
    pair = peers if isinstance(peers, list) and len(peers) == 2 else [0, 1]
    placement = prov.get("rank_hosts")
    if isinstance(placement, list) and all(isinstance(p, int) and 0 <= p < len(placement) for p in pair):
        return "same host" if placement[pair[0]] == placement[pair[1]] else "across hosts"
    nodes = _positive_int(prov.get("nodes"))
    if nodes == 1:
        return "same host"
    if nodes and nodes > 1 and _positive_int(prov.get("ppn")) == 1:
        return "across hosts"
    return None


@dataclass(frozen=True)
class PointKey:
    definition: str
    metric: str
    size: Optional[int]
    strict: Tuple[Tuple[str, Any], ...]  # must be equal; a point with an UNKNOWN matches nothing
    soft: Tuple[Tuple[str, Any], ...]  # equal when both recorded

    @property
    def series_key(self) -> Tuple[str, str, Tuple[Tuple[str, Any], ...]]:
        return (self.definition, self.metric, self.strict)

    @property
    def has_unknown(self) -> bool:
        return any(v is UNKNOWN for _k, v in self.strict)


def point_key(m: Any, run: Any = None) -> PointKey:
    """What a point measures, in the terms two runs are matched on (see the module doc)."""
    params = dict(m.params or {})
    defn = definition(m.benchmark, m.metric)
    fam = family(defn)
    ranks = _positive_int(params.get("ranks")) or (run_ranks(run) if run is not None else None)
    strict: Dict[str, Any] = {}
    soft: Dict[str, Any] = {}
    if fam in ("single-pair", "multi-pair"):
        if defn in WINDOWED:
            strict["window"] = window_key(params, getattr(m, "detail", None) if isinstance(getattr(m, "detail", None), dict) else None)
        if fam == "multi-pair":
            pairs = _positive_int(params.get("pairs")) or (ranks // 2 if ranks else None)
            strict["pairs"] = pairs if pairs else UNKNOWN
        else:
            path = pair_path(run, params.get("peers")) if run is not None else None
            if path:
                soft["path"] = path
    elif fam == "one-sided":  # a single pair like latency: the window and synchronisation are what matter
        strict["win"] = params.get("win", ONE_SIDED_DEFAULTS["win"])
        strict["sync"] = params.get("sync", "pscw" if defn == "put_bibw" else ONE_SIDED_DEFAULTS["sync"])
        if one_sided_windowed(defn):
            strict["window"] = params.get("window", DEFAULT_WINDOW)
    elif fam in ("collective", "hpcc"):
        strict["ranks"] = ranks if ranks else UNKNOWN
        if "ordering" in params:
            strict["ordering"] = params["ordering"]
    else:
        ignored = INCIDENTAL | {"pairs"} if defn == "pingpong_pairs" else INCIDENTAL
        strict.update({k: v for k, v in params.items() if k not in ignored and k != "cache" and k not in SOFT_PARAMS})
    strict["cache"] = params.get("cache", DEFAULT_CACHE)
    for k in SOFT_PARAMS:
        if params.get(k) is not None and k not in soft:
            soft[k] = params[k]
    size = params.get("size")
    return PointKey(defn, m.metric, int(size) if isinstance(size, (int, float)) else None,
                    tuple(sorted((k, _hashable(v)) for k, v in strict.items())), tuple(sorted((k, _hashable(v)) for k, v in soft.items())))


SATURATING_BYTES = 1 << 20  # bytes in flight per window past which a window no longer limits the rate


def window_key(params: Dict[str, Any], detail: Optional[Dict[str, Any]] = None) -> Any:
    """The window a windowed bandwidth point is matched on: its own, except that a window the
    engine cut to fit the point's time on a slow link (``detail.window_capped_from``, from
    ``planning/suite_time``) counts as the window asked for while it still carries 1 MiB or
    more (far above any fabric's bandwidth-delay product, so it no longer limits the rate)."""
    window = params.get("window", DEFAULT_WINDOW)
    size = params.get("size")
    asked = (detail or {}).get("window_capped_from")
    if (isinstance(asked, int) and isinstance(window, int) and isinstance(size, (int, float))
            and window * size >= SATURATING_BYTES):
        return asked
    return window


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def _soft_conflict(a: PointKey, b: PointKey) -> List[str]:
    sb = dict(b.soft)
    return [k for k, v in a.soft if k in sb and sb[k] != v]


@dataclass
class Pair:
    key: PointKey  # A's key
    a: Any  # Measurement (of A's first run that has the point)
    b: Any
    a_reps: List[Any] = field(default_factory=list)  # the point in every run of side A (replicates)
    b_reps: List[Any] = field(default_factory=list)

    def __post_init__(self):
        self.a_reps = self.a_reps or [self.a]
        self.b_reps = self.b_reps or [self.b]


@dataclass
class Mismatch:
    """Points of one definition and metric that found no partner, and why."""

    what: str  # "allreduce latency"
    why: Dict[str, Any]  # {"kind": "differ", "diffs": [("ranks", ["2"], ["4"])]}; worded by report.words.matching
    count_a: int = 0
    count_b: int = 0


@dataclass
class Matching:
    pairs: List[Pair] = field(default_factory=list)
    mismatches: List[Mismatch] = field(default_factory=list)


def _side(runs: Any, benchmark: Optional[str]) -> Dict[PointKey, List[Any]]:
    """One side's points by key: a run (RunData) or replicate runs, each point in every run that has it.
    The repetitions of a point within a run (a scaling study's ``params.repetition``) are pooled
    as replicates of it; a failed repetition (no value) is left out."""
    out: Dict[PointKey, List[Any]] = {}
    for rd in (runs if isinstance(runs, (list, tuple)) else [runs]):
        by_rep: Dict[Tuple[PointKey, Any], Any] = {}
        for m in rd.measurements:
            if not _wanted(m, benchmark):
                continue
            rep = (m.params or {}).get("repetition")
            if rep is not None and getattr(m, "value", None) is None and getattr(m, "median", None) is None:
                continue
            by_rep[(point_key(m, rd.run), _hashable(rep))] = m  # a resumed run's later point wins
        for (key, _rep), m in by_rep.items():
            out.setdefault(key, []).append(m)
    return out


def match(a: Any, b: Any, benchmark: Optional[str] = None) -> Matching:
    """Pair the points of `a` and `b` by meaning; group the rest by reason.

    Each side is a run (RunData) or a list of replicate runs of the same configuration.
    """
    keyed_a, keyed_b = _side(a, benchmark), _side(b, benchmark)
    index: Dict[Tuple, List[PointKey]] = {}
    for kb in keyed_b:
        if not kb.has_unknown:
            index.setdefault((kb.series_key, kb.size), []).append(kb)
    result = Matching()
    used: set = set()
    for ka, ma in keyed_a.items():
        if ka.has_unknown:
            continue
        for kb in index.get((ka.series_key, ka.size), []):
            if kb not in used and not _soft_conflict(ka, kb):
                used.add(kb)
                result.pairs.append(Pair(ka, ma[0], keyed_b[kb][0], ma, keyed_b[kb]))
                break
    matched_a = {p.key for p in result.pairs}
    rest_a = [k for k in keyed_a if k not in matched_a]
    rest_b = [k for k in keyed_b if k not in used]
    result.mismatches = explain(rest_a, rest_b, list(keyed_a), list(keyed_b))
    return result


def _wanted(m: Any, benchmark: Optional[str]) -> bool:
    if benchmark is None or m.benchmark == benchmark:
        return True
    return definition(m.benchmark, m.metric) in (benchmark, definition(benchmark, m.metric))


def explain(rest_a: Sequence[PointKey], rest_b: Sequence[PointKey], all_a: Sequence[PointKey],
            all_b: Sequence[PointKey]) -> List[Mismatch]:
    """One Mismatch per definition and metric with unmatched points, saying why."""
    groups: Dict[Tuple[str, str], Tuple[List[PointKey], List[PointKey]]] = {}
    for k in rest_a:
        groups.setdefault((k.definition, k.metric), ([], []))[0].append(k)
    for k in rest_b:
        groups.setdefault((k.definition, k.metric), ([], []))[1].append(k)
    present_a = {(k.definition, k.metric) for k in all_a}
    present_b = {(k.definition, k.metric) for k in all_b}
    out = []
    for (defn, metric), (ka, kb) in groups.items():
        what = defn if metric == defn else f"{defn} {metric}"
        if (defn, metric) not in present_b:
            out.append(Mismatch(what, {"kind": "only", "side": "A", "count": _count(ka)}, len(ka)))
        elif (defn, metric) not in present_a:
            out.append(Mismatch(what, {"kind": "only", "side": "B", "count": _count(kb)}, 0, len(kb)))
        else:
            out.append(Mismatch(what, _why(ka, kb), len(ka), len(kb)))
    return out


def _count(keys: Sequence[PointKey]) -> Tuple[int, str]:
    """How many points a side has alone, counted in sizes (or points for unsized benchmarks)."""
    return len(keys), ("size" if any(k.size is not None for k in keys) else "point")


def _why(ka: Sequence[PointKey], kb: Sequence[PointKey]) -> Dict[str, Any]:
    for side, keys in (("A", ka), ("B", kb)):
        unknown = sorted({name for k in keys for name, v in k.strict if v is UNKNOWN})
        if unknown:
            return {"kind": "not_recorded", "side": side, "names": unknown,
                    "how": [_HOW_TO_RECORD.get(n) for n in unknown]}
    diffs = []
    for name in sorted({n for k in list(ka) + list(kb) for n, _ in k.strict + k.soft}):
        va = _values(ka, name)
        vb = _values(kb, name)
        if va and vb and va != vb:
            diffs.append((name, va, vb))
    if diffs:
        return {"kind": "differ", "diffs": diffs}
    return {"kind": "sizes", "spans": [(side, _size_span(keys)) for side, keys in (("A", ka), ("B", kb)) if keys]}


def _values(keys: Sequence[PointKey], name: str) -> List[str]:
    vals = {str(v) for k in keys for n, v in k.strict + k.soft if n == name}
    return sorted(vals, key=lambda s: (len(s), s))


def _size_span(keys: Sequence[PointKey]) -> Dict[str, Any]:
    """The sizes a side has alone: {"sizes": [smallest, largest]} ([] for unsized benchmarks), "points"."""
    sizes = sorted({k.size for k in keys if k.size is not None})
    return {"sizes": sizes[:1] + sizes[1:][-1:], "points": len(keys)}
