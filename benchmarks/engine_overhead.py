#!/usr/bin/env python3
"""How much does fabricbench-mpi's machinery cost? A performance benchmark, not a test.

Measures 0-byte and 8-byte latency and 4 MiB bandwidth between 2 local ranks, over shared
memory and over TCP (``--mca btl tcp,self``), with the engine and with a minimal
hand-written ping-pong (benchmarks/minimal_pingpong.c, compiled here with mpicc into a
temporary directory). Both run the same fixed iteration and warm-up counts; each pair of
programs is run REPEATS times alternately and the medians are compared.

ratio = engine time / minimal time (latency: engine / minimal; bandwidth: minimal /
engine), so 1.00 means no overhead; the goal is <= 1.02. Noise from other processes only
ever adds time, so the best run of each program is the fairest comparison ("best"
columns); the medians and the spread between repeats are printed too, so a noisy
machine shows itself.

With --mpi openmpi,mpich the whole table is measured under each MPI in turn (its own build,
mpicc and launcher; MPICH over shared memory only, as the TCP case is Open MPI's --mca) and
a last table puts the engine's latency and bandwidth under the two side by side.

Usage: FABRICBENCH_NATIVE_DIR=build/stage PYTHONPATH=src python3 benchmarks/engine_overhead.py [--repeats N]
       PYTHONPATH=src python3 benchmarks/engine_overhead.py --mpi openmpi,mpich \
           [--native openmpi=build/stage --native mpich=build/stage-mpich]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.failure import launcher_line
from fabricbench.launch.mpi import detect_mpi, mpi_tool
from fabricbench.native import engine_path, find_native

HERE = Path(__file__).resolve().parent

# (label, kind, size, iterations, warmup) per transport: enough iterations for ~0.1-1 s.
CASES = {
    "shm": [
        ("latency 0 B", "latency", 0, 200_000, 10_000),
        ("latency 8 B", "latency", 8, 200_000, 10_000),
        ("bw 4 MiB", "bw", 4 << 20, 20, 2),
    ],
    "tcp": [
        ("latency 0 B", "latency", 0, 20_000, 1_000),
        ("latency 8 B", "latency", 8, 20_000, 1_000),
        ("bw 4 MiB", "bw", 4 << 20, 10, 2),
    ],
}
MCA = {"shm": [], "tcp": ["--mca", "btl", "tcp,self"]}
WINDOW = 64


def compile_minimal(workdir: Path) -> Path:
    exe = workdir / "minimal_pingpong"
    # MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC takes for a zero-size array.
    quiet = ["-Wno-stringop-overflow"] if detect_mpi().flavour == "mpich" else []
    subprocess.run([mpi_tool("mpicc"), "-O2", *quiet, "-o", str(exe), str(HERE / "minimal_pingpong.c")], check=True)
    return exe


def launch(argv, transport: str) -> str:
    launcher = get_launcher("mpirun", Layout(np=2, extra_args=MCA[transport]))
    proc = subprocess.run(launcher.command(argv), env=launcher.environment(), capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def run_engine(engine: Path, kind: str, size: int, iterations: int, warmup: int, transport: str) -> float:
    argv = [str(engine), kind, "--sizes", f"{size}:{size}", "--iterations", str(iterations),
            "--warmup", str(warmup)]
    if kind == "bw":
        argv += ["--window", str(WINDOW)]
    lines = [line for line in launch(argv, transport).splitlines() if not launcher_line(line)]  # Hydra's exit codes
    points = [r for r in map(json.loads, lines) if r["record"] == "point"]
    return points[0]["value"]


def run_minimal(exe: Path, kind: str, size: int, iterations: int, warmup: int, transport: str) -> float:
    argv = [str(exe), kind, str(size), str(iterations), str(warmup)] + ([str(WINDOW)] if kind == "bw" else [])
    return float(launch(argv, transport).strip().split("=")[1])


def measure_all(repeats: int, transports) -> dict:
    """The table for the selected MPI; returns {(transport, label): (engine best, minimal best)}."""
    engine = engine_path()
    best_of = {}
    with tempfile.TemporaryDirectory() as tmp:
        minimal = compile_minimal(Path(tmp))
        mpi = detect_mpi()
        print(f"MPI: {mpi.version} ({mpi.mpirun})\nengine: {engine}\nminimal: benchmarks/minimal_pingpong.c, "
              f"repeats: {repeats}, window {WINDOW} for bw, load average {os.getloadavg()[0]:.2f} at the start\n")
        header = (f"{'transport':<9} {'case':<12} {'iterations':>10} {'warmup':>7} {'unit':>5} "
                  f"{'engine best':>12} {'minimal best':>12} {'ratio':>6}   {'engine med':>11} "
                  f"{'minimal med':>11} {'ratio':>6}  spread e/m")
        print(header)
        print("-" * len(header))
        worst = 0.0
        for transport in transports:
            for label, kind, size, iterations, warmup in CASES[transport]:
                eng, mini = [], []
                for _ in range(repeats):
                    eng.append(run_engine(engine, kind, size, iterations, warmup, transport))
                    mini.append(run_minimal(minimal, kind, size, iterations, warmup, transport))
                best = min if kind == "latency" else max
                eb, mb = best(eng), best(mini)
                best_of[(transport, label)] = (eb, mb)
                em, mm = statistics.median(eng), statistics.median(mini)
                ratio_best = eb / mb if kind == "latency" else mb / eb
                ratio_median = em / mm if kind == "latency" else mm / em
                worst = max(worst, ratio_best)
                unit = "us" if kind == "latency" else "MB/s"
                spread = f"{(max(eng) - min(eng)) / em * 100:.0f}%/{(max(mini) - min(mini)) / mm * 100:.0f}%"
                print(f"{transport:<9} {label:<12} {iterations:>10} {warmup:>7} {unit:>5} {eb:>12.3f} {mb:>12.3f} "
                      f"{ratio_best:>6.3f}   {em:>11.3f} {mm:>11.3f} {ratio_median:>6.3f}  {spread}", flush=True)
        print(f"\nworst best-of-{repeats} ratio {worst:.3f} (goal <= 1.02; > 1 means the engine looks slower); "
              f"load average {os.getloadavg()[0]:.2f} at the end\n")
    return best_of


def side_by_side(results: dict) -> None:
    """The engine's (and the minimal ping-pong's) best figures over shared memory, one column per MPI."""
    families = list(results)
    print("shared memory, 2 local ranks, best of the repeats: engine (minimal ping-pong)")
    print(f"{'case':<12} {'unit':>5} " + " ".join(f"{f:>24}" for f in families))
    for label, kind, *_ in CASES["shm"]:
        unit = "us" if kind == "latency" else "MB/s"
        cells = []
        for f in families:
            eb, mb = results[f][("shm", label)]
            cells.append(f"{f'{eb:,.3f} ({mb:,.3f})':>24}")
        print(f"{label:<12} {unit:>5} " + " ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs of each program per case (7)")
    parser.add_argument("--mpi", help="MPIs to measure one after the other, e.g. openmpi,mpich (default: the selected one)")
    parser.add_argument("--native", action="append", default=[], metavar="MPI=DIR",
                        help="the native build of an MPI (default: make native's, the package's or FABRICBENCH_NATIVE_DIR)")
    args = parser.parse_args()
    if not args.mpi:
        measure_all(args.repeats, CASES)
        return
    given = dict(item.split("=", 1) for item in args.native)
    results = {}
    for family in args.mpi.split(","):
        build = find_native(family, *([Path(given[family])] if family in given else []))
        if build is None:
            sys.exit(f"no native build for {family}: make native MPI={family}, or --native {family}=DIR")
        os.environ.update(FABRICBENCH_MPI=family, FABRICBENCH_NATIVE_DIR=str(build))
        results[family] = measure_all(args.repeats, ["shm", "tcp"] if family == "openmpi" else ["shm"])
    side_by_side(results)


if __name__ == "__main__":
    main()
