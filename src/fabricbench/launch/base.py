"""The launcher interface and its registry."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Type

from fabricbench.errors import FabricbenchError
from fabricbench.registry import Registry


class LaunchError(FabricbenchError):
    """A launch could not be prepared (no MPI, bad hostfile, no lab, ...)."""


@dataclass
class Layout:
    """Where ranks go: a rank count and optionally hosts and ranks per node."""

    np: Optional[int] = None
    hosts: List[str] = field(default_factory=list)
    hostfile: Optional[str] = None
    ppn: Optional[int] = None
    extra_args: List[str] = field(default_factory=list)


class Launcher:
    """Turns a program and a layout into a command line and an environment."""

    name = "base"

    def __init__(self, layout: Layout):
        self.layout = layout

    def command(self, program: Sequence[str]) -> List[str]:
        raise NotImplementedError

    def environment(self) -> Dict[str, str]:
        """The environment to run command() with (a copy of os.environ plus what the launcher needs)."""
        return dict(os.environ)

    def node_count(self) -> int:
        """How many distinct hosts the ranks span (1 for a local run)."""
        return max(1, len(set(self.layout.hosts)))

    def provenance(self) -> Dict[str, Any]:
        """Facts about the launch a run records with its provenance (e.g. a lab's link rates)."""
        return {}

    def one_machine(self) -> bool:
        """Every "node" is this machine (the lab): they share its memory and cores."""
        return False


def _absent(name: str, exc: Exception) -> List[Type[Launcher]]:
    """A launcher module that is not there registers nothing; any other import error is raised."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == f"fabricbench.launch.{name}":
        return []
    raise exc


LAUNCHERS: Registry[Type[Launcher]] = Registry(
    "launcher", "fabricbench.launch", modules=("mpirun", "srun", "lab"), broken=_absent,
    unknown=lambda name, known: LaunchError(f"unknown launcher '{name}'; choose one of: {', '.join(sorted(known))}"))
register = LAUNCHERS.add  # the class decorator each launcher module uses


def launcher_names() -> List[str]:
    return sorted(LAUNCHERS.names())


def get_launcher(name: str, layout: Layout) -> Launcher:
    return LAUNCHERS.get(name)(layout)
