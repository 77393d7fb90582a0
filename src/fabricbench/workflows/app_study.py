"""`fabricbench study apps`: catalogued applications at several node counts on two or more lab fabrics.

For each fabric in turn the lab (its own name, default ``fbapps``) is brought up with that
fabric's shape, every application runs as a scaling study (``workflows.scaling.run_study``
with an ``AppCase``) on the first N lab nodes, and the lab is torn down at the end. Each
(application, fabric) is one run of kind ``scaling`` tagged ``app=NAME``, ``fabric=lab-1g`` (the lab's rate as the docs write it; ``lab-1gbit`` is read the same)
and ``study=ID`` (so the scaling analysis compares fabrics per application); the fabric's
name as the user gave it is in the run's study provenance (``application.study_fabric``).
"""
from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from fabricbench.apps import AppMissing, Recipe
from fabricbench.errors import UsageError
from fabricbench.workflows.scaling import StudyObserver, layout_for, plan_points, run_study
from fabricbench import numbers

SHAPE_KEYS = {"link", "nodes", "switches", "uplink", "degrade", "mtu"}


@dataclass
class StudyFabric:
    name: str
    shape: Dict[str, str]

    @property
    def link(self) -> str:
        return self.shape["link"]


def parse_fabric(text: str) -> StudyFabric:
    """'gige:1gbit' or 'slow:link=100mbit,switches=2,degrade=n3=50mbit' -> StudyFabric."""
    name, sep, rest = text.partition(":")
    if not sep or not name.strip() or not rest.strip():
        raise UsageError(f"--fabric {text!r}: expected NAME:LAB_SPEC, e.g. gige:1gbit or slow:link=100mbit,switches=2")
    shape: Dict[str, str] = {}
    for item in rest.split(","):
        key, eq, value = item.strip().partition("=")
        if not eq:
            key, value = "link", key
        if key not in SHAPE_KEYS:
            raise UsageError(f"--fabric {text!r}: unknown lab setting '{key}' (known: {', '.join(sorted(SHAPE_KEYS))})")
        shape[key] = value.strip()
    if "link" not in shape:
        raise UsageError(f"--fabric {text!r}: give the link rate, e.g. {name}:1gbit")
    return StudyFabric(name.strip(), shape)


def lab_spec_of(fabric: StudyFabric, nodes: int):
    from fabricbench.lab import LabSpec
    from fabricbench.lab.spec import parse_degrade

    s = fabric.shape
    try:
        return LabSpec(nodes=int(s.get("nodes", nodes)), link=s["link"], switches=int(s.get("switches", 1)),
                       uplink=s.get("uplink"), degrade=parse_degrade([s["degrade"]]) if s.get("degrade") else (),
                       mtu=int(s.get("mtu", 1500)))
    except ValueError as exc:
        raise UsageError(f"--fabric {fabric.name}: {exc}") from None


@dataclass
class AppStudySpec:
    fabrics: List[StudyFabric]
    recipes: List[Recipe]
    nodes: List[int]
    ppn: int = 1
    size: int = 1
    repeat: int = 3
    timeout: Optional[float] = None
    lab_name: str = "fbapps"

    def __post_init__(self):
        if len(self.fabrics) < 2:
            raise UsageError("give two or more --fabric NAME:LAB_SPEC to compare (e.g. --fabric gige:1gbit --fabric slow:100mbit)")
        if len({f.name for f in self.fabrics}) != len(self.fabrics):
            raise UsageError("two --fabric options have the same name")


@dataclass
class AppStudyOutcome:
    """A study of applications as it ran: its id, its runs' ids in order, how many repetitions failed."""

    study: str
    run_ids: List[int] = field(default_factory=list)
    failed: int = 0


def ensure_installed(recipes: List[Recipe], install: bool, say: Callable[[str], None]) -> None:
    """Every application present, or (install=True) installed with apt-get, or one line naming the packages."""
    from fabricbench.launch.procs import run_capture

    missing = sorted({r.package for r in recipes if not r.installed()})
    if not missing:
        return
    if not install:
        raise AppMissing(f"not installed: {', '.join(missing)}; install with: apt-get install {' '.join(missing)} "
                         "(or give --install, or run scripts/install-test-deps.sh apps)")
    if os.geteuid() != 0:
        raise AppMissing(f"--install needs root to install {', '.join(missing)}")
    say(f"installing {', '.join(missing)} with apt-get (a few minutes)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=900"]
    for argv in (apt + ["update", "-qq"], apt + ["install", "-y", "-qq", "--no-install-recommends", *missing]):
        rc, out, err = run_capture(argv, env=env, timeout=1800)
        if rc != 0:
            raise AppMissing(f"{' '.join(argv[:4])} ... failed (exit {rc}): {(err.strip() or out.strip()).splitlines()[-1:]}")
    still = [r.name for r in recipes if not r.installed()]
    if still:
        raise AppMissing(f"still missing after apt-get: {', '.join(still)}")


@contextmanager
def study_lab(lab_name: str):
    """While a study runs: its lab is the one the lab launcher finds (FABRICBENCH_LAB), and at the
    end, however it ends, the lab is down and FABRICBENCH_LAB is what it was."""
    from fabricbench.lab import core as lab_core

    before = os.environ.get("FABRICBENCH_LAB")
    os.environ["FABRICBENCH_LAB"] = lab_name
    try:
        yield
    finally:
        lab_core.down(lab_name)
        if before is None:
            os.environ.pop("FABRICBENCH_LAB", None)
        else:
            os.environ["FABRICBENCH_LAB"] = before


def fabric_lab_up(fabric: StudyFabric, nodes: int, lab_name: str, say: Callable[[str], None]):
    """Inside ``study_lab``: the lab brought (back) up with the fabric's shape for `nodes` nodes, said in one line."""
    from fabricbench.lab import core as lab_core

    lab_core.down(lab_name)
    lab = lab_core.Lab.up(lab_spec_of(fabric, nodes), lab_name)
    say(f"fabric {fabric.name}: lab '{lab_name}' up, {lab.describe()}")
    return lab


class _Say(StudyObserver):
    def __init__(self, say: Callable[[str], None], what: str):
        self.say, self.what = say, what

    def repetition_finished(self, point, repetition, result, done, total, eta_s) -> None:
        status = "ok" if result.ok else f"failed: {result.reason}"
        fom = result.values.get("fom")
        figure = f", figure of merit {numbers.short(fom, 6)}" if fom is not None else ""
        self.say(f"  {self.what}: {point.describe()}, repetition {repetition}: {numbers.fixed(result.wall_s, 1)} s{figure} ({status})")


def run_app_study(store, spec: AppStudySpec, say: Callable[[str], None] = lambda _t: None) -> AppStudyOutcome:
    """Bring the lab up per fabric, run every application at every scale; the runs' ids in order."""
    from fabricbench.analysis.peaks import lab_tag
    from fabricbench.lab.rates import parse_rate
    from fabricbench.launch import get_launcher
    from fabricbench.workflows.app import AppCase
    from fabricbench.workflows.scaling import StudySpec

    outcome = AppStudyOutcome(study=uuid.uuid4().hex[:8])
    points = plan_points(spec.nodes, spec.ppn, None)
    with study_lab(spec.lab_name):
        for fabric in spec.fabrics:
            lab = fabric_lab_up(fabric, max(spec.nodes), spec.lab_name, say)
            hosts = list(lab.node_names)
            for recipe in spec.recipes:
                case = AppCase(recipe, spec.size)
                case.context = {"study_fabric": fabric.name, "lab": lab.shape}
                try:
                    study = StudySpec(app=[], points=points, repeat=spec.repeat, timeout=spec.timeout, case=case,
                                      label=f"{recipe.name} on {fabric.name}",
                                      tags={"app": recipe.name, "fabric": lab_tag(parse_rate(lab.shape["link"])), "study": outcome.study})
                    done = run_study(store, study, lambda p: get_launcher("lab", layout_for(p, "lab", hosts, [])),
                                     observer=_Say(say, f"{recipe.name} on {fabric.name}"))
                finally:
                    case.cleanup()
                outcome.run_ids.append(done.run.id)
                outcome.failed += done.failed
    return outcome
