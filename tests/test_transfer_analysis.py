"""File transfer without a file server: round figures, run summaries, placement, the plan, the
node peer (real files, the page cache and loopback streams), the servers' lifecycle by pid, the
report section and the terminal tables. No root, no lab, no xrootd needed."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from fabricbench.analysis.transfer import (RawVsFile, ReaderResult, Spread, jain_index, judge, round_figures,
                                           summarize)
from fabricbench.report.words.transfer import reader_reason
from fabricbench.errors import UsageError
from fabricbench.lab import Lab, LabSpec, tcp_goodput
from fabricbench.launch.nodes import HostNodes, LabNodes, Node
from fabricbench.launch.procs import Daemon
from fabricbench.store import open_db
from fabricbench.workflows import transfer as wf
from fabricbench.launch import transfer_peer

PEER = [sys.executable, str(Path(transfer_peer.__file__))]
MiB = 1 << 20


def peer(*args, timeout=120):
    done = subprocess.run([*PEER, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- figures of one round ----------------------------------------------------------------------

def test_jain_index_is_one_for_equal_shares_and_one_over_n_for_one_winner():
    assert jain_index([5.0, 5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain_index([8.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([1.0, 2.0]) == pytest.approx(9 / 10)
    assert jain_index([]) is None and jain_index([0.0, 0.0]) is None


def test_round_figures_from_the_readers_clocks():
    size = 100 * 10**6
    a = ReaderResult(0, "n2", bytes=size, t_start=10.0, t_first=10.1, t_last=12.0, exit_status=0)
    b = ReaderResult(1, "n3", bytes=size, t_start=10.004, t_first=10.2, t_last=14.004, exit_status=0)
    c = judge(ReaderResult(2, "n4", bytes=size // 4, t_start=10.002, t_first=10.3, t_last=11.0, exit_status=-9), size)
    assert a.throughput == pytest.approx(50e6) and b.throughput == pytest.approx(25e6)
    assert not c.ok and c.throughput is None and reader_reason(c) == "killed by signal 9 after 25,000,000 of 100,000,000 bytes"
    f = round_figures([a, b, c])
    assert (f.readers, f.ok, f.failed) == (3, 2, 1)
    assert f.bytes == 2 * size + size // 4
    assert f.aggregate == pytest.approx(f.bytes / 4.004)  # every byte over first start .. last byte
    assert f.time_to_last_byte == pytest.approx(4.004)
    assert f.start_skew == pytest.approx(0.004)
    assert f.first_byte_spread == pytest.approx(0.2)
    assert f.fairness == pytest.approx(jain_index([50e6, 25e6]))  # the failed copy is not a share


def test_judge_names_what_went_wrong():
    assert judge(ReaderResult(0, "n2", bytes=10, exit_status=0), 10).ok
    assert reader_reason(judge(ReaderResult(0, "n2", bytes=4, exit_status=54), 10)) == "exited with status 54 after 4 of 10 bytes"
    assert reader_reason(judge(ReaderResult(0, "n2", bytes=9, exit_status=0), 10)) == "got 9 of 10 bytes"
    kept = judge(ReaderResult(0, "n2", reason="cannot connect"), 10)
    assert reader_reason(kept) == "cannot connect" and kept.short is None


# ---- a stored run, summarised ---------------------------------------------------------------

def _round(protocol, cache, n, rep, rate, size=64 * MiB, fail=None):
    results = []
    for i in range(n):
        t0 = 100.0 + rep * 10
        r = ReaderResult(i, f"n{i + 2}", bytes=size, t_start=t0 + 0.001 * i, t_first=t0 + 0.05,
                         t_last=t0 + 0.001 * i + size / rate, exit_status=0)
        if fail == i:
            r.bytes, r.exit_status = size // 3, -9
        results.append(judge(r, size))
    key = {"protocol": protocol, "cache": cache, "readers": n, "repetition": rep, "size": size}
    return wf._points(key, results, 119.55e6, 0 if cache == "cold" else None)


def _stored(tmp_path, points, provenance=None):
    store = open_db(str(tmp_path / "t.db"))
    run = store.create_run(kind="transfer", provenance=provenance or {"transfer": {"server": "fbl-n1", "file_size": 64 * MiB,
                                                                                  "server_goodput_MBps": 119.55}})
    store.add_measurements(run.id, points)
    store.finish_run(run.id, "complete")
    return store, run


def test_summary_rows_medians_failures_and_raw_against_file(tmp_path):
    points = []
    for rep in (1, 2, 3):
        for n in (1, 2):
            points += _round("xrootd", "warm", n, rep, (110e6 + rep * 1e6) / n, fail=1 if (n, rep) == (2, 2) else None)
            points += _round("tcp", "none", n, rep, 117e6 / n)
    store, run = _stored(tmp_path, points)
    data = store.load(run.id)
    s = summarize(data.measurements, data.run.provenance)
    assert [(r.protocol, r.cache, r.readers) for r in s.rows] == [("xrootd", "warm", 1), ("xrootd", "warm", 2),
                                                                   ("tcp", "none", 1), ("tcp", "none", 2)]
    one = s.row("xrootd", "warm", 1)
    assert one.rounds == 3 and one.per_reader.median == pytest.approx(112.0, rel=1e-3)
    assert one.per_reader.low == pytest.approx(111.0, rel=1e-3) and one.per_reader.high == pytest.approx(113.0, rel=1e-3)
    assert one.ceiling == pytest.approx(119.55) and one.of_ceiling == pytest.approx(112.0 / 119.55, rel=1e-3)
    two = s.row("xrootd", "warm", 2)
    assert (two.transfers, two.failed) == (6, 1)
    assert two.failures == ["repetition 2, n3: killed by signal 9 after 22,369,621 of 67,108,864 bytes"]
    assert two.per_reader.n == 3  # the failed copy's round still has its other reader
    assert s.failed == 1 and s.server == "fbl-n1" and s.file_size == 64 * MiB
    assert [(c.readers, c.cache) for c in s.comparisons] == [(1, "warm"), (2, "warm")]
    assert s.raw_at_or_above_file is True
    d = s.to_dict()
    assert d["rows"][0]["aggregate_MBps"]["median"] == pytest.approx(one.aggregate.median)
    json.dumps(d)


def test_raw_below_file_is_reported_not_hidden():
    assert RawVsFile(1, "warm", "xrootd", raw=100.0, file=101.5).ok  # inside the noise allowance
    assert not RawVsFile(1, "warm", "xrootd", raw=100.0, file=110.0).ok
    assert Spread.of([None, 3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)


# ---- plan, placement and ceilings ---------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(readers=[]), "at least 1"),
    (dict(readers=[0]), "at least 1"),
    (dict(readers=[2, 2]), "twice"),
    (dict(readers=[1], protocols=["rfio"]), "--protocol rfio"),
    (dict(readers=[1], caches=["hot"]), "--cache hot"),
    (dict(readers=[1], repeat=0), "--repeat"),
])
def test_bad_plans_are_refused(kwargs, message):
    with pytest.raises(UsageError, match=message):
        wf.TransferPlan(server="n1", **kwargs)


def test_plan_runs_raw_tcp_once_per_repetition_whatever_the_cache():
    plan = wf.TransferPlan(server="n1", readers=[1, 2, 4], caches=["warm", "cold"], repeat=2)
    assert plan.variants() == [("xrootd", "warm"), ("xrootd", "cold"), ("tcp", "none")]
    assert plan.rounds() == 2 * 3 * 3
    assert wf.TransferPlan(server="n1", readers=[1], protocols=["tcp"], caches=["cold"]).variants() == [("tcp", "none")]


def test_placement_on_a_lab_and_on_hosts():
    lab = Lab("fbt", LabSpec(nodes=5, subnet="10.213.0.0/24", degrade=(("n1", "200mbit"),)))
    nodes = LabNodes(lab)
    server, readers = wf.place(nodes, wf.TransferPlan(server="n1", readers=[1, 2, 4]))
    assert server.name == "fbt-n1" and server.address == "10.213.0.1"
    assert [r.name for r in readers] == ["fbt-n2", "fbt-n3", "fbt-n4", "fbt-n5"]
    with pytest.raises(wf.TransferCannotRun, match="5 readers need 5 reader nodes besides the server fbt-n1; there are 4"):
        wf.place(nodes, wf.TransferPlan(server="n1", readers=[5]))
    with pytest.raises(wf.TransferCannotRun, match="fbt-n1 is the server"):
        wf.place(nodes, wf.TransferPlan(server="n1", readers=[1], reader_nodes=["n1"]))
    argv = nodes.argv(server, ["xrootd", "-v"])
    assert argv[1:4] == ["netns", "exec", "fbt-n1"] and argv[-2:] == ["xrootd", "-v"]
    # The ceiling follows the server's (degraded) link.
    assert wf.ceiling(server, readers[:4]) == pytest.approx(tcp_goodput(200e6))
    hosts = HostNodes(rate_bps=10**9)
    with pytest.raises(wf.TransferCannotRun, match="--hosts"):
        wf.place(hosts, wf.TransferPlan(server="localhost", readers=[1]))
    server, readers = wf.place(hosts, wf.TransferPlan(server="localhost", readers=[2], reader_nodes=["localhost", "localhost"]))
    assert hosts.is_local(server) and hosts.argv(server, ["true"]) == ["true"]
    remote = hosts.node("node7")
    assert not hosts.is_local(remote)
    ssh = hosts.script(remote, Path(transfer_peer.__file__), ["cleanup", "/x"])
    assert ssh[:1] == ["ssh"] and "BatchMode=yes" in ssh and ssh[-1].startswith("python3 -c ")
    with pytest.raises(UsageError, match="bad host name"):
        hosts.node("-oProxyCommand=x")


def test_ceiling_is_the_server_link_unless_readers_or_the_uplink_allow_less():
    g = tcp_goodput
    server = Node("s", "a", 10**9, "sw1")
    fast = [Node(f"r{i}", "b", 10**9, "sw1") for i in range(3)]
    assert wf.ceiling(server, fast[:1]) == pytest.approx(g(1e9))
    slow = [Node("r", "b", 100 * 10**6, "sw1")]
    assert wf.ceiling(server, slow) == pytest.approx(g(100e6))
    far = [Node(f"f{i}", "c", 10**9, "sw2") for i in range(2)]
    assert wf.ceiling(server, far, uplink_bps=300 * 10**6) == pytest.approx(g(300e6))
    assert wf.ceiling(Node("s", "a"), fast) is None


def test_xrootd_config_exports_one_folder_read_only_to_the_readers_only():
    cfg = wf.xrootd_config("/var/tmp/w", ["10.0.0.2", "10.0.0.3", "10.0.0.2"])
    assert "all.export /fabricbench r/o" in cfg and "oss.localroot /var/tmp/w/data" in cfg
    assert [ln for ln in cfg.splitlines() if ln.startswith("xrd.allow")] == ["xrd.allow host 10.0.0.2", "xrd.allow host 10.0.0.3"]
    assert "xrd.port any" in cfg


# ---- the node peer: files, page cache, streams (loopback) ----------------------------------------

def test_peer_makes_the_file_and_evicts_or_warms_its_cache(tmp_path):
    made = peer("prepare", tmp_path / "w", 8 * MiB, "--config", "xrd.port any\n")
    path = made["path"]
    assert os.path.getsize(path) == 8 * MiB and made["url_path"] == "/fabricbench/file.bin"
    assert Path(made["config"]).read_text() == "xrd.port any\n"
    assert len(set(Path(path).read_bytes()[: 1 << 16])) > 200  # random bytes, not zeros
    warm = peer("cache", path, "warm")
    assert warm["resident_bytes"] == 8 * MiB
    if made["filesystem"] in transfer_peer.MEMORY_FILESYSTEMS:
        pytest.skip(f"{tmp_path} is on {made['filesystem']}: its pages cannot leave the cache")
    cold = peer("cache", path, "cold")
    assert cold["resident_bytes"] == 0
    assert peer("cleanup", tmp_path / "w") == {"removed": str(tmp_path / "w"), "left": False}


def test_peer_refuses_a_file_larger_than_the_free_space_or_a_cold_cache_in_memory(tmp_path):
    done = subprocess.run([*PEER, "prepare", str(tmp_path / "w"), str(1 << 60)], capture_output=True, text=True)
    assert done.returncode == 1 and "bytes free" in json.loads(done.stdout)["error"]
    if transfer_peer.filesystem_type("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    work = Path("/dev/shm") / f"fbtest-{os.getpid()}"
    try:
        done = subprocess.run([*PEER, "prepare", str(work), str(MiB), "--disk"], capture_output=True, text=True)
        assert done.returncode == 1 and "is on tmpfs (memory)" in json.loads(done.stdout)["error"]
        assert not (work / "data" / "fabricbench" / "file.bin").exists()
    finally:
        subprocess.run([*PEER, "cleanup", str(work)], capture_output=True)


def test_raw_stream_over_loopback_with_the_sender_stopped_by_pid(tmp_path):
    sender = Daemon([*PEER, "serve-tcp", "127.0.0.1", str(16 * MiB)], str(tmp_path / "tcp.log"))
    try:
        port = sender.wait_ready(lambda log: int(m.group(1)) if (m := wf.TCP_READY.search(log)) else None, 10, "sender")
        at = time.time() + 0.3
        got = [peer("read-tcp", "--at", f"{at:.6f}", "127.0.0.1", port) for _ in range(2)]
    finally:
        status = sender.stop()
    for r in got:
        assert r["bytes"] == 16 * MiB and r["exit_status"] == 0
        assert r["t_start"] <= r["t_first"] <= r["t_last"]
    assert got[0]["t_start"] >= at - 0.01  # waited for the common start moment
    assert status is not None and not sender.alive()
    assert not Path(f"/proc/{sender.pid}").exists() or "Z" in Path(f"/proc/{sender.pid}/stat").read_text().split(")")[-1][:3]


def test_daemon_that_exits_says_why(tmp_path):
    d = Daemon([sys.executable, "-c", "import sys; print('bad config line 3'); sys.exit(4)"], str(tmp_path / "d.log"))
    with pytest.raises(RuntimeError, match="exited with status 4 before it was ready: bad config line 3"):
        d.wait_ready(lambda log: None, 10, "toy server")
    d.stop()


def test_peer_times_a_copy_command_and_reports_a_killed_one(tmp_path):
    src = tmp_path / "f"
    src.write_bytes(os.urandom(4 * MiB))
    ok = peer("read", "--", "cat", src)
    assert ok["bytes"] == 4 * MiB and ok["exit_status"] == 0 and ok["t_first"] >= ok["t_start"]
    killed = peer("read", "--", "sh", "-c", f"head -c 1000 {src}; kill -9 $$")
    assert killed["bytes"] == 1000 and killed["exit_status"] == -9
    r = judge(ReaderResult(0, "x", bytes=killed["bytes"], exit_status=killed["exit_status"]), 4 * MiB)
    assert reader_reason(r).startswith("killed by signal 9 after 1,000 of")
    missing = peer("read", "--", "/nonexistent/xrdcp")
    assert missing["bytes"] == 0 and "cannot start" in missing["error"]


# ---- report section and terminal tables -----------------------------------------------------------

def test_report_section_and_terminal_tables_keep_every_number(tmp_path):
    from fabricbench.cli.transfer import show
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report
    from fabricbench.report.sections.transfer import findings

    points = []
    for rep in (1, 2):
        for n in (1, 2, 4):
            points += _round("xrootd", "warm", n, rep, 111.7e6 / n)
            points += _round("xrootd", "cold", n, rep, 104.25e6 / n, fail=0 if (n, rep) == (4, 1) else None)
            points += _round("tcp", "none", n, rep, 118.123e6 / n)
    store, run = _stored(tmp_path, points)
    report = report_of(store, [run.id])
    (section,) = [s for s in report.sections if s.id == f"transfer-{run.id}"]
    assert len(section.figures()) == 2 and all(f.data.startswith(b"<?xml") for f in section.figures())
    out = write_report(report, tmp_path / "r.html")
    html = out.read_text()
    assert "Raw against file transfer" in html and "network+protocol only" in html
    assert "killed by signal 9" in html
    data = store.load(run.id)
    summary = summarize(data.measurements, data.run.provenance)
    lines = findings(summary)
    assert any("raw TCP" in ln and "is at or above xrootd" in ln for ln in lines)
    assert lines[-1].startswith("1 reader transfer failed")
    buf = io.StringIO()
    import fabricbench.cli.transfer as cli_transfer

    saved = cli_transfer.console
    cli_transfer.console = Console(file=buf, width=80)
    try:
        show(wf.TransferOutcome(data.run, summary, 1, [{"server": "xrootd", "pid": 123, "stopped": True}]))
    finally:
        cli_transfer.console = saved
    text = buf.getvalue()
    assert "\u2026" not in text, text  # nothing cut
    assert "1 of 8" in text and "servers stopped: xrootd (pid 123)" in text
    sentences = ("- ", "failed:", "servers stopped", "see it with", "run ")
    assert max(len(ln) for ln in text.splitlines() if not ln.startswith(sentences)) <= 80  # the tables fit
