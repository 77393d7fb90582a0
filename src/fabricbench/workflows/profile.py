"""Run a command under libfabricbench-prof and collect the profile it writes.

For Open MPI's mpirun the library and the profile path are handed to the ranks with
``-x NAME=VALUE`` (mpirun itself is not preloaded, and ranks on other hosts get them too;
a local run would also inherit them from the environment, remote orteds would not). For
MPICH's Hydra ``-genv`` does the same. Any other command (srun, a script, a singleton
``./app``) gets LD_PRELOAD and FABRICBENCH_PROFILE in its environment.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from fabricbench.analysis.profile_data import PathLike, ProfileError, load_profile
from fabricbench.launch.failure import explain_exit, launcher_line
from fabricbench.launch.procs import INHERIT, Job

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
        argv[1:1] = ["-genv", "LD_PRELOAD", preload, "-genv", "FABRICBENCH_PROFILE", path, "-print-all-exitcodes"]
    else:
        environ["LD_PRELOAD"] = preload
        environ["FABRICBENCH_PROFILE"] = path
    return argv, environ


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

    # Hydra reports a dead rank on stdout: read it through (echoed) to keep its report.
    hydra = "-print-all-exitcodes" in argv
    try:
        job = Job(argv, env=environ, stdout=None if hydra else INHERIT, echo_stderr=sys.stderr.write,
                  stderr_limit=STDERR_TAIL)
    except OSError as exc:
        return ProfiledRun(None, None, f"no profile was produced: cannot start {argv[0]}: {exc.strerror or exc}")
    timed_out, said = False, []
    try:
        if hydra:
            for line in job.lines(deadline=time.monotonic() + timeout if timeout else None):
                sys.stdout.write(line)
                if launcher_line(line):
                    said.append(line)
        job.wait(timeout=timeout)
    except (subprocess.TimeoutExpired, TimeoutError):
        timed_out = True
    finally:
        job.stop()
    rc = job.returncode
    stderr_text = "".join([job.stderr, *said])

    if timed_out:
        return ProfiledRun(rc, None, f"no profile was produced: the command did not finish within {timeout:g} s and was stopped")
    if not path.exists():
        return ProfiledRun(rc, None, "no profile was produced: " + explain_exit(rc, stderr_text))
    try:
        profile = load_profile(path)
    except ProfileError as exc:
        return ProfiledRun(rc, None, f"the profile is unusable: {exc}")
    if rc != 0:
        return ProfiledRun(rc, profile, f"profile written to {path}, but {explain_exit(rc, stderr_text)}")
    return ProfiledRun(rc, profile, f"profile written to {path}")
