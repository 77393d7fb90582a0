"""The one place a process is started or stopped: commands in process groups that always stop completely.

The command (mpirun and its ranks) starts in a session of its own, so a Ctrl-C at the
terminal reaches fabricbench only and fabricbench decides how to stop the job. Stopping
sends SIGTERM (and SIGCONT, for a stopped rank) to the whole job, waits, then SIGKILLs
whatever is left. "The whole job" is the command's process tree, its session, and every
process that carries the job's mark in its environment (FABRICBENCH_JOB=<token>): ranks
that moved to sessions of their own, and daemons (the lab's orted) that a launcher
started through an rsh agent, inherit the mark.

When fabricbench itself dies without stopping its jobs (SIGKILL, the OOM killer), two
things take the jobs down within seconds:
  - the command's parent-death signal (prctl PR_SET_PDEATHSIG): SIGTERM to mpirun,
    which then stops its ranks, also on remote hosts;
  - the guard: one small process per fabricbench process (this file run as a script, in
    a session of its own so a signal to the terminal's process group spares it), told
    each job's pid and mark on a pipe. When the pipe closes without the job having
    been stopped, fabricbench is gone: the guard stops the job as above and removes
    the temporary folders it was told about.

Signals: `stop_signals()` turns SIGINT, SIGTERM and SIGHUP into `Stopped`, a
KeyboardInterrupt that knows its signal (exit status 128 + signal: 130, 143, 129).

A ``Daemon`` is a server started the same way, logging to a file, remembered and stopped by
its pid (``start_daemon`` below is for daemons that must outlive fabricbench, such as the
fabric simulator).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import queue
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import IO, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, TypeVar

from fabricbench import numbers

STOP_GRACE_S = 5.0
GUARD_GRACE_S = 3.0  # what the guard gives a job between SIGTERM and SIGKILL once fabricbench is gone
INHERIT = "inherit"  # a Job's stdout/stderr: this process's own, neither read nor redirected
MARK = "FABRICBENCH_JOB"  # environment variable that marks every process of a job
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1



class ProcessTimeout(subprocess.TimeoutExpired):
    """A command that did not end within its timeout (``Job.wait``, ``run_short``): the project's
    own name for it, so that nothing above ``launch/`` needs ``subprocess`` to catch it."""

    @classmethod
    def of(cls, exc: subprocess.TimeoutExpired) -> "ProcessTimeout":
        return cls(exc.cmd, exc.timeout, exc.output, exc.stderr)


# What starting or waiting for a command can raise: it could not start (OSError, e.g. not found),
# it did not end in time (ProcessTimeout), it failed a check (subprocess.CalledProcessError).
PROCESS_ERRORS = (OSError, subprocess.SubprocessError)

try:
    _libc: Optional[ctypes.CDLL] = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux: no parent-death signal, the guard still works
    _libc = None


def _stat_fields(pid: int) -> Optional[List[str]]:
    """The fields of /proc/PID/stat after the command name (state is [0], ppid [1], starttime [19])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses; fields resume after the last ')'.
    return stat[stat.rfind(")") + 2 :].split()


def _pids() -> List[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


T = TypeVar("T")


def _children_map() -> Dict[int, List[int]]:
    children: Dict[int, List[int]] = {}
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields and len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    return children


def process_tree(pid: int) -> List[int]:
    """pid and all its descendants."""
    children = _children_map()
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def is_alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def _signal_all(pids: Iterable[int], sig: int) -> None:
    me = os.getpid()
    for p in pids:
        if p == me:
            continue
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def session_members(sid: int) -> List[int]:
    """Processes still in session `sid` (the job's own session, started by Job)."""
    members = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            if os.getsid(pid) == sid:
                members.append(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return members


def _matching(name: str, test: Callable[[bytes], bool]) -> List[int]:
    """Processes (other than this one) whose /proc/PID/`name` file passes `test`; unreadable ones are skipped."""
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/{name}", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if test(data):
            found.append(pid)
    return found


def marked(token: str) -> List[int]:
    """Processes whose environment carries the job mark FABRICBENCH_JOB=token (readable ones: ours)."""
    want = f"{MARK}={token}".encode()
    return _matching("environ", lambda env: want in env.split(b"\0"))


def naming(text: str) -> List[int]:
    """Processes whose command line contains `text` (a daemon's own folder: found again after a crash)."""
    want = text.encode()
    return _matching("cmdline", lambda cmdline: want in cmdline)


def job_members(pid: int, token: Optional[str], tree: bool = False) -> Set[int]:
    """Every live process of the job whose command has pid `pid`: its session, its marked
    processes and (tree=True, only while the command itself has not been reaped: a reaped pid
    may be reused) the command's process tree."""
    members = set(session_members(pid))
    if tree:
        members |= set(process_tree(pid))
    if token:
        members |= set(marked(token))
    return {p for p in members if is_alive(p)}


def _stream(given):
    if given is None:
        return subprocess.PIPE
    return None if given == INHERIT else given


def _parent_death_signal(parent: int) -> Callable[[], None]:
    """A preexec_fn: SIGTERM this child when the thread that started it (fabricbench's main thread) dies."""

    def preexec() -> None:
        if _libc is not None:
            _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # fabricbench died before the prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


_tokens = itertools.count(1)


class Job:
    """A running command whose stdout lines are read as they come.

    By default stdout is read line by line (``lines()``) and stderr kept (``stderr``).
    ``stdout``/``stderr`` may instead be open files the command writes to directly (or
    ``INHERIT``: this process's own), and
    ``echo_stderr`` a callable that also receives every stderr line as it arrives (a tee).
    The job is marked, guarded and, when started from the main thread, gets a
    parent-death signal (see the module docstring).
    """

    def __init__(self, argv: Sequence[str], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                 stdout: Optional[IO] = None, stderr: Optional[IO] = None,
                 echo_stderr: Optional[Callable[[str], None]] = None, stderr_limit: Optional[int] = None):
        self.argv = list(argv)
        self.token = f"{socket.gethostname()}:{os.getpid()}:{next(_tokens)}:{time.time_ns()}"
        environ = dict(os.environ if env is None else env)
        environ[MARK] = self.token
        # A parent-death signal follows the thread that forked; only the main thread lives as long as we do.
        main_thread = threading.current_thread() is threading.main_thread()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=_stream(stdout),
            stderr=_stream(stderr),
            env=environ,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_parent_death_signal(os.getpid()) if main_thread else None,
        )
        guard().watch(self.proc.pid, self.token)
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stderr: "deque[str]" = deque(maxlen=stderr_limit)
        self._echo = echo_stderr
        self._threads = []
        if stdout is None:
            self._threads.append(threading.Thread(target=self._pump_stdout, daemon=True))
        else:
            self._lines.put(None)
        if stderr is None:
            self._threads.append(threading.Thread(target=self._pump_stderr, daemon=True))
        for t in self._threads:
            t.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> Optional[int]:
        return self.proc.returncode

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._lines.put(raw.decode(errors="replace"))
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            text = raw.decode(errors="replace")
            self._stderr.append(text)
            if self._echo is not None:
                try:
                    self._echo(text)
                except (ValueError, OSError):
                    pass

    def lines(self, deadline: Optional[float] = None, silence: Optional[Callable[[], float]] = None) -> Iterator[str]:
        """stdout lines until the command closes it.

        Raises TimeoutError past `deadline` (time.monotonic), and Silent when the command
        printed nothing for `silence()` seconds (asked again after every line).
        """
        allowed = silence() if silence is not None else None
        last = time.monotonic()
        while True:
            timeout = 0.2
            now = time.monotonic()
            if deadline is not None:
                left = deadline - now
                if left <= 0:
                    raise TimeoutError
                timeout = min(timeout, left)
            if allowed is not None and now - last >= allowed:
                raise Silent(now - last)
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                continue
            if line is None:
                return
            last = time.monotonic()
            yield line
            if silence is not None:
                allowed = silence()
                last = time.monotonic()

    def wait(self, timeout: Optional[float] = None) -> int:
        """The exit status; ProcessTimeout past `timeout` (the job keeps running)."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ProcessTimeout.of(exc) from None
        for t in self._threads:
            t.join(timeout=2)
        return rc

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def stopped(self) -> List[str]:
        """Processes of the job that are stopped (state T: SIGSTOP, a debugger), as 'PID (NAME)'."""
        found = []
        for pid in sorted(job_members(self.proc.pid, self.token, tree=self.proc.poll() is None)):
            fields = _stat_fields(pid)
            if fields and fields[0] in ("T", "t"):
                try:
                    with open(f"/proc/{pid}/comm") as fh:
                        found.append(f"{pid} ({fh.read().strip()})")
                except OSError:
                    found.append(str(pid))
        return found

    def stop(self) -> None:
        """Stop the command and every process it started; idempotent."""
        stop_tree(self.proc, token=self.token)
        guard().forget(self.proc.pid)
        for t in self._threads:
            t.join(timeout=2)


class Daemon:
    """A server that runs until it is stopped (a file server, a stream sender).

    Started in a session of its own with stdout and stderr appended to `log_path`;
    remembered by its pid and stopped by that pid, with everything it started
    (``stop_tree``). ``wait_ready`` waits for a sign of life in the log and says why
    when the server exits instead.
    """

    def __init__(self, argv: Sequence[str], log_path: str, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[str] = None):
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.job = Job(argv, env=env, cwd=cwd, stdout=log, stderr=log)

    @property
    def pid(self) -> int:
        return self.job.pid

    def alive(self) -> bool:
        return self.job.proc.poll() is None

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 5) -> str:
        return " | ".join(ln.strip() for ln in self.log().splitlines()[-lines:] if ln.strip())

    def wait_ready(self, ready: Callable[[str], Optional[T]], timeout: float, what: str) -> T:
        """Poll the log until ready(log) returns something; RuntimeError if the server exits or
        `timeout` passes first (it is stopped then)."""
        deadline = time.monotonic() + timeout
        while True:
            found = ready(self.log())
            if found is not None:
                return found
            if not self.alive():
                raise RuntimeError(f"{what} exited with status {self.job.proc.returncode} before it was ready: "
                                   f"{self.log_tail() or 'no output'}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{what} was not ready after {numbers.seconds(timeout)} s: {self.log_tail() or 'no output'}")
            time.sleep(0.05)

    def stop(self) -> Optional[int]:
        """Stop it by its pid (idempotent); its exit status."""
        self.job.stop()
        return self.job.proc.returncode


class Silent(Exception):
    """A job printed nothing for longer than it was allowed (Job.lines' `silence`)."""

    def __init__(self, seconds: float):
        super().__init__(f"no output for {numbers.seconds(seconds)} s")
        self.seconds = seconds


def _stop(pids: Set[int], find: Callable[[], Set[int]], grace: float, done: Callable[[], bool]) -> None:
    """SIGTERM (and SIGCONT, so a stopped process can act on it) to `pids`; SIGKILL what `find` still sees after `grace`."""
    _signal_all(pids, signal.SIGTERM)
    _signal_all(pids, signal.SIGCONT)
    end = time.monotonic() + grace
    while time.monotonic() < end and not done():
        time.sleep(0.1)
    _signal_all(pids | find(), signal.SIGKILL)


def stop_tree(proc: "subprocess.Popen", grace: float = STOP_GRACE_S, token: Optional[str] = None) -> None:
    """Stop a command started with start_new_session=True and every process of its job.

    SIGTERM to the whole job (mpirun forwards it to remote ranks), a grace period, then
    SIGKILL to what is left, including ranks that moved to process groups or sessions of
    their own and daemons that carry the job's mark (`token`). A stop signal that arrives
    meanwhile waits until the job is down.
    """
    with signals_deferred():
        if proc.poll() is None:
            _stop(job_members(proc.pid, token, tree=True),
                  lambda: job_members(proc.pid, token, tree=proc.poll() is None), grace, lambda: proc.poll() is not None)
        # mpirun may have exited while ranks it started linger: they kept its session id or the mark.
        _signal_all(job_members(proc.pid, token) - {proc.pid}, signal.SIGKILL)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def run_capture(argv: Sequence[str], env=None, timeout: float = 120.0, cwd=None) -> Tuple[int, str, str]:
    """Run a short command to completion (stopped entirely on timeout); (rc, stdout, stderr)."""
    job = Job(argv, env=env, cwd=cwd)
    out: List[str] = []
    try:
        for line in job.lines(deadline=time.monotonic() + timeout):
            out.append(line)
        rc = job.wait(timeout=max(1.0, timeout))
    except (TimeoutError, subprocess.TimeoutExpired):
        job.stop()
        raise TimeoutError(f"{' '.join(argv[:3])} ... did not finish in {numbers.seconds(timeout)} s") from None
    except BaseException:
        job.stop()
        raise
    job.stop()
    return rc, "".join(out), job.stderr


def run_short(argv: Sequence[str], timeout: Optional[float] = 120.0, env=None, cwd=None,
              text: bool = True, **kwargs) -> "subprocess.CompletedProcess":
    """A short command run to its end with its output captured (a probe, a system tool).

    Raises OSError when it cannot start and ProcessTimeout past `timeout` (the command is
    killed first).
    """
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    try:
        return subprocess.run(list(argv), timeout=timeout, env=env, cwd=cwd, text=text, **kwargs)
    except subprocess.TimeoutExpired as exc:
        raise ProcessTimeout.of(exc) from None


def run_attached(argv: Sequence[str], env=None) -> int:
    """A command the user asked to run in the foreground (lab exec, lab mpirun): it shares the
    terminal, so Ctrl-C reaches it; returns its exit status."""
    return subprocess.run(list(argv), env=env).returncode


# ---- the guard --------------------------------------------------------------------------------

class Guard:
    """This process's guard (see the module docstring): started on first use, told about jobs and folders."""

    def __init__(self) -> None:
        self._proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                try:
                    self._proc = subprocess.Popen(
                        [sys.executable, "-I", os.path.abspath(__file__), "--guard", str(os.getpid())],
                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True, close_fds=True)
                except OSError:
                    self._proc = None
                    return
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(line.encode() + b"\n")
                self._proc.stdin.flush()
            except (OSError, ValueError):
                pass  # a guard that died protects nothing more; the job itself still runs

    def watch(self, pid: int, token: str) -> None:
        self._send(f"job {pid} {token}")

    def forget(self, pid: int) -> None:
        if self._proc is not None:
            self._send(f"done {pid}")

    def remove_on_death(self, path: str) -> None:
        """Remove folder `path` if this process dies without removing it."""
        self._send(f"path {os.path.abspath(path)}")


_guard = Guard()


def guard() -> Guard:
    return _guard


def _guard_main(parent: int) -> None:
    """The guard's loop: read job registrations until the pipe closes, then stop what is left."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    jobs: Dict[int, str] = {}
    paths: List[str] = []
    for raw in sys.stdin.buffer:
        word, _, rest = raw.decode(errors="replace").rstrip("\n").partition(" ")
        if word == "job":
            pid, _, token = rest.partition(" ")
            jobs[int(pid)] = token
        elif word == "done":
            jobs.pop(int(rest), None)
        elif word == "path":
            paths.append(rest)
    # The pipe closed: `parent` exited. Whatever it did not stop is stopped here.
    for pid, token in jobs.items():
        members = job_members(pid, token)
        if members:
            _stop(members, lambda: job_members(pid, token), GUARD_GRACE_S, lambda: not job_members(pid, token))
    for path in paths:
        if os.path.basename(path).startswith("fabricbench-"):
            shutil.rmtree(path, ignore_errors=True)


# ---- signals ----------------------------------------------------------------------------------

class Stopped(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived; raised where fabricbench was, like Ctrl-C's KeyboardInterrupt."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def stop_cause(exc: BaseException) -> Stopped:
    """A Stopped for any KeyboardInterrupt (a plain one is SIGINT's)."""
    return exc if isinstance(exc, Stopped) else Stopped(signal.SIGINT)


class _SignalState:
    """What stop_signals' handler knows: whether it raised already, and a signal held back meanwhile."""

    def __init__(self) -> None:
        self.active = False
        self.raised = False
        self.deferring = 0
        self.pending: Optional[int] = None

    def handler(self, signum, _frame) -> None:
        if signum == signal.SIGHUP:
            _leave_terminal()
        if self.raised:
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise Stopped(signum)

    def deliver(self) -> None:
        if self.pending is not None and not self.deferring and not self.raised:
            signum, self.pending = self.pending, None
            self.raised = True
            raise Stopped(signum)


_signals = _SignalState()


def _leave_terminal() -> None:
    """After a hang-up the terminal only answers EIO: stdout and stderr that were a terminal go to /dev/null,
    so that stopping the job and recording the run are not cut short by a failed write."""
    null = None
    for fd in (1, 2):
        try:
            if stat.S_ISCHR(os.fstat(fd).st_mode):
                null = os.open(os.devnull, os.O_WRONLY) if null is None else null
                os.dup2(null, fd)
        except OSError:
            pass


def _as_ctrl_c(_signum, _frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within: SIGTERM (timeout(1), a batch system) raises KeyboardInterrupt, as Ctrl-C does, so
    that it ends the work the same way and with the same exit status (130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _as_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stop_signals() -> Iterator[None]:
    """Within: SIGINT, SIGTERM and SIGHUP raise Stopped once; later ones are ignored while fabricbench stops."""
    if threading.current_thread() is not threading.main_thread() or _signals.active:
        yield
        return
    before = {sig: signal.signal(sig, _signals.handler) for sig in STOP_SIGNALS}
    _signals.__init__()
    _signals.active = True
    try:
        yield
    finally:
        _signals.active = False
        for sig, old in before.items():
            signal.signal(sig, old)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Within: a stop signal is held back (a job's stop, a run's final write are not cut in half) and
    raised as Stopped when the block ends without an error of its own."""
    _signals.deferring += 1
    try:
        yield
    finally:
        _signals.deferring -= 1
    _signals.deliver()


# ---- who owns a run ---------------------------------------------------------------------------

def _boot_id() -> Optional[str]:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _pid_namespace() -> Optional[str]:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_identity(pid: Optional[int] = None) -> Dict[str, object]:
    """What identifies a process across pid reuse: host, boot, pid namespace, pid and its start time
    (clock ticks after boot)."""
    pid = os.getpid() if pid is None else pid
    fields = _stat_fields(pid)
    return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid_ns": _pid_namespace(), "pid": pid,
            "start": int(fields[19]) if fields and len(fields) > 19 else None}


def still_running(identity: Dict[str, object]) -> Optional[bool]:
    """Is the process `identity` describes still running? None when this process cannot tell
    (another host, or a container with other pids under the same host name)."""
    if not isinstance(identity, dict) or identity.get("host") != socket.gethostname():
        return None
    if identity.get("pid_ns") and identity.get("pid_ns") != _pid_namespace():
        return None
    boot = _boot_id()
    if identity.get("boot_id") and boot and identity["boot_id"] != boot:
        return False  # the machine rebooted since
    pid = identity.get("pid")
    if not isinstance(pid, int):
        return None
    fields = _stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    start = identity.get("start")
    return start is None or len(fields) <= 19 or int(fields[19]) == start


# -- daemons: processes that outlive the command that started them (the fabric simulator) --------

_DAEMONS: Dict[int, "subprocess.Popen"] = {}  # started here: reaped when stopped, so no zombie stays


def start_daemon(argv: Sequence[str], log: str, env=None, cwd=None, stdin: Optional[int] = None) -> Tuple[int, int]:
    """Start a long-lived process in a session of its own, stdout and stderr appended to `log`,
    stdin from the file descriptor `stdin` (else /dev/null). Returns (pid, start time): record both,
    and stop it with stop_daemon, which leaves a pid that has since been reused alone."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), stdin=stdin if stdin is not None else subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
    _DAEMONS[proc.pid] = proc
    return proc.pid, process_start_time(proc.pid) or 0


def process_start_time(pid: int) -> Optional[int]:
    """When the process started (clock ticks since boot, /proc/PID/stat field 22); None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def daemon_alive(pid: int, started: int) -> bool:
    """True if `pid` is still the process that started at `started`."""
    return bool(pid) and process_start_time(pid) == started


def stop_daemon(pid: int, started: int, grace: float = STOP_GRACE_S) -> bool:
    """Stop a daemon and its process group (SIGTERM, `grace` seconds, SIGKILL); False if it was not running."""
    if not daemon_alive(pid, started):
        _reap(pid)
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            _signal_all([pid], sig)
        end = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < end:
            _reap(pid)
            if not daemon_alive(pid, started):
                return True
            time.sleep(0.05)
    return True


def _reap(pid: int) -> None:
    proc = _DAEMONS.get(pid)
    if proc is not None and proc.poll() is not None:
        _DAEMONS.pop(pid, None)


if __name__ == "__main__" and sys.argv[1:2] == ["--guard"]:
    _guard_main(int(sys.argv[2]))
