#!/usr/bin/env python3
"""Per-call overhead of libfabricbench-prof (goal: at most 15 ns per call, with call sites
and time windows on, as they always are).

Compiles profiler_overhead.c with mpicc and runs it on 2 ranks in three setups: without the
library, with it (TSC timer, the default where the CPU has an invariant TSC), and with it
using the clock_gettime timer; and with mpiP when its library is found (--mpip PATH, or
libmpiP.so where the dynamic linker finds it; Debian does not ship mpiP). Two cheap
workloads are timed: a tight loop of MPI_Iprobe that never matches, and a 1-byte
ping-pong. Two figures of overhead are printed:

* recording cost: recording on minus recording off (MPI_Pcontrol), timed side by side in
  the same process, so it holds up under other load on the machine;
* total: with the library minus without it, across separate runs. This includes the
  interposition itself, but other load on the machine makes it noisier.

Setups alternate over several rounds and the best figure of each is kept, since other work
on the machine only ever adds time. The script prints the figures and asserts nothing.

usage: python3 benchmarks/profiler_overhead.py [--rounds N] [--iprobe N] [--pingpong N] [--library PATH]
  (PYTHONPATH=src and FABRICBENCH_NATIVE_DIR=<cmake install prefix> for a developer build)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL_NS = 15.0
KEYS = ("iprobe_on_ns", "iprobe_off_ns", "pingpong_on_us", "pingpong_off_us")


def find_library(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).resolve()
    sys.path.insert(0, str(HERE.parent / "src"))
    from fabricbench.native import profiler_library

    return profiler_library()


def run(exe: Path, args, env_extra, workdir: Path) -> dict:
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    argv = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"]
    for key, value in env_extra.items():
        argv += ["-x", f"{key}={value}"]
    argv += [str(exe), *map(str, args)]
    out = subprocess.run(argv, env=env, cwd=workdir, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stderr}")
    line = [l for l in out.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)


def find_mpip(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit).resolve()
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return None
    for line in listing.splitlines():
        if "libmpiP.so" in line and "=>" in line:
            return Path(line.split("=>", 1)[1].strip())
    return None


def verdict(ns: float) -> str:
    return "meets" if ns <= GOAL_NS else "misses"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="runs of each setup (best kept)")
    # Short loops, many of them: the best one ran without being preempted by other work.
    ap.add_argument("--iprobe", type=int, default=20_000, help="Iprobe calls per loop")
    ap.add_argument("--pingpong", type=int, default=2_000, help="round trips per loop")
    ap.add_argument("--reps", type=int, default=200, help="on/off loop pairs inside one run (best kept)")
    ap.add_argument("--library")
    ap.add_argument("--mpip", help="libmpiP.so to compare with (default: found by the dynamic linker, if any)")
    opts = ap.parse_args()
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        raise SystemExit("profiler_overhead needs mpicc and mpirun on PATH")
    lib = find_library(opts.library)
    mpip = find_mpip(opts.mpip)

    with tempfile.TemporaryDirectory(prefix="fb-prof-overhead-") as tmp:
        work = Path(tmp)
        exe = work / "profiler_overhead"
        subprocess.run(["mpicc", "-O2", "-o", str(exe), str(HERE / "profiler_overhead.c")], check=True)
        profile = work / "profile.json"
        setups = {
            "without library": {},
            "library, tsc timer": {"LD_PRELOAD": lib, "FABRICBENCH_PROFILE": profile},
            "library, clock_gettime timer": {"LD_PRELOAD": lib, "FABRICBENCH_PROFILE": profile,
                                             "FABRICBENCH_PROFILE_TIMER": "clock"},
        }
        if mpip:
            setups["mpiP"] = {"LD_PRELOAD": mpip, "MPIP": "-f " + str(work)}
        best = {name: {k: float("inf") for k in KEYS} for name in setups}
        for _ in range(opts.rounds):
            for name, env_extra in setups.items():
                r = run(exe, [opts.iprobe, opts.pingpong, opts.reps], env_extra, work)
                for k in KEYS:
                    best[name][k] = min(best[name][k], r[k])

    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"libfabricbench-prof overhead: {mpi}, 2 ranks on one host ({os.cpu_count()} CPUs, load average {load:.1f}), "
          f"best of {opts.rounds} runs x {opts.reps} repetitions; call sites and time windows on")
    print(f"{'':30}{'MPI_Iprobe [ns/call]':>24}{'1-byte one-way latency [us]':>32}")
    print(f"{'':30}{'recording on':>13}{'off':>11}{'recording on':>21}{'off':>11}")
    for name, r in best.items():
        print(f"{name:30}{r['iprobe_on_ns']:13.1f}{r['iprobe_off_ns']:11.1f}"
              f"{r['pingpong_on_us']:21.4f}{r['pingpong_off_us']:11.4f}")
    print()
    base = best["without library"]
    for name in [n for n in setups if n not in ("without library", "mpiP")]:
        r = best[name]
        # One one-way trip is one MPI_Send on one rank and one MPI_Recv on the other: / 2.
        rec_ip = r["iprobe_on_ns"] - r["iprobe_off_ns"]
        rec_pp = (r["pingpong_on_us"] - r["pingpong_off_us"]) * 1e3 / 2
        tot_ip = r["iprobe_on_ns"] - base["iprobe_on_ns"]
        tot_pp = (r["pingpong_on_us"] - base["pingpong_on_us"]) * 1e3 / 2
        print(f"{name}:")
        # The goal is stated on the 1-byte ping-pong; MPI_Iprobe, the cheapest call there is,
        # shows the cost of the wrapper alone.
        print(f"  recording cost (on - off, same process): {rec_ip:+.1f} ns per MPI_Iprobe, "
              f"{rec_pp:+.1f} ns per Send/Recv -> ping-pong {verdict(rec_pp)} the {GOAL_NS:.0f} ns goal")
        print(f"  total (library - no library, separate runs): {tot_ip:+.1f} ns per MPI_Iprobe, "
              f"{tot_pp:+.1f} ns per Send/Recv -> ping-pong {verdict(tot_pp)} the {GOAL_NS:.0f} ns goal")
    if "mpiP" in best:
        r = best["mpiP"]
        print(f"mpiP ({mpip}): {r['iprobe_on_ns'] - base['iprobe_on_ns']:+.1f} ns per MPI_Iprobe, "
              f"{(r['pingpong_on_us'] - base['pingpong_on_us']) * 1e3 / 2:+.1f} ns per Send/Recv (library - no library)")
    else:
        print("mpiP: not installed (Debian does not ship it; give --mpip PATH to compare)")
    off = best["library, tsc timer"]
    print(f"library loaded, recording off, vs no library: {off['iprobe_off_ns'] - base['iprobe_off_ns']:+.1f} ns per MPI_Iprobe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
