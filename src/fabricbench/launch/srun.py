"""Launch with Slurm's srun: a step of the allocation we run in, or a job of its own.

Inside an allocation (salloc, sbatch: SLURM_JOB_ID set) every launch is a step of that job.
Outside one, srun asks for an allocation per launch: as many nodes as ranks (up to the
partition's size) unless --ppn or --hosts say otherwise, in $FABRICBENCH_SLURM_PARTITION
(default: the default partition) for $FABRICBENCH_SLURM_TIME (default: the partition's limit).
The MPI plugin (--mpi=pmix or pmi2) follows the MPI on PATH (launch.slurm.choose_mpi_plugin).
On a Slurm lab (`lab up --slurm`) srun runs on the lab's login node and the ranks in the lab's
nodes, talking TCP over its shaped links.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.launch import slurm
from fabricbench.launch.base import Launcher, LaunchError, Layout, register
from fabricbench.launch.mpi import detect_mpi
from fabricbench.launch.mpirun import read_hostfile

NODE_OPTIONS = ("-N", "--nodes")


@register
class SrunLauncher(Launcher):
    name = "srun"

    def __init__(self, layout: Layout):
        super().__init__(layout)
        if layout.hostfile and not layout.hosts:
            layout.hosts = read_hostfile(layout.hostfile)
        self.cluster = slurm.cluster()
        self.inside = slurm.in_allocation()
        self.partition = None if self.inside else (os.environ.get("FABRICBENCH_SLURM_PARTITION") or None)
        self.time_limit = None if self.inside else (os.environ.get("FABRICBENCH_SLURM_TIME") or None)
        if self.cluster.lab is not None and layout.hosts:
            from fabricbench.lab.errors import LabError

            try:
                layout.hosts = [self.cluster.lab.node(h).name for h in layout.hosts]
            except LabError as exc:
                raise LaunchError(f"--launcher srun: {exc}") from None
        self._nodes: Optional[int] = None

    def mpi_plugin(self) -> str:
        forced = os.environ.get("FABRICBENCH_SRUN_MPI")
        if forced:
            return forced
        return slurm.choose_mpi_plugin(_flavour(), slurm.mpi_plugins(self.cluster))

    def nodes(self) -> int:
        """How many nodes the ranks go to: the hosts given, np / ppn, else one rank per node up to what there is."""
        if self._nodes is None:
            lay = self.layout
            np = lay.np or 1
            if lay.hosts:
                self._nodes = len(dict.fromkeys(lay.hosts))
            elif lay.ppn:
                self._nodes = max(1, -(-np // lay.ppn))
            else:
                self._nodes = min(np, self._available_nodes())
        return self._nodes

    def _available_nodes(self) -> int:
        if self.inside:
            facts = slurm.allocation_facts()
            if isinstance(facts.get("nodes"), int):
                return facts["nodes"]
        return slurm.partition_nodes(self.cluster, self.partition)

    def command(self, program: Sequence[str]) -> List[str]:
        lay = self.layout
        if self.cluster.lab is not None and _flavour() == "mpich":
            # slurmd enters each node's network namespace but keeps the machine's /sys, where UCX looks for
            # its devices: MPICH then finds no lab interface, or reaches the other "node" through shared memory
            # and measures no link at all. Refused rather than measured wrong.
            raise LaunchError(f"MPICH under srun on the lab '{self.cluster.lab.name}' would bypass its shaped links "
                              "(UCX finds no lab interface in slurmd's /sys and uses shared memory): use "
                              "--launcher lab for MPICH on the lab, or Open MPI with srun")
        argv = ["srun", f"--mpi={self.mpi_plugin()}", "--kill-on-bad-exit=1"]
        if lay.np:
            argv += ["--ntasks", str(lay.np)]
        if not any(a in NODE_OPTIONS or a.startswith(("--nodes=", "-N")) for a in lay.extra_args):
            argv += ["--nodes", str(self.nodes())]
        if lay.ppn:
            argv += ["--ntasks-per-node", str(lay.ppn)]
        if lay.hosts:
            argv += ["--nodelist", ",".join(dict.fromkeys(lay.hosts))]
        if not self.inside:
            argv += ["--job-name", "fabricbench"]
            if self.partition:
                argv += ["--partition", self.partition]
            if self.time_limit:
                argv += ["--time", self.time_limit]
        return self.cluster.argv(argv + list(lay.extra_args) + list(program))

    def environment(self) -> Dict[str, str]:
        env = self.cluster.env()
        if self.cluster.lab is not None:
            from fabricbench.launch.lab import lab_openmpi_env

            env.update(lab_openmpi_env(self.cluster.lab))
        return env

    def node_count(self) -> int:
        return self.nodes()

    def one_machine(self) -> bool:
        return self.cluster.lab is not None

    def provenance(self) -> Dict[str, Any]:
        """Slurm's version, the job (inside an allocation) or what was asked for, and a lab's rates."""
        facts: Dict[str, Any] = {"version": slurm.version(self.cluster), "mpi_plugin": self.mpi_plugin()}
        if self.inside:
            facts.update(slurm.allocation_facts())
            facts["allocation"] = "existing"
        else:
            facts.update({"allocation": "one job per launch", "partition": self.partition,
                          "time_limit": self.time_limit})
        if self.cluster.lab is not None:
            from fabricbench.launch.lab import lab_provenance

            facts["cluster"] = facts.get("cluster") or self.cluster.lab.name
            return {"slurm": facts, **lab_provenance(self.cluster.lab, self.layout.hosts)}
        return {"slurm": facts}


def _flavour() -> str:
    """The selected MPI's family (openmpi, mpich), or "unknown" when no launcher of it is on PATH:
    srun starts the ranks then, and the library says nothing here."""
    try:
        return detect_mpi().flavour
    except LaunchError:
        return "unknown"
