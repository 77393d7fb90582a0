"""`fabricbench health --launcher lab` on emulated clusters (marker `lab`): the right culprit, and no false alarms.

Each test brings up its own uniquely named 8-node lab (1gbit links, shaped with htb) and
always tears it down. One node degraded to 500mbit must be flagged - that node and
nothing else; a healthy lab must give no flags in 10 consecutive runs. The machine is
shared and loaded, so the check's own defences are what is tested here: medians over
repetitions, robust (MAD) noise estimates, and retesting suspicious pairs alone.

Sizing: 1 MiB messages in windows of 4 (4 MiB per timed window, 35 ms at 1gbit): long
against scheduling hiccups of a loaded host, short enough that one check of 8 nodes takes
seconds. The lab's links pass no burst above the line (lab/rates.py), and the check knows
their ceiling, so the degraded node is a suspect in every sweep and the retest decides.
Figures and false-positive counts are printed (-s) and kept as junit properties.
"""
from __future__ import annotations

import itertools
import json
import os
import time

import pytest

# Every test here judges shaped links' rates: never beside another worker's load (tests/conftest.py).
pytestmark = [pytest.mark.lab, pytest.mark.mpi, pytest.mark.serial]

from fabricbench.lab import lab_session
from fabricbench.lab.rates import parse_rate, tcp_goodput

from conftest import lab_slot

NODES = 8
LINK = "1gbit"
DEGRADED = "500mbit"
HEALTHY_RUNS = 10
ARGS = ("--launcher", "lab", "--size", "1M", "--window", "4", "--repetitions", "3", "--json")

_ids = itertools.count()


def unique_lab():
    """A lab name and subnet nobody else uses (other tests' labs take the
    worker's 10.212.x.0/24, 10.213.0.0/24 and names ft...)."""
    k = next(_ids)
    pid = os.getpid()
    return f"hc{pid % 100000:05d}{k}", f"10.214.{lab_slot(k)}.0/24"


@pytest.fixture(scope="module")
def lab_ready():
    """Needs are checked by the markers (tests/conftest.py)."""


@pytest.fixture
def record_figure(request):
    return lambda key, value: request.node.user_properties.append((key, value))


def health(cli, timeout=300):
    out = cli("health", *ARGS, check=False, timeout=timeout)
    assert out.returncode in (0, 1), f"health could not run (exit {out.returncode}):\n{out.stderr[-3000:]}"
    data = json.loads(out.stdout)
    assert data["exit_status"] == out.returncode
    return data


@pytest.mark.lab
@pytest.mark.parametrize("mode", ["exchange", "pairs"])
def test_degraded_node_is_flagged_and_nothing_else(lab_ready, cli, monkeypatch, record_figure, mode):
    name, subnet = unique_lab()
    with lab_session(nodes=NODES, link=LINK, degrade={"n3": DEGRADED}, name=name, subnet=subnet):
        monkeypatch.setenv("FABRICBENCH_LAB", name)
        started = time.monotonic()
        out = cli("health", *ARGS, "--mode", mode, check=False, timeout=300)
        took = time.monotonic() - started
    assert out.returncode == 1, f"exit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    data = json.loads(out.stdout)
    problems = [f for f in data["findings"] if f["severity"] != "info"]
    bad = f"{name}-n3"
    bw = data["summary"]["bandwidth"]
    share = min(bw["send"][bad], bw["receive"][bad]) / bw["median"]
    print(f"\n[{mode}] {data['verdict']}\n[{mode}] degraded node {bad}: send {bw['send'][bad]:.1f}, receive "
          f"{bw['receive'][bad]:.1f} MB/s = {share:.0%} of the median {bw['median']:.1f} MB/s; "
          f"{data['measurement']['retested_pairs']} pairs retested; {took:.0f} s")
    record_figure(f"{mode}_degraded_share_of_median", round(share, 3))
    assert [(f["kind"], f["nodes"], f["metric"]) for f in problems] == [("node", [bad], "bandwidth")], \
        [f["evidence"] for f in problems]
    assert problems[0]["side"] == "both" and problems[0]["retest"] == "confirmed"
    # Its own link bounds it (no burst passes above the line); how far below the others it reads
    # depends on how busy the host keeps them (35-66% of the median at load 2-20), not asserted.
    slow = tcp_goodput(parse_rate(DEGRADED)) / 1e6
    assert max(bw["send"][bad], bw["receive"][bad]) <= 1.03 * slow, (bw["send"][bad], bw["receive"][bad], slow)
    assert share < 0.75
    assert data["verdict"].startswith(f"PROBLEMS: 1 bad node ({bad})")


@pytest.mark.lab
def test_healthy_lab_gives_no_flags_in_10_runs(lab_ready, cli, monkeypatch, record_figure):
    name, subnet = unique_lab()
    flagged, cleared, lines = 0, 0, []
    with lab_session(nodes=NODES, link=LINK, name=name, subnet=subnet):
        monkeypatch.setenv("FABRICBENCH_LAB", name)
        for k in range(HEALTHY_RUNS):
            started = time.monotonic()
            data = health(cli)
            problems = [f for f in data["findings"] if f["severity"] != "info"]
            transient = [f for f in data["findings"] if f["kind"] == "transient"]
            flagged += bool(problems)
            cleared += len(transient)
            bw = data["summary"]["bandwidth"]
            lines.append(f"run {k + 1:2d}: {'FLAGGED' if problems else 'clean  '} median {bw['median']:.1f} MB/s, "
                         f"lowest {bw['min']:.1f}, noise {bw['noise']:.3f}, {data['measurement']['retested_pairs']} "
                         f"retested, {len(transient)} cleared by retest, {time.monotonic() - started:.0f} s"
                         + "".join(f"\n         {f['evidence']}" for f in problems))
    print("\n" + "\n".join(lines))
    print(f"healthy lab: {flagged} false positive runs of {HEALTHY_RUNS}; {cleared} slow readings cleared by retest")
    record_figure("false_positive_runs", flagged)
    record_figure("cleared_by_retest", cleared)
    assert flagged == 0, "\n".join(lines)

