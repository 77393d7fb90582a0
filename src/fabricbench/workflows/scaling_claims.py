"""`fabricbench study scaling-claims` (seed 003): applications at several node counts, once per
setting of a tuning variable, on the lab.

The lab (its own name) comes up once at the study's link rate; for every application and every
setting of the variable (an MCA parameter such as ``btl_tcp_eager_limit`` passed as ``--mca NAME
VALUE``, or an environment variable such as ``UCX_RNDV_THRESH`` passed as ``-x NAME=VALUE``) one
scaling run (``workflows.scaling.run_study``) is stored, tagged ``app``, ``NAME=VALUE``,
``fabric`` and ``study``, so that the scaling analysis compares the settings by the variable's tag.
The launch line the run records holds the setting (the configuration disclosure reads it back).
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from fabricbench.apps import Recipe
from fabricbench.errors import UsageError
from fabricbench.workflows.app_study import AppStudyOutcome

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass
class Tuning:
    name: str
    values: List[str]

    @property
    def is_env(self) -> bool:
        """An environment variable (UCX_RNDV_THRESH) rather than an MCA parameter (btl_tcp_eager_limit)."""
        return self.name.upper() == self.name

    def launch_args(self, value: str, launcher: str = "lab") -> List[str]:
        """How the setting reaches the ranks: mpirun's --mca / -x, or srun's --export (an MCA
        parameter as its OMPI_MCA_ variable)."""
        if launcher == "srun":
            name = self.name if self.is_env else f"OMPI_MCA_{self.name}"
            return [f"--export=ALL,{name}={value}"]
        return ["-x", f"{self.name}={value}"] if self.is_env else ["--mca", self.name, value]


def parse_tuning(text: str) -> Tuning:
    """'btl_tcp_eager_limit=4096,65536' -> Tuning; two or more distinct settings."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    values = [v.strip() for v in rest.split(",") if v.strip()]
    if not sep or not _NAME.match(name):
        raise UsageError(f"--tune {text!r}: expected NAME=VALUE,VALUE, e.g. btl_tcp_eager_limit=4096,65536")
    if len(values) < 2 or len(set(values)) != len(values):
        raise UsageError(f"--tune {text!r}: give two or more different settings to compare")
    return Tuning(name, values)


@dataclass
class ScalingClaimsSpec:
    tuning: Tuning
    recipes: List[Recipe]
    nodes: List[int]
    link: str = "1gbit"
    ppn: int = 1
    repeat: int = 2
    size: int = 1
    timeout: Optional[float] = None
    lab_name: str = "fbclaims"
    launcher: str = "lab"  # or mpirun / srun on a cluster: the hosts given, no lab
    hosts: List[str] = field(default_factory=list)

    def __post_init__(self):
        if not self.recipes:
            raise UsageError("give one or more applications (--apps)")
        if len(self.nodes) < 2:
            raise UsageError("give two or more node counts (--nodes 1,2): efficiency needs a base and a larger scale")


# What a scaling-claims study leaves is what an application study leaves: its id, its runs' ids, failed repetitions.
ScalingClaimsOutcome = AppStudyOutcome


def run_scaling_claims(store, spec: ScalingClaimsSpec, say: Callable[[str], None] = lambda _t: None) -> ScalingClaimsOutcome:
    """Every application at every node count, once per setting; the runs' ids in order."""
    if spec.launcher != "lab":
        outcome = ScalingClaimsOutcome(study=uuid.uuid4().hex[:8])
        _sweep(store, spec, outcome, spec.launcher, list(spec.hosts), {}, None, say)
        return outcome
    from fabricbench.analysis.peaks import lab_tag
    from fabricbench.lab import LabSpec
    from fabricbench.lab import core as lab_core
    from fabricbench.lab.rates import parse_rate
    from fabricbench.workflows.app_study import study_lab

    outcome = ScalingClaimsOutcome(study=uuid.uuid4().hex[:8])
    with study_lab(spec.lab_name):
        lab_core.down(spec.lab_name)
        try:
            lab_spec = LabSpec(nodes=max(spec.nodes), link=spec.link)
        except ValueError as exc:
            raise UsageError(f"--link {spec.link}: {exc}") from None
        lab = lab_core.Lab.up(lab_spec, spec.lab_name)
        say(f"lab '{spec.lab_name}' up, {lab.describe()}")
        hosts = list(lab.node_names)
        _sweep(store, spec, outcome, "lab", hosts, lab.shape, lab_tag(parse_rate(lab.shape["link"])), say)
    return outcome


def _sweep(store, spec: ScalingClaimsSpec, outcome: ScalingClaimsOutcome, launcher: str, hosts: List[str],
           shape, fabric: Optional[str], say: Callable[[str], None]) -> None:
    """Every application, every setting: one scaling run each, through `launcher` on `hosts`."""
    from fabricbench.launch import get_launcher
    from fabricbench.workflows.app import AppCase
    from fabricbench.workflows.app_study import _Say
    from fabricbench.workflows.scaling import StudySpec, layout_for, plan_points, run_study

    points = plan_points(spec.nodes, spec.ppn, None)
    tuning = spec.tuning
    for recipe in spec.recipes:
        for value in tuning.values:
            case = AppCase(recipe, spec.size)
            case.context = {"tuning": {tuning.name: value}, **({"lab": shape} if shape else {})}
            setting = f"{tuning.name}={value}"
            tags = {"app": recipe.name, tuning.name: value, "study": outcome.study, **({"fabric": fabric} if fabric else {})}
            try:
                study = StudySpec(app=[], points=points, repeat=spec.repeat, timeout=spec.timeout, case=case,
                                  label=f"{recipe.name} {setting}", tags=tags)
                args = tuning.launch_args(value, launcher)
                done = run_study(store, study, lambda p, a=args: get_launcher(launcher, layout_for(p, launcher, hosts, a)),
                                 observer=_Say(say, f"{recipe.name} {setting}"))
            finally:
                case.cleanup()
            outcome.run_ids.append(done.run.id)
            outcome.failed += done.failed
