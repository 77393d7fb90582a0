"""LAMMPS (Debian `lammps`, program `lmp`): Lennard-Jones and EAM copper melts in a cube of
10*size fcc cells per side (4000 x size^3 atoms).

The figure of merit is LAMMPS's own "Performance: ... timesteps/s"; the elapsed time is its
"Loop time of T on P procs for N steps with A atoms"; the timers are its "MPI task timing
breakdown" (Pair, Neigh, Comm, Output, Modify, Other: the average over ranks, seconds). LAMMPS
writes the same lines to its log file (-log), the application's own output file.

LJ is cheap per atom (2.5 sigma cut-off, ~37 neighbours): halo exchange is a large share
of a step, so it is the communication-heavy case. EAM does two passes over many more
neighbours per atom: the compute-heavy case.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

from fabricbench.apps.base import (NUMBER, AppMissing, AppResult, Figure, Prepared, Recipe, check_size, last_match, need,
                                   printed_step, write)

LOOP = re.compile(r"^Loop time of " + NUMBER + r" on (\d+) procs for (\d+) steps with (\d+) atoms", re.M)
PERFORMANCE = re.compile(r"^Performance: .*?" + NUMBER + r" timesteps/s", re.M)
BREAKDOWN_ROW = re.compile(r"^(\w+)\s*\|\s*(?:" + NUMBER + r")?\s*\|\s*" + NUMBER + r"\s*\|")
POTENTIALS = Path("/usr/share/lammps/potentials")

_COMMON_HEAD = """# fabricbench: {title}, size {size}
variable n equal {cells}
units {units}
atom_style atomic
lattice fcc {lattice}
region box block 0 ${{n}} 0 ${{n}} 0 ${{n}}
create_box 1 box
create_atoms 1 box
"""


def parse_breakdown(text: str) -> dict:
    """The last 'MPI task timing breakdown' table: section -> average seconds over ranks."""
    start = text.rfind("MPI task timing breakdown")
    if start < 0:
        return {}
    timers = {}
    for line in text[start:].splitlines()[3:]:
        m = BREAKDOWN_ROW.match(line)
        if not m:
            break
        timers[m.group(1)] = float(m.group(3))
    return timers


class LammpsRecipe(Recipe):
    package = "lammps"
    executable = "lmp"
    field = "molecular dynamics"
    fom = Figure("timesteps/s", "timesteps/s", True)
    size_note = "a cube of 10*size fcc cells per side: 4000*size^3 atoms"
    output_file = "log.lammps"
    steps = 200
    units = "lj"
    lattice = "0.8442"
    body = ""

    def input_text(self, size: int) -> str:
        head = _COMMON_HEAD.format(title=self.title, size=size, cells=10 * size, units=self.units, lattice=self.lattice)
        return head + self.body.format(steps=self.steps, potentials=POTENTIALS)

    def prepare(self, folder: Path, size: int, ranks: int) -> Prepared:
        check_size(self, size)
        write(folder, "in.lammps", self.input_text(size))
        return Prepared(folder, size, ranks)

    def command(self, prepared: Prepared) -> List[str]:
        f = prepared.folder.resolve()
        return [self.executable, "-nocite", "-in", str(f / "in.lammps"), "-log", str(f / self.output_file)]

    def parse(self, stdout: str, prepared: Optional[Prepared] = None) -> AppResult:
        loop = need(last_match(LOOP, stdout), self, "'Loop time of ...'")
        perf = need(last_match(PERFORMANCE, stdout), self, "'Performance: ... timesteps/s'")
        return AppResult(
            fom=float(perf.group(1)),
            elapsed_s=float(loop.group(1)),
            timers=parse_breakdown(stdout),
            facts={"ranks": int(loop.group(2)), "steps": int(loop.group(3)), "atoms": int(loop.group(4))},
            resolution={"elapsed": printed_step(loop.group(1)), "fom": printed_step(perf.group(1))},
        )


class LammpsLJ(LammpsRecipe):
    name = "lammps-lj"
    title = "LAMMPS Lennard-Jones melt (fcc 0.8442, cut-off 2.5 sigma, 200 steps)"
    traffic = "halo exchange of ghost atoms every step; little work per atom, so communication is a large share"
    body = """mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 100
run {steps}
"""


class LammpsEAM(LammpsRecipe):
    name = "lammps-eam"
    title = "LAMMPS EAM copper melt (Cu_u3.eam, 100 steps)"
    traffic = "two halo exchanges per step, but much more work per atom: the compute-heavy case"
    steps = 100
    units = "metal"
    lattice = "3.615"
    body = """pair_style eam
pair_coeff 1 1 {potentials}/Cu_u3.eam
velocity all create 1600.0 376847 loop geom
neighbor 1.0 bin
neigh_modify every 1 delay 5 check yes
fix 1 all nve
timestep 0.005
thermo 50
run {steps}
"""

    def find(self) -> str:
        path = super().find()
        if not (POTENTIALS / "Cu_u3.eam").is_file():
            raise AppMissing(f"{self.name}: {POTENTIALS}/Cu_u3.eam is missing; install the Debian package 'lammps-data'")
        return path


RECIPES = [LammpsLJ(), LammpsEAM()]
