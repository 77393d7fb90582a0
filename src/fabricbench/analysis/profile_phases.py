"""When in the run: a profile's time windows split into phases where the call mix changes.

The profiler keeps, per rank, each call's time, count, bytes and size bins in fixed time
windows (the window length doubles when the run outgrows them). ``window_grid`` puts the
ranks' windows on one grid (seconds since MPI_Init, the coarsest rank's window length) and
sums over ranks. Each window becomes a call-mix vector: each call's share of the window's
MPI time, and the share of the window's wall time in MPI. A window with almost no MPI
(under LIGHT of its time) has its mix scaled down in proportion, so that a stray call in
a compute stretch does not look like a phase of its own. ``segment`` splits the sequence
by binary segmentation on the squared-error cost, keeping a split only while it lowers the
cost by more than a penalty scaled to the noise between neighbouring windows.

If the program called ``MPI_Pcontrol``, its calls (rank 0's) are the phase boundaries
instead, at their exact times: the program said where its phases are. A window that a
boundary cuts counts in each phase in proportion to the time it shares with it, so a
phase shorter than a window shows the mix of the window it lies in.

``phases`` describes each phase in the words of the HPCC profiling study: start, end, the
share of runtime in MPI, and the top calls with their sizes ("74% of MPI time (3% of wall
time) in 16 KiB MPI_Alltoall").
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fabricbench.analysis.profile import _pct, size_label
from fabricbench.analysis.profile_data import bin_range, format_bytes
from fabricbench.report.format import number

MIN_WINDOWS = 2       # a phase found by change points spans at least this many windows
MAX_PHASES = 16
PENALTY_FACTOR = 4.0  # x noise x log(windows): a split must beat this to count
MIN_GAIN = 0.5       # and lower the cost by at least this much (a full change of mix over
                      # two windows each side gains 2)
LIGHT = 0.02          # share of wall time in MPI below which a window's mix is scaled down


def window_grid(profile: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The ranks' windows on one grid: {'step', 'calls', 'time' [w, call], 'count', 'bytes',
    'bins' (list of per-call bit masks per window), 'wall' [w] (rank-seconds covered)};
    None if the profile has no windows."""
    info = profile["rank_info"]
    if "windows" not in profile or not all("window_s" in r for r in info):
        return None
    step = max(float(r["window_s"]) for r in info)
    if step <= 0:
        return None
    end = max(float(r["app_time"]) for r in info)
    n = max(1, math.ceil(end / step - 1e-9))
    calls = sorted({row[2] for row in profile["windows"]})
    index = {c: i for i, c in enumerate(calls)}
    time = np.zeros((n, len(calls)))
    count = np.zeros((n, len(calls)))
    nbytes = np.zeros((n, len(calls)))
    bins = [[0] * len(calls) for _ in range(n)]
    for rank, w, call, c, b, t, mask in profile["windows"]:
        ws = float(info[rank]["window_s"])
        g = min(n - 1, int((w + 0.5) * ws / step))
        j = index[call]
        time[g, j] += t
        count[g, j] += c
        nbytes[g, j] += b
        bins[g][j] |= int(mask)
    wall = np.zeros(n)
    for r in info:
        app = float(r["app_time"])
        starts = np.arange(n) * step
        wall += np.clip(np.minimum(starts + step, app) - starts, 0.0, None)
    return {"step": step, "calls": calls, "time": time, "count": count, "bytes": nbytes, "bins": bins, "wall": wall}


def mix_vectors(time: np.ndarray, wall: np.ndarray) -> np.ndarray:
    """Per window: each call's share of MPI time (scaled down in light windows), and the
    share of wall time in MPI."""
    mpi = time.sum(axis=1)
    mix = np.divide(time, mpi[:, None], out=np.zeros_like(time), where=mpi[:, None] > 0)
    in_mpi = np.clip(np.divide(mpi, wall, out=np.zeros_like(mpi), where=wall > 0), 0.0, 1.0)
    weight = np.minimum(1.0, in_mpi / LIGHT)
    return np.hstack([mix * weight[:, None], in_mpi[:, None]])


def _cost_fn(x: np.ndarray):
    csum = np.vstack([np.zeros(x.shape[1]), np.cumsum(x, axis=0)])
    csq = np.concatenate([[0.0], np.cumsum((x * x).sum(axis=1))])

    def cost(a: int, b: int) -> float:
        """Squared error of x[a:b] around its mean."""
        s = csum[b] - csum[a]
        return float(csq[b] - csq[a] - (s @ s) / (b - a))

    return cost


def _best_split(cost, a: int, b: int, min_size: int) -> Tuple[float, int]:
    whole = cost(a, b)
    best, at = 0.0, -1
    for k in range(a + min_size, b - min_size + 1):
        gain = whole - cost(a, k) - cost(k, b)
        if gain > best:
            best, at = gain, k
    return best, at


def segment(x: np.ndarray, min_size: int = MIN_WINDOWS, max_segments: int = MAX_PHASES,
            penalty: Optional[float] = None) -> List[int]:
    """Boundaries (window indices, 0 and len(x) included) of a binary segmentation of x."""
    n = len(x)
    if n == 0:
        return [0]
    if penalty is None:
        steps = ((x[1:] - x[:-1]) ** 2).sum(axis=1) if n > 1 else np.zeros(1)
        noise = float(np.median(steps)) / 2 if len(steps) else 0.0
        penalty = max(MIN_GAIN, PENALTY_FACTOR * noise * math.log(max(n, 2)))
    cost = _cost_fn(x)
    bounds = [0, n]
    while len(bounds) - 1 < max_segments:
        best = (0.0, -1)
        for a, b in zip(bounds, bounds[1:]):
            if b - a >= 2 * min_size:
                cand = _best_split(cost, a, b, min_size)
                if cand[0] > best[0]:
                    best = cand
        if best[1] < 0 or best[0] <= penalty:
            break
        bounds = sorted(bounds + [best[1]])
    return bounds


def _marked_spans(profile: Dict[str, Any], end: float) -> Optional[List[Tuple[float, float, str]]]:
    """(start, end, label) of the stretches between rank 0's MPI_Pcontrol calls."""
    marks = profile["rank_info"][0].get("pcontrol") or []
    if not marks:
        return None
    starts = [(0.0, "start")] + [(min(max(float(t), 0.0), end), f"MPI_Pcontrol({level})") for t, level in marks]
    spans = [(a, b, label) for (a, label), (b, _) in zip(starts, starts[1:] + [(end, "")])]
    # the stretch before the first mark only when it holds time (MPI_Pcontrol is often the first call)
    return [s for i, s in enumerate(spans) if i > 0 or s[1] - s[0] > 1e-3]


def _weights(n: int, step: float, t0: float, t1: float) -> np.ndarray:
    """Share of each window inside [t0, t1)."""
    starts = np.arange(n) * step
    return np.clip(np.minimum(starts + step, t1) - np.maximum(starts, t0), 0.0, None) / step


def _sizes(mask: int, mean: float) -> str:
    """'16 KiB' for one size bin, else the range of the bins seen."""
    used = [b for b in range(64) if mask >> b & 1]
    if len(used) <= 1:
        return size_label(mean)
    lo, hi = bin_range(used[0])[0], bin_range(used[-1])[1] + 1
    return f"{size_label(lo) if lo else '0'} to {format_bytes(hi)}"


def _describe(grid: Dict[str, Any], weight: np.ndarray, top: int) -> Dict[str, Any]:
    """A phase: the windows' sums, each window counted by its weight (its share in the phase)."""
    time = weight @ grid["time"]
    count = weight @ grid["count"]
    nbytes = weight @ grid["bytes"]
    wall = float(weight @ grid["wall"])
    mpi = float(time.sum())
    inside = [w for w in range(len(weight)) if weight[w] > 0]
    order = sorted(range(len(grid["calls"])), key=lambda j: (-time[j], -count[j]))
    calls = []
    for j in order[:top]:
        if count[j] == 0:
            break
        mask = 0
        for w in inside:
            mask |= grid["bins"][w][j]
        mean = nbytes[j] / count[j]
        sizes = _sizes(mask, mean)
        pmpi = 100.0 * time[j] / mpi if mpi > 0 else 0.0
        pwall = 100.0 * time[j] / wall if wall > 0 else 0.0
        one = len([b for b in range(64) if mask >> b & 1]) <= 1
        what = f"{sizes} {grid['calls'][j]}" if one else f"{grid['calls'][j]} of {sizes}"
        calls.append({"call": grid["calls"][j], "time": float(time[j]), "count": int(round(count[j])),
                      "bytes": int(nbytes[j]), "mean_size": float(mean), "sizes": sizes,
                      "percent_mpi": pmpi, "percent_wall": pwall,
                      "sentence": f"{_pct(pmpi)} of MPI time ({_pct(pwall)} of wall time) in {what}"})
    pct = 100.0 * mpi / wall if wall > 0 else 0.0
    return {"windows": len(inside), "mpi_time": mpi, "wall": wall,
            "percent_mpi": pct, "top_calls": calls,
            "headline": f"About {_pct(pct)} of the phase's runtime spent in MPI"}


def phases(profile: Dict[str, Any], top: int = 3) -> Dict[str, Any]:
    """{'phases': [...], 'method': 'pcontrol' | 'change points' | None, 'step': s}."""
    grid = window_grid(profile)
    if grid is None:
        return {"phases": [], "method": None, "step": None}
    n, step = len(grid["wall"]), grid["step"]
    end = max(float(r["app_time"]) for r in profile["rank_info"])
    spans = _marked_spans(profile, end)
    method = "pcontrol"
    if spans is None:
        bounds = segment(mix_vectors(grid["time"], grid["wall"]))
        spans = [(a * step, b * step, "") for a, b in zip(bounds, bounds[1:])]
        method = "change points"
    out = []
    for t0, t1, label in spans:
        ph = _describe(grid, _weights(n, step, t0, max(t1, t0 + 1e-12)), top)
        ph.update({"start": t0, "end": t1, "label": label, "phase": len(out) + 1})
        out.append(ph)
    if out:
        out[-1]["end"] = min(out[-1]["end"], end)  # the last window runs past the end of the run
    return {"phases": out, "method": method, "step": step}


def phase_lines(result: Dict[str, Any]) -> List[str]:
    """The phases as text, one heading and bullet lines each."""
    if result["method"] is None:
        return ["This profile has no time windows (they come from fabricbench's own profiler; mpiP and older "
                "versions do not record them)."]
    how = ("marked by the program's MPI_Pcontrol calls" if result["method"] == "pcontrol"
           else "where the mix of MPI calls changes")
    lines = [f"{len(result['phases'])} phase{'s' if len(result['phases']) != 1 else ''}, {how} "
             f"(time windows of {number(result['step'])} s, summed over ranks):"]
    for ph in result["phases"]:
        label = f" after {ph['label']}" if ph["label"] and ph["label"] != "start" else ""
        lines.append(f"Phase {ph['phase']}{label}: {number(ph['start'])} s to {number(ph['end'])} s; "
                     f"{ph['headline']}")
        if not ph["top_calls"]:
            lines.append("  - no MPI calls")
        lines += [f"  - {c['sentence']}" for c in ph["top_calls"]]
    return lines


def phase_rows(result: Dict[str, Any]) -> List[List[str]]:
    """One row per phase: number, start, end, % in MPI, top calls (for report tables)."""
    return [[str(ph["phase"]), number(ph["start"]), number(ph["end"]), _pct(ph["percent_mpi"]),
             "; ".join(c["sentence"] for c in ph["top_calls"]) or "no MPI calls"]
            for ph in result["phases"]]


PHASE_HEADERS: Sequence[str] = ("phase", "start (s)", "end (s)", "in MPI", "top calls")
