"""Run a command under libfabricbench-prof and collect the profile it writes.

For Open MPI's mpirun the library and the profile path are handed to the ranks with
``-x NAME=VALUE`` (mpirun itself is not preloaded, and ranks on other hosts get them too;
a local run would also inherit them from the environment, remote orteds would not). For
MPICH's Hydra ``-genv`` does the same. Any other command (srun, a script, a singleton
``./app``) gets LD_PRELOAD and FABRICBENCH_PROFILE in its environment.

After the run, ``resolve_callsites`` names each call site (module + address the profiler
wrote) as function, file and line with ``addr2line`` where the module has symbols and
debug information, and adds the names to the profile as ``callsite_names``.
"""
from __future__ import annotations

import os
import re
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from fabricbench.analysis.profile_data import PathLike, ProfileError, load_profile
from fabricbench.launch.failure import explain_exit, launcher_line
from fabricbench import numbers
from fabricbench.launch.procs import INHERIT, PROCESS_ERRORS, Job, ProcessTimeout, run_short

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


def preload_args(flavour: Optional[str], preload: str, profile_path: str) -> Tuple[List[str], Dict[str, str]]:
    """Launcher arguments and environment variables that hand the profiler to every rank:
    ``-x`` for Open MPI's mpirun, ``-genv`` for MPICH's, else the environment (srun, a script)."""
    if flavour == "openmpi":
        from fabricbench.launch.mpi import openmpi_root_env

        return ["-x", f"LD_PRELOAD={preload}", "-x", f"FABRICBENCH_PROFILE={profile_path}"], openmpi_root_env()
    if flavour == "mpich":
        return ["-genv", "LD_PRELOAD", preload, "-genv", "FABRICBENCH_PROFILE", profile_path], {}
    return [], {"LD_PRELOAD": preload, "FABRICBENCH_PROFILE": profile_path}


def prepare_command(command: Sequence[str], library: PathLike, profile_path: PathLike,
                    env: Optional[Mapping[str, str]] = None) -> Tuple[List[str], Dict[str, str]]:
    """The argv and environment that run command with the profiler preloaded."""
    argv = list(command)
    environ = dict(os.environ if env is None else env)
    preload = str(library)
    if environ.get("LD_PRELOAD"):
        preload = f"{preload}:{environ['LD_PRELOAD']}"
    flavour = _launcher_flavour(argv[0]) if argv else None
    args, extra_env = preload_args(flavour, preload, str(profile_path))
    argv[1:1] = args
    for key, value in extra_env.items():
        if key in ("LD_PRELOAD", "FABRICBENCH_PROFILE"):
            environ[key] = value
        else:
            environ.setdefault(key, value)
    if flavour == "mpich":
        argv[1:1] = ["-print-all-exitcodes"]  # Hydra names each rank's exit status: which rank died
    return argv, environ


def run_profiled(command: Sequence[str], profile_path: PathLike, *, env: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = None, library: Optional[PathLike] = None) -> ProfiledRun:
    """Run command (e.g. ["mpirun", "-np", "4", "./app"]) with the profiler and read its profile.

    Returns (returncode, profile, reason): profile is the loaded profile, or None with reason
    saying why none was produced (exit status, the signal that killed a rank, a timeout). With a
    profile and a non-zero status, reason says why the command failed (status, rank, MPI's error).
    The command's output goes to this process's stdout/stderr. Raises NativeMissing if the
    profiler library is not built.
    """
    if not command:
        raise ValueError("run_profiled needs a command to run")
    if library is None:
        from fabricbench.native import profiler_library

        library = profiler_library()
    # Absolute, but a symbolic link at the end is not followed: the profiler refuses it.
    path = Path(os.path.abspath(Path(profile_path).expanduser()))
    path.parent.mkdir(parents=True, exist_ok=True)
    if own_regular_file(path):
        path.unlink()  # never mistake an old profile for this run's
    argv, environ = prepare_command(command, library, path, env)

    # Hydra reports a dead rank on stdout: read it through (echoed) to keep its report.
    hydra = "-print-all-exitcodes" in argv
    # Once we stop the job (a signal to fabricbench, a timeout) mpirun's reaction to being killed
    # (Open MPI may print a 20-line backtrace) is noise before our one line: kept, not shown.
    muted = threading.Event()

    def echo(text: str) -> None:
        if not muted.is_set():
            sys.stderr.write(text)

    try:
        job = Job(argv, env=environ, stdout=None if hydra else INHERIT, echo_stderr=echo,
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
    except (ProcessTimeout, TimeoutError):
        timed_out = True
    except BaseException:  # KeyboardInterrupt from SIGINT/SIGTERM/SIGHUP: stop quietly, then say why
        muted.set()
        raise
    finally:
        if job.returncode is None:
            muted.set()
        job.stop()
    rc = job.returncode
    stderr_text = "".join([job.stderr, *said])

    if timed_out:
        return ProfiledRun(rc, None, f"no profile was produced: the command did not finish within {numbers.short(timeout)} s and was stopped")
    kept = kept_profile(path, stderr_text)
    written = path if own_regular_file(path) and not kept else kept
    if written is None:
        return ProfiledRun(rc, None, "no profile was produced: " + explain_exit(rc, stderr_text))
    try:
        profile = load_profile(written)
    except ProfileError as exc:
        return ProfiledRun(rc, None, f"the profile is unusable: {exc}")
    resolve_callsites(profile)
    where = f"profile written to {path}"
    if kept:
        where = f"profile kept at {kept}: {path} is {describe_target(path)}, not a regular file of yours, and was left unchanged"
    if rc != 0:
        why = explain_exit(rc, stderr_text)  # the profile is there: only why it failed (and where, if kept)
        return ProfiledRun(rc, profile, f"{where}; {why}" if kept else why)
    return ProfiledRun(rc, profile, where)


def own_regular_file(path: Path) -> bool:
    """True when path is a regular file of this user (a symbolic link is not followed): the
    only thing a profile may replace."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def describe_target(path: Path) -> str:
    """What stands at path, in the words the profiler's message uses."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    mode = st.st_mode
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return words
    if stat.S_ISREG(mode) and st.st_uid != os.geteuid():
        return f"a file owned by another user (uid {st.st_uid})"
    return "a regular file"


def kept_profile(path: Path, stderr_text: str) -> Optional[Path]:
    """The temporary file the profiler kept beside path (it refused to replace what stands
    there and said so on stderr), if it is there."""
    pattern = re.compile(r"libfabricbench-prof: .*?the profile is kept at (%s\.tmp\.\d+(?:\.\d+)?)\b"
                         % re.escape(str(path)))
    for match in pattern.finditer(stderr_text):
        kept = Path(match.group(1))
        if own_regular_file(kept):
            return kept
    return None


ADDR2LINE_BATCH = 2000


def _addr2line(module: str, addresses: List[int]) -> List[Tuple[str, str, int]]:
    """(function, file, line) per address ('' / 0 where addr2line knows nothing)."""
    out: List[Tuple[str, str, int]] = []
    for i in range(0, len(addresses), ADDR2LINE_BATCH):
        chunk = addresses[i:i + ADDR2LINE_BATCH]
        # A return address points after the call instruction: the call is one byte before.
        argv = ["addr2line", "-f", "-C", "-e", module] + [hex(max(a - 1, 0)) for a in chunk]
        try:
            done = run_short(argv, timeout=60)
        except (OSError, ProcessTimeout):
            return out + [("", "", 0)] * (len(addresses) - len(out))
        lines = done.stdout.splitlines() if done.returncode == 0 else []
        for k in range(len(chunk)):
            func = lines[2 * k].strip() if 2 * k + 1 < len(lines) else "??"
            where = lines[2 * k + 1].strip() if 2 * k + 1 < len(lines) else "??:0"
            file, _, line = where.partition(" ")[0].rpartition(":")
            func = "" if func == "??" else func
            file = "" if file in ("??", "") else file
            out.append((func, file, int(line) if line.isdigit() else 0))
    return out


def resolve_callsites(profile: Dict[str, Any]) -> None:
    """Add ``callsite_names``: [module, address, function, file, line] per distinct site.

    Resolved on this host, so the modules must be where the ranks ran them (the usual case
    with a shared file system); a module that is gone or has no symbols keeps empty names,
    and reports fall back to the dynamic symbol or module+offset.
    """
    modules = profile.get("modules") or []
    wanted: Dict[int, set] = {}
    for row in profile.get("callsites") or []:
        module, address = row[2], row[3]
        if 0 <= module < len(modules):
            wanted.setdefault(module, set()).add(address)
    names: List[List[Any]] = []
    for module, addresses in sorted(wanted.items()):
        ordered = sorted(addresses)
        path = modules[module]
        found = _addr2line(path, ordered) if path and os.path.exists(path) else [("", "", 0)] * len(ordered)
        names += [[module, a, func, file, line] for a, (func, file, line) in zip(ordered, found)]
    profile["callsite_names"] = names


# ---- the stored run ------------------------------------------------------------------------


def profile_run_provenance(profile: Dict[str, Any], argv: Sequence[str], launcher=None,
                           timeout: float = 120.0) -> Dict[str, Any]:
    """The provenance every run kind records (``workflows.hosts.run_provenance``) for a profiled
    command: through `launcher` when fabricbench started the ranks; else, when every rank ran on
    this host, through this host's mpirun with the profile's rank count. Ranks the command placed on
    other hosts itself (its own mpirun with a hostfile, srun) leave host facts not collected, and say so."""
    import socket

    from fabricbench.errors import FabricbenchError
    from fabricbench.launch import Layout, get_launcher
    from fabricbench.workflows.hosts import RUN_FACTS, host_load, run_provenance

    if launcher is not None:
        return run_provenance(launcher, timeout=timeout, launch=argv)
    hosts = list(dict.fromkeys(profile.get("hosts") or []))
    name = os.path.basename(argv[0]) if argv else None
    launcher_name = "mpirun" if name in MPIRUN_NAMES else name
    if hosts and set(hosts) <= {socket.gethostname()}:
        try:
            info = run_provenance(get_launcher("mpirun", Layout(np=int(profile.get("ranks") or 1))), timeout=timeout,
                                  launch=argv)
            info["run"]["launcher"] = launcher_name
            return info
        except (FabricbenchError, *PROCESS_ERRORS) as exc:
            why = str(exc)
    else:
        why = (f"the ranks ran on {', '.join(hosts) or 'unknown hosts'}, placed by the command itself; "
               "give --launcher (and --hosts) for fabricbench to collect them")
    run = dict.fromkeys(RUN_FACTS)
    run.update(launcher=launcher_name, launch=list(argv), host_load=host_load(), host_facts=f"not collected: {why}")
    return {"run": run, "hosts": []}


def record_profile(store, profile: Dict[str, Any], argv: Sequence[str], *, launcher=None, label: Optional[str] = None,
                   tags: Optional[Dict[str, str]] = None, command: Optional[str] = None):
    """Store a profile as a run of kind ``profile`` through the run lifecycle, with the same host,
    MPI, launcher and command facts as every other run kind; the stored run."""
    from fabricbench.importers.fbprofile import profile_measurements, profile_provenance
    from fabricbench.workflows.session import Session

    info = profile_run_provenance(profile, argv, launcher)
    provenance = {k: v for k, v in profile_provenance(profile).items() if v is not None}
    with Session(store, kind="profile", label=label, tags=tags, command=command, provenance=provenance,
                 ranks=profile["ranks"], unit="calls") as session:
        session.record_provenance(info)
        session.artifact("profile", profile)
        session.add_now(profile_measurements(profile))
    return store.get_run(session.run_id)
