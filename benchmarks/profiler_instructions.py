#!/usr/bin/env python3
"""Instructions per wrapped MPI call of libfabricbench-prof, beside the wall-clock overhead.

The hot path's cost in nanoseconds depends on the machine (a quiet Xeon, a loaded VM); the
instructions it executes do not. This counts them with valgrind's callgrind (hardware
counters, `perf stat -e instructions`, are often unavailable in a VM; callgrind works
everywhere): profiler_instructions.c runs N calls of MPI_Comm_rank (the cheapest MPI call)
and N pairs of a 1-byte MPI_Send to itself and the MPI_Recv that matches it (no waiting, so
the count does not depend on timing), and the same pairs on a duplicate of MPI_COMM_WORLD
(a communicator whose peers the profiler must map to world ranks), once without the library
and once with it (call sites and time windows on, as they always are). Instructions per call = the loop's
instructions / calls. The profiler's cost is shown two ways: with the library minus
without it (everything it adds, MPI's own variation included), and the instructions
executed inside the library itself, split into its wrappers (the hot path every call
takes, beyond PMPI) and its out-of-line slow paths. The goal is at most 40 in the wrapper.

It then times the same loops and a 1-byte ping-pong between two ranks natively (best of
many short loops, which holds up under other load), with and without the library.

usage: python3 benchmarks/profiler_instructions.py [--calls N] [--reps N] [--library PATH] [--no-time]
  needs mpicc, mpirun and valgrind (Debian: apt-get install valgrind);
  PYTHONPATH=src and FABRICBENCH_NATIVE_DIR=<cmake install prefix> for a developer build.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL = 40
# loop function -> (label, MPI calls per iteration, argument of "count")
LOOPS = {"fb_loop_comm_rank": ("MPI_Comm_rank", 1, "rank"),
         "fb_loop_self_sendrecv": ("MPI_Send + MPI_Recv", 2, "sendrecv"),
         "fb_loop_dup_sendrecv": ("Send+Recv, dup'ed comm", 2, "dup")}
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?):(\S+)\s+\[(.+)\]\s*$")


def find_library(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).resolve()
    sys.path.insert(0, str(HERE.parent / "src"))
    from fabricbench.native import profiler_library

    return profiler_library()


def callgrind(exe: Path, loop: str, calls: int, env_extra: dict, work: Path, lib: Path) -> dict:
    """One loop under callgrind: its instructions (inclusive: everything it called), and of
    them those executed in the profiler's library, in its wrappers (the fast path) or in
    its out-of-line slow paths (a slot's window changing, the windows growing, ...)."""
    tag = f"{loop}.{'with' if env_extra else 'without'}"
    out = work / f"callgrind.{tag}"
    env = dict(os.environ, **ROOT_ENV, **{k: str(v) for k, v in env_extra.items()})
    argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
            f"--toggle-collect={loop}", str(exe), "count", LOOPS[loop][2], str(calls)]
    run = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    if run.returncode != 0 or not out.exists():
        raise SystemExit(f"callgrind run ({tag}) failed, exit status {run.returncode}:\n{run.stderr[-2000:]}")
    result = {"total": 0, "fast": 0, "slow": 0, "grow": 0}
    for inclusive in (True, False):
        text = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                               "--threshold=100", str(out)], capture_output=True, text=True, timeout=300,
                              check=True).stdout
        for line in text.splitlines():
            m = LINE.match(line)
            if not m:
                continue
            count, func, obj = int(m.group(1).replace(",", "")), m.group(3), m.group(4)
            if inclusive and func == loop:
                result["total"] = count
            elif not inclusive and Path(obj).name == lib.name:
                wrapper = func.upper().startswith("MPI_") or func.startswith("fb_slow_MPI")
                result["fast" if wrapper else "grow" if func == "fb_window_grow" else "slow"] += count
    if not result["total"]:
        raise SystemExit(f"callgrind_annotate shows no {loop} ({tag}); was the program built with -O2?")
    return result


def wall_clock(exe: Path, calls: int, reps: int, env_extra: dict, work: Path) -> dict:
    env = dict(os.environ, **ROOT_ENV)
    argv = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"]
    for key, value in env_extra.items():
        argv += ["-x", f"{key}={value}"]
    argv += [str(exe), "time", str(calls), str(reps)]
    run = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20_000, help="calls per loop under callgrind")
    ap.add_argument("--reps", type=int, default=300, help="timed loops per run (best kept)")
    ap.add_argument("--time-calls", type=int, default=20_000, help="calls per timed loop")
    ap.add_argument("--library")
    ap.add_argument("--no-time", action="store_true", help="count instructions only")
    opts = ap.parse_args()
    for tool in ("mpicc", "mpirun", "valgrind", "callgrind_annotate"):
        if not shutil.which(tool):
            hint = " (Debian: apt-get install valgrind)" if "grind" in tool else ""
            raise SystemExit(f"profiler_instructions needs {tool} on PATH{hint}")
    lib = find_library(opts.library)
    if not lib.exists():
        raise SystemExit(f"no profiler library at {lib}; build it (cmake --build) or give --library")

    with tempfile.TemporaryDirectory(prefix="fb-prof-instr-") as tmp:
        work = Path(tmp)
        exe = work / "profiler_instructions"
        subprocess.run(["mpicc", "-O2", "-o", str(exe), str(HERE / "profiler_instructions.c")], check=True)
        with_lib = {"LD_PRELOAD": lib, "FABRICBENCH_PROFILE": work / "profile.json"}
        counts = {loop: (callgrind(exe, loop, opts.calls, {}, work, lib),
                         callgrind(exe, loop, opts.calls, with_lib, work, lib)) for loop in LOOPS}
        times = None
        if not opts.no_time:
            times = {"without": wall_clock(exe, opts.time_calls, opts.reps, {}, work),
                     "with": wall_clock(exe, opts.time_calls, opts.reps, with_lib, work)}

    load = os.getloadavg()[0]
    print(f"libfabricbench-prof: instructions per wrapped call (valgrind callgrind, {opts.calls} iterations")
    print(f"per loop), call sites and time windows on; {lib}")
    print(f"{'call':30}{'without':>9}{'with':>9}{'added':>8}{'wrapper':>9}{'slow':>7}{'grow':>7}")
    worst = 0.0
    for loop, (label, per, _) in LOOPS.items():
        n = opts.calls * per
        base, prof = counts[loop]
        b, p = base["total"] / n, prof["total"] / n
        fast, slow, grow = prof["fast"] / n, prof["slow"] / n, prof["grow"] / n
        worst = max(worst, fast)
        print(f"{label if per == 1 else label + ' (each)':30}{b:9.1f}{p:9.1f}{p - b:8.1f}{fast:9.1f}{slow:7.1f}"
              f"{grow:7.1f}")
    print("added: with minus without; wrapper: executed in the wrappers (the fast path, PMPI excluded);")
    print("slow: in the profiler's out-of-line paths (a time window ends, a call that did not repeat")
    print("     its wrapper's last arguments); grow: the windows doubling their length, a copy that")
    print("     comes with elapsed time since MPI_Init, which callgrind and the load stretch (its")
    print("     memset is counted in 'with' and 'added' only)")
    if times:
        w, p = times["without"], times["with"]
        print()
        print(f"wall clock (2 ranks on one host, {os.cpu_count()} CPUs, load average {load:.1f}, "
              f"best of {opts.reps} loops):")
        print(f"{'':30}{'without':>10}{'with':>10}{'added':>9}")
        rows = [("MPI_Comm_rank [ns/call]", "comm_rank_ns"), ("self Send/Recv [ns/call]", "self_send_recv_ns"),
                ("ping-pong one way [ns]", "pingpong_oneway_ns")]
        for label, key in rows:
            print(f"{label:30}{w[key]:10.1f}{p[key]:10.1f}{p[key] - w[key]:+9.1f}")
        print("(a one-way trip of the ping-pong has two wrapped calls on its path: a Send and a Recv)")
    print()
    print(f"most instructions in a wrapper per call: {worst:.1f} -> {'meets' if worst <= GOAL else 'misses'} "
          f"the goal of at most {GOAL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
