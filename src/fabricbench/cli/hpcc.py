"""``fabricbench hpcc``: run HPC Challenge, store its seven tests, print them with HPL's % of peak."""
from __future__ import annotations

import shlex
from typing import Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import (
    console,
    err_console,
    json_option,
    label_option,
    main,
    parse_tags,
    pass_state,
    print_json,
    tag_option,
)
from fabricbench.errors import UsageError
from fabricbench.numbers import exact, number, percent


@main.command("hpcc")
@click.option("--np", "np_", type=int, required=True, help="Number of MPI processes.")
@click.option("--hostfile", type=str, help="Hostfile for the launcher (Open MPI/MPICH style).")
@click.option("--launcher", type=str, default=None, help="How ranks start: mpirun (default) or lab.")
@click.option("--memory-fraction", type=float, default=0.25, show_default=True,
              help="Fraction of the nodes' memory HPL's matrix fills (sets N unless --n is given).")
@click.option("--n", "n", type=int, help="HPL problem size N (overrides --memory-fraction).")
@click.option("--nb", type=int, help="HPL block size NB (default 192; 64 for small N).")
@click.option("--grid", metavar="PxQ", help="Process grid (default: the most nearly square, P <= Q).")
@click.option("--peak-gflops", type=float, help="Theoretical peak to compare HPL with (default: from /proc/cpuinfo).")
@click.option("--hpcc", "hpcc_binary", default="hpcc", show_default=True, help="The HPCC binary.")
@click.option("--workdir", type=str, help="Empty directory to run in (default: a new one under ./fabricbench-results).")
@click.option("--timeout", type=float, help="Stop HPCC after this many seconds (the run is marked failed).")
@click.option("--mpirun-args", default="", help="Extra launcher arguments, e.g. \"--bind-to core\".")
@click.option("--profile", "profiled", is_flag=True,
              help="Run HPCC under the MPI profiler and keep the profile, split into HPCC's tests, with the run.")
@label_option
@tag_option
@json_option
@pass_state
def hpcc_command(state, np_: int, hostfile: Optional[str], launcher: Optional[str], memory_fraction: float,
                 n: Optional[int], nb: Optional[int], grid: Optional[str], peak_gflops: Optional[float],
                 hpcc_binary: str, workdir: Optional[str], timeout: Optional[float], mpirun_args: str,
                 profiled: bool, label: Optional[str], tags: Tuple[str, ...], as_json: bool) -> None:
    """Run HPC Challenge (the real hpcc binary) and store its results.

    Writes hpccinf.txt (N from --memory-fraction of the nodes' memory, or --n), runs
    hpcc through the launcher, imports hpccoutf.txt, stores the run (kind hpcc, with
    both files) and prints the seven tests with HPL's percentage of the theoretical peak.
    On a small test machine use a small problem, e.g. --np 2 --n 500.
    """
    from fabricbench.workflows.hpcc import run_hpcc

    if peak_gflops is not None and peak_gflops <= 0:
        raise UsageError("--peak-gflops must be positive")
    tag_map = parse_tags(tags)
    try:
        extra = shlex.split(mpirun_args)
    except ValueError as exc:
        raise UsageError(f"bad --mpirun-args: {exc}") from None
    out = err_console if as_json else console
    echo = lambda msg: out.print(msg, highlight=False, soft_wrap=True)  # noqa: E731
    result = run_hpcc(
        state.store, np=np_, launcher=launcher or "mpirun", hostfile=hostfile, memory_fraction=memory_fraction,
        n=n, nb=nb, grid=grid, peak_gflops=peak_gflops, label=label, tags=tag_map, workdir=workdir,
        hpcc=hpcc_binary, timeout=timeout, launcher_args=extra, echo=echo, profile=profiled,
    )
    if as_json:
        out = result.to_dict()
        if profiled:
            from fabricbench.cli.hpcc_profile import profile_json

            out["profile"] = profile_json(state.store, result.run.id)
        print_json(out)
        return
    show(result)
    if profiled:
        from fabricbench.cli.hpcc_profile import print_test_leads

        print_test_leads(state.store, result.run.id)


_fmt = number


def show(result) -> None:
    plan = result.plan
    table = Table(title=f"HPCC run {result.run.id}: {plan.np} processes, N={plan.n}, NB={plan.nb}, "
                        f"grid {plan.p}x{plan.q}", title_justify="left")
    table.add_column("test")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("better")
    for row in result.rows:
        if not row["headline"]:
            continue
        table.add_row(row["test"], row["display"], _fmt(row["values"][0]), row["unit"],
                      "higher" if row["higher_is_better"] else "lower")
    console.print(table)
    latency = next((r for r in result.rows if r["key"] == "RandomlyOrderedRingLatency_usec"), None)
    if latency:
        console.print(f"random ring latency: {_fmt(latency['values'][0])} us", highlight=False)
    if result.hpl_gflops is not None:
        if result.percent_of_peak is not None:
            console.print(f"HPL: {_fmt(result.hpl_gflops)} Gflop/s = {percent(result.percent_of_peak)} of "
                          f"{exact(result.peak.gflops)} Gflop/s peak ({result.peak.source})", highlight=False, markup=False)
        else:
            console.print(f"HPL: {_fmt(result.hpl_gflops)} Gflop/s (peak unknown: give --peak-gflops)", highlight=False,
                          soft_wrap=True)
    for warning in result.warnings:
        console.print(f"[yellow]note:[/] {warning}", highlight=False)
    console.print(f"stored as run {result.run.id} ({result.status}); files in {result.workdir}", highlight=False,
                  soft_wrap=True)
