"""Intel MPI Benchmarks (IMB-MPI1, IMB-NBC, ...) text output: every benchmark section.

Each section starts ``# Benchmarking PingPong`` (or ``Multi-PingPong``), says
``# #processes = N``, then prints a column header and one line per message size:
``#bytes #repetitions t[usec] Mbytes/sec`` (PingPong), ``t_min[usec] t_max[usec]
t_avg[usec] [Mbytes/sec]`` (PingPing, Sendrecv, Exchange, collectives),
``Mbytes/sec Msg/sec`` (Uniband, Biband), no ``#bytes`` for Barrier. The same benchmark
appears once per process count.

Benchmark names are the native engine's where the measurement is the same: PingPong is
``latency`` (a blocking ping-pong, half the round trip; its Mbytes/sec becomes that
benchmark's ``bandwidth`` metric, one message in flight, not the windowed ``bw``), the
collectives are ``allreduce``, ``bcast``, ``barrier``, ...; the others take IMB's name in
lower case (``pingping``, ``sendrecv``, ``exchange``, ``uniband``, ``biband``,
``multi_pingpong``, ``iallreduce``). Metrics and units are the project's: times as
``latency`` in us (collectives: t_avg in value/mean, t_min/t_max in min/max),
``bandwidth``/``bibandwidth`` in decimal MB/s, ``message_rate`` in msg/s.

IMB ends a finished run with ``# All processes entering MPI_Finalize``; without it the
run is stored ``interrupted`` with the sections it completed.

Units: IMB 2017 and later define Mbytes/sec as 1e6 B/s (``MEGA = 1.0/1e6`` in
IMB_output.c); IMB 4.1 and older used 2^20 B/s (``MEGA = 1.0/1048576.0``). Those
older files are converted (MiB/s -> MB/s) and the conversion recorded; a file that does
not say its version is taken as the modern definition, and the run says so.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from fabricbench.importers import Importer
from fabricbench.importers import base as b

VERSION = re.compile(r"Intel\s*\(R\)\s*MPI\s+Benchmarks?(?:\s+Suite)?\s+V?(?P<version>\d[\w.]*(?:\s+Update\s+\d+)?)", re.I)
SECTION = re.compile(r"^#\s*Benchmarking\s+(?P<name>[A-Za-z][\w\-]*)\s*$")
PROCESSES = re.compile(r"^#\s*#processes\s*=\s*(?P<n>\d+)")
IDLE = re.compile(r"^#\s*\(\s*(?P<n>\d+)\s+additional process(?:es)?\s+waiting")
GROUPS = re.compile(r"^#\s*\(\s*(?P<g>\d+)\s+groups\s+of\s+(?P<n>\d+)\s+processes")
MODE = re.compile(r"^#\s*MODE:\s*(?P<mode>[\w\-]+)")
FINALIZE = "All processes entering MPI_Finalize"  # IMB's last line of a complete run
FAILURE = re.compile(r"(time-out|out-of-mem|int-overflow)", re.I)

COLUMNS = {
    "group": "group",
    "#bytes": "size",
    "#repetitions": "repetitions",
    "t[usec]": "t",
    "t_min[usec]": "t_min",
    "t_max[usec]": "t_max",
    "t_avg[usec]": "t_avg",
    "mbytes/sec": "mbps",
    "msg/sec": "rate",
    "defects": "defects",
    "t_ovrl[usec]": "t_ovrl",
    "t_pure[usec]": "t_pure",
    "t_cpu[usec]": "t_cpu",
    "overlap[%]": "overlap",
}


def benchmark_name(name: str) -> str:
    """The canonical name of an IMB benchmark (see the module docstring)."""
    if name == "PingPong":
        return "latency"
    return b.slug(name)


def detect(source: b.Source) -> int:
    score = 0
    for text in source.head[:400]:
        if VERSION.search(text):
            return 95
        if SECTION.match(text.strip()):
            score = max(score, 60)
        if "#repetitions" in text:
            score = max(score, 50 if score < 60 else 80)
    return score


def mbyte_definition(version: Optional[str]) -> Optional[str]:
    """'MiB' for IMB 4.1 and older (2^20 B/s), None (already decimal) for 2017 and later."""
    if not version:
        return None
    m = re.match(r"(\d+)", version)
    if m and int(m.group(1)) < 2000:
        return "MiB"
    return None


class Section:
    def __init__(self, name: str, line: int):
        self.name = name
        self.line = line
        self.ranks: Optional[int] = None
        self.idle: Optional[int] = None
        self.groups: Optional[int] = None
        self.mode: Optional[str] = None
        self.roles: Optional[List[str]] = None
        self.labels: List[str] = []
        self.rows = 0
        self.last_size: Optional[int] = None
        self.last_group: Optional[int] = None


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "imb", "Intel MPI Benchmarks", allow_truncated)
    m = None
    for text in source.head[:60]:
        m = VERSION.search(text)
        if m:
            break
    parsed.tool_version = m.group("version").strip() if m else None
    convert = mbyte_definition(parsed.tool_version)
    if parsed.tool_version is None:
        parsed.warnings.append("IMB version not stated; Mbytes/sec taken as 1e6 B/s (IMB 2017 and later)")
    if convert:
        parsed.conversions["MiB/s"] = f"IMB {parsed.tool_version} Mbytes/sec is 2^20 B/s; x{b.MIB_PER_S} to MB/s"
    user_lengths = any("Message lengths were user defined" in t for t in source.head[:200])

    section: Optional[Section] = None
    sections: List[Dict[str, Any]] = []
    finalized = False
    expect_command = False

    def close(s: Optional[Section]) -> None:
        if s is None:
            return
        if s.roles is None or s.rows == 0:
            raise source.truncated(s.line, f"the {s.name} section has no results (the run stopped or the file was cut)")
        sections.append({"benchmark": s.name, "processes": s.ranks, "line": s.line, "points": s.rows})

    for line in reader:
        text = line.text.strip()
        if not text or b.NOISE.match(text):
            continue
        if text.startswith("#"):
            if FINALIZE in text:
                finalized = True
                continue
            if "Calling sequence was" in text:
                expect_command = True
                continue
            if expect_command and text.strip("# "):
                parsed.command = text.lstrip("#").strip()
                expect_command = False
                continue
            sec = SECTION.match(text)
            if sec:
                close(section)
                section = Section(sec.group("name"), line.no)
                continue
            if section is None:
                continue
            p = PROCESSES.match(text)
            if p:
                section.ranks = b.integer(source, line.no, p.group("n"), "#processes", minimum=1)
                continue
            g = GROUPS.match(text)
            if g:
                section.groups = b.integer(source, line.no, g.group("g"), "groups", minimum=1)
                section.ranks = b.integer(source, line.no, g.group("n"), "processes", minimum=1)
                continue
            i = IDLE.match(text)
            if i:
                section.idle = int(i.group("n"))
                continue
            mo = MODE.match(text)
            if mo:
                section.mode = mo.group("mode")
                continue
            if text.startswith("#bytes") or text.startswith("#repetitions"):
                _header(source, section, line.no, text)
            continue  # separators and other comments
        if section is None:
            raise source.error(line.no, "a results line before any '# Benchmarking ...' section")
        if section.roles is None:
            first = text.split()[0]
            if first.lower() in COLUMNS and (first.lower() != "group" or "#repetitions" in text):
                _header(source, section, line.no, text)
                continue
            raise source.error(line.no, f"a results line before the column header of the {section.name} section")
        tokens = text.split()
        if tokens and tokens[0].lower() in COLUMNS:
            raise source.error(line.no, f"a second column header in the {section.name} section")
        _row(source, parsed, point, section, line.no, tokens, convert, user_lengths)
    close(section)
    if not sections:
        raise source.error(None, "no '# Benchmarking ...' section found")
    if not finalized:
        parsed.mark_incomplete("no '# All processes entering MPI_Finalize' line: the run stopped before the end "
                               f"(after line {reader.last_no}); the sections it completed are kept")
    parsed.facts = {"sections": sections, "mbytes_per_sec": "2^20 B/s" if convert else "1e6 B/s"}
    return parsed


def _header(source: b.Source, section: Section, no: int, text: str) -> None:
    if section.roles is not None:
        raise source.error(no, f"a second column header in the {section.name} section")
    labels = text.split()
    roles = []
    for label in labels:
        role = COLUMNS.get(label.lower())
        if role is None:
            raise source.error(no, f"unknown IMB column {label!r}")
        roles.append(role)
    if len(set(roles)) != len(roles):
        raise source.error(no, "a column appears twice in the header")
    if "repetitions" not in roles or not ({"t", "t_avg", "mbps", "rate", "t_ovrl", "t_pure"} & set(roles)):
        raise source.error(no, "an IMB header needs #repetitions and a time, bandwidth or rate column")
    section.labels = labels
    section.roles = roles


def _row(source: b.Source, parsed: b.ParsedRun, point: b.PointFactory, s: Section, no: int, tokens: List[str],
         convert: Optional[str], user_lengths: bool) -> None:
    roles = s.roles or []
    if FAILURE.search(" ".join(tokens)) and len(tokens) != len(roles):
        parsed.warnings.append(f"{source.name}:{no}: {s.name} reported a failed sample: {' '.join(tokens)[:120]}")
        return
    if len(tokens) != len(roles):
        raise source.error(no, f"expected {len(roles)} columns ({' '.join(s.labels)}), found {len(tokens)}")
    v: Dict[str, Any] = {}
    for role, label, tok in zip(roles, s.labels, tokens):
        if role in ("size", "repetitions", "group"):
            v[role] = b.integer(source, no, tok, label)
        elif role == "overlap":
            v[role] = b.finite(source, no, tok, label, minimum=None)
        else:
            v[role] = b.finite(source, no, tok, label)
    size = v.get("size", 0)
    group = v.get("group")
    if "size" in v and not user_lengths:
        if group is not None and group != s.last_group:
            s.last_size = None
        b.require_increasing(source, no, s.last_size, size, f"the {s.name} section")
    elif "size" not in v and s.rows and group is None:
        raise source.error(no, f"the {s.name} section has no #bytes column, so it has a single result line")
    s.last_size = size
    s.last_group = group
    s.rows += 1

    bench = benchmark_name(s.name)
    params: Dict[str, Any] = {"size": size}
    if s.ranks:
        params["ranks"] = s.ranks
    if group is not None:
        params["group"] = group
    if s.groups:
        params["groups"] = s.groups
    if s.mode:
        params["mode"] = s.mode.lower()
    detail: Dict[str, Any] = {}
    if "defects" in v:
        detail["defects"] = v["defects"]
    reps = v["repetitions"] or None

    if "t" in v:
        point(bench, dict(params), "latency", "us", v["t"], no, detail=dict(detail), mean=v["t"], iterations=reps)
    elif "t_avg" in v:
        point(bench, dict(params), "latency", "us", v["t_avg"], no, detail=dict(detail), mean=v["t_avg"],
              min=v.get("t_min"), max=v.get("t_max"), iterations=reps)
    elif "t_ovrl" in v or "t_pure" in v:
        nbc = {k: v[k] for k in ("t_pure", "t_cpu", "overlap") if k in v}
        nbc.update(detail)
        value = v.get("t_ovrl", v.get("t_pure"))
        point(bench, dict(params), "latency", "us", value, no, detail=nbc, mean=value, iterations=reps)
    if "mbps" in v and size > 0:  # a 0-byte message moves nothing: IMB's 0.00 Mbytes/sec is no measurement
        metric = "bibandwidth" if s.name.lower().endswith("biband") else "bandwidth"
        value = b.scale(v["mbps"], b.MIB_PER_S) if convert else v["mbps"]
        point(bench, dict(params), metric, "MB/s", value, no, converted_from="MiB/s" if convert else None,
              detail=dict(detail), mean=value, iterations=reps)
    if "rate" in v:
        point(bench, dict(params), "message_rate", "msg/s", v["rate"], no, detail=dict(detail), mean=v["rate"],
              iterations=reps)


FORMAT = Importer(name="imb", title="Intel MPI Benchmarks output", detect=detect, parse=parse)
