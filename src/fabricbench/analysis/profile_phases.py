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

Calls are told apart as data-moving (point-to-point, one-sided, I/O, and collectives of more
than SYNC_BYTES per call) and synchronisation (Barrier, the Wait/Test families, probes,
communicator calls, and collectives of at most SYNC_BYTES per call, such as the 4-byte
Allreduce of a check). On a busy or oversubscribed machine the synchronisation calls take
most of the MPI time in waits, and their share changes from window to window with the
scheduler, not with the program. So the mix vector that is segmented describes the
data-moving calls (each one's share of the window's data-moving time, scaled down when
the window hardly moves data) next to the share of wall time in MPI. Segments that lead
with the same data-moving call join into one phase when they are neighbours or when one
quiet or short segment lies between them (merge_segments). A phase is led by its
data-moving call that moved the most bytes, as in mpiP's "aggregate sent message size"
view (time does not rank non-blocking calls: their waiting is in MPI_Wait*/MPI_Test*).

``phases`` describes each phase as the HPCC profiling study does: start, end, the share of
runtime in MPI, and the top calls with their sizes, data-moving calls first; report/words/profile.py
says it in the study's words ("74% of MPI time (3% of wall time) in 16 KiB MPI_Alltoall").
"""
from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from fabricbench.analysis.profile_data import bin_range, rank_threads

MIN_WINDOWS = 2       # a phase found by change points spans at least this many windows
MAX_PHASES = 16      # phases shown at most
MAX_SEGMENTS = 256   # segments found before they are joined into phases
PENALTY_FACTOR = 4.0  # x noise x log(windows): a split must beat this to count
MIN_GAIN = 0.5       # and lower the cost by at least this much (a full change of mix over
                      # two windows each side gains 2)
LIGHT = 0.02          # share of wall time in MPI (or in data-moving calls) below which a
                      # window's mix is scaled down
SYNC_BYTES = 64       # a collective of at most this many bytes per call synchronises
COLLECTIVE = re.compile(r"^MPIX?_I?(Bcast|Reduce|Allreduce|Reduce_scatter(_block)?|Scan|Exscan|Allgatherv?|"
                        r"Gatherv?|Scatterv?|Alltoall[vw]?|Neighbor_all(gather|toall)[vw]?)(_init)?$")
NONBLOCKING_P2P = re.compile(r"^MPI_I[bsr]?(send|recv)$|^MPI_Imrecv$")
POLL = re.compile(r"^MPI_(Test(any|all|some)?|Iprobe|Improbe)$")
QUIET_CALLS = 0.1     # a stretch whose data-moving calls are fewer than this share is quiet
RANKING = "data-moving calls first, by bytes moved; then waits, by time"


def moves_data(call: str, count: float, nbytes: float) -> bool:
    """Whether ``count`` calls of ``call`` that carried ``nbytes`` moved data (see the module's
    docstring): they carried bytes, and a collective more than SYNC_BYTES per call."""
    if count <= 0 or nbytes <= 0:
        return False
    return not (COLLECTIVE.match(call) and nbytes / count <= SYNC_BYTES)


def rank_offsets(info: Sequence[Dict[str, Any]]) -> List[float]:
    """Seconds from rank 0's MPI_Init to each rank's (0 for all when a rank did not record
    when it ran: an older profiler); ranks start apart by up to seconds on a busy host."""
    if not info or not all(r.get("init_epoch") is not None for r in info):
        return [0.0] * len(info)
    t0 = float(info[0]["init_epoch"])
    return [float(r["init_epoch"]) - t0 for r in info]


def window_grid(profile: Dict[str, Any], align: bool = False) -> Optional[Dict[str, Any]]:
    """The ranks' windows on one grid: {'step', 'calls', 'time' [w, call], 'count', 'bytes',
    'bins' (list of per-call bit masks per window), 'wall' [w] (rank-seconds covered)};
    None if the profile has no windows. With ``align`` each rank's windows are put on rank
    0's clock (rank_offsets): what marks taken on one clock (HPCC's sections) need."""
    info = profile["rank_info"]
    if "windows" not in profile or not all("window_s" in r for r in info):
        return None
    step = max(float(r["window_s"]) for r in info)
    if step <= 0:
        return None
    offset = rank_offsets(info) if align else [0.0] * len(info)
    end = max(float(r["app_time"]) + off for r, off in zip(info, offset))
    n = max(1, math.ceil(end / step - 1e-9))
    calls = sorted({row[2] for row in profile["windows"]})
    index = {c: i for i, c in enumerate(calls)}
    time = np.zeros((n, len(calls)))
    count = np.zeros((n, len(calls)))
    nbytes = np.zeros((n, len(calls)))
    bins = [[0] * len(calls) for _ in range(n)]
    for rank, w, call, c, b, t, mask in profile["windows"]:
        ws = float(info[rank]["window_s"])
        g = min(n - 1, max(0, int(((w + 0.5) * ws + offset[rank]) / step)))
        j = index[call]
        time[g, j] += t
        count[g, j] += c
        nbytes[g, j] += b
        bins[g][j] |= int(mask)
    wall = np.zeros(n)
    for r, off in zip(info, offset):
        app = float(r["app_time"]) + off
        starts = np.arange(n) * step
        # Wall time of each thread that called MPI: the calls' times add up over threads.
        wall += rank_threads(r) * np.clip(np.minimum(starts + step, app) - np.maximum(starts, off), 0.0, None)
    grid = {"step": step, "calls": calls, "time": time, "count": count, "bytes": nbytes, "bins": bins, "wall": wall}
    grid["moves"] = [moves_data(c, count[:, j].sum(), nbytes[:, j].sum()) for j, c in enumerate(calls)]
    grid["data"] = data_mask(grid)
    return grid


def data_mask(grid: Dict[str, Any]) -> np.ndarray:
    """[w, call]: whether the call moved data in the window. A window that a call only ran
    into (its time, but its count went to the window it started in) takes the call's kind
    over the whole run."""
    count, nbytes = grid["count"], grid["bytes"]
    mask = np.zeros(count.shape, dtype=bool)
    for w, j in zip(*np.nonzero(grid["time"] > 0)):
        mask[w, j] = moves_data(grid["calls"][j], count[w, j], nbytes[w, j]) if count[w, j] else grid["moves"][j]
    return mask


def mix_vectors(grid: Dict[str, Any]) -> np.ndarray:
    """Per window: each data-moving call's share of the window's data-moving time (scaled
    down when under LIGHT of the wall time moves data), and the share of wall time in MPI."""
    time, wall = grid["time"], grid["wall"]
    moving = np.where(grid["data"], time, 0.0)
    total = moving.sum(axis=1)
    mix = np.divide(moving, total[:, None], out=np.zeros_like(time), where=total[:, None] > 0)
    in_data = np.divide(total, wall, out=np.zeros_like(total), where=wall > 0)
    in_mpi = np.clip(np.divide(time.sum(axis=1), wall, out=np.zeros_like(total), where=wall > 0), 0.0, 1.0)
    return np.hstack([mix * np.minimum(1.0, in_data / LIGHT)[:, None], in_mpi[:, None]])


class _Costs:
    """Squared error of x[a:b] around its mean, from cumulative sums (any a < b in O(1))."""

    def __init__(self, x: np.ndarray):
        self.csum = np.vstack([np.zeros(x.shape[1]), np.cumsum(x, axis=0)])
        self.csq = np.concatenate([[0.0], np.cumsum((x * x).sum(axis=1))])

    def __call__(self, a, b):
        s = self.csum[b] - self.csum[a]
        return self.csq[b] - self.csq[a] - (s * s).sum(axis=-1) / (b - a)

    def best_split(self, a: int, b: int, min_size: int) -> Tuple[float, int]:
        """(gain, k) of the best split of x[a:b] into x[a:k] and x[k:b]; (0, -1) if none."""
        if b - a < 2 * min_size:
            return 0.0, -1
        k = np.arange(a + min_size, b - min_size + 1)
        gains = self(a, b) - self(a, k) - self(k, b)
        i = int(np.argmax(gains))
        return (float(gains[i]), int(k[i])) if gains[i] > 0 else (0.0, -1)

    def merge_cost(self, a: int, k: int, b: int) -> float:
        """What joining x[a:k] and x[k:b] adds to the squared error."""
        return float(self(a, b) - self(a, k) - self(k, b))


def segment(x: np.ndarray, min_size: int = MIN_WINDOWS, max_segments: int = MAX_SEGMENTS,
            penalty: Optional[float] = None) -> List[int]:
    """Boundaries (window indices, 0 and len(x) included) of a binary segmentation of x."""
    n = len(x)
    if n == 0:
        return [0]
    if penalty is None:
        steps = ((x[1:] - x[:-1]) ** 2).sum(axis=1) if n > 1 else np.zeros(1)
        noise = float(np.median(steps)) / 2 if len(steps) else 0.0
        penalty = max(MIN_GAIN, PENALTY_FACTOR * noise * math.log(max(n, 2)))
    cost = _Costs(x)
    bounds = [0, n]
    best = {(0, n): cost.best_split(0, n, min_size)}
    while len(bounds) - 1 < max_segments:
        (a, b), (gain, k) = max(best.items(), key=lambda item: item[1][0])
        if k < 0 or gain <= penalty:
            break
        bounds = sorted(bounds + [k])
        del best[(a, b)]
        best[(a, k)] = cost.best_split(a, k, min_size)
        best[(k, b)] = cost.best_split(k, b, min_size)
    return bounds


def _pattern(grid: Dict[str, Any], a: int, b: int) -> Optional[str]:
    """The data-moving call that leads windows a..b: the one with the most time, or, when
    data-moving calls take under LIGHT of the wall time (non-blocking calls completed by
    polling are quick), the most frequent one. None (a quiet stretch) when they also make
    under QUIET_CALLS of the calls other than polls (MPI_Test*, MPI_Iprobe)."""
    data = grid["data"][a:b]
    moving = np.where(data, grid["time"][a:b], 0.0).sum(axis=0)
    if moving.sum() >= LIGHT * grid["wall"][a:b].sum():
        return _kind(grid["calls"][int(np.argmax(moving))])
    count = grid["count"][a:b].sum(axis=0)
    started = np.where(data, grid["count"][a:b], 0.0).sum(axis=0)
    polls = np.array([bool(POLL.match(c)) for c in grid["calls"]], dtype=bool)
    if started.sum() == 0 or started.sum() < QUIET_CALLS * count[~polls].sum():
        return None
    return _kind(grid["calls"][int(np.argmax(started))])


def _kind(call: str) -> str:
    """The non-blocking sends and receives are one pattern (which of them takes longer to
    post changes from stretch to stretch)."""
    return "non-blocking point-to-point" if NONBLOCKING_P2P.match(call) else call


def merge_segments(grid: Dict[str, Any], x: np.ndarray, bounds: List[int],
                   max_phases: int = MAX_PHASES) -> List[int]:
    """Phases from segments. Each segment has a pattern (its leading data-moving call, see
    _pattern; None when quiet). Two stretches of one pattern join, with what lies between
    them, when that is one segment that is quiet, no longer than the longer of the two, or of
    a pattern already joined into them; or two segments, each quiet or of such a pattern.
    So PTRANS's checks join its transposes, and b_eff's non-blocking rings its MPI_Sendrecv
    rings; a pattern seen once (MPIFFT's MPI_Alltoall) stays a phase of its own. Then, while
    there are more than max_phases, the neighbours whose joining adds least to the squared
    error join."""
    segs: List[list] = []
    for a, b in zip(bounds, bounds[1:]):
        p = _pattern(grid, a, b)
        if segs and segs[-1][2] == p:
            segs[-1][1] = b
        else:
            segs.append([a, b, p, {p} - {None}])

    def absorbed(middle: List[list], kinds: set, longest: int) -> bool:
        if len(middle) == 1 and middle[0][1] - middle[0][0] <= longest:
            return True
        return all(m[2] is None or m[2] in kinds for m in middle)

    joined = True
    while joined:
        joined = False
        for span in (1, 2):
            for i in range(len(segs) - span - 1):
                first, last, middle = segs[i], segs[i + span + 1], segs[i + 1:i + span + 1]
                longest = max(first[1] - first[0], last[1] - last[0])
                if first[2] is not None and first[2] == last[2] and absorbed(middle, first[3] | last[3], longest):
                    kinds = set().union(*(m[3] for m in segs[i:i + span + 2]))
                    segs[i:i + span + 2] = [[first[0], last[1], first[2], kinds]]
                    joined = True
                    break
            if joined:
                break
    cost = _Costs(x)
    while len(segs) > max(1, max_phases):
        j = min(range(1, len(segs)), key=lambda j: cost.merge_cost(segs[j - 1][0], segs[j][0], segs[j][1]))
        a, b = segs[j - 1][0], segs[j][1]
        segs[j - 1:j + 1] = [[a, b, _pattern(grid, a, b), segs[j - 1][3] | segs[j][3]]]
    return [segs[0][0]] + [seg[1] for seg in segs]


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


def _size_range(mask: int) -> Optional[List[int]]:
    """[lowest, highest + 1] bytes of the size bins seen; None for one bin (the mean size says it)."""
    used = [b for b in range(64) if mask >> b & 1]
    if len(used) <= 1:
        return None
    return [bin_range(used[0])[0], bin_range(used[-1])[1] + 1]


def _choose(order: List[int], moving: List[bool], nbytes: np.ndarray, top: int) -> List[int]:
    """Up to ``top`` of the calls in ``order`` (by time): data-moving ones first, by bytes
    moved, then waits; when there are both kinds, at least the leading wait."""
    data = sorted((j for j in order if moving[j]), key=lambda j: -nbytes[j])
    waits = [j for j in order if not moving[j]]
    if data and waits and top > 1:
        shown = data[:top - 1] + waits[:1]
        rest = [j for j in data + waits if j not in shown][:top - len(shown)]
        shown += rest
    else:
        shown = (data + waits)[:top]
    return [j for j in data if j in shown] + [j for j in waits if j in shown]


def _describe(grid: Dict[str, Any], weight: np.ndarray, top: int) -> Dict[str, Any]:
    """A phase: the windows' sums, each window counted by its weight (its share in the phase)."""
    time = weight @ grid["time"]
    count = weight @ grid["count"]
    nbytes = weight @ grid["bytes"]
    wall = float(weight @ grid["wall"])
    mpi = float(time.sum())
    inside = [w for w in range(len(weight)) if weight[w] > 0]
    moving = [moves_data(c, count[j], nbytes[j]) if count[j] >= 0.5 else grid["moves"][j]
              for j, c in enumerate(grid["calls"])]
    order = [j for j in sorted(range(len(grid["calls"])), key=lambda j: (-time[j], -count[j])) if time[j] > 0]
    calls = []
    for j in _choose(order, moving, nbytes, top):
        mask = 0
        for w in inside:
            mask |= grid["bins"][w][j]
        pmpi = 100.0 * time[j] / mpi if mpi > 0 else 0.0
        pwall = 100.0 * time[j] / wall if wall > 0 else 0.0
        begun = count[j] < 0.5  # a call that started before the phase and ran into it
        mean = 0.0 if begun else nbytes[j] / count[j]
        calls.append({"call": grid["calls"][j], "time": float(time[j]), "count": int(round(count[j])),
                      "bytes": int(nbytes[j]), "mean_size": float(mean), "begun_earlier": begun,
                      "size_range": None if begun else _size_range(mask),
                      "percent_mpi": pmpi, "percent_wall": pwall, "moves_data": moving[j]})
    pct = 100.0 * mpi / wall if wall > 0 else 0.0
    lead = next((c["call"] for c in calls if c["moves_data"]), None)
    return {"windows": len(inside), "mpi_time": mpi, "wall": wall, "percent_mpi": pct, "top_calls": calls,
            "lead": lead}


def phases(profile: Dict[str, Any], top: int = 3, spans: Optional[List[Tuple[float, float, str]]] = None,
           method: str = "pcontrol", align: bool = False) -> Dict[str, Any]:
    """{'phases': [...], 'method': 'pcontrol' | 'change points' | None | method, 'step': s}.
    spans ((start, end, label) on the profile's clock) are phases a caller found otherwise
    (HPCC's sections): given, they are the phases, named by their labels."""
    grid = window_grid(profile, align=align)
    if grid is None:
        return {"phases": [], "method": None, "step": None}
    n, step = len(grid["wall"]), grid["step"]
    info = profile["rank_info"]
    end = max(float(r["app_time"]) + off for r, off in zip(info, rank_offsets(info) if align else [0.0] * len(info)))
    if spans is None:
        spans = _marked_spans(profile, end)
    else:
        spans = [(min(a, end), min(max(b, a), end), label) for a, b, label in spans]
    if spans is None:
        x = mix_vectors(grid)
        bounds = merge_segments(grid, x, segment(x))
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
