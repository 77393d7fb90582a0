"""Where the native parts (the fabricbench-mpi engine, the profiler library) live.

An installed package carries them in ``fabricbench/_native``, built against the MPI on PATH;
a build for another MPI (``make native MPI=mpich``) lives in ``<prefix>/native/<mpi>`` of the
environment and is the one used under ``FABRICBENCH_MPI=<mpi>``; a developer build points
``FABRICBENCH_NATIVE_DIR`` at a CMake install prefix (``bin/`` and ``lib/`` below it).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, Optional

from fabricbench.errors import FabricbenchError


class NativeMissing(FabricbenchError):
    """A native component was not built or not installed."""


def native_dir() -> Path:
    override = os.environ.get("FABRICBENCH_NATIVE_DIR")
    if override:
        return Path(override).resolve()  # ranks may start in another folder (app runs)
    family = os.environ.get("FABRICBENCH_MPI", "").strip().lower()
    if family:
        per_mpi = per_mpi_dir(family)
        if per_mpi.is_dir():
            return per_mpi
    return Path(__file__).resolve().parent / "_native"


def per_mpi_dir(family: str) -> Path:
    """Where `make native MPI=family` installs the native parts built for that MPI."""
    return Path(sys.prefix) / "native" / family


def build_info(native: Optional[Path] = None) -> Dict[str, str]:
    """The MPI a native build was compiled against (its share/mpi.json), or {} if not recorded."""
    path = (native or native_dir()) / "share" / "mpi.json"
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def find_native(family: str, *more: Path) -> Optional[Path]:
    """A native build for MPI `family` (its share/mpi.json says so): one of `more`, the one
    `make native MPI=family` made, the package's own or the current one; None if there is none."""
    package = Path(__file__).resolve().parent / "_native"
    for candidate in (*more, per_mpi_dir(family), package, native_dir()):
        if build_info(candidate).get("flavour") == family and (candidate / "bin" / "fabricbench-mpi").is_file():
            return candidate
    return None


def engine_path() -> Path:
    """Path of the fabricbench-mpi executable."""
    candidate = native_dir() / "bin" / "fabricbench-mpi"
    if candidate.is_file():
        return candidate
    on_path = shutil.which("fabricbench-mpi")
    if on_path:
        return Path(on_path)
    raise NativeMissing(
        f"fabricbench-mpi not found (looked in {candidate} and on PATH); "
        "reinstall fabricbench with an MPI compiler on PATH (pip install .) "
        "or set FABRICBENCH_NATIVE_DIR to a CMake install prefix"
    )


def benchmark_table_path() -> Path:
    """Path of share/benchmarks.jsonl, the engine's benchmark table (``fabricbench-mpi list``)
    installed next to its bin/; not checked for existence."""
    candidate = native_dir() / "share" / "benchmarks.jsonl"
    on_path = shutil.which("fabricbench-mpi")
    if not candidate.is_file() and on_path:  # the engine engine_path() falls back to
        return Path(on_path).resolve().parent.parent / "share" / "benchmarks.jsonl"
    return candidate


def profiler_library() -> Path:
    """Path of libfabricbench-prof.so, the PMPI profiling library."""
    candidate = native_dir() / "lib" / "libfabricbench-prof.so"
    if candidate.is_file():
        return candidate
    raise NativeMissing(
        f"libfabricbench-prof.so not found in {candidate.parent}; reinstall fabricbench "
        "or set FABRICBENCH_NATIVE_DIR to a CMake install prefix"
    )
