"""The lab: shapes, names, launch command lines (no root needed), and real labs (marker `lab`).

Real-lab tests need root and working `ip netns`; they skip with the reason otherwise. The
accuracy tests also need the engine (fabricbench-mpi; FABRICBENCH_NATIVE_DIR) and mpirun.
Each test makes its own uniquely named lab and removes it, also when it fails. Measured
figures are printed (run with -s), put in assertion messages and kept as user properties.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabricbench.lab import Lab, LabError, LabSpec, current_lab, lab_session, leftovers, parse_rate, tcp_goodput
from fabricbench.lab import core as lab_core
from fabricbench.lab.agent import agent_script
from fabricbench.lab.rates import format_rate, tcp_payload_share
from fabricbench.lab.spec import node_index, parse_degrade
from fabricbench.launch import Layout
from fabricbench.launch import lab as lab_launch
from fabricbench.launch.mpi import MpiInfo

STARVED_SHM_US = 50.0


# ---- rates, goodput, shapes (no root) -------------------------------------------------------

def test_rates_read_like_tc():
    assert parse_rate("1gbit") == 10**9
    assert parse_rate("200mbit") == 200 * 10**6
    assert parse_rate("10Gbit") == 10 * 10**9
    assert parse_rate("1.5mbit") == 1_500_000
    assert parse_rate("125MBps") == 10**9  # bps units are bytes per second, as in tc
    assert parse_rate("1000kibit") == 1024000
    assert format_rate(10**9) == "1gbit" and format_rate(2_500_000) == "2500kbit"
    for bad in ("", "fast", "1gbyte", "0mbit", "-1gbit", "2tbit"):
        with pytest.raises(LabError, match="rate"):
            parse_rate(bad)


def test_goodput_formula_is_payload_over_what_the_shaper_counts():
    # htb (like tbf) on a veth counts Ethernet header + IP packet (MTU + 14); payload is MTU - 20 - 20 - 12.
    assert tcp_payload_share(1500) == pytest.approx(1448 / 1514)
    assert tcp_goodput(1e9) == pytest.approx(119.55e6, rel=1e-4)
    assert tcp_goodput(200e6) == pytest.approx(23.91e6, rel=1e-3)
    assert tcp_goodput(1e9, mtu=9000) == pytest.approx(1e9 / 8 * 8948 / 9014)


def test_spec_shapes_normalise_and_compare():
    a = LabSpec(nodes=4, link="1000mbit", degrade=(("3", "100mbit"),), subnet="10.213.0.0/24")
    b = LabSpec(nodes=4, link="1gbit", degrade={"n3": "0.1gbit"}, subnet="10.213.0.0/24")
    assert a.shape() == b.shape()
    assert a.shape()["degrade"] == {"n3": "100mbit"}
    assert LabSpec(nodes=4, subnet="10.213.0.0/24").shape() != a.shape()
    two = LabSpec(nodes=5, switches=2, uplink="500mbit")
    assert [two.switch_of(i) for i in range(1, 6)] == [1, 1, 1, 2, 2]
    assert two.shape()["uplink"] == "500mbit"
    assert LabSpec(nodes=4, switches=2).shape()["uplink"] == "1gbit"  # default: the link rate
    assert node_index("fbl-n7") == 7 and node_index("n2") == 2 and node_index("3") == 3
    assert parse_degrade(["n3=100mbit"]) == (("n3", "100mbit"),)


@pytest.mark.parametrize(
    "spec, message",
    [
        (dict(nodes=0), "at least 1 node"),
        (dict(nodes=2, switches=3), "1 or 2"),
        (dict(nodes=2, uplink="1gbit"), "--switches 2"),
        (dict(nodes=2, subnet="8.8.8.0/24"), "not a private network"),
        (dict(nodes=2, subnet="10.1.2.3/24"), "bad lab subnet"),
        (dict(nodes=8, subnet="10.213.0.0/29"), "room for 6 nodes"),
        (dict(nodes=2, degrade=(("n5", "1mbit"),)), "does not exist"),
        (dict(nodes=2, degrade=(("eth0", "1mbit"),)), "not a lab node"),
        (dict(nodes=2, link="1gb"), "cannot read the rate"),
    ],
)
def test_bad_shapes_are_refused_with_a_reason(spec, message):
    with pytest.raises(LabError, match=message):
        LabSpec(**spec).validate()


def test_lab_names_are_short_prefixes(monkeypatch):
    from fabricbench.lab import lab_name

    monkeypatch.delenv("FABRICBENCH_LAB", raising=False)
    assert lab_name() == "fbl"
    monkeypatch.setenv("FABRICBENCH_LAB", "t42")
    assert lab_name() == "t42"
    for bad in ("Fbl", "fbl-2", "toolongname", "1ab", "a b"):
        with pytest.raises(LabError, match="bad lab name"):
            lab_name(bad)
    lab = Lab("t42", LabSpec(nodes=3, switches=2, degrade=(("n2", "100mbit"),), subnet="172.31.7.0/24"))
    assert [n.name for n in lab.nodes] == ["t42-n1", "t42-n2", "t42-n3"]
    assert [n.address for n in lab.nodes] == ["172.31.7.1", "172.31.7.2", "172.31.7.3"]
    assert [n.switch for n in lab.nodes] == ["t42-sw1", "t42-sw1", "t42-sw2"]
    assert [n.rate for n in lab.nodes] == ["1gbit", "100mbit", "1gbit"]
    longest = Lab("abcdefgh", LabSpec(nodes=250, subnet="10.9.0.0/16"))
    names = [longest.interface, *(n.port for n in longest.nodes), "abcdefgh-br", "abcdefgh-up"]
    assert max(len(n) for n in names) <= 15
    assert lab.expected_goodput("n1", "n3") == pytest.approx(tcp_goodput(1e9))
    assert lab.expected_goodput("n1", "n2") == pytest.approx(tcp_goodput(100e6))


# ---- launch command lines (no root: a described lab, not a built one) -----------------------

@pytest.fixture
def fake_lab(monkeypatch):
    lab = Lab("fbt", LabSpec(nodes=4, subnet="10.213.0.0/24"))
    monkeypatch.setattr(lab_launch, "current_lab", lambda name=None: lab)
    monkeypatch.setattr(lab_launch, "detect_mpi", lambda: MpiInfo("/usr/bin/mpirun", "openmpi", "mpirun (Open MPI) 4.1.4"))
    return lab


def _after(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_launcher_fills_layout_and_builds_openmpi_command(fake_lab):
    launcher = lab_launch.LabLauncher(Layout())
    assert launcher.layout.np == 4
    assert launcher.layout.hosts == ["fbt-n1", "fbt-n2", "fbt-n3", "fbt-n4"]
    assert launcher.node_count() == 4
    argv = launcher.command(["prog", "arg with space"])
    # mpirun runs inside the first node, with that node's host name, exact argv.
    assert argv[1:4] == ["netns", "exec", "fbt-n1"] and "--uts" in argv
    assert argv[argv.index("-c") + 2] == "fbt-n1"
    mpirun = argv[argv.index("/usr/bin/mpirun"):]
    assert mpirun[-2:] == ["prog", "arg with space"]
    assert _after(mpirun, "-np") == ["4"]
    assert _after(mpirun, "--host") == ["fbt-n1:1,fbt-n2:1,fbt-n3:1,fbt-n4:1"]
    assert _after(mpirun, "--bind-to") == ["none"]
    mca = {mpirun[i + 1]: mpirun[i + 2] for i, a in enumerate(mpirun) if a == "--mca"}
    assert mca["btl"] == "tcp,self,vader" and mca["pml"] == "ob1"
    assert mca["btl_tcp_if_include"] == mca["oob_tcp_if_include"] == "10.213.0.0/24"
    assert Path(mca["plm_rsh_agent"]).read_bytes() == agent_script().read_bytes()
    env = launcher.environment()
    assert env["SHELL"] == "/bin/sh" and env["FABRICBENCH_LAB"] == "fbt"


def test_launcher_honours_hosts_ppn_and_np(fake_lab):
    two = lab_launch.LabLauncher(Layout(hosts=["n2", "fbt-n4"]))
    assert two.layout.hosts == ["fbt-n2", "fbt-n4"] and two.layout.np == 2
    assert "fbt-n2" == two.command(["p"])[3]
    ppn = lab_launch.LabLauncher(Layout(ppn=2))
    assert ppn.layout.np == 8
    cmd = ppn.command(["p"])
    assert _after(cmd, "--map-by") == ["ppr:2:node"] and _after(cmd, "--host") == ["fbt-n1:2,fbt-n2:2,fbt-n3:2,fbt-n4:2"]
    shared = lab_launch.LabLauncher(Layout(hosts=["n1", "n1"]))
    assert _after(shared.command(["p"]), "--host") == ["fbt-n1:2"]
    wrap = lab_launch.LabLauncher(Layout(np=6))
    assert _after(wrap.command(["p"]), "--map-by") == ["node"]
    with pytest.raises(LabError, match="not a lab node"):
        lab_launch.LabLauncher(Layout(hosts=["localhost"]))


def test_launcher_builds_hydra_command(fake_lab, monkeypatch):
    monkeypatch.setattr(lab_launch, "detect_mpi", lambda: MpiInfo("/usr/bin/mpiexec", "mpich", "HYDRA build details"))
    argv = lab_launch.LabLauncher(Layout(hosts=["n1", "n3"])).command(["p"])
    hydra = argv[argv.index("/usr/bin/mpiexec"):]
    assert _after(hydra, "-launcher") == ["rsh"]
    assert os.access(_after(hydra, "-launcher-exec")[0], os.X_OK)
    assert _after(hydra, "-hosts") == ["fbt-n1:1,fbt-n3:1"]
    assert _after(hydra, "-iface") == ["fbt-eth0"] and _after(hydra, "-bind-to") == ["none"]


def test_launcher_without_a_lab_says_how_to_make_one(monkeypatch):
    monkeypatch.setattr(lab_launch, "current_lab", lambda name=None: None)
    monkeypatch.delenv("FABRICBENCH_LAB", raising=False)
    with pytest.raises(LabError, match=r"lab 'fbl' is not up.*fabricbench lab up"):
        lab_launch.LabLauncher(Layout())


def test_agent_only_enters_lab_nodes():
    for host, message in (("somehost", "not a lab node name"), ("zzq-n1", "no lab node 'zzq-n1'"), ("x-n1;true", "bad host name")):
        done = subprocess.run(["sh", str(agent_script()), "-x", host, "echo", "hi"], capture_output=True, text=True)
        assert done.returncode == 255 and message in done.stderr, done.stderr


def test_without_root_one_clear_error(monkeypatch):
    from fabricbench.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="needs root"):
        Lab.up(LabSpec(nodes=2), "fbt")
    result = CliRunner().invoke(main, ["lab", "up", "--nodes", "2", "--name", "fbt"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "needs root" in result.stderr, result.stderr


# ---- real labs ------------------------------------------------------------------------------

_names = (f"ft{os.getpid() % 10000:04d}{c}{d}" for c, d in itertools.product("abcdefghij", "abcdefghij"))


@pytest.fixture(scope="session")
def netns_ok():
    """Root and namespaces are checked by the `lab` marker (tests/conftest.py)."""


@pytest.fixture
def make_lab(netns_ok, monkeypatch):
    """make_lab(nodes=..., link=..., ...) -> a lab with a unique name, removed after the test."""
    made = []

    def make(**shape):
        name = next(_names)
        made.append(name)
        lab = Lab.up(LabSpec(**shape), name)
        monkeypatch.setenv("FABRICBENCH_LAB", name)
        return lab

    try:
        yield make
    finally:
        for name in made:
            lab_core.down(name)


@pytest.fixture
def record_figure(request):
    """Keep a measured figure with the test (junit properties with junit_family=xunit1; plugins)."""
    return lambda key, value: request.node.user_properties.append((key, value))


@pytest.fixture(scope="session")
def engine(netns_ok):
    """MPI and the engine are checked by the `mpi` marker (tests/conftest.py)."""
    from fabricbench.native import engine_path

    return str(engine_path())


def run_engine(hosts, args, timeout=180):
    """Records of one engine run across the current lab ($FABRICBENCH_LAB) on `hosts`."""
    from fabricbench.native import engine_path

    launcher = lab_launch.LabLauncher(Layout(hosts=list(hosts)))
    done = subprocess.run(
        launcher.command([str(engine_path()), *args, "--format", "jsonl"]),
        env=launcher.environment(), capture_output=True, text=True, timeout=timeout,
    )
    assert done.returncode == 0, f"engine {args} on {hosts} failed:\n{done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def point(records, metric):
    return next(r for r in records if r.get("record") == "point" and r["metric"] == metric)


def root_links(name):
    """The host namespace's interfaces that carry lab `name`'s name (every object a lab makes does);
    another test's labs, up at the same time on another worker, are not counted."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return [line.split(":")[1].strip() for line in out.splitlines() if line.split(":")[1].strip().startswith(name)]


@pytest.mark.lab
def test_lab_up_status_idempotence_and_down(make_lab):
    lab = make_lab(nodes=3, link="200mbit", switches=2, uplink="100mbit", degrade=(("n3", "50mbit"),))
    name = lab.name
    assert root_links(name) == [], "the lab must not add interfaces to the host's namespace"
    st = lab.status()
    assert st["healthy"], st["problems"]
    assert [(n["name"], n["shaped"]) for n in st["nodes"]] == [
        (f"{name}-n1", {"out": "200mbit", "in": "200mbit"}),
        (f"{name}-n2", {"out": "200mbit", "in": "200mbit"}),
        (f"{name}-n3", {"out": "50mbit", "in": "50mbit"}),
    ]
    assert st["uplink"] == {f"{name}-sw1": "100mbit", f"{name}-sw2": "100mbit"}
    hosts = [ln for ln in lab.hostfile_path.read_text().splitlines() if not ln.startswith("#")]
    assert hosts == lab.node_names
    # Host names, name resolution and routes inside a node: only the lab subnet, no way out.
    out = lab.run("n2", ["sh", "-c", f"hostname; getent hosts {name}-n3; ip -4 route; ip -4 -o addr"]).stdout.splitlines()
    assert out[0] == f"{name}-n2"
    # TCP in the nodes is the host's (lab/rates.py TCP_CONGESTION says why)
    host_cc = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert lab.run("n1", ["cat", "/proc/sys/net/ipv4/tcp_congestion_control"]).stdout.strip() == host_cc
    assert out[1].split() == [lab.nodes[2].address, f"{name}-n3"]
    routes = [ln for ln in out[2:] if "route" not in ln and "inet" not in ln]
    assert routes == [f"{lab.subnet} dev {lab.interface} proto kernel scope link src {lab.nodes[1].address} "]
    assert not any("default" in ln for ln in out)
    # Same shape: nothing happens; another shape: refused.
    again = Lab.up(LabSpec(nodes=3, link="200mbit", switches=2, uplink="100mbit", degrade={"3": "50mbit"}), name)
    assert again.created == lab.created
    with pytest.raises(LabError, match="already up with another shape"):
        Lab.up(LabSpec(nodes=4, link="200mbit"), name)
    assert current_lab(name).describe() == lab.describe()
    removed = lab.down()
    assert sorted(r for r in removed if not r.startswith("/")) == sorted(lab.namespaces)
    assert leftovers(name) == [] and current_lab(name) is None
    assert not any(ns.startswith(name + "-") for ns in os.listdir("/run/netns"))
    assert not Path(f"/etc/netns/{name}-n1").exists()


@pytest.mark.lab
def test_down_cleans_up_after_a_crash(make_lab):
    lab = make_lab(nodes=2)
    name = lab.name
    # A crash: the state file is gone and a process is still running inside a node.
    lab.state_path.unlink()
    stray = subprocess.Popen(lab.exec_argv("n1", ["sleep", "600"]))
    assert current_lab(name) is None
    assert set(lab.namespaces) <= set(leftovers(name))
    # up over the leftovers rebuilds (any shape); down removes everything, stray process included.
    rebuilt = Lab.up(LabSpec(nodes=3), name)
    assert rebuilt.status()["healthy"]
    assert stray.wait(timeout=10) != 0
    lab_core.down(name)
    assert leftovers(name) == []


@pytest.mark.lab
def test_a_failed_build_leaves_nothing_behind(netns_ok, monkeypatch):
    name = next(_names)
    calls = []
    real_shape = lab_core._shape

    def failing_shape(ns, dev, rate, mtu):
        calls.append(dev)
        if len(calls) == 3:
            raise LabError("injected: tc failed")
        real_shape(ns, dev, rate, mtu)

    monkeypatch.setattr(lab_core, "_shape", failing_shape)
    try:
        with pytest.raises(LabError, match="injected"):
            Lab.up(LabSpec(nodes=3), name)
        assert leftovers(name) == []
    finally:
        lab_core.down(name)


@pytest.mark.lab
def test_lab_session_tears_down_also_on_errors(netns_ok):
    name = next(_names)
    with pytest.raises(RuntimeError):
        with lab_session(nodes=2, link="100mbit", name=name) as lab:
            assert current_lab(name) is not None and lab.is_intact()
            raise RuntimeError("a failing test")
    assert leftovers(name) == [] and current_lab(name) is None


@pytest.mark.lab
@pytest.mark.mpi
def test_ranks_run_in_their_nodes_with_their_host_names(make_lab, engine, tmp_path):
    lab = make_lab(nodes=3)
    info = run_engine(lab.node_names, ["info"])
    run = next(r for r in info if r["record"] == "run")
    assert run["hosts"] == lab.node_names
    assert sorted(r["host"] for r in info if r["record"] == "rank_info") == lab.node_names
    # The whole measurement path: fabricbench run --launcher lab into a real database.
    env = dict(os.environ, COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "fabricbench", "--db", str(tmp_path / "r.db"), "run", "latency", "--launcher", "lab",
         "--sizes", "8:8", "--time-budget", "0.05"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "complete" in done.stdout and "3 ranks" in done.stdout


def _until(measure, ok, attempts=3):
    """Measure up to `attempts` times until ok(result); returns (last result, all results).

    Other users of a 2-core machine steal CPU from a run now and then, and that only ever
    lowers bandwidth; a repeat tells a busy moment from a lab that is wrong.
    """
    results = []
    for _ in range(attempts):
        results.append(measure())
        if ok(results[-1]):
            break
    return results[-1], results


def _bw(hosts, window, iterations, size="4M"):
    """(headline value, median of the samples) of bw, in bytes/s."""
    rec = point(run_engine(hosts, ["bw", "--sizes", f"{size}:{size}", "--window", str(window), "--iterations", str(iterations)]), "bandwidth")
    return rec["value"] * 1e6, rec["median"] * 1e6


@pytest.mark.serial  # judges a shaped link's rate: never beside another worker's load (tests/conftest.py)
@pytest.mark.lab
@pytest.mark.mpi
@pytest.mark.parametrize("link, window, iterations", [("1gbit", 8, 6), ("200mbit", 4, 4)], ids=["1gbit", "200mbit"])
def test_bandwidth_is_the_links_tcp_goodput(make_lab, engine, record_figure, link, window, iterations):
    make_lab(nodes=2, link=link)
    expected = tcp_goodput(parse_rate(link))
    # The median of the per-window samples: other processes on a small machine steal CPU
    # from single windows, which drags the mean (the headline value) down, not the median.
    (value, median), tries = _until(lambda: _bw(["n1", "n2"], window, iterations), lambda r: 0.95 <= r[1] / expected <= 1.05)
    ratio = median / expected
    record_figure(f"bw_ratio_{link}", round(ratio, 4))
    record_figure(f"bw_value_ratio_{link}", round(value / expected, 4))
    report = (
        f"{link}: bw 4 MiB median {median / 1e6:.2f} MB/s (value {value / 1e6:.2f}), "
        f"goodput {expected / 1e6:.2f} MB/s, ratio {ratio:.4f} (value {value / expected:.4f})"
        + (f"; earlier tries: {', '.join(f'{m / expected:.4f}' for _, m in tries[:-1])}" if len(tries) > 1 else "")
    )
    print(f"\n[lab] {report}")
    assert ratio <= 1.05, report  # faster than the shaped link: the lab is wrong, however busy the host
    load = os.getloadavg()[0]
    if ratio < 0.95 and load > (os.cpu_count() or 1):
        # Both ranks and the kernel's TCP work share 2 cores with the other work: CPU, not the link, limits.
        pytest.skip(f"host too busy (load {load:.1f}) to check the link's goodput: {report}")
    assert 0.95 <= ratio, report


@pytest.mark.lab
@pytest.mark.mpi
def test_latency_between_nodes_is_above_shared_memory(make_lab, engine, record_figure):
    make_lab(nodes=2, link="1gbit")
    args = ["latency", "--sizes", "8:8", "--time-budget", "0.5"]

    def measure():
        return point(run_engine(["n1", "n2"], args), "latency"), point(run_engine(["n1", "n1"], args), "latency")

    def starved(result):
        # A shared-memory round trip takes well under a microsecond; a fastest one of 50 us or
        # more means the two ranks never ran at the same time (more runnable processes than cores).
        return result[1]["min"] > STARVED_SHM_US

    def ok(result):
        if starved(result):
            time.sleep(2)
            return False
        return result[0]["min"] > result[1]["min"]

    # Minimums: two spinning ranks on a busy 2-core machine can wait out a time slice (ms) in
    # any sample, which moves medians under load; the fastest round trip shows the path.
    (across, shared), tries = _until(measure, ok, attempts=4)
    record_figure("latency_lab_us", across["median"])
    record_figure("latency_shm_us", shared["median"])
    report = (
        f"8-byte latency between nodes: min {across['min']:.2f} us, median {across['median']:.2f} us; "
        f"within a node (shared memory): min {shared['min']:.2f} us, median {shared['median']:.2f} us"
        f" ({len(tries)} tries; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(f"\n[lab] {report}")
    if starved((across, shared)):
        pytest.skip(f"the machine is too busy to time a ping-pong (ranks starved of CPU): {report}")
    assert across["min"] > shared["min"], report


def _pairs(hosts, size="4M", window=8, iterations=4):
    """mbw_mr with pairs (i, i + np/2): ({(sender, receiver): bytes/s}, aggregate bytes/s).

    Each pair's figure is over its own time; the aggregate is all bytes over the slowest
    pair's time (OSU), so it cannot exceed what the pairs got together at the same time.
    """
    rec = point(run_engine(hosts, ["mbw_mr", "--sizes", f"{size}:{size}", "--window", str(window), "--iterations", str(iterations)]), "bandwidth")
    per_pair = {(hosts[p["ranks"][0]], hosts[p["ranks"][1]]): p["value"] * 1e6 for p in rec["detail"]["per_pair"]}
    return per_pair, rec["value"] * 1e6


@pytest.mark.serial  # judges a shaped link's rate: never beside another worker's load (tests/conftest.py)
@pytest.mark.lab
@pytest.mark.mpi
def test_degraded_node_is_slower_to_every_peer_and_the_others_are_not(make_lab, engine, record_figure):
    make_lab(nodes=4, link="1gbit", degrade=(("n4", "200mbit"),))
    full, slow = tcp_goodput(1e9), tcp_goodput(200e6)
    # n4 to every peer (and back once), and the other nodes among themselves; one pair at a
    # time, so two spinning ranks share the 2 cores rather than four.
    pairs = [("n4", "n1"), ("n4", "n2"), ("n4", "n3"), ("n1", "n4"), ("n1", "n2"), ("n2", "n3"), ("n3", "n1")]
    measured = {}
    for pair in pairs:
        # Load only ever lowers a figure: each pair's best of up to three tries is its figure.
        if "n4" in pair:
            measured[pair] = max(_until(lambda: _bw(list(pair), window=8, iterations=5, size="1M")[1], lambda v: 0.9 <= v / slow <= 1.05)[1])
        else:
            measured[pair] = max(_until(lambda: _bw(list(pair), window=8, iterations=4, size="4M")[1], lambda v: v >= 0.9 * full)[1])
    lines = []
    for (a, b), value in measured.items():
        expected = slow if "n4" in (a, b) else full
        lines.append(f"{a}->{b} {value / 1e6:.2f} MB/s ({value / expected:.3f} x {'200mbit' if expected == slow else '1gbit'} goodput)")
        record_figure(f"degrade_{a}_{b}_MBps", round(value / 1e6, 2))
    report = "; ".join(lines)
    print("\n[lab] degraded n4=200mbit: " + report)
    # The shaped link is never beaten (htb: at most one small burst), and is nearly reached; the
    # others run at 1gbit, whose htb goodput a busy 2-core host holds to about 0.8-0.9 (docs/methods/lab.md):
    # still three times the 200mbit node's, whatever the load.
    slowest_full = min(v for pair, v in measured.items() if "n4" not in pair)
    for (a, b), value in measured.items():
        if "n4" in (a, b):
            assert 0.75 * slow <= value <= 1.03 * slow, report
            assert slowest_full >= 3 * value, report
        else:
            assert value >= 0.75 * full, report


@pytest.mark.serial  # judges a shaped link's rate: never beside another worker's load (tests/conftest.py)
@pytest.mark.lab
@pytest.mark.mpi
def test_pairs_across_the_uplink_share_it(make_lab, engine, record_figure):
    make_lab(nodes=4, link="1gbit", switches=2, uplink="1gbit")  # n1, n2 on sw1; n3, n4 on sw2
    goodput = tcp_goodput(1e9)

    def crossing_ok(result):
        per_pair, total = result
        return all(0.35 <= v / goodput <= 0.65 for v in per_pair.values()) and total / goodput <= 1.05

    def local_ok(result):
        per_pair, total = result
        return all(v / goodput >= 0.8 for v in per_pair.values()) and total / goodput >= 1.6

    # Hosts ordered so that mbw_mr's pairs (i, i + 2) are n1->n3, n2->n4: both over the uplink,
    # then n1->n2 and n3->n4: each inside one switch.
    (crossing, crossing_total), _ = _until(lambda: _pairs(["n1", "n2", "n3", "n4"]), crossing_ok)
    (local, local_total), _ = _until(lambda: _pairs(["n1", "n3", "n2", "n4"]), local_ok)

    def show(per_pair, total):
        pairs = ", ".join(f"{a}->{b} {v / 1e6:.2f} MB/s ({v / goodput:.3f})" for (a, b), v in per_pair.items())
        return f"{pairs}, aggregate {total / 1e6:.2f} MB/s ({total / goodput:.3f})"

    report = (
        f"over the 1gbit uplink: {show(crossing, crossing_total)}; within a switch: {show(local, local_total)} "
        f"(ratios to 1gbit goodput {goodput / 1e6:.2f} MB/s)"
    )
    print("\n[lab] uplink sharing: " + report)
    for (a, b), v in crossing.items():
        record_figure(f"uplink_cross_{a}_{b}", round(v / goodput, 3))
    for (a, b), v in local.items():
        record_figure(f"uplink_local_{a}_{b}", round(v / goodput, 3))
    # Each pair's figure is over its own time and TCP shares a queue only roughly fairly, so
    # "about half" is 0.35-0.65 each, with the aggregate at most the uplink's goodput. Four
    # spinning ranks share 2 cores here, which costs the local pairs some percent.
    assert crossing_ok((crossing, crossing_total)), report
    assert local_ok((local, local_total)), report


@pytest.mark.lab
@pytest.mark.mpi
def test_every_bw_figure_above_the_line_is_flagged_where_it_is_shown(make_lab, cli):
    """A lab run's bandwidth points: whatever per-window sample passed the token bucket above the
    line rate is named by the run summary and by `show`, never shown silently (analysis/record.py)."""
    import fabricbench
    from fabricbench.analysis.record import over_ceiling
    from fabricbench import numbers as fmt

    make_lab(nodes=2, link="1gbit")
    out = cli("run", "bw", "--launcher", "lab", "--sizes", "1K:64K", "--repeat", "1", "--time-budget", "0.05")
    summary = " ".join(out.stdout.split())
    assert "(rate over all iterations, 95% CI " in summary, summary
    store = fabricbench.open_db(str(cli.db))
    run = store.get_run("last")
    line = parse_rate("1gbit") / 8 / 1e6  # 125 MB/s
    over = [m for m in store.measurements(run.id) if over_ceiling(m, line)]
    shown = " ".join(cli("show", str(run.id)).stdout.split())
    for m in over:
        assert f"{fmt.binary_size(m.params['size'])} (" in shown, (m.params["size"], shown)
    assert ("! above the 125.0 MB/s" in shown) == bool(over), shown
    assert ("! bw:" in summary) == bool(over), summary


def test_shaping_bursts_at_most_one_small_super_packet():
    # The most that leaves at once is one GSO packet (0.125 ms at the rate, 16 KiB at most) and the
    # bucket: one frame, two where they pass in 25 us (1gbit and faster).
    from fabricbench.lab.rates import bucket_bytes, gso_max_bytes

    assert gso_max_bytes(1e9) == 15625 and gso_max_bytes(10e9) == 16384
    assert gso_max_bytes(500e6) == 7812 and gso_max_bytes(100e6) == 1562 and gso_max_bytes(50e6) == 1514 and gso_max_bytes(1e9, mtu=9000) == 15625
    assert bucket_bytes(1e9) == bucket_bytes(10e9) == 2 * 1514 and bucket_bytes(500e6) == bucket_bytes(50e6) == 1514
    assert bucket_bytes(1e9, mtu=9000) == 9014 and bucket_bytes(10e9, mtu=9000) == 2 * 9014
