"""What a lab looks like (its shape) and what every one of its objects is called.

Every object of a lab carries the lab's name as prefix followed by '-', so a lab finds
(and removes) exactly its own objects, also without its state file:

    network namespaces   NAME-n1 ... NAME-nN   (nodes; also their host names)
                         NAME-sw1, NAME-sw2     (switches)
    interfaces           NAME-eth0   in every node namespace (same name everywhere,
                                     so MPICH's -iface can name it)
                         NAME-p<i>   switch port of node i, in its switch namespace
                         NAME-br     the bridge, in each switch namespace
                         NAME-up     the inter-switch link's end in each switch namespace
    files                /etc/netns/NAME-n<i>/{hosts,resolv.conf}  (seen by ip netns exec)
                         $FABRICBENCH_LAB_RUNDIR/NAME.{json,hostfile}
                         $FABRICBENCH_LAB_RUNDIR/NAME-slurm/  (lab up --slurm: config, logs, daemons)
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from fabricbench.lab.errors import LabError
from fabricbench.lab.rates import format_rate, parse_rate

DEFAULT_NAME = "fbl"
DEFAULT_SUBNET = "10.213.0.0/24"
DEFAULT_LINK = "1gbit"
DEFAULT_MTU = 1500
MAX_NODES = 250

_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")
IFNAMSIZ = 15  # longest Linux interface name


def lab_name(name: Optional[str] = None) -> str:
    """The lab's name: the argument, else $FABRICBENCH_LAB, else 'fbl'; validated.

    An empty name (``--name ''``, ``FABRICBENCH_LAB=``) is an error, never the default lab:
    ``lab down --name ''`` must not tear down the lab of someone who uses the default.
    """
    if name is not None:
        chosen, source = name, "lab name"
    elif "FABRICBENCH_LAB" in os.environ:
        chosen, source = os.environ["FABRICBENCH_LAB"], "FABRICBENCH_LAB"
    else:
        chosen, source = DEFAULT_NAME, "lab name"
    if not _NAME_RE.match(chosen):
        what = f"the {source} is empty" if not chosen else f"bad {source} {chosen!r}"
        raise LabError(
            f"{what}: use 1 to 8 lower-case letters and digits, starting with a letter "
            "(it prefixes every namespace and interface the lab makes, and interface names are at most 15 characters)"
        )
    return chosen


CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")


def default_subnet() -> str:
    return os.environ.get("FABRICBENCH_LAB_SUBNET") or DEFAULT_SUBNET


# ---- object names -------------------------------------------------------------------------

def node_name(lab: str, index: int) -> str:
    return f"{lab}-n{index}"


def switch_name(lab: str, index: int) -> str:
    return f"{lab}-sw{index}"


def node_ifname(lab: str) -> str:
    return f"{lab}-eth0"


def port_ifname(lab: str, index: int) -> str:
    return f"{lab}-p{index}"


def bridge_ifname(lab: str) -> str:
    return f"{lab}-br"


def uplink_ifname(lab: str) -> str:
    return f"{lab}-up"


def namespace_pattern(lab: str) -> "re.Pattern[str]":
    """Namespaces this lab owns: NAME-n<digits> and NAME-sw<digits>, nothing else."""
    return re.compile(rf"^{re.escape(lab)}-(?:n[0-9]+|sw[0-9]+)$")


NODE_NAMESPACE_RE = re.compile(r"^[a-z][a-z0-9]{0,7}-n[0-9]+$")


# ---- the shape ----------------------------------------------------------------------------

@dataclass(frozen=True)
class LabSpec:
    """The shape of a lab: nodes, link rate, switches, uplink, degraded nodes, subnet, Slurm or not.

    Rates are tc strings ("1gbit"); degrade maps node references ("n3", "3" or
    "fbl-n3") to a lower rate for that node's link.
    """

    nodes: int
    link: str = DEFAULT_LINK
    switches: int = 1
    uplink: Optional[str] = None
    degrade: Tuple[Tuple[str, str], ...] = ()
    subnet: str = field(default_factory=default_subnet)
    mtu: int = DEFAULT_MTU
    slurm: bool = False  # a Slurm cluster on the nodes (lab/slurm.py)

    def __post_init__(self):
        if isinstance(self.degrade, dict):
            object.__setattr__(self, "degrade", tuple(self.degrade.items()))
        else:
            object.__setattr__(self, "degrade", tuple(tuple(item) for item in self.degrade))

    # Validated, normalised views --------------------------------------------------------
    def link_bps(self) -> int:
        return parse_rate(self.link)

    def uplink_bps(self) -> Optional[int]:
        if self.switches < 2:
            return None
        return parse_rate(self.uplink) if self.uplink else self.link_bps()

    def network(self) -> ipaddress.IPv4Network:
        try:
            net = ipaddress.IPv4Network(self.subnet, strict=True)
        except ValueError as exc:
            raise LabError(f"bad lab subnet '{self.subnet}': {exc} (give an IPv4 network such as {DEFAULT_SUBNET})") from None
        # RFC 1918, or a range that is not routed on the Internet (TEST-NET, 198.18/15, 100.64/10)
        # when a user names it; whether the host itself uses it is checked when the lab comes up.
        if net.is_global or net.is_loopback or net.is_link_local or net.is_multicast or net.is_unspecified \
                or net.is_reserved or net.subnet_of(THIS_NETWORK) or not (net.is_private or net.subnet_of(CGNAT)):
            raise LabError(
                f"lab subnet {net} is not a private network: use one from 10.0.0.0/8, 172.16.0.0/12 "
                f"or 192.168.0.0/16 (default {DEFAULT_SUBNET}); lab addresses never leave the lab"
            )
        return net

    def degraded_bps(self) -> Dict[int, int]:
        """Node index -> degraded rate in bits/s."""
        out: Dict[int, int] = {}
        for ref, rate in self.degrade:
            index = node_index(ref, self.nodes)
            out[index] = parse_rate(rate)
        return out

    def switch_of(self, index: int) -> int:
        """Which switch node `index` hangs on: the first half on switch 1, the rest on switch 2."""
        if self.switches == 1:
            return 1
        return 1 if index <= (self.nodes + 1) // 2 else 2

    def validate(self) -> None:
        if not isinstance(self.nodes, int) or self.nodes < 1:
            raise LabError(f"a lab needs at least 1 node (got --nodes {self.nodes})")
        if self.nodes > MAX_NODES:
            raise LabError(f"--nodes {self.nodes} is too many: a lab has at most {MAX_NODES} nodes")
        if self.switches not in (1, 2):
            raise LabError(f"--switches must be 1 or 2 (got {self.switches})")
        if self.switches == 2 and self.nodes < 2:
            raise LabError("two switches need at least 2 nodes (one on each)")
        if self.uplink and self.switches < 2:
            raise LabError("--uplink is the link between two switches: give --switches 2 with it")
        if not 576 <= self.mtu <= 65535:
            raise LabError(f"MTU {self.mtu} is out of range (576 to 65535)")
        self.link_bps()
        self.uplink_bps()
        self.degraded_bps()
        net = self.network()
        if net.num_addresses - 2 < self.nodes:
            raise LabError(f"subnet {net} has room for {max(0, net.num_addresses - 2)} nodes, not {self.nodes}")

    def shape(self) -> Dict[str, object]:
        """The normalised shape: two specs with equal shapes make the same lab."""
        self.validate()
        uplink = self.uplink_bps()
        return {
            "nodes": self.nodes,
            "link": format_rate(self.link_bps()),
            "switches": self.switches,
            "uplink": format_rate(uplink) if uplink else None,
            "degrade": {f"n{i}": format_rate(bps) for i, bps in sorted(self.degraded_bps().items())},
            "subnet": str(self.network()),
            "mtu": self.mtu,
            **({"slurm": True} if self.slurm else {}),
        }

    @classmethod
    def from_shape(cls, shape: Dict[str, object]) -> "LabSpec":
        return cls(
            nodes=int(shape["nodes"]),
            link=str(shape["link"]),
            switches=int(shape.get("switches", 1)),
            uplink=shape.get("uplink") or None,  # type: ignore[arg-type]
            degrade=tuple(dict(shape.get("degrade") or {}).items()),  # type: ignore[arg-type]
            subnet=str(shape.get("subnet", DEFAULT_SUBNET)),
            mtu=int(shape.get("mtu", DEFAULT_MTU)),
            slurm=bool(shape.get("slurm", False)),
        )


def node_index(ref: str, nodes: Optional[int] = None) -> int:
    """1-based node index from 'n3', '3' or 'LAB-n3'."""
    text = str(ref).strip()
    m = re.match(r"^(?:[a-z][a-z0-9]*-)?n?([0-9]+)$", text)
    if not m or int(m.group(1)) < 1:
        raise LabError(f"'{ref}' is not a lab node: name nodes n1, n2, ... (or 1, 2, ...)")
    index = int(m.group(1))
    if nodes is not None and index > nodes:
        raise LabError(f"node '{ref}' does not exist: the lab has nodes n1 to n{nodes}")
    return index


def parse_degrade(items: List[str]) -> Tuple[Tuple[str, str], ...]:
    """('n3', '100mbit') pairs from NODE=RATE strings."""
    pairs = []
    for item in items:
        ref, sep, rate = item.partition("=")
        if not sep or not ref.strip() or not rate.strip():
            raise LabError(f"bad --degrade '{item}': write NODE=RATE, e.g. --degrade n3=100mbit")
        pairs.append((ref.strip(), rate.strip()))
    return tuple(pairs)
