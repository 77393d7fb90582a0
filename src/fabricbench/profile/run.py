"""Run a command under libfabricbench-prof and collect the profile it writes.

For Open MPI's mpirun the library and the profile path are handed to the ranks with
``-x NAME=VALUE`` (mpirun itself is not preloaded, and ranks on other hosts get them too;
a local run would also inherit them from the environment, remote orteds would not). For
MPICH's Hydra ``-genv`` does the same. Any other command (srun, a script, a singleton
``./app``) gets LD_PRELOAD and FABRICBENCH_PROFILE in its environment.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from fabricbench.profile.data import PathLike, ProfileError, load_profile
from fabricbench.procs import stop_tree

MPIRUN_NAMES = {"mpirun", "mpiexec", "orterun", "mpirun.openmpi", "mpiexec.openmpi", "mpiexec.hydra",
                "mpirun.mpich", "mpiexec.mpich"}
STDERR_TAIL = 200


class ProfiledRun(NamedTuple):
    """Outcome of run_profiled; unpacks as (returncode, profile, reason)."""

    returncode: Optional[int]  # None if the command could not be started
    profile: Optional[Dict[str, Any]]
    reason: str


def _launcher_flavour(argv0: str) -> Optional[str]:
    if os.path.basename(argv0) not in MPIRUN_NAMES:
        return None
    try:
        from fabricbench.launch.mpi import detect_mpi

        return detect_mpi(argv0).flavour
    except Exception:  # not on PATH, or --version failed: fall back to the environment
        return None


def prepare_command(command: Sequence[str], library: PathLike, profile_path: PathLike,
                    env: Optional[Mapping[str, str]] = None) -> Tuple[List[str], Dict[str, str]]:
    """The argv and environment that run command with the profiler preloaded."""
    argv = list(command)
    environ = dict(os.environ if env is None else env)
    preload = str(library)
    if environ.get("LD_PRELOAD"):
        preload = f"{preload}:{environ['LD_PRELOAD']}"
    path = str(profile_path)
    flavour = _launcher_flavour(argv[0]) if argv else None
    if flavour == "openmpi":
        argv[1:1] = ["-x", f"LD_PRELOAD={preload}", "-x", f"FABRICBENCH_PROFILE={path}"]
        from fabricbench.launch.mpi import openmpi_root_env

        for key, value in openmpi_root_env().items():
            environ.setdefault(key, value)
    elif flavour == "mpich":
        argv[1:1] = ["-genv", "LD_PRELOAD", preload, "-genv", "FABRICBENCH_PROFILE", path]
    else:
        environ["LD_PRELOAD"] = preload
        environ["FABRICBENCH_PROFILE"] = path
    return argv, environ


# Open MPI wraps its messages at any space, hence \s+ between words.
_OMPI_SIGNAL = re.compile(r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exited\s+on\s+signal\s+(\d+)\s+\(([^)]*)\)")
_OMPI_EXIT = re.compile(r"Process\s+name:\s+\[\[\d+,\d+\],(\d+)\]\s+Exit\s+code:\s+(\d+)")
_OMPI_IMPROPER = re.compile(r"process\s+rank\s+(\d+)\s+with\s+PID\s+\d+\s+on\s+node\s+(\S+)\s+exiting\s+improperly")
_HYDRA_SIGNAL = re.compile(r"KILLED BY SIGNAL: (\d+) \(([^)]*)\)")


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def explain_failure(returncode: Optional[int], stderr_text: str) -> str:
    """Why a run produced no profile, from its exit status and the launcher's messages."""
    if returncode is None:
        status = "the command did not run"
    elif returncode < 0:
        status = f"the command was killed by signal {-returncode} ({_signal_name(-returncode)})"
    elif returncode > 128 and returncode - 128 < 65:
        status = f"the command exited with status {returncode} (128 + signal {returncode - 128}, {_signal_name(returncode - 128)})"
    else:
        status = f"the command exited with status {returncode}"
    details = []
    m = _OMPI_SIGNAL.search(stderr_text)
    if m:
        details.append(f"rank {m[1]} on {m[2]} was killed by signal {m[3]} ({m[4]})")
    m = _OMPI_IMPROPER.search(stderr_text)
    if m:
        details.append(f"rank {m[1]} on {m[2]} exited without calling MPI_Finalize")
    m = _OMPI_EXIT.search(stderr_text)
    if m and not details:
        details.append(f"rank {m[1]} exited with code {m[2]}")
    m = _HYDRA_SIGNAL.search(stderr_text)
    if m and not details:
        details.append(f"a rank was killed by signal {m[1]} ({m[2]})")
    if returncode == 0 and not details:
        details.append("the program may not call MPI_Init/MPI_Finalize, or LD_PRELOAD did not reach it "
                       "(statically linked or setuid programs ignore LD_PRELOAD)")
    return status + (": " + "; ".join(details) if details else "")


def _tee(stream, sink, tail: deque) -> None:
    for raw in iter(stream.readline, b""):
        tail.append(raw.decode("utf-8", "replace"))
        try:
            sink.write(raw.decode("utf-8", "replace"))
            sink.flush()
        except (ValueError, OSError):
            pass
    stream.close()


def run_profiled(command: Sequence[str], profile_path: PathLike, *, env: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = None, library: Optional[PathLike] = None) -> ProfiledRun:
    """Run command (e.g. ["mpirun", "-np", "4", "./app"]) with the profiler and read its profile.

    Returns (returncode, profile, reason): profile is the loaded profile, or None with reason
    saying why none was produced (exit status, the signal that killed a rank, a timeout).
    The command's output goes to this process's stdout/stderr. Raises NativeMissing if the
    profiler library is not built.
    """
    if not command:
        raise ValueError("run_profiled needs a command to run")
    if library is None:
        from fabricbench.native import profiler_library

        library = profiler_library()
    path = Path(profile_path).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()  # never mistake an old profile for this run's
    argv, environ = prepare_command(command, library, path, env)

    tail: deque = deque(maxlen=STDERR_TAIL)
    try:
        proc = subprocess.Popen(argv, env=environ, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return ProfiledRun(None, None, f"no profile was produced: cannot start {argv[0]}: {exc.strerror or exc}")
    reader = threading.Thread(target=_tee, args=(proc.stderr, sys.stderr, tail), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_tree(proc)
    except BaseException:
        stop_tree(proc)
        raise
    reader.join(timeout=10)
    rc = proc.returncode

    if timed_out:
        return ProfiledRun(rc, None, f"no profile was produced: the command did not finish within {timeout:g} s and was stopped")
    if not path.exists():
        return ProfiledRun(rc, None, "no profile was produced: " + explain_failure(rc, "".join(tail)))
    try:
        profile = load_profile(path)
    except ProfileError as exc:
        return ProfiledRun(rc, None, f"the profile is unusable: {exc}")
    if rc != 0:
        return ProfiledRun(rc, profile, f"profile written to {path}, but {explain_failure(rc, ''.join(tail))}")
    return ProfiledRun(rc, profile, f"profile written to {path}")
