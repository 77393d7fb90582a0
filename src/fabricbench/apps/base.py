"""What every catalogued application provides: a ``Recipe`` (find it, make its input, run it, read it).

A recipe never starts a process itself. ``prepare`` writes the input into a folder and returns
the serial set-up commands to run there (a mesh generator, a pseudopotential generator) with
``launch.procs``; ``command`` gives the program line for N ranks, which a launcher wraps;
``parse`` reads the program's standard output into an ``AppResult``: the figure of merit, the
application's own elapsed time and its own timers (seconds, by section).
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from fabricbench.errors import FabricbenchError


class AppMissing(FabricbenchError):
    """The application's program is not installed; the message names the package to install."""

    exit_code = 2


class AppOutputError(FabricbenchError):
    """The application's output lacks what the recipe reads (it failed, or printed another format)."""


@dataclass(frozen=True)
class Figure:
    """A figure of merit: what it is called, its unit, and which way is better."""

    name: str
    unit: str
    higher_is_better: bool

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


@dataclass
class AppResult:
    """What one run of an application said about itself."""

    fom: float
    elapsed_s: float  # the application's own elapsed (wall) time of the measured part
    timers: Dict[str, float] = field(default_factory=dict)  # section -> seconds (the app's own breakdown)
    facts: Dict[str, object] = field(default_factory=dict)  # steps, atoms, iterations, ...
    # The step of a figure as the application printed it, seconds ("elapsed", a timer's name, "fom"):
    # OpenFOAM's ClockTime counts whole seconds (1.0), so 1 s and 2 s are one tick apart.
    resolution: Dict[str, float] = field(default_factory=dict)


@dataclass
class Prepared:
    """An input made in a folder: the set-up commands still to run there, in order."""

    folder: Path
    size: int
    ranks: int
    setup: List[List[str]] = field(default_factory=list)


class Recipe:
    """One application with one standard input; subclasses fill in the class attributes and methods."""

    name = ""  # the catalogue name, e.g. "lammps-lj"
    title = ""  # one line: application and case
    field = ""  # the science field (molecular dynamics, electronic structure, CFD)
    package = ""  # the Debian package that installs it
    executable = ""  # the program on PATH
    fom = Figure("", "", True)
    size_note = ""  # what --size scales
    traffic = ""  # what it communicates: why the fabric matters to it
    output_file = ""  # the application's own output file, relative to the folder

    # -- finding it --------------------------------------------------------------------------
    def find(self) -> str:
        """The program's path; AppMissing naming the package when it is not installed."""
        path = shutil.which(self.executable)
        if path is None:
            raise AppMissing(f"{self.name}: '{self.executable}' is not installed; install the Debian package "
                             f"'{self.package}' (apt-get install {self.package}, or scripts/install-test-deps.sh apps)")
        return path

    def installed(self) -> bool:
        try:
            self.find()
            return True
        except AppMissing:
            return False

    def environment(self) -> Dict[str, str]:
        """Variables the program needs on every rank (passed through `env`, so remote ranks get them)."""
        return {}

    # -- the input ---------------------------------------------------------------------------
    def prepare(self, folder: Path, size: int, ranks: int) -> Prepared:
        raise NotImplementedError

    def command(self, prepared: Prepared) -> List[str]:
        """The program line of one rank (without the launcher)."""
        raise NotImplementedError

    def argv(self, prepared: Prepared) -> List[str]:
        """command() with the recipe's environment in front (`env K=V prog ...`) when it has one."""
        env = self.environment()
        prefix = ["env"] + [f"{k}={v}" for k, v in sorted(env.items())] if env else []
        return prefix + self.command(prepared)

    # -- the output --------------------------------------------------------------------------
    def parse(self, stdout: str, prepared: Optional[Prepared] = None) -> AppResult:
        raise NotImplementedError

    def describe(self) -> Dict[str, object]:
        return {
            "name": self.name, "title": self.title, "field": self.field, "package": self.package,
            "executable": self.executable, "fom": self.fom.name, "fom_unit": self.fom.unit,
            "higher_is_better": self.fom.higher_is_better, "size": self.size_note, "traffic": self.traffic,
            "output_file": self.output_file,
        }


# ---- helpers the recipes share ------------------------------------------------------------

NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"


def printed_step(text: str) -> float:
    """The resolution of a number as printed: '2' -> 1, '1.51' -> 0.01, '1.2e-3' -> 0.0001, '1200' -> 1."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def last_match(pattern: "re.Pattern[str]", text: str) -> Optional["re.Match[str]"]:
    found = None
    for m in pattern.finditer(text):
        found = m
    return found


def need(match: Optional["re.Match[str]"], recipe: Recipe, what: str) -> "re.Match[str]":
    if match is None:
        raise AppOutputError(f"{recipe.name}: {what} not found in the output of {recipe.executable}")
    return match


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def check_size(recipe: Recipe, size: int, largest: int = 64) -> None:
    from fabricbench.errors import UsageError

    if not 1 <= size <= largest:
        raise UsageError(f"{recipe.name}: --size must be 1 to {largest} ({recipe.size_note})")


def package_version(package: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The installed Debian package's version from dpkg's status file (None elsewhere)."""
    status = Path(os.environ.get("FABRICBENCH_DPKG_STATUS", "/var/lib/dpkg/status"))
    try:
        text = status.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for block in text.split("\n\n"):
        if f"\nPackage: {package}\n" in f"\n{block}\n" or block.startswith(f"Package: {package}\n"):
            m = re.search(r"^Version: (.+)$", block, re.M)
            if m and "install ok installed" in block:
                return m.group(1).strip()
    return None


def factor_grid(ranks: int, dims: int = 2) -> Sequence[int]:
    """ranks as dims factors, as even as possible, largest first (6 -> (3, 2))."""
    best = (ranks,) + (1,) * (dims - 1)
    if dims == 2:
        for a in range(int(ranks ** 0.5), 0, -1):
            if ranks % a == 0:
                best = (ranks // a, a)
                break
    return best
