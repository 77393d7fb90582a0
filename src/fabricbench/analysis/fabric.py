"""The fabric verdict: one snapshot (and the one before it) judged by fixed rules.

``check(snapshot, previous, thresholds)`` is the one place a fabric verdict is computed;
``fabricbench fabric check``, ``fabric scan`` and the report's fabric section all call it.

The rules (a finding names its ports, switch side first):

- ``sm``: no subnet manager answered as master (critical), or more than one master.
- ``down``: a cable that was up in the previous snapshot is gone or its ports are not
  Active (critical); ``state``: a cabled port the SM has not brought to Active (warning).
- ``degraded``: a link below the width or speed it should run at (a 4x link at 1x, an EDR
  link at FDR). What it should run at is the best of: what both its ports are enabled for
  and support (a link trained down), the design width and speed (``--width/--speed``, or
  recorded by the simulator), and what the same link ran at in the previous snapshot.
  Critical below half the expected data rate, else warning.
- ``errors``: a port whose error counter is at or above its threshold (``ERROR_THRESHOLDS``,
  the defaults of ibqueryerrors) or grew by ``GROWTH_THRESHOLDS`` since the previous
  snapshot (warning). Counters that went down were cleared; that is not a finding.

Alongside: the ten worst ports by errors and the ten busiest by utilisation (the data
counters' growth over the time between the snapshots against the link's data rate; with
no previous snapshot, the bytes counted since the counters were last cleared), as the
Fabric Manager GUI shows them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from fabricbench.analysis.fabric_model import (
    BYTE_COUNTERS,
    Link,
    PortKey,
    Snapshot,
    data_rate_gbps,
    link_label,
    speed_rank,
    speed_table,
)
from fabricbench.analysis.verdict import Verdict

# ibqueryerrors' default thresholds (/etc/infiniband-diags/error_thresholds); PortXmitWait
# measures congestion, not errors, and is only ranked.
ERROR_THRESHOLDS: Mapping[str, int] = {
    "SymbolErrorCounter": 10, "LinkErrorRecoveryCounter": 10, "LinkDownedCounter": 10, "PortRcvErrors": 10,
    "PortRcvRemotePhysicalErrors": 100, "PortRcvSwitchRelayErrors": 100, "PortXmitDiscards": 100,
    "PortXmitConstraintErrors": 100, "PortRcvConstraintErrors": 100, "LocalLinkIntegrityErrors": 10,
    "ExcessiveBufferOverrunErrors": 10, "VL15Dropped": 100,
}
# Growth between two scans that is flagged even below the threshold: a link that went down and
# came back, a buffer overrun or a link integrity error is worth a look every time; symbol and
# receive errors come in small bursts on healthy long cables.
GROWTH_THRESHOLDS: Mapping[str, int] = {
    "SymbolErrorCounter": 10, "LinkErrorRecoveryCounter": 1, "LinkDownedCounter": 1, "PortRcvErrors": 10,
    "PortRcvRemotePhysicalErrors": 100, "PortRcvSwitchRelayErrors": 100, "PortXmitDiscards": 100,
    "PortXmitConstraintErrors": 100, "PortRcvConstraintErrors": 100, "LocalLinkIntegrityErrors": 1,
    "ExcessiveBufferOverrunErrors": 1, "VL15Dropped": 100,
}
TOP = 10


@dataclass(frozen=True)
class FabricThresholds:
    errors: Mapping[str, int] = field(default_factory=lambda: dict(ERROR_THRESHOLDS))
    growth: Mapping[str, int] = field(default_factory=lambda: dict(GROWTH_THRESHOLDS))
    width: Optional[int] = None  # expected width of every link (else the snapshot's design)
    speed: Optional[str] = None  # expected speed of every link
    top: int = TOP


@dataclass
class FabricFinding:
    kind: str  # sm, down, state, degraded, errors
    severity: str  # critical, warning, info
    ports: List[str]  # port names, switch side first
    evidence: str  # '' for the kinds whose evidence has figures (degraded, errors): report/words/fabric.py
    values: Dict[str, Any] = field(default_factory=dict)
    figures: Dict[str, Any] = field(default_factory=dict)  # what the words of degraded and errors say

    @property
    def problem(self) -> bool:
        return self.severity in ("warning", "critical")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class PortRank:
    port: str
    peer: Optional[str]
    value: float  # total errors; or utilisation in % (or bytes when no previous snapshot)
    # worst errors: {"counters": [[name, value], ...]} (largest first); busiest: {"sent", "received"} bytes,
    # and between snapshots "seconds" and "link" (its width and speed); worded by report/words/fabric.py
    figures: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class FabricReport(Verdict):
    snapshot: Snapshot
    previous: Optional[Snapshot]
    findings: List[FabricFinding]
    worst_errors: List[PortRank]
    busiest: List[PortRank]
    utilisation_unit: str  # "%" (between snapshots) or "bytes" (since the counters were cleared)
    notes: List[str]
    thresholds: FabricThresholds

    # The verdict in words ("HEALTHY: 3 switches, ...", "PROBLEMS: 2 degraded links (...)"):
    # report/words/fabric.py verdict(), which report_dict() adds to to_dict() as "verdict".

    def to_dict(self) -> Dict[str, Any]:
        return {
            "healthy": self.healthy,
            "exit_status": self.exit_status,
            "findings": [f.to_dict() for f in self.findings],
            "worst_errors": [r.to_dict() for r in self.worst_errors],
            "busiest": [r.to_dict() for r in self.busiest],
            "utilisation_unit": self.utilisation_unit,
            "notes": self.notes,
            "snapshot": {"taken": self.snapshot.taken, "source": self.snapshot.source,
                         "switches": len(self.snapshot.switches()), "hcas": len(self.snapshot.cas()),
                         "links": len(self.snapshot.links()), "sm": sm_owner(self.snapshot)},
            "previous": {"taken": self.previous.taken} if self.previous else None,
        }


# -- the rules -------------------------------------------------------------------------------

def check(snapshot: Snapshot, previous: Optional[Snapshot] = None,
          thresholds: FabricThresholds = FabricThresholds()) -> FabricReport:
    """Judge a snapshot (against the previous one of the same fabric, when given)."""
    findings: List[FabricFinding] = []
    notes: List[str] = []
    findings += _sm_findings(snapshot)
    if previous is not None:
        notes.append(f"compared with the snapshot of {previous.taken}")
        findings += _down_findings(snapshot, previous)
    else:
        notes.append("no earlier snapshot of this fabric: counters are judged against thresholds only")
    findings += _state_findings(snapshot)
    findings += _degraded_findings(snapshot, previous, thresholds)
    if snapshot.counters_read:
        findings += _error_findings(snapshot, previous, thresholds)
    else:
        notes.append("error counters could not be read (ibqueryerrors failed): no error findings")
    notes += [f"scan problem: {p}" for p in snapshot.problems]
    order = {"critical": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order.get(f.severity, 3))
    busiest, unit = _busiest(snapshot, previous, thresholds.top)
    return FabricReport(snapshot, previous, findings, _worst_errors(snapshot, previous, thresholds.top), busiest, unit,
                        notes, thresholds)


def sm_owner(snap: Snapshot) -> Optional[str]:
    """The name of the node the master subnet manager runs on (its GUID when unnamed); None without one.
    report/words/fabric.py describe_sm says it with its LID and priority."""
    if snap.sm is None:
        return None
    return _port_owner_name(snap, snap.sm.guid) or snap.sm.guid


def _port_owner_name(snap: Snapshot, port_guid: Optional[str]) -> Optional[str]:
    for port in snap.ports.values():
        if port.guid == port_guid:
            return snap.nodes[port.node].name if port.node in snap.nodes else None
    node = snap.nodes.get(port_guid or "")
    return node.name if node else None


def _sm_findings(snap: Snapshot) -> List[FabricFinding]:
    if snap.sm is None or snap.sm.state != "MASTER":
        state = f" (sminfo says {snap.sm.state})" if snap.sm else ""
        return [FabricFinding("sm", "critical", [], f"no subnet manager answered as master{state}: "
                              "no LIDs or routes are assigned to new or changed ports")]
    masters = [s for s in snap.sms if s.state == "MASTER"]
    if len({s.guid for s in masters}) > 1:
        return [FabricFinding("sm", "critical", [], f"{len(masters)} subnet managers claim to be master: "
                              + ", ".join(_port_owner_name(snap, s.guid) or str(s.guid) for s in masters))]
    return []


def _link_names(snap: Snapshot, link: Link) -> List[str]:
    return [snap.port_name(link.a), snap.port_name(link.b)]


def _down_findings(snap: Snapshot, previous: Snapshot) -> List[FabricFinding]:
    now = {frozenset(l.ends): l for l in snap.links()}
    out = []
    for link in previous.links():
        a, b = previous.ports[link.a], previous.ports[link.b]
        if not (a.up and b.up):
            continue
        current = now.get(frozenset(link.ends))
        if current is not None and snap.ports[current.a].up and snap.ports[current.b].up:
            continue
        states = []
        for key in link.ends:
            port = snap.ports.get(key)
            if port is None:
                states.append(f"{previous.port_name(key)} not found")
            else:
                states.append(f"{snap.port_name(key)} {port.state or '?'}/{port.phys or '?'}")
        out.append(FabricFinding("down", "critical", _link_names(previous, link),
                                 f"was {link_label(link.width, link.speed)} Active on {previous.taken}; now "
                                 + ", ".join(states),
                                 {"was": link_label(link.width, link.speed), "ends": [list(k) for k in link.ends]}))
    return out


def _state_findings(snap: Snapshot) -> List[FabricFinding]:
    out = []
    for link in snap.links():
        idle = [k for k in link.ends if not (snap.ports[k].state or "").lower().startswith("active")]
        if idle:
            out.append(FabricFinding("state", "warning", _link_names(snap, link),
                                     "cabled but " + ", ".join(f"{snap.port_name(k)} is {snap.ports[k].state}" for k in idle)
                                     + ": the subnet manager has not activated it"))
    return out


def _expected(snap: Snapshot, link: Link, previous: Optional[Snapshot], before: Dict[frozenset, Link],
              thresholds: FabricThresholds) -> Tuple[Optional[int], Optional[str], List[str]]:
    """The width and speed the link should run at, and where each expectation comes from."""
    candidates: List[Tuple[Optional[int], Optional[str], str]] = []
    a, b = snap.ports[link.a], snap.ports[link.b]
    cw = [p.capable_width() for p in (a, b)]
    cs = [p.capable_speed() for p in (a, b)]
    if None not in cw or None not in cs:
        width = min(cw) if None not in cw else None
        speed = min(cs, key=speed_rank) if None not in cs else None
        candidates.append((width, speed, f"both ports enabled for {link_label(width, speed)}"))
    design_w = thresholds.width or snap.design.get("width")
    design_s = thresholds.speed or snap.design.get("speed")
    if design_w or design_s:
        candidates.append((design_w, design_s, f"design {link_label(design_w, design_s)}"))
    was = before.get(frozenset(link.ends))
    if previous is not None and was is not None and previous.ports[was.a].up:
        candidates.append((was.width, was.speed, f"{link_label(was.width, was.speed)} on {previous.taken}"))
    width = max((c[0] for c in candidates if c[0]), default=None)
    speed = max((c[1] for c in candidates if c[1]), key=speed_rank, default=None)
    why = [c[2] for c in candidates if (c[0] and link.width and c[0] > link.width)
           or (c[1] and link.speed and speed_rank(c[1]) > speed_rank(link.speed))]
    return width, speed, why


def _degraded_findings(snap: Snapshot, previous: Optional[Snapshot], thresholds: FabricThresholds) -> List[FabricFinding]:
    out = []
    before = {frozenset(l.ends): l for l in previous.links()} if previous is not None else {}
    for link in snap.links():
        if not (snap.ports[link.a].up and snap.ports[link.b].up) or not link.width:
            continue
        width, speed, why = _expected(snap, link, previous, before, thresholds)
        if not why:
            continue
        want_w = max(width or 0, link.width)
        want_s = speed if speed_rank(speed) > speed_rank(link.speed) else link.speed
        have, want = link.gbps, data_rate_gbps(want_w, want_s)
        short = []
        if want_w > link.width:
            short.append(f"width {link.width}X < {want_w}X")
        if want_s != link.speed:
            short.append(f"speed {link.speed} < {want_s}")
        severity = "critical" if have and want and have < 0.5 * want else "warning"
        out.append(FabricFinding("degraded", severity, _link_names(snap, link), "",
                                 {"active": link_label(link.width, link.speed), "expected": link_label(want_w, want_s),
                                  "gbps": have, "expected_gbps": want},
                                 {"short": short, "why": why}))
    return out


def _peer_name(snap: Snapshot, key: PortKey) -> Optional[str]:
    port = snap.ports.get(key)
    return snap.port_name(port.remote) if port and port.remote else None


def _error_findings(snap: Snapshot, previous: Optional[Snapshot], thresholds: FabricThresholds) -> List[FabricFinding]:
    out = []
    compare = previous is not None and previous.counters_read
    for key in sorted(snap.ports, key=lambda k: snap.port_name(k)):
        port = snap.ports[key]
        counters, values = [], {}
        for name, limit in thresholds.errors.items():
            value = port.counters.get(name, 0)
            before = previous.ports[key].counters.get(name, 0) if compare and key in previous.ports else None
            growth = value - before if before is not None else None
            grew = growth is not None and growth >= thresholds.growth.get(name, limit)
            if value >= limit or grew:
                # [counter, value, growth since the previous scan (None: no scan to compare), threshold passed or None]
                counters.append([name, value, growth, limit if value >= limit else None])
                values[name] = value
        if counters:
            out.append(FabricFinding("errors", "warning", [snap.port_name(key)], "", values,
                                     {"counters": counters, "peer": _peer_name(snap, key)}))
    return out


def _error_total(counters: Mapping[str, int], names: Iterable[str]) -> int:
    return sum(counters.get(n, 0) for n in names)


def _worst_errors(snap: Snapshot, previous: Optional[Snapshot], top: int) -> List[PortRank]:
    if not snap.counters_read:
        return []
    rows = []
    for key, port in snap.ports.items():
        total = _error_total(port.counters, ERROR_THRESHOLDS)
        if total <= 0:
            continue
        biggest = sorted(((port.counters.get(n, 0), n) for n in ERROR_THRESHOLDS if port.counters.get(n)), reverse=True)
        rows.append(PortRank(snap.port_name(key), _peer_name(snap, key), float(total),
                             {"counters": [[n, v] for v, n in biggest[:3]]}))
    return sorted(rows, key=lambda r: (-r.value, r.port))[:top]


def _busiest(snap: Snapshot, previous: Optional[Snapshot], top: int) -> Tuple[List[PortRank], str]:
    """Ports by utilisation between the snapshots (%), or by bytes since the counters were cleared."""
    if not snap.counters_read:
        return [], "bytes"
    seconds = _seconds_between(previous.taken, snap.taken) if previous is not None and previous.counters_read else None
    rows = []
    links = {k: l for l in snap.links() for k in l.ends}
    for key, port in snap.ports.items():
        sent, received = (port.counters.get(n, 0) for n in BYTE_COUNTERS)
        link = links.get(key)
        if seconds and key in previous.ports and link is not None and link.gbps:
            old = previous.ports[key].counters
            d_sent, d_recv = sent - old.get(BYTE_COUNTERS[0], 0), received - old.get(BYTE_COUNTERS[1], 0)
            if d_sent < 0 or d_recv < 0:
                continue  # cleared in between
            capacity = link.gbps * 1e9 / 8 * seconds
            share = 100.0 * max(d_sent, d_recv) / capacity
            if share > 0:
                rows.append(PortRank(snap.port_name(key), _peer_name(snap, key), share,
                                     {"sent": d_sent, "received": d_recv, "seconds": seconds,
                                      "link": link_label(link.width, link.speed)}))
        elif not seconds and sent + received > 0:
            rows.append(PortRank(snap.port_name(key), _peer_name(snap, key), float(sent + received),
                                 {"sent": sent, "received": received}))
    return sorted(rows, key=lambda r: (-r.value, r.port))[:top], ("%" if seconds else "bytes")


def _seconds_between(earlier: str, later: str) -> Optional[float]:
    import datetime as _dt

    try:
        delta = (_dt.datetime.fromisoformat(later) - _dt.datetime.fromisoformat(earlier)).total_seconds()
    except ValueError:
        return None
    return delta if delta > 0 else None


# -- which snapshot came before ---------------------------------------------------------------

def same_fabric(a: Snapshot, b: Snapshot) -> bool:
    """Two snapshots of one fabric: the same source and at least half the switches in common."""
    if a.source != b.source:
        return False
    sa, sb = {n.guid for n in a.switches()}, {n.guid for n in b.switches()}
    if not sa or not sb:
        return bool(a.nodes.keys() & b.nodes.keys())
    return len(sa & sb) >= 0.5 * min(len(sa), len(sb))


# -- the peak catalog's view of a scanned link ------------------------------------------------

def link_fabric(snapshot: Snapshot, hosts: Sequence[str]) -> Optional[Any]:
    """The catalog Fabric of the slowest link among these hosts' HCA links, at the width and speed the
    scan measured (an EDR 4x port that trained at 1x: EDR 1x, a quarter of the ceiling); None when
    no host is in the snapshot. The peak catalog calls this to use scanned links instead of nominal ones."""
    from fabricbench.analysis.peaks import get_fabric

    ports = snapshot.host_ports()
    found = []
    for host in hosts:
        key = ports.get(host) or ports.get(str(host).split(".")[0])
        port = snapshot.ports.get(key) if key else None
        if port is None or not port.width or port.speed not in speed_table():
            continue
        fab = get_fabric(port.speed.lower())
        if fab is not None:
            found.append(fab.with_lanes(port.width))
    return min(found, key=lambda f: f.data_rate_MBps) if found else None
