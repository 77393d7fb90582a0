"""Shared fixtures (a fresh database per test, the real command line as a subprocess) and the
markers that say what a test needs, checked here once:

    @pytest.mark.mpi      the selected MPI's mpicc and launcher and the native engine built
    @pytest.mark.openmpi  Open MPI itself (Debian's applications are built on it): skipped
                          when FABRICBENCH_MPI selects another MPI
    @pytest.mark.lab      root and working network namespaces (the emulated cluster)
    @pytest.mark.browser  a Chromium to drive
    @pytest.mark.slurm    Slurm's daemons and clients and munge installed (scripts/install-test-deps.sh slurm)

A marked test is skipped, with the reason, where its need is not met; the pure tests run
anywhere: ``pytest -m "not mpi and not lab and not browser"``.

The MPI is the one FABRICBENCH_MPI selects (launch.mpi), else the one on PATH: tests start
programs with ``MPICC``/``MPIFORT``/``mpirun_argv`` below, never with a bare ``mpicc``.
``make test`` runs the MPI-dependent tests of ``BOTH_MPIS`` a second time under MPICH
(``-m both_mpis``; the marker is added here).
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest


def mpi_tool(kind: str) -> str:
    """The selected MPI's 'mpiexec', 'mpicc' or 'mpifort' (a bare name if it cannot be found)."""
    from fabricbench.errors import FabricbenchError
    from fabricbench.launch.mpi import GENERIC, mpi_tool as tool

    try:
        return tool(kind)
    except FabricbenchError:
        return GENERIC[kind][0]


MPICC = mpi_tool("mpicc")
MPIFORT = mpi_tool("mpifort")


def mpirun_argv(np: int, *program) -> list:
    """Start `program` on `np` local ranks with the selected MPI (oversubscribed where Open MPI needs it)."""
    from fabricbench.launch.mpi import detect_mpi

    mpi = detect_mpi()
    return [mpi.mpirun, "-np", str(np), *(["--oversubscribe"] if mpi.is_openmpi else []), *map(str, program)]


def mpi_env() -> dict:
    """os.environ plus what the selected MPI needs to start as root."""
    from fabricbench.launch.mpi import openmpi_root_env

    return {**os.environ, **openmpi_root_env()}


# Files whose MPI-dependent tests make test runs under both MPIs: the engine, the quick suite and a
# failed run, the profiler's known counts (C and Fortran), the health check's all-pairs engine, and
# test_mpich (selection, refusal, a killed rank, compare across the two MPIs, and a 4-node lab run
# and profiled program over Hydra, which hung in MPI_Finalize until native/common/fb_quiesce.c).
BOTH_MPIS = {"test_engine", "test_cli_run", "test_profiler", "test_output_errors", "test_mpich", "test_health_engine",
             "test_onesided_nbc"}


@functools.lru_cache(maxsize=None)
def openmpi_missing() -> Optional[str]:
    from fabricbench.launch.mpi import selected_family

    family = selected_family()
    return None if family in (None, "openmpi") else f"needs Open MPI (FABRICBENCH_MPI={family})"


@functools.lru_cache(maxsize=None)
def mpi_missing() -> Optional[str]:
    from fabricbench.errors import FabricbenchError
    from fabricbench.launch.mpi import mpi_tool as tool

    for kind in ("mpicc", "mpiexec"):
        try:
            found = shutil.which(tool(kind))
        except FabricbenchError as exc:
            return f"needs MPI: {exc}"
        if not found:
            return f"needs MPI: {tool(kind)} is not on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)"
    from fabricbench.native import NativeMissing, engine_path

    try:
        engine_path()
    except NativeMissing as exc:
        return f"needs the native engine: {exc}"
    return None


@functools.lru_cache(maxsize=None)
def lab_missing() -> Optional[str]:
    from fabricbench.lab import netns_usable

    reason = netns_usable()
    return f"needs root and network namespaces: {reason}" if reason else None


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@functools.lru_cache(maxsize=None)
def browser_missing() -> Optional[str]:
    if any(shutil.which(name) for name in BROWSERS):
        return None
    return "needs a browser: chromium is not installed (Debian: apt-get install -y chromium)"


@functools.lru_cache(maxsize=None)
def slurm_missing() -> Optional[str]:
    import pwd

    for tool in ("slurmctld", "slurmd", "srun", "sbatch", "munged"):
        if not (shutil.which(tool) or os.path.exists(f"/usr/sbin/{tool}")):
            return f"needs Slurm and munge: {tool} is not installed (bash scripts/install-test-deps.sh slurm)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "needs munge: there is no munge user (bash scripts/install-test-deps.sh slurm)"
    return None


NEEDS = {"mpi": mpi_missing, "lab": lab_missing, "browser": browser_missing, "slurm": slurm_missing,
         "openmpi": openmpi_missing}


# Parallel runs (pytest-xdist): `make test` runs the tests not marked `serial` on two workers, a
# whole file per worker (`--dist loadfile`, so a module's fixture is made once), then the `serial`
# tests in one process. Labs and Slurm clusters run on the workers: each worker has a lab name and
# subnet of its own (FABRICBENCH_LAB and FABRICBENCH_LAB_SUBNET, set below), a test that picks its
# own subnet takes its third octet from lab_slot(), and a Slurm lab's daemons listen inside its own
# nodes' namespaces (so Slurm's fixed ports never meet) with a munge of its own. Serial are the
# files of SERIAL_FILES (one PostgreSQL server on a fixed port) and tests marked serial by hand:
# host-wide state compared before and after, and the lab tests that judge a shaped link's rate
# (a node's bandwidth against its link, a degraded node named, the slower of two links flagged):
# beside another worker at load 20 seven of them flipped (a 1gbit reader at 0.33 of goodput).
# (Not xdist_group: under pytest 9 its --dist loadgroup no longer keeps a group on one worker.)
SERIAL_FILES = {"test_postgres", "test_compare_postgres", "test_import_postgres"}


def xdist_worker() -> tuple:
    """(this pytest-xdist worker's number, the number of workers); (0, 1) in a run without workers."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    number = int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0
    return number, max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1), number + 1)


def lab_slot(k: int = 0) -> int:
    """A third octet (0-249) for this process's k-th lab subnet: equal to the worker's number modulo
    the number of workers, so two workers of one run never pick the same; the pid spreads runs."""
    number, count = xdist_worker()
    return ((os.getpid() + k) % max(1, 250 // count)) * count + number % 250


if os.environ.get("PYTEST_XDIST_WORKER"):
    # The default lab of this worker (tests that make a lab without naming it, the CLI they start).
    os.environ["FABRICBENCH_LAB"] = f"f{xdist_worker()[0]}{os.getpid() % 100000:05d}"
    os.environ["FABRICBENCH_LAB_SUBNET"] = f"10.212.{lab_slot()}.0/24"
elif not os.environ.get("FABRICBENCH_LAB_SUBNET"):
    # One process: still not the default subnet, which a second run of the suite on the same host
    # (or a lab made by hand) takes; a subnet given in the environment is kept.
    os.environ["FABRICBENCH_LAB_SUBNET"] = f"10.212.{lab_slot()}.0/24"


def runs_alone(item) -> bool:
    """Whether a collected test must not run beside another (see above)."""
    if item.get_closest_marker("serial") is not None:
        return True
    return _module_name(item) in SERIAL_FILES


# The files that take longest (--durations on the 2-core VM, longest first): the workers take
# them first and the short files fill the gaps at the end, so both workers finish together rather
# than one running a 2-minute lab file alone at the tail. The rest keep their order.
SLOW_FILES = ("test_engine", "test_study_site", "test_cli_run", "test_slurm_lab", "test_study_hpcc",
              "test_import_engine_dashboards", "test_output", "test_transfer_xrootd", "test_lab", "test_studies",
              "test_lab_subnets", "test_compare_engine", "test_apps", "test_scaling_study", "test_mpich",
              "test_predict", "test_compare_history", "test_faults")


def pytest_configure(config):
    # pytest-xdist hands out files in collection order only without its reordering by test count.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _module_name(item) -> str:
    module = getattr(item, "module", None)
    return module.__name__.rpartition(".")[2] if module is not None else item.nodeid.partition("::")[0]


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers added here
def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(_module_name(item), len(rank)))  # stable: a file's tests keep their order
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.rpartition(".")[2] in BOTH_MPIS and item.get_closest_marker("mpi"):
            item.add_marker(pytest.mark.both_mpis)
        if runs_alone(item) and item.get_closest_marker("serial") is None:
            item.add_marker(pytest.mark.serial)
        for marker, missing in NEEDS.items():
            if item.get_closest_marker(marker) is not None:
                reason = missing()
                if reason:
                    item.add_marker(pytest.mark.skip(reason=reason))
                    break


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"


class Cli:
    """Runs `python -m fabricbench --db DB ...` as a user would."""

    def __init__(self, db: Path):
        self.db = db

    def argv(self, *args: str):
        return [sys.executable, "-m", "fabricbench", "--db", str(self.db), *args]

    def __call__(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout, env=cli_env())
        if check and proc.returncode != 0:
            raise AssertionError(f"fabricbench {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())


@contextlib.contextmanager
def reaped(proc: subprocess.Popen):
    """The process, killed at the end of the block if it is still running (a test that failed half-way)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def cli_env():
    env = dict(os.environ)
    env["COLUMNS"] = "200"  # rich tables unwrapped, so tests can read them
    return env


@pytest.fixture
def cli(db_path: Path) -> Cli:
    return Cli(db_path)


def _missing(need: str):
    """Why `need` ('mpi', 'engine' or 'lab') is not met here, or None."""
    import shutil

    if need == "mpi":
        return None if shutil.which(mpi_tool("mpiexec")) else f"{mpi_tool('mpiexec')} is not on PATH"
    if need == "engine":
        from fabricbench.native import NativeMissing, engine_path

        try:
            engine_path()
        except NativeMissing as exc:
            return f"the engine is not built: {exc}"
        return None
    if need == "lab":
        from fabricbench.lab import netns_usable

        reason = netns_usable()
        return f"lab tests need root and network namespaces: {reason}" if reason else None
    raise ValueError(need)


def skip_unless(*needs: str) -> None:
    """Skip the calling test (or fixture) with the first unmet need's reason."""
    for need in needs:
        reason = _missing(need)
        if reason:
            pytest.skip(reason)
