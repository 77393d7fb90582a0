"""Launch with the selected MPI's launcher (Open MPI's mpirun or MPICH's hydra mpiexec; see
launch.mpi), locally or over a hostfile / host list."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from fabricbench.launch.base import Launcher, LaunchError, register
from fabricbench.launch.mpi import check_program, detect_mpi, openmpi_root_env
from fabricbench.native import build_info


def read_hostfile(path: str) -> List[str]:
    """Host names from an Open MPI / MPICH style hostfile (``host slots=N`` or ``host:N``)."""
    hosts: List[str] = []
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as exc:
        raise LaunchError(f"cannot read hostfile {path}: {exc.strerror}") from None
    for lineno, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name = text.split()[0].split(":")[0]
        if not name or any(c in name for c in "=/"):
            raise LaunchError(f"{path}:{lineno}: cannot read a host name from {line!r}")
        hosts.append(name)
    if not hosts:
        raise LaunchError(f"{path}: no hosts listed")
    return hosts


@register
class MpirunLauncher(Launcher):
    name = "mpirun"

    def __init__(self, layout):
        super().__init__(layout)
        if layout.hostfile and not layout.hosts:
            layout.hosts = read_hostfile(layout.hostfile)

    def command(self, program: Sequence[str]) -> List[str]:
        mpi = detect_mpi()
        check_program(mpi, program)
        lay = self.layout
        argv = [mpi.mpirun]
        if lay.np:
            argv += ["-np", str(lay.np)]
        if mpi.is_openmpi:
            # Function runs on small machines oversubscribe; binding stays Open MPI's default
            # unless the user's --mpirun-args say otherwise.
            argv += ["--oversubscribe"]
            if lay.hostfile:
                argv += ["--hostfile", lay.hostfile]
            elif lay.hosts:
                argv += ["--host", ",".join(f"{h}:{lay.ppn or 64}" for h in dict.fromkeys(lay.hosts))]
            if lay.ppn:
                argv += ["--map-by", f"ppr:{lay.ppn}:node"]
        else:
            argv += hydra_placement(lay)
        argv += list(lay.extra_args)
        return argv + list(program)

    def environment(self) -> Dict[str, str]:
        env = dict(os.environ)
        if detect_mpi().is_openmpi:
            env.update(openmpi_root_env())
        return env

    def provenance(self) -> Dict[str, Any]:
        return mpi_provenance()


def report_exits(argv: Sequence[str]) -> List[str]:
    """argv with Hydra's mpiexec (if it runs one) asked for every rank's exit status
    (-print-all-exitcodes): Hydra names no rank when one dies, the statuses do. It prints them on
    stdout, also when all went well, so only a reader that sets launcher lines aside asks for them
    (the engine workflow, see launch.failure.launcher_line)."""
    mpi = detect_mpi()
    if mpi.flavour != "mpich" or mpi.mpirun not in argv:
        return list(argv)
    at = list(argv).index(mpi.mpirun) + 1
    return [*argv[:at], "-print-all-exitcodes", *argv[at:]]


def hydra_placement(lay) -> List[str]:
    """Hydra's options for where ranks go: a hostfile (-f), or the hosts with their rank counts
    when the list repeats names ([a, a, b] -> a:2,b:1), and ranks per node (-ppn)."""
    if lay.hostfile:
        argv = ["-f", lay.hostfile]
    elif lay.hosts:
        slots: Dict[str, int] = {}
        for h in lay.hosts:
            slots[h] = slots.get(h, 0) + 1
        repeated = any(n > 1 for n in slots.values())
        argv = ["-hosts", ",".join(f"{h}:{n}" if repeated and not lay.ppn else h for h, n in slots.items())]
    else:
        argv = []
    if lay.ppn:
        argv += ["-ppn", str(lay.ppn)]
    return argv


def mpi_provenance() -> Dict[str, Any]:
    """Which MPI launched the run (family, launcher path and version) and which it was built for."""
    facts: Dict[str, Any] = {"mpi_launcher": detect_mpi().facts()}
    built = build_info()
    if built:
        facts["mpi_build"] = built
    return facts
