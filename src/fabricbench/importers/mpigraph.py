"""mpiGraph output: the Send and Recv bandwidth matrices between every pair of ranks.

mpiGraph (LLNL) prints ``START mpiGraph v1.5``, its parameters (``MsgSize``, ``Times``,
``Window``, ``Procs``), progress lines, then for sends and for receives a max/avg line
and an N x N tab-separated matrix whose rows are ``host:rank to`` (Send) or
``host:rank from`` (Recv) and whose columns are ``host:rank``; it ends ``END mpiGraph``.
Its MB/s is ``size * 1e6 / (1024*1024)`` per microsecond, i.e. MiB/s (2^20 B/s);
values are converted to decimal MB/s and the conversion recorded.

Each off-diagonal cell becomes one measurement of benchmark ``allpairs``, metric
``bandwidth`` with params ``{"size", "src", "dst", "src_host", "dst_host",
"direction", "ranks"}``: in the Send matrix row i / column j is rank i sending to
rank j (src=i, dst=j); in the Recv matrix row i / column j is rank i receiving from
rank j (src=j, dst=i). The native engine's all-pairs test uses the same shape.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from fabricbench.importers import Importer
from fabricbench.importers import base as b

START = re.compile(r"^START mpiGraph(?:\s+v(?P<version>\S+))?\s*$")
PARAM = re.compile(r"^(?P<key>MsgSize|Times|Window|Procs)\s+(?P<value>\S+)\s*$")
STAT = re.compile(r"^(?P<dir>Send|Recv)\s+(?P<what>max|avg)\s+(?P<value>\S+)\s*$")
PROGRESS = re.compile(r"^\d+ of \d+ \([\d.]+%\)$")
CELL_HOST = re.compile(r"^(?P<host>.*):(?P<rank>\d+)$")


def detect(source: b.Source) -> int:
    for text in source.head[:50]:
        if START.match(text.strip()):
            return 95
    if any(t.startswith("Send\t") for t in source.head) and any(t.startswith("Recv\t") for t in source.head):
        return 60
    return 0


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "mpigraph", "mpiGraph", allow_truncated)
    params: Dict[str, int] = {}
    stats: Dict[str, float] = {}
    hosts: Optional[List[str]] = None
    matrices: Dict[str, int] = {}
    started = ended = False

    for line in reader:
        raw = line.text
        text = raw.strip()
        if not text or b.NOISE.match(text):
            continue  # blank lines, launcher messages ("srun: ...", "[host:pid] ...")
        s = START.match(text)
        if s:
            if started:
                raise source.error(line.no, "a second 'START mpiGraph' (two runs in one file)")
            started = True
            parsed.tool_version = s.group("version")
            continue
        if not started:
            continue  # launcher messages before the start
        if text == "END mpiGraph":
            ended = True
            break
        p = PARAM.match(text)
        if p:
            key = p.group("key")
            if key in params:
                raise source.error(line.no, f"{key} given twice")
            params[key] = b.integer(source, line.no, p.group("value"), key, minimum=0 if key == "MsgSize" else 1)
            continue
        if PROGRESS.match(text) or text == "Gathering results":
            continue
        st = STAT.match(text)
        if st:
            stats[f"{st.group('dir').lower()}_{st.group('what')}"] = b.scale(b.finite(source, line.no, st.group("value"), text.split()[0] + " " + st.group("what")), b.MIB_PER_S)
            continue
        if raw.startswith("Send\t") or raw.startswith("Recv\t") or text in ("Send", "Recv"):
            direction = "send" if text.startswith("Send") else "recv"
            if direction in matrices:
                raise source.error(line.no, f"a second {text.split()[0]} matrix")
            if "Procs" not in params or "MsgSize" not in params:
                raise source.error(line.no, "a matrix before the MsgSize and Procs lines")
            cols = _column_hosts(source, line.no, raw, params["Procs"])
            if hosts is None:
                hosts = cols
            elif cols != hosts:
                raise source.error(line.no, "the Recv matrix names other hosts than the Send matrix")
            _matrix(source, reader, point, direction, hosts, params, line.no)
            matrices[direction] = line.no
            continue
        raise source.error(line.no, f"unexpected line in mpiGraph output: {text[:60]!r}")

    if not started:
        raise source.error(None, "no 'START mpiGraph' line")
    missing = [d for d in ("send", "recv") if d not in matrices]
    if not ended or missing:
        what = f"no {' and '.join(d.capitalize() for d in missing)} matrix" if missing else "no 'END mpiGraph' line"
        if not matrices:
            raise source.truncated(reader.last_no, f"{what} (the run stopped or the file was cut)")
        parsed.mark_incomplete(f"{what}: the run stopped before the end; the complete matrix is kept")
    parsed.conversions["MiB/s"] = f"mpiGraph MB/s is 2^20 B/s; x{b.MIB_PER_S} to MB/s"
    parsed.ranks = params.get("Procs")
    parsed.hosts = sorted(set(hosts or []))
    parsed.facts = {"msg_size": params.get("MsgSize"), "times": params.get("Times"), "window": params.get("Window"),
                    "procs": params.get("Procs"), "rank_hosts": hosts, "summary_MBps": stats}
    return parsed


def _column_hosts(source: b.Source, no: int, raw: str, procs: int) -> List[str]:
    cells = [c for c in raw.rstrip("\n").split("\t")[1:] if c.strip()]
    if len(cells) != procs:
        raise source.error(no, f"the matrix header names {len(cells)} ranks, Procs says {procs}")
    hosts = []
    for j, cell in enumerate(cells):
        m = CELL_HOST.match(cell.strip())
        if not m or int(m.group("rank")) != j:
            raise source.error(no, f"column {j + 1} of the matrix header should be host:{j}, found {cell.strip()!r}")
        hosts.append(m.group("host"))
    return hosts


def _matrix(source: b.Source, reader: b.LineReader, point: b.PointFactory, direction: str, hosts: List[str],
            params: Dict[str, int], header_no: int) -> None:
    n = len(hosts)
    word = "to" if direction == "send" else "from"
    base: Dict[str, Any] = {"size": params["MsgSize"], "ranks": n}
    detail = {"times": params.get("Times"), "window": params.get("Window")}
    for i in range(n):
        if reader.at_end():
            raise source.truncated(reader.last_no, f"the {direction.capitalize()} matrix ends after {i} of {n} rows")
        line = reader.next()
        cells = line.text.rstrip("\n").split("\t")
        label = cells[0].strip()
        m = re.match(rf"^(?P<host>.*):(?P<rank>\d+) {word}$", label)
        if not m or int(m.group("rank")) != i or m.group("host") != hosts[i]:
            raise source.error(line.no, f"row {i + 1} of the {direction.capitalize()} matrix should start "
                                        f"'{hosts[i]}:{i} {word}', found {label[:60]!r}")
        values = [c for c in cells[1:] if c.strip()]
        if len(values) != n:
            raise source.error(line.no, f"expected {n} values in this matrix row, found {len(values)}")
        for j, tok in enumerate(values):
            val = b.finite(source, line.no, tok.strip(), f"{direction} bandwidth {i}->{j}" if direction == "send"
                         else f"recv bandwidth {j}->{i}")
            if i == j:
                continue
            src, dst = (i, j) if direction == "send" else (j, i)
            mbps = b.scale(val, b.MIB_PER_S)
            p = dict(base, src=src, dst=dst, src_host=hosts[src], dst_host=hosts[dst], direction=direction)
            point("allpairs", p, "bandwidth", "MB/s", mbps, line.no, converted_from="MiB/s", detail=dict(detail),
                  mean=mbps, n=params.get("Times"))


FORMAT = Importer(name="mpigraph", title="mpiGraph output", detect=detect, parse=parse)
