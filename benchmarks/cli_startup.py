#!/usr/bin/env python3
"""How long does the `fabricbench` command take to start? A benchmark, not a test.

Times `fabricbench --help`, `--version`, `runs` and `show last` (on a fresh database holding
one imported OSU run) against `python -c pass` in the same run, the commands interleaved
round by round so that a change of the machine's load hits them alike. Prints the median and
the minimum wall time of each over --repeats rounds, the time above bare Python, the CPU time (user + system), the heavy
libraries each command imported, and the load average before and after.

The goal (issue 35): each of the four commands starts in at most 0.25 s at load 1. The figure
depends on the load of the machine, so the verdict is given only when the 1-minute load
average stayed at most --max-load during the run; otherwise it says it cannot judge.

Usage: PYTHONPATH=src python3 benchmarks/cli_startup.py [--repeats 15] [--max-load 1.5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 0.25
HEAVY = ("scipy", "numpy", "sqlalchemy", "matplotlib", "pandas", "jinja2")
SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "import" / "osu_latency.txt"

# The console script's own two lines, so that PYTHONPATH=src times this source tree.
ENTRY = "import sys; from fabricbench.cli import main; sys.exit(main())"
# The same, then which heavy libraries ended up imported (printed to stderr at exit).
PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: sys.stderr.write('HEAVY ' + ' '.join("
         "m for m in %r if m in sys.modules) + '\\n'))\n" % (HEAVY,) + ENTRY)


def commands(db: str) -> dict:
    py = sys.executable
    return {
        "python -c pass": [py, "-c", "pass"],
        "fabricbench --help": [py, "-c", ENTRY, "--help"],
        "fabricbench --version": [py, "-c", ENTRY, "--version"],
        "fabricbench runs": [py, "-c", ENTRY, "--db", db, "runs"],
        "fabricbench show last": [py, "-c", ENTRY, "--db", db, "show", "last"],
    }


def timed(argv: list, env: dict) -> tuple:
    """(wall seconds, CPU seconds user+system) of one run of argv."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed with exit status {proc.returncode}")
    return took, usage.ru_utime + usage.ru_stime


def heavy_imports(argv: list, env: dict) -> str:
    if argv[1:3] == ["-c", "pass"]:
        return "-"
    proc = subprocess.run([argv[0], "-c", PROBE] + argv[3:], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY")), "HEAVY ?")
    return line[len("HEAVY"):].strip() or "none"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="rounds (each times every command once)")
    ap.add_argument("--max-load", type=float, default=1.5, help="highest 1-minute load average at which to judge the goal")
    args = ap.parse_args()

    env = dict(os.environ, COLUMNS="80", NO_COLOR="1")
    tmp = Path(tempfile.mkdtemp(prefix="fb-startup-"))
    try:
        db = str(tmp / "results.db")
        subprocess.run([sys.executable, "-c", ENTRY, "--db", db, "import", str(SAMPLE)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        cmds = commands(db)
        for argv in cmds.values():  # warm the page cache and the .pyc files
            timed(argv, env)
        load_before = os.getloadavg()[0]
        times = {name: [] for name in cmds}
        cpu = {name: [] for name in cmds}
        for _ in range(args.repeats):
            for name, argv in cmds.items():
                wall, used = timed(argv, env)
                times[name].append(wall)
                cpu[name].append(used)
        load_after = os.getloadavg()[0]
        heavy = {name: heavy_imports(argv, env) for name, argv in cmds.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    base = statistics.median(times["python -c pass"])
    print(f"start-up wall time, {args.repeats} rounds; load average {load_before:.2f} before, {load_after:.2f} after")
    print("(wall: median and minimum; +python: the median above `python -c pass`; CPU: median user+system,")
    print(" which depends far less on the load than the wall time)")
    print(f"{'command':<22}{'wall s':>7}{'min s':>7}{'+python':>8}{'CPU s':>7}  heavy imports")
    for name, ts in times.items():
        med = statistics.median(ts)
        extra = "" if name.startswith("python") else f"{med - base:8.3f}"
        print(f"{name:<22}{med:7.3f}{min(ts):7.3f}{extra:>8}{statistics.median(cpu[name]):7.3f}  {heavy[name]}")
    worst = max(statistics.median(ts) for name, ts in times.items() if not name.startswith("python"))
    load = max(load_before, load_after)
    if load > args.max_load:
        print(f"goal (at most {GOAL_S} s at load 1): cannot judge at load {load:.1f} "
              f"(above {args.max_load}); the slowest command's median was {worst:.3f} s")
    else:
        verdict = "met" if worst <= GOAL_S else "not met"
        print(f"goal (at most {GOAL_S} s at load 1): {verdict}; the slowest command's median was {worst:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
