"""NCCL-tests (all_reduce_perf, all_gather_perf, ...) text output and JSON report.

Text: comment lines describe the run (``# nThread 1 nGpus 1 minBytes ...``, one
``#  Rank  0 Group  0 Pid ... on host device 0 [...] GPU`` per rank, newer versions
``# Collective test starting: all_reduce_perf``), a two-line header
(``size count type redop root time algbw busbw #wrong`` for out-of-place then
in-place, older versions ``error`` and no ``root``), one line per size, then
``# Out of bounds values`` and ``# Avg bus bandwidth`` (the end marker).
The JSON report (nccl-tests' JSON output, ``"version": 2``) holds the same values:
``results[]`` with ``size``, ``count``, ``type``, ``redop``, ``root`` and
``out_of_place``/``in_place`` objects of ``time``, ``alg_bw``, ``bus_bw``, ``nwrong``.

NCCL-tests compute GB/s as bytes / 1e9 / seconds, so bandwidths are x1000 to decimal
MB/s. Each size and placement gives three measurements of benchmark
``nccl.<collective>`` (``nccl.all_reduce``): ``time`` (us), and ``bandwidth`` (MB/s)
twice, with ``params["bw"]`` = ``"alg"`` (algorithm bandwidth) or ``"bus"`` (bus
bandwidth, the figure to put next to a link's peak); params also carry ``placement``
(``out_of_place``/``in_place``), ``type``, ``redop``, ``root`` and ``ranks``.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from fabricbench.importers import Importer
from fabricbench.importers import base as b

PROGRAM = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
VERSION = re.compile(r"^#\s*nccl-tests version\s+(?P<version>\S+)")
CONFIG = re.compile(r"^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)\s+minBytes\s+(?P<min>\d+)\s+maxBytes\s+(?P<max>\d+)")
RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<gpu>.*)$")
# The footer's figures: (pattern, key in the run's detail, the value read from the line number and text).
FOOTER = (
    (re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)"), "avg_busbw_GBps",
     lambda source, no, value: b.finite(source, no, value, "Avg bus bandwidth")),
    (re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<value>\d+)"), "out_of_bounds", lambda _s, _n, value: int(value)),
)
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
               "scatter", "gather", "hypercube")
GROUP = ("time", "algbw", "busbw", "wrong")


def collective(name: str) -> Optional[str]:
    """The collective a program or file name names (``all_reduce_perf``, ``nccl_all_gather.json``)."""
    base = os.path.basename(name or "").lower()
    for coll in sorted(COLLECTIVES, key=len, reverse=True):
        if re.search(rf"(?:^|[_\-.]){coll}(?:[_\-.]|$)", base):
            return coll
    return None


def detect(source: b.Source) -> int:
    text = "\n".join(source.head[:300])
    if re.search(r"#\s+size\s+count\s+type\s.*\balgbw\b.*\bbusbw\b", text):
        return 90
    if "nccl-tests" in text or "Collective test starting" in text:
        return 85
    if source.head_text.lstrip().startswith("{") and '"out_of_place"' in source.head_text and '"bus_bw"' in source.head_text:
        return 90
    return 0


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    if source.head_text.lstrip().startswith("{"):
        return _parse_json(source, allow_truncated)
    return _parse_text(source, allow_truncated)


def _measure(parsed: b.ParsedRun, point: b.PointFactory, bench: str, base: Dict[str, Any], placement: str,
             time_us: float, algbw: float, busbw: float, wrong: Optional[float], no: Optional[int]) -> None:
    params = dict(base, placement=placement)
    detail = {"wrong": wrong} if wrong is not None else None
    point(bench, dict(params), "time", "us", time_us, no, detail=detail, mean=time_us)
    for kind, gbps in (("alg", algbw), ("bus", busbw)):
        if gbps == 0:  # below what 2 decimals of GB/s show: no figure, not a zero (the time is kept)
            parsed.facts["not_stored"] = "bandwidths printed as 0.00 GB/s (under 5 MB/s) are left out"
            continue
        mbps = b.scale(gbps, b.GB_PER_S)
        point(bench, dict(params, bw=kind), "bandwidth", "MB/s", mbps, no, converted_from="GB/s", mean=mbps)
    parsed.conversions["GB/s"] = "x1000 to MB/s (nccl-tests GB/s = 1e9 B/s)"


# -- text ------------------------------------------------------------------------------


def _parse_text(source: b.Source, allow_truncated: bool) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "nccl", "NCCL-tests", allow_truncated)
    program: Optional[str] = None
    config: Dict[str, Any] = {}
    ranks: List[Dict[str, Any]] = []
    columns: Optional[List[str]] = None
    descriptors = 0
    groups: List[str] = []
    last_size: Optional[int] = None
    rows = 0
    footer: Dict[str, Any] = {}
    for line in reader:
        text = line.text.strip()
        if not text or b.NOISE.match(text):
            continue
        if text.startswith("#"):
            m = PROGRAM.match(text)
            if m:
                program = m.group("name")
                continue
            m = VERSION.match(text)
            if m:
                parsed.tool_version = m.group("version")
                continue
            m = CONFIG.match(text)
            if m:
                config = {k: int(v) for k, v in m.groupdict().items()}
                continue
            m = RANK.match(text)
            if m:
                ranks.append({"rank": int(m.group("rank")), "host": m.group("host"), "device": int(m.group("dev")),
                              "gpu": m.group("gpu").strip()})
                continue
            row, m = b.first_match(FOOTER, text)
            if m:
                _, key, read = row
                footer[key] = read(source, line.no, m.group("value"))
                continue
            body = text.lstrip("#").split()
            if body and body[0] == "size" and "algbw" in body:
                if columns is not None:
                    raise source.error(line.no, "a second results header (two tests in one file)")
                columns, descriptors, groups = _header(source, line.no, body)
            continue
        if columns is None:
            raise source.error(line.no, "a results line before the 'size count type ...' header")
        if footer:
            raise source.error(line.no, "a results line after the bandwidth summary")
        tokens = text.split()
        expected = descriptors + 4 * len(groups)
        if len(tokens) == expected + 2 and re.fullmatch(r"\d{4}-\d\d-\d\d", tokens[-2]):
            tokens = tokens[:-2]  # a trailing timestamp column
        if len(tokens) != expected:
            raise source.error(line.no, f"expected {expected} columns ({' '.join(columns)}), found {len(tokens)}")
        size = b.integer(source, line.no, tokens[0], "size")
        b.require_increasing(source, line.no, last_size, size, "the results")
        last_size = size
        rows += 1
        base: Dict[str, Any] = {"size": size, "count": b.integer(source, line.no, tokens[1], "count")}
        for name, tok in zip(columns[2:descriptors], tokens[2:descriptors]):
            base[name] = int(tok) if name == "root" and re.fullmatch(r"-?\d+", tok) else tok
        if ranks:
            base["ranks"] = len(ranks)
        bench = _bench_name(program, source, base)
        for k, placement in enumerate(groups):
            t, a, bus, w = tokens[descriptors + 4 * k: descriptors + 4 * k + 4]
            wrong = None if w.upper() == "N/A" else b.finite(source, line.no, w, "#wrong")
            _measure(parsed, point, bench, base, placement, b.finite(source, line.no, t, "time"),
                     b.finite(source, line.no, a, "algbw"), b.finite(source, line.no, bus, "busbw"), wrong, line.no)
    if columns is None:
        raise source.error(None, "no 'size count type ... algbw busbw' results header")
    if rows == 0:
        raise source.truncated(reader.last_no, "the results table is empty (the run stopped or the file was cut)")
    if "avg_busbw_GBps" not in footer:
        upto = f", stopping at {last_size} of {config['max']} bytes (maxBytes)" if config.get("max") else ""
        parsed.mark_incomplete(f"no '# Avg bus bandwidth' line: the run stopped before the end{upto}; "
                               "the sizes it measured are kept")
    parsed.ranks = len(ranks) or None
    parsed.hosts = sorted({r["host"] for r in ranks})
    parsed.facts.update({"program": program, "config": config, "devices": ranks, **footer})
    if program:
        parsed.command = program
    return parsed


def _header(source: b.Source, no: int, body: List[str]):
    if "timestamp" in body:
        body = [c for c in body if c != "timestamp"]
    try:
        first_time = next(i for i, c in enumerate(body) if c in ("time", "cputime"))
    except StopIteration:
        raise source.error(no, "the results header has no time column") from None
    descriptors = body[:first_time]
    if descriptors[:3] != ["size", "count", "type"] or not set(descriptors[3:]) <= {"redop", "root"}:
        raise source.error(no, f"unexpected leading columns {' '.join(descriptors)}")
    rest = body[first_time:]
    groups = []
    while rest:
        chunk = rest[:4]
        if len(chunk) < 4 or chunk[0] not in ("time", "cputime") or chunk[1:3] != ["algbw", "busbw"] or chunk[3] not in ("#wrong", "error"):
            raise source.error(no, "expected 'time algbw busbw #wrong' groups in the results header "
                                   "(per-iteration columns are not supported)")
        groups.append("out_of_place" if not groups else "in_place")
        rest = rest[4:]
    if len(groups) not in (1, 2):
        raise source.error(no, "expected out-of-place and in-place column groups")
    return body, len(descriptors), groups


def _bench_name(program: Optional[str], source: b.Source, base: Dict[str, Any]) -> str:
    coll = collective(program or "") or collective(source.name)
    if coll is None:
        raise source.error(None, "cannot tell which collective was measured: the file does not say (nccl-tests "
                                 "before 2.13 do not print it); name the file after the program, e.g. "
                                 "all_reduce_perf.txt")
    return f"nccl.{coll}"


# -- JSON ------------------------------------------------------------------------------


def _parse_json(source: b.Source, allow_truncated: bool) -> b.ParsedRun:
    parsed = b.ParsedRun(format="nccl", source=source, tool="NCCL-tests")
    point = b.PointFactory(parsed)
    doc = b.load_json(source, "JSON report")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise source.error(None, "an NCCL-tests JSON report needs a 'results' list")
    args = doc.get("args") if isinstance(doc.get("args"), list) else []
    program = str(args[0]) if args else None
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    devices = config.get("devices") if isinstance(config.get("devices"), list) else []
    devices = [d for d in devices if isinstance(d, dict)]
    hosts = sorted({str(d.get("hostname")) for d in devices if d.get("hostname")})
    last: Optional[int] = None
    for i, rec in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(rec, dict):
            raise source.error(None, f"{where} is not an object")
        size = rec.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise source.error(None, f"{where}.size: expected a whole number, found {size!r}")
        if last is not None and size <= last:
            raise source.error(None, f"{where}: size {size} after {last} (sizes must increase)")
        last = size
        base: Dict[str, Any] = {"size": size}
        if isinstance(rec.get("count"), int) and not isinstance(rec.get("count"), bool):
            base["count"] = rec["count"]
        for key in ("type", "redop"):
            if isinstance(rec.get(key), str):
                base[key] = rec[key].strip()
        root = str(rec.get("root", "")).strip()
        if re.fullmatch(r"-?\d+", root):
            base["root"] = int(root)
        if devices:
            base["ranks"] = len(devices)
        bench = _bench_name(program or rec.get("experiment_name"), source, base)
        placements = 0
        for placement in ("out_of_place", "in_place"):
            res = rec.get(placement)
            if res is None:
                continue
            if not isinstance(res, dict):
                raise source.error(None, f"{where}.{placement} is not an object")
            placements += 1
            t = res.get("time", res.get("cpu_time"))
            wrong = res.get("nwrong")
            _measure(parsed, point, bench, base, placement, b.json_number(source, None, t, f"{where}.{placement}.time"),
                     b.json_number(source, None, res.get("alg_bw"), f"{where}.{placement}.alg_bw"),
                     b.json_number(source, None, res.get("bus_bw"), f"{where}.{placement}.bus_bw"),
                     None if wrong is None else b.json_number(source, None, wrong, f"{where}.{placement}.nwrong"), None)
        if not placements:
            raise source.error(None, f"{where} has neither out_of_place nor in_place results")
    if "end_time" not in doc:
        parsed.mark_incomplete("the report has no end_time: the run did not finish; the sizes it measured are kept")
    parsed.ranks = len(devices) or None
    parsed.hosts = hosts
    parsed.command = " ".join(str(a) for a in args) if args else None
    avg = doc.get("average_bus_bandwidth") if isinstance(doc.get("average_bus_bandwidth"), dict) else {}
    parsed.facts.update({"program": program, "json_version": doc.get("version"), "devices": devices,
                    "config": {k: v for k, v in config.items() if k != "devices"},
                    "avg_busbw_GBps": avg.get("bandwidth"), "nccl_version": doc.get("nccl_version"),
                    "start_time": doc.get("start_time"),
                    "end_time": doc.get("end_time")})
    return parsed


FORMAT = Importer(name="nccl", title="NCCL-tests output", detect=detect, parse=parse)
