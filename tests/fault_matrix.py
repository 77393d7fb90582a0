"""The fault matrix: every way a fabricbench command can end, tried as an operator would.

Each row starts the real command line (real mpirun, engine, database, lab, mounts),
hurts it the way Slurm, `timeout`, a closed terminal, the OOM killer, a full disk or a
typo would, and reports what a user would check: the exit status, the run's status and
message, the points kept, one-line errors, and the processes of the job still alive
10 s later (found by the pids, sessions and job marks of the command it started).

    PYTHONPATH=src FABRICBENCH_NATIVE_DIR=build/stage python tests/fault_matrix.py [ROW ...]

prints one line per row and exits non-zero if a row did not end as expected.
tests/test_faults.py runs the same rows under pytest. Rows that need root (mounts, the
lab) or MPI say "skipped" where those are missing.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set

from fabricbench.launch.procs import MARK, is_alive, process_tree, session_members

GONE_WITHIN_S = 10.0
ABANDONED = "the fabricbench process ended without finishing the run"


class Skip(Exception):
    """A row that cannot run here (no root, no MPI, no network namespaces)."""


@dataclass
class Outcome:
    row: str
    exit: Optional[int] = None  # the command's exit status (negative: killed by that signal)
    status: Optional[str] = None  # the run's status in the database
    message: Optional[str] = None  # the run's message
    points: Optional[int] = None  # points stored
    left: List[int] = field(default_factory=list)  # processes of the job alive GONE_WITHIN_S after the end
    stderr: str = ""
    notes: Dict[str, object] = field(default_factory=dict)

    def line(self) -> str:
        err = self.stderr.strip().splitlines()
        return (f"{self.row:<18} exit {self.exit!s:>4}  run {self.status or '-':<11} points {self.points!s:>4}  "
                f"left {len(self.left)}  {err[-1][:110] if err else ''}")


# ---- running the command line ---------------------------------------------------------------

def cli_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env["COLUMNS"] = "200"
    env.pop("FABRICBENCH_WATCHDOG", None)
    env.update(extra or {})
    return env


def argv(db: Path, *args: str) -> List[str]:
    return [sys.executable, "-m", "fabricbench", "--db", str(db), *args]


def start(db: Path, *args: str, env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    return subprocess.Popen(argv(db, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(env))


def call(db: Path, *args: str, env: Optional[Dict[str, str]] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv(db, *args), capture_output=True, text=True, env=cli_env(env), timeout=timeout)


def engine() -> str:
    from fabricbench.native import NativeMissing, engine_path

    if not shutil.which("mpirun"):
        raise Skip("mpirun is not on PATH")
    try:
        return str(engine_path())
    except NativeMissing as exc:
        raise Skip(f"the engine is not built: {exc}")


def need_root() -> None:
    if os.geteuid() != 0:
        raise Skip("needs root (mount, lab)")


# ---- what the database says -----------------------------------------------------------------

def db_points(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT count(*) FROM measurements").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def wait_points(db: Path, at_least: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        n = db_points(db)
        if n >= at_least:
            return n
        if proc.poll() is not None:
            raise AssertionError(f"the command ended ({proc.returncode}) before {at_least} points: {proc.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} points appeared in {timeout} s")


def last_run(db: Path, outcome: Outcome, env: Optional[Dict[str, str]] = None) -> Outcome:
    """Fill status, message and points of the last run, as `fabricbench show last --json` reports them."""
    shown = call(db, "runs", "--json", env=env)
    outcome.notes["next start"] = shown.stderr.strip()
    runs = json.loads(shown.stdout) if shown.returncode == 0 and shown.stdout.strip() else []
    if runs:
        run = runs[-1]
        outcome.status, outcome.message = run.get("status"), run.get("message")
        outcome.points = run.get("points", db_points(db))
    return outcome


# ---- the processes of a job -----------------------------------------------------------------

def marked_by(cli_pid: int) -> Set[int]:
    """Processes carrying the job mark of a job the fabricbench process `cli_pid` started."""
    prefix = f"{MARK}={socket.gethostname()}:{cli_pid}:".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if any(item.startswith(prefix) for item in env.split(b"\0")):
            found.add(int(entry))
    return found


def job_processes(cli_pid: int) -> Set[int]:
    """Every process the command started: its tree (the guard, mpirun, ranks), their sessions, the marked ones."""
    found = set(process_tree(cli_pid)) - {cli_pid}
    for pid in list(found):
        found |= set(session_members(pid))
    return (found | marked_by(cli_pid)) - {os.getpid()}


def engine_ranks(cli_pid: int, program: str = "fabricbench-mpi") -> List[int]:
    ranks = []
    for pid in sorted(job_processes(cli_pid)):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == program and is_alive(pid):
                ranks.append(pid)
        except OSError:
            pass
    return ranks


def wait_ranks(cli_pid: int, n: int, proc: subprocess.Popen, timeout: float = 120,
               program: str = "fabricbench-mpi") -> List[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ranks = engine_ranks(cli_pid, program)
        if len(ranks) >= n:
            return ranks
        if proc.poll() is not None:
            raise AssertionError(f"the command ended ({proc.returncode}) before its ranks started: {proc.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError(f"{n} ranks did not start in {timeout} s")


def left_after(known: Set[int], cli_pid: int, within: float = GONE_WITHIN_S) -> List[int]:
    """The processes of the job still alive `within` seconds from now (zombies do not count)."""
    end = time.monotonic() + within
    while True:
        alive = sorted(p for p in known | marked_by(cli_pid) if is_alive(p))
        if not alive or time.monotonic() >= end:
            return alive
        time.sleep(0.2)


def end_of(proc: subprocess.Popen, known: Set[int], outcome: Outcome, timeout: float = 120) -> Outcome:
    """Wait for the command, then for its job's processes to be gone."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        err += f"\n(the command did not end within {timeout} s)"
    outcome.exit, outcome.stderr = proc.returncode, err
    outcome.left = left_after(known | job_processes(proc.pid), proc.pid)
    return outcome


# ---- the rows ---------------------------------------------------------------------------------

LONG_RUN = ("run", "latency", "--np", "2", "--sizes", "0:4M", "--time-budget", "1", "--precision", "0")


def signal_run(work: Path, sig: int, extra: Sequence[str] = (), env: Optional[Dict[str, str]] = None,
               row: Optional[str] = None) -> Outcome:
    """A long run, hit by `sig` once it has stored 2 points."""
    return signal_workflow(work, row or signal.Signals(sig).name, (*LONG_RUN, *extra), "fabricbench-mpi", points=2,
                           sig=sig, env=env, settle=0.0)


def sigterm(work: Path) -> Outcome:
    return signal_run(work, signal.SIGTERM)


def sighup(work: Path) -> Outcome:
    return signal_run(work, signal.SIGHUP)


def sighup_terminal(work: Path) -> Outcome:
    """The terminal closes: the command runs on a pseudo-terminal that is its controlling terminal, whose
    other end is then closed (the kernel sends SIGHUP, and writes to the terminal fail from then on)."""
    engine()
    db = work / "results.db"
    master, slave = os.openpty()
    proc = subprocess.Popen(argv(db, *LONG_RUN), stdin=slave, stdout=slave, stderr=slave, env=cli_env(),
                            start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    hang_up = threading.Event()
    shown: List[bytes] = []

    def terminal() -> None:  # reads what the command shows (a full terminal would block it), then hangs up
        while not hang_up.is_set():
            if select.select([master], [], [], 0.1)[0]:
                try:
                    shown.append(os.read(master, 65536))
                except OSError:
                    break
        os.close(master)

    reader = threading.Thread(target=terminal, daemon=True)
    reader.start()
    out = Outcome("SIGHUP terminal")
    try:
        wait_points(db, 2, proc)
        wait_ranks(proc.pid, 2, proc)
        known = job_processes(proc.pid)
        hang_up.set()
        reader.join()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pass
        out.exit = proc.returncode
        out.left = left_after(known | job_processes(proc.pid), proc.pid)
    finally:
        hang_up.set()
        proc.kill()
    out.notes["shown"] = b"".join(shown).decode(errors="replace")[-300:]
    return last_run(db, out)


def sigkill(work: Path) -> Outcome:
    return signal_run(work, signal.SIGKILL)


def sigkill_lab(work: Path) -> Outcome:
    """SIGKILL with --launcher lab: mpirun in one node, orted and a rank in the other, started through the rsh agent."""
    need_root()
    from fabricbench.lab import Lab, LabSpec, netns_usable
    from fabricbench.lab import core as lab_core

    reason = netns_usable()
    if reason:
        raise Skip(f"no network namespaces: {reason}")
    engine()
    name = f"ff{os.getpid() % 100000:05d}"
    Lab.up(LabSpec(nodes=2, link="1gbit"), name)
    try:
        return signal_run(work, signal.SIGKILL, extra=("--launcher", "lab"), env={"FABRICBENCH_LAB": name},
                          row="SIGKILL lab")
    finally:
        lab_core.down(name)


def sigstop_rank(work: Path, watchdog: float = 5.0) -> Outcome:
    """One rank stopped with SIGSTOP, no --timeout: the watchdog (short here, via FABRICBENCH_WATCHDOG) ends the run."""
    engine()
    db = work / "results.db"
    proc = start(db, "run", "latency", "--np", "2", "--sizes", "0:4M", "--time-budget", "0.5", "--precision", "0",
                 env={"FABRICBENCH_WATCHDOG": str(watchdog)})
    out = Outcome("SIGSTOP rank")
    try:
        wait_points(db, 2, proc)
        ranks = wait_ranks(proc.pid, 2, proc)
        known = job_processes(proc.pid)
        os.kill(ranks[-1], signal.SIGSTOP)
        out.notes["stopped"] = ranks[-1]
        end_of(proc, known, out)
    finally:
        proc.kill()
    return last_run(db, out)


def _profile(work: Path, sig: int, row: str) -> Outcome:
    eng = engine()
    tmp = work / "tmp"
    tmp.mkdir()
    db = work / "results.db"
    proc = start(db, "profile", "--", "mpirun", "-np", "2", "--oversubscribe", eng, "latency", "--sizes", "0:4M",
                 "--time-budget", "1", env={"TMPDIR": str(tmp)})
    out = Outcome(row)
    try:
        wait_ranks(proc.pid, 2, proc)
        time.sleep(1)
        known = job_processes(proc.pid)
        proc.send_signal(sig)
        end_of(proc, known, out)
    finally:
        proc.kill()
    last_run(db, out)
    out.points = db_points(db)
    out.notes["temp folders"] = sorted(p.name for p in tmp.glob("fabricbench-profile-*"))
    return out


def sigterm_profile(work: Path) -> Outcome:
    return _profile(work, signal.SIGTERM, "SIGTERM profile")


def sigkill_profile(work: Path) -> Outcome:
    return _profile(work, signal.SIGKILL, "SIGKILL profile")


def signal_workflow(work: Path, row: str, args: Sequence[str], program: str, points: int = 0,
                    sig: int = signal.SIGTERM, env: Optional[Dict[str, str]] = None, settle: float = 1.0) -> Outcome:
    """A command hit by `sig` once its 2 ranks (`program`) run and `points` are stored."""
    engine()
    db = work / "results.db"
    proc = start(db, *args, env=env)
    out = Outcome(row)
    try:
        if points:
            wait_points(db, points, proc)
        wait_ranks(proc.pid, 2, proc, program=program)
        time.sleep(settle)
        known = job_processes(proc.pid)
        out.notes["job"] = sorted(known)
        proc.send_signal(sig)
        end_of(proc, known, out)
    finally:
        proc.kill()
    return last_run(db, out)


def sigterm_health(work: Path) -> Outcome:
    return signal_workflow(work, "SIGTERM health", ("health", "--np", "2", "--repetitions", "1000"), "fabricbench-mpi")


def sigterm_scale(work: Path) -> Outcome:
    return signal_workflow(work, "SIGTERM scale", ("scale", "--np-list", "2", "--repeat", "5", "--", engine(),
                                                   "latency", "--sizes", "0:1M", "--time-budget", "0.3"),
                           "fabricbench-mpi", points=1)


def sigterm_hpcc(work: Path) -> Outcome:
    if not shutil.which("hpcc"):
        raise Skip("hpcc is not installed (Debian: apt-get install hpcc)")
    return signal_workflow(work, "SIGTERM hpcc", ("hpcc", "--np", "2", "--n", "4000", "--workdir", str(work / "hpcc")),
                           "hpcc")


class Mount:
    """A small tmpfs of our own at `path` (root), unmounted on exit."""

    def __init__(self, path: Path, size: str = "4m"):
        self.path, self.size = path, size

    def __enter__(self) -> "Mount":
        need_root()
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0755", "fabricbench-fault",
                               str(self.path)], capture_output=True, text=True)
        if done.returncode != 0:
            raise Skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
        return self

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True, capture_output=True)

    def fill(self) -> Path:
        """Write zeros until the file system is full; returns the filler file."""
        filler = self.path / "filler"
        try:  # the run's own writes may have filled it already: then even creating the file fails
            with open(filler, "wb") as fh:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
        except OSError:
            pass
        return filler

    def __exit__(self, *exc) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


def disk_full(work: Path) -> Outcome:
    """The database's file system fills up during a run."""
    engine()
    with Mount(work / "mnt") as mnt:
        db = mnt.path / "results.db"
        proc = start(db, "run", "latency", "--np", "2", "--sizes", "0:4M", "--time-budget", "0.5", "--precision", "0")
        out = Outcome("disk full")
        try:
            wait_points(db, 2, proc)
            known = job_processes(proc.pid)
            filler = mnt.fill()
            end_of(proc, known, out)
        finally:
            proc.kill()
        out.notes["points before space came back"] = db_points(db)
        filler.unlink(missing_ok=True)
        return last_run(db, out)


def read_only_fs(work: Path) -> Outcome:
    """A database on a file system remounted read-only: reading commands work, a run says why it cannot."""
    from fabricbench.store import Measurement, open_db

    with Mount(work / "mnt") as mnt:
        db = mnt.path / "results.db"
        store = open_db(str(db))
        run = store.create_run(label="kept")
        store.add_measurements(run.id, [Measurement("latency", {"size": s}, "latency", "us", median=1.0 + s)
                                        for s in (1, 2, 4)])
        store.finish_run(run.id, "complete")
        store.close()
        mnt.read_only()
        out = Outcome("read-only fs")
        for name, args in (("runs", ("runs",)), ("show", ("show", str(run.id))), ("export", ("export", str(run.id))),
                           ("run", ("run", "latency", "--np", "2", "--sizes", "1:8"))):
            done = call(db, *args)
            out.notes[name] = (done.returncode, done.stdout, done.stderr)
        out.exit, out.stderr = out.notes["run"][0], out.notes["run"][2]
        out.status = "complete" if "complete" in out.notes["runs"][1] else None
        out.points = sum(1 for line in out.notes["export"][1].splitlines()[1:] if line.strip())
        return out


def bad_urls(work: Path) -> Outcome:
    """Database URLs whose kind or driver is missing: one line each, saying what to install."""
    blocker = work / "no-driver"
    blocker.mkdir()
    for module in ("psycopg2", "psycopg"):
        (blocker / f"{module}.py").write_text(f"raise ModuleNotFoundError(\"No module named '{module}'\", name='{module}')\n")
    no_driver = {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    out = Outcome("bad DB URLs")
    for url, env in (("foo://bar", None), ("postgresql://fb@localhost/x", no_driver),
                     ("postgresql://fb:secret@localhost:notaport/x", None)):
        done = subprocess.run([sys.executable, "-m", "fabricbench", "--db", url, "runs"], capture_output=True,
                              text=True, env=cli_env(env), timeout=60)
        out.notes[url] = (done.returncode, done.stderr)
    out.exit = max(code for code, _ in out.notes.values())
    out.stderr = "\n".join(err.strip() for _, err in out.notes.values())
    return out


def lab_name_empty(work: Path) -> Outcome:
    """`lab up --name ''` and `lab down --name ''` are errors, never the default lab."""
    before = sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    out = Outcome("lab --name ''")
    for verb in (("up", "--nodes", "2"), ("down",)):
        done = call(work / "unused.db", "lab", verb[0], "--name", "", *verb[1:])
        out.notes[verb[0]] = (done.returncode, done.stderr)
    after = sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    out.notes["namespaces made"] = sorted(set(after) - set(before))
    out.exit = max(code for code, _ in (out.notes["up"], out.notes["down"]))
    out.stderr = out.notes["up"][1]
    return out


# ---- what each row must show --------------------------------------------------------------

# A progress line ('[24s] [1/3] latency (launch 1 of 3) 0 B 1/24'), printed on a pipe every
# LINE_EVERY seconds: a run slowed by a busy host prints one before its error, which is still one line.
PROGRESS_LINE = re.compile(r"^\[[0-9][^\]]*\] \[[0-9]+/[0-9]+\] ")


def one_line(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip() and not PROGRESS_LINE.match(ln)]
    return len(lines) == 1 and "Traceback" not in text and "Error('" not in text and "Error(\"" not in text


def _job_gone(out: Outcome) -> List[str]:
    return [f"processes of the job alive {GONE_WITHIN_S:.0f} s after the end: {out.left}"] if out.left else []


def expect_interrupted(code: int) -> Callable[[Outcome], List[str]]:
    def check(out: Outcome) -> List[str]:
        problems = _job_gone(out)
        if out.exit != code:
            problems.append(f"exit status {out.exit}, expected {code}")
        if out.status != "interrupted":
            problems.append(f"run status {out.status}, expected interrupted")
        if not out.points or out.points < 2:
            problems.append(f"{out.points} points kept, expected at least 2")
        if not one_line(out.stderr) or "points are kept" not in out.stderr:
            problems.append(f"not one line saying the points are kept: {out.stderr!r}")
        return problems

    return check


def expect_workflow_interrupted(at_least: int) -> Callable[[Outcome], List[str]]:
    def check(out: Outcome) -> List[str]:
        problems = _job_gone(out)
        if out.exit != 128 + signal.SIGTERM:
            problems.append(f"exit status {out.exit}, expected 143")
        if out.status != "interrupted":
            problems.append(f"run status {out.status}, expected interrupted")
        if (out.points or 0) < at_least:
            problems.append(f"{out.points} points kept, expected at least {at_least}")
        if "Traceback" in out.stderr or "SIGTERM" not in _last_line(out.stderr):
            problems.append(f"the last line does not name SIGTERM: {out.stderr!r}")
        return problems

    return check


def expect_hung_up(out: Outcome) -> List[str]:
    """As expect_interrupted(129), but nothing can be read from a terminal that is gone."""
    problems = _job_gone(out)
    if out.exit != 128 + signal.SIGHUP:
        problems.append(f"exit status {out.exit}, expected 129")
    if out.status != "interrupted" or "SIGHUP" not in (out.message or ""):
        problems.append(f"run {out.status} ({out.message}), expected interrupted by SIGHUP")
    if not out.points or out.points < 2:
        problems.append(f"{out.points} points kept, expected at least 2")
    return problems


def expect_killed(out: Outcome) -> List[str]:
    problems = _job_gone(out)
    if out.exit != -signal.SIGKILL:
        problems.append(f"exit status {out.exit}, expected -9")
    if out.status != "failed" or out.message != ABANDONED:
        problems.append(f"the next start left the run {out.status} ({out.message}), expected failed ({ABANDONED})")
    if not out.points or out.points < 2:
        problems.append(f"{out.points} points kept, expected at least 2")
    return problems


def expect_profile(code: int) -> Callable[[Outcome], List[str]]:
    def check(out: Outcome) -> List[str]:
        problems = _job_gone(out)
        if out.exit != code:
            problems.append(f"exit status {out.exit}, expected {code}")
        if out.notes.get("temp folders"):
            problems.append(f"temporary folders left: {out.notes['temp folders']}")
        if code > 0 and "interrupted by" not in _last_line(out.stderr):
            problems.append(f"the last line does not say it was interrupted: {out.stderr!r}")
        return problems

    return check


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def expect_watchdog(out: Outcome) -> List[str]:
    problems = _job_gone(out)
    if out.exit != 1:
        problems.append(f"exit status {out.exit}, expected 1")
    if out.status != "failed" or "printed nothing" not in (out.message or "") or "latency" not in (out.message or ""):
        problems.append(f"run {out.status} ({out.message}), expected failed naming latency and the silence")
    if "at message size" not in (out.message or "") or "stopped" not in (out.message or ""):
        problems.append(f"the message does not name the size and the stopped process: {out.message}")
    if not out.points or out.points < 2:
        problems.append(f"{out.points} points kept, expected at least 2")
    if not one_line(out.stderr):
        problems.append(f"not one line: {out.stderr!r}")
    return problems


def expect_disk_full(out: Outcome) -> List[str]:
    problems = _job_gone(out)
    if out.exit != 1:
        problems.append(f"exit status {out.exit}, expected 1")
    if not one_line(out.stderr) or "disk is full" not in out.stderr:
        problems.append(f"not one line naming the full disk: {out.stderr!r}")
    if out.status != "failed":
        problems.append(f"run {out.status}, expected failed (at the end or at the next start)")
    if not out.points or out.points < 2:
        problems.append(f"{out.points} points kept, expected at least 2")
    return problems


def expect_read_only(out: Outcome) -> List[str]:
    problems = []
    for name in ("runs", "show", "export"):
        code, _, err = out.notes[name]
        if code != 0:
            problems.append(f"'{name}' failed on a read-only file system: {err.strip()}")
    if out.points != 3:
        problems.append(f"export gave {out.points} rows, expected 3")
    if out.exit != 1 or not one_line(out.stderr) or "read-only" not in out.stderr:
        problems.append(f"'run' did not fail with one line naming the read-only database: {out.exit} {out.stderr!r}")
    return problems


def expect_bad_urls(out: Outcome) -> List[str]:
    problems = []
    wanted = {"foo://bar": "unknown database kind 'foo'", "postgresql://fb@localhost/x": "pip install psycopg",
              "postgresql://fb:secret@localhost:notaport/x": "cannot be used"}
    for url, (code, err) in out.notes.items():
        if code != 1 or not one_line(err) or wanted[url] not in err or "secret" in err:
            problems.append(f"--db {url}: exit {code}, {err.strip()!r}")
    return problems


def expect_lab_name_refused(out: Outcome) -> List[str]:
    problems = []
    for verb in ("up", "down"):
        code, err = out.notes[verb]
        if code == 0 or not one_line(err) or "empty" not in err:
            problems.append(f"lab {verb} --name '': exit {code}, {err.strip()!r}")
    if out.notes["namespaces made"]:
        problems.append(f"namespaces made: {out.notes['namespaces made']}")
    return problems


ROWS: Dict[str, Callable[[Path], Outcome]] = {
    "sigterm": sigterm,
    "sighup": sighup,
    "sighup-terminal": sighup_terminal,
    "sigkill": sigkill,
    "sigkill-lab": sigkill_lab,
    "sigterm-profile": sigterm_profile,
    "sigkill-profile": sigkill_profile,
    "sigstop-rank": sigstop_rank,
    "sigterm-health": sigterm_health,
    "sigterm-scale": sigterm_scale,
    "sigterm-hpcc": sigterm_hpcc,
    "disk-full": disk_full,
    "read-only-fs": read_only_fs,
    "bad-urls": bad_urls,
    "lab-name-empty": lab_name_empty,
}

EXPECT: Dict[str, Callable[[Outcome], List[str]]] = {
    "sigterm": expect_interrupted(128 + signal.SIGTERM),
    "sighup": expect_interrupted(128 + signal.SIGHUP),
    "sighup-terminal": expect_hung_up,
    "sigkill": expect_killed,
    "sigkill-lab": expect_killed,
    "sigterm-profile": expect_profile(128 + signal.SIGTERM),
    "sigkill-profile": expect_profile(-signal.SIGKILL),
    "sigstop-rank": expect_watchdog,
    "sigterm-health": expect_workflow_interrupted(0),
    "sigterm-scale": expect_workflow_interrupted(1),
    "sigterm-hpcc": expect_workflow_interrupted(0),
    "disk-full": expect_disk_full,
    "read-only-fs": expect_read_only,
    "bad-urls": expect_bad_urls,
    "lab-name-empty": expect_lab_name_refused,
}


def main(names: Sequence[str]) -> int:
    failed = 0
    for name in names or list(ROWS):
        work = Path(tempfile.mkdtemp(prefix=f"fabricbench-fault-{name}-"))
        started = time.monotonic()
        try:
            out = ROWS[name](work)
        except Skip as exc:
            print(f"{name:<18} skipped: {exc}")
            continue
        except AssertionError as exc:
            print(f"{name:<18} FAILED: {exc}")
            failed += 1
            continue
        finally:
            shutil.rmtree(work, ignore_errors=True)
        problems = EXPECT[name](out)
        print(f"{out.line()}  ({time.monotonic() - started:.0f} s) {'ok' if not problems else 'NOT AS EXPECTED'}")
        for problem in problems:
            print(f"{'':<18} {problem}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
