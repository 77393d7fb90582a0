"""HPCC's tests in a profile: which stretch of a profiled hpcc run belongs to which test.

HPCC's main() starts each section with ``MPI_Barrier(MPI_COMM_WORLD)`` and rank 0 then
appends "Begin of NAME section." to hpccoutf.txt (opened and closed around every line, so
the line is on disk at once); it ends the section with "End of NAME section.". The run's
workflow watches the file and records when each of those lines appeared (seconds since
1970, ``marks``); the profiler records when MPI_Init ran (``init_epoch`` of rank 0). The
difference puts each section on the profile's clock, with no symbols or MPI_Pcontrol needed
(Debian's hpcc is stripped).

Sections join into HPCC's seven tests (MPIRandomAccess, StarRandomAccess, ... _LCG are
RandomAccess; StarDGEMM and SingleDGEMM are DGEMM; LatencyBandwidth is b_eff), and each
test's profile comes from ``profile_phases`` with the test's time span as its phase: the
leading data-moving call (by bytes moved), its size, its share of MPI and wall time.
Everything here is a pure function of stored data.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

TESTS: Sequence[str] = ("RandomAccess", "PTRANS", "DGEMM", "STREAM", "FFT", "b_eff", "HPL")
LINE = re.compile(r"^(Begin|End) of (\w+) section\.\s*$")
NOT_TESTS = {"Summary"}


def section_test(section: str) -> str:
    """The HPCC test a section belongs to: 'StarRandomAccess_LCG' -> 'RandomAccess'."""
    if section == "LatencyBandwidth":
        return "b_eff"
    name = re.sub(r"_LCG$", "", section)
    name = re.sub(r"^(MPI|Star|Single)(?=[A-Z])", "", name)
    return name


def section_lines(text: str) -> List[Tuple[str, str]]:
    """('begin' | 'end', section) for each section line of an hpccoutf.txt text, in order."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            out.append((m.group(1).lower(), m.group(2)))
    return out


def section_spans(marks: Sequence[Sequence[Any]], init_epoch: float, end: float) -> List[Dict[str, Any]]:
    """The tests on the profile's clock: [{'test', 'sections', 'start', 'end'}] from marks
    ([kind, section, epoch] as the workflow recorded them), in the order HPCC ran them;
    the time before the first test ('start-up') and after the last ('summary') included
    when they last longer than a millisecond."""
    tests: List[Dict[str, Any]] = []
    for kind, section, epoch in marks:
        if section in NOT_TESTS:
            continue
        t = min(max(float(epoch) - init_epoch, 0.0), end)
        test = section_test(section)
        if kind == "begin":
            if tests and tests[-1]["test"] == test:
                tests[-1]["sections"].append(section)
            else:
                tests.append({"test": test, "sections": [section], "start": t, "end": None})
        elif kind == "end" and tests and tests[-1]["test"] == test:
            tests[-1]["end"] = t
    for i, item in enumerate(tests):
        following = tests[i + 1]["start"] if i + 1 < len(tests) else end
        if item["end"] is None:  # HPCC stopped in this section, or the End line was missed
            item["end"] = following
        # an End line read together with the next Begin line is timed at the read: later
        item["end"] = max(item["start"], min(item["end"], following))
    spans: List[Dict[str, Any]] = []
    if tests and tests[0]["start"] > 1e-3:
        spans.append({"test": "start-up", "sections": [], "start": 0.0, "end": tests[0]["start"]})
    spans += tests
    if tests and end - tests[-1]["end"] > 1e-3:
        spans.append({"test": "summary", "sections": [], "start": tests[-1]["end"], "end": end})
    return spans


def hpcc_phases(profile: Dict[str, Any], sections: Dict[str, Any], top: int = 3) -> Dict[str, Any]:
    """profile_phases.phases with one phase per HPCC test (method "HPCC tests"); each
    phase has 'label' (the test) and 'sections'. Without usable marks, the phases found
    by change points, with 'unnamed' saying why."""
    from fabricbench.analysis.profile_phases import phases

    info = profile.get("rank_info") or [{}]
    init = info[0].get("init_epoch")
    marks = sections.get("marks") or []
    from fabricbench.analysis.profile_phases import rank_offsets

    end = max(float(r.get("app_time") or 0.0) + off for r, off in zip(info, rank_offsets(info)))
    if init is None or not marks:
        why = ("the profiler did not record when MPI_Init ran (an older libfabricbench-prof)" if init is None
               else "no section of hpccoutf.txt was seen while HPCC ran")
        out = phases(profile, top=top)
        out["unnamed"] = why
        return out
    spans = section_spans(marks, float(init), end)
    out = phases(profile, top=top, spans=[(s["start"], s["end"], s["test"]) for s in spans], method="HPCC tests", align=True)
    inner = _inner_calls(profile, spans)
    for ph, span, (windows, calls) in zip(out["phases"], spans, inner):
        ph["sections"] = span["sections"]
        ph["inner_windows"], ph["inner_calls"] = windows, calls
    out["resolution"] = sections.get("resolution")
    return out


ALL_CALLS = 64


def _inner_calls(profile: Dict[str, Any], spans: Sequence[Dict[str, Any]]) -> List[Tuple[int, List[str]]]:
    """Per span: how many time windows lie wholly inside it, and the calls that are its own.
    A window that a test boundary cuts counts in both tests in proportion, and ranks' windows
    line up with the grid only to a window (each rank's begin at its own MPI_Init). So a call
    seen only within a window of a boundary, and made by the test on the other side of it
    (PTRANS's last MPI_Sendrecv where DGEMM begins), is that neighbour's; one the neighbour
    never makes (MPIFFT's MPI_Alltoall right after STREAM) stays the test's. Section lines
    are timed late, never early (hpcc_watch), so a call at a boundary that both tests could
    claim goes to the later one."""
    from fabricbench.analysis.profile_phases import _weights, window_grid

    grid = window_grid(profile, align=True)
    if grid is None:
        return [(0, []) for _ in spans]
    n, step, calls = len(grid["wall"]), grid["step"], grid["calls"]

    def used(t0: float, t1: float, whole: bool) -> set:
        w = _weights(n, step, t0, max(t1, t0 + 1e-12))
        rows = w >= 1 - 1e-9 if whole else w > 0
        return {c for c, u in zip(calls, (grid["count"][rows] > 0).any(axis=0)) if u} if rows.any() else set()

    out = []
    for i, sp in enumerate(spans):
        a, b = sp["start"], sp["end"]
        inner = _weights(n, step, a + step, max(b - step, a + step + 1e-12)) >= 1 - 1e-9
        own = used(a + step, b - step, True) if b - a > 2 * step else set()
        head, tail = used(a, min(a + 2 * step, b), False), used(max(b - 2 * step, a), b, False)
        # A section line is read at most late, never early: a call in the window a boundary cuts
        # is the earlier test's only when the later test never makes it, and the later test's
        # unless the earlier one makes it away from the boundary.
        before = used(spans[i - 1]["start"], spans[i - 1]["end"] - 2 * step, False) if i > 0 else set()
        after = used(spans[i + 1]["start"], spans[i + 1]["end"], False) if i + 1 < len(spans) else set()
        own |= (head - before) | (tail - after)
        out.append((int(inner.sum()), sorted(own)))
    return out


def leading_calls(result: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per HPCC test (result from hpcc_phases with top=ALL_CALLS): {'lead': the data-moving
    call that moved the most bytes (None when the test moved no data through MPI), 'most': the
    call of any kind with the most MPI time (a wait such as HPL's MPI_Iprobe can lead),
    'calls': every call, 'percent_mpi': share of the test's runtime in MPI, 'wall'}."""
    out: Dict[str, Dict[str, Any]] = {}
    for ph in result.get("phases", []):
        if ph.get("label") not in TESTS:
            continue
        calls = sorted(ph["top_calls"], key=lambda c: -c["time"])
        own = set(ph.get("inner_calls") or []) if ph.get("inner_windows") else None
        # By bytes moved, as profile_phases leads a phase: a call's time in a window a boundary
        # cuts is shared out by the window's overlap, its bytes rank it all the same.
        moving = [c for c in calls if c["moves_data"] and (own is None or c["call"] in own)]
        lead = max(moving, key=lambda c: c["bytes"]) if moving else None
        out[ph["label"]] = {"lead": lead["call"] if lead else None, "lead_call": lead,
                            "resolved": bool(ph.get("inner_windows")),
                            "most": calls[0] if calls else None, "calls": calls,
                            "percent_mpi": ph["percent_mpi"], "wall": ph["wall"],
                            "start": ph["start"], "end": ph["end"]}
    return out


def lead_call(test: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The call entry of a test's leading data-moving call."""
    return test.get("lead_call")


def compare_leads(a: Dict[str, Any], b: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per HPCC test present in either: the two runs' leading calls, sizes, shares of MPI
    time and share of runtime in MPI, side by side (a and b from leading_calls)."""
    rows = []
    for test in TESTS:
        if test not in a and test not in b:
            continue
        row: Dict[str, Any] = {"test": test}
        for side, data in (("a", a.get(test)), ("b", b.get(test))):
            call = lead_call(data) if data else None
            row[side] = None if data is None else {
                "lead": data["lead"], "lead_call": call,
                "percent_of_mpi": call["percent_mpi"] if call else None, "percent_mpi": data["percent_mpi"]}
        row["same_lead"] = bool(row["a"] and row["b"] and row["a"]["lead"] == row["b"]["lead"])
        rows.append(row)
    return rows
