"""How fast and how lean `fabricbench import` is on multi-million-row files.

Generates OSU files of 1 M and 3 M result rows (osu_latency 7.3 tables of 23 sizes each,
concatenated as a job log of repeated runs is), imports each with the real command line
into a fresh SQLite database, and prints the wall time, the peak memory (max RSS) of the
import process and the database size. Sizes run smallest first: the peak is the largest RSS
of any import so far (getrusage of the children). Goal: a 3 M-row file in under 30 s and under 500 MB.
CPU seconds (user + system of the import) are printed too: on a shared host they move less than wall time.

    PYTHONPATH=src python benchmarks/import_scale.py [--rows 1000000 3000000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = [0] + [1 << i for i in range(23)]  # 0 .. 4 MiB: osu_latency's default table


def write_osu(path: Path, rows: int) -> int:
    """An OSU latency log of `rows` result lines; returns its size in bytes."""
    with open(path, "w") as fh:
        written, run = 0, 0
        while written < rows:
            run += 1
            fh.write("# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n# Datatype: MPI_CHAR.\n")
            take = SIZES[: min(len(SIZES), rows - written)]
            fh.write("".join(f"{s:<10d}{0.2 + s * 1e-4 + (run % 97) * 1e-3:20.2f}\n" for s in take))
            written += len(take)
    return path.stat().st_size


def import_once(path: Path, db: Path) -> dict:
    env = dict(os.environ)
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fabricbench", "--db", str(db), "import", str(path), "--json"],
                          capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak_kib = after.ru_maxrss
    if proc.returncode != 0:
        raise SystemExit(f"import failed ({proc.returncode}): {proc.stderr.strip()}")
    return {"seconds": elapsed, "cpu": cpu, "peak_mb": peak_kib / 1024, "db_mb": db.stat().st_size / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 3_000_000])
    ap.add_argument("--keep", help="keep the generated files and databases in this folder")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fabricbench-import-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} (on a busy host the CPU seconds are the steadier figure)")
    print(f"{'rows':>10} {'file MB':>9} {'import s':>9} {'CPU s':>7} {'s per M rows':>13} {'peak MB':>8} {'db MB':>8}")
    try:
        for rows in args.rows:
            path = work / f"osu_latency_{rows}.txt"
            size = write_osu(path, rows)
            db = work / f"import_{rows}.db"
            if db.exists():
                db.unlink()
            r = import_once(path, db)
            print(f"{rows:10d} {size / 1e6:9.1f} {r['seconds']:9.1f} {r['cpu']:7.1f} {r['seconds'] / rows * 1e6:13.1f} {r['peak_mb']:8.0f} "
                  f"{r['db_mb']:8.0f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
