"""`fabricbench submit -- fabricbench ...` (a Slurm batch job) and `fabricbench jobs` (what became of them)."""
from __future__ import annotations

import shlex
from typing import Optional, Tuple

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench.errors import UsageError

STATE_STYLE = {"COMPLETED": "green", "RUNNING": "cyan", "PENDING": "yellow", "CANCELLED": "red", "FAILED": "red",
               "TIMEOUT": "red", "NODE_FAIL": "red"}
RUN_STYLE = {"complete": "green", "running": "cyan", "failed": "red", "interrupted": "yellow"}


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--partition", "-p", metavar="NAME", help="Slurm partition (default: the cluster's default).")
@click.option("--time", "-t", "time_limit", metavar="TIME", help="Time limit, as sbatch takes it: 30, 1:00:00, 1-0.")
@click.option("--nodes", "-N", type=click.IntRange(min=1), help="Nodes to allocate (default: Slurm's, usually 1).")
@click.option("--ntasks-per-node", type=click.IntRange(min=1), help="Tasks per node of the allocation.")
@click.option("--job-name", "-J", metavar="NAME", help="Job name (default: fabricbench-COMMAND).")
@click.option("--sbatch-args", metavar="ARGS", help='More sbatch options, e.g. "--exclusive --account=hpc".')
@click.option("--dry-run", is_flag=True, help="Print the job script instead of submitting it.")
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_state
def submit(state, partition: Optional[str], time_limit: Optional[str], nodes: Optional[int], ntasks_per_node: Optional[int],
           job_name: Optional[str], sbatch_args: Optional[str], dry_run: bool, as_json: bool, command: Tuple[str, ...]) -> None:
    """Run a fabricbench command as a Slurm batch job that stores into this database.

    \b
      fabricbench submit --nodes 4 --time 30 -- fabricbench health --launcher srun
      fabricbench jobs
    """
    from fabricbench.launch.sbatch import BatchOptions
    from fabricbench.workflows.submit import prepare, submit_job

    argv = list(command[1:] if command and command[0] == "--" else command)
    if not argv:
        raise UsageError("submit: give the command the job runs after --, e.g. fabricbench submit -- fabricbench run quick --launcher srun")
    options = BatchOptions(partition=partition, time=time_limit, nodes=nodes, ntasks_per_node=ntasks_per_node,
                           job_name=job_name, extra=shlex.split(sbatch_args) if sbatch_args else [])
    if dry_run:
        click.echo(prepare(state.store, argv, options)[1], nl=False)
        return
    job = submit_job(state.store, argv, options)
    if as_json:
        print_json({"job_id": job.job_id, "cluster": job.cluster, "script": job.script, "output": job.output,
                    "options": job.options, "command": job.command})
        return
    click.echo(job.job_id)
    console.print(f"submitted Slurm job {job.job_id}{f' on {job.cluster}' if job.cluster else ''}: {job.command}",
                  highlight=False, markup=False)
    console.print(f"script {job.script}; output {job.output}; follow it with: fabricbench jobs", highlight=False, markup=False)


@main.command()
@click.option("--last", type=click.IntRange(min=1), default=20, show_default=True, help="Only the last N jobs.")
@click.option("--no-refresh", is_flag=True, help="Show the states last seen instead of asking Slurm now.")
@json_option
@pass_state
def jobs(state, last: int, no_refresh: bool, as_json: bool) -> None:
    """List the Slurm jobs `fabricbench submit` made: Slurm's state and the run each produced."""
    from fabricbench.workflows.submit import list_jobs

    views, stale = list_jobs(state.store, limit=last, refresh=not no_refresh)
    if as_json:
        print_json([{"job_id": v.job.job_id, "cluster": v.job.cluster, "state": v.state, "submitted": v.job.submitted,
                     "command": v.job.command, "options": v.job.options, "output": v.job.output,
                     "run": v.run.id if v.run else None, "run_status": v.run.status if v.run else None} for v in views])
        return
    table = Table(title=Text(f"Slurm jobs submitted into {state.store.where}"), title_justify="left")
    for col, justify in (("job", "right"), ("state", "left"), ("submitted (UTC)", "left"), ("nodes", "right"),
                         ("run", "right"), ("run status", "left"), ("command", "left")):
        table.add_column(col, justify=justify, no_wrap=col in ("submitted (UTC)", "job"))
    for v in views:
        table.add_row(v.job.job_id, Text(v.state or "?", style=STATE_STYLE.get(v.state or "", "")),
                      v.job.submitted.replace("T", " ")[:19], str(v.job.options.get("nodes") or ""),
                      str(v.run.id) if v.run else "-",
                      Text(v.run.status, style=RUN_STYLE.get(v.run.status, "")) if v.run else Text("-"),
                      Text(v.job.command))
    console.print(table)
    if stale:
        console.print(stale, highlight=False, markup=False)
    if not views:
        console.print("no jobs submitted into this database yet (fabricbench submit -- fabricbench ...)", highlight=False)
