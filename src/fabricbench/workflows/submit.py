"""Batch jobs: submit one fabricbench command to Slurm, remember it, and follow it to the run it made.

The job writes into the database `submit` was given (FABRICBENCH_DB in the job's script),
so that database must be reachable from the compute nodes: PostgreSQL, or SQLite on a
file system the nodes share with the submitting host. When the job's fabricbench creates
its run, the run's session links it to the job (workflows.session).
"""
from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from fabricbench.launch import sbatch, slurm
from fabricbench.launch.base import LaunchError
from fabricbench.launch.sbatch import BatchOptions
from fabricbench.store import Run, SlurmJob, StoreError

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

GONE = "ENDED"  # a job Slurm no longer lists (past MinJobAge): it ended; its run says how


def jobs_folder(store: Store) -> Path:
    """Where scripts and job output go: $FABRICBENCH_JOBS_DIR, else `jobs/` next to a SQLite database,
    else `jobs/` in the user data directory."""
    configured = os.environ.get("FABRICBENCH_JOBS_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    if store.path is not None:
        return store.path.resolve().parent / "jobs"
    import platformdirs

    return Path(platformdirs.user_data_dir("fabricbench")) / "jobs"


def prepare(store: Store, command: Sequence[str], options: BatchOptions) -> tuple:
    """(script path, script text, output pattern) for a job that runs `command` into `store`."""
    folder = jobs_folder(store)
    name = f"fabricbench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.sbatch"
    output = str(folder / "slurm-%j.out")
    env = {"FABRICBENCH_DB": store.url}
    c = slurm.cluster()
    if c.lab_name:
        env["FABRICBENCH_LAB"] = c.lab_name
    if options.job_name is None:
        words = [w for w in command[1:] if not w.startswith("-")]
        options.job_name = "fabricbench" + (f"-{words[0]}" if words else "")
    return folder / name, sbatch.script_text(command, options, output, env), output


def submit_job(store: Store, command: Sequence[str], options: BatchOptions) -> SlurmJob:
    """Write the script, sbatch it, record the job; the job as recorded."""
    path, text, output = prepare(store, command, options)
    sbatch.write_script(path.parent, path.name, text)
    c = slurm.cluster()
    job_id, cluster_name = sbatch.submit(c, path)
    return store.add_slurm_job(job_id, cluster_name or c.lab_name, shlex.join(command), str(path),
                               output.replace("%j", job_id), options.to_dict())


@dataclass
class JobView:
    job: SlurmJob
    state: Optional[str]
    run: Optional[Run]


def list_jobs(store: Store, limit: Optional[int] = 20, refresh: bool = True) -> Tuple[List[JobView], Optional[str]]:
    """Submitted jobs, newest first, with Slurm's state now (refresh) and the run each produced;
    and why the states are the last ones seen, when Slurm could not be asked."""
    found = store.slurm_jobs(limit=limit)
    stale = None
    if refresh and found:
        try:
            states = sbatch.job_states(slurm.cluster())
        except LaunchError as exc:
            states, refresh = {}, False
            stale = f"states as last seen: Slurm did not answer ({exc})"
    if refresh and found:
        changed = {}
        for j in found:
            now = states.get(j.job_id)
            if now is None and j.state not in sbatch.ENDED:
                now = GONE
            if now is not None and now != j.state:
                changed[j.id] = now
                j.state = now
        try:
            store.set_slurm_job_states(changed)
        except StoreError:
            pass  # a read-only database still lists its jobs
    views = []
    for j in found:
        run = None
        if j.run_id is not None:
            try:
                run = store.get_run(j.run_id)
            except StoreError:
                run = None
        views.append(JobView(job=j, state=j.state, run=run))
    return views, stale
