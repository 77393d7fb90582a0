#!/usr/bin/env python3
"""The studies at full size on the lab: their figures, for the docs and the report. A
benchmark, not a test (minutes to an hour, depending on N and --repeat).

    PYTHONPATH=src python3 benchmarks/studies.py hpcc-fabrics [--n 4000] [--repeat 3]
    PYTHONPATH=src python3 benchmarks/studies.py site [--n 2000] [--repeat 3]

Runs the study through the real CLI into a fresh database, writes its HTML report, and
prints from the stored runs what the issue checks: for hpcc-fabrics PTRANS and the b_eff
ring bandwidths per fabric with the ratio against the links' ratio, and the leading MPI
call of each HPCC test per fabric; for site the latency, bandwidth, HPCC and transfer
sentences. The host load before and after is printed: figures from a loaded host say so.
Lab names and subnets come from $FABRICBENCH_LAB / $FABRICBENCH_LAB_SUBNET as for tests.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _fabricbench(db: Path, *args: str) -> str:
    argv = [sys.executable, "-m", "fabricbench", "--db", str(db), *args]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fabricbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def hpcc_fabrics(db: Path, out: Path, args) -> None:
    from fabricbench.analysis.study_hpcc import figure_rows, profile_rows
    from fabricbench.analysis.hpcc_sections import TESTS
    from fabricbench.store import open_db
    from fabricbench.workflows.study_hpcc import load_study

    lab = os.environ.get("FABRICBENCH_LAB", "fbhpcc")
    text = _fabricbench(db, "study", "hpcc-fabrics", "--fabric", f"fast:{args.fast}", "--fabric", f"slow:{args.slow}",
                        "--n", str(args.n), "--repeat", str(args.repeat), "--np", str(args.np),
                        "--nodes", str(args.nodes), "--lab-name", lab, "-o", str(out))
    print(text)
    store = open_db(str(db))
    study = store.list_runs(kind="hpcc")[0].tags["study"]
    data = load_study(store, study)
    rows = {r["key"]: r for r in figure_rows(data["values"], data["fabrics"])}
    link = data["rates"]["slow"] / data["rates"]["fast"]
    print(f"links: slow/fast = {link:.3f}")
    for key in ("PTRANS_GBs", "RandomlyOrderedRingBandwidth_GBytes", "NaturallyOrderedRingBandwidth_GBytes"):
        r = rows[key]
        fast, slow = r["fabrics"]["fast"], r["fabrics"]["slow"]
        print(f"{r['display']:<24} fast {fast['value']:10.4g} [{fast['min']:.4g}, {fast['max']:.4g}]  "
              f"slow {slow['value']:10.4g} [{slow['min']:.4g}, {slow['max']:.4g}]  slow/fast {slow['value'] / fast['value']:.3f}  "
              f"verdict {r['versus']['slow']['verdict']}")
    for row in profile_rows(data["leads"], data["fabrics"], TESTS):
        cells = [f"{name}: {f['lead']} {f['sizes'] or ''} {f['percent_of_mpi']['median'] or 0:.0f}% of MPI ({f['verdict']})"
                 for name, f in row["fabrics"].items()]
        print(f"{row['test']:<13} " + "; ".join(cells))


def site(db: Path, out: Path, args) -> None:
    lab = os.environ.get("FABRICBENCH_LAB", "fbsite")
    print(_fabricbench(db, "study", "site", "--fabric", f"ge:{args.slow}", "--fabric", f"ib:{args.fast}",
                       "--nodes", str(args.nodes + 1), "--readers", ",".join(str(i) for i in range(1, args.nodes + 1)),
                       "--file-size", args.file_size, "--n", str(args.n), "--repeat", str(args.repeat),
                       "--lab-name", lab, "-o", str(out)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study", choices=["hpcc-fabrics", "site"])
    p.add_argument("--n", type=int, default=4000, help="HPL N")
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--fast", default="1gbit")
    p.add_argument("--slow", default="500mbit")
    p.add_argument("--file-size", default="256M")
    p.add_argument("-o", "--output", default=None, help="the report (default: STUDY.html here)")
    args = p.parse_args()
    out = Path(args.output or f"{args.study}.html").resolve()
    print(f"load before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fb-studies-") as tmp:
        db = Path(tmp) / "results.db"
        (hpcc_fabrics if args.study == "hpcc-fabrics" else site)(db, out, args)
    print(f"took {time.monotonic() - start:.0f} s; load after: {os.getloadavg()[0]:.2f}; report: {out}")


if __name__ == "__main__":
    main()
