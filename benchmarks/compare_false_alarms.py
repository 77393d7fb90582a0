#!/usr/bin/env python3
"""How often does `fabricbench compare` call two identical runs different? A benchmark, not a test.

Repeats REPEATS times: two back-to-back `fabricbench run quick --np 2` runs (same machine,
same MPI, nothing changed), then `compare` of the second against the first. Every point
called better or worse is a false alarm; the goal is 0. Prints each pair's flagged points
(with B/A), the host's load average when the pair started (other work on a shared host
changes a run's figures for real, and a comparison of two runs cannot tell that from a
fabric change), and the totals.

With --baseline-runs K, K runs are measured first and every later run is compared with
all K of them (as `check --against` a baseline of K replicate runs does): the spread of the
K runs is then the run-to-run noise the comparison allows for.

Each pair says when the engine's host probe saw the host itself change state between the two
runs (a cache line's round trip between the cores, the speed of a core) and how many points
compare therefore held as "host changed" rather than calling them.

Each pair also says where compare took the run-to-run noise from: the launches of the two
runs only, or the earlier runs of the same configuration in the database (the pairs before
it: from the third pair on, 2 or more), and the totals are given per source. --no-history
makes compare ignore the earlier runs (launches only, as before). --reanalyse compares the
runs already in --db instead of measuring (1 with 2, 3 with 4, ...).

With --burn 1 a CPU-bound loop runs on one core for the whole benchmark (the load of 2-4 the
busy-host rule is calibrated at, see docs/methods/statistics.md); each pair then also counts the
points compare held as "host too busy to judge" instead of calling them.

Usage: FABRICBENCH_NATIVE_DIR=build/stage PYTHONPATH=src python3 benchmarks/compare_false_alarms.py
           [--repeats 20] [--burn 1] [--run-args "--time-budget 0.02"] [--np 2] [--suite quick] [--db FILE] [--min-effect 3] [--baseline-runs K]
           [--orders random,ascending] [--no-history] [--reanalyse]
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fabricbench(db: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fabricbench", "--db", str(db), *args], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"fabricbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc


RUN_ARGS: list = []  # extra `run` options (--run-args), e.g. a short --time-budget


def measure(db: Path, suite: str, np: int, label: str, order: str = "random") -> int:
    out = fabricbench(db, "run", suite, "--np", str(np), "--label", label, "--order", order, *RUN_ARGS).stdout
    return int(out.split("run ")[1].split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--db", help="keep the runs in this database (default: a temporary one)")
    ap.add_argument("--min-effect", default="3", help="compare's --min-effect, in percent")
    ap.add_argument("--baseline-runs", type=int, default=0, help="compare each run with K earlier runs instead of its pair")
    ap.add_argument("--orders", default="random",
                    help="size orders to try, comma-separated (random, ascending): each repeat measures one pair per "
                    "order, interleaved, so both see the same changes of load")
    ap.add_argument("--no-history", action="store_true", help="compare ignores earlier runs of the same configuration")
    ap.add_argument("--reanalyse", action="store_true",
                    help="measure nothing: compare the runs already in --db, 1 with 2, 3 with 4, ...")
    ap.add_argument("--run-args", default="", help='extra `run` options, e.g. "--time-budget 0.02 --precision 0.02"')
    ap.add_argument("--burn", type=int, default=0,
                    help="keep this many CPU-bound loops running meanwhile (one core each), to measure at a known load")
    args = ap.parse_args()
    RUN_ARGS[:] = shlex.split(args.run_args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the loops below on kill as on Ctrl-C
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)]
    try:
        return run(args)
    finally:
        for p in burners:
            p.kill()
            p.wait()


def run(args: argparse.Namespace) -> int:
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    tmp = tempfile.TemporaryDirectory(prefix="fb-false-alarms-")
    db = Path(args.db) if args.db else Path(tmp.name) / "aa.db"
    if args.reanalyse and not db.is_file():
        sys.exit("--reanalyse needs --db with the runs to compare")
    totals: dict = {}
    started = time.monotonic()
    if args.reanalyse:
        ids = sorted(r["id"] for r in json.loads(fabricbench(db, "runs", "--json").stdout))
        pairs = [("stored", str(ids[i]), ids[i + 1], None) for i in range(0, len(ids) - 1, 2)]
    else:
        pairs = None
        baseline = {o: [measure(db, args.suite, args.np, f"base{i + 1}-{o}", o) for i in range(args.baseline_runs)]
                    for o in orders}

    def measured_pairs():
        for k in range(args.repeats):
            for order in orders:
                load = os.getloadavg()[0]
                base = baseline[order]
                a = ",".join(map(str, base)) if base else str(measure(db, args.suite, args.np, f"A{k + 1}-{order}", order))
                yield order, a, measure(db, args.suite, args.np, f"B{k + 1}-{order}", order), load

    for k, (order, a, b, load) in enumerate(pairs if pairs is not None else measured_pairs()):
        extra = ["--no-history"] if args.no_history else []
        data = json.loads(fabricbench(db, "compare", a, str(b), "--json", "--min-effect", args.min_effect,
                                      *extra).stdout)
        points = [(s, p) for s in data["series"] for p in s["points"]]
        flagged = [(s, p) for s, p in points if p["verdict"] in ("better", "worse")]
        held = sum(p["verdict"] == "host changed" for _s, p in points)
        busy = sum(p["verdict"] == "host busy" for _s, p in points)
        source = noise_source(data)
        t = totals.setdefault((order, data.get("noise_from", "?")),
                              {"points": 0, "flagged": 0, "pairs": 0, "tested": 0, "count": 0, "held": 0, "moved": 0,
                                "busy": 0, "busy_pairs": 0})
        t["busy"] += busy
        t["busy_pairs"] += bool(data.get("host_busy"))
        t["held"] += held
        t["moved"] += bool(data.get("host_note"))
        t["points"] += len(points)
        t["flagged"] += len(flagged)
        t["pairs"] += bool(flagged)
        t["tested"] += data["tested"]
        t["count"] += 1
        detail = ", ".join(f"{s['definition']} {p['size']} B {p['verdict']} x{p['ratio']:.3g}" for s, p in flagged[:8])
        more = f" (+{len(flagged) - 8} more)" if len(flagged) > 8 else ""
        where = f"load {load:.1f} on {os.cpu_count()} CPUs; " if load is not None else ""
        if data.get("host_busy"):
            where += f"host busy ({data['host_busy']['text']}, factor {data['host_busy']['factor']:.3g}), {busy} points held; "
        shifts = [s["host_shift"] for s in data["series"] if s.get("host_shift")]
        if data.get("host_note") and shifts:
            worst = max(shifts, key=lambda h: abs(h["factor"]))
            where += f"host moved: {worst['figure']} {worst['a_us']:.3g} -> {worst['b_us']:.3g} us, {held} points held; "
        print(f"pair {k + 1:2d} {order} (runs {a} vs {b}; {where}noise from {source}): "
              f"{len(flagged)} of {len(points)} points flagged ({data['tested']} tested)"
              + (f": {detail}{more}" if flagged else ""), flush=True)
    what = f"runs against a baseline of {args.baseline_runs} runs" if args.baseline_runs else "A/A pairs"
    print()
    for (order, source), t in totals.items():
        how = "stored runs" if order == "stored" else f"`run {args.suite} --np {args.np} --order {order}`"
        print(f"{t['count']} {what} of {how}, noise from {source}: {t['flagged']} false alarms "
              f"in {t['points']} points compared ({t['tested']} with a CI); {t['pairs']} of {t['count']} pairs had any; "
              f"the host probe moved in {t['moved']} pairs, {t['held']} points held as \"host changed\"; "
              f"the host was busy in {t['busy_pairs']} pairs, {t['busy']} points held as \"host too busy to judge\"")
    print(f"{time.monotonic() - started:.0f} s")
    return 0


def noise_source(data: dict) -> str:
    """'launches', 'history (6 runs)', ...: where compare took the run-to-run noise from."""
    source = data.get("noise_from", "?")
    return f"history ({data['history_runs']} runs)" if source == "history" else source


if __name__ == "__main__":
    sys.exit(main())
