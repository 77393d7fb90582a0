#!/usr/bin/env python3
"""Precision per second: the --precision stopping rule against a fixed time budget.

A performance benchmark, not a test. Runs the quick and/or standard suite's engine steps
(fabricbench.suite, one launch each, through mpirun on this machine) twice, alternately:

  fixed      --precision 0: every point fills its time budget (the behaviour before the
             rule: 0.05 s per point in quick, 0.2 s in standard)
  precision  --precision P (default 0.01): a point stops once the 95 % CI of its median is
             within P x median, the same budget as its ceiling

and prints, per suite and mode, the wall time of all steps (launches included) and the share
of points whose median's CI reached P (each record's detail.precision.reached, computed the
same way in both modes), with the median precision reached; then, per step, where the time
went: its wall time (median over rounds), the points that reached P, and how the points
stopped (detail.stop: precision, budget, guard, unreachable). REPEATS rounds alternate the two
modes so that a burst of load hits both; the table gives each round and the medians.

Usage: FABRICBENCH_NATIVE_DIR=build/stage PYTHONPATH=src python3 benchmarks/precision_budget.py \
           [--suites quick,standard] [--np 2] [--repeats 3] [--precision 0.01]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Tuple

from fabricbench import suite
from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.failure import launcher_line
from fabricbench.native import engine_path


def run_steps(steps, np_: int, extra: List[str], per_step: Dict[str, List[Tuple[float, List[dict]]]]
              ) -> Tuple[float, List[dict]]:
    """Wall seconds of every step (one launch each) and their point records; each step's own
    wall time and points are appended to per_step[benchmark]."""
    launcher = get_launcher("mpirun", Layout(np=np_))
    points: List[dict] = []
    t0 = time.monotonic()
    for step in steps:
        t_step, first = time.monotonic(), len(points)
        argv = launcher.command([str(engine_path()), *step.engine_args(), *extra])
        proc = subprocess.run(argv, env=launcher.environment(), capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            sys.exit(f"{step.benchmark} failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
        for line in proc.stdout.splitlines():
            if line.strip() and not launcher_line(line):
                rec = json.loads(line)
                if rec.get("record") == "point":
                    points.append(rec)
        per_step.setdefault(step.benchmark, []).append((time.monotonic() - t_step, points[first:]))
    return time.monotonic() - t0, points


def reached(points: List[dict], target: float) -> Tuple[float, float]:
    """(share of points whose median CI reached target, median precision reached) over points with one."""
    figures = [p["detail"]["precision"]["reached"] for p in points
               if isinstance(p.get("detail", {}).get("precision", {}).get("reached"), (int, float))]
    inf = len(points) - len(figures)  # no interval (fewer than 6 samples, or a median of 0)
    share = sum(1 for f in figures if f <= target) / (len(figures) + inf) if points else 0.0
    return share, statistics.median(figures) if figures else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default="quick", help="comma-separated: quick, standard (default quick)")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--precision", type=float, default=0.01)
    a = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"# precision rule {a.precision:g} vs fixed budget; {a.np} ranks; load at start {load:.1f}")
    print(f"{'suite':<9} {'mode':<10} {'round':>5} {'points':>6} {'wall (s)':>9} {'reached':>8} {'median P':>9}")
    summary: Dict[Tuple[str, str], List[Tuple[float, float, float]]] = {}
    steps_seen: Dict[Tuple[str, str], Dict[str, List[Tuple[float, List[dict]]]]] = {}
    for name in a.suites.split(","):
        steps = suite.plan([name], a.np)
        for r in range(1, a.repeats + 1):
            for mode, extra in (("fixed", ["--precision", "0"]), ("precision", ["--precision", f"{a.precision:g}"])):
                wall, points = run_steps(steps, a.np, extra, steps_seen.setdefault((name, mode), {}))
                share, med = reached(points, a.precision)
                summary.setdefault((name, mode), []).append((wall, share, med))
                print(f"{name:<9} {mode:<10} {r:>5} {len(points):>6} {wall:>9.1f} {share:>7.0%} {med:>9.4f}",
                      flush=True)
    print(f"# medians over rounds; load at end {os.getloadavg()[0]:.1f}")
    print(f"{'suite':<9} {'mode':<10} {'wall (s)':>9} {'reached':>8} {'median P':>9} {'time ratio':>10}")
    for (name, mode), rows in summary.items():
        wall = statistics.median(w for w, _s, _m in rows)
        base = statistics.median(w for w, _s, _m in summary[(name, "fixed")])
        share = statistics.median(s for _w, s, _m in rows)
        med = statistics.median(m for _w, _s, m in rows)
        print(f"{name:<9} {mode:<10} {wall:>9.1f} {share:>7.0%} {med:>9.4f} {wall / base:>10.2f}")
    print("# per step, medians over rounds: wall time, points that reached P, how points stopped")
    print(f"{'suite':<9} {'mode':<10} {'step':<15} {'wall (s)':>9} {'reached':>8}  stops")
    for (name, mode), by_step in steps_seen.items():
        for bench, rounds in by_step.items():
            wall = statistics.median(w for w, _p in rounds)
            share = statistics.median(reached(p, a.precision)[0] for _w, p in rounds)
            stops: Dict[str, int] = {}
            for _w, pts in rounds:
                for p in pts:
                    why = str(p.get("detail", {}).get("stop"))
                    stops[why] = stops.get(why, 0) + 1
            told = " ".join(f"{k} {v / len(rounds):g}" for k, v in sorted(stops.items()))
            print(f"{name:<9} {mode:<10} {bench:<15} {wall:>9.2f} {share:>7.0%}  {told}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
