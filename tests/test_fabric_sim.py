"""A simulated fabric end to end, through the command line: real ibsim, OpenSM and infiniband-diags.

Each test brings up its own simulation (3 switches, 8 HCAs, a fat tree) in a private run
directory and always takes it down; afterwards no process of it may be left (its
daemons' command lines name the run directory). `make test` installs the packages
(scripts/install-test-deps.sh fabric); without them these tests are skipped.
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import re
import signal
import shutil
import time
from html import unescape
from pathlib import Path

import pytest
from proc_table import processes

TOOLS = ("ibsim", "opensm", "ibnetdiscover", "iblinkinfo", "smpquery", "sminfo", "saquery", "ibqueryerrors", "ibroute", "ibtracert")
_ids = itertools.count()


def _missing():
    from fabricbench.workflows.fabric_sim import SimError, umad2sim_library

    gone = [t for t in TOOLS if not (shutil.which(t) or os.access(f"/usr/sbin/{t}", os.X_OK))]
    try:
        umad2sim_library()
    except SimError:
        gone.append("libumad2sim.so")
    return gone


pytestmark = pytest.mark.skipif(bool(_missing()), reason=f"needs ibsim-utils, opensm, infiniband-diags (missing: {_missing()})")


def processes_in(path: Path):
    """pids whose command line or working directory is in `path` (zombies have neither)."""
    return [pid for pid, cmdline, cwd in processes() if str(path) in cmdline or cwd.startswith(str(path))]


@pytest.fixture
def sim(cli, tmp_path, monkeypatch):
    """(name, run directory, fabric(*args)): a simulation name of this test, torn down afterwards."""
    rundir = tmp_path / "fabric-run"
    monkeypatch.setenv("FABRICBENCH_FABRIC_RUNDIR", str(rundir))
    name = f"t{os.getpid() % 100000}{next(_ids)}"

    def fabric(*args, check=True, timeout=180):
        return cli("fabric", *args, *(("--name", name) if args[0] in ("sim",) or "--sim" in args else ()),
                   check=check, timeout=timeout)

    yield name, rundir, fabric
    cli("fabric", "sim", "down", "--name", name, check=False)
    end = time.monotonic() + 10
    while processes_in(rundir) and time.monotonic() < end:
        time.sleep(0.1)
    assert processes_in(rundir) == [], "processes of the simulation are left"
    assert not (rundir / name).exists()


def as_json(out):
    return json.loads(out.stdout)


def problem_ports(data):
    return {kind: sorted(tuple(f["ports"]) for f in data["findings"] if f["kind"] == kind and f["severity"] != "info")
            for kind in {f["kind"] for f in data["findings"]}}


def test_scan_clean_inject_check_names_exactly_those_ports_clear_clean_again(sim, cli, tmp_path):
    name, rundir, fabric = sim
    fabric("sim", "up", "--hcas", "8", "--switches", "3")
    clean = fabric("scan", "--sim", "--routes", "--json")
    data = as_json(clean)
    assert clean.returncode == 0 and data["findings"] == [] and data["healthy"], data["verdict"]
    assert data["snapshot"]["switches"] == 3 and data["snapshot"]["hcas"] == 8 and data["snapshot"]["links"] == 10
    assert data["verdict"].startswith("HEALTHY: 3 switches, 8 HCAs, 10 links; master SM on n1 HCA-1")
    # The scanning host's facts and the discovery command, in the keys every run kind records.
    from fabricbench.store import open_db
    from fabricbench.workflows.hosts import RUN_FACTS

    store = open_db(str(cli.db))
    scan = store.get_run(data["run"]["id"])
    assert set(RUN_FACTS) <= set(scan.provenance) and scan.provenance["launcher"] == "local"
    assert scan.provenance["launch"][0] == "ibnetdiscover" and scan.provenance["nodes"] == 1
    (host,) = store.hosts(scan.id)
    assert host.facts["kernel"] and host.facts["cpu"]["model"] and host.facts["os"]

    fabric("sim", "inject", "errors", "edge1:2", "SymbolErrorCounter=57")
    fabric("sim", "inject", "down", "edge2:4")
    out = fabric("sim", "inject", "width", "edge1:3", "1x")  # restarts ibsim and OpenSM, replays the two above
    assert "restarted" in out.stdout

    bad = fabric("check", "--sim", "--json", check=False)
    assert bad.returncode == 1, bad.stderr
    data = as_json(bad)
    assert problem_ports(data) == {
        "errors": [("edge1 port 2",)],
        "down": [("edge2 port 4", "n8 HCA-1 port 1")],
        "degraded": [("edge1 port 3", "n3 HCA-1 port 1")],
    }, data["findings"]
    degraded = next(f for f in data["findings"] if f["kind"] == "degraded")
    assert degraded["values"]["active"] == "1X EDR" and degraded["values"]["expected"] == "4X EDR"
    assert data["previous"]["id"] == as_json(clean)["run"]["id"]
    text = fabric("check", "--snapshot", str(data["run"]["id"]), check=False)  # the stored snapshot, judged again
    assert text.returncode == 1 and text.stdout.startswith("PROBLEMS: 1 link down (edge2 port 4 - n8 HCA-1 port 1)")

    live = as_json(fabric("route", "n1", "n6", "--sim", "--live", "--json"))
    stored = as_json(fabric("route", "n1", "n6", "--json"))  # the first scan's forwarding tables
    assert [(h["from"], h["out"], h["to"], h["in"]) for h in live["routes"]["n1->n6"]] == \
        [("n1 HCA-1", 1, "edge1", 1), ("edge1", 5, "core1", 1), ("core1", 2, "edge2", 5), ("edge2", 2, "n6 HCA-1", 1)]
    assert live["routes"]["n1->n6"] == stored["routes"]["n1->n6"]  # OpenSM kept the LIDs across the restart
    assert stored["switch_ports"]["n1->n6"] == ["edge1 port 1", "edge1 port 5", "core1 port 1", "core1 port 2",
                                                "edge2 port 5", "edge2 port 2"]

    fabric("sim", "inject", "clear")
    again = fabric("check", "--sim", "--json", check=False)
    data = as_json(again)
    assert again.returncode == 0 and data["findings"] == [], data["findings"]

    report = tmp_path / "fabric.html"
    cli("report", str(as_json(bad)["run"]["id"]), "-o", str(report))
    html = report.read_text()
    for expected in ("Fabric", "topology of 3 switches and 7 HCAs", "Links", "Error counters", "edge1 port 3", "1X EDR", "SymbolErrorCounter 57", "data:image/svg+xml"):
        assert expected in html, expected
    # fabric check and the report of its snapshot give the same verdict and findings (one function) ...
    checked, text = as_json(bad), unescape(html)
    assert checked["verdict"] in text
    for f in checked["findings"]:
        if f["severity"] != "info":
            assert all(port in text for port in f["ports"]) and f["evidence"] in text, f
    # ... and the topology picture draws the downed cable to n8 (gone from this snapshot), dashed
    pictures = [base64.b64decode(b).decode() for b in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html)]
    assert any("n8" in p and "stroke-dasharray" in p for p in pictures)


def test_crashed_daemon_is_reported_and_down_leaves_nothing(sim, cli):
    name, rundir, fabric = sim
    fabric("sim", "up", "--hcas", "4", "--switches", "2")
    state = json.loads((rundir / name / "state.json").read_text())
    os.kill(state["pids"]["ibsim"][0], signal.SIGKILL)  # the simulator crashes
    time.sleep(0.3)
    status = as_json(fabric("sim", "status", "--json"))
    assert status["up"] is False and status["daemons"]["ibsim"]["running"] is False
    failed = fabric("check", "--sim", check=False)
    assert failed.returncode == 2 and "ibsim stopped" in failed.stderr and "Traceback" not in failed.stderr
    down = fabric("sim", "down")
    assert f"opensm (pid {state['pids']['opensm'][0]})" in down.stdout  # OpenSM, still running, stopped by its pid


def test_bad_requests_get_one_clear_line(sim):
    name, rundir, fabric = sim
    out = fabric("sim", "up", "--degrade", "edge9:1=1x", check=False)
    assert out.returncode == 2 and "no switch or host 'edge9'" in out.stderr and "Traceback" not in out.stderr
    assert not (rundir / name).exists()
    out = fabric("check", "--sim", check=False)
    assert out.returncode == 2 and f"no simulated fabric '{name}' is up" in out.stderr
    fabric("sim", "up", "--hcas", "4", "--switches", "1")
    again = fabric("sim", "up", "--hcas", "4", "--switches", "1")
    assert "already up" in again.stdout
    out = fabric("sim", "inject", "errors", "edge1:99", "5", check=False)
    assert out.returncode == 2 and "edge1 has ports 1 to 8" in out.stderr
    out = fabric("sim", "inject", "errors", "n2", "Bogus=5", check=False)
    assert out.returncode == 2 and "counter 'Bogus'" in out.stderr
    out = fabric("sim", "inject", "down", "edge1:7", check=False)
    assert out.returncode == 2 and "has no cable" in out.stderr
    out = fabric("route", "n1", "n2", check=False)
    assert out.returncode == 1 and "fabric scan --routes" in out.stderr


def test_a_diagnostic_that_hangs_is_stopped_and_noted(sim):
    from fabricbench.workflows.fabric import _clean_scratch, sim_diags

    name, rundir, fabric = sim
    fabric("sim", "up", "--hcas", "4", "--switches", "2")
    diags = sim_diags(name)[0]
    assert diags.run("iblinkinfo -S", ["iblinkinfo", "-S", "0x200000"], timeout=2) is None  # it hangs on ibsim
    assert diags.problems == ["iblinkinfo -S 0x200000: timed out after 2 s"]
    assert diags.outputs["iblinkinfo -S"]["error"] == "timed out after 2 s"
    _clean_scratch(diags)
    assert not list((rundir / name / "diag").glob("sys-*"))
    daemons = json.loads((rundir / name / "state.json").read_text())["pids"]
    assert sorted(processes_in(rundir)) == sorted(p[0] for p in daemons.values())


@pytest.mark.skipif(os.path.isdir("/sys/class/infiniband") and bool(os.listdir("/sys/class/infiniband")),
                    reason="this machine has InfiniBand ports: a scan would succeed")
def test_without_a_fabric_the_check_cannot_run(cli):
    out = cli("fabric", "check", "--json", check=False)
    data = as_json(out)
    assert out.returncode == 2 and data["exit_status"] == 2 and data["healthy"] is None
    assert data["verdict"].startswith("COULD NOT RUN: could not discover the fabric: ibnetdiscover")
    assert "fabric sim up" in data["error"] and "Traceback" not in out.stderr


def test_report_of_a_snapshot_says_what_fabric_check_says_and_draws_the_downed_cable(sim, cli, tmp_path):
    """One verdict for fabric state: `fabric check` and the report of the same stored snapshot agree,
    a cable that went down since the previous snapshot included, and the picture draws it dashed."""
    import base64
    import html as html_lib
    import re

    name, rundir, fabric = sim
    fabric("sim", "up", "--hcas", "8", "--switches", "3")
    fabric("scan", "--sim")
    fabric("sim", "inject", "down", "edge2:4")
    bad = as_json(fabric("check", "--sim", "--json", check=False))
    assert bad["verdict"].startswith("PROBLEMS: 1 link down (edge2 port 4 - n8 HCA-1 port 1)"), bad["verdict"]
    again = fabric("check", "--snapshot", str(bad["run"]["id"]), check=False).stdout
    report = tmp_path / "fabric.html"
    cli("report", str(bad["run"]["id"]), "-o", str(report), "--plot-format", "svg", check=False)
    page = html_lib.unescape(report.read_text())
    assert bad["verdict"] in page and bad["verdict"].split(";")[0] in again, (bad["verdict"], again)
    svgs = [base64.b64decode(s).decode() for s in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)]
    svgs += re.findall(r"<svg.*?</svg>", page, re.S)
    topo = [s for s in svgs if "n8" in s]
    assert topo, "the topology picture leaves out n8, whose cable went down"
    assert any("stroke-dasharray" in s for s in topo), "the downed cable is not drawn dashed"
