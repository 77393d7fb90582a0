"""The lab's subnet rules and a transfer whose readers all fail (issue 37).

A lab subnet must be RFC 1918 (or a range the Internet does not route, named with --subnet),
and overlap neither an address or route of the host nor another lab that is up; refused
before anything is created.
"""
from __future__ import annotations

import ipaddress
import os
import subprocess
import sys

import pytest

from fabricbench.lab import lab_session
from fabricbench.lab.core import check_subnet_free, run_dir
from fabricbench.lab.errors import LabError
from fabricbench.lab.spec import LabSpec

from conftest import lab_slot

_K = os.getpid() % 200


def _name(tag: str) -> str:
    return f"rel{tag}{_K:03d}"


@pytest.mark.parametrize("subnet", ["8.8.8.0/24", "240.0.0.0/24", "0.0.0.0/24", "224.0.0.0/24", "127.1.0.0/24"])
def test_public_and_special_ranges_refused(subnet):
    with pytest.raises(LabError, match="not a private network"):
        LabSpec(nodes=2, subnet=subnet).validate()


@pytest.mark.parametrize("subnet", ["10.61.0.0/24", "172.16.5.0/24", "192.168.7.0/24", "192.0.2.0/24", "198.18.0.0/24"])
def test_private_and_unrouted_ranges_pass_the_spec(subnet):
    LabSpec(nodes=2, subnet=subnet).validate()


def test_overlap_with_a_host_address_or_route_refused(monkeypatch, tmp_path):
    from fabricbench.lab import system

    monkeypatch.setenv("FABRICBENCH_LAB_RUNDIR", str(tmp_path))
    nets = [("address 192.0.2.2/24 of eth0", ipaddress.IPv4Network("192.0.2.0/24")),
            ("route 10.61.128.0/17 via tun0", ipaddress.IPv4Network("10.61.128.0/17")),
            ("gateway 172.20.0.1 via eth1", ipaddress.IPv4Network("172.20.0.1/32"))]
    monkeypatch.setattr(system, "host_networks", lambda: nets)
    for subnet, what in (("192.0.2.0/25", "192.0.2.2/24 of eth0"), ("10.61.200.0/24", "route 10.61.128.0/17"),
                         ("172.20.0.0/24", "gateway 172.20.0.1"), ("10.0.0.0/8", "route 10.61.128.0/17")):
        with pytest.raises(LabError, match="overlaps the host's") as err:
            check_subnet_free(ipaddress.IPv4Network(subnet), "x")
        assert what in str(err.value)
    check_subnet_free(ipaddress.IPv4Network("10.61.0.0/24"), "x")


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "fabricbench", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _nothing_of(name: str) -> None:
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    assert not [ns for ns in namespaces if ns.startswith(name + "-")]
    assert not (run_dir() / f"{name}.json").exists() and not (run_dir() / f"{name}.hostfile").exists()


@pytest.mark.lab
def test_lab_up_refuses_the_hosts_network_and_another_labs():
    from fabricbench.lab.system import host_networks

    own = next((net for what, net in host_networks() if what.startswith("address") and not net.is_loopback), None)
    name = _name("x")
    if own is not None and own.num_addresses >= 4:
        out = _cli("lab", "up", "--name", name, "--nodes", "1", "--subnet", str(own))
        assert out.returncode == 1 and "overlaps the host's address" in out.stderr, out.stderr
        _nothing_of(name)
    first = _name("a")
    with lab_session(nodes=1, name=first, subnet=f"10.61.{lab_slot()}.0/24"):
        out = _cli("lab", "up", "--name", name, "--nodes", "1", "--subnet", f"10.61.{lab_slot()}.128/25")
        assert out.returncode == 1, out.stderr
        assert f"overlaps lab '{first}'" in out.stderr and out.stderr.count("\n") == 1
        _nothing_of(name)
        # The same lab again (same name, same shape) is still a no-op, not an overlap with itself.
        out = _cli("lab", "up", "--name", first, "--nodes", "1", "--subnet", f"10.61.{lab_slot()}.0/24")
        assert out.returncode == 0, out.stderr


@pytest.mark.lab
def test_transfer_with_the_servers_link_down_fails_and_strict_counts_partial_failures(tmp_path):
    db = tmp_path / "t.db"
    name = _name("t")
    with lab_session(nodes=3, name=name, subnet=f"10.61.{lab_slot(1)}.0/24") as lab:
        env = {"FABRICBENCH_LAB": name}
        common = ["--db", str(db), "transfer", "--server", "n1", "--repeat", "1", "--protocol", "tcp",
                  "--file-size", "1M", "--timeout", "20"]
        # n3's link down: one reader of two fails; complete, exit 0; --strict: exit 1, still complete
        lab.run("n3", ["ip", "link", "set", lab.interface, "down"])
        out = _cli(*common, "--readers", "2", "--hosts", "n2,n3", env=env)
        assert out.returncode == 0, out.stderr
        assert "run 1 complete" in out.stdout and "failed:" in out.stdout
        out = _cli(*common, "--readers", "2", "--hosts", "n2,n3", "--strict", env=env)
        assert out.returncode == 1 and "--strict: 1 reader transfer of run 2 failed" in out.stderr, out.stderr
        # the server's link down: every reader fails; the run is failed, exit 1
        lab.run("n1", ["ip", "link", "set", lab.interface, "down"])
        out = _cli(*common, "--readers", "1", "--hosts", "n2", env=env)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "run 3 failed: every reader transfer failed (1 of 1)" in out.stderr
    from fabricbench.store import open_db

    runs = {r.id: r.status for r in open_db(str(db)).list_runs(kind="transfer")}
    assert runs == {1: "complete", 2: "complete", 3: "failed"}
