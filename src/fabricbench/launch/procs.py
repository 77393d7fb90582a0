"""The one place a process is started or stopped: commands in process groups that always stop completely.

The command (mpirun and its ranks) starts in a session of its own, so a Ctrl-C at the
terminal reaches fabricbench only and fabricbench decides how to stop the job. Stopping
sends SIGTERM to the whole tree (mpirun forwards it to remote ranks), waits, then
SIGKILLs whatever is left, found through /proc, so no rank is orphaned. A ``Daemon`` is
a server started the same way, logging to a file, remembered and stopped by its pid.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from typing import IO, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

STOP_GRACE_S = 5.0
INHERIT = "inherit"  # a Job's stdout/stderr: this process's own, neither read nor redirected
T = TypeVar("T")


def _children_map() -> Dict[int, List[int]]:
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        # The command name may contain spaces and parentheses; fields resume after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
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


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _stream(given):
    if given is None:
        return subprocess.PIPE
    return None if given == INHERIT else given


class Job:
    """A running command whose stdout lines are read as they come.

    By default stdout is read line by line (``lines()``) and stderr kept (``stderr``).
    ``stdout``/``stderr`` may instead be open files the command writes to directly (or
    ``INHERIT``: this process's own), and
    ``echo_stderr`` a callable that also receives every stderr line as it arrives (a tee).
    """

    def __init__(self, argv: Sequence[str], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                 stdout: Optional[IO] = None, stderr: Optional[IO] = None,
                 echo_stderr: Optional[Callable[[str], None]] = None, stderr_limit: Optional[int] = None):
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=_stream(stdout),
            stderr=_stream(stderr),
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
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

    def lines(self, deadline: Optional[float] = None) -> Iterator[str]:
        """stdout lines until the command closes it; raises TimeoutError past `deadline` (time.monotonic)."""
        while True:
            timeout = 0.2
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                timeout = min(timeout, left)
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                continue
            if line is None:
                return
            yield line

    def wait(self, timeout: Optional[float] = None) -> int:
        """The exit status; subprocess.TimeoutExpired past `timeout` (the job keeps running)."""
        rc = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=2)
        return rc

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def stop(self) -> None:
        """Stop the command and every process it started; idempotent."""
        stop_tree(self.proc)
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
                raise RuntimeError(f"{what} was not ready after {timeout:.0f} s: {self.log_tail() or 'no output'}")
            time.sleep(0.05)

    def stop(self) -> Optional[int]:
        """Stop it by its pid (idempotent); its exit status."""
        self.job.stop()
        return self.job.proc.returncode


def stop_tree(proc: "subprocess.Popen", grace: float = STOP_GRACE_S) -> None:
    """Stop a command started with start_new_session=True and every process it started.

    SIGTERM to the whole tree (mpirun forwards it to remote ranks), a grace period, then
    SIGKILL to what is left, including ranks that moved to process groups of their own.
    """
    if proc.poll() is None:
        tree = process_tree(proc.pid)
        _signal_all(tree, signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end and proc.poll() is None:
            time.sleep(0.05)
        leftovers = [p for p in process_tree(proc.pid) if p != proc.pid] if proc.poll() is None else []
        _signal_all(set(tree) | set(leftovers), signal.SIGKILL)
    # mpirun may have exited while ranks it started linger; they kept its session id.
    _signal_all(session_members(proc.pid), signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def session_members(sid: int) -> List[int]:
    """Processes still in session `sid` (the job's own session, started by Job)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.getsid(int(entry)) == sid:
                members.append(int(entry))
        except (ProcessLookupError, PermissionError):
            continue
    return members


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
        raise TimeoutError(f"{' '.join(argv[:3])} ... did not finish in {timeout:.0f} s") from None
    except BaseException:
        job.stop()
        raise
    job.stop()
    return rc, "".join(out), job.stderr


def run_short(argv: Sequence[str], timeout: Optional[float] = 120.0, env=None, cwd=None,
              text: bool = True, **kwargs) -> "subprocess.CompletedProcess":
    """A short command run to its end with its output captured (a probe, a system tool).

    Raises OSError when it cannot start and subprocess.TimeoutExpired past `timeout`
    (the command is killed first).
    """
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(list(argv), timeout=timeout, env=env, cwd=cwd, text=text, **kwargs)


def run_attached(argv: Sequence[str], env=None) -> int:
    """A command the user asked to run in the foreground (lab exec, lab mpirun): it shares the
    terminal, so Ctrl-C reaches it; returns its exit status."""
    return subprocess.run(list(argv), env=env).returncode
