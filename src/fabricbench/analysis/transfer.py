"""File transfer figures: one round of readers, and a stored transfer run summarised.

A round is N readers copying the same file from one server at the same time. From the
readers' clocks (when each copy started, its first and last byte, the bytes it got):

- per-reader throughput: bytes / (last byte - start), what ``time xrdcp`` would give;
- aggregate throughput: every byte the readers got / (latest last byte - earliest start),
  what the server's link delivered;
- time to last byte: latest last byte - earliest start (of the readers that finished);
- start skew: latest start - earliest start (how "at the same time" the readers began);
- fairness: Jain's index of the per-reader throughputs, (sum x)^2 / (n sum x^2): 1 when
  all are equal, 1/n when one reader got everything.

``summarize`` turns a run's measurements (benchmark ``transfer``) into one row per protocol,
cache state and reader count, the medians over repetitions, next to the ceiling (the
server link's TCP goodput) and with raw TCP set against file transfer. Throughput is in
decimal MB/s (1e6 bytes/s). Pure functions: no processes, no database.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

BENCHMARK = "transfer"
MB = 1e6
READER_METRIC = "reader_throughput"
ROUND_METRICS = ("aggregate_throughput", "time_to_last_byte", "start_skew", "fairness")
RAW = "tcp"  # the protocol that is the network+protocol-only baseline
RAW_TOLERANCE = 0.02  # raw TCP may trail file transfer by this much and still count as "at or above" (noise)


@dataclass(frozen=True)
class ShortCopy:
    """Why a copy that ran did not deliver the whole file (``judge``): ``kind`` is 'signal' (killed
    by signal ``code``), 'status' (exited with status ``code``) or 'short' (ended well but short);
    report/words/transfer.py says it in words."""

    kind: str
    got: int  # bytes received
    expected: int  # bytes of the file
    code: Optional[int] = None  # the signal or the exit status


@dataclass
class ReaderResult:
    """One reader's copy in one round, as its clock saw it (times are wall-clock seconds)."""

    index: int
    node: str
    bytes: int = 0
    t_start: Optional[float] = None
    t_first: Optional[float] = None
    t_last: Optional[float] = None
    exit_status: Optional[int] = None
    reason: Optional[str] = None  # why it failed, as the reader or the launch said it
    short: Optional[ShortCopy] = None  # set by judge: the copy ran but did not get the whole file

    @property
    def ok(self) -> bool:
        return self.reason is None and self.short is None

    @property
    def elapsed(self) -> Optional[float]:
        if self.t_last is None or self.t_start is None:
            return None
        return self.t_last - self.t_start

    @property
    def throughput(self) -> Optional[float]:
        """Bytes per second of a complete copy; None for a failed one."""
        e = self.elapsed
        return self.bytes / e if self.ok and e and e > 0 else None

    @property
    def first_byte_latency(self) -> Optional[float]:
        if self.t_first is None or self.t_start is None:
            return None
        return self.t_first - self.t_start


def judge(result: ReaderResult, expected_bytes: int) -> ReaderResult:
    """Set `short` when the copy did not deliver the whole file (exit status, short read); a
    failure the reader already gave a reason for is kept as it is."""
    if result.reason is not None:
        return result
    if result.exit_status not in (0, None):
        kind, code = ("signal", -result.exit_status) if result.exit_status < 0 else ("status", result.exit_status)
        result.short = ShortCopy(kind, result.bytes, expected_bytes, code)
    elif result.bytes != expected_bytes:
        result.short = ShortCopy("short", result.bytes, expected_bytes)
    return result


def jain_index(values: Sequence[float]) -> Optional[float]:
    """Jain's fairness index of non-negative values; None for none or all zero."""
    xs = [float(v) for v in values if v is not None]
    square_sum = sum(x * x for x in xs)
    if not xs or square_sum == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * square_sum)


@dataclass
class RoundFigures:
    readers: int
    ok: int
    bytes: int  # received by all readers, failed ones included
    aggregate: Optional[float]  # B/s
    time_to_last_byte: Optional[float]  # s
    start_skew: Optional[float]  # s
    first_byte_spread: Optional[float]  # s
    fairness: Optional[float]

    @property
    def failed(self) -> int:
        return self.readers - self.ok


def round_figures(results: Sequence[ReaderResult]) -> RoundFigures:
    starts = [r.t_start for r in results if r.t_start is not None]
    lasts = [r.t_last for r in results if r.t_last is not None]
    done = [r for r in results if r.ok]
    total = sum(r.bytes for r in results)
    aggregate = None
    if starts and lasts and max(lasts) > min(starts) and total > 0:
        aggregate = total / (max(lasts) - min(starts))
    ttlb = None
    if done:
        ttlb = max(r.t_last for r in done) - min(starts)
    firsts = [r.t_first for r in results if r.t_first is not None]
    return RoundFigures(
        readers=len(results),
        ok=len(done),
        bytes=total,
        aggregate=aggregate,
        time_to_last_byte=ttlb,
        start_skew=max(starts) - min(starts) if starts else None,
        first_byte_spread=max(firsts) - min(firsts) if len(firsts) > 1 else (0.0 if firsts else None),
        fairness=jain_index([r.throughput for r in done]) if done else None,
    )


# ---- a stored run ---------------------------------------------------------------------------

@dataclass
class Spread:
    """Median over repetitions with the lowest and highest value seen."""

    median: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    n: int = 0

    @classmethod
    def of(cls, values: Sequence[Optional[float]]) -> "Spread":
        xs = [v for v in values if v is not None]
        if not xs:
            return cls()
        return cls(statistics.median(xs), min(xs), max(xs), len(xs))


@dataclass
class TransferRow:
    """One protocol, cache state and reader count: figures over its repetitions (MB/s, s)."""

    protocol: str
    cache: str
    readers: int
    rounds: int
    per_reader: Spread  # each round's mean per-reader throughput; low/high: any single reader
    aggregate: Spread
    fairness: Spread
    start_skew: Spread
    time_to_last_byte: Spread
    transfers: int  # reader copies attempted
    failed: int
    ceiling: Optional[float] = None  # MB/s the readers' links allow together (the server link's goodput)
    failures: List[str] = field(default_factory=list)

    @property
    def of_ceiling(self) -> Optional[float]:
        """Aggregate median as a share of the ceiling."""
        if self.aggregate.median is None or not self.ceiling:
            return None
        return self.aggregate.median / self.ceiling

    @property
    def per_reader_of_share(self) -> Optional[float]:
        """Per-reader median against an equal share of the ceiling (ceiling / readers)."""
        if self.per_reader.median is None or not self.ceiling:
            return None
        return self.per_reader.median / (self.ceiling / self.readers)

    @property
    def label(self) -> str:
        return f"{self.protocol} ({self.cache} cache)" if self.protocol != RAW else "raw TCP"


@dataclass
class RawVsFile:
    """Raw TCP against file transfer for the same reader count and cache state (aggregate medians, MB/s)."""

    readers: int
    cache: str
    protocol: str
    raw: float
    file: float

    @property
    def ok(self) -> bool:
        return self.raw >= self.file * (1 - RAW_TOLERANCE)

    @property
    def ratio(self) -> float:
        return self.file / self.raw if self.raw else float("nan")


@dataclass
class TransferSummary:
    rows: List[TransferRow]
    server: Optional[str] = None
    server_goodput: Optional[float] = None  # MB/s of the server's link
    file_size: Optional[int] = None
    comparisons: List[RawVsFile] = field(default_factory=list)

    def row(self, protocol: str, cache: str, readers: int) -> Optional[TransferRow]:
        return next((r for r in self.rows if (r.protocol, r.cache, r.readers) == (protocol, cache, readers)), None)

    @property
    def protocols(self) -> List[str]:
        return list(dict.fromkeys(r.protocol for r in self.rows))

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.rows)

    @property
    def raw_at_or_above_file(self) -> Optional[bool]:
        return all(c.ok for c in self.comparisons) if self.comparisons else None

    def to_dict(self) -> Dict[str, Any]:
        def spread(s: Spread) -> Dict[str, Any]:
            return {"median": s.median, "low": s.low, "high": s.high, "n": s.n}

        return {
            "server": self.server,
            "server_goodput_MBps": self.server_goodput,
            "file_size": self.file_size,
            "rows": [
                {"protocol": r.protocol, "cache": r.cache, "readers": r.readers, "rounds": r.rounds,
                 "per_reader_MBps": spread(r.per_reader), "aggregate_MBps": spread(r.aggregate),
                 "fairness": spread(r.fairness), "start_skew_s": spread(r.start_skew),
                 "time_to_last_byte_s": spread(r.time_to_last_byte), "ceiling_MBps": r.ceiling,
                 "of_ceiling": r.of_ceiling, "transfers": r.transfers, "failed": r.failed, "failures": r.failures}
                for r in self.rows
            ],
            "raw_vs_file": [
                {"readers": c.readers, "cache": c.cache, "protocol": c.protocol, "raw_MBps": c.raw, "file_MBps": c.file,
                 "raw_at_or_above": c.ok}
                for c in self.comparisons
            ],
            "raw_at_or_above_file": self.raw_at_or_above_file,
        }


Key = Tuple[str, str, int]


def _key(params: Dict[str, Any]) -> Key:
    return (str(params.get("protocol")), str(params.get("cache")), int(params.get("readers") or 0))


CACHE_ORDER = {"warm": 0, "cold": 1}


def _order(key: Key) -> Tuple[int, int, str, int]:
    protocol, cache, readers = key
    return (1 if protocol == RAW else 0, CACHE_ORDER.get(cache, 2), cache, readers)


def summarize(measurements: Sequence[Any], provenance: Optional[Dict[str, Any]] = None) -> TransferSummary:
    """Rows (file protocols first, raw TCP last; by cache, then readers) from a transfer run's points."""
    facts = (provenance or {}).get("transfer") or {}
    per_round: Dict[Key, Dict[int, List[Any]]] = {}
    rounds: Dict[Key, Dict[str, Dict[int, Any]]] = {}
    for m in measurements:
        if m.benchmark != BENCHMARK:
            continue
        key = _key(m.params)
        rep = int(m.params.get("repetition") or 0)
        if m.metric == READER_METRIC:
            per_round.setdefault(key, {}).setdefault(rep, []).append(m)
        elif m.metric in ROUND_METRICS:
            rounds.setdefault(key, {}).setdefault(m.metric, {})[rep] = m
    rows = []
    for key in sorted(set(per_round) | set(rounds), key=_order):
        readers_by_rep = per_round.get(key, {})
        metrics = rounds.get(key, {})
        means, singles, failures = [], [], []
        transfers = failed = 0
        for rep in sorted(readers_by_rep):
            values = [m.value for m in readers_by_rep[rep] if m.value is not None]
            singles += values
            if values:
                means.append(statistics.fmean(values))
            for m in readers_by_rep[rep]:
                transfers += 1
                if m.value is None:
                    failed += 1
                    reason = (m.detail or {}).get("reason") or "failed"
                    failures.append(f"repetition {rep}, {m.params.get('node')}: {reason}")
        per_reader = Spread.of(means)
        if singles:
            per_reader.low, per_reader.high = min(singles), max(singles)

        def values(metric: str) -> List[Optional[float]]:
            return [m.value for m in metrics.get(metric, {}).values()]

        agg_points = list(metrics.get("aggregate_throughput", {}).values())
        ceilings = [(m.detail or {}).get("ceiling_MBps") for m in agg_points]
        ceiling = next((c for c in ceilings if c), None) or (facts.get("ceiling_MBps") or {}).get(str(key[2]))
        rows.append(TransferRow(
            protocol=key[0], cache=key[1], readers=key[2],
            rounds=max(len(readers_by_rep), len(agg_points)),
            per_reader=per_reader,
            aggregate=Spread.of(values("aggregate_throughput")),
            fairness=Spread.of(values("fairness")),
            start_skew=Spread.of(values("start_skew")),
            time_to_last_byte=Spread.of(values("time_to_last_byte")),
            transfers=transfers, failed=failed, ceiling=ceiling, failures=failures,
        ))
    summary = TransferSummary(rows, server=facts.get("server"), server_goodput=facts.get("server_goodput_MBps"),
                              file_size=facts.get("file_size"))
    summary.comparisons = raw_vs_file(rows)
    return summary


def raw_vs_file(rows: Sequence[TransferRow]) -> List[RawVsFile]:
    """Every file-transfer row that has a raw TCP row with the same reader count."""
    raw = {r.readers: r for r in rows if r.protocol == RAW and r.aggregate.median is not None}
    out = []
    for r in rows:
        if r.protocol == RAW or r.aggregate.median is None or r.readers not in raw:
            continue
        out.append(RawVsFile(r.readers, r.cache, r.protocol, raw[r.readers].aggregate.median, r.aggregate.median))
    return out

