"""How long `fabricbench report` takes over 50 runs of 2,000 points each (goal: under 5 s).

    PYTHONPATH=src python benchmarks/report_speed.py [--runs 50] [--format svg|png] [--keep DIR]

Builds a temporary SQLite database of synthetic runs shaped like real ones (latency, bw, bibw,
mbw_mr, multi_lat, seven collectives at ten rank counts, rings, pairs, HPCC), then times
loading + building + rendering the HTML report. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import fabricbench
from fabricbench.store import Host, Measurement

SIZES = [0] + [2**i for i in range(23)]  # 0 .. 4 MiB: 24 sizes
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "reduce_scatter")
RANKS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def point(bench, metric, unit, size, ranks, value, rng, **extra):
    spread = value * 0.05
    params = {"size": size, "ranks": ranks, **extra}
    return Measurement(bench, params, metric, unit, value=value, n=100, iterations=1000,
                       min=value - spread, median=value, mean=value, p99=value + 2 * spread,
                       max=value + 3 * spread, stdev=spread)


def synthetic_run(i: int, rng: random.Random):
    lat0 = 1.0 + 0.05 * i
    bw_peak = 12000 - 50 * i
    out = []
    for s in SIZES:
        lat = lat0 + s / bw_peak
        out.append(point("latency", "latency", "us", s, 2, lat, rng))
        out.append(point("multi_lat", "latency", "us", s, 8, lat * 1.1, rng))
        bw = bw_peak * s / (s + 8000.0)
        out.append(point("bw", "bandwidth", "MB/s", s, 2, max(bw, 0.01), rng, window=64))
        out.append(point("bibw", "bibandwidth", "MB/s", s, 2, max(2 * bw, 0.01), rng, window=64))
        out.append(point("mbw_mr", "bandwidth", "MB/s", s, 8, max(bw, 0.01), rng, pairs=4))
        out.append(point("mbw_mr", "message_rate", "msg/s", s, 8, 1e6 / (lat + 0.1), rng, pairs=4))
        for c in COLLECTIVES:
            for r in RANKS:
                out.append(point(c, "latency", "us", s, r, lat * math.log2(r) * (1 + s / 65536), rng))
        for order in ("natural", "random"):
            out.append(point("ring", "latency", "us", s, 16, lat * (1.2 if order == "random" else 1.0), rng, ordering=order))
            out.append(point("ring", "bandwidth", "MB/s", s, 16, max(bw * 0.8, 0.01), rng, ordering=order))
        out.append(point("pingpong_pairs", "latency", "us", s, 16, lat, rng, pairs=120))
        out.append(point("pingpong_pairs", "bandwidth", "MB/s", s, 16, max(bw, 0.01), rng, pairs=120))
    tests = [("HPL_Tflops", "flops", "Gflop/s"), ("PTRANS_GBs", "bandwidth", "MB/s"),
             ("MPIRandomAccess_GUPs", "update_rate", "GUP/s"), ("MPIFFT_Gflops", "flops", "Gflop/s"),
             ("RandomlyOrderedRingLatency_usec", "latency", "us"), ("NaturallyOrderedRingBandwidth_GBytes", "bandwidth", "MB/s")]
    k = 0
    while len(out) < 2000:
        name, metric, unit = tests[k % len(tests)]
        out.append(Measurement("hpcc", {"test": f"{name}_{k // len(tests)}" if k >= len(tests) else name, "ranks": 1024},
                               metric, unit, value=100.0 + i + k))
        k += 1
    return out[:2000]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--format", default="svg", choices=["svg", "png"])
    ap.add_argument("--keep", help="write the report into this directory")
    args = ap.parse_args(argv)
    t_import = time.perf_counter()
    from fabricbench.cli.report import report_of
    from fabricbench.report import ReportOptions, write_report
    from fabricbench.report.sections import discover

    discover()  # imports matplotlib and every section module (CLI start-up cost, reported apart)
    t_import = time.perf_counter() - t_import

    with tempfile.TemporaryDirectory() as tmp:
        store = fabricbench.open_db(str(Path(tmp) / "speed.db"))
        rng = random.Random(1)
        t0 = time.perf_counter()
        ids = []
        for i in range(args.runs):
            facts = {"cpu": {"model": "Xeon", "cores": 32}, "memory_bytes": 2**37, "kernel": "6.1",
                     "infiniband": [{"device": "mlx5_0", "port": 1, "rate": "100 Gb/sec (4X EDR)", "state": "4: ACTIVE"}]}
            hosts = [Host(f"n{i}-{h}", "d", facts) for h in range(2)]
            run = store.save_run(synthetic_run(i, rng), kind="benchmark", label=f"run {i}", tags={"fabric": "edr"},
                                 provenance={"nodes": 2, "ranks": 2}, ranks=2, hosts=hosts)
            ids.append(run.id)
        setup = time.perf_counter() - t0
        out = Path(args.keep or tmp) / "report.html"
        c1, t1 = time.process_time(), time.perf_counter()
        report = report_of(store, ids, ReportOptions(plot_format=args.format))
        t2 = time.perf_counter()
        write_report(report, out)
        c3, t3 = time.process_time(), time.perf_counter()
        points = sum(len(r.measurements) for r in report.runs)
        print(f"setup (not timed): {args.runs} runs, {points} points stored in {setup:.1f} s")
        print(f"load + build: {t2 - t1:.2f} s; render + write: {t3 - t2:.2f} s; "
              f"total {t3 - t1:.2f} s for {points} points, {len(report.figures())} plots, "
              f"{out.stat().st_size / 1e6:.1f} MB HTML ({args.format}) [goal < 5 s]")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"CPU time {c3 - c1:.2f} s (wall/CPU {(t3 - t1) / max(c3 - c1, 1e-9):.2f}, load average {load:.1f} "
              f"on {os.cpu_count()} CPUs); imports before timing: {t_import:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
