"""The simulated fabric's shape: a fat tree of edge and core switches, written as an ibsim net file.

    hosts n1..nN  ->  edge1..edgeE (hosts in contiguous blocks, ports 1..k)
    edge switches ->  core1..coreC (each edge to each core, ``uplinks`` cables, ports k+1...)

With two switches and no core the two edges are cabled to each other; with one, every host
hangs on edge1. The net file is ibnetdiscover's format as ibsim reads it: ``Switch 8 "edge1"``
blocks with ``[port] "remote"[port]`` lines, HCAs named by their host (``Hca 1 "n1" # "n1
HCA-1"``, the description real HCAs carry). Width and speed are *enabled* bit masks:
the file's ``width=``/``speed=``/``extspeed=`` lines give every port the design's (4x EDR:
1x|2x|4x, SDR|DDR|QDR, FDR|EDR) and a degraded cable gets lower masks as ``w=``/``s=``/``e=``
options on *both* its ends, so ibsim and OpenSM agree on what it trains at (ibsim aborts on
ends with nothing in common, and OpenSM re-derives a link's width from either end).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from fabricbench.errors import UsageError

End = Tuple[str, int]  # (node id, port)

WIDTH_BITS = {1: 0x1, 2: 0x10, 4: 0x2, 8: 0x4, 12: 0x8}
SPEED_BITS = {"SDR": 0x1, "DDR": 0x2, "QDR": 0x4}
EXT_SPEED_BITS = {"FDR": 0x1, "EDR": 0x2, "HDR": 0x4}  # what ibsim 0.10 simulates
SIM_SPEEDS = tuple(SPEED_BITS) + tuple(EXT_SPEED_BITS)
MIN_RADIX = 8


def parse_width(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]?\s*", str(text))
    if not m or int(m.group(1)) not in WIDTH_BITS:
        raise UsageError(f"width '{text}': use 1x, 2x, 4x, 8x or 12x")
    return int(m.group(1))


def parse_speed(text: str) -> str:
    name = str(text).strip().upper()
    if name not in SIM_SPEEDS:
        raise UsageError(f"speed '{text}': the simulator knows {', '.join(SIM_SPEEDS)}")
    return name


def parse_link(text: str) -> Tuple[Optional[int], Optional[str]]:
    """'1x', 'FDR', '1xQDR', '2x,FDR' -> (width, speed)."""
    m = re.fullmatch(r"\s*(?:(\d+)\s*[xX])?\s*[,/ ]?\s*([A-Za-z]+)?\s*", str(text))
    if not m or not (m.group(1) or m.group(2)):
        raise UsageError(f"'{text}': give a width (1x, 2x, 4x), a speed (SDR ... HDR) or both (1xQDR)")
    return (parse_width(m.group(1)) if m.group(1) else None, parse_speed(m.group(2)) if m.group(2) else None)


def width_mask(width: int) -> int:
    """Every width up to `width` (a 4x port also trains at 2x and 1x)."""
    return sum(bit for lanes, bit in WIDTH_BITS.items() if lanes <= width)


def speed_masks(speed: str) -> Tuple[int, int]:
    """(base, extended) enabled masks for every speed up to `speed`."""
    order = list(SIM_SPEEDS)
    upto = order[: order.index(speed) + 1]
    return (sum(SPEED_BITS[s] for s in upto if s in SPEED_BITS), sum(EXT_SPEED_BITS[s] for s in upto if s in EXT_SPEED_BITS))


@dataclass
class SimSpec:
    hosts: List[str]
    switches: int = 2
    cores: Optional[int] = None  # None: 0 with up to 2 switches, else a third of them (at least 1)
    width: int = 4
    speed: str = "EDR"
    uplinks: int = 1  # cables between each edge and each core (or between two edges)
    radix: Optional[int] = None  # ports per switch (default: what is needed, at least 8)
    degrade: Dict[str, str] = field(default_factory=dict)  # port reference -> "1x", "FDR", "1xQDR"

    def __post_init__(self):
        if not self.hosts:
            raise UsageError("a simulated fabric needs at least one HCA (--hcas N or --hosts)")
        if len(set(self.hosts)) != len(self.hosts):
            raise UsageError("host names must be unique")
        for h in self.hosts:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", h):
                raise UsageError(f"host name '{h}': letters, digits, '.', '_' and '-' only")
        if self.switches < 1:
            raise UsageError("--switches must be at least 1")
        if self.cores is None:
            self.cores = 0 if self.switches <= 2 else max(1, self.switches // 3)
        if self.cores >= self.switches:
            raise UsageError(f"{self.cores} core switches leave no edge switch for the hosts (--switches {self.switches})")
        if self.switches - self.cores > 2 and self.cores == 0:
            raise UsageError("more than two edge switches need a core switch (--cores 1)")
        if self.switches - self.cores > len(self.hosts):
            raise UsageError(f"{self.switches - self.cores} edge switches for {len(self.hosts)} hosts: some would be empty")
        if self.uplinks < 1:
            raise UsageError("--uplinks must be at least 1")
        self.width = parse_width(str(self.width))
        self.speed = parse_speed(self.speed)
        for value in self.degrade.values():
            parse_link(value)

    def to_dict(self) -> Dict:
        return {"hosts": self.hosts, "switches": self.switches, "cores": self.cores, "width": self.width,
                "speed": self.speed, "uplinks": self.uplinks, "radix": self.radix, "degrade": dict(self.degrade)}


@dataclass
class Topology:
    switches: Dict[str, int]  # name -> ports
    hosts: List[str]
    cables: List[Tuple[End, End]]

    def peer(self, end: End) -> Optional[End]:
        for a, b in self.cables:
            if a == end:
                return b
            if b == end:
                return a
        return None

    def resolve(self, ref: str) -> End:
        """'edge1:3', 'edge1[3]', a host ('n3': its HCA port 1) or 'n3:1' -> (node id, port)."""
        m = re.fullmatch(r"\s*([A-Za-z0-9._-]+?)\s*(?::(\d+)|\[(\d+)\])?\s*", str(ref))
        if not m:
            raise UsageError(f"port '{ref}': write SWITCH:PORT (edge1:3) or a host name (n3)")
        node, port = m.group(1), int(m.group(2) or m.group(3) or 0)
        if node in self.switches:
            if not 1 <= port <= self.switches[node]:
                raise UsageError(f"port '{ref}': {node} has ports 1 to {self.switches[node]}")
            return node, port
        if node in self.hosts:
            if port not in (0, 1):
                raise UsageError(f"port '{ref}': the HCA of {node} has one port")
            return node, 1
        raise UsageError(f"port '{ref}': no switch or host '{node}' (switches {', '.join(self.switches)}; "
                         f"hosts {self.hosts[0]} ... {self.hosts[-1]})")

    def cable(self, ref: str) -> Tuple[End, End]:
        """The cable at a port: (switch end, other end) - or the two ends as given between hosts."""
        end = self.resolve(ref)
        other = self.peer(end)
        if other is None:
            raise UsageError(f"port '{ref}' ({end[0]} port {end[1]}) has no cable")
        return (other, end) if other[0] in self.switches and end[0] not in self.switches else (end, other)


def build(spec: SimSpec) -> Topology:
    """The cabling of a spec (see the module docstring); UsageError for a degradation it cannot place."""
    n_edges = spec.switches - spec.cores
    edges = [f"edge{i}" for i in range(1, n_edges + 1)]
    cores = [f"core{i}" for i in range(1, spec.cores + 1)]
    blocks = [spec.hosts[i * len(spec.hosts) // n_edges:(i + 1) * len(spec.hosts) // n_edges] for i in range(n_edges)]
    cables: List[Tuple[End, End]] = []
    used = {name: 0 for name in edges + cores}

    def take(switch: str) -> int:
        used[switch] += 1
        return used[switch]

    for edge, block in zip(edges, blocks):
        for host in block:
            cables.append(((edge, take(edge)), (host, 1)))
    if cores:
        for edge in edges:
            for core in cores:
                for _ in range(spec.uplinks):
                    cables.append(((edge, take(edge)), (core, take(core))))
    elif n_edges == 2:
        for _ in range(spec.uplinks):
            cables.append(((edges[0], take(edges[0])), (edges[1], take(edges[1]))))
    radix = max([MIN_RADIX, spec.radix or 0] + list(used.values()))
    if spec.radix and max(used.values()) > spec.radix:
        raise UsageError(f"--radix {spec.radix} is too small: a switch needs {max(used.values())} ports")
    topo = Topology({name: radix for name in edges + cores}, list(spec.hosts), cables)
    degraded_ends(spec, topo)  # a degradation of a port that is not there fails here, before anything starts
    return topo


def degraded_ends(spec: SimSpec, topo: Topology) -> Dict[End, Tuple[int, str]]:
    """Both ends of every degraded cable -> the (width, speed) it trains at."""
    out: Dict[End, Tuple[int, str]] = {}
    for ref, value in spec.degrade.items():
        width, speed = parse_link(value)
        a, b = topo.cable(ref)
        for end in (a, b):
            old_w, old_s = out.get(end, (spec.width, spec.speed))
            new_w = min(width, old_w) if width else old_w
            new_s = speed if speed and SIM_SPEEDS.index(speed) < SIM_SPEEDS.index(old_s) else old_s
            out[end] = (min(new_w, spec.width), new_s if SIM_SPEEDS.index(new_s) <= SIM_SPEEDS.index(spec.speed) else spec.speed)
    return out


def render(spec: SimSpec, topo: Topology, title: str = "") -> str:
    """The ibsim net file of a topology."""
    low = degraded_ends(spec, topo)
    base, ext = speed_masks(spec.speed)
    lines = [f"# {title}" if title else "# fabricbench simulated fabric",
             f"# {len(topo.switches)} switches, {len(topo.hosts)} HCAs, {spec.width}X {spec.speed}",
             f"width={width_mask(spec.width)}", f"speed={base}", f"extspeed={ext}", ""]
    ports: Dict[str, List[Tuple[int, End]]] = {}
    for a, b in topo.cables:
        ports.setdefault(a[0], []).append((a[1], b))
        ports.setdefault(b[0], []).append((b[1], a))

    def port_line(node: str, port: int, remote: End) -> str:
        line = f'[{port}]\t"{remote[0]}"[{remote[1]}]'
        if (node, port) in low:
            width, speed = low[(node, port)]
            b_mask, e_mask = speed_masks(speed)
            line += f"\tw={width_mask(width)} s={b_mask} e={e_mask}"
        return line

    for name, nports in topo.switches.items():
        lines.append(f'Switch\t{nports} "{name}"')
        lines += [port_line(name, p, r) for p, r in sorted(ports.get(name, []))]
        lines.append("")
    for host in topo.hosts:
        lines.append(f'Hca\t1 "{host}"\t# "{host} HCA-1"')
        lines += [port_line(host, p, r) for p, r in sorted(ports.get(host, []))]
        lines.append("")
    return "\n".join(lines)
