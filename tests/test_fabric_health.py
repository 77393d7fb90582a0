"""`health` next to a fabric snapshot (marker `lab`): the slow pairs are reported with the cable they share.

An 8-node lab with n3's link at half rate, and a simulated fabric whose HCAs carry the
lab's node names (``fabric sim up --hostfile`` of the lab) with n3's cable trained at 1x.
After ``fabric scan --sim --routes``, ``health --launcher lab`` flags n3 and says that all
its slow pairs cross edge1 port 3 - n3's HCA port 1, where the fabric check found the
cable degraded.
"""
from __future__ import annotations

import itertools
import json
import os

import pytest

from fabricbench.lab import lab_session

from conftest import lab_slot
from test_fabric_sim import _missing, processes_in
from test_health_lab import lab_ready  # noqa: F401 - the lab tests' fixture (root, namespaces, mpirun, engine)

_ids = itertools.count()


@pytest.fixture(scope="module")
def ready(lab_ready):
    if _missing():
        pytest.skip(f"needs ibsim-utils, opensm, infiniband-diags (missing: {_missing()})")


@pytest.mark.serial  # judges a shaped link's rate: never beside another worker's load (tests/conftest.py)
@pytest.mark.lab
def test_slow_pairs_are_reported_with_the_cable_they_share(ready, cli, monkeypatch, tmp_path):
    k = next(_ids)
    lab, subnet = f"fh{os.getpid() % 100000:05d}{k}", f"10.215.{lab_slot(k)}.0/24"
    sim = f"fh{os.getpid() % 100000}{k}"
    rundir = tmp_path / "fabric-run"
    monkeypatch.setenv("FABRICBENCH_FABRIC_RUNDIR", str(rundir))
    with lab_session(nodes=8, link="1gbit", degrade={"n3": "500mbit"}, name=lab, subnet=subnet) as the_lab:
        monkeypatch.setenv("FABRICBENCH_LAB", lab)
        slow = f"{lab}-n3"
        try:
            cli("fabric", "sim", "up", "--hostfile", str(the_lab.hostfile_path), "--switches", "3",
                "--degrade", f"{slow}=1x", "--name", sim)
            cli("fabric", "scan", "--sim", "--routes", "--name", sim)
            out = cli("health", "--launcher", "lab", "--size", "1M", "--window", "4", "--repetitions", "3", "--json",
                      check=False, timeout=300)
        finally:
            cli("fabric", "sim", "down", "--name", sim, check=False)
    assert out.returncode == 1, out.stderr[-2000:]
    data = json.loads(out.stdout)
    problems = [f for f in data["findings"] if f["severity"] != "info"]
    assert [(f["kind"], f["nodes"]) for f in problems] == [("node", [slow])], [f["evidence"] for f in problems]
    cable = f"edge1 port 3 - {slow} HCA-1 port 1"
    shared = [n for n in data["notes"] if "slow pairs all cross" in n]
    print("\n" + "\n".join(data["notes"]))
    assert len(shared) == 1 and f"the 7 slow pairs all cross {cable}" in shared[0], data["notes"]
    assert "the fabric check found there: degraded, runs 1X EDR" in shared[0]
    assert problems[0]["evidence"].endswith(f"; crosses {cable}")
    assert processes_in(rundir) == []
