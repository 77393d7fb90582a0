"""Quantum ESPRESSO (Debian `quantum-espresso`, program `pw.x`): an SCF of crystalline silicon,
a supercell of size x 1 x 1 conventional cubic cells (8 x size atoms, LDA, 20 Ry cut-off).

Debian ships no pseudopotentials, so the set-up step generates one with QE's own atomic
code (``ld1.x``: a Troullier-Martins norm-conserving Si potential, PZ LDA): nothing is
downloaded. The figure of merit is the wall time per SCF iteration: the "electrons" timer's
WALL divided by "convergence has been achieved in N iterations"; the elapsed time is the
"PWSCF : ... WALL" total; the timers are every "name : ...s CPU ...s WALL" line (wall
seconds). QE writes the same timings, and the iteration count, to its own output file
``out/si.save/data-file-schema.xml``.

Plane waves are distributed over the ranks, so every FFT is an all-to-all transpose
(``fft_scatt_*``): the bandwidth-heavy case.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional

from fabricbench.apps.base import AppOutputError, AppResult, Figure, Prepared, Recipe, check_size, last_match, need, write
from fabricbench import numbers

TIME = r"((?:\d+h\s*)?(?:\d+m\s*)?[\d.]+s)"
TIMER = re.compile(r"^\s*([\w:]+)\s*:\s*" + TIME + r" CPU\s+" + TIME + r" WALL", re.M)
CONVERGED = re.compile(r"convergence has been achieved in\s+(\d+) iterations")
UPF = "Si.pz-tm.UPF"

LD1_INPUT = """&input
   title='Si', zed=14.0, rel=0, config='[Ne] 3s2 3p2', iswitch=3, dft='PZ'
/
&inputp
   pseudotype=1, file_pseudopw='{upf}', author='fabricbench', lloc=-1, rcloc=2.2, tm=.true.
/
2
3S  1  0  2.00  0.00  2.00  2.00  0.0
3P  2  1  2.00  0.00  2.20  2.20  0.0
"""

CUBE = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5),
        (0.25, 0.25, 0.25), (0.75, 0.75, 0.25), (0.75, 0.25, 0.75), (0.25, 0.75, 0.75)]


def seconds(text: str) -> float:
    """QE's '1h 2m 3.45s' / '2m 3.45s' / '3.45s' as seconds."""
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)([hms])", text):
        total += float(value) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


def timers_of(stdout: str) -> Dict[str, float]:
    """Every QE timer line's wall seconds (the last line of each name wins)."""
    return {m.group(1): seconds(m.group(3)) for m in TIMER.finditer(stdout)}


WALL_STEP_S = 0.01  # pw.x prints its WALL timers with two decimals ("0.62s WALL", "1m 2.31s WALL")


class PwSilicon(Recipe):
    name = "qe-si"
    title = "Quantum ESPRESSO pw.x SCF of silicon (LDA, 20 Ry, Gamma-centred 1x1x1 k-mesh, generated TM pseudopotential)"
    field = "electronic structure"
    package = "quantum-espresso"
    executable = "pw.x"
    fom = Figure("wall time per SCF iteration", "s/iteration", False)
    size_note = "a supercell of size x 1 x 1 cubic cells: 8*size atoms"
    traffic = "plane waves distributed over ranks: every FFT is an all-to-all transpose, bandwidth-heavy"
    output_file = "out/si.save/data-file-schema.xml"

    def prepare(self, folder: Path, size: int, ranks: int) -> Prepared:
        check_size(self, size, largest=16)
        write(folder, "ld1.in", LD1_INPUT.format(upf=UPF))
        write(folder, "scf.in", self.scf_input(size))
        return Prepared(folder, size, ranks, setup=[["ld1.x", "-in", "ld1.in"]])

    def scf_input(self, size: int) -> str:
        a = 10.26  # bohr, the LDA lattice constant of Si
        positions = "\n".join(f"Si {numbers.fixed((x + i) / size, 6)} {numbers.fixed(y, 6)} {numbers.fixed(z, 6)}" for i in range(size) for x, y, z in CUBE)
        return f"""&control
   calculation='scf', prefix='si', pseudo_dir='./', outdir='./out'
/
&system
   ibrav=8, celldm(1)={a * size}, celldm(2)={numbers.fixed(1 / size, 6)}, celldm(3)={numbers.fixed(1 / size, 6)}, nat={8 * size}, ntyp=1, ecutwfc=20.0
/
&electrons
   conv_thr=1.0d-8, mixing_beta=0.7
/
ATOMIC_SPECIES
Si 28.086 {UPF}
ATOMIC_POSITIONS crystal
{positions}
K_POINTS automatic
1 1 1 0 0 0
"""

    def command(self, prepared: Prepared) -> List[str]:
        return [self.executable, "-in", str(prepared.folder.resolve() / "scf.in")]

    def parse(self, stdout: str, prepared: Optional[Prepared] = None) -> AppResult:
        iterations = int(need(last_match(CONVERGED, stdout), self, "'convergence has been achieved in N iterations'").group(1))
        timers = timers_of(stdout)
        if "electrons" not in timers or "PWSCF" not in timers:
            raise AppOutputError(f"{self.name}: the 'electrons' and 'PWSCF' WALL timers are not in the output of pw.x")
        return AppResult(
            fom=timers["electrons"] / iterations,
            elapsed_s=timers["PWSCF"],
            timers=timers,
            facts={"iterations": iterations, "atoms": 8 * (prepared.size if prepared else 1)},
            resolution={"elapsed": WALL_STEP_S, **{k: WALL_STEP_S for k in timers}},
        )


RECIPES = [PwSilicon()]
