"""A fabric snapshot: nodes, ports, links, the subnet manager and routes, as one scan saw them.

The vocabulary is the InfiniBand one the diagnostics print: a link's *width* is its lane
count (1x, 2x, 4x, 8x, 12x) and its *speed* the per-lane generation (SDR ... NDR), named
from the lane signalling rate through the peak catalog (``data/fabrics.toml``), so a
link's data rate here is the same number the rest of fabricbench uses.

A port is keyed by (node GUID, port number); a CA's host is the first word of its node
description ("node01 HCA-1" -> "node01"), which is how real clusters name their HCAs.
``Snapshot.to_dict`` is what a scan stores (artifact ``fabric``, counters as measurements);
``Snapshot.from_stored`` reads it back. Nothing here runs a tool or touches the store.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from fabricbench.analysis.health import natural_key

FORMAT = 1
PortKey = Tuple[str, int]  # (node GUID "0x...", port number)

WIDTHS = (1, 2, 4, 8, 12)
# FDR10 is a Mellanox extension (10.3125 Gb/s lanes, 64b/66b) the catalog does not list.
_EXTRA_SPEEDS = {"FDR10": (10.3125, 10.0)}
COUNTER_BENCHMARK = "port_counters"

ERROR_COUNTERS = (
    "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
    "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
    "PortRcvConstraintErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
    "PortXmitWait",
)
DATA_COUNTERS = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
BYTE_COUNTERS = ("PortXmitData", "PortRcvData")  # stored in bytes (the hardware counts 4-byte words)


@functools.lru_cache(maxsize=1)
def speed_table() -> Dict[str, Tuple[float, float]]:
    """{speed name: (lane signalling Gb/s, lane data Gb/s)} in increasing order, from the peak catalog."""
    from fabricbench.analysis.peaks import fabrics

    table = {f.ib_speed: (f.signalling_gbps, f.data_rate_gbps / f.lanes) for f in fabrics("infiniband") if f.ib_speed}
    table.update(_EXTRA_SPEEDS)
    return dict(sorted(table.items(), key=lambda kv: kv[1][0]))


def speed_rank(speed: Optional[str]) -> int:
    """Position of a speed in the generations (-1 when unknown), for comparisons."""
    names = list(speed_table())
    return names.index(speed) if speed in names else -1


def speed_from_lane_gbps(gbps: float) -> Optional[str]:
    """25.78125 -> 'EDR'; None for a rate no generation uses."""
    for name, (signalling, _) in speed_table().items():
        if abs(signalling - gbps) < 1e-3:
            return name
    return None


def normalise_speed(text: str) -> Optional[str]:
    name = str(text or "").strip().upper()
    return name if name in speed_table() else None


def data_rate_gbps(width: Optional[int], speed: Optional[str]) -> Optional[float]:
    """Data rate per direction of a link (lanes x lane data rate), e.g. 4x EDR -> 100.0."""
    if not width or speed not in speed_table():
        return None
    return width * speed_table()[speed][1]


def link_label(width: Optional[int], speed: Optional[str]) -> str:
    """'4X EDR' as the diagnostics print it; '-' for a port that is not up."""
    if not width and not speed:
        return "-"
    return f"{width or '?'}X {speed or '?'}"


@dataclass
class Node:
    guid: str
    kind: str  # switch, ca, router
    desc: str
    nports: int = 0
    lid: Optional[int] = None  # a switch's LID (port 0); CA ports have their own

    @property
    def host(self) -> Optional[str]:
        """The host a CA belongs to: the first word of its description."""
        if self.kind != "ca" or not self.desc.strip():
            return None
        return self.desc.split()[0]

    @property
    def name(self) -> str:
        return self.desc or self.guid


@dataclass
class Port:
    node: str
    num: int
    guid: Optional[str] = None
    lid: Optional[int] = None
    state: Optional[str] = None  # Down, Initialize, Armed, Active
    phys: Optional[str] = None  # Polling, LinkUp, Disabled, ...
    width: Optional[int] = None  # active lanes
    speed: Optional[str] = None  # active generation
    enabled_widths: List[int] = field(default_factory=list)
    supported_widths: List[int] = field(default_factory=list)
    enabled_speeds: List[str] = field(default_factory=list)
    supported_speeds: List[str] = field(default_factory=list)
    remote: Optional[PortKey] = None
    counters: Dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> PortKey:
        return (self.node, self.num)

    @property
    def up(self) -> bool:
        return self.remote is not None and (self.state or "").lower().startswith("active")

    def capable_width(self) -> Optional[int]:
        """The widest width this port is enabled for and supports (None when PortInfo was not read)."""
        usable = set(self.enabled_widths) & set(self.supported_widths or self.enabled_widths)
        return max(usable) if usable else None

    def capable_speed(self) -> Optional[str]:
        usable = set(self.enabled_speeds) & set(self.supported_speeds or self.enabled_speeds)
        return max(usable, key=speed_rank) if usable else None


@dataclass
class SMInfo:
    lid: Optional[int]
    guid: Optional[str]
    priority: Optional[int]
    state: str  # MASTER, STANDBY, DISCOVERING, NOTACTIVE
    activity: Optional[int] = None


@dataclass
class Link:
    """A cable: two ports that see each other, ordered switch-side first."""

    a: PortKey
    b: PortKey
    width: Optional[int]
    speed: Optional[str]

    @property
    def ends(self) -> Tuple[PortKey, PortKey]:
        return (self.a, self.b)

    @property
    def gbps(self) -> Optional[float]:
        return data_rate_gbps(self.width, self.speed)


@dataclass
class Snapshot:
    taken: str
    source: str  # "sim:NAME" or "live:HOSTNAME"
    nodes: Dict[str, Node] = field(default_factory=dict)
    ports: Dict[PortKey, Port] = field(default_factory=dict)
    sm: Optional[SMInfo] = None  # the master, as sminfo answered
    sms: List[SMInfo] = field(default_factory=list)  # every SM the SA knows (master and standby)
    routes: Optional[Dict[str, Dict[int, int]]] = None  # switch GUID -> {destination LID: out port}
    design: Dict[str, Any] = field(default_factory=dict)  # expected {"width": 4, "speed": "EDR"} when known
    counters_read: bool = False
    problems: List[str] = field(default_factory=list)  # diagnostics that failed or timed out

    # -- lookups -----------------------------------------------------------------------

    def switches(self) -> List[Node]:
        return sorted((n for n in self.nodes.values() if n.kind == "switch"), key=lambda n: natural_key(n.name))

    def cas(self) -> List[Node]:
        return sorted((n for n in self.nodes.values() if n.kind != "switch"), key=lambda n: natural_key(n.name))

    def port_name(self, key: PortKey) -> str:
        node = self.nodes.get(key[0])
        return f"{node.name if node else key[0]} port {key[1]}"

    def links(self) -> List[Link]:
        """Every cable once (both ends in the snapshot and pointing at each other), switch side first."""
        seen, out = set(), []
        for port in self.ports.values():
            if port.remote is None or port.key in seen:
                continue
            other = self.ports.get(port.remote)
            if other is None or other.remote != port.key:
                continue
            seen.update((port.key, other.key))
            a, b = sorted((port, other), key=self._side_order)
            out.append(Link(a.key, b.key, a.width or b.width, a.speed or b.speed))
        return sorted(out, key=lambda l: (self._side_order(self.ports[l.a]), self._side_order(self.ports[l.b])))

    def _side_order(self, port: Port) -> tuple:
        node = self.nodes.get(port.node)
        return (0 if node and node.kind == "switch" else 1, natural_key(node.name if node else port.node), port.num)

    def host_ports(self) -> Dict[str, PortKey]:
        """host name -> its CA's first port that has a cable (or its first port)."""
        out: Dict[str, PortKey] = {}
        for node in self.cas():
            host = node.host
            if not host:
                continue
            ports = sorted((p for p in self.ports.values() if p.node == node.guid), key=lambda p: (p.remote is None, p.num))
            if ports and host not in out:
                out[host] = ports[0].key
        return out

    def lid_of(self, key: PortKey) -> Optional[int]:
        """The LID a packet to this port is addressed to (a switch port: the switch's)."""
        node = self.nodes.get(key[0])
        if node is not None and node.kind == "switch":
            return node.lid
        port = self.ports.get(key)
        return port.lid if port else None

    # -- storing -----------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """The artifact: everything but the counters (they are measurements)."""
        ports = []
        for p in sorted(self.ports.values(), key=lambda p: (p.node, p.num)):
            d = asdict(p)
            d.pop("counters")
            d["remote"] = list(p.remote) if p.remote else None
            ports.append(d)
        return {
            "format": FORMAT,
            "taken": self.taken,
            "source": self.source,
            "design": self.design,
            "nodes": [asdict(n) for n in sorted(self.nodes.values(), key=lambda n: n.guid)],
            "ports": ports,
            "sm": asdict(self.sm) if self.sm else None,
            "sms": [asdict(s) for s in self.sms],
            "routes": {g: {str(lid): port for lid, port in table.items()} for g, table in self.routes.items()}
            if self.routes is not None else None,
            "counters_read": self.counters_read,
            "problems": list(self.problems),
        }

    def counter_measurements(self) -> List[Any]:
        """One measurement per port and counter: the four data counters always, any other when not zero."""
        from fabricbench.store import Measurement

        out = []
        for p in sorted(self.ports.values(), key=lambda p: (p.node, p.num)):
            node = self.nodes.get(p.node)
            for name, value in sorted(p.counters.items()):
                if name not in DATA_COUNTERS and not value:
                    continue
                unit = "bytes" if name in BYTE_COUNTERS else "count"
                out.append(Measurement(benchmark=COUNTER_BENCHMARK, params={"node": p.node, "port": p.num,
                                                                              "name": node.name if node else p.node},
                                       metric=name, unit=unit, value=float(value), n=1))
        return out

    @classmethod
    def from_stored(cls, data: Dict[str, Any], measurements: Iterable[Any] = ()) -> "Snapshot":
        """The snapshot a scan stored: its ``fabric`` artifact and its counter measurements."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a fabric snapshot this fabricbench can read (artifact 'fabric', format 1)")
        snap = cls(taken=data["taken"], source=data.get("source", "?"), design=dict(data.get("design") or {}),
                   counters_read=bool(data.get("counters_read")), problems=list(data.get("problems") or []))
        for n in data.get("nodes", []):
            snap.nodes[n["guid"]] = Node(**n)
        for p in data.get("ports", []):
            p = dict(p)
            p["remote"] = tuple(p["remote"]) if p.get("remote") else None
            port = Port(**p)
            snap.ports[port.key] = port
        if data.get("sm"):
            snap.sm = SMInfo(**data["sm"])
        snap.sms = [SMInfo(**s) for s in data.get("sms") or []]
        if data.get("routes") is not None:
            snap.routes = {g: {int(lid): int(port) for lid, port in table.items()} for g, table in data["routes"].items()}
        for m in measurements:
            if m.benchmark != COUNTER_BENCHMARK:
                continue
            key = (str(m.params.get("node")), int(m.params.get("port", 0)))
            if key in snap.ports and m.value is not None:
                snap.ports[key].counters[m.metric] = int(m.value)
        return snap
