"""Talking to Slurm: where its client commands run, the allocation we are in, the MPI plugin to ask srun for.

A Slurm cluster is either the one this host belongs to (its slurm.conf, or $SLURM_CONF) or a lab
brought up with `lab up --slurm`, whose clients run on the lab's login node (``SlurmCluster.argv``).
srun and sbatch (launch/srun.py, launch/sbatch.py) build their command lines from what is here.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.launch.base import LaunchError
from fabricbench import numbers


@dataclass(frozen=True)
class SlurmCluster:
    """How to run Slurm's clients here: an argv prefix and environment (both empty outside a lab)."""

    lab_name: Optional[str] = None  # the lab's name (compared and hashed: cached answers are per cluster)
    run_dir: Optional[str] = None
    lab: Any = field(default=None, compare=False, hash=False)  # a fabricbench.lab.Lab with Slurm, or None

    def argv(self, argv: Sequence[str]) -> List[str]:
        argv = [self.tool(argv[0]), *argv[1:]]
        if self.lab is None:
            return argv
        from fabricbench.lab import slurm as lab_slurm

        return lab_slurm.client_argv(self.lab, Path(self.run_dir), argv)

    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.lab is None:
            return env
        from fabricbench.lab import slurm as lab_slurm

        return lab_slurm.client_env(self.lab, Path(self.run_dir), env)

    @staticmethod
    def tool(name: str) -> str:
        if os.path.isabs(name):
            return name
        path = shutil.which(name)
        if not path:
            raise LaunchError(f"Slurm's '{name}' is not on PATH (Debian: apt-get install slurm-client; on a cluster: "
                              "module load slurm)")
        return path

    def run(self, argv: Sequence[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
        """A short client command (sinfo, squeue, sbatch --parsable, ...), output captured."""
        from fabricbench.launch.procs import run_short

        full = self.argv(argv)
        try:
            return run_short(full, env=self.env(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LaunchError(f"'{' '.join(argv[:2])}' did not answer within {numbers.seconds(timeout)} s: is slurmctld up?") from None

    def check(self, argv: Sequence[str], timeout: float = 60.0) -> str:
        """stdout of a client command; LaunchError quoting Slurm's last words when it fails."""
        done = self.run(argv, timeout)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise LaunchError(f"{os.path.basename(argv[0])} failed: {said[-1] if said else f'exit status {done.returncode}'}")
        return done.stdout


def lab_cluster() -> Optional[SlurmCluster]:
    """The Slurm cluster of the lab ($FABRICBENCH_LAB, default fbl) when it is up with --slurm."""
    try:
        from fabricbench.lab import current_lab, run_dir
        from fabricbench.lab.errors import LabError
    except ImportError:
        return None
    try:
        lab = current_lab()
    except LabError:
        return None
    if lab is None or not lab.spec.slurm:
        return None
    return SlurmCluster(lab_name=lab.name, run_dir=str(run_dir()), lab=lab)


def cluster() -> SlurmCluster:
    """The Slurm cluster to use: a Slurm lab that is up, else this host's own Slurm."""
    return lab_cluster() or SlurmCluster()


# ---- the allocation we run in -------------------------------------------------------------

def in_allocation(env: Optional[Dict[str, str]] = None) -> bool:
    env = os.environ if env is None else env
    return bool(env.get("SLURM_JOB_ID"))


def allocation_facts(env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The Slurm job this process runs in, from the environment Slurm gives it ({} outside a job)."""
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return {}
    keys = {"job_id": "SLURM_JOB_ID", "job_name": "SLURM_JOB_NAME", "nodelist": "SLURM_JOB_NODELIST",
            "nodes": "SLURM_JOB_NUM_NODES", "partition": "SLURM_JOB_PARTITION", "cluster": "SLURM_CLUSTER_NAME",
            "submit_host": "SLURM_SUBMIT_HOST", "step_id": "SLURM_STEP_ID"}
    facts = {k: env[v] for k, v in keys.items() if env.get(v)}
    if "nodes" in facts and facts["nodes"].isdigit():
        facts["nodes"] = int(facts["nodes"])
    return facts


@functools.lru_cache(maxsize=8)
def _version(c: SlurmCluster) -> Optional[str]:
    try:
        done = c.run(["srun", "--version"], timeout=30)
    except (LaunchError, OSError):
        return None
    text = done.stdout.strip()
    return text.split()[-1] if done.returncode == 0 and text else None


def version(c: Optional[SlurmCluster] = None) -> Optional[str]:
    """Slurm's version as srun reports it ('22.05.8'), or None."""
    return _version(c or cluster())


@functools.lru_cache(maxsize=8)
def _plugins(c: SlurmCluster) -> tuple:
    done = c.run(["srun", "--mpi=list"], timeout=30)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise LaunchError(f"srun --mpi=list failed: {said[-1] if said else done.returncode}")
    return tuple(parse_mpi_list(done.stdout + done.stderr))


def mpi_plugins(c: Optional[SlurmCluster] = None) -> List[str]:
    """The MPI plugins srun offers (srun --mpi=list): ['cray_shasta', 'none', 'pmi2', 'pmix', 'pmix_v4']."""
    return list(_plugins(c or cluster()))


def parse_mpi_list(text: str) -> List[str]:
    """Plugin names from `srun --mpi=list` (22.05 prints one per line; 23.x 'srun: mpi/pmix' lines)."""
    found: List[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.lower().startswith("mpi plugin types"):
            continue
        if "versions available:" in line:
            found += [w.strip() for w in line.split(":", 1)[1].split(",") if w.strip()]
            continue
        m = re.match(r"^(?:srun:\s*)?(?:mpi/)?([A-Za-z0-9_]+)$", line)
        if m:
            found.append(m.group(1))
    return list(dict.fromkeys(found))


def choose_mpi_plugin(flavour: str, offered: Sequence[str]) -> str:
    """The srun --mpi plugin for an MPI library: Open MPI talks PMIx, MPICH-family libraries PMI-2.

    The one MPI-specific choice of the srun launcher; another MPI adds its case here.
    """
    offered = list(offered)
    if flavour == "openmpi":
        wanted = ["pmix", *[p for p in offered if p.startswith("pmix_")], "pmi2"]
    elif flavour == "mpich":
        wanted = ["pmi2", "pmix"]
    else:
        wanted = ["pmix", "pmi2"]
    for plugin in wanted:
        if plugin in offered:
            return plugin
    raise LaunchError(f"srun offers no MPI plugin that {flavour if flavour != 'unknown' else 'this'} MPI can use "
                      f"(srun --mpi=list: {', '.join(offered) or 'nothing'}); Slurm needs its pmix or pmi2 plugin "
                      "(Debian: the slurm-wlm-basic-plugins package)")


def partition_nodes(c: SlurmCluster, partition: Optional[str] = None) -> int:
    """How many nodes the partition (default: the cluster's default partition) has."""
    out = c.check(["sinfo", "--noheader", "--format=%P %D", *(["--partition", partition] if partition else [])])
    total = 0
    for line in out.splitlines():
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            continue
        name = words[0]
        if partition or name.endswith("*"):
            total += int(words[1])
    if total == 0:
        raise LaunchError(f"Slurm has no {'partition ' + repr(partition) if partition else 'default partition'} "
                          "with nodes (sinfo)")
    return total


def expand_nodelist(c: SlurmCluster, nodelist: str) -> List[str]:
    """'fbl-n[1-3]' -> ['fbl-n1', 'fbl-n2', 'fbl-n3'] (scontrol show hostnames)."""
    return c.check(["scontrol", "show", "hostnames", nodelist]).split()
