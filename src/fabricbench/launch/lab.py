"""Launch across the lab (fabricbench lab up): ranks start inside the lab's node namespaces.

mpirun itself runs inside the namespace of the first host (with that node's host name),
so everything MPI does travels over lab links only and the host side needs no lab
address. Remote nodes are reached through the lab's rsh agent, which enters a node's
namespace the way ssh would enter a host. MPI is told to use TCP between nodes and the
lab subnet only, and not to bind ranks: every namespace sees the same cores, so the
default binding would stack the ranks of all "nodes" on the same core.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from fabricbench.lab import current_lab, lab_name, run_dir
from fabricbench.lab.agent import agent_executable, node_argv
from fabricbench.lab.errors import LabError
from fabricbench.launch.base import Launcher, Layout, register
from fabricbench.launch.mpi import check_program, detect_mpi, openmpi_root_env
from fabricbench.launch.mpirun import mpi_provenance, read_hostfile


@register
class LabLauncher(Launcher):
    name = "lab"

    def __init__(self, layout: Layout):
        super().__init__(layout)
        name = lab_name(None)
        lab = current_lab(name)
        if lab is None:
            flag = "" if name == "fbl" else f" --name {name}"
            raise LabError(
                f"--launcher lab: lab '{name}' is not up; bring one up first, e.g. "
                f"fabricbench lab up{flag} --nodes 4 --link 1gbit (FABRICBENCH_LAB names the lab)"
            )
        self.lab = lab
        if layout.hostfile and not layout.hosts:
            layout.hosts = read_hostfile(layout.hostfile)
        if layout.hosts:
            try:
                layout.hosts = [lab.node(h).name for h in layout.hosts]
            except LabError as exc:
                raise LabError(f"--launcher lab: {exc} (lab '{lab.name}' has {', '.join(lab.node_names)})") from None
        else:
            layout.hosts = list(lab.node_names)
        if layout.np is None:
            unique = len(dict.fromkeys(layout.hosts))
            layout.np = unique * layout.ppn if layout.ppn else len(layout.hosts)

    # Hosts in order with their rank counts when the host list repeats names ([a, a, b] -> a:2, b:1).
    def _slots(self) -> Dict[str, int]:
        slots: Dict[str, int] = {}
        for h in self.layout.hosts:
            slots[h] = slots.get(h, 0) + 1
        return slots

    def command(self, program: Sequence[str]) -> List[str]:
        mpi = detect_mpi()
        check_program(mpi, program)
        lay = self.layout
        first = lay.hosts[0]
        argv = [mpi.mpirun, "-np", str(lay.np)]
        if mpi.is_openmpi:
            argv += self._openmpi_args()
        else:
            argv += self._hydra_args()
        argv += list(lay.extra_args)
        return node_argv(first, argv + list(program))

    def _openmpi_args(self) -> List[str]:
        lay = self.layout
        slots = self._slots()
        repeated = any(n > 1 for n in slots.values())
        if lay.ppn:
            hosts, mapping = [f"{h}:{lay.ppn}" for h in slots], f"ppr:{lay.ppn}:node"
        elif repeated:
            hosts, mapping = [f"{h}:{n}" for h, n in slots.items()], "slot"
        else:
            # One slot each, handed out round-robin: rank i on host i, wrapping when np > hosts.
            hosts, mapping = [f"{h}:{max(1, -(-lay.np // len(slots)))}" for h in slots], "node"
        subnet = self.lab.subnet
        # The lab's nodes share this machine's cores, but each node has slots of its own, so Open MPI
        # does not see that it oversubscribes them: a waiting rank would spin away the time slice
        # its peer needs (an 8-byte allreduce on 4 nodes of 2 cores: 4.5 ms spinning, 0.1 ms yielding).
        crowded = lay.np > (os.cpu_count() or 1)
        return [
            *(["--mca", "mpi_yield_when_idle", "1"] if crowded else []),
            "--host", ",".join(hosts),
            "--map-by", mapping,
            "--bind-to", "none",
            "--oversubscribe",
            "--mca", "plm", "rsh",
            "--mca", "plm_rsh_agent", agent_executable(run_dir()),
            "--mca", "plm_rsh_no_tree_spawn", "1",
            # A batch allocation in the environment (Slurm, SGE) must not replace the lab's hosts.
            "--mca", "ras", "^slurm,gridengine,tm,lsf,alps",
            "--mca", "pml", "ob1",
            "--mca", "btl", "tcp,self,vader",
            "--mca", "btl_tcp_if_include", subnet,
            "--mca", "oob_tcp_if_include", subnet,
        ]

    def _hydra_args(self) -> List[str]:
        lay = self.layout
        slots = self._slots()
        iface = self.lab.interface
        if lay.ppn:
            hosts = [f"{h}:{lay.ppn}" for h in slots]
        else:
            hosts = [f"{h}:{n}" for h, n in slots.items()]
        argv = [
            "-launcher", "rsh",
            "-launcher-exec", agent_executable(run_dir()),
            "-hosts", ",".join(hosts),
            "-iface", iface,
            "-bind-to", "none",
            # The fabrics MPICH may be built on: TCP on the lab interface only. UCX would otherwise
            # reach a rank of another lab node through shared memory (one kernel under all the
            # namespaces) and bypass the shaped links; ranks of one node use MPICH's own shared memory.
            "-genv", "FI_PROVIDER", "tcp",
            "-genv", "FI_TCP_IFACE", iface,
            "-genv", "UCX_TLS", "tcp",
            "-genv", "UCX_NET_DEVICES", iface,
        ]
        if lay.ppn:
            argv += ["-ppn", str(lay.ppn)]
        return argv

    def environment(self) -> Dict[str, str]:
        env = dict(os.environ)
        env.update(openmpi_root_env())
        # Open MPI writes the remote command in the syntax of the local $SHELL; the agent runs sh.
        env["SHELL"] = "/bin/sh"
        env["FABRICBENCH_LAB"] = self.lab.name
        return env

    def node_count(self) -> int:
        return len(dict.fromkeys(self.layout.hosts))

    def provenance(self) -> Dict[str, Any]:
        return {**mpi_provenance(), **lab_provenance(self.lab, self.layout.hosts)}

    def one_machine(self) -> bool:
        return True


def lab_provenance(lab, hosts: Sequence[str]) -> Dict[str, Any]:
    """The lab's shape and the shaped rate of every node used (all nodes when `hosts` is empty):
    what a run's peak is."""
    used = [lab.node(h) for h in dict.fromkeys(hosts)] or list(lab.nodes)
    shape = lab.shape
    return {"lab": {
        "name": lab.name,
        "link": shape.get("link"),
        "link_bps": lab.spec.link_bps(),
        "uplink": shape.get("uplink"),
        "uplink_bps": lab.spec.uplink_bps(),
        "mtu": lab.spec.mtu,
        "shaper": "tc htb",
        "nodes": {n.name: {"rate": n.rate, "rate_bps": n.rate_bps, "switch": n.switch} for n in used},
    }}


def lab_openmpi_env(lab) -> Dict[str, str]:
    """Open MPI's settings for ranks in lab nodes that another launcher (srun) starts: TCP on the lab subnet.

    PMIx keeps job data in a shared-memory store (gds ds12/ds21) meant for one node; lab nodes
    share one machine, so each rank keeps its own copy (gds hash) instead.
    """
    return {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self,vader",
            "OMPI_MCA_btl_tcp_if_include": lab.subnet, "PMIX_MCA_gds": "hash"}
