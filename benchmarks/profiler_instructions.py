#!/usr/bin/env python3
"""Instructions per wrapped MPI call of libfabricbench-prof, beside the wall-clock overhead.

The hot path's cost in nanoseconds depends on the machine (a quiet Xeon, a loaded VM); the
instructions it executes do not. This counts them with valgrind's callgrind (hardware
counters, `perf stat -e instructions`, are often unavailable in a VM; callgrind works
everywhere): profiler_instructions.c runs N calls of MPI_Comm_rank (the cheapest MPI call)
and N pairs of a 1-byte MPI_Send to itself and the MPI_Recv that matches it (no waiting, so
the count does not depend on timing), once without the library and once with it (call
sites and time windows on, as they always are). Instructions per call = the loop's
instructions / calls; the profiler's cost = with the library minus without it, i.e. the
instructions it adds to a call beyond PMPI (the wrapper, its call into PMPI, the recording).
The goal is at most 40.

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
LOOPS = {"fb_loop_comm_rank": ("MPI_Comm_rank", 1), "fb_loop_self_sendrecv": ("MPI_Send + MPI_Recv", 2)}
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def find_library(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).resolve()
    sys.path.insert(0, str(HERE.parent / "src"))
    from fabricbench.native import profiler_library

    return profiler_library()


def callgrind_counts(exe: Path, calls: int, env_extra: dict, work: Path, tag: str) -> dict:
    """Instructions of each loop function (inclusive: everything it called) -> per iteration."""
    out = work / f"callgrind.{tag}"
    env = dict(os.environ, **ROOT_ENV, **{k: str(v) for k, v in env_extra.items()})
    argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}"]
    argv += [f"--toggle-collect={name}" for name in LOOPS] + [str(exe), "count", str(calls)]
    run = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    if run.returncode != 0 or not out.exists():
        raise SystemExit(f"callgrind run ({tag}) failed, exit status {run.returncode}:\n{run.stderr[-2000:]}")
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, timeout=300, check=True).stdout
    result = {}
    for name in LOOPS:
        m = re.search(r"^\s*([\d,]+)\s.*:%s\b" % re.escape(name), text, re.M)
        if not m:
            raise SystemExit(f"callgrind_annotate shows no {name} ({tag}); was the program built with -O2?")
        result[name] = int(m.group(1).replace(",", ""))
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
        base = callgrind_counts(exe, opts.calls, {}, work, "without")
        prof = callgrind_counts(exe, opts.calls, with_lib, work, "with")
        times = None
        if not opts.no_time:
            times = {"without": wall_clock(exe, opts.time_calls, opts.reps, {}, work),
                     "with": wall_clock(exe, opts.time_calls, opts.reps, with_lib, work)}

    load = os.getloadavg()[0]
    print(f"libfabricbench-prof: instructions per wrapped call (valgrind callgrind, {opts.calls} calls per loop),")
    print(f"call sites and time windows on; {lib}")
    print(f"{'call':28}{'without':>10}{'with':>10}{'added':>8}  goal <= {GOAL}")
    worst = 0.0
    for name, (label, per) in LOOPS.items():
        n = opts.calls * per
        b, p = base[name] / n, prof[name] / n
        worst = max(worst, p - b)
        print(f"{label if per == 1 else label + ' (each)':28}{b:10.1f}{p:10.1f}{p - b:8.1f}  "
              f"{'meets' if p - b <= GOAL else 'misses'}")
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
    print(f"most instructions added to one call: {worst:.1f} -> {'meets' if worst <= GOAL else 'misses'} "
          f"the goal of at most {GOAL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
