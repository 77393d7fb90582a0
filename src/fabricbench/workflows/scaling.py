"""Running an application scaling study: every scale, every repetition, through a launcher.

``plan_points(nodes, ppn, np_list)`` says which scales to run; ``run_study(store, spec,
launcher_for)`` runs them (all repetitions of a scale, then the next scale) into one run of
kind ``scaling``, one measurement per repetition and metric, committed as it finishes:

    benchmark "scale", params {"nodes", "ranks", "ppn", "repetition", "size": None},
    metric "time" (unit s) and/or "fom" (the user's unit),
    detail {"status": "ok" | "failed", "reason", "exit_status", "wall_s", "higher_is_better"}

A repetition fails when the application exits non-zero, runs past the timeout, or its
output lacks a figure the study parses; it is stored with value None and its reason, so it
never enters an average. Provenance (hosts, MPI, launch line) is collected once, for the
largest scale, before the first repetition. Ctrl-C stops the job and marks the run
``interrupted``; finished repetitions stay.

The application sees FABRICBENCH_SCALE_NODES, FABRICBENCH_SCALE_RANKS and
FABRICBENCH_SCALE_REPETITION in its environment (e.g. to size a weak-scaling problem).
"""
from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from fabricbench.analysis.app_figures import WALL_RESOLUTION_S
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.launch import Launcher, Layout
from fabricbench.launch.failure import explain_failure
from fabricbench.launch.procs import Job, ProcessTimeout
from fabricbench.store import Measurement, Run
from fabricbench.workflows.hosts import run_provenance
from fabricbench.workflows.session import RunFailed, Session
from fabricbench import numbers

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

BENCHMARK = "scale"
KIND = "scaling"
OUTPUT_TAIL = 2000  # characters of stdout/stderr kept per repetition (artifact)
OUTPUT_KEPT = 4_000_000  # characters of stdout searched for figures (the end of a chatty run)


@dataclass(frozen=True)
class ScalePlan:
    """One scale of a study: the node count (None when only ranks were asked for), ranks, ranks per node."""

    nodes: Optional[int]
    ranks: int
    ppn: Optional[int]

    def describe(self) -> str:
        ranks = f"{self.ranks} rank{'s' if self.ranks != 1 else ''}"
        if self.nodes is None:
            return ranks
        return f"{self.nodes} node{'s' if self.nodes != 1 else ''} x {self.ppn or 1} = {ranks}"


@dataclass
class StudySpec:
    app: List[str]
    points: List[ScalePlan]
    repeat: int = 3
    time: Optional[str] = "wall"  # "wall", a regex whose first group is seconds, or None
    fom: Optional[str] = None  # regex; first group of the last match is the figure of merit
    fom_unit: str = ""
    higher_is_better: bool = True
    weak: bool = False
    timeout: Optional[float] = None  # per repetition, seconds
    label: Optional[str] = None
    tags: Dict[str, str] = field(default_factory=dict)
    case: Optional[Any] = None  # a catalogued application (workflows.app.AppCase): it runs and parses itself

    def __post_init__(self):
        if self.case is not None:
            # The recipe gives the figures: its own elapsed time and its figure of merit.
            recipe = self.case.recipe
            self.app = self.app or [recipe.name]
            self.time, self.fom = "app", "app"
            self.fom_unit, self.higher_is_better = recipe.fom.unit, recipe.fom.higher_is_better
        if not self.app:
            raise UsageError("name the application to run after '--', e.g. fabricbench scale --nodes 1,2 -- ./app")
        if not self.points:
            raise UsageError("no scales to run: give --nodes and/or --np-list")
        if self.repeat < 1:
            raise UsageError("--repeat must be at least 1")
        if self.time is None and self.fom is None:
            raise UsageError("nothing to record: give --time wall, --time REGEX or --fom REGEX")
        self._time_re = None if self.time in (None, "wall", "app") else compile_figure(self.time, "--time")
        self._fom_re = compile_figure(self.fom, "--fom") if self.fom and self.case is None else None

    @property
    def metrics(self) -> List[str]:
        return ([] if self.time is None else ["time"]) + (["fom"] if self.fom else [])

    @property
    def primary_metric(self) -> str:
        return "fom" if self.fom else "time"

    def unit(self, metric: str) -> str:
        return "s" if metric == "time" else self.fom_unit

    def describe(self) -> Dict[str, Any]:
        return {
            "mode": "weak" if self.weak else "strong",
            "app": list(self.app),
            "points": [{"nodes": p.nodes, "ranks": p.ranks, "ppn": p.ppn} for p in self.points],
            "repeat": self.repeat,
            "metrics": self.metrics,
            "primary_metric": self.primary_metric,
            "time": self.time,
            "fom": self.fom,
            "fom_unit": self.fom_unit,
            "higher_is_better": self.higher_is_better,
            "timeout_s": self.timeout,
            **({"application": self.case.describe()} if self.case is not None else {}),
        }


def compile_figure(pattern: str, option: str) -> "re.Pattern[str]":
    try:
        compiled = re.compile(pattern, re.M)
    except re.error as exc:
        raise UsageError(f"{option} {pattern!r} is not a valid regular expression: {exc}") from None
    if compiled.groups < 1:
        raise UsageError(f"{option} {pattern!r} needs a capture group around the number, e.g. 'FOM: ([0-9.eE+-]+)'")
    return compiled


def _last_figure(pattern: "re.Pattern[str]", text: str) -> Optional[str]:
    last = None
    for m in pattern.finditer(text):
        last = m
    return None if last is None or last.group(1) is None else last.group(1).replace(",", "")


def _figure_as(pattern: "re.Pattern[str]", text: str, convert: Callable[[str], float]) -> Optional[float]:
    """The last match's figure through `convert`; None when absent or not a number."""
    figure = _last_figure(pattern, text)
    try:
        return convert(figure) if figure is not None else None
    except ValueError:
        return None


def parse_figure(pattern: "re.Pattern[str]", text: str) -> Optional[float]:
    """The first capture group of the last match, as a number; None when absent or not a number."""
    return _figure_as(pattern, text, float)


def figure_step(pattern: "re.Pattern[str]", text: str) -> Optional[float]:
    """The step of that figure as printed ('2' -> 1 s, '1.51' -> 0.01 s); None when absent."""
    from fabricbench.apps.base import printed_step

    return _figure_as(pattern, text, printed_step)


def parse_int_list(text: str, option: str) -> List[int]:
    """'1,2,4,8' -> [1, 2, 4, 8] (positive, no repeats, order kept)."""
    out: List[int] = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise UsageError(f"{option}: '{item}' is not a positive whole number (expected e.g. 1,2,4,8)")
        if int(item) in out:
            raise UsageError(f"{option}: {item} is listed twice")
        out.append(int(item))
    if not out:
        raise UsageError(f"{option} needs at least one value, e.g. 1,2,4,8")
    return out


def plan_points(nodes: Optional[Sequence[int]], ppn: Optional[int], np_list: Optional[Sequence[int]]) -> List[ScalePlan]:
    """The scales of a study from --nodes, --ppn and --np-list."""
    if nodes and np_list:
        if len(nodes) != len(np_list):
            raise UsageError("--nodes and --np-list together must have the same number of entries (one rank count per node count)")
        if ppn:
            raise UsageError("give --ppn or --np-list with --nodes, not both")
        return [ScalePlan(n, r, r // n if r % n == 0 else None) for n, r in zip(nodes, np_list)]
    if nodes:
        per = ppn or 1
        return [ScalePlan(n, n * per, per) for n in nodes]
    if np_list:
        if ppn:
            raise UsageError("--ppn goes with --nodes; --np-list gives rank counts directly")
        return [ScalePlan(None, r, None) for r in np_list]
    raise UsageError("give the scales to run: --nodes 1,2,4 (with --ppn) or --np-list 1,2,4")


def layout_for(point: ScalePlan, launcher_name: str, hosts: Sequence[str], extra_args: Sequence[str]) -> Layout:
    """The launch layout of one scale: the first N hosts when hosts are known, else N x ppn local ranks."""
    unique = list(dict.fromkeys(hosts))
    extra = list(extra_args)
    if point.nodes is None:
        return Layout(np=point.ranks, hosts=unique, ppn=None, extra_args=extra)
    if unique:
        if point.nodes > len(unique):
            raise UsageError(
                f"--nodes {point.nodes} needs {point.nodes} hosts; only {len(unique)} are available ({', '.join(unique)})"
            )
        return Layout(np=point.ranks, hosts=unique[: point.nodes], ppn=point.ppn, extra_args=extra)
    if launcher_name == "srun":
        return Layout(np=point.ranks, ppn=point.ppn, extra_args=["--nodes", str(point.nodes)] + extra)
    # A local launch: N "nodes" are N x ppn ranks on this host (ppn mapping would refuse more than ppn).
    return Layout(np=point.ranks, ppn=None, extra_args=extra)


# ---- one repetition ----------------------------------------------------------------------


@dataclass
class RepetitionResult:
    ok: bool
    wall_s: float
    values: Dict[str, Optional[float]]
    exit_status: Optional[int]
    reason: Optional[str] = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    timers: Dict[str, float] = field(default_factory=dict)  # a catalogued application's own breakdown (s)
    # metric -> the step the figure was printed or timed with (OpenFOAM's ClockTime: 1 s), stored with it
    resolution: Dict[str, Optional[float]] = field(default_factory=dict)


@dataclass
class Collected:
    """A finished (or stopped) launch: exit status, output, wall time."""

    returncode: Optional[int]
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool


def launch_and_collect(argv: Sequence[str], env: Dict[str, str], timeout: Optional[float] = None,
                       cwd: Optional[str] = None) -> Collected:
    """Run one launch to its end (stopped entirely on timeout or Ctrl-C), keeping the end of its stdout."""
    start = time.monotonic()
    deadline = start + timeout if timeout else None
    try:
        job = Job(argv, env=env, cwd=cwd)
    except OSError as exc:
        raise FabricbenchError(f"cannot start {argv[0]}: {exc.strerror}") from None
    out: "deque[str]" = deque()
    rc: Optional[int] = None
    timed_out = False
    try:
        kept = 0
        for line in job.lines(deadline=deadline):
            out.append(line)
            kept += len(line)
            while kept > OUTPUT_KEPT and len(out) > 1:  # figures are parsed from the end of the output
                kept -= len(out.popleft())
        left = (deadline - time.monotonic()) if deadline else None
        rc = job.wait(timeout=max(1.0, left) if left is not None else None)
    except (TimeoutError, ProcessTimeout):
        timed_out = True
    except BaseException:
        job.stop()
        raise
    wall = time.monotonic() - start
    job.stop()
    return Collected(rc, "".join(out), job.stderr, wall, timed_out)


def run_repetition(launcher: Launcher, spec: StudySpec, env_extra: Dict[str, str]) -> RepetitionResult:
    """Run the application once through `launcher`; stopped entirely on timeout or Ctrl-C."""
    if spec.case is not None:
        return spec.case.repetition(launcher, spec.timeout, env_extra)
    env = launcher.environment()
    env.update(env_extra)
    done = launch_and_collect(launcher.command(spec.app), env, spec.timeout)
    rc, wall, stdout, stderr = done.returncode, done.wall_s, done.stdout, done.stderr
    result = RepetitionResult(False, wall, {m: None for m in spec.metrics}, rc, None, stdout[-OUTPUT_TAIL:], stderr[-OUTPUT_TAIL:])
    if done.timed_out:
        result.reason = f"timeout: still running after {numbers.short(spec.timeout)} s (stopped)"
        return result
    if rc != 0:
        result.reason = f"exit status {rc}: {explain_failure(stderr)}"
        return result
    values: Dict[str, Optional[float]] = {}
    if spec.time == "wall":
        values["time"] = wall
        result.resolution["time"] = WALL_RESOLUTION_S
    elif spec.time is not None:
        values["time"] = parse_figure(spec._time_re, stdout)
        result.resolution["time"] = figure_step(spec._time_re, stdout)
        if values["time"] is None:
            result.reason = f"time not found in the output (--time {spec.time!r})"
    if spec.fom:
        values["fom"] = parse_figure(spec._fom_re, stdout)
        result.resolution["fom"] = figure_step(spec._fom_re, stdout)
        if values["fom"] is None and result.reason is None:
            result.reason = f"figure of merit not found in the output (--fom {spec.fom!r})"
    if result.reason is None and any(v is not None and v <= 0 and m == "time" for m, v in values.items()):
        result.reason = "time parsed from the output is not positive"
    result.values = values
    result.ok = result.reason is None
    return result


def measurements_of(
    point: ScalePlan, repetition: int, result: RepetitionResult, spec: StudySpec, nodes: Optional[int] = None
) -> List[Measurement]:
    """The stored form of one repetition: one measurement per metric (`nodes` when the plan has none)."""
    nodes = point.nodes if point.nodes is not None else nodes
    out = []
    for metric in spec.metrics:
        value = result.values.get(metric) if result.ok else None
        detail: Dict[str, Any] = {
            "status": "ok" if result.ok else "failed",
            "exit_status": result.exit_status,
            "wall_s": round(result.wall_s, 6),
        }
        if not result.ok:
            detail["reason"] = result.reason
        if result.resolution.get(metric) is not None:
            detail["resolution_s"] = result.resolution[metric]
        if metric == "fom":
            detail["higher_is_better"] = spec.higher_is_better
            if result.timers:
                detail["timers"] = result.timers
        out.append(
            Measurement(
                benchmark=BENCHMARK,
                params={"nodes": nodes, "ranks": point.ranks, "ppn": point.ppn, "repetition": repetition, "size": None},
                metric=metric,
                unit=spec.unit(metric),
                value=value,
                n=1 if value is not None else 0,
                min=value,
                median=value,
                mean=value,
                max=value,
                detail=detail,
            )
        )
    return out


# ---- the study ---------------------------------------------------------------------------


class StudyObserver:
    """What a progress display is told; the default tells nobody."""

    def provenance_started(self) -> None: ...
    def repetition_started(self, point: ScalePlan, repetition: int, done: int, total: int, eta_s: Optional[float]) -> None: ...
    def repetition_finished(self, point: ScalePlan, repetition: int, result: RepetitionResult, done: int, total: int, eta_s: Optional[float]) -> None: ...


@dataclass
class StudyOutcome:
    run: Run
    done: int = 0
    failed: int = 0
    status: str = "complete"
    message: Optional[str] = None


def estimate_left(durations: Dict[ScalePlan, List[float]], remaining: Sequence[ScalePlan]) -> Optional[float]:
    """Seconds left: each remaining repetition costs the mean of its scale's finished ones
    (or of all finished ones, for a scale not started yet)."""
    every = [d for ds in durations.values() for d in ds]
    if not every:
        return None
    overall = sum(every) / len(every)
    total = 0.0
    for p in remaining:
        ds = durations.get(p)
        total += sum(ds) / len(ds) if ds else overall
    return total


def study_provenance(launcher: Launcher, timeout: float = 120.0, launch: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run-level facts and every host's facts for the largest launch of the study: the one
    collection every run kind uses (``workflows.hosts.run_provenance``)."""
    return run_provenance(launcher, timeout=timeout, launch=launch)


def run_study(
    store: Store,
    spec: StudySpec,
    launcher_for: Callable[[ScalePlan], Launcher],
    observer: Optional[StudyObserver] = None,
    command: Optional[str] = None,
) -> StudyOutcome:
    """Run the study into a new `scaling` run; raises RunInterrupted on Ctrl-C, RunFailed when
    no repetition succeeded (after recording the run's end either way)."""
    observer = observer or StudyObserver()
    launchers = {p: launcher_for(p) for p in spec.points}  # every layout checked before anything runs
    largest = max(spec.points, key=lambda p: (p.nodes or 0, p.ranks))
    observer.provenance_started()
    info = study_provenance(launchers[largest], launch=launchers[largest].command(spec.app))
    run_prov = dict(info["run"])
    run_prov["study"] = spec.describe()
    session = Session(store, kind=KIND, label=spec.label, tags=spec.tags, command=command, provenance=run_prov,
                      ranks=largest.ranks, unit="repetitions")
    outcome = StudyOutcome(run=session.run)
    order = [(p, r) for p in spec.points for r in range(1, spec.repeat + 1)]
    durations: Dict[ScalePlan, List[float]] = {}
    total = len(order)
    session.progress_total, session.done = total, 0
    with session:
        session.record_provenance(info)
        for index, (point, rep) in enumerate(order):
            eta = estimate_left(durations, [p for p, _ in order[index:]])
            observer.repetition_started(point, rep, index, total, eta)
            env_extra = {
                "FABRICBENCH_SCALE_NODES": str(point.nodes if point.nodes is not None else ""),
                "FABRICBENCH_SCALE_RANKS": str(point.ranks),
                "FABRICBENCH_SCALE_REPETITION": str(rep),
            }
            result = run_repetition(launchers[point], spec, env_extra)
            session.add_now(measurements_of(point, rep, result, spec, launchers[point].node_count()))
            if not result.ok or result.stderr_tail:
                tag = f"n{point.nodes or 0}r{point.ranks}"
                session.artifact(
                    f"scale/{tag}/rep{rep}",
                    {"ok": result.ok, "reason": result.reason, "stdout_tail": result.stdout_tail, "stderr_tail": result.stderr_tail},
                )
            outcome.done += 1
            session.done = outcome.done
            if result.ok:
                durations.setdefault(point, []).append(result.wall_s)
            else:
                outcome.failed += 1
            eta = estimate_left(durations, [p for p, _ in order[index + 1 :]])
            observer.repetition_finished(point, rep, result, index + 1, total, eta)
        ok = outcome.done - outcome.failed
        if ok == 0:
            raise RunFailed(f"every repetition failed ({outcome.failed} of {total})")
        if outcome.failed:
            session.note(f"{outcome.failed} of {total} repetitions failed (stored with their reasons, left out of the statistics)")
    outcome.status, outcome.message = session.status, session.message
    return outcome
