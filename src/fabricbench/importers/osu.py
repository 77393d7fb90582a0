"""OSU Micro-Benchmarks text output: every point-to-point and collective table.

A file holds one or more tables, each opened by the benchmark's title line
(``# OSU MPI Latency Test v7.3``) and a column header (``# Size  Latency (us)``,
``# Size  Bandwidth (MB/s)``, ``# Size  MB/s  Messages/s`` for osu_mbw_mr, collectives
``# Size  Avg Latency(us)`` and with ``-f`` ``Min Latency(us)  Max Latency(us)  Iterations``;
osu_barrier has no size column). Several tables may be concatenated in one file.

OSU's MB/s is already decimal (1e6 B/s), so nothing is converted. Benchmarks take the
native engine's names (``latency``, ``bw``, ``bibw``, ``mbw_mr``, ``multi_lat``,
``allreduce``, ...); collectives put OSU's average in value/mean and min/max in min/max.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.importers import Importer
from fabricbench.importers.base import (
    begin_text_parse,
    NOISE,
    ParsedRun,
    PointFactory,
    Source,
    finite,
    integer,
    require_increasing,
    slug,
    split_columns,
)

TITLE = re.compile(r"^#\s*OSU\s+(?P<title>.*?)(?:\s+v(?P<version>\d[\w.\-]*))?\s*$")
PAIRS = re.compile(r"pairs:\s*(\d+)", re.I)
WINDOW = re.compile(r"window size:\s*(\d+)", re.I)
DATATYPE = re.compile(r"^#\s*Datatype:\s*(\S+?)\.?\s*$")

# Titles (after "OSU MPI" and any -CUDA/-ROCM suffix) -> native engine benchmark names.
NAMES = {
    "latency test": "latency",
    "bandwidth test": "bw",
    "bi-directional bandwidth test": "bibw",
    "multiple bandwidth / message rate test": "mbw_mr",
    "multi latency test": "multi_lat",
    "barrier latency test": "barrier",
    "broadcast latency test": "bcast",
    "reduce latency test": "reduce",
    "allreduce latency test": "allreduce",
    "allgather latency test": "allgather",
    "all-to-all personalized exchange latency test": "alltoall",
    "alltoall latency test": "alltoall",
    "reduce_scatter latency test": "reduce_scatter",
    "reduce-scatter latency test": "reduce_scatter",
    "gather latency test": "gather",
    "scatter latency test": "scatter",
    "allgatherv latency test": "allgatherv",
    "all-to-allv personalized exchange latency test": "alltoallv",
    "alltoallv latency test": "alltoallv",
    "gatherv latency test": "gatherv",
    "scatterv latency test": "scatterv",
    "reduce_scatter_block latency test": "reduce_scatter_block",
}
POINT_TO_POINT = {"latency", "bw", "bibw", "multi_lat"}


def benchmark_name(title: str) -> Tuple[str, Optional[str]]:
    """(benchmark, accelerator) from an OSU title such as ``MPI-CUDA Bi-Directional Bandwidth Test``."""
    accel = None
    m = re.match(r"^MPI(?:-(?P<accel>[A-Za-z]+(?: MANAGED)?))?\s+(?P<rest>.*)$", title)
    rest = title
    if m:
        accel = m.group("accel")
        rest = m.group("rest")
    key = re.sub(r"\s+", " ", rest.strip().lower())
    if key in NAMES:
        return NAMES[key], accel
    nb = re.match(r"^non-blocking (.+)$", key)
    if nb and nb.group(1) in NAMES:
        return "i" + NAMES[nb.group(1)], accel
    return "osu." + slug(re.sub(r"\btest$", "", key)), accel


# Column labels (spaces removed, lower case) -> roles.
ROLES = {
    "size": "size",
    "latency(us)": "avg",
    "avglatency(us)": "avg",
    "minlatency(us)": "min",
    "maxlatency(us)": "max",
    "iterations": "iterations",
    "bandwidth(mb/s)": "bw",
    "mb/s": "bw",
    "messages/s": "rate",
    "validation": "validation",
    "overall(us)": "avg",
    "compute(us)": "compute_us",
    "coll.init(us)": "init_us",
    "mpi_test(us)": "test_us",
    "mpi_wait(us)": "wait_us",
    "purecomm.(us)": "pure_comm_us",
    "mincomm.(us)": "min_comm_us",
    "maxcomm.(us)": "max_comm_us",
    "overlap(%)": "overlap_pct",
    "transmitsize": "transmit_size",
}
TAIL = re.compile(r"^p(\d+(?:\.\d+)?)tail(lat\(us\)|bw\(mb/s\))$")


def column_roles(source: Source, line: int, labels: List[str]) -> List[str]:
    roles = []
    for label in labels:
        key = label.replace(" ", "").lower()
        if key in ROLES:
            roles.append(ROLES[key])
            continue
        tail = TAIL.match(key)
        if tail:
            roles.append(f"p{tail.group(1)}")
            continue
        raise source.error(line, f"unknown OSU column {label!r} in the table header")
    if len(set(roles)) != len(roles):
        raise source.error(line, "a column appears twice in the table header")
    if not ({"avg", "bw", "rate"} & set(roles)):
        raise source.error(line, "the table header has no latency, bandwidth or message-rate column")
    return roles


def is_header(text: str) -> bool:
    body = text.lstrip("#").strip()
    if not body:
        return False
    first = split_columns(body)[0].replace(" ", "").lower()
    return first in ("size", "avglatency(us)", "bandwidth(mb/s)", "mb/s", "overall(us)", "latency(us)")


def detect(source: Source) -> int:
    for text in source.lines[:200]:
        if TITLE.match(text.strip()) and ("Test" in text or "Benchmark" in text):
            return 90
    return 0


class Table:
    def __init__(self, title: str, version: Optional[str], line: int):
        self.title = title
        self.version = version
        self.line = line
        self.benchmark, self.accel = benchmark_name(title)
        self.roles: Optional[List[str]] = None
        self.labels: List[str] = []
        self.pairs: Optional[int] = None
        self.window: Optional[int] = None
        self.datatype: Optional[str] = None
        self.rows = 0
        self.last_size: Optional[int] = None


def parse(source: Source, allow_truncated: bool = False) -> ParsedRun:
    reader, parsed, point = begin_text_parse(source, "osu", "OSU Micro-Benchmarks", allow_truncated)
    table: Optional[Table] = None
    tables: List[Dict[str, Any]] = []

    def close(t: Optional[Table]) -> None:
        if t is None:
            return
        if t.roles is None:
            raise source.error(t.line, f"the '{t.title}' table has no column header")
        if t.rows == 0:
            raise source.truncated(t.line, f"the '{t.title}' table has no results (the run stopped or the file was cut)")
        tables.append({"title": t.title, "benchmark": t.benchmark, "line": t.line, "points": t.rows})

    for line in reader:
        text = line.text.strip()
        if not text or NOISE.match(text):
            continue
        title = TITLE.match(text)
        if title:
            close(table)
            table = Table(title.group("title").strip(), title.group("version"), line.no)
            if table.version and not parsed.tool_version:
                parsed.tool_version = table.version
            continue
        if text.startswith("#"):
            if table is None:
                continue  # preamble comments before the first title
            if table.roles is None and is_header(text):
                table.labels = split_columns(text.lstrip("#"))
                table.roles = column_roles(source, line.no, table.labels)
                continue
            if table.roles is not None and is_header(text):
                raise source.error(line.no, f"a second column header in the '{table.title}' table")
            if PAIRS.search(text):
                table.pairs = integer(source, line.no, PAIRS.search(text).group(1), "pairs", minimum=1)
                w = WINDOW.search(text)
                if w:
                    table.window = integer(source, line.no, w.group(1), "window size", minimum=1)
                continue
            dt = DATATYPE.match(text)
            if dt:
                table.datatype = dt.group(1)
            continue  # other comments: window creation, synchronization, notes
        if table is None:
            raise source.error(line.no, "a results line before any '# OSU ... Test' title")
        if table.roles is None:
            raise source.error(line.no, f"a results line before the column header of the '{table.title}' table")
        _row(source, parsed, point, table, line.no, text.split())

    close(table)
    if not tables:
        raise source.error(None, "no '# OSU ... Test' table found")
    parsed.facts = {"tables": tables}
    if parsed.measurements:
        parsed.ranks = max((m.params.get("ranks") or 0) for m in parsed.measurements) or None
    return parsed


def _row(source: Source, parsed: ParsedRun, point: PointFactory, table: Table, no: int, tokens: List[str]) -> None:
    roles = table.roles or []
    if len(tokens) != len(roles):
        raise source.error(no, f"expected {len(roles)} columns ({', '.join(table.labels)}), found {len(tokens)}")
    values: Dict[str, Any] = {}
    for role, label, tok in zip(roles, table.labels, tokens):
        if role == "validation":
            if tok.lower() not in ("pass", "fail", "passed", "failed"):
                raise source.error(no, f"Validation: expected Pass or Fail, found {tok!r}")
            values[role] = tok
        elif role in ("size", "iterations", "transmit_size"):
            values[role] = integer(source, no, tok, label)
        elif role == "overlap_pct":
            values[role] = finite(source, no, tok, label, minimum=None)
        else:
            values[role] = finite(source, no, tok, label)
    size = values.get("size", 0)
    if "size" in values:
        require_increasing(source, no, table.last_size, size, f"the '{table.title}' table")
    elif table.rows:
        raise source.error(no, f"the '{table.title}' table has no size column, so it has a single result line")
    table.last_size = size
    table.rows += 1

    params: Dict[str, Any] = {"size": size}
    if table.benchmark in POINT_TO_POINT and table.benchmark != "multi_lat":
        params["ranks"] = 2
    if table.pairs:
        params["pairs"] = table.pairs
        params["ranks"] = 2 * table.pairs
    if table.window:
        params["window"] = table.window
    if table.accel:
        params["accel"] = table.accel.lower()
    detail: Dict[str, Any] = {}
    if table.datatype:
        detail["datatype"] = table.datatype
    if "validation" in values:
        detail["validation"] = values["validation"]
    for key in ("compute_us", "init_us", "test_us", "wait_us", "pure_comm_us", "min_comm_us", "max_comm_us",
                "overlap_pct", "transmit_size"):
        if key in values:
            detail[key] = values[key]
    tails = {k: v for k, v in values.items() if re.fullmatch(r"p\d+(\.\d+)?", k)}

    if "avg" in values:
        lat_tails = tails if "bw" not in values else {}
        stats: Dict[str, Any] = {"mean": values["avg"], "min": values.get("min"), "max": values.get("max"),
                                 "iterations": values.get("iterations")}
        if "p99" in lat_tails:
            stats["p99"] = lat_tails["p99"]
        if "p50" in lat_tails:
            stats["median"] = lat_tails["p50"]
        extra = dict(detail)
        extra.update({f"{k}_us": v for k, v in lat_tails.items() if k not in ("p99", "p50")})
        point(table.benchmark, dict(params), "latency", "us", values["avg"], no, detail=extra, **stats)
    if "bw" in values:
        metric = "bibandwidth" if table.benchmark == "bibw" else "bandwidth"
        extra = dict(detail)
        extra.update({f"{k}_MBps": v for k, v in tails.items()})
        point(table.benchmark, dict(params), metric, "MB/s", values["bw"], no, detail=extra, mean=values["bw"],
              iterations=values.get("iterations"))
    if "rate" in values:
        point(table.benchmark, dict(params), "message_rate", "msg/s", values["rate"], no, detail=dict(detail),
              mean=values["rate"])


FORMAT = Importer(name="osu", title="OSU Micro-Benchmarks output", detect=detect, parse=parse)
