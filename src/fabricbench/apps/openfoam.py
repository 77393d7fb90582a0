"""OpenFOAM (Debian `openfoam`, program `icoFoam`): the lid-driven cavity, 40*size x 40*size
cells, 50 time steps, decomposed into one subdomain per rank (``decomposePar``, method
simple: an even px x py grid).

The set-up runs ``blockMesh`` and ``decomposePar`` in the case folder. The figure of merit is
OpenFOAM's "ExecutionTime = T s" per time step: (last - first) / (steps - 1), so the
start-up is left out. ExecutionTime is the CPU time of the master rank (0.01 s steps), which
includes MPI's polling while it waits, but not time a rank spends descheduled (a loaded
machine, a blocking wait); "ClockTime" (whole seconds) is the wall time: the elapsed time
and the timer ``clock``. The case's ``timeInfo`` function object writes the same CPU and clock
times per step to ``postProcessing/timing/0/timeInfo.dat``, the application's own output file.

Every step solves the pressure equation with PCG: a global sum per iteration (latency)
and a small halo exchange; with small subdomains it is latency-bound rather than
bandwidth-bound.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional

from fabricbench.apps.base import (NUMBER, AppResult, Figure, Prepared, Recipe, check_size, factor_grid, need, printed_step,
                                   write)
from fabricbench import numbers

EXECUTION = re.compile(r"^ExecutionTime = " + NUMBER + r" s\s+ClockTime = " + NUMBER + r" s", re.M)
STEP = re.compile(r"^Time = " + NUMBER, re.M)
FOAM_DIR = "/usr/share/openfoam"
STEPS = 50
DT = 0.001

HEADER = "FoamFile {{ version 2.0; format ascii; class {cls}; object {obj}; }}\n"

FILES: Dict[str, tuple] = {
    "system/controlDict": ("dictionary", f"""application icoFoam;
startFrom startTime; startTime 0; stopAt endTime; endTime {numbers.short(STEPS * DT)}; deltaT {numbers.short(DT)};
writeControl timeStep; writeInterval 100000; purgeWrite 0; writeFormat ascii; writePrecision 6;
writeCompression off; timeFormat general; timePrecision 6; runTimeModifiable false;
functions
{{
    timing {{ type timeInfo; libs ("libutilityFunctionObjects.so"); perTimeStep yes; }}
}}
"""),
    "system/fvSchemes": ("dictionary", """ddtSchemes { default Euler; }
gradSchemes { default Gauss linear; }
divSchemes { default none; div(phi,U) Gauss linear; }
laplacianSchemes { default Gauss linear orthogonal; }
interpolationSchemes { default linear; }
snGradSchemes { default orthogonal; }
"""),
    "system/fvSolution": ("dictionary", """solvers
{
    p { solver PCG; preconditioner DIC; tolerance 1e-06; relTol 0.05; }
    pFinal { $p; relTol 0; }
    U { solver smoothSolver; smoother symGaussSeidel; tolerance 1e-05; relTol 0; }
}
PISO { nCorrectors 2; nNonOrthogonalCorrectors 0; pRefCell 0; pRefValue 0; }
"""),
    "constant/transportProperties": ("dictionary", "nu 0.01;\n"),
    "0/U": ("volVectorField", """dimensions [0 1 -1 0 0 0 0];
internalField uniform (0 0 0);
boundaryField
{
    movingWall { type fixedValue; value uniform (1 0 0); }
    fixedWalls { type noSlip; }
    frontAndBack { type empty; }
}
"""),
    "0/p": ("volScalarField", """dimensions [0 2 -2 0 0 0 0];
internalField uniform 0;
boundaryField
{
    movingWall { type zeroGradient; }
    fixedWalls { type zeroGradient; }
    frontAndBack { type empty; }
}
"""),
}


def block_mesh(cells: int) -> str:
    return f"""convertToMeters 0.1;
vertices ( (0 0 0) (1 0 0) (1 1 0) (0 1 0) (0 0 0.1) (1 0 0.1) (1 1 0.1) (0 1 0.1) );
blocks ( hex (0 1 2 3 4 5 6 7) ({cells} {cells} 1) simpleGrading (1 1 1) );
edges ();
boundary
(
    movingWall {{ type wall; faces ((3 7 6 2)); }}
    fixedWalls {{ type wall; faces ((0 4 7 3) (2 6 5 1) (1 5 4 0)); }}
    frontAndBack {{ type empty; faces ((0 3 2 1) (4 5 6 7)); }}
);
mergePatchPairs ();
"""


def decompose_dict(ranks: int) -> str:
    px, py = factor_grid(ranks)
    return f"numberOfSubdomains {ranks};\nmethod simple;\ncoeffs {{ n ({px} {py} 1); }}\n"


class IcoFoamCavity(Recipe):
    name = "openfoam-cavity"
    title = f"OpenFOAM icoFoam lid-driven cavity ({STEPS} steps, PISO, PCG pressure solve)"
    field = "computational fluid dynamics"
    package = "openfoam"
    executable = "icoFoam"
    fom = Figure("ExecutionTime per step", "s/step", False)
    size_note = "40*size x 40*size cells (1600*size^2)"
    traffic = "a global sum per PCG iteration and small halo exchanges: latency-bound"
    output_file = "postProcessing/timing/0/timeInfo.dat"

    def environment(self) -> Dict[str, str]:
        return {"WM_PROJECT_DIR": FOAM_DIR}

    def prepare(self, folder: Path, size: int, ranks: int) -> Prepared:
        check_size(self, size)
        for path, (cls, body) in FILES.items():
            write(folder, path, HEADER.format(cls=cls, obj=Path(path).name) + body)
        write(folder, "system/blockMeshDict", HEADER.format(cls="dictionary", obj="blockMeshDict") + block_mesh(40 * size))
        write(folder, "system/decomposeParDict", HEADER.format(cls="dictionary", obj="decomposeParDict") + decompose_dict(ranks))
        case = str(folder.resolve())
        setup = [["blockMesh", "-case", case]]
        if ranks > 1:
            setup.append(["decomposePar", "-force", "-case", case])
        return Prepared(folder, size, ranks, setup=setup)

    def command(self, prepared: Prepared) -> List[str]:
        argv = [self.executable, "-case", str(prepared.folder.resolve())]
        return argv + (["-parallel"] if prepared.ranks > 1 else [])

    def parse(self, stdout: str, prepared: Optional[Prepared] = None) -> AppResult:
        matches = list(EXECUTION.finditer(stdout))
        times = [(float(m.group(1)), float(m.group(2))) for m in matches]
        steps = len(STEP.findall(stdout))
        need(times[0] if len(times) >= 2 else None, self, "two or more 'ExecutionTime = ... s' lines")
        # The last ExecutionTime line is repeated after the loop ("End"); count the steps' own lines.
        per_step = times[:steps] if steps >= 2 else times
        first, last = per_step[0], per_step[-1]
        return AppResult(
            fom=(last[0] - first[0]) / (len(per_step) - 1),
            elapsed_s=max(times[-1]),  # ClockTime (wall, whole seconds) unless the run was shorter than its CPU time
            timers={"execution": times[-1][0], "clock": times[-1][1]},
            facts={"steps": steps, "cells": (40 * (prepared.size if prepared else 1)) ** 2},
            resolution={"elapsed": printed_step(matches[-1].group(2 if times[-1][1] >= times[-1][0] else 1)),
                        "execution": printed_step(matches[-1].group(1)), "clock": printed_step(matches[-1].group(2)),
                        "fom": printed_step(matches[-1].group(1)) / (len(per_step) - 1)},
        )


RECIPES = [IcoFoamCavity()]
