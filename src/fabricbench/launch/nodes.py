"""Running one command on one named node: a lab node (inside its namespace) or a host
(this one directly, another one through ssh). For workflows that place single processes
(a file server here, readers there) rather than MPI ranks.

    nodes = lab_nodes()                      # the current lab ($FABRICBENCH_LAB)
    nodes = host_nodes(link="100gbit")       # hosts by name; the link rate when known
    node = nodes.node("n1")                  # Node(name, address, rate_bps)
    argv = nodes.argv(node, ["xrootd", "-v"])

Nothing is started here: callers hand the argv to ``launch.procs``.
"""
from __future__ import annotations

import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from fabricbench.errors import UsageError

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
SSH = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


@dataclass(frozen=True)
class Node:
    name: str  # as shown: "fbl-n1", "host7"
    address: str  # what peers connect to
    rate_bps: Optional[int] = None  # its link rate, when known
    switch: Optional[str] = None  # lab nodes: the switch it hangs on


class Nodes:
    """A set of nodes and how to run a command on each."""

    kind = "base"

    def node(self, ref: str) -> Node:
        raise NotImplementedError

    def all(self) -> List[Node]:
        """Every node known without being named (the lab's); hosts: none."""
        return []

    def argv(self, node: Node, argv: Sequence[str]) -> List[str]:
        raise NotImplementedError

    def is_local(self, node: Node) -> bool:
        """Whether a process started for `node` runs on this machine (its pid is ours to signal)."""
        return True

    def python(self, node: Node, path: Path, args: Sequence[str]) -> List[str]:
        """The command, as `node` runs it, of the stand-alone Python script `path` with `args`."""
        return [sys.executable, str(path), *args]

    def script(self, node: Node, path: Path, args: Sequence[str]) -> List[str]:
        """argv that runs the stand-alone Python script `path` with `args` on `node`."""
        return self.argv(node, self.python(node, path, args))

    def describe(self) -> str:
        return self.kind


class LabNodes(Nodes):
    """The nodes of a lab that is up; commands run inside their namespaces."""

    kind = "lab"

    def __init__(self, lab):
        self.lab = lab

    def node(self, ref: str) -> Node:
        n = self.lab.node(ref)
        return Node(n.name, n.address, n.rate_bps, n.switch)

    def all(self) -> List[Node]:
        return [self.node(n.name) for n in self.lab.nodes]

    def argv(self, node: Node, argv: Sequence[str]) -> List[str]:
        return self.lab.exec_argv(node.name, argv)

    def describe(self) -> str:
        return f"lab '{self.lab.name}': {self.lab.describe()}"


class HostNodes(Nodes):
    """Hosts by name or address: this host directly, others through ssh (keys, no password)."""

    kind = "hosts"

    def __init__(self, rate_bps: Optional[int] = None):
        self.rate_bps = rate_bps

    def node(self, ref: str) -> Node:
        ref = ref.strip()
        if not ref or any(c.isspace() for c in ref) or ref.startswith("-"):
            raise UsageError(f"bad host name '{ref}'")
        return Node(ref, ref, self.rate_bps)

    def is_local(self, node: Node) -> bool:
        return node.name in LOCAL_NAMES or node.name in (socket.gethostname(), socket.getfqdn())

    def argv(self, node: Node, argv: Sequence[str]) -> List[str]:
        if self.is_local(node):
            return list(argv)
        return [*SSH, node.name, "--", shlex.join(argv)]

    def python(self, node: Node, path: Path, args: Sequence[str]) -> List[str]:
        if self.is_local(node):
            return [sys.executable, str(path), *args]
        # The script's text travels with the command: nothing needs installing on the host.
        return ["python3", "-c", path.read_text(), *args]


def lab_nodes(name: Optional[str] = None) -> LabNodes:
    from fabricbench.lab import LabError, current_lab, lab_name

    lab = current_lab(name)
    if lab is None:
        raise LabError(f"lab '{lab_name(name)}' is not up; bring one up first: fabricbench lab up --nodes 5")
    return LabNodes(lab)


def host_nodes(link: Optional[str] = None) -> HostNodes:
    from fabricbench.lab import parse_rate

    return HostNodes(parse_rate(link) if link else None)
