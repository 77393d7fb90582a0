"""Routes through a fabric snapshot, and which cables the slow pairs of a health check share.

``route(snapshot, host_a, host_b)`` follows the switches' linear forwarding tables (stored
by ``fabric scan --routes``) from host A's HCA to host B's, as the hardware forwards a
packet addressed to B's LID: the hops are (out port, in port) pairs. ``shared_links``
counts, for a set of host pairs, how many of the pairs' routes cross each cable (both
directions of a pair, both directions of a cable); ``annotate_health`` puts that next to a
health verdict ("the 7 slow pairs all cross edge1 port 3 - n3 HCA-1 port 1").
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, List, Sequence, Tuple

from fabricbench.analysis.fabric_model import PortKey, Snapshot

MAX_HOPS = 64


class NoRoute(ValueError):
    """The tables do not lead from A to B (a missing entry, a port that is down, a loop)."""


@dataclass(frozen=True)
class Hop:
    out: PortKey  # the port the packet leaves by
    into: PortKey  # the port it enters

    @property
    def cable(self) -> FrozenSet[PortKey]:
        return frozenset((self.out, self.into))


def host_port(snapshot: Snapshot, host: str) -> PortKey:
    ports = snapshot.host_ports()
    key = ports.get(host) or ports.get(str(host).split(".")[0])
    if key is None:
        known = ", ".join(sorted(ports)[:12]) + (" ..." if len(ports) > 12 else "")
        raise NoRoute(f"host '{host}' has no HCA in the snapshot (hosts: {known or 'none'})")
    return key


def route(snapshot: Snapshot, host_a: str, host_b: str) -> List[Hop]:
    """The hops from A's HCA port to B's, following the stored forwarding tables."""
    if snapshot.routes is None:
        raise NoRoute("the snapshot has no forwarding tables (scan with --routes)")
    src, dst = host_port(snapshot, host_a), host_port(snapshot, host_b)
    if src == dst:
        return []
    dlid = snapshot.lid_of(dst)
    if not dlid:
        raise NoRoute(f"{snapshot.port_name(dst)} has no LID (no subnet manager configured it)")
    hops: List[Hop] = []
    here = src
    for _ in range(MAX_HOPS):
        port = snapshot.ports.get(here)
        if port is None or port.remote is None or not port.up:
            raise NoRoute(f"{snapshot.port_name(here)} is down")
        hops.append(Hop(here, port.remote))
        if port.remote == dst:
            return hops
        switch = port.remote[0]
        table = snapshot.routes.get(switch)
        if table is None or dlid not in table:
            raise NoRoute(f"{snapshot.nodes[switch].name if switch in snapshot.nodes else switch} has no route to LID {dlid}")
        out = table[dlid]
        if out == 0:
            raise NoRoute(f"LID {dlid} ends at switch {snapshot.nodes[switch].name}, not at {host_b}")
        here = (switch, out)
    raise NoRoute(f"no route from {host_a} to {host_b} within {MAX_HOPS} hops (a loop in the tables?)")


def switch_ports(snapshot: Snapshot, hops: Sequence[Hop]) -> List[str]:
    """The switch ports a route crosses, in order: 'edge1 port 1', 'edge1 port 5', ..."""
    names = []
    for hop in hops:
        for key in (hop.out, hop.into):
            node = snapshot.nodes.get(key[0])
            if node is not None and node.kind == "switch":
                names.append(snapshot.port_name(key))
    return names


def cable_name(snapshot: Snapshot, cable: FrozenSet[PortKey]) -> str:
    """'edge1 port 3 - n3 HCA-1 port 1': switch side first."""
    ends = sorted(cable, key=lambda k: (snapshot.nodes[k[0]].kind != "switch" if k[0] in snapshot.nodes else True,
                                        snapshot.port_name(k)))
    return " - ".join(snapshot.port_name(k) for k in ends)


def shared_links(snapshot: Snapshot, pairs: Iterable[Tuple[str, str]]) -> Tuple[Counter, int, List[str]]:
    """(cable -> number of pairs crossing it, pairs routed, problems) for host pairs (both directions each)."""
    counts: Counter = Counter()
    routed, problems = 0, []
    for a, b in pairs:
        cables = set()
        try:
            for x, y in ((a, b), (b, a)):
                cables |= {hop.cable for hop in route(snapshot, x, y)}
        except NoRoute as exc:
            problems.append(f"{a} - {b}: {exc}")
            continue
        routed += 1
        counts.update(cables)
    return counts, routed, problems


# -- next to a health verdict -----------------------------------------------------------------

def slow_pairs(report: Any) -> List[Tuple[str, str]]:
    """The unordered pairs a health report finds slow: the pairs of its link and asymmetry findings,
    and every pair of a bad node."""
    pairs = set()
    for f in report.problems:
        if f.kind == "node":
            for node in f.nodes:
                pairs |= {tuple(sorted((node, other))) for other in report.nodes if other != node}
        for a, b in f.pairs:
            pairs.add(tuple(sorted((a, b))))
    return sorted(pairs)


def annotate_health(result: Any, snapshot: Snapshot, run_label: str, findings: Sequence[Any] = ()) -> List[str]:
    """Notes for a health result from a fabric snapshot: the cables every slow pair crosses (or the
    one most of them cross), with what the fabric check says about those cables. Each flagged
    health finding's evidence gains the cables its own pairs share with the others."""
    pairs = slow_pairs(result.report)
    if not pairs:
        return []
    counts, routed, problems = shared_links(snapshot, pairs)
    notes = []
    if not routed:
        return [f"fabric {run_label}: no route for the slow pairs ({problems[0]})"] if problems else []
    shared = [c for c, n in counts.items() if n == routed]
    about = _findings_by_port(findings)
    if shared:
        names = sorted(cable_name(snapshot, c) for c in shared)
        verb = "cross" if routed > 1 else "crosses"
        what = f"the {routed} slow pairs all {verb}" if routed > 1 else "the slow pair crosses"
        notes.append(f"fabric {run_label}: {what} {'; '.join(names)}" + _known(snapshot, shared, about))
    else:
        cable, n = counts.most_common(1)[0]
        if n >= 2:
            notes.append(f"fabric {run_label}: {n} of the {routed} slow pairs cross {cable_name(snapshot, cable)}"
                         + _known(snapshot, [cable], about))
    if problems:
        notes.append(f"fabric {run_label}: {len(problems)} slow pairs could not be routed ({problems[0]})")
    for f in result.report.problems:
        own = set(f.pairs) | {p for p in pairs if set(p) & set(f.nodes)} if f.kind == "node" else set(f.pairs)
        mine = _common_cables(snapshot, own)
        if mine:
            f.evidence += "; crosses " + "; ".join(sorted(cable_name(snapshot, c) for c in mine))
    return notes


def _common_cables(snapshot: Snapshot, pairs: Iterable[Tuple[str, str]]) -> List[FrozenSet[PortKey]]:
    counts, routed, _ = shared_links(snapshot, pairs)
    return [c for c, n in counts.items() if routed and n == routed]


def _findings_by_port(findings: Sequence[Any]) -> Dict[str, List[Any]]:
    out: Dict[str, List[Any]] = {}
    for f in findings:
        if getattr(f, "problem", False):
            for port in f.ports:
                out.setdefault(port, []).append(f)
    return out


def _known(snapshot: Snapshot, cables: Sequence[FrozenSet[PortKey]], about: Dict[str, List[Any]]) -> str:
    """'; the fabric check found: degraded (runs 1X EDR ...)' for the first finding on these cables."""
    for cable in cables:
        for key in cable:
            for f in about.get(snapshot.port_name(key), []):
                return f"; the fabric check found there: {f.kind}, {f.evidence}"
    return ""
