#!/usr/bin/env python3
"""Does the lab's shaping keep per-window bandwidth samples at the line, and what goodput does it leave? Not a test.

For each rate, brings up a 2-node lab and, for each shaping option in interleaved rounds (the
lab's own shaping, lab/rates.py, is "lab"), measures: one iperf3 stream (against the TCP
goodput), the engine's `bw` from 1 B to 16 KiB (the highest per-window max or p99, against the
line rate) and `bw` at 4 MiB (median, against the goodput). docs/methods/lab.md has the figures.

An option is KIND[:FRAMES[:GSO]][+CC]: KIND htb (rate = ceil, burst = cburst = FRAMES frames),
htbc1 (burst FRAMES frames, cburst one frame) or tbf (bucket FRAMES frames); GSO is the veth's
gso_max_size in bytes, or "lab" for lab/rates.py's; CC is the nodes' TCP congestion control
(default: the lab's, lab/rates.py TCP_CONGESTION; "bbr" paces each flow with timers of its own).
"tbf2ms" is the 2 ms tbf the lab once used; "htb:1+bbr" the shaping before "lab".

Needs root and iperf3. Usage:
  FABRICBENCH_NATIVE_DIR=build/stage PYTHONPATH=src python3 benchmarks/lab_shaping.py \
      [--rates 1gbit,100mbit] [--options lab,htb:4,htb:8:32768] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from fabricbench.lab import Lab, LabSpec, down, parse_rate, tcp_goodput
from fabricbench.lab.core import _shape
from fabricbench.lab.rates import ETHERNET_HEADER, TCP_CONGESTION, gso_max_bytes
from fabricbench.launch import Layout
from fabricbench.launch.lab import LabLauncher
from fabricbench.native import engine_path

NAME = os.environ.get("FABRICBENCH_LAB") or "fbshape"
PORT = "5261"
FRAME = 1500 + ETHERNET_HEADER


def ends(lab):
    return [(n.name, n.interface) for n in lab.nodes] + [(n.switch, n.port) for n in lab.nodes]


def tc(*args, check=True):
    subprocess.run(["tc", *args], check=check, stderr=None if check else subprocess.DEVNULL)


def congestion(lab, algo):
    algo = algo or open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()  # the host's
    for n in lab.nodes:
        subprocess.run(["ip", "netns", "exec", n.name, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={algo}"],
                       check=True)


def shape(lab, bps, option):
    """Reshape every end of the lab's links as `option` says (see the module's docstring)."""
    option, _, cc = option.partition("+")
    congestion(lab, cc or TCP_CONGESTION)
    if option == "lab":
        for ns, dev in ends(lab):
            tc("-n", ns, "qdisc", "del", "dev", dev, "root", check=False)
            _shape(ns, dev, bps, 1500)
        return
    kind, *rest = option.split(":")
    frames = int(rest[0]) if rest else 1
    gso = rest[1] if len(rest) > 1 else "lab"
    gso = gso_max_bytes(bps) if gso == "lab" else int(gso)
    if kind == "tbf2ms":
        kind, gso = "tbf", 65536
        bucket = max(65536, bps // 8 // 500)
    else:
        bucket = frames * FRAME
    for ns, dev in ends(lab):
        subprocess.run(["ip", "-n", ns, "link", "set", "dev", dev, "gso_max_size", str(gso)], check=True)
        tc("-n", ns, "qdisc", "del", "dev", dev, "root", check=False)
        if kind == "tbf":
            tc("-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{bps}bit", "burst", str(bucket),
               "limit", str(max(1 << 20, bps // 1000)))
            continue
        cburst = FRAME if kind == "htbc1" else bucket
        tc("-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1", "r2q", "100000")
        tc("-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", f"{bps}bit",
           "ceil", f"{bps}bit", "burst", str(bucket), "cburst", str(cburst))


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


def measure(lab, bps):
    line, goodput = bps / 8, tcp_goodput(bps)
    got = iperf(lab)
    small = bw("1:16K")
    worst_size, worst = max(((s, max(r["max"], r["p99"]) * 1e6) for s, r in small.items()), key=lambda t: t[1])
    cap = str(max(4 << 20, int(line * 0.5)))  # at least one message, about 0.5 s of the link
    big = bw("4M:4M", "--max-window-bytes", cap)[4 << 20]["median"] * 1e6
    return got / goodput, worst / line, worst_size, big / goodput


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1gbit,500mbit,100mbit,50mbit")
    ap.add_argument("--options", default="lab,htb:1+bbr", help="shaping options, comma-separated (see above)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds over the options")
    args = ap.parse_args()
    options = args.options.split(",")
    print(f"{'rate':>8} {'round':>5}  {'option':<16} {'iperf3/goodput':>14} {'worst sample/line':>18} "
          f"{'at':>6} {'bw 4MiB/goodput':>16}  load")
    for rate in args.rates.split(","):
        bps = parse_rate(rate)
        lab = Lab.up(LabSpec(nodes=2, link=rate), NAME)
        os.environ["FABRICBENCH_LAB"] = NAME
        try:
            for rnd in range(1, args.rounds + 1):
                for option in options:
                    shape(lab, bps, option)
                    got, worst, at, big = measure(lab, bps)
                    print(f"{rate:>8} {rnd:>5}  {option:<16} {got:>14.3f} {worst:>18.2f} {at:>6} {big:>16.3f}"
                          f"  {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            down(NAME)


if __name__ == "__main__":
    main()
