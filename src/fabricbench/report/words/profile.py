"""Findings -> words for MPI profiles: the text of analysis.profile's summary, of the call
sites (analysis.profile_sites) and of the phases (analysis.profile_phases), for the terminal
(`fabricbench show-profile`) and the report's tables. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

from fabricbench.analysis.profile import MOSTLY
from fabricbench.analysis.profile_cpu import sharing_sentence
from fabricbench.analysis.profile_phases import RANKING, SYNC_BYTES
from fabricbench.numbers import binary_size as format_bytes
from fabricbench.numbers import count, fixed, number, percent
from fabricbench.numbers import percent_share as _pct
from fabricbench.numbers import sentence_size as size_label


# ---- the summary (analysis.profile.summarize) --------------------------------------------------

def headline(s: Dict[str, Any]) -> str:
    """'About 5.0% of overall runtime spent in MPI'."""
    return f"About {_pct(s['mpi_percent']['overall'])} of overall runtime spent in MPI"


def call_size(c: Dict[str, Any]) -> str:
    """A top call's typical size: the mean size of its dominant size bin ('16 KiB', '0-byte')."""
    return size_label(c["dominant_size"])


def call_sentence(c: Dict[str, Any]) -> str:
    """'MPI_Alltoall 74% of MPI time (3.7% of wall time), mostly 16 KiB' (or 'sizes vary, most
    time at 8 B (40%)' when no size holds MOSTLY of the call's time)."""
    label, share = call_size(c), c["dominant_share"]
    sizes = f"mostly {label}" if share >= MOSTLY else f"sizes vary, most time at {label} ({fixed(share * 100, 0)}%)"
    return f"{c['call']} {_pct(c['percent_mpi'])} of MPI time ({_pct(c['percent_wall'])} of wall time), {sizes}"


def summary_dict(s: Dict[str, Any]) -> Dict[str, Any]:
    """The summary with its words, as `show-profile --json` gives it: 'headline', and each top
    call's 'size_label' and 'sentence'."""
    calls = [{**c, "size_label": call_size(c), "sentence": call_sentence(c)} for c in s["top_calls"]]
    return {**s, "headline": headline(s), "top_calls": calls}


def head_lines(s: Dict[str, Any]) -> List[str]:
    """Who ran, where, for how long, and the share of time in MPI."""
    hosts = s["hosts"]
    host_text = f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}"
    if hosts:
        host_text += f" ({', '.join(hosts[:4])}{', ...' if len(hosts) > 4 else ''})"
    lines = [f"MPI profile: {s['ranks']} rank{'s' if s['ranks'] != 1 else ''} on {host_text}"]
    if s["mpi_library"]:
        lines.append(f"MPI library: {s['mpi_library']}")
    if s["command"]:
        lines.append(f"Command: {' '.join(s['command'])}")
    app, mp = s["app_time"], s["mpi_percent"]
    lines.append(f"Wall time (MPI_Init to MPI_Finalize): {number(app['mean'])} s mean, "
                 f"{number(app['min'])} to {number(app['max'])} s")
    lines.append(
        f"{headline(s)} (per rank: mean {_pct(mp['mean'])}, min {_pct(mp['min'])} on rank {mp['min_rank']}, "
        f"max {_pct(mp['max'])} on rank {mp['max_rank']})"
    )
    c = s.get("cpu_sharing")
    if c:
        wait = f", waiting for a core {number(c['run_delay_s'])} s in all" if c["run_delay_s"] is not None else ""
        lines.append(f"Ranks shared cores: {sharing_sentence(c)}{wait}; their computation needs at least "
                     f"{number(c['floor_s'])} s on any fabric")
    return lines


CALL_HEADERS = ("call", "% MPI", "% wall", "calls", "time (s)", "bytes", "typical size")
TALKER_HEADERS = ("from rank", "to rank", "bytes", "messages", "by layer")


def call_rows(s: Dict[str, Any]) -> List[List[str]]:
    """The top calls as table rows (CALL_HEADERS)."""
    return [[c["call"], percent(c["percent_mpi"]), percent(c["percent_wall"], decimals=2), count(c["count"]),
             number(c["time"]), format_bytes(c["bytes"]), f"{call_size(c)} ({fixed(c['dominant_share'] * 100, 0)}% of its time)"]
            for c in s["top_calls"]]


def talker_rows(s: Dict[str, Any]) -> List[List[str]]:
    """The top talkers as table rows (TALKER_HEADERS)."""
    rows = []
    for t in s["top_talkers"]:
        parts = ", ".join(f"{layer} {format_bytes(t[layer])}" for layer in ("p2p", "rma", "coll") if t[layer])
        rows.append([str(t["src"]), str(t["dst"]), format_bytes(t["bytes"]), count(t["messages"]), parts])
    return rows


def imbalance_line(s: Dict[str, Any]) -> str:
    im = s["imbalance"]
    return (f"MPI time per rank: min {number(im['min'])} s (rank {im['min_rank']}), max {number(im['max'])} s "
            f"(rank {im['max_rank']}), mean {number(im['mean'])} s, coefficient of variation {fixed(im['cov'])}")


def _text_table(headers: Sequence[str], rows: List[List[str]], right: Sequence[bool]) -> List[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(headers)] + [line(r) for r in rows]


def format_summary(summary: Dict[str, Any]) -> str:
    """Plain text for a terminal or a file: every column as wide as its widest cell."""
    s = summary
    lines = head_lines(s) + [""]
    if s["top_calls"]:
        lines.append("Top MPI calls by time (summed over ranks):")
        lines += [f"  - {call_sentence(c)}" for c in s["top_calls"]]
        lines.append("")
        lines += _text_table(CALL_HEADERS, call_rows(s), (False, True, True, True, True, True, False))
        if s["calls_total"] > len(s["top_calls"]):
            lines.append(f"  ... and {s['calls_total'] - len(s['top_calls'])} more calls")
    else:
        lines.append("No MPI calls were recorded.")
    lines += ["", imbalance_line(s)]
    if s["top_talkers"]:
        lines.append(f"Top talkers (bytes from source to destination rank; {format_bytes(s['matrix_bytes'])} in all):")
        rows = [[f"{r[0]} -> {r[1]}"] + r[2:] for r in talker_rows(s)]
        lines += _text_table(("ranks",) + TALKER_HEADERS[2:], rows, (False, True, True, False))
    else:
        lines.append("No point-to-point, one-sided or collective traffic between ranks was recorded.")
    return "\n".join(lines)


# ---- call sites (analysis.profile_sites.callsites) ----------------------------------------------

SITE_HEADERS = ("site", "call", "where", "calls", "time (s)", "% MPI", "% wall", "bytes", "mean size", "ranks", "COV")


def site_rows(summary: Dict[str, Any]) -> List[List[str]]:
    """Table rows (SITE_HEADERS) of callsites()."""
    return [[str(s["site"]), s["call"], s["label"], count(s["count"]), number(s["time"]),
             percent(s["percent_mpi"]), percent(s["percent_wall"], decimals=2), format_bytes(s["bytes"]),
             size_label(s["mean_size"]), "-" if s["ranks"] is None else str(s["ranks"]), fixed(s["cov"])]
            for s in summary["sites"]]


def site_note(summary: Dict[str, Any]) -> str:
    """What the table leaves out, or '' when nothing."""
    if not summary["recorded"]:
        return "This profile has no call sites (written by an older profiler)."
    parts = []
    if summary["total"] > len(summary["sites"]):
        parts.append(f"... and {summary['total'] - len(summary['sites'])} more sites")
    if summary["dropped_calls"]:
        parts.append(f"{count(summary['dropped_calls'])} calls found no free slot in the call-site table "
                     "and are counted in the totals only")
    return "; ".join(parts)


# ---- phases (analysis.profile_phases.phases) ----------------------------------------------------

def phase_sizes(c: Dict[str, Any]) -> str:
    """A phase call's sizes: '16 KiB' for one size bin, '0 to 64 KiB' for the range of the bins
    seen, '' for a call begun before the phase. Also for a row of analysis.study_hpcc (its
    lead's size_range and mean_size)."""
    if c.get("begun_earlier"):
        return ""
    span = c.get("size_range")
    if span:
        lo, hi = span
        return f"{size_label(lo) if lo else '0'} to {format_bytes(hi)}"
    return size_label(c["mean_size"]) if c.get("mean_size") is not None else ""


def phase_call_sentence(c: Dict[str, Any]) -> str:
    """'74% of MPI time (3.7% of wall time) in 16 KiB MPI_Alltoall', 'MPI_Send of 0 to 64 KiB',
    'waits: ... in MPI_Wait begun earlier'."""
    sizes = phase_sizes(c)
    if c.get("begun_earlier"):
        what = f"{c['call']} begun earlier"
    else:
        what = f"{c['call']} of {sizes}" if c.get("size_range") else f"{sizes} {c['call']}"
    sentence = f"{_pct(c['percent_mpi'])} of MPI time ({_pct(c['percent_wall'])} of wall time) in {what}"
    return sentence if c["moves_data"] else f"waits: {sentence}"


def json_words(data: Any) -> Any:
    """A copy of phases() (or of what is made of it: hpcc_sections' leading calls) in which every
    phase call has its words, 'sizes' and 'sentence', as the JSON of show-profile --phases,
    hpcc --profile and compare give them."""
    if isinstance(data, list):
        return [json_words(v) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: json_words(v) for k, v in data.items()}
    if "moves_data" in data and "begun_earlier" in data:  # a phase call (analysis.profile_phases)
        out.update(sizes=phase_sizes(data), sentence=phase_call_sentence(data))
    return out


def _clock(t: float, step: float) -> str:
    """A phase boundary to the window's precision (a phase of a few ms shows its length)."""
    return fixed(t, max(2, min(6, math.ceil(-math.log10(step))))) if step > 0 else number(t)


def phase_lines(result: Dict[str, Any]) -> List[str]:
    """The phases as text (lines of at most about 80 columns): a heading that says how the
    phases were found and how calls are ranked, then one heading and bullets per phase."""
    if result["method"] is None:
        return ["This profile has no time windows (they come from fabricbench's own profiler; mpiP and older "
                "versions do not record them)."]
    n = len(result["phases"])
    how = {"pcontrol": "marked by the program's MPI_Pcontrol calls",
           "change points": "where the data-moving MPI calls change"}.get(
        result["method"], f"one per {result['method'][:-1] if result['method'].endswith('s') else result['method']}")
    lines = [f"{n} phase{'s' if n != 1 else ''}, {how}",
             f"(time windows of {number(result['step'])} s, summed over ranks).",
             f"Calls: {RANKING}.",
             f"Waits: Barrier, Wait/Test, probes, communicator calls, collectives <= {SYNC_BYTES} B."]
    for ph in result["phases"]:
        label = f" after {ph['label']}" if ph["label"] and ph["label"] != "start" else ""
        if result["method"] not in ("pcontrol", "change points"):
            label = f", {ph['label']}"
        lines.append(f"Phase {ph['phase']}{label}: {_clock(ph['start'], result['step'])} s to "
                     f"{_clock(ph['end'], result['step'])} s, "
                     f"{_pct(ph['percent_mpi'])} of its runtime in MPI")
        if not ph["top_calls"]:
            lines.append("  - no MPI calls")
        lines += [f"  - {phase_call_sentence(c)}" for c in ph["top_calls"]]
    return lines


def phase_rows(result: Dict[str, Any]) -> List[List[str]]:
    """One row per phase: number, start, end, % in MPI, top calls (for report tables)."""
    return [[str(ph["phase"]), number(ph["start"]), number(ph["end"]), _pct(ph["percent_mpi"]),
             "; ".join(phase_call_sentence(c) for c in ph["top_calls"]) or "no MPI calls"]
            for ph in result["phases"]]


PHASE_HEADERS: Sequence[str] = ("phase", "start (s)", "end (s)", "in MPI", "top calls")
