"""`fabricbench study osu-fabric` (seed 000): per fabric, OSU-style latency and bandwidth, the
fabric manager's view and applications, on the lab.

For each fabric in turn the lab (its own name) comes up with the fabric's link rate; the engine
measures ``latency`` and ``bw`` between two lab nodes (one run per fabric); a simulated
InfiniBand fabric (ibsim + OpenSM, ``workflows.fabric_sim``) with the fabric's width and speed
and the lab's host names is scanned with the real infiniband-diags (one ``fabric`` run: topology,
link width/speed, error counters, the subnet manager's state); every application runs at each
node count (``workflows.scaling.run_study``, one ``scaling`` run per application). Every run is
tagged ``study=ID`` and ``fabric=lab-RATE``; the lab and the simulation are taken down at the end.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from fabricbench.apps import Recipe
from fabricbench.errors import UsageError
from fabricbench.workflows.app_study import StudyFabric, fabric_lab_up, parse_fabric, study_lab

DEFAULT_FABRICS = ("fast:1gbit,ib=4xEDR", "slow:200mbit,ib=4xFDR")


@dataclass
class OsuFabric:
    fabric: StudyFabric
    width: int = 4
    speed: str = "EDR"
    args: List[str] = field(default_factory=list)  # on a cluster: the launcher arguments that select the fabric


def parse_cluster_fabric(text: str) -> OsuFabric:
    """'ib:--mca pml ucx' or 'eth:--mca pml ob1 --mca btl tcp,self': a name and the launcher arguments
    that make the ranks use that fabric on a cluster (the same hosts, another transport)."""
    import shlex

    name, sep, rest = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--fabric {text!r}: on a cluster give NAME:LAUNCHER_ARGS, e.g. 'eth:--mca btl tcp,self'")
    try:
        args = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"--fabric {text!r}: {exc}") from None
    return OsuFabric(StudyFabric(name.strip(), {}), args=args)


def parse_osu_fabric(text: str) -> OsuFabric:
    """'fast:1gbit,ib=4xEDR': a lab shape (see study apps) plus the simulated fabric's width x speed."""
    from fabricbench.planning.fabric_topology import parse_link

    head, sep, rest = text.partition(":")
    items = [i.strip() for i in rest.split(",")] if sep else []
    ib = [i for i in items if i.startswith("ib=")]
    shape = ",".join(i for i in items if not i.startswith("ib="))
    fabric = parse_fabric(f"{head}:{shape}" if sep else text)
    width, speed = 4, "EDR"
    if ib:
        try:
            w, s = parse_link(ib[-1][3:])
        except UsageError as exc:
            raise UsageError(f"--fabric {text!r}: ib={ib[-1][3:]}: {exc}") from None
        width, speed = w or width, s or speed
    return OsuFabric(fabric, width, speed)


@dataclass
class OsuFabricSpec:
    fabrics: List[OsuFabric]
    recipes: List[Recipe] = field(default_factory=list)
    app_nodes: List[int] = field(default_factory=lambda: [1, 2])
    sizes: str = "1:1M"
    time_budget: float = 0.05
    precision: float = 0.05
    repeat: int = 2
    app_repeat: int = 2
    size: int = 1
    timeout: Optional[float] = None
    lab_name: str = "fbosu"
    launcher: str = "lab"  # or mpirun / srun on a cluster: every fabric on `hosts`, selected by its args
    hosts: List[str] = field(default_factory=list)

    def __post_init__(self):
        if len(self.fabrics) < 2:
            raise UsageError("give two or more --fabric NAME:LAB_SPEC to compare (e.g. --fabric fast:1gbit --fabric slow:200mbit)")
        if len({f.fabric.name for f in self.fabrics}) != len(self.fabrics):
            raise UsageError("two --fabric options have the same name")

    @property
    def nodes(self) -> int:
        return max([2] + list(self.app_nodes))


@dataclass
class OsuFabricOutcome:
    study: str
    engine_runs: Dict[str, int] = field(default_factory=dict)  # fabric name -> run id
    fabric_runs: Dict[str, int] = field(default_factory=dict)
    app_runs: List[int] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)  # what could not be done, as the report says it

    @property
    def run_ids(self) -> List[int]:
        return list(self.engine_runs.values()) + list(self.fabric_runs.values()) + self.app_runs


def run_osu_fabric(store, spec: OsuFabricSpec, say: Callable[[str], None] = lambda _t: None) -> OsuFabricOutcome:
    """Every fabric in turn on the lab (or on a cluster's hosts); the runs' ids by fabric."""
    outcome = OsuFabricOutcome(study=uuid.uuid4().hex[:8])
    if spec.launcher != "lab":
        _on_cluster(store, spec, outcome, say)
        return outcome
    with study_lab(spec.lab_name):
        for index, osu in enumerate(spec.fabrics, 1):
            lab = fabric_lab_up(osu.fabric, spec.nodes, spec.lab_name, say)
            hosts = list(lab.node_names)
            tags = _tags(outcome.study, osu, lab.shape["link"])
            outcome.engine_runs[osu.fabric.name] = _engine(store, spec, osu, hosts, tags, say)
            outcome.fabric_runs[osu.fabric.name] = _fabric_view(store, _sim_name(spec.lab_name, index), osu, hosts, tags, say)
            outcome.app_runs += _apps(store, spec, osu, hosts, tags, lab.shape, say)
    return outcome


def _tags(study: str, osu: OsuFabric, link: str) -> Dict[str, str]:
    from fabricbench.analysis.peaks import lab_tag
    from fabricbench.lab.rates import parse_rate

    return {"study": study, "fabric": lab_tag(parse_rate(link))}


def _on_cluster(store, spec: OsuFabricSpec, outcome: OsuFabricOutcome, say) -> None:
    """The real fabric: every fabric's engine run and applications on the same hosts (its launcher
    arguments pick the transport), and one scan of the fabric the diagnostics see from here."""
    from fabricbench.workflows.fabric import FabricCannotScan, scan

    hosts = list(dict.fromkeys(spec.hosts))
    for osu in spec.fabrics:
        tags = {"study": outcome.study, "fabric": osu.fabric.name}
        say(f"fabric {osu.fabric.name}: {spec.launcher} {' '.join(osu.args) or '(no arguments)'}")
        outcome.engine_runs[osu.fabric.name] = _engine(store, spec, osu, hosts, tags, say, spec.launcher)
        outcome.app_runs += _apps(store, spec, osu, hosts, tags, None, say, spec.launcher)
    try:
        run, snapshot = scan(store, label="fabric", tags={"study": outcome.study})
        outcome.fabric_runs["the fabric"] = run.id
        say(f"  fabric manager's view: run {run.id}, {len(snapshot.links())} links")
    except FabricCannotScan as exc:
        outcome.problems.append(f"no fabric manager's view: {exc}")
        say(f"  no fabric manager's view: {exc}")


def _engine(store, spec: OsuFabricSpec, osu: OsuFabric, hosts: List[str], tags: Dict[str, str], say,
            launcher_name: str = "lab") -> int:
    from fabricbench import suite
    from fabricbench.launch import get_launcher
    from fabricbench.launch.base import Layout
    from fabricbench.workflows.engine import measure

    launcher = get_launcher(launcher_name, Layout(np=2, hosts=hosts[:2], ppn=1 if hosts else None, extra_args=list(osu.args)))
    extra = ["--time-budget", str(spec.time_budget), "--precision", str(spec.precision)]
    steps = suite.plan(["latency", "bw"], 2, sizes=spec.sizes, extra=extra)
    between = f"between {hosts[0]} and {hosts[1]}" if len(hosts) > 1 else "between two ranks"
    say(f"  latency and bandwidth {between} ({spec.sizes}, {spec.repeat} launches each)")
    done = measure(store, launcher, steps, label=f"osu on {osu.fabric.name}", tags=tags, timeout=spec.timeout,
                   repeat=spec.repeat, extra_provenance={"study": {"name": "osu-fabric", "fabric": osu.fabric.name}})
    say(f"  run {done.run.id}: {done.points} points ({done.status})")
    return done.run.id


def _fabric_view(store, name: str, osu: OsuFabric, hosts: List[str], tags: Dict[str, str], say) -> int:
    """Scan a simulated fabric of its own name: two fabrics are two sources, never one fabric seen twice."""
    from fabricbench.workflows import fabric_sim
    from fabricbench.workflows.fabric import scan
    from fabricbench.planning.fabric_topology import SimSpec

    fabric_sim.down(name)
    fabric_sim.up(SimSpec(hosts=hosts, switches=1, width=osu.width, speed=osu.speed), name)
    try:
        run, snapshot = scan(store, sim=name, use_sim=True, label=f"fabric of {osu.fabric.name}", tags=tags,
                             design={"width": osu.width, "speed": osu.speed})
    finally:
        fabric_sim.down(name)
    say(f"  fabric manager's view (simulated {osu.width}x {osu.speed}): run {run.id}, {_count(len(snapshot.switches()), 'switch', 'switches')}, "
        f"{_count(len(snapshot.cas()), 'HCA', 'HCAs')}, {_count(len(snapshot.links()), 'link', 'links')}")
    return run.id


def _sim_name(lab_name: str, index: int) -> str:
    """A simulator name (lower-case letters and digits, at most 12) of the study's lab and the fabric's place."""
    stem = re.sub(r"[^a-z0-9]", "", lab_name.lower()).lstrip("0123456789")[:10] or "fbosu"
    return f"{stem}{index}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _apps(store, spec: OsuFabricSpec, osu: OsuFabric, hosts: List[str], tags: Dict[str, str], shape, say,
          launcher: str = "lab") -> List[int]:
    from fabricbench.launch import get_launcher
    from fabricbench.workflows.app import AppCase
    from fabricbench.workflows.app_study import _Say
    from fabricbench.workflows.scaling import StudySpec, layout_for, plan_points, run_study

    ids = []
    points = plan_points(spec.app_nodes, 1, None)
    for recipe in spec.recipes:
        case = AppCase(recipe, spec.size)
        case.context = {"study_fabric": osu.fabric.name, **({"lab": shape} if shape else {})}
        try:
            study = StudySpec(app=[], points=points, repeat=spec.app_repeat, timeout=spec.timeout, case=case,
                              label=f"{recipe.name} on {osu.fabric.name}", tags=dict(tags, app=recipe.name))
            done = run_study(store, study, lambda p: get_launcher(launcher, layout_for(p, launcher, hosts, osu.args)),
                             observer=_Say(say, f"  {recipe.name} on {osu.fabric.name}"))
        finally:
            case.cleanup()
        ids.append(done.run.id)
    return ids
