"""The lab: an emulated cluster on one machine, made of network namespaces, veth links
shaped with htb, and Linux bridges as switches; MPI launches across it through an rsh
agent that enters the namespaces (see fabricbench.launch.lab).

    from fabricbench.lab import LabSpec, Lab, current_lab, lab_session

    with lab_session(nodes=4, link="1gbit") as lab:      # always torn down
        lab.nodes[0].name, lab.nodes[0].address, lab.hostfile_path

Needs root. Every object a lab makes carries its name ('fbl', or $FABRICBENCH_LAB) as
prefix, so `down` finds and removes all of it, also after a crash.
"""
from fabricbench.lab.core import Lab, LabNode, current_lab, down, lab_session, leftovers, run_dir, status, up
from fabricbench.lab.errors import LabError
from fabricbench.lab.rates import format_rate, parse_rate, tcp_goodput, tcp_payload_share
from fabricbench.lab.spec import DEFAULT_NAME, DEFAULT_SUBNET, LabSpec, lab_name, parse_degrade
from fabricbench.lab.system import netns_usable

__all__ = [
    "Lab",
    "LabNode",
    "LabSpec",
    "LabError",
    "current_lab",
    "up",
    "down",
    "status",
    "leftovers",
    "lab_session",
    "lab_name",
    "run_dir",
    "parse_rate",
    "format_rate",
    "parse_degrade",
    "tcp_goodput",
    "tcp_payload_share",
    "netns_usable",
    "DEFAULT_NAME",
    "DEFAULT_SUBNET",
]
