"""The peak catalog (``data/fabrics.toml``): link rates, fabric detection, % of peak, PCIe ceilings.

- ``load_catalog()`` -> ``{key: Fabric}`` (cached), ``get_fabric(name)`` resolves keys and aliases
  (and width suffixes such as ``hdr-2x`` for HDR100).
- ``detect_fabric(host_facts)`` reads the InfiniBand port rate strings recorded from
  ``/sys/class/infiniband/*/ports/*/rate`` (e.g. ``"100 Gb/sec (4X EDR)"``) or, without an
  active InfiniBand port, the fastest physical NIC's ``speed_mbps``.
- ``fabric_for_run(run, hosts)``: the tag ``fabric=...`` wins, then provenance ``fabric``, then
  detection on the hosts.
- ``percent_of_peak(value_MBps, fabric)`` and ``peak_for(benchmark, fabric)`` (bi-bandwidth
  counts both directions).
- ``pcie_link(host_facts)`` / ``ceiling(fabric, host_facts)``: the NIC's PCIe link as a data
  rate, and which of the two (fabric or PCIe) limits bandwidth.

Rates are per direction; MB/s is decimal (1e6 B/s), like OSU and HPCC.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

try:  # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as _toml  # type: ignore[no-redef]

CATALOG_PATH = Path(__file__).resolve().parent.parent / "data" / "fabrics.toml"

# Network devices that are not a fabric: their "speed" is a software number.
VIRTUAL_DRIVERS = frozenset({"veth", "bridge", "tun", "tap", "dummy", "macvlan", "ipvlan", "vxlan", "bonding", "team", "openvswitch", "loopback"})


@dataclass(frozen=True)
class Fabric:
    key: str
    name: str
    family: str  # infiniband, omnipath, ethernet, pcie
    lanes: int
    signalling_gbps: float  # per lane, line rate
    encoding: str
    efficiency: Fraction  # data bits per line bit
    data_rate_gbps: float  # per direction
    data_rate_MBps: float  # per direction, decimal MB/s
    source: str
    aliases: tuple = ()
    ib_speed: Optional[str] = None
    speed_mbps: Optional[int] = None
    pcie_gts: Optional[float] = None
    switch_latency_ns: Optional[tuple] = None

    @property
    def computed_gbps(self) -> float:
        """lanes x signalling x encoding efficiency (what data_rate_gbps must equal)."""
        return self.lanes * self.signalling_gbps * float(self.efficiency)

    def with_lanes(self, lanes: int) -> "Fabric":
        """The same link technology at another width (1x, 2x, 8x, 12x ports)."""
        if lanes == self.lanes:
            return self
        gbps = lanes * self.signalling_gbps * float(self.efficiency)
        label = self.name.replace(f"{self.lanes}x", f"{lanes}x") if f"{self.lanes}x" in self.name else f"{self.name} ({lanes}x)"
        return replace(self, key=f"{self.key}-{lanes}x", name=label, lanes=lanes, data_rate_gbps=gbps, data_rate_MBps=gbps * 125.0, aliases=())

    def to_dict(self) -> Dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "family": self.family,
            "lanes": self.lanes,
            "signalling_gbps": self.signalling_gbps,
            "encoding": self.encoding,
            "efficiency": str(self.efficiency),
            "data_rate_gbps": self.data_rate_gbps,
            "data_rate_MBps": self.data_rate_MBps,
            "switch_latency_ns": list(self.switch_latency_ns) if self.switch_latency_ns else None,
            "aliases": list(self.aliases),
            "source": self.source,
        }


class CatalogError(ValueError):
    pass


def _fabric_from_table(key: str, t: Dict[str, Any]) -> Fabric:
    try:
        return Fabric(
            key=key,
            name=t["name"],
            family=t["family"],
            lanes=int(t["lanes"]),
            signalling_gbps=float(t["signalling_gbps"]),
            encoding=t["encoding"],
            efficiency=Fraction(t["efficiency"]),
            data_rate_gbps=float(t["data_rate_gbps"]),
            data_rate_MBps=float(t["data_rate_MBps"]),
            source=t["source"],
            aliases=tuple(t.get("aliases", ())),
            ib_speed=t.get("ib_speed"),
            speed_mbps=t.get("speed_mbps"),
            pcie_gts=t.get("pcie_gts"),
            switch_latency_ns=tuple(t["switch_latency_ns"]) if t.get("switch_latency_ns") else None,
        )
    except KeyError as exc:
        raise CatalogError(f"{CATALOG_PATH}: [fabric.{key}] lacks {exc.args[0]}") from None


def read_catalog(path: Path = CATALOG_PATH) -> Dict[str, Fabric]:
    """Parse a catalog file (uncached); see load_catalog()."""
    with open(path, "rb") as fh:
        data = _toml.load(fh)
    return {key: _fabric_from_table(key, table) for key, table in data.get("fabric", {}).items()}


@functools.lru_cache(maxsize=1)
def load_catalog() -> Dict[str, Fabric]:
    """Every fabric of data/fabrics.toml by key, in file order."""
    return read_catalog(CATALOG_PATH)


def fabrics(family: Optional[str] = None) -> List[Fabric]:
    return [f for f in load_catalog().values() if family is None or f.family == family]


_WIDTH_SUFFIX = re.compile(r"^(?P<base>.+?)[-_ ]?(?P<lanes>\d+)x$", re.IGNORECASE)


def get_fabric(name: Optional[str]) -> Optional[Fabric]:
    """A fabric by key or alias (case-insensitive), e.g. 'edr', 'OPA', '100gbe', 'hdr-2x'; None if unknown."""
    if not name:
        return None
    wanted = str(name).strip().lower()
    catalog = load_catalog()
    for fab in catalog.values():
        if wanted == fab.key or wanted in (a.lower() for a in fab.aliases):
            return fab
    m = _WIDTH_SUFFIX.match(wanted)
    if m:
        base = get_fabric(m.group("base"))
        if base is not None and base.family in ("infiniband", "omnipath", "pcie"):
            return base.with_lanes(int(m.group("lanes")))
    return None


# -- detection ----------------------------------------------------------------------

_IB_RATE = re.compile(r"(?P<gbps>[\d.]+)\s*Gb/sec(?:\s*\((?P<width>\d+)X\s*(?P<speed>[A-Z0-9]+)?\))?", re.IGNORECASE)


def parse_ib_rate(rate: str) -> Optional[Dict[str, Any]]:
    """'100 Gb/sec (4X EDR)' -> {'gbps': 100.0, 'width': 4, 'speed': 'EDR'}; None if unreadable."""
    if not isinstance(rate, str):
        return None
    m = _IB_RATE.search(rate)
    if not m:
        return None
    return {
        "gbps": float(m.group("gbps")),
        "width": int(m.group("width")) if m.group("width") else None,
        "speed": (m.group("speed") or "").upper() or None,
    }


def _is_active(port: Dict[str, Any]) -> bool:
    state = str(port.get("state") or "").upper()
    return not state or "ACTIVE" in state


def _fabric_for_ib_port(port: Dict[str, Any]) -> Optional[Fabric]:
    parsed = parse_ib_rate(port.get("rate", ""))
    if parsed is None:
        return None
    device = str(port.get("device") or "").lower()
    link_layer = str(port.get("link_layer") or "").lower()
    if link_layer == "ethernet":  # RoCE: the port is an Ethernet NIC; its speed is the Ethernet rate
        return fabric_for_ethernet_speed(int(round(parsed["gbps"] * 1000)))
    if device.startswith("hfi1") or device.startswith("qib"):
        # Omni-Path HFIs report their 100 Gb/s ports as "4X EDR" in sysfs.
        if device.startswith("hfi1"):
            return get_fabric("opa100")
    if parsed["speed"]:
        for fab in fabrics("infiniband"):
            if fab.ib_speed == parsed["speed"]:
                width = parsed["width"] or fab.lanes
                return fab.with_lanes(width)
    # No speed name (old kernels): match the signalling total.
    for fab in fabrics("infiniband"):
        width = parsed["width"] or fab.lanes
        if abs(fab.signalling_gbps * width - parsed["gbps"]) < 0.6 or abs(fab.data_rate_gbps / fab.lanes * width - parsed["gbps"]) < 0.6:
            return fab.with_lanes(width)
    return None


def fabric_for_ethernet_speed(speed_mbps: Optional[int]) -> Optional[Fabric]:
    """The Ethernet catalog entry for a NIC speed in Mb/s (as in /sys/class/net/*/speed)."""
    if not speed_mbps:
        return None
    for fab in fabrics("ethernet"):
        if fab.speed_mbps == int(speed_mbps):
            return fab
    return None


def _physical_nics(host_facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    nics = []
    for nic in host_facts.get("net") or []:
        if not isinstance(nic, dict):
            continue
        name = str(nic.get("name") or "")
        driver = str(nic.get("driver") or "").lower()
        if name == "lo" or driver in VIRTUAL_DRIVERS:
            continue
        if str(nic.get("operstate") or "up").lower() not in ("up", "unknown"):
            continue
        speed = nic.get("speed_mbps")
        if not isinstance(speed, (int, float)) or speed <= 0:
            continue
        nics.append(nic)
    return sorted(nics, key=lambda n: -n["speed_mbps"])


def detect_fabric(host_facts: Optional[Dict[str, Any]]) -> Optional[Fabric]:
    """The fabric a host's facts show: an active InfiniBand/Omni-Path port first, else the fastest NIC."""
    if not isinstance(host_facts, dict):
        return None
    ports = [p for p in host_facts.get("infiniband") or [] if isinstance(p, dict)]
    best: Optional[Fabric] = None
    for port in sorted(ports, key=lambda p: not _is_active(p)):
        if not _is_active(port) and best is not None:
            break
        fab = _fabric_for_ib_port(port)
        if fab is not None and (best is None or fab.data_rate_MBps > best.data_rate_MBps):
            best = fab
    if best is not None:
        return best
    for nic in _physical_nics(host_facts):
        fab = fabric_for_ethernet_speed(int(nic["speed_mbps"]))
        if fab is not None:
            return fab
    return None


def _facts_of(host: Any) -> Dict[str, Any]:
    facts = getattr(host, "facts", host)
    return facts if isinstance(facts, dict) else {}


@dataclass
class FabricChoice:
    """Which fabric a run used and how fabricbench knows: 'tag', 'provenance' or 'detected'."""

    fabric: Fabric
    how: str


def choose_fabric(run: Any, hosts: Sequence[Any] = ()) -> Optional[FabricChoice]:
    """fabric_for_run with the reason; see there."""
    tags = getattr(run, "tags", None) or {}
    fab = get_fabric(tags.get("fabric"))
    if fab is not None:
        return FabricChoice(fab, "tag")
    prov = getattr(run, "provenance", None) or {}
    fab = get_fabric(prov.get("fabric")) if isinstance(prov.get("fabric"), str) else None
    if fab is not None:
        return FabricChoice(fab, "provenance")
    found = [f for f in (detect_fabric(_facts_of(h)) for h in hosts) if f is not None]
    if found:
        # The slowest host's link is the one that bounds the run.
        return FabricChoice(min(found, key=lambda f: f.data_rate_MBps), "detected")
    return None


def fabric_for_run(run: Any, hosts: Sequence[Any] = ()) -> Optional[Fabric]:
    """The run's fabric: tag ``fabric=KEY`` wins, then provenance ``fabric``, then detection on its hosts."""
    choice = choose_fabric(run, hosts)
    return choice.fabric if choice else None


# -- % of peak ---------------------------------------------------------------------

BOTH_DIRECTIONS = frozenset({"bibw"})


def peak_for(benchmark: str, fabric: Optional[Fabric], metric: str = "bandwidth") -> Optional[float]:
    """The peak in MB/s a benchmark's bandwidth can reach on `fabric` (bi-bandwidth: both directions)."""
    if fabric is None:
        return None
    factor = 2.0 if benchmark in BOTH_DIRECTIONS or metric == "bibandwidth" else 1.0
    return fabric.data_rate_MBps * factor


def percent_of_peak(value_MBps: Optional[float], fabric: Optional[Any], directions: int = 1) -> Optional[float]:
    """value as % of the fabric's per-direction data rate (x directions); `fabric` may be a Fabric, key or MB/s."""
    if value_MBps is None or fabric is None:
        return None
    if isinstance(fabric, (int, float)):
        peak = float(fabric)
    elif isinstance(fabric, str):
        fab = get_fabric(fabric)
        if fab is None:
            return None
        peak = fab.data_rate_MBps
    else:
        peak = fabric.data_rate_MBps
    peak *= directions
    return 100.0 * value_MBps / peak if peak > 0 else None


# -- PCIe ceiling ------------------------------------------------------------------

@dataclass(frozen=True)
class PcieLink:
    gts: float
    width: int
    generation: Optional[int]
    data_rate_MBps: float
    nic: Optional[str] = None

    @property
    def name(self) -> str:
        gen = f"Gen{self.generation}" if self.generation else f"{self.gts:g} GT/s"
        return f"PCIe {gen} x{self.width}"


_GTS = re.compile(r"([\d.]+)\s*GT/s", re.IGNORECASE)


def pcie_data_rate(speed: Any, width: Any) -> Optional[PcieLink]:
    """A PCIe link ('8.0 GT/s PCIe' or 8, width 'x16' or 16) as a data rate per direction."""
    if isinstance(speed, (int, float)):
        gts = float(speed)
    else:
        m = _GTS.search(str(speed or ""))
        if not m:
            return None
        gts = float(m.group(1))
    try:
        lanes = int(str(width).lower().lstrip("x"))
    except (TypeError, ValueError):
        return None
    if lanes <= 0 or gts <= 0:
        return None
    for fab in fabrics("pcie"):
        if fab.pcie_gts and abs(fab.pcie_gts - gts) < 0.01:
            gbps = lanes * fab.signalling_gbps * float(fab.efficiency)
            gen = int(re.search(r"Gen(\d)", fab.name).group(1))
            return PcieLink(gts=gts, width=lanes, generation=gen, data_rate_MBps=gbps * 125.0)
    eff = 0.8 if gts < 8 else 128 / 130
    return PcieLink(gts=gts, width=lanes, generation=None, data_rate_MBps=lanes * gts * eff * 125.0)


def pcie_link(host_facts: Optional[Dict[str, Any]]) -> Optional[PcieLink]:
    """The PCIe link of the host's fabric NIC: the fastest physical NIC that reports one."""
    if not isinstance(host_facts, dict):
        return None
    candidates = _physical_nics(host_facts) + [n for n in host_facts.get("net") or [] if isinstance(n, dict)]
    for nic in candidates:
        pcie = nic.get("pcie")
        if isinstance(pcie, dict):
            link = pcie_data_rate(pcie.get("speed"), pcie.get("width"))
            if link is not None:
                return replace(link, nic=nic.get("name"))
    return None


@dataclass(frozen=True)
class Ceiling:
    """What bounds bandwidth: the fabric's data rate or the NIC's PCIe link, whichever is lower."""

    limit_MBps: float
    by: str  # 'fabric' or 'pcie'
    fabric: Optional[Fabric]
    pcie: Optional[PcieLink]

    @property
    def note(self) -> str:
        if self.by == "pcie" and self.fabric is not None and self.pcie is not None:
            return (
                f"{self.pcie.name} ({self.pcie.data_rate_MBps:,.0f} MB/s) on {self.pcie.nic or 'the NIC'} is the ceiling, "
                f"not {self.fabric.name} ({self.fabric.data_rate_MBps:,.0f} MB/s)"
            )
        if self.fabric is not None:
            return f"{self.fabric.name}: {self.fabric.data_rate_MBps:,.0f} MB/s per direction"
        if self.pcie is not None:
            return f"{self.pcie.name}: {self.pcie.data_rate_MBps:,.0f} MB/s per direction"
        return ""


def ceiling(fabric: Optional[Fabric], host_facts: Iterable[Dict[str, Any]] = ()) -> Optional[Ceiling]:
    """The bandwidth ceiling per direction: the fabric unless some host's NIC sits in a slower PCIe link."""
    if isinstance(host_facts, dict):
        host_facts = [host_facts]
    links = [l for l in (pcie_link(_facts_of(f)) for f in host_facts) if l is not None]
    slowest = min(links, key=lambda l: l.data_rate_MBps) if links else None
    if fabric is None and slowest is None:
        return None
    if slowest is not None and (fabric is None or slowest.data_rate_MBps < fabric.data_rate_MBps):
        return Ceiling(slowest.data_rate_MBps, "pcie", fabric, slowest)
    return Ceiling(fabric.data_rate_MBps, "fabric", fabric, slowest)
