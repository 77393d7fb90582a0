"""Running a catalogued application (``apps/``) through a launcher and recording it.

``AppCase(recipe, size, root)`` makes the recipe's input once per rank count in a folder
under ``root`` (running its serial set-up commands there) and runs it: ``run`` gives an
``AppOutcome`` (figure of merit, own elapsed time, own timers, wall time of the launch,
optionally the MPI profile); ``repetition`` gives what ``workflows.scaling`` stores, so
``fabricbench scale --app NAME`` uses the same code.

``run_app(store, spec, launcher)`` records one run of kind ``app`` through the one run
lifecycle (``workflows.session``):

    benchmark "app", params {"app", "size", "ranks", "nodes"}
      metric "runtime" (s: MPI_Init to MPI_Finalize of the slowest rank, through the profiler:
                        the figure ``predict`` targets and ``predict --check`` holds it against)
      metric "fom"     (the recipe's unit; detail {"name", "higher_is_better", "facts"})
      metric "time"    (s: the application's own elapsed time)
      metric "wall"    (s: the whole launch, start-up included)
    benchmark "app", params {..., "section": NAME}, metric "timer" (s: the application's own breakdown)

Every point's detail carries ``resolution_s``, the step of the figure as it was measured or
printed (OpenFOAM's ClockTime: 1 s), and ``source``; a figure whose resolution is not well
below it is not a headline (``headline_figure``).

The ranks always run under libfabricbench-prof when it is built (its wrappers cost tens of
nanoseconds per MPI call), since only it sees MPI_Init and MPI_Finalize; with
``profile=True`` the profile is also kept as the run's ``profile`` artifact (``fabricbench
show-profile RUN`` reads it, ``predict RUN`` predicts from it).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from fabricbench.apps import AppOutputError, AppResult, Prepared, Recipe
from fabricbench.analysis.app_figures import RUNTIME, WALL_RESOLUTION_S, profile_runtime
from fabricbench.apps.base import package_version
from fabricbench.errors import FabricbenchError
from fabricbench.launch import Launcher
from fabricbench.launch.failure import explain_failure
from fabricbench.launch.procs import guard, run_capture
from fabricbench.store import Measurement, Run
from fabricbench.workflows.scaling import OUTPUT_TAIL, RepetitionResult, launch_and_collect, study_provenance
from fabricbench.workflows.session import RunFailed, Session
from fabricbench import numbers

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

BENCHMARK = "app"
KIND = "app"
SETUP_TIMEOUT_S = 600.0


class SetupFailed(FabricbenchError):
    """A set-up command of a recipe (mesh, pseudopotential) failed."""


@dataclass
class AppOutcome:
    ok: bool
    wall_s: float
    exit_status: Optional[int]
    result: Optional[AppResult] = None
    reason: Optional[str] = None
    stdout: str = ""
    stderr_tail: str = ""
    profile: Optional[Dict[str, Any]] = None
    profile_note: Optional[str] = None


class AppCase:
    """One application at one size: inputs made per rank count under `root`, run through launchers."""

    def __init__(self, recipe: Recipe, size: int = 1, root: Optional[Path] = None, keep: bool = False):
        self.recipe = recipe
        self.size = size
        self.program = recipe.find()
        self.keep = keep or root is not None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix=f"fabricbench-{recipe.name}-"))
            guard().remove_on_death(str(root))
        self.root = Path(root).resolve()
        self._prepared: Dict[int, Prepared] = {}
        self.context: Dict[str, Any] = {}  # what a study adds to the run's description (the fabric's name)

    def describe(self) -> Dict[str, Any]:
        return dict(self.recipe.describe(), size=self.size, program=self.program,
                    version=package_version(self.recipe.package), **self.context)

    def prepared(self, ranks: int) -> Prepared:
        """The input for `ranks` ranks (made on first use: files, then the set-up commands)."""
        if ranks not in self._prepared:
            folder = self.root / f"np{ranks}"
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            prepared = self.recipe.prepare(folder, self.size, ranks)
            env = dict(os.environ, **self.recipe.environment())
            for argv in prepared.setup:
                try:
                    rc, out, err = run_capture(argv, env=env, timeout=SETUP_TIMEOUT_S, cwd=str(folder))
                except (OSError, TimeoutError) as exc:
                    raise SetupFailed(f"{self.recipe.name}: set-up step '{' '.join(argv[:2])}' in {folder} failed: {exc}") from None
                (folder / f"setup-{Path(argv[0]).name}.log").write_text(out + err, encoding="utf-8")
                if rc != 0:
                    last = (err.strip() or out.strip()).splitlines()[-3:]
                    raise SetupFailed(f"{self.recipe.name}: set-up step '{argv[0]}' exited {rc} in {folder}: "
                                      f"{' / '.join(l.strip() for l in last if l.strip()) or 'no output'}")
            self._prepared[ranks] = prepared
        return self._prepared[ranks]

    def run(self, launcher: Launcher, timeout: Optional[float] = None, env_extra: Optional[Dict[str, str]] = None,
            profile: bool = False) -> AppOutcome:
        """Run once through `launcher` in the input's folder and read what the application printed."""
        ranks = launcher.layout.np or 1
        prepared = self.prepared(ranks)
        env = launcher.environment()
        env.update(env_extra or {})
        profile_path = None
        if profile:
            profile_path = prepared.folder / "fabricbench-profile.json"
            if profile_path.exists():
                profile_path.unlink()
            args, profile_env = _profile_args(launcher, profile_path)
            launcher.layout.extra_args = args + list(launcher.layout.extra_args)
            env.update(profile_env)
        argv = launcher.command(self.recipe.argv(prepared))
        done = launch_and_collect(argv, env, timeout, cwd=str(prepared.folder))
        (prepared.folder / "stdout.log").write_text(done.stdout, encoding="utf-8")
        outcome = AppOutcome(False, done.wall_s, done.returncode, stdout=done.stdout, stderr_tail=done.stderr[-OUTPUT_TAIL:])
        if done.timed_out:
            outcome.reason = f"timeout: still running after {numbers.short(timeout)} s (stopped)"
        elif done.returncode != 0:
            outcome.reason = f"exit status {done.returncode}: {explain_failure(done.stderr)}"
        else:
            try:
                outcome.result = self.recipe.parse(done.stdout, prepared)
                outcome.ok = True
            except AppOutputError as exc:
                outcome.reason = str(exc)
        if profile_path is not None:
            outcome.profile, outcome.profile_note = _read_profile(profile_path)
        return outcome

    def repetition(self, launcher: Launcher, timeout: Optional[float], env_extra: Dict[str, str]) -> RepetitionResult:
        """One repetition of a scaling study (time: the app's own elapsed time; fom: its figure of merit)."""
        o = self.run(launcher, timeout, env_extra)
        values = {"time": o.result.elapsed_s, "fom": o.result.fom} if o.result else {"time": None, "fom": None}
        steps = (o.result.resolution or {}) if o.result else {}
        return RepetitionResult(o.ok, o.wall_s, values, o.exit_status, o.reason, o.stdout[-OUTPUT_TAIL:], o.stderr_tail,
                                timers=dict(o.result.timers) if o.result else {},
                                resolution={"time": steps.get("elapsed"), "fom": steps.get("fom")})

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def _profile_args(launcher: Launcher, path: Path) -> "tuple[List[str], Dict[str, str]]":
    """Launcher arguments and environment that hand libfabricbench-prof to every rank (see workflows.profile)."""
    from fabricbench.native import profiler_library
    from fabricbench.workflows.profile import preload_args

    flavour = None
    if launcher.name in ("mpirun", "lab"):  # both run the mpirun on PATH; srun and others take the environment
        from fabricbench.launch.mpi import detect_mpi

        flavour = detect_mpi().flavour
    return preload_args(flavour, str(profiler_library()), str(path))


def _read_profile(path: Path):
    from fabricbench.analysis.profile_data import ProfileError, load_profile

    if not path.exists():
        return None, "no profile was produced (the program did not reach MPI_Finalize)"
    try:
        return load_profile(path), "MPI profile collected from every rank"
    except ProfileError as exc:
        return None, f"the profile is unusable: {exc}"


# ---- one recorded run ----------------------------------------------------------------------


@dataclass
class AppSpec:
    recipe: Recipe
    size: int = 1
    timeout: Optional[float] = None
    profile: bool = False
    workdir: Optional[Path] = None  # keep the input and output here (else a temporary folder, removed)
    label: Optional[str] = None
    tags: Dict[str, str] = field(default_factory=dict)


def measurements_of(case: AppCase, launcher: Launcher, outcome: AppOutcome) -> List[Measurement]:
    """The stored form of one application run (see the module docstring)."""
    r, recipe = outcome.result, case.recipe
    assert r is not None
    params = {"app": recipe.name, "size": case.size, "ranks": launcher.layout.np or 1, "nodes": launcher.node_count()}
    steps = r.resolution or {}

    def point(metric: str, unit: str, value: float, extra: Optional[Dict[str, Any]] = None, detail=None,
              resolution: Optional[float] = None, source: Optional[str] = None) -> Measurement:
        detail = dict(detail or {}, resolution_s=resolution, source=source)
        return Measurement(benchmark=BENCHMARK, params=dict(params, **(extra or {})), metric=metric, unit=unit,
                           value=value, n=1, min=value, median=value, mean=value, max=value, detail=detail)

    own = f"{recipe.name}'s own output"
    out = []
    runtime = profile_runtime(outcome.profile)
    if runtime is not None:
        out.append(point(RUNTIME, "s", runtime["value"], resolution=runtime["resolution_s"],
                         source=f"libfabricbench-prof: MPI_Init to MPI_Finalize, slowest rank ({runtime['rank']})"))
    out += [
        point("fom", recipe.fom.unit, r.fom, detail={"name": recipe.fom.name, "higher_is_better": recipe.fom.higher_is_better,
                                                     "facts": r.facts}, resolution=steps.get("fom"), source=own),
        point("time", "s", r.elapsed_s, resolution=steps.get("elapsed"), source=own),
        point("wall", "s", round(outcome.wall_s, 6), resolution=WALL_RESOLUTION_S,
              source=f"the {launcher.name} launch, start-up and shut-down included"),
    ]
    out += [point("timer", "s", v, {"section": k}, resolution=steps.get(k), source=own) for k, v in r.timers.items()]
    return out


def _profiler_built() -> bool:
    from fabricbench.native import NativeMissing, profiler_library

    try:
        profiler_library()
        return True
    except NativeMissing:
        return False


def run_app(store: Store, spec: AppSpec, launcher: Launcher, command: Optional[str] = None) -> "tuple[Run, AppOutcome]":
    """Run the application once into a new run of kind `app`; RunFailed (run kept, failed) when it fails."""
    case = AppCase(spec.recipe, spec.size, spec.workdir)
    try:
        info = study_provenance(launcher, launch=launcher.command(spec.recipe.argv(case.prepared(launcher.layout.np or 1))))
        run_prov = dict(info["run"])
        run_prov["application"] = case.describe()
        tags = dict(spec.tags)
        tags.setdefault("app", spec.recipe.name)
        session = Session(store, kind=KIND, label=spec.label, tags=tags, command=command, provenance=run_prov,
                          ranks=launcher.layout.np)
        with session:
            session.record_provenance(info)
            outcome = case.run(launcher, spec.timeout, profile=spec.profile or _profiler_built())
            if outcome.profile is not None and spec.profile:
                session.artifact("profile", outcome.profile)
            if not outcome.ok:
                session.artifact("app/output", {"stdout_tail": outcome.stdout[-OUTPUT_TAIL:], "stderr_tail": outcome.stderr_tail})
                raise RunFailed(f"{spec.recipe.name} at {launcher.layout.np} ranks: {outcome.reason}")
            session.add_now(measurements_of(case, launcher, outcome))
            if outcome.profile is None:
                session.note(f"{outcome.profile_note or 'libfabricbench-prof is not built'}: no MPI_Init to MPI_Finalize "
                             "time (runtime) stored")
        return session.run, outcome
    finally:
        case.cleanup()
