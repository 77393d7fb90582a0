"""HPC Challenge (hpccoutf.txt): the summary section and the network detail values.

HPCC ends its output with ``Begin of Summary section.`` ... ``End of Summary section.``,
one ``key=value`` per line. Every key becomes part of the run's provenance; each
performance figure becomes one measurement of benchmark ``hpcc`` with
``params={"test": "<summary key>", "ranks": N}`` in the project's units:

    HPL_Tflops                  -> flops        Gflop/s  (x1000, from Tflop/s)
    *DGEMM_Gflops, *FFT_Gflops  -> flops        Gflop/s
    PTRANS_GBs, *STREAM_*       -> bandwidth    MB/s     (x1000, from GB/s = 1e9 B/s)
    *RandomAccess*_GUPs         -> update_rate  GUP/s
    *Latency_usec               -> latency      us
    *Bandwidth_GBytes           -> bandwidth    MB/s     (x1000, from GB/s; HPCC's
                                                          b_eff says 1 MB/s = 10**6 B/s)

The ping-pong and ring figures also carry their message size (``Benchmark conditions``:
8 bytes for latency, 2,000,000 for bandwidth) and, for the average ping-pong values,
min/max over the measured pairs. When the summary is missing (HPCC died), the
completed sections still give their results if truncated input is allowed; the
HPCC driver uses this to keep what a failed run measured.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.importers import Importer
from fabricbench.importers import base as b

BEGIN_SUMMARY = "Begin of Summary section."
END_SUMMARY = "End of Summary section."
KEYVAL = re.compile(r"^(?P<key>[A-Za-z_][\w.]*)=(?P<value>.*)$")
SECTION = re.compile(r"^(Begin|End) of (\w+) section\.$")
HPL_RESULT = re.compile(r"^W[RC]\S*\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)\s+(?P<time>[\d.eE+\-]+)\s+(?P<gflops>[\d.eE+\-]+)\s*$")
PTRANS_WALL = re.compile(r"^WALL\s+.*\s(?P<gbs>[\d.eE+\-]+)\s+[\d.eE+\-]+\s*$")
MESSAGE_SIZE = re.compile(r"The (latency|bandwidth)\s+measurements were done with\s+(\d+)\s+bytes")
VERSION = re.compile(r"HPC Challenge Benchmark version\s+(\S+)")

_STREAM = " ".join(f"{kind}STREAM_{op}" for kind in ("Star", "Single") for op in ("Copy", "Scale", "Add", "Triad"))
_KINDS = {  # (metric, unit, factor to it, converted from) -> the summary keys in that unit
    ("flops", "Gflop/s", 1000.0, "Tflop/s"): "HPL_Tflops",
    ("flops", "Gflop/s", 1.0, None): "StarDGEMM_Gflops SingleDGEMM_Gflops MPIFFT_Gflops StarFFT_Gflops SingleFFT_Gflops",
    ("update_rate", "GUP/s", 1.0, None): "MPIRandomAccess_GUPs MPIRandomAccess_LCG_GUPs StarRandomAccess_GUPs "
                                        "SingleRandomAccess_GUPs StarRandomAccess_LCG_GUPs SingleRandomAccess_LCG_GUPs",
    ("bandwidth", "MB/s", b.GB_PER_S, "GB/s"): "PTRANS_GBs " + _STREAM + " MinPingPongBandwidth_GBytes "
                                              "MaxPingPongBandwidth_GBytes AvgPingPongBandwidth_GBytes "
                                              "NaturallyOrderedRingBandwidth_GBytes RandomlyOrderedRingBandwidth_GBytes",
    ("latency", "us", 1.0, None): "MaxPingPongLatency_usec MinPingPongLatency_usec AvgPingPongLatency_usec "
                                  "RandomlyOrderedRingLatency_usec NaturallyOrderedRingLatency_usec",
}
# summary key -> (metric, unit, factor, converted_from)
FIGURES: Dict[str, Tuple[str, str, float, Optional[str]]] = {key: kind for kind, keys in _KINDS.items() for key in keys.split()}

# The headline figure of each of HPCC's seven tests: an HPCC summary must have these.
REQUIRED = ("HPL_Tflops", "StarDGEMM_Gflops", "StarSTREAM_Triad", "PTRANS_GBs", "MPIRandomAccess_GUPs",
            "MPIFFT_Gflops", "RandomlyOrderedRingBandwidth_GBytes", "RandomlyOrderedRingLatency_usec")

# What each section prints when it completes, used when the summary is missing: the
# section, the summary key, the factor from the printed unit to the summary's, and the
# line (NUM stands for the number).
_SECTION_LINES = r"""
MPIRandomAccess     | MPIRandomAccess_GUPs                 | 1     | ^\s*NUM\s+Billion\(10\^9\) Updates\s+per second
MPIRandomAccess_LCG | MPIRandomAccess_LCG_GUPs             | 1     | ^\s*NUM\s+Billion\(10\^9\) Updates\s+per second
StarRandomAccess    | StarRandomAccess_GUPs                | 1     | ^Average GUP/s\s+NUM
SingleRandomAccess  | SingleRandomAccess_GUPs              | 1     | ^Single GUP/s\s+NUM
StarDGEMM           | StarDGEMM_Gflops                     | 1     | ^Average Gflop/s\s+NUM
SingleDGEMM         | SingleDGEMM_Gflops                   | 1     | ^Single DGEMM Gflop/s\s+NUM
StarSTREAM          | StarSTREAM_Triad                     | 1     | ^Average Triad GB/s\s+NUM
StarSTREAM          | StarSTREAM_Copy                      | 1     | ^Average Copy GB/s\s+NUM
SingleSTREAM        | SingleSTREAM_Triad                   | 1     | ^Single STREAM Triad GB/s\s+NUM
MPIFFT              | MPIFFT_Gflops                        | 1     | ^Gflop/s:\s+NUM
StarFFT             | StarFFT_Gflops                       | 1     | ^Average Gflop/s\s+NUM
LatencyBandwidth    | MaxPingPongLatency_usec              | 1000  | ^Max Ping Pong Latency:\s+NUM\s+msecs
LatencyBandwidth    | RandomlyOrderedRingLatency_usec      | 1000  | ^Randomly Ordered Ring Latency:\s+NUM\s+msecs
LatencyBandwidth    | MinPingPongBandwidth_GBytes          | 0.001 | ^Min Ping Pong Bandwidth:\s+NUM\s+MB/s
LatencyBandwidth    | NaturallyOrderedRingBandwidth_GBytes | 0.001 | ^Naturally Ordered Ring Bandwidth:\s+NUM\s+MB/s
LatencyBandwidth    | RandomlyOrderedRingBandwidth_GBytes  | 0.001 | ^Randomly\s+Ordered Ring Bandwidth:\s+NUM\s+MB/s
"""
SECTION_FIGURES = [(section, re.compile(line.replace("NUM", r"([\d.eE+\-]+)")), key, float(factor))
                   for section, key, factor, line in (map(str.strip, row.split("|")) for row in _SECTION_LINES.strip().splitlines())]


def detect(source: b.Source) -> int:
    if "HPC Challenge Benchmark" in "\n".join(source.head[:40]):
        return 95
    if any(t.strip() == BEGIN_SUMMARY for t in source.head):
        return 80
    return 0


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, _ = b.begin_text_parse(source, "hpcc", "HPC Challenge", allow_truncated)
    m = next((VERSION.search(t) for t in source.head[:20] if VERSION.search(t)), None)
    parsed.tool_version = m.group(1) if m else None
    host = next((re.match(r"^Hostname:\s*'([^']*)'", t) for t in source.head[:20] if t.startswith("Hostname:")), None)
    if host and host.group(1):
        parsed.hosts = [host.group(1)]

    lines = _whole(source, reader, allow_truncated)
    sizes = _message_sizes(source, lines)
    begin = [i for i, t in enumerate(lines) if t.strip() == BEGIN_SUMMARY]
    if len(begin) > 1:
        raise source.error(begin[1] + 1, "a second summary section")
    if begin:
        summary, lines_of = _summary(source, lines, begin[0], allow_truncated, parsed)
    else:
        parsed.mark_incomplete("no 'Begin of Summary section.': HPCC did not finish; the tests it completed are kept")
        summary, lines_of = _from_sections(source, lines)
    parsed.facts = {"summary": summary, "message_sizes": sizes}
    _points(source, parsed, summary, lines_of, sizes)
    hpl = _hpl_detail(source, lines)
    if hpl:
        parsed.facts["hpl"] = hpl
    if str(summary.get("Success", "1")).strip() == "0":
        parsed.warnings.append("HPCC reports Success=0: a test failed its verification")
    return parsed


def _summary(source: b.Source, lines: List[str], start: int, allow_truncated: bool, parsed: b.ParsedRun):
    summary: Dict[str, Any] = {}
    lines_of: Dict[str, int] = {}
    end = None
    for i in range(start + 1, len(lines)):
        text = lines[i].strip()
        if text == END_SUMMARY:
            end = i
            break
        if not text:
            continue
        kv = KEYVAL.match(text)
        if not kv:
            raise source.error(i + 1, f"expected key=value in the summary section, found {text[:60]!r}")
        key, value = kv.group("key"), kv.group("value").strip()
        if key in summary:
            raise source.error(i + 1, f"summary key {key} appears twice")
        summary[key] = _scalar(value)
        if isinstance(summary[key], int) and abs(summary[key]) > b.INT64_MAX:
            raise source.error(i + 1, f"{key}={value} is outside the range the database can store (64-bit integers)")
        lines_of[key] = i + 1
    if end is None:
        parsed.mark_incomplete("the summary section has no 'End of Summary section.' line: HPCC stopped while "
                               "writing it; the values it has are kept")
    else:
        missing = [k for k in REQUIRED if k not in summary]
        if missing:
            raise source.error(start + 1, f"the summary section lacks {', '.join(missing)}")
    return summary, lines_of


def _scalar(text: str) -> Any:
    try:
        if re.fullmatch(r"[+\-]?\d+", text):
            return int(text)
        return float(text) if re.fullmatch(r"[+\-]?(\d+\.?\d*|\.\d+)([eE][+\-]?\d+)?", text) else text
    except ValueError:
        return text


def _from_sections(source: b.Source, lines: List[str]):
    """The results of the sections that completed (Begin ... End), when there is no summary."""
    summary: Dict[str, Any] = {}
    lines_of: Dict[str, int] = {}
    current = None
    body: List[Tuple[int, str]] = []
    for i, raw in enumerate(lines):
        text = raw.strip()
        sec = SECTION.match(text)
        if sec and sec.group(1) == "Begin":
            current, body = sec.group(2), []
            continue
        if sec and sec.group(1) == "End" and current == sec.group(2):
            for name, pattern, key, factor in SECTION_FIGURES:
                if name != current:
                    continue
                for no, t in body:
                    hit = pattern.match(t)
                    if hit:
                        summary[key] = b.finite(source, no, hit.group(1), key) * factor
                        lines_of[key] = no
            if current == "PTRANS":
                walls = [(no, PTRANS_WALL.match(t)) for no, t in body if PTRANS_WALL.match(t)]
                if walls:
                    values = [b.finite(source, no, w.group("gbs"), "PTRANS GB/s") for no, w in walls]
                    summary["PTRANS_GBs"] = min(values)
                    lines_of["PTRANS_GBs"] = walls[0][0]
            if current == "HPL":
                for no, t in body:
                    hit = HPL_RESULT.match(t)
                    if hit:
                        summary["HPL_Tflops"] = b.finite(source, no, hit.group("gflops"), "HPL Gflops") / 1000.0
                        lines_of["HPL_Tflops"] = no
            current = None
            continue
        if current is not None:
            body.append((i + 1, text))
    return summary, lines_of


def _whole(source: b.Source, reader: b.LineReader, allow_truncated: bool) -> List[str]:
    """All lines (HPCC's output is small and read whole, bounded by WHOLE_TEXT_LIMIT); a cut-off
    last line is an error, or dropped with a note when truncated input is allowed."""
    lines = source.all_lines()
    if lines and not source.ends_with_newline and lines[-1].strip():
        if not allow_truncated:
            raise source.truncated(len(lines), "the last line has no end (the file looks cut off); "
                                               "use --allow-truncated to import what is complete")
        reader.truncated_note = f"line {len(lines)} was cut off and was dropped"
        lines.pop()
    return lines


def _message_sizes(source: b.Source, lines: List[str]) -> Dict[str, int]:
    sizes: Dict[str, int] = {}
    for no, text in enumerate(lines, 1):
        m = MESSAGE_SIZE.search(text)
        if m:
            sizes[m.group(1)] = b.integer(source, no, m.group(2), f"{m.group(1)} message size")
    return sizes


def _hpl_detail(source: b.Source, lines: List[str]) -> Optional[Dict[str, Any]]:
    for i, text in enumerate(lines):
        m = HPL_RESULT.match(text.strip())
        if m:
            passed = None
            for t in lines[i + 1:i + 4]:
                if "PASSED" in t:
                    passed = True
                elif "FAILED" in t:
                    passed = False
            n, nb, p, q = (b.integer(source, i + 1, m.group(k), k.upper()) for k in ("n", "nb", "p", "q"))
            return {"N": n, "NB": nb, "P": p, "Q": q,
                    "time_s": _scalar(m.group("time")), "gflops": _scalar(m.group("gflops")), "residual_passed": passed}
    return None


def _points(source: b.Source, parsed: b.ParsedRun, summary: Dict[str, Any], lines_of: Dict[str, int],
            sizes: Dict[str, int]) -> None:
    point = b.PointFactory(parsed)
    ranks = summary.get("CommWorldProcs")
    if isinstance(ranks, int) and ranks > 0:
        parsed.ranks = ranks
    else:
        ranks = None
    for key, (metric, unit, factor, converted) in FIGURES.items():
        if key not in summary:
            continue
        no = lines_of.get(key)
        raw = b.finite(source, no, str(summary[key]), key, minimum=None)
        if raw < 0:  # HPCC's mark for a test that did not run or did not finish
            parsed.warnings.append(f"{key}={summary[key]}: HPCC did not measure this test")
            continue
        value = b.scale(raw, factor)
        params: Dict[str, Any] = {"test": key}
        if ranks:
            params["ranks"] = ranks
        stats: Dict[str, Any] = {"mean": value}
        if key.endswith("_usec") and "latency" in sizes:
            params["size"] = sizes["latency"]
        if key.endswith("_GBytes") and "bandwidth" in sizes:
            params["size"] = sizes["bandwidth"]
        if key in ("AvgPingPongLatency_usec", "AvgPingPongBandwidth_GBytes"):
            lo_key, hi_key = key.replace("Avg", "Min"), key.replace("Avg", "Max")
            if lo_key in summary and hi_key in summary:
                stats["min"] = b.scale(b.finite(source, lines_of.get(lo_key), str(summary[lo_key]), lo_key), factor)
                stats["max"] = b.scale(b.finite(source, lines_of.get(hi_key), str(summary[hi_key]), hi_key), factor)
        if converted:
            parsed.conversions[converted] = {"Tflop/s": "x1000 to Gflop/s", "GB/s": "x1000 to MB/s (1 GB = 1e9 B)"}[converted]
        point("hpcc", params, metric, unit, value, no, converted_from=converted, **stats)


FORMAT = Importer(name="hpcc", title="HPCC hpccoutf.txt", detect=detect, parse=parse)
