"""`fabricbench run`: measure a suite or benchmarks into the database, with a progress display."""
from __future__ import annotations

import shlex
import time
from typing import Optional, Tuple

import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from fabricbench import suite
from fabricbench.cli.app import console, label_option, main, parse_tags, pass_state, safe_markup, tag_option
from fabricbench.cli.progress import progress as make_progress
from fabricbench import numbers as fmt
from fabricbench.errors import UsageError
from fabricbench.launch import Layout, get_launcher, launcher_names
from fabricbench.workflows.engine import Observer, measure
from fabricbench import numbers


class ProgressObserver(Observer):
    """Benchmark, message size, points done / total, elapsed."""

    def __init__(self, progress):
        self.progress = progress
        self.task = None
        self.started = time.monotonic()

    def provenance_started(self) -> None:
        self.task = self.progress.add_task("collecting provenance", total=None, size="")

    def step_started(self, index, total, step, planned) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        desc = f"[{index + 1}/{total}] {step.benchmark}"
        if step.launches > 1:
            desc += f" (launch {step.launch} of {step.launches})"
        self.task = self.progress.add_task(desc, total=planned or None, size="")

    def point(self, step, measurement, done) -> None:
        size = measurement.size
        self.progress.update(self.task, completed=done, size=f"{size} B" if size is not None else "")

    def step_finished(self, step) -> None:
        self.progress.update(self.task, completed=self.progress.tasks[-1].total or 0)


def build_layout(np: Optional[int], hostfile, hosts, ppn, mpirun_args) -> Layout:
    if hostfile and hosts:
        raise UsageError("give --hostfile or --hosts, not both")
    return Layout(
        np=np,
        hosts=[h.strip() for h in hosts.split(",") if h.strip()] if hosts else [],
        hostfile=hostfile,
        ppn=ppn,
        extra_args=shlex.split(mpirun_args) if mpirun_args else [],
    )


def launch_options(f=None, *, launcher_default: Optional[str] = "mpirun", launcher_help: str = ""):
    """The options that say where ranks go; shared by run and the commands that launch.
    ``@launch_options`` or ``@launch_options(launcher_default=None, launcher_help=...)``."""
    def decorate(f):
        for opt in reversed(
            [
                click.option("--np", "np", type=click.IntRange(min=1), help="Number of ranks (default 2; all nodes for --launcher lab)."),
                click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), help="Hostfile for the launcher."),
                click.option("--hosts", help="Comma-separated host names."),
                click.option("--ppn", type=click.IntRange(min=1), help="Ranks per node."),
                click.option("--launcher", default=launcher_default, show_default=launcher_default is not None,
                             help=launcher_help or "How ranks start: mpirun, srun, lab."),
                click.option("--mpirun-args", metavar="ARGS", help='Extra launcher arguments, e.g. "--mca btl tcp,self".'),
            ]
        ):
            f = opt(f)
        return f
    return decorate(f) if f is not None else decorate


def make_launcher(launcher: str, layout: Layout, default_np: int = 2):
    if launcher not in launcher_names():
        raise UsageError(f"unknown launcher '{launcher}'; choose one of: {', '.join(launcher_names())}")
    chosen = get_launcher(launcher, layout)
    if chosen.layout.np is None:
        chosen.layout.np = default_np
    return chosen


@main.command()
@click.argument("selection", nargs=-1, metavar="[SUITE | BENCHMARK ...]")
@launch_options
@label_option
@tag_option
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop and mark the run failed after this long.")
@click.option("--watchdog", type=click.FloatRange(min=0), metavar="SECONDS",
              help="Fail the run when the engine prints nothing for this long (default: derived from the plan, "
              "minutes for large messages; 0: never; also FABRICBENCH_WATCHDOG).")
@click.option("--sizes", metavar="MIN:MAX", help="Message sizes for every sized benchmark, e.g. 1:1M.")
@click.option("--iterations", type=click.IntRange(min=1), help="Fixed iterations per point (default: adaptive time budget).")
@click.option("--time-budget", type=click.FloatRange(min=0.001), metavar="SECONDS", help="Time budget per point.")
@click.option("--precision", type=click.FloatRange(min=0, max=1), metavar="P",
              help="Stop each point once the 95% CI of its median is within P x median (engine default 0.01); "
              "the time budget stays the ceiling and points that miss P are marked in show and report; 0: fill "
              "the budget.")
@click.option("--order", type=click.Choice(["ascending", "random"]), default="ascending", show_default=True,
              help="Order in which each benchmark measures its sizes: random (a shuffle from the engine's seed) "
              "scatters a burst of load over the curve instead of a run of neighbouring sizes.")
@click.option("--win-sync", type=click.Choice(["flush", "lock", "pscw", "fence", "flush_local", "lock_all"]),
              help="One-sided benchmarks: the synchronisation (OSU's -s; default flush, put_bibw pscw).")
@click.option("--win-alloc", type=click.Choice(["allocate", "create", "dynamic"]),
              help="One-sided benchmarks: how the window is made (OSU's -w; default allocate).")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Launch every benchmark this many times, interleaved, and merge each point's launches; the "
              "time budget (or --iterations) is split between them. compare takes the spread between launches "
              "as the run-to-run noise; 1 launches once.")
@pass_state
def run(state, selection: Tuple[str, ...], np, hostfile, hosts, ppn, launcher, mpirun_args, label, tags, timeout, watchdog, sizes, iterations, time_budget, precision, order, win_sync, win_alloc, repeat):
    """Measure a suite (quick, standard, hpcc-net) or benchmarks and store the results.

    Ctrl-C, SIGTERM and SIGHUP stop cleanly: the points measured so far are kept, the run is
    marked interrupted and the exit status is 128 + the signal (130, 143, 129).
    """
    tag_map = parse_tags(tags)
    chosen = make_launcher(launcher, build_layout(np, hostfile, hosts, ppn, mpirun_args))
    extra = []
    if iterations:
        extra += ["--iterations", str(iterations)]
    if time_budget:
        extra += ["--time-budget", str(time_budget)]
    if precision is not None:
        if iterations:
            raise UsageError("--precision is the stopping rule of the adaptive count; --iterations fixes the count")
        extra += ["--precision", numbers.short(precision)]
    rma = [(o, v) for o, v in (("--win-sync", win_sync), ("--win-alloc", win_alloc)) if v]
    steps = suite.plan(selection, chosen.layout.np, sizes=sizes, extra=extra, order=order, where_taken=rma)
    steps, bound_s = announce_time(steps, chosen, repeat)
    started = time.monotonic()
    store = state.store
    with make_progress(
        console,
        TextColumn("{task.description}"),
        TextColumn("{task.fields[size]}", style="cyan"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ) as progress:
        outcome = measure(store, chosen, steps, label=label, tags=tag_map, timeout=timeout, observer=ProgressObserver(progress),
                          watchdog=watchdog, repeat=repeat)
    launched = f" ({repeat} launches each)" if repeat > 1 else ""
    console.print(
        f"run [bold]{outcome.run.id}[/] complete: {outcome.points} points from {len(steps)} benchmarks{launched} "
        f"on {chosen.layout.np} ranks, stored in {safe_markup(store.where)}",
        highlight=False,
    )
    took = time.monotonic() - started
    console.print(f"took {fmt.duration(took)} (announced: at most about {fmt.duration(bound_s)})",
                  style="yellow" if took > 1.25 * bound_s else None, highlight=False, markup=False)
    print_headlines(store, outcome.run)
    console.print(f"more: fabricbench show {outcome.run.id} (every point), "
                  f"fabricbench report {outcome.run.id} -o report.html (plots)", highlight=False, markup=False)


def announce_time(steps, launcher, repeat: int):
    """Bound the run's time before it starts (planning.suite_time): say it, and say which points
    a slow link made measure with fewer messages per window or skip. Returns the steps to run."""
    from fabricbench.planning.suite_time import launch_seconds, link_rate_Bps, plan_time

    rate = link_rate_Bps(launcher)
    tp = plan_time(steps, launcher.layout.np or 2, rate, repeat, launch_s=launch_seconds())
    link = f" at the link's {fmt.number(rate * 8 / 1e6)} Mbit/s" if rate else ""
    console.print(f"{tp.points} points in {len(tp.steps)} benchmarks{link}: at most about "
                  f"{fmt.duration(tp.bound_s)} (each point stops at its precision, or at twice its time budget)",
                  highlight=False, markup=False)
    fewer = [a for a in tp.adjustments if a.window is not None]
    if fewer:
        by: dict = {}
        for a in fewer:
            by.setdefault(a.benchmark, []).append(a)
        for bench, adjusted in by.items():
            console.print(f"  {bench}: fewer than {adjusted[0].original_window} messages per window from "
                          f"{fmt.binary_size(min(a.size for a in adjusted))} on, so that each point's minimum "
                          "iterations fit its time", highlight=False, markup=False)
    if tp.skipped:
        by = {}
        for a in tp.skipped:
            by.setdefault(a.benchmark, []).append(a.size)
        for bench, sized in by.items():
            console.print(f"  {bench}: skipped from {fmt.binary_size(min(sized))} on ({len(sized)} sizes): its "
                          "minimum iterations alone would take longer than a point's share on this link",
                          style="yellow", highlight=False, markup=False)
    if not tp.steps:
        raise UsageError("nothing left to measure: every point is too slow for this link; "
                         "choose smaller --sizes")
    return tp.steps, tp.bound_s


def headline_lines(store, run) -> list:
    """'lowest latency   0.210 us at 8 B' and the like, from the stored run (with its link when known)."""
    from fabricbench.analysis.headlines import headline_figures, points_over_ceiling
    from fabricbench.analysis.peaks import run_ceiling

    loaded = store.load(run.id)
    c = run_ceiling(run, loaded.hosts).ceiling
    link = ""
    if c is not None:
        link = (c.pcie.name if c.by == "pcie" and c.pcie else c.fabric.name if c.fabric else "the link")
    figures = headline_figures(loaded.measurements, c.limit_MBps if c else None, link)
    width = max((len(h.name) for h in figures), default=0)
    lines = []
    for h in figures:
        at = f" at {fmt.binary_size(h.size)}" if h.size is not None else ""
        text = f"  {h.name:<{width}}  {fmt.number(h.value)} {h.unit}{at} ({figure_label(h.statistic, h.ci, h.unit)}"
        if h.percent_of_link is not None:
            text += f"; {fmt.percent(h.percent_of_link)} of {h.link}"
        lines.append(text + ")")
    lines += ceiling_lines(points_over_ceiling(loaded.measurements, c.limit_MBps if c else None), link)
    return _wrapped(lines, 4 + width)


def _wrapped(lines: list, indent: int, columns: int = 80) -> list:
    """Lines longer than the terminal's 80 columns broken at spaces, continued under the figure."""
    import textwrap

    out = []
    for line in lines:
        out += textwrap.wrap(line, columns, subsequent_indent=" " * indent, break_long_words=False,
                             break_on_hyphens=False) if len(line) > columns else [line]
    return out


def figure_label(statistic: str, ci=None, unit: str = "") -> str:
    """How a figure of record is labelled: 'median, 95% CI 4.41-4.55', 'rate over all iterations,
    95% CI 116.9-117.8', 'mean: no per-call distribution'."""
    from fabricbench.analysis import record

    if statistic in (record.MEDIAN, record.RATE_ALL) and ci:
        return f"{statistic}, 95% CI {fmt.number(ci[0])}-{fmt.number(ci[1])}"
    return {record.MEAN_NO_CALLS: "mean: no per-call distribution",
            record.MEAN_ONLY: "mean: no distribution recorded",
            record.DEFINED: "as the benchmark defines it"}.get(statistic, statistic)


def ceiling_lines(found, link: str) -> list:
    """Per benchmark, the points with shown statistics above their ceiling and the worst of them:
    '! bw: 7 points show figures above the 125.0 MB/s lab link ... can carry;' + 'worst: ...'."""
    lines = []
    for bench in dict.fromkeys(p.benchmark for p in found):
        mine = [p for p in found if p.benchmark == bench]
        worst = max(mine, key=lambda p: p.excess[0].ratio)
        top = worst.excess[0]
        at = f" at {fmt.binary_size(worst.size)}" if worst.size is not None else ""
        lines.append(f"  ! {bench}: {len(mine)} point{'s show' if len(mine) != 1 else ' shows'} figures above the "
                     f"{fmt.number(worst.ceiling_MBps)} MB/s {link or 'the link'} can carry, "
                     f"worst {top.statistic} {fmt.number(top.value)} MB/s{at} ({numbers.fixed(top.ratio, 2)}x): not physical "
                     "(a burst passed unshaped, or the traffic did not cross the link)")
    return lines


def print_headlines(store, run) -> None:
    for line in headline_lines(store, run):
        console.print(line, highlight=False, markup=False)
