#!/usr/bin/env python3
"""Does the lab's shaping keep per-window bandwidth samples at the line, and what goodput does it leave? Not a test.

For each rate, brings up a 2-node lab, and for the lab's own shaping (htb, lab/rates.py) and
the tbf with a 2 ms bucket it replaced, measures: one iperf3 stream (against the TCP goodput),
the engine's `bw` from 1 B to 16 KiB (the highest per-window max or p99, against the line
rate) and `bw` at 4 MiB (median, against the goodput). docs/methods/lab.md has the figures.

Needs root and iperf3. Usage:
  FABRICBENCH_NATIVE_DIR=build/stage PYTHONPATH=src python3 benchmarks/lab_shaping.py [--rates 1gbit,100mbit]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from fabricbench.lab import Lab, LabSpec, down, parse_rate, tcp_goodput
from fabricbench.lab.core import _shape
from fabricbench.launch import Layout
from fabricbench.launch.lab import LabLauncher
from fabricbench.native import engine_path

NAME = "fbshape"
PORT = "5261"


def ends(lab):
    return [(n.name, n.interface) for n in lab.nodes] + [(n.switch, n.port) for n in lab.nodes]


def tbf_2ms(lab, bps):
    for ns, dev in ends(lab):
        subprocess.run(["ip", "-n", ns, "link", "set", "dev", dev, "gso_max_size", "65536"], check=True)
        subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], stderr=subprocess.DEVNULL)
        subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{bps}bit",
                        "burst", str(max(65536, bps // 8 // 500)), "limit", str(max(1 << 20, bps // 1000))], check=True)


def htb_lab(lab, bps):
    for ns, dev in ends(lab):
        subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], stderr=subprocess.DEVNULL)
        _shape(ns, dev, bps, 1500)


def iperf(lab, seconds=5):
    server = subprocess.Popen(lab.exec_argv("n2", ["iperf3", "-s", "-1", "-p", PORT]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    out = subprocess.run(lab.exec_argv("n1", ["iperf3", "-c", lab.nodes[1].address, "-p", PORT, "-t", str(seconds), "-J"]),
                         capture_output=True, text=True)
    server.wait(timeout=30)
    return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] / 8


def bw(sizes, *extra):
    launcher = LabLauncher(Layout(hosts=["n1", "n2"]))
    out = subprocess.run(launcher.command([str(engine_path()), "bw", "--sizes", sizes, "--time-budget", "0.3", *extra]),
                         capture_output=True, text=True, env=launcher.environment())
    recs = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {r["params"]["size"]: r for r in recs if r.get("benchmark") == "bw" and "median" in r}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1gbit,500mbit,100mbit,50mbit")
    args = ap.parse_args()
    print(f"{'rate':>8}  {'shaping':<10} {'iperf3/goodput':>14} {'worst sample/line':>18} {'bw 4MiB/goodput':>16}  load")
    for rate in args.rates.split(","):
        bps = parse_rate(rate)
        line, goodput = bps / 8, tcp_goodput(bps)
        lab = Lab.up(LabSpec(nodes=2, link=rate), NAME)
        os.environ["FABRICBENCH_LAB"] = NAME
        try:
            for label, shape in (("htb (lab)", htb_lab), ("tbf 2 ms", tbf_2ms)):
                shape(lab, bps)
                got = iperf(lab)
                small = bw("1:16K")
                worst = max(max(r["max"], r["p99"]) for r in small.values()) * 1e6
                cap = str(max(4 << 20, int(line * 0.5)))  # at least one message, about 0.5 s of the link
                big = bw("4M:4M", "--max-window-bytes", cap)[4 << 20]["median"] * 1e6
                print(f"{rate:>8}  {label:<10} {got / goodput:>14.3f} {worst / line:>18.2f} {big / goodput:>16.3f}"
                      f"  {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            down(NAME)


if __name__ == "__main__":
    main()
