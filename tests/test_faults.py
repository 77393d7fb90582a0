"""Every way a command can end (tests/fault_matrix.py): signals, a killed CLI, a stopped rank,
a full disk, a read-only file system, bad database URLs, an empty lab name.

Each test runs one row of the matrix with the real command line and asserts what the row
must show: exit status, run status, points kept, one-line errors, and no process of the
job left 10 s after the end. The fast, pure parts (run ownership, the watchdog's limits,
driver messages) are tested directly below.
"""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import fault_matrix as fm
from fabricbench.launch import procs
from fabricbench.store import Measurement, StoreError, open_db
from fabricbench.suite import Step
from fabricbench.planning import watchdog as wd
from fabricbench.workflows.session import ABANDONED, OWNER, RunFailed, Session, recover_abandoned


def run_row(name, tmp_path):
    try:
        out = fm.ROWS[name](tmp_path)
    except fm.Skip as exc:
        pytest.skip(str(exc))
    problems = fm.EXPECT[name](out)
    assert not problems, f"{out.line()}\n" + "\n".join(problems)
    return out


@pytest.mark.parametrize("name", ["sigterm", "sighup", "sighup-terminal", "sigkill", "sigstop-rank", "sigterm-profile",
                                  "sigkill-profile", "sigterm-health", "sigterm-scale", "sigterm-hpcc"])
def test_signals_end_the_run_and_its_job(name, tmp_path):
    out = run_row(name, tmp_path)
    if name in ("sigterm", "sighup"):
        assert out.message.startswith(f"interrupted by SIG{name[3:].upper()} after")


@pytest.mark.lab
def test_sigkill_with_the_lab_launcher_takes_orted_and_remote_ranks_down(tmp_path):
    out = run_row("sigkill-lab", tmp_path)
    assert len(out.notes["job"]) >= 4  # mpirun, orted and the two ranks at least


def test_disk_full_during_a_run(tmp_path):
    run_row("disk-full", tmp_path)


def test_reading_works_on_a_read_only_file_system(tmp_path):
    run_row("read-only-fs", tmp_path)


def test_bad_database_urls_say_what_to_install(tmp_path):
    run_row("bad-urls", tmp_path)


@pytest.mark.serial  # compares the host's namespaces before and after: never beside a lab test
def test_empty_lab_name_is_an_error(tmp_path):
    run_row("lab-name-empty", tmp_path)


# ---- the parts, directly ----------------------------------------------------------------------

def test_a_run_of_a_dead_process_is_recovered_and_a_live_one_is_not(db_path):
    store = open_db(str(db_path))
    mine = Session(store, kind="benchmark")  # this process: alive
    mine.add_now([Measurement("latency", {"size": 1}, "latency", "us", median=1.0)])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = store.create_run(provenance={OWNER: procs.process_identity(os.getpid()) | {"pid": child.pid}})
    reused = store.create_run(provenance={OWNER: procs.process_identity(os.getpid()) | {"start": 1}})
    elsewhere = store.create_run(provenance={OWNER: {"host": "not-" + socket.gethostname(), "pid": 1, "start": 1}})
    container = store.create_run(provenance={OWNER: procs.process_identity() | {"pid_ns": "pid:[1]", "start": 1}})
    unknown = store.create_run()
    assert recover_abandoned(store) == [dead.id, reused.id]
    assert store.get_run(dead.id).status == "failed" and store.get_run(dead.id).message == ABANDONED
    assert [store.get_run(r.id).status for r in (mine.run, elsewhere, container, unknown)] == ["running"] * 4
    assert recover_abandoned(store) == []
    mine.finish("complete")
    assert store.get_run(mine.run_id).status == "complete" and store.count_measurements(mine.run_id) == 1


def test_the_owner_survives_a_provenance_update(db_path):
    store = open_db(str(db_path))
    with Session(store, kind="hpcc", provenance={"a": 1}) as s:
        s.update(provenance={"b": 2})
    prov = store.get_run(s.run_id).provenance
    assert prov["b"] == 2 and prov[OWNER]["pid"] == os.getpid()


def test_a_store_failure_ends_the_run_failed_with_one_line(db_path, monkeypatch):
    store = open_db(str(db_path))
    session = Session(store, kind="benchmark")
    session.add_now([Measurement("latency", {"size": 1}, "latency", "us", median=1.0)])

    def full(*_a, **_k):
        raise StoreError(f"cannot write to database {db_path}: the disk is full")

    monkeypatch.setattr(store, "add_measurements", full)
    with pytest.raises(RunFailed) as err:
        with session:
            session.add_now([Measurement("latency", {"size": 2}, "latency", "us", median=1.0)])
    assert "disk is full" in str(err.value) and "1 measured points are kept" in str(err.value)
    run = store.get_run(session.run_id)
    assert run.status == "failed" and "disk is full" in run.message and "StoreError" not in run.message


def test_watchdog_limits_follow_the_plan():
    small = wd.Watchdog(Step("latency", "0:4M"), ranks=2)
    first = small.allowed()
    assert first == pytest.approx(wd.START_S + wd.BASE_S + wd.FACTOR * wd.GUARD * 0.2, rel=0.01)
    small.saw(None)
    assert small.allowed() < first  # start-up is paid once
    big = wd.Watchdog(Step("bw", "4M:4M", ("--time-budget", "1")), ranks=2)
    big.saw(4 << 20)
    assert big.allowed() > 429  # 16 iterations of a 64 x 4 MiB window at 10 MB/s
    fixed = wd.Watchdog(Step("latency", "1:8", ("--iterations", "100000")), ranks=2)
    fixed.saw(1)
    assert fixed.allowed() >= wd.FACTOR * 100000 * wd.FIXED_ITER_S
    assert wd.Watchdog(Step("latency", "1:8"), 2, fixed=0).enabled is False
    assert wd.Watchdog(Step("latency", "1:8"), 2, fixed=7).allowed() == 7
    health = wd.Watchdog(Step("allpairs", None, ("--size", str(1 << 20), "--window", "16", "--repetitions", "3")), 64)
    assert health.allowed() > 300  # four sweeps of 64 rounds of 16 MiB before the first bandwidth record


def test_watchdog_extends_to_the_pace_seen(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(wd.time, "monotonic", lambda: clock[0])
    dog = wd.Watchdog(Step("latency", "1:8"), ranks=2)
    dog.allowed()
    dog.saw(1)
    clock[0] = 500.0  # a point took 500 s: a slow link
    assert dog.allowed() == pytest.approx(wd.PACE * 500.0)


def test_watchdog_environment_is_checked(monkeypatch):
    monkeypatch.setenv(wd.ENV, "soon")
    with pytest.raises(Exception, match="FABRICBENCH_WATCHDOG='soon'"):
        wd.fixed_limit(None)
    monkeypatch.setenv(wd.ENV, "2.5")
    assert wd.fixed_limit(None) == 2.5 and wd.fixed_limit(9) == 9


def test_a_job_started_by_a_killed_process_is_stopped_by_the_guard(tmp_path):
    """A python that starts a Job running a shell with a detached grandchild (setsid, like the lab's orted), then is SIGKILLed."""
    script = tmp_path / "starter.py"
    script.write_text(
        "import sys, time\n"
        "from fabricbench.launch.procs import Job\n"
        "job = Job(['sh', '-c', 'setsid sleep 300 & sleep 300'])\n"
        "print(job.pid, flush=True)\n"
        "time.sleep(300)\n")
    starter = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        job_pid = int(starter.stdout.readline())
        end = time.monotonic() + 30
        while len(fm.job_processes(starter.pid)) < 4 and time.monotonic() < end:  # guard, sh, 2 sleeps
            time.sleep(0.1)
        known = fm.job_processes(starter.pid)
        assert job_pid in known and len(fm.marked_by(starter.pid)) >= 2, known
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        assert fm.left_after(known, starter.pid) == []
    finally:
        starter.kill()


def test_stop_signals_become_stopped_with_the_exit_status_of_the_signal():
    with pytest.raises(procs.Stopped) as caught:
        with procs.stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert caught.value.name == "SIGTERM" and caught.value.exit_code == 143
    assert isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_stop_signal_waits_for_a_deferred_block_to_end():
    done = []
    with pytest.raises(procs.Stopped) as caught:
        with procs.stop_signals():
            with procs.signals_deferred():
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(0.2)
                done.append("write")
            done.append("after")
    assert done == ["write"] and caught.value.exit_code == 129


def test_a_database_file_we_may_not_write_is_read_and_left_alone(db_path, monkeypatch):
    from fabricbench.store import db as store_db

    store = open_db(str(db_path))
    run = store.create_run()
    store.add_measurements(run.id, [Measurement("latency", {"size": 1}, "latency", "us", median=1.0)])
    store.update_run(run.id, provenance={OWNER: procs.process_identity() | {"start": 1}})  # a dead owner
    store.close()
    real_access = os.access
    monkeypatch.setattr(store_db.os, "access",
                        lambda path, mode: False if str(path) == str(db_path) and mode & os.W_OK else real_access(path, mode))
    ro = open_db(str(db_path))
    assert ro.read_only == "the file is not writable"
    assert [r.id for r in ro.list_runs()] == [run.id] and ro.count_measurements(run.id) == 1
    assert recover_abandoned(ro) == [] and ro.get_run(run.id).status == "running"
    with pytest.raises(StoreError, match="is read-only"):
        ro.create_run()
