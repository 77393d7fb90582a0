"""Batch jobs: the sbatch script that runs one fabricbench command, its submission, and job states.

The script `exec`s the command, so the signals Slurm sends a cancelled or timed-out job
(SIGTERM, then SIGKILL after KillWait) reach fabricbench itself, which records the run as
interrupted with the points it measured. The job inherits the submitting environment
(sbatch's default), plus the database URL it must write to.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fabricbench.launch.base import LaunchError
from fabricbench.launch.slurm import SlurmCluster

# squeue's long state names that mean the job will not run any more.
ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}


@dataclass
class BatchOptions:
    """What the job asks Slurm for; None leaves Slurm's default."""

    partition: Optional[str] = None
    time: Optional[str] = None
    nodes: Optional[int] = None
    ntasks_per_node: Optional[int] = None
    job_name: Optional[str] = None
    extra: List[str] = field(default_factory=list)  # more sbatch options, as given

    def directives(self) -> List[str]:
        pairs = [("partition", self.partition), ("time", self.time), ("nodes", self.nodes),
                 ("ntasks-per-node", self.ntasks_per_node), ("job-name", self.job_name)]
        return [f"--{k}={v}" for k, v in pairs if v is not None] + list(self.extra)

    def to_dict(self) -> Dict[str, object]:
        return {k: v for k, v in (("partition", self.partition), ("time", self.time), ("nodes", self.nodes),
                                  ("ntasks_per_node", self.ntasks_per_node), ("job_name", self.job_name),
                                  ("extra", self.extra or None)) if v is not None}


def job_argv(command: Sequence[str]) -> List[str]:
    """The command as the job runs it: `fabricbench ...` becomes this Python's `-m fabricbench ...`,
    so the job runs the installation that submitted it."""
    argv = list(command)
    if not argv:
        raise LaunchError("submit: give the command the job runs, e.g. fabricbench submit -- fabricbench health --launcher srun")
    if os.path.basename(argv[0]) == "fabricbench":
        return [sys.executable, "-m", "fabricbench", *argv[1:]]
    return argv


def script_text(command: Sequence[str], options: BatchOptions, output: str, env: Dict[str, str]) -> str:
    """An sbatch script: #SBATCH directives, the environment the job adds, then `exec` of the command."""
    lines = ["#!/bin/sh", f"# written by fabricbench submit: {shlex.join(command)}"]
    lines += [f"#SBATCH {d}" for d in options.directives()]
    lines += [f"#SBATCH --output={output}", "#SBATCH --open-mode=append"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    # exec: the job's signals (scancel, the time limit) go to fabricbench, not to a shell that ignores them.
    lines.append("exec " + shlex.join(job_argv(command)))
    return "\n".join(lines) + "\n"


def write_script(folder: Path, name: str, text: str) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(text)
        path.chmod(0o755)
    except OSError as exc:
        raise LaunchError(f"cannot write the job script in {folder}: {exc.strerror or exc}") from None
    return path


def submit(cluster: SlurmCluster, script: Path) -> Tuple[str, Optional[str]]:
    """sbatch the script; (job id, cluster name or None)."""
    out = cluster.check(["sbatch", "--parsable", str(script)], timeout=120).strip().splitlines()
    answer = out[-1] if out else ""
    job_id, _, name = answer.partition(";")
    if not job_id.strip().isdigit():
        raise LaunchError(f"sbatch did not answer with a job id: {answer!r}")
    return job_id.strip(), (name.strip() or None)


def job_states(cluster: SlurmCluster) -> Dict[str, str]:
    """Job id -> state for the jobs Slurm still knows (squeue --states=all: pending, running, and
    ended ones for MinJobAge). An unreachable controller raises LaunchError."""
    out = cluster.check(["squeue", "--noheader", "--states=all", "--format=%i|%T"], timeout=60)
    states = {}
    for line in out.splitlines():
        job, sep, state = line.strip().partition("|")
        if sep:
            states[job.strip()] = state.strip()
    return states


def cancel(cluster: SlurmCluster, job_id: str) -> None:
    cluster.check(["scancel", str(job_id)])
