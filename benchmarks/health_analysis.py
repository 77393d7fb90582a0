#!/usr/bin/env python3
"""How fast is the all-pairs health analysis on a big cluster? A performance benchmark, not a test.

Builds a 4,096-node bandwidth matrix (16.7 M cells, 4 % lognormal noise around 12,000 MB/s)
and a latency matrix, plants a bad node (half bandwidth both ways), a send-only bad node,
a bad link and an asymmetric pair, and times ``analysis.health.analyse`` on both matrices.
Goals: under 10 s and under 2 GiB of memory. It prints the wall time, the peak of Python
allocations during the analysis (tracemalloc; numpy arrays are counted), the process's
peak RSS (includes building the inputs) and whether the planted faults were found.

Usage: PYTHONPATH=src python3 benchmarks/health_analysis.py [--nodes 4096] [--repeats 3] [--no-latency]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

import numpy as np

from fabricbench.analysis.health import analyse


def build(n: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    bw = 12000.0 * np.exp(rng.normal(0.0, 0.04, size=(n, n)))
    np.fill_diagonal(bw, np.nan)
    bad, send_only, (li, lj), (ai, aj) = 17, n // 2 + 1, (100, n - 96), (555 % n, 777 % n)
    bw[bad, :] *= 0.5
    bw[:, bad] *= 0.5
    bw[send_only, :] *= 0.55
    bw[li, lj] *= 0.35
    bw[lj, li] *= 0.35
    bw[ai, aj] *= 0.4
    lat = 1.6 * np.exp(rng.normal(0.0, 0.05, size=(n, n)))
    np.fill_diagonal(lat, np.nan)
    labels = [f"node{i:04d}" for i in range(n)]
    planted = {("node", labels[bad]), ("node", labels[send_only]), ("link", f"{labels[li]}|{labels[lj]}"),
               ("asymmetric", f"{labels[ai]}|{labels[aj]}")}
    return labels, bw, lat, planted


def found_set(report):
    out = set()
    for f in report.problems:
        out.add((f.kind, f.nodes[0] if f.kind == "node" else "|".join(f.nodes)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-latency", action="store_true", help="analyse the bandwidth matrix only")
    args = ap.parse_args()
    labels, bw, lat, planted = build(args.nodes)
    if args.no_latency:
        lat = None
    cells = args.nodes * args.nodes
    print(f"{args.nodes} nodes, {cells / 1e6:.1f} M cells per matrix, "
          f"{'bandwidth only' if lat is None else 'bandwidth and latency'}; "
          f"inputs {(bw.nbytes + (lat.nbytes if lat is not None else 0)) / 2**20:.0f} MiB")
    times = []
    peak_traced = 0
    report = None
    for r in range(args.repeats):
        tracemalloc.start()
        t0 = time.perf_counter()
        report = analyse(labels, bw, lat)
        times.append(time.perf_counter() - t0)
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peak_traced = max(peak_traced, peak)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = found_set(report)
    print(f"analysis wall time: best {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)} runs "
          f"(goal < 10 s)")
    print(f"peak memory of the analysis (tracemalloc): {peak_traced / 2**30:.2f} GiB; process peak RSS: "
          f"{rss_kib / 2**20:.2f} GiB (goal < 2 GiB)")
    print(f"verdict: {report.verdict[:160]}")
    print(f"planted faults found: {len(planted & found)} of {len(planted)}; other problem findings: {len(found - planted)}")
    for item in sorted(planted - found):
        print(f"  missed: {item}")
    for item in sorted(found - planted)[:10]:
        print(f"  extra: {item}")


if __name__ == "__main__":
    main()
