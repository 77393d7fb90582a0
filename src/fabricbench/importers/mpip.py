"""mpiP reports (``*.mpiP``): an MPI profile stored as fabricbench's own profiler stores one.

mpiP (LLNL) writes, at MPI_Finalize, a text report: ``@`` header lines (command, version,
times, one ``MPI Task Assignment`` per rank), then sections framed by dashed lines and
titled ``@--- ... ---``: ``MPI Time (seconds)`` (AppTime, MPITime, MPI% per task),
``Callsites: N`` (ID, stack level, file, line, parent function, MPI call), aggregate
top-twenty tables, ``Callsite Time statistics (all, milliseconds)`` (per call site and
rank: count, max, mean, min in ms; a ``*`` row sums the ranks), ``Callsite Message Sent
statistics (all, sent bytes)`` and for one-sided calls ``Callsite RMA statistics (all,
origin bytes)`` (count, max, mean, min, sum in bytes), and ``End of Report``.

The report becomes a run of kind ``profile`` with the JSON profile fabricbench's profiler
writes (native/profiler/README.md): ``rank_info`` from MPI Time, ``calls`` as
``[rank, "MPI_Xxx", size bin, count, bytes, time s, min s, max s]`` summed over the call
sites of a call, and the call sites themselves under ``callsites`` (file, line and
function where mpiP resolved them, else the address). So ``show-profile``, the report's
profile section and the what-if prediction read it like a profile made here.

What mpiP does not record is left empty or approximated, and the profile says so: no
communication matrix (``matrix`` layers are empty); bytes only for sends, collectives and
one-sided origins (a receive counts 0 bytes, where fabricbench counts the buffer posted);
no size histogram: a call site's calls go to the size bin of their bytes when min and max
agree, else to the bin of the mean; byte figures have mpiP's 4 significant digits. A
concise report (``mpiP -c``) or one without call-site detail has no per-rank counts and is
refused with the reason.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.importers import Importer
from fabricbench.importers import base as b

INTRO = re.compile(r"^@\s(?P<key>[A-Za-z][\w /]*?)\s*:\s?(?P<value>.*)$")
SECTION = re.compile(r"^@---\s+(?P<title>.*?)\s+-+\s*$")
DASHES = re.compile(r"^-{20,}\s*$")
TASK_ROW = re.compile(r"^\s*(?P<task>\d+|\*)\s+(?P<app>\S+)\s+(?P<mpi>\S+)\s+(?P<pct>\S+)\s*$")
SIZE_BINS = ("mpiP reports min, mean and max bytes per call site, not a histogram: a site's calls are in the bin "
             "of their size when min and max agree, else in the bin of the mean")


def detect(source: b.Source) -> int:
    head = [t.strip() for t in source.head[:40]]
    if head and head[0] == "@ mpiP":
        return 95
    if any(t.startswith("@--- MPI Time (seconds)") or t.startswith("@ Command :") for t in head):
        return 85
    return 0


def size_bin(nbytes: float) -> int:
    """fabricbench's size bin: 0 for 0 bytes, b for [2^(b-1), 2^b - 1]."""
    n = int(round(nbytes))
    return 0 if n <= 0 else n.bit_length()


class Report:
    """What the report says, section by section."""

    def __init__(self) -> None:
        self.intro: Dict[str, str] = {}
        self.hosts: Dict[int, str] = {}
        self.tasks: Dict[int, Tuple[float, float]] = {}  # rank -> (app s, mpi s)
        self.sites: Dict[int, Dict[str, Any]] = {}
        self.times: Dict[Tuple[int, int], Dict[str, Any]] = {}  # (site, rank) -> count, max, mean, min (ms), call
        self.site_totals: Dict[int, int] = {}  # site -> count of the '*' row
        self.bytes: Dict[Tuple[int, int], Dict[str, float]] = {}  # (site, rank) -> count, max, mean, min, sum
        self.ended = False
        self.concise = False


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "mpip", "mpiP", allow_truncated)
    rep = Report()
    section: Optional[str] = None
    header_seen = False
    for line in reader:
        text = line.text.rstrip()
        stripped = text.strip()
        if not stripped or DASHES.match(stripped):
            continue
        sec = SECTION.match(stripped)
        if sec:
            section, header_seen = _section_name(sec.group("title")), False
            if section == "end":
                rep.ended = True
                break
            if section == "concise":
                rep.concise = True
            continue
        if section is None:
            intro = INTRO.match(stripped)
            if intro:
                _intro(source, rep, line.no, intro.group("key").strip(), intro.group("value").strip())
            elif stripped != "@ mpiP":
                raise source.error(line.no, f"unexpected line in the mpiP report header: {stripped[:60]!r}")
            continue
        if not header_seen:
            header_seen = True  # every section's first line is its column header
            continue
        if section == "tasks":
            _task_row(source, rep, line.no, stripped)
        elif section == "callsites":
            _callsite_row(source, rep, line.no, stripped)
        elif section == "time":
            _time_row(source, rep, line.no, stripped)
        elif section in ("sent", "rma"):
            _bytes_row(source, rep, line.no, stripped)
        # other sections (aggregates, histograms, I/O) repeat what the per-site tables hold
    profile = _profile(source, parsed, rep, allow_truncated, reader.last_no)
    from fabricbench.importers.fbprofile import profile_measurements, profile_provenance

    for m in profile_measurements(profile):
        point(m.benchmark, m.params, m.metric, m.unit, m.value, None, detail=m.detail, n=m.n, mean=m.mean,
              min=m.min, max=m.max)
    parsed.kind = "profile"
    parsed.artifacts["profile"] = profile
    parsed.extra_provenance.update(profile_provenance(profile))
    parsed.ranks = profile["ranks"]
    parsed.hosts = sorted(set(profile["hosts"]))
    parsed.command = " ".join(profile["command"]) or None
    return parsed


def _section_name(title: str) -> str:
    t = title.lower()
    if t.startswith("mpi time"):
        return "tasks"
    if t.startswith("task time statistics") or "all callsites" in t:
        return "concise"
    if t.startswith("callsites"):
        return "callsites"
    if t.startswith("callsite time statistics"):
        return "time"
    if t.startswith("callsite message sent statistics"):
        return "sent"
    if t.startswith("callsite rma statistics"):
        return "rma"
    if t.startswith("end of report"):
        return "end"
    return "other"


def _intro(source: b.Source, rep: Report, no: int, key: str, value: str) -> None:
    if key == "MPI Task Assignment":
        parts = value.split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            raise source.error(no, f"expected 'MPI Task Assignment : RANK HOST', found {value[:60]!r}")
        rep.hosts[int(parts[0])] = parts[1].strip()
    else:
        rep.intro[key] = value


def _task_row(source: b.Source, rep: Report, no: int, text: str) -> None:
    m = TASK_ROW.match(text)
    if not m:
        raise source.error(no, f"expected 'Task AppTime MPITime MPI%' values, found {text[:60]!r}")
    if m.group("task") == "*":
        return
    rank = b.integer(source, no, m.group("task"), "Task")
    if rank in rep.tasks:
        raise source.error(no, f"task {rank} appears twice in the MPI Time table")
    rep.tasks[rank] = (b.finite(source, no, m.group("app"), "AppTime"), b.finite(source, no, m.group("mpi"), "MPITime"))


def _callsite_row(source: b.Source, rep: Report, no: int, text: str) -> None:
    tok = text.split()
    if len(tok) < 4 or not (tok[0].isdigit() and tok[1].isdigit()):
        raise source.error(no, f"expected 'ID Lev File/Address Line Parent_Funct MPI_Call', found {text[:60]!r}")
    site, level = int(tok[0]), int(tok[1])
    if tok[3].isdigit():  # resolved: file, line, function[, call]
        frame = {"file": tok[2], "line": int(tok[3]), "function": tok[4] if len(tok) > 4 else ""}
        call = tok[5] if len(tok) > 5 else None
    else:  # an address mpiP could not resolve: address, function[, call]
        frame = {"address": tok[2], "function": tok[3]}
        call = tok[4] if len(tok) > 4 else None
    entry = rep.sites.setdefault(site, {"site": site, "call": None, "frames": []})
    if level == 0 and call:
        entry["call"] = "MPI_" + call
    entry["frames"].append(frame)


def _time_row(source: b.Source, rep: Report, no: int, text: str) -> None:
    tok = text.split()
    if len(tok) != 9:
        raise source.error(no, f"expected 'Name Site Rank Count Max Mean Min App% MPI%', found {len(tok)} columns")
    call, site = "MPI_" + tok[0], b.integer(source, no, tok[1], "Site")
    count = b.integer(source, no, tok[3], "Count")
    if tok[2] == "*":
        rep.site_totals[site] = count
        return
    rank = b.integer(source, no, tok[2], "Rank")
    if (site, rank) in rep.times:
        raise source.error(no, f"site {site} rank {rank} appears twice in the time statistics")
    rep.times[(site, rank)] = {"call": call, "count": count, "line": no,
                               **{k: b.finite(source, no, v, k) for k, v in zip(("max", "mean", "min"), tok[4:7])}}


def _bytes_row(source: b.Source, rep: Report, no: int, text: str) -> None:
    tok = text.split()
    if len(tok) != 8:
        raise source.error(no, f"expected 'Name Site Rank Count Max Mean Min Sum', found {len(tok)} columns")
    if tok[2] == "*":
        return
    key = (b.integer(source, no, tok[1], "Site"), b.integer(source, no, tok[2], "Rank"))
    values = {k: b.finite(source, no, v, k) for k, v in zip(("max", "mean", "min", "sum"), tok[4:8])}
    values["count"] = b.integer(source, no, tok[3], "Count")
    rep.bytes[key] = values


def _profile(source: b.Source, parsed: b.ParsedRun, rep: Report, allow_truncated: bool, last_no: int) -> Dict[str, Any]:
    if rep.concise:
        raise source.error(None, "a concise mpiP report (mpiP -c) has no per-rank call counts; "
                                 "import the default (verbose) report")
    if not rep.tasks:
        raise source.error(None, "no 'MPI Time (seconds)' section: not an mpiP report, or it was cut early")
    if not rep.ended:
        note = "no 'End of Report' section (mpiP did not finish writing the report or the file was cut)"
        if not allow_truncated:
            raise source.truncated(last_no, note + "; use --allow-truncated to import what it has")
        parsed.mark_incomplete(note)
    ranks = max(rep.tasks) + 1
    if sorted(rep.tasks) != list(range(ranks)):
        raise source.error(None, f"the MPI Time table lists tasks {sorted(rep.tasks)}, not 0..{ranks - 1}")
    if rep.hosts and sorted(rep.hosts) != list(range(ranks)):
        raise source.error(None, f"the MPI Task Assignment lines name {len(rep.hosts)} ranks, the MPI Time table {ranks}")
    if not rep.times:
        raise source.error(None, "no 'Callsite Time statistics (all, milliseconds)' section: mpiP ran without "
                                 "call-site detail, so the report has no per-rank call counts")
    acc: Dict[Tuple[int, str, int], List[float]] = defaultdict(lambda: [0, 0, 0.0, float("inf"), 0.0])
    per_site: Dict[int, Dict[str, float]] = defaultdict(lambda: {"count": 0, "time": 0.0, "bytes": 0})
    for (site, rank), t in sorted(rep.times.items()):
        if rank >= ranks:
            raise source.error(t["line"], f"rank {rank} is not in the MPI Time table (0..{ranks - 1})")
        sent = rep.bytes.get((site, rank))
        nbytes = int(round(sent["sum"])) if sent else 0
        if sent is None:
            b_ = 0
        elif sent["min"] == sent["max"]:
            b_ = size_bin(sent["min"])
        else:
            b_ = size_bin(sent["mean"])
        a = acc[(rank, t["call"], b_)]
        a[0] += t["count"]
        a[1] += nbytes
        a[2] += t["count"] * t["mean"] / 1000.0
        a[3] = min(a[3], t["min"] / 1000.0)
        a[4] = max(a[4], t["max"] / 1000.0)
        s = per_site[site]
        s["count"] += t["count"]
        s["time"] += t["count"] * t["mean"] / 1000.0
        s["bytes"] += nbytes
    missing = {site: total - per_site[site]["count"] for site, total in rep.site_totals.items()
               if total > per_site[site]["count"]}
    if missing:
        parsed.warnings.append(f"{sum(missing.values())} calls at {len(missing)} call sites are only in the report's "
                               "'*' rows (mpiP's print threshold -t left their ranks out)")
    calls = [[rank, call, bin_, int(a[0]), int(a[1]), a[2], a[3] if a[0] else 0.0, a[4]]
             for (rank, call, bin_), a in sorted(acc.items())]
    callsites = []
    for site in sorted(set(rep.sites) | set(per_site)):
        entry = dict(rep.sites.get(site, {"site": site, "call": None, "frames": []}))
        entry.update(per_site.get(site, {"count": 0, "time": 0.0, "bytes": 0}))
        if entry["call"] is None:
            entry["call"] = next((t["call"] for (s, _r), t in rep.times.items() if s == site), None)
        callsites.append(entry)
    hosts = [rep.hosts.get(r, "") for r in range(ranks)]
    version = rep.intro.get("Version")
    parsed.tool_version = version
    profile: Dict[str, Any] = {
        "format": "fabricbench-mpi-profile", "version": 1,
        "created": rep.intro.get("Stop time"),
        "ranks": ranks,
        "hosts": sorted({h for h in hosts if h}),
        "mpi": {"library": "", "profiler": f"mpiP {version}" if version else "mpiP"},
        "command": rep.intro.get("Command", "").split(),
        "timer": rep.intro.get("Timer Used"),
        "source": "mpiP",
        "size_bins": SIZE_BINS,
        "rank_info": [{"rank": r, "host": hosts[r], "app_time": rep.tasks[r][0], "mpi_time": rep.tasks[r][1],
                       "untracked_peers": 0} for r in range(ranks)],
        "call_columns": ["rank", "call", "bin", "count", "bytes", "time", "min", "max"],
        "calls": calls,
        "matrix_columns": ["src", "dst", "messages", "bytes"],
        "matrix": {"p2p": [], "rma": [], "coll": []},
        "matrix_note": "mpiP does not record who sends to whom",
        "callsites": callsites,
    }
    from fabricbench.analysis.profile_data import ProfileError, validate_profile

    try:
        validate_profile(profile)
    except ProfileError as exc:
        raise source.error(None, f"the report does not make a valid profile: {exc}") from None
    parsed.facts = {"report": {k: v for k, v in rep.intro.items()}, "callsites": len(callsites)}
    return profile


FORMAT = Importer(name="mpip", title="mpiP report", detect=detect, parse=parse)
