"""Reading an MPI profile written by libfabricbench-prof, and views of its tables.

The file format is described in native/profiler/README.md; ``load_profile`` checks it and
returns the parsed JSON unchanged (a dict), so the profile can be stored as is.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union


FORMAT = "fabricbench-mpi-profile"
SUPPORTED_VERSION = 1
CALL_COLUMNS = ["rank", "call", "bin", "count", "bytes", "time", "min", "max"]
MATRIX_LAYERS = ("p2p", "rma", "coll")
NBINS = 65

PathLike = Union[str, Path]


class ProfileError(ValueError):
    """A profile file is missing, unreadable or not in the expected format."""


def bin_range(b: int) -> Tuple[int, int]:
    """Smallest and largest message size in bytes of size bin b."""
    if b <= 0:
        return (0, 0)
    return (1 << (b - 1), (1 << b) - 1)


def load_profile(path: PathLike) -> Dict[str, Any]:
    """Read and check a profile; a ProfileError names the file and what is wrong."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{p}: no such profile file") from None
    except OSError as exc:
        raise ProfileError(f"{p}: cannot read the profile: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{p}: not a text file ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    problem = _check(data)
    if problem:
        raise ProfileError(f"{p}: not a valid fabricbench MPI profile: {problem}")
    return data


def validate_profile(data: Any) -> None:
    """Raise ProfileError if data (already parsed) is not a valid profile."""
    problem = _check(data)
    if problem:
        raise ProfileError(f"not a valid fabricbench MPI profile: {problem}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x: Any) -> bool:
    return (isinstance(x, (int, float)) and not isinstance(x, bool)) and math.isfinite(x)


def _check(data: Any) -> Optional[str]:
    if not isinstance(data, dict):
        return "the top level is not a JSON object"
    if data.get("format") != FORMAT:
        return f"'format' is {data.get('format')!r}, expected {FORMAT!r}"
    version = data.get("version")
    if not _is_int(version):
        return "'version' is missing or not an integer"
    if version > SUPPORTED_VERSION:
        return f"version {version} is newer than this fabricbench reads ({SUPPORTED_VERSION}); upgrade fabricbench"
    ranks = data.get("ranks")
    if not _is_int(ranks) or ranks < 1:
        return "'ranks' is missing or not a positive integer"
    hosts = data.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        return "'hosts' is not a list of host names"
    if not isinstance(data.get("mpi"), dict):
        return "'mpi' is missing"
    if "command" in data and not (
        isinstance(data["command"], list) and all(isinstance(a, str) for a in data["command"])
    ):
        return "'command' is not a list of strings"

    info = data.get("rank_info")
    if not isinstance(info, list) or len(info) != ranks:
        return f"'rank_info' must list {ranks} ranks"
    for i, r in enumerate(info):
        if not isinstance(r, dict) or r.get("rank") != i:
            return f"rank_info[{i}] is not the entry of rank {i}"
        for key in ("app_time", "mpi_time"):
            if not _is_num(r.get(key)) or r[key] < 0:
                return f"rank_info[{i}].{key} is not a non-negative number"
        problem = _check_cpu(r, i)
        if problem:
            return problem

    calls = data.get("calls")
    if not isinstance(calls, list):
        return "'calls' is missing"
    if data.get("call_columns", CALL_COLUMNS) != CALL_COLUMNS:
        return f"'call_columns' is not {CALL_COLUMNS}"
    for i, row in enumerate(calls):
        if not isinstance(row, list) or len(row) != len(CALL_COLUMNS):
            return f"calls[{i}] does not have the {len(CALL_COLUMNS)} columns {CALL_COLUMNS}"
        rank, call, b, count, nbytes, t, tmin, tmax = row
        if not _is_int(rank) or not 0 <= rank < ranks:
            return f"calls[{i}]: rank {rank!r} is not between 0 and {ranks - 1}"
        if not isinstance(call, str) or not call:
            return f"calls[{i}]: the call name is not a string"
        if not _is_int(b) or not 0 <= b < NBINS:
            return f"calls[{i}]: size bin {b!r} is not between 0 and {NBINS - 1}"
        if not all(_is_int(v) and v >= 0 for v in (count, nbytes)):
            return f"calls[{i}]: count and bytes must be non-negative integers"
        if not all(_is_num(v) and v >= 0 for v in (t, tmin, tmax)):
            return f"calls[{i}]: times must be non-negative numbers"

    problem = _check_sites_and_windows(data, ranks)
    if problem:
        return problem

    matrix = data.get("matrix")
    if not isinstance(matrix, dict):
        return "'matrix' is missing"
    for layer in MATRIX_LAYERS:
        cells = matrix.get(layer, [])
        if not isinstance(cells, list):
            return f"matrix.{layer} is not a list"
        for i, cell in enumerate(cells):
            if not (isinstance(cell, list) and len(cell) == 4 and all(_is_int(v) and v >= 0 for v in cell)):
                return f"matrix.{layer}[{i}] is not [src, dst, messages, bytes]"
            if cell[0] >= ranks or cell[1] >= ranks:
                return f"matrix.{layer}[{i}] names a rank outside 0..{ranks - 1}"
    return None


def _check_cpu(r: Dict[str, Any], i: int) -> Optional[str]:
    """Whether the rank shared cores (absent in older profiles; run_delay and machine may be null)."""
    if "cpu_time" in r and (not _is_num(r["cpu_time"]) or r["cpu_time"] < 0):
        return f"rank_info[{i}].cpu_time is not a non-negative number"
    if r.get("run_delay") is not None and (not _is_num(r["run_delay"]) or r["run_delay"] < 0):
        return f"rank_info[{i}].run_delay is not a non-negative number or null"
    for key in ("cpus_online", "cpus_allowed"):
        if r.get(key) is not None and (not _is_int(r[key]) or r[key] < 0):
            return f"rank_info[{i}].{key} is not a non-negative integer or null"
    if r.get("machine") is not None and not isinstance(r["machine"], str):
        return f"rank_info[{i}].machine is not a string or null"
    return None


def _check_sites_and_windows(data: Dict[str, Any], ranks: int) -> Optional[str]:
    """The call-site and time-window tables of libfabricbench-prof (absent in older profiles;
    an mpiP import has its own call-site dicts and no columns)."""
    if "callsite_columns" in data:
        for i, row in enumerate(data.get("callsites") or []):
            if not (isinstance(row, list) and len(row) == 10 and _is_int(row[0]) and 0 <= row[0] < ranks
                    and isinstance(row[1], str) and _is_int(row[2]) and _is_int(row[3])
                    and all(_is_num(v) and v >= 0 for v in row[5:])):
                return f"callsites[{i}] is not [rank, call, module, address, symbol, count, bytes, time, min, max]"
    if "window_columns" in data:
        for r in data["rank_info"]:
            if not _is_num(r.get("window_s")) or r["window_s"] <= 0:
                return f"rank_info[{r['rank']}].window_s is not a positive number"
        for i, row in enumerate(data.get("windows") or []):
            if not (isinstance(row, list) and len(row) == 7 and _is_int(row[0]) and 0 <= row[0] < ranks
                    and _is_int(row[1]) and row[1] >= 0 and isinstance(row[2], str)
                    and all(_is_num(v) and v >= 0 for v in row[3:])):
                return f"windows[{i}] is not [rank, window, call, count, bytes, time, bins]"
    return None


def rank_threads(rank_info: Dict[str, Any]) -> int:
    """How many threads of a rank called MPI (1 for profiles without thread data)."""
    threads = rank_info.get("mpi_threads")
    return int(threads) if isinstance(threads, (int, float)) and threads >= 1 else 1


def share_bases(profile: Dict[str, Any]) -> Tuple[float, float]:
    """What a call's time is a share of, summed over ranks: (the time all threads spent in
    calls, the wall time of the threads that called MPI). A thread's time counts once per
    call, so with several threads in MPI at once (MPI_THREAD_MULTIPLE) the calls' times add
    up over threads, and so do these bases: no call's share exceeds 100%. A single-threaded
    rank gives its MPI time and its run time, as mpiP counts them; profiles without thread
    data count as single-threaded."""
    calls = wall = 0.0
    for r in profile["rank_info"]:
        calls += float(r.get("mpi_time_all_threads", r["mpi_time"]))
        wall += float(r["app_time"]) * rank_threads(r)
    return calls, wall


def call_rows(profile: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """The per-rank, per-call, per-size-bin entries as dicts (with the bin's byte range)."""
    for row in profile["calls"]:
        entry = dict(zip(CALL_COLUMNS, row))
        entry["size_min"], entry["size_max"] = bin_range(entry["bin"])
        yield entry


def matrix_cells(profile: Dict[str, Any], layers=MATRIX_LAYERS) -> Dict[Tuple[int, int], Dict[str, int]]:
    """{(src, dst): {"messages", "bytes", and bytes per layer}} summed over the chosen layers."""
    if isinstance(layers, str):
        layers = (layers,)
    out: Dict[Tuple[int, int], Dict[str, int]] = {}
    for layer in layers:
        for src, dst, msgs, nbytes in profile["matrix"].get(layer, []):
            cell = out.setdefault((src, dst), {"messages": 0, "bytes": 0, **{l: 0 for l in MATRIX_LAYERS}})
            cell["messages"] += msgs
            cell["bytes"] += nbytes
            cell[layer] += nbytes
    return out


def matrix_dense(profile: Dict[str, Any], layers=MATRIX_LAYERS, metric: str = "bytes") -> List[List[int]]:
    """ranks x ranks matrix (row = source) of 'bytes' or 'messages'."""
    n = profile["ranks"]
    dense = [[0] * n for _ in range(n)]
    for (src, dst), cell in matrix_cells(profile, layers).items():
        dense[src][dst] += cell[metric]
    return dense
