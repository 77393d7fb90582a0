"""Shared fixtures (a fresh database per test, the real command line as a subprocess) and the
markers that say what a test needs, checked here once:

    @pytest.mark.mpi      mpicc and mpirun on PATH and the native engine built
    @pytest.mark.lab      root and working network namespaces (the emulated cluster)
    @pytest.mark.browser  a Chromium to drive
    @pytest.mark.slurm    Slurm's daemons and clients and munge installed (scripts/install-test-deps.sh slurm)

A marked test is skipped, with the reason, where its need is not met; the pure tests run
anywhere: ``pytest -m "not mpi and not lab and not browser"``.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest


@functools.lru_cache(maxsize=None)
def mpi_missing() -> Optional[str]:
    for tool in ("mpicc", "mpirun"):
        if not shutil.which(tool):
            return f"needs MPI: {tool} is not on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)"
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


NEEDS = {"mpi": mpi_missing, "lab": lab_missing, "browser": browser_missing, "slurm": slurm_missing}


def pytest_collection_modifyitems(config, items):
    for item in items:
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
        return None if shutil.which("mpirun") else "mpirun is not on PATH"
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
