"""The peak catalog (``data/fabrics.toml``): link rates, fabric detection, % of peak, PCIe ceilings.

- ``load_catalog()`` -> ``{key: Fabric}`` (cached), ``get_fabric(name)`` resolves keys and aliases
  (and width suffixes such as ``hdr-2x`` for HDR100).
- ``detect_fabric(host_facts)`` reads the InfiniBand port rate strings recorded from
  ``/sys/class/infiniband/*/ports/*/rate`` (e.g. ``"100 Gb/sec (4X EDR)"``) or, without an
  active InfiniBand port, the fastest physical NIC's ``speed_mbps``.
- ``resolve_fabric(name)``: like get_fabric, but an unknown name raises ``UnknownFabric``
  listing the closest catalog names; ``lab``/``lab-1g``/``lab-500m`` name a shaped lab link.
- ``choose_fabric(run, hosts)`` / ``fabric_for_run``: the tag ``fabric=...`` wins, then
  provenance ``fabric``, then the shaped rate a lab run recorded (provenance ``lab``), then
  "shared memory" when every rank sat on one host, then detection on the hosts.
- ``run_ceiling(run, hosts)``: the bandwidth ceiling per direction, or why there is none
  ("shared memory: no link ceiling", an unknown tag, nothing known).
- ``link_multiple(benchmark, metric, params, run)``: how many link directions an aggregate
  figure can fill (bi-bandwidth 2, mbw_mr the pairs' distinct sending hosts);
  ``point_peak`` multiplies it out (``report.words.peaks.over_peak_note`` explains a figure above 100%).
- ``percent_of_peak(value_MBps, fabric)`` and ``peak_for(benchmark, fabric)`` (bi-bandwidth
  counts both directions).
- ``pcie_link(host_facts)`` / ``ceiling(fabric, host_facts)``: the NIC's PCIe link as a data
  rate, and which of the two (fabric or PCIe) limits bandwidth.

Rates are per direction; MB/s is decimal (1e6 B/s), like OSU and HPCC.

The CPUs' double-precision peak (what HPL's efficiency is against) is at the end: ``detect_peak``.
"""
from __future__ import annotations

import difflib
import functools
import os
import re
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from fabricbench.errors import FabricbenchError
# Still on tests/test_layers.py STILL_WORDING: names that are data ("lab link shaped to 1 Gb/s", "PCIe Gen3
# x16", a CPU peak's recorded source).
from fabricbench import numbers

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
    mpi_latency_us: Optional[tuple] = None  # [low, high] as published, for models/fabric.py
    mpi_bandwidth_MBps: Optional[tuple] = None
    perf_source: Optional[str] = None

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
            "mpi_latency_us": list(self.mpi_latency_us) if self.mpi_latency_us else None,
            "mpi_bandwidth_MBps": list(self.mpi_bandwidth_MBps) if self.mpi_bandwidth_MBps else None,
            "perf_source": self.perf_source,
            "aliases": list(self.aliases),
            "source": self.source,
        }


class CatalogError(ValueError):
    pass


class UnknownFabric(FabricbenchError):
    """A fabric name (a fabric= tag) that is not in the catalog."""

    exit_code = 2


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
            mpi_latency_us=tuple(t["mpi_latency_us"]) if t.get("mpi_latency_us") else None,
            mpi_bandwidth_MBps=tuple(t["mpi_bandwidth_MBps"]) if t.get("mpi_bandwidth_MBps") else None,
            perf_source=t.get("perf_source"),
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


def names() -> List[str]:
    """Every key and alias of the catalog."""
    out: List[str] = []
    for fab in load_catalog().values():
        out += [fab.key, *fab.aliases]
    return out


_LAB_TAG = re.compile(r"^lab(?:[-_ ]?(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt])(?:bit|b)?)?$", re.IGNORECASE)
_LAB_UNITS = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def lab_fabric(rate_bps: float, how: str = "") -> Fabric:
    """A lab link shaped (tc htb) to rate_bps bits/s, as a catalog-like entry."""
    gbps = rate_bps / 1e9
    label = f"{numbers.short(gbps)} Gb/s" if rate_bps >= 1e9 else f"{numbers.short(rate_bps / 1e6)} Mb/s"
    return Fabric(key=f"lab-{_rate_key(rate_bps)}", name=f"lab link shaped to {label}", family="lab", lanes=1,
                  signalling_gbps=gbps, encoding="none (token bucket on a veth)", efficiency=Fraction(1),
                  data_rate_gbps=gbps, data_rate_MBps=rate_bps / 8e6,
                  source=how or "the tc rate the lab's links were shaped to")


def is_lab(fabric: Optional[Fabric]) -> bool:
    """Whether a ceiling's fabric is a lab link's shaped rate (a token bucket, not a wire)."""
    return fabric is not None and fabric.family == "lab"


def _rate_key(bps: float) -> str:
    for unit, scale in (("g", 1e9), ("m", 1e6), ("k", 1e3)):
        if bps >= scale and (bps / scale).is_integer():
            return f"{int(bps / scale)}{unit}"
    return f"{numbers.short(bps)}bit"


def lab_tag(rate_bps: float) -> str:
    """The fabric tag of a lab link as the docs write it: 1e9 -> 'lab-1g', 5e8 -> 'lab-500m'."""
    return f"lab-{_rate_key(rate_bps)}"


def resolve_fabric(name: str) -> Optional[Fabric]:
    """A fabric by key, alias or lab rate ('lab-1g'); bare 'lab' gives None (the run says its rate).

    Raises UnknownFabric, naming the closest catalog names, for anything else.
    """
    wanted = str(name).strip()
    lab = _LAB_TAG.match(wanted)
    if lab:
        if not lab.group("num"):
            return None
        return lab_fabric(float(lab.group("num")) * _LAB_UNITS[lab.group("unit").lower()], "the rate in the fabric tag")
    fab = get_fabric(wanted)
    if fab is not None:
        return fab
    close = difflib.get_close_matches(wanted.lower(), [n.lower() for n in names()] + ["lab-1g"], n=4, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownFabric(f"unknown fabric '{wanted}'{hint} (see 'fabricbench fabrics'; lab links: lab-1g, lab-500m, ...)")


def check_fabric_tags(tags: Dict[str, str]) -> None:
    """Raise UnknownFabric when a fabric= tag names nothing the catalog knows."""
    if tags.get("fabric") is not None:
        resolve_fabric(tags["fabric"])


def has_link(fabric: Optional[Fabric]) -> bool:
    """False for 'shared memory' (and unknown): no link data rate to compare against."""
    return fabric is not None and fabric.data_rate_MBps > 0


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
    """Which fabric a run used and how fabricbench knows: 'tag', 'provenance', 'lab', 'one host' or 'detected'."""

    fabric: Fabric
    how: str


def lab_shape_fabric(provenance: Any) -> Optional[Fabric]:
    """The link a lab run crossed, from the shape it recorded (provenance "lab"): the slowest
    link among the nodes it used, and the uplink when they hang on both switches."""
    lab = provenance.get("lab") if isinstance(provenance, dict) else None
    if not isinstance(lab, dict):
        return None
    nodes = [n for n in (lab.get("nodes") or {}).values() if isinstance(n, dict)] if isinstance(lab.get("nodes"), dict) else []
    rates = [n["rate_bps"] for n in nodes if _positive(n.get("rate_bps"))]
    if not rates and _positive(lab.get("link_bps")):
        rates = [lab["link_bps"]]
    if len({n.get("switch") for n in nodes}) > 1 and _positive(lab.get("uplink_bps")):
        rates.append(lab["uplink_bps"])
    if not rates:
        return None
    return lab_fabric(float(min(rates)), f"lab '{lab.get('name', '?')}': links shaped with tc htb (recorded with the run)")


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _node_count(run: Any, hosts: Sequence[Any]) -> Optional[int]:
    prov = getattr(run, "provenance", None) or {}
    nodes = prov.get("nodes") if isinstance(prov, dict) else None
    if isinstance(nodes, int) and nodes > 0:
        return nodes
    names = prov.get("hosts") if isinstance(prov, dict) else None
    if isinstance(names, list) and names:
        return len(set(map(str, names)))
    if hosts:
        return len({getattr(h, "hostname", id(h)) for h in hosts})
    return None


def _tag_fabric(run: Any) -> Tuple[Optional[Fabric], Optional[str]]:
    """(fabric named by the run's tag, problem text when the tag names nothing known)."""
    tag = (getattr(run, "tags", None) or {}).get("fabric")
    if not tag:
        return None, None
    try:
        return resolve_fabric(tag), None
    except UnknownFabric as exc:
        return None, str(exc)


def choose_fabric(run: Any, hosts: Sequence[Any] = ()) -> Optional[FabricChoice]:
    """fabric_for_run with the reason; see there."""
    prov = getattr(run, "provenance", None) or {}
    tagged, _problem = _tag_fabric(run)
    lab = lab_shape_fabric(prov)
    if tagged is not None and not (tagged.family == "lab" and lab is not None):
        return FabricChoice(tagged, "tag")
    fab = get_fabric(prov.get("fabric")) if isinstance(prov.get("fabric"), str) else None
    if fab is not None:
        return FabricChoice(fab, "provenance")
    if lab is not None:
        return FabricChoice(lab, "lab")
    if tagged is not None:  # a lab-RATE tag on a run that did not record its lab
        return FabricChoice(tagged, "tag")
    if _node_count(run, ()) == 1:  # the run says so; a single recorded host's facts alone do not
        return FabricChoice(get_fabric("shm"), "one host")
    found = [f for f in (detect_fabric(_facts_of(h)) for h in hosts) if f is not None]
    if found:
        # The slowest host's link is the one that bounds the run.
        return FabricChoice(min(found, key=lambda f: f.data_rate_MBps), "detected")
    return None


def fabric_for_run(run: Any, hosts: Sequence[Any] = ()) -> Optional[Fabric]:
    """The run's fabric: tag ``fabric=KEY`` wins, then provenance ``fabric``, then a lab's recorded
    link rate, then shared memory for one host, then detection on its hosts."""
    choice = choose_fabric(run, hosts)
    return choice.fabric if choice else None


@dataclass(frozen=True)
class RunPeak:
    """A run's bandwidth ceiling per direction, or why it has none."""

    ceiling: Optional["Ceiling"]
    why_none: str = ""


SHARED_MEMORY = "shared memory: no link ceiling"


def run_ceiling(run: Any, hosts: Sequence[Any] = ()) -> RunPeak:
    """The ceiling bandwidth is compared against (fabric or PCIe), or the reason there is none."""
    _tagged, problem = _tag_fabric(run)
    if problem:
        return RunPeak(None, f"{problem}: no peak shown")
    choice = choose_fabric(run, hosts)
    if choice is not None and not has_link(choice.fabric):
        return RunPeak(None, SHARED_MEMORY)
    facts = [_facts_of(h) for h in hosts]
    if choice is not None and choice.fabric.family == "lab":
        return RunPeak(Ceiling(choice.fabric.data_rate_MBps, "fabric", choice.fabric, None))
    c = ceiling(choice.fabric if choice else None, facts)
    if c is None:
        return RunPeak(None, "no fabric known: tag the run with --tag fabric=KEY (see 'fabricbench fabrics')")
    return RunPeak(c)


# -- aggregate figures ---------------------------------------------------------------

def _pairs_of(params: Dict[str, Any], ranks: Optional[int]) -> Optional[int]:
    pairs = params.get("pairs")
    if isinstance(pairs, int) and pairs > 0:
        return pairs
    return ranks // 2 if isinstance(ranks, int) and ranks >= 2 else None


def link_multiple(benchmark: str, metric: str, params: Dict[str, Any], run: Any = None) -> Tuple[Optional[float], str]:
    """How many link directions a figure can fill, and a note on how that was worked out.

    Bi-bandwidth: 2 (both directions). mbw_mr: pairs (i, i + np/2) send at once, so the
    aggregate is bounded by the number of distinct hosts sending across (and receiving);
    pairs inside one host bypass the link, and then no multiple bounds the aggregate (None).
    Everything else: 1.
    """
    if benchmark == "bibw" or metric == "bibandwidth":
        return 2.0, "both directions at once: 2 x the link"
    if benchmark != "mbw_mr":
        return 1.0, ""
    prov = getattr(run, "provenance", None) or {}
    ranks = params.get("ranks") if isinstance(params.get("ranks"), int) else getattr(run, "ranks", None)
    pairs = _pairs_of(params, ranks)
    placement = prov.get("rank_hosts") if isinstance(prov, dict) else None
    if pairs and isinstance(ranks, int) and isinstance(placement, list) and len(placement) >= ranks:
        half = ranks // 2
        senders = [placement[i] for i in range(pairs)]
        receivers = [placement[i + half] for i in range(pairs)]
        inside = sum(1 for s, r in zip(senders, receivers) if s == r)
        if inside:
            return None, f"{inside} of {pairs} pairs ran inside one host: that traffic never crossed a link"
        n = min(len(set(senders)), len(set(receivers)))
        return float(n), f"{pairs} pairs sending from {len(set(senders))} host(s): {n} x the link"
    nodes = _node_count(run, ()) if run is not None else None
    if pairs and nodes and nodes > 1:
        n = max(1, min(pairs, nodes // 2))
        return float(n), f"{pairs} pairs over {nodes} hosts (rank placement not recorded): at most {n} x the link"
    return 1.0, "rank placement not recorded: 1 x the link"


def point_peak(ceiling_: Optional["Ceiling"], benchmark: str, metric: str, params: Dict[str, Any],
               run: Any = None) -> Tuple[Optional[float], str]:
    """(peak in MB/s for this figure, how the multiple was chosen); None when no ceiling bounds it."""
    if ceiling_ is None:
        return None, ""
    multiple, note = link_multiple(benchmark, metric, params, run)
    if multiple is None:
        return None, note
    return ceiling_.limit_MBps * multiple, note


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
        gen = f"Gen{self.generation}" if self.generation else f"{numbers.short(self.gts)} GT/s"
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
    pcie: Optional[PcieLink]  # report/words/peaks.py says which bounds it and at what rate


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


# ---- the CPUs' double-precision peak (HPL) ----------------------------------------------------------
# The theoretical double-precision peak of the CPUs an HPL run used.
#
# peak = cores x frequency x DP flops per cycle per core, where the flops per cycle come
# from the widest vector instruction set /proc/cpuinfo lists: AVX-512 (avx512f) 32,
# AVX2 with FMA 16, AVX 8, SSE2 4. These assume two FMA/vector units per core, as on
# most server CPUs; parts with one AVX-512 unit peak at half that. The frequency is the
# cpufreq maximum if the kernel exposes it, else the nominal clock in the model name
# (``@ 2.30GHz``), else the highest ``cpu MHz`` reported. Vector code often runs below
# the nominal clock (the seed study's E5-2698v3: 2.3 GHz nominal, 1.9 GHz under AVX2),
# so efficiency against this peak is an upper-bound denominator; ``--peak-gflops``
# overrides it.

ISA_FLOPS: List[Tuple[str, Tuple[str, ...], int]] = [
    ("avx512", ("avx512f",), 32),
    ("avx2+fma", ("avx2", "fma"), 16),
    ("avx", ("avx",), 8),
    ("sse2", ("sse2",), 4),
]


@dataclass
class CpuPeak:
    gflops: float
    cores: int
    ghz: Optional[float]
    flops_per_cycle: Optional[int]
    isa: Optional[str]
    model: Optional[str]
    source: str  # how the figure was obtained

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def flops_per_cycle(flags: Set[str]) -> Tuple[str, int]:
    """(instruction set, DP flops per cycle per core) for a set of /proc/cpuinfo flags."""
    for isa, needed, flops in ISA_FLOPS:
        if all(f in flags for f in needed):
            return isa, flops
    return "scalar", 2


def read_cpuinfo(path: str = "/proc/cpuinfo") -> List[Dict[str, str]]:
    """One dict per logical CPU."""
    cpus: List[Dict[str, str]] = []
    current: Dict[str, str] = {}
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    for line in text.splitlines():
        if not line.strip():
            if current:
                cpus.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        cpus.append(current)
    return cpus


def physical_cores(cpus: List[Dict[str, str]]) -> int:
    """Distinct (package, core) pairs; logical CPUs when the file does not say."""
    pairs = {(c.get("physical id"), c.get("core id")) for c in cpus if "core id" in c}
    return len(pairs) if pairs else max(1, len(cpus) or (os.cpu_count() or 1))


def frequency_ghz(cpus: List[Dict[str, str]], sys_cpu: str = "/sys/devices/system/cpu") -> Tuple[Optional[float], str]:
    try:
        khz = int(open(os.path.join(sys_cpu, "cpu0", "cpufreq", "cpuinfo_max_freq")).read().strip())
        if khz > 0:
            return khz / 1e6, "cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    model = cpus[0].get("model name", "") if cpus else ""
    m = re.search(r"@\s*([\d.]+)\s*GHz", model)
    if m:
        return float(m.group(1)), "model name"
    mhz = []
    for c in cpus:
        try:
            mhz.append(float(c.get("cpu MHz", "")))
        except ValueError:
            pass
    if mhz:
        return max(mhz) / 1000.0, "/proc/cpuinfo cpu MHz"
    return None, "unknown"


def detect_peak(ranks: int, nodes: int = 1, cpuinfo: str = "/proc/cpuinfo",
                sys_cpu: str = "/sys/devices/system/cpu") -> Optional[CpuPeak]:
    """Peak of the cores ``ranks`` processes run on (one core each, at most all cores of
    ``nodes`` nodes like this one); None when the frequency cannot be found."""
    cpus = read_cpuinfo(cpuinfo)
    flags = set(cpus[0].get("flags", "").split()) if cpus else set()
    isa, fpc = flops_per_cycle(flags)
    ghz, how = frequency_ghz(cpus, sys_cpu)
    if ghz is None:
        return None
    cores = max(1, min(ranks, physical_cores(cpus) * max(1, nodes)))
    return CpuPeak(
        gflops=round(cores * ghz * fpc, 3),
        cores=cores,
        ghz=round(ghz, 4),
        flops_per_cycle=fpc,
        isa=isa,
        model=cpus[0].get("model name") if cpus else None,
        source=f"{cores} cores x {numbers.fixed(ghz, 3)} GHz ({how}) x {fpc} DP flops/cycle ({isa})",
    )


def given_peak(gflops: float) -> CpuPeak:
    return CpuPeak(gflops=gflops, cores=0, ghz=None, flops_per_cycle=None, isa=None, model=None,
                   source="given with --peak-gflops")
