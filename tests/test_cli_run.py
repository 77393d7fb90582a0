"""`fabricbench run` end to end: real mpirun, real engine, real database; faults and interrupts."""
import csv
import io
import json
import os
import signal
import sqlite3
import time

import pytest

from fabricbench.launch.procs import process_tree
from fabricbench.store import open_db


def wait_for_points(db_path, at_least, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if db_path.exists():
            try:
                con = sqlite3.connect(db_path, timeout=5)
                n = con.execute("SELECT count(*) FROM measurements").fetchone()[0]
                con.close()
                if n >= at_least:
                    return n
            except sqlite3.OperationalError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} points appeared in {timeout} s")


def engine_ranks(pid):
    ranks = []
    for p in process_tree(pid):
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"fabricbench-mpi"):
            ranks.append(p)
    return ranks


def alive(pids):
    out = []
    for p in pids:
        try:
            state = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(p)
    return out


@pytest.mark.mpi
def test_quick_suite_end_to_end(cli, db_path):
    # a tiny budget per point and one launch per benchmark: this checks what a suite run stores, not how
    # precise its figures are (merging repeated launches is tested in test_repeats.py)
    out = cli("run", "quick", "--np", "2", "--time-budget", "0.01", "--repeat", "1", "--label", "quick <b>",
              "--tag", "fabric=shm", "--tag", "site=ci")
    assert "complete" in out.stdout
    db = open_db(str(db_path))
    (run,) = db.list_runs()
    assert run.status == "complete" and run.label == "quick <b>" and run.tags == {"fabric": "shm", "site": "ci"}
    assert run.ranks == 2
    items = db.measurements(run.id)
    by_bench = {}
    for m in items:
        by_bench.setdefault(m.benchmark, []).append(m)
    assert set(by_bench) == {"latency", "bw", "bibw", "allreduce", "alltoall"}
    lat_sizes = sorted({m.size for m in by_bench["latency"]})
    assert lat_sizes == [0] + [2**i for i in range(17)]  # 0:64K
    assert sorted({m.size for m in by_bench["bw"]}) == [2**i for i in range(23)]  # 1:4M
    assert all(m.value > 0 and m.unit in ("us", "MB/s", "msg/s") for m in items)
    bw = {m.size: m.value for m in by_bench["bw"] if m.metric == "bandwidth"}
    assert bw[4 << 20] > bw[64]
    # provenance: run level and per host
    prov = run.provenance
    assert prov["launcher"] == "mpirun" and prov["nodes"] == 1 and prov["mpi_library"]
    (host,) = db.hosts(run.id)
    assert host.facts["cpu"]["model"] and host.facts["mpi"]["library"] and len(host.digest) == 64

    listed = json.loads(cli("runs", "--json").stdout)
    assert listed[0]["id"] == run.id and listed[0]["status"] == "complete" and listed[0]["points"] == len(items)
    shown = cli("show", str(run.id)).stdout
    assert "latency — latency" in shown and "value (us)" in shown and "value (MB/s)" in shown
    rows = list(csv.DictReader(io.StringIO(cli("export", str(run.id), "--format", "csv").stdout)))
    assert len(rows) == len(items) and {"benchmark", "size", "metric", "unit", "value", "p99"} <= set(rows[0])
    exported = json.loads(cli("export", "last", "--format", "json").stdout)
    assert exported["run"]["id"] == run.id and len(exported["measurements"]) == len(items)
    assert exported["hosts"][0]["facts"]["kernel"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("run", "nosuch"), "unknown suite or benchmark 'nosuch'; suites: quick, standard, hpcc-net"),
        (("run", "latency", "--tag", "novalue"), "bad tag 'novalue'"),
        (("run", "mbw_mr", "--np", "3"), "needs an even rank count"),
        (("run", "latency", "--np", "1"), "needs at least 2 ranks"),
        (("run", "latency", "--sizes", "1:zz"), "bad message size 'zz'"),
        (("run", "latency", "--launcher", "ssh"), "unknown launcher 'ssh'"),
    ],
)
def test_bad_input_is_one_clear_line(cli, db_path, args, message):
    proc = cli(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not db_path.exists() or open_db(str(db_path)).list_runs() == []


def measuring_latency(cli, db_path):
    """A `run latency` that has stored two points: (the CLI process, its engine ranks)."""
    proc = cli.popen("run", "latency", "--np", "2", "--sizes", "0:4M", "--time-budget", "1", "--precision", "0")
    wait_for_points(db_path, 2)
    return proc, engine_ranks(proc.pid)


@pytest.mark.mpi
def test_ctrl_c_keeps_points_and_marks_interrupted(cli, db_path):
    proc, ranks = measuring_latency(cli, db_path)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "points are kept" in err
    (run,) = open_db(str(db_path)).list_runs()
    assert run.status == "interrupted"
    assert open_db(str(db_path)).count_measurements(run.id) >= 2
    assert ranks and not alive(ranks)


@pytest.mark.mpi
def test_killed_rank_fails_the_run_and_names_it(cli, db_path):
    proc, ranks = measuring_latency(cli, db_path)
    try:
        assert len(ranks) == 2
        os.kill(max(ranks), signal.SIGKILL)
        _, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "latency" in err and "at message size" in err and "rank" in err and "died" in err, err
    (run,) = open_db(str(db_path)).list_runs()
    assert run.status == "failed" and "died" in run.message
    assert open_db(str(db_path)).count_measurements(run.id) >= 2
    time.sleep(1)
    assert not alive(ranks)


@pytest.mark.mpi
def test_timeout_fails_the_run_and_keeps_points(cli, db_path):
    # Small latency points come fast; bibw at 4 MiB x 3000 iterations (~800 GB) cannot finish in 45 s.
    proc = cli("run", "latency", "bibw", "--np", "2", "--sizes", "0:4M", "--iterations", "3000", "--repeat", "1", "--timeout", "45",
               check=False)
    assert proc.returncode == 1 and "--timeout" in proc.stderr
    (run,) = open_db(str(db_path)).list_runs()
    assert run.status == "failed" and "--timeout" in run.message
    assert open_db(str(db_path)).count_measurements(run.id) >= 1


@pytest.mark.mpi
def test_concurrent_runs_lose_nothing(cli, db_path):
    args = ("run", "latency", "bw", "--np", "2", "--sizes", "1:64K", "--iterations", "50", "--repeat", "1")
    procs = [cli.popen(*args, "--label", f"writer{i}") for i in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    db = open_db(str(db_path))
    runs = db.list_runs()
    assert sorted(r.label for r in runs) == ["writer0", "writer1", "writer2"]
    counts = {db.count_measurements(r.id) for r in runs}
    assert len(counts) == 1 and counts.pop() >= 2 * 17
    assert all(r.status == "complete" for r in runs)
