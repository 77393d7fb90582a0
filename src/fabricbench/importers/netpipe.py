"""NetPIPE 3.x (NPtcp, NPmpi/NPopenmpi, ...): its ``np.out`` file or its screen output.

``np.out`` (``-o FILE``) has one line per message size: bytes, throughput in "Mbps" and
the one-way time in seconds (``%8d %lf %12.8lf``). NetPIPE's Mbps is
``bits / (time * 1024 * 1024)``: 2^20 bit/s, converted here to decimal MB/s. Its time is
half the round trip of a ping-pong (the best of its trials), so each size becomes two
measurements of benchmark ``latency`` (the engine's name for a blocking ping-pong):
``latency`` in us and ``bandwidth`` in MB/s (message size over one-way time, as IMB's
PingPong reports it; not the windowed ``bw``). Sizes are NetPIPE's own: powers of two and
their neighbours at +-3 bytes ("perturbations").

The screen output (``  0:       1 bytes   8642 times -->      0.90 Mbps in       8.49 usec``)
holds the same figures with two decimals and says more about the run (NPtcp's socket
buffer sizes, NPmpi's host of each rank). Neither form has an end marker, and NetPIPE
stops at a size it chooses (8 MiB + 3 by default, earlier when a test takes over a
second), so a run that was stopped early is recognised only by a cut-off last line.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List

from fabricbench.importers import Importer
from fabricbench.importers import base as b

NP_OUT = re.compile(r"^\s*(?P<bytes>\d+)\s+(?P<mbps>\d+\.\d+)\s+(?P<t>\d+\.\d+)\s*$")
INTEGRITY = re.compile(r"^\s*\d+\s+\d+\s*$")
SCREEN = re.compile(r"^\s*(?P<n>\d+):\s+(?P<bytes>\d+)\s+bytes\s+(?P<times>\d+)\s+times\s+-->\s+(?P<mbps>\S+)\s+Mbps"
                    r"\s+in\s+(?P<usec>\S+)\s+usec\s*$")
RANK_HOST = re.compile(r"^(?P<rank>\d+):\s+(?P<host>\S+)\s*$")
BUFFERS = re.compile(r"^Send and receive buffers are (\d+) and (\d+) bytes")


def detect(source: b.Source) -> int:
    lines = [t for t in source.head[:400] if t.strip()]
    if any(SCREEN.match(t) for t in lines[:60]) or any("Now starting the main loop" in t for t in lines[:20]):
        return 90
    first = lines[:5]
    if first and all(NP_OUT.match(t) for t in first):
        return 60
    return 0


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "netpipe", "NetPIPE", allow_truncated)
    parsed.conversions["Mibit/s"] = f"NetPIPE Mbps is 2^20 bit/s; x{b.MIBIT_PER_S} to MB/s"
    facts: Dict[str, Any] = {}
    hosts: List[str] = []
    layout = None
    for line in reader:
        text = line.text.strip()
        if not text or b.NOISE.match(text):
            continue
        screen = SCREEN.match(text)
        if screen:
            layout = _layout(source, line.no, layout, "screen")
            size = b.integer(source, line.no, screen.group("bytes"), "bytes")
            mbps = b.finite(source, line.no, screen.group("mbps"), "Mbps")
            usec = b.finite(source, line.no, screen.group("usec"), "usec")
            _points(point, size, mbps, usec, line.no, {"repeats": int(screen.group("times"))})
            continue
        np_out = NP_OUT.match(text)
        if np_out and layout != "screen":
            layout = _layout(source, line.no, layout, "np.out")
            size = b.integer(source, line.no, np_out.group("bytes"), "bytes")
            mbps = b.finite(source, line.no, np_out.group("mbps"), "Mbps")
            seconds = b.finite(source, line.no, np_out.group("t"), "time")
            _points(point, size, mbps, seconds * 1e6, line.no, None)
            continue
        if INTEGRITY.match(text):
            raise source.error(line.no, "an integrity-check run (NetPIPE -i) has no performance figures")
        host = RANK_HOST.match(text)
        if host and layout is None:
            hosts.append(host.group("host"))
            facts["module"] = "MPI"
            continue
        buffers = BUFFERS.match(text)
        if buffers:
            facts.update(module="TCP", send_buffer=int(buffers.group(1)), receive_buffer=int(buffers.group(2)))
            continue
        if layout == "np.out":
            raise source.error(line.no, f"expected 'bytes Mbps seconds', found {text[:60]!r}")
        if layout is None:
            facts.setdefault("preamble", []).append(text[:200])
            continue
        raise source.error(line.no, f"unexpected line in NetPIPE output: {text[:60]!r}")
    if layout is None:
        raise source.error(None, "no NetPIPE results (lines of 'bytes Mbps seconds' or 'N: bytes ... Mbps in ... usec')")
    facts["layout"] = layout
    parsed.facts = facts
    parsed.hosts = sorted(set(hosts))
    parsed.ranks = 2
    return parsed


def _layout(source: b.Source, no: int, current, new: str) -> str:
    if current is not None and current != new:
        raise source.error(no, "np.out lines and screen-output lines mixed in one file")
    return new


def _points(point: b.PointFactory, size: int, mbps: float, usec: float, no: int, detail) -> None:
    params = {"size": size, "ranks": 2}
    info = {"statistic": "best of NetPIPE's trials", **(detail or {})}
    point("latency", dict(params), "latency", "us", b.scale(usec, 1.0), no, detail=dict(info), min=b.scale(usec, 1.0))
    bw = b.scale(mbps, b.MIBIT_PER_S)
    point("latency", dict(params), "bandwidth", "MB/s", bw, no, converted_from="Mibit/s", detail=dict(info), max=bw)


FORMAT = Importer(name="netpipe", title="NetPIPE output", detect=detect, parse=parse)
