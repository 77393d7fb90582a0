"""Launch inside a Slurm allocation with srun (ranks get the environment srun gives them)."""
from __future__ import annotations

import shutil
from typing import List, Sequence

from fabricbench.launch.base import Launcher, LaunchError, register
from fabricbench.launch.mpirun import read_hostfile


@register
class SrunLauncher(Launcher):
    name = "srun"

    def command(self, program: Sequence[str]) -> List[str]:
        srun = shutil.which("srun")
        if not srun:
            raise LaunchError("--launcher srun needs Slurm's srun on PATH (run inside an allocation: salloc or sbatch)")
        lay = self.layout
        argv = [srun, "--kill-on-bad-exit=1"]
        if lay.np:
            argv += ["--ntasks", str(lay.np)]
        if lay.ppn:
            argv += ["--ntasks-per-node", str(lay.ppn)]
        hosts = lay.hosts or (read_hostfile(lay.hostfile) if lay.hostfile else [])
        if hosts:
            argv += ["--nodelist", ",".join(dict.fromkeys(hosts))]
        return argv + list(lay.extra_args) + list(program)
