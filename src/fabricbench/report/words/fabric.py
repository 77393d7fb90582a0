"""Findings -> words for a fabric check (analysis.fabric): the evidence of a degraded link or
of a port with errors, and the detail of the worst and busiest ports. Used by `fabricbench
fabric check` (table and JSON) and the report's fabric section. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from fabricbench.analysis.fabric import FabricFinding, FabricReport, PortRank, sm_owner
from fabricbench.analysis.fabric_model import Snapshot
from fabricbench.numbers import count, fixed, grouped, short


def describe_sm(snap: Snapshot) -> Optional[str]:
    """'master SM on n1 HCA-1 (LID 1, priority 0)'; None when no subnet manager answered as master."""
    where = sm_owner(snap)
    if where is None:
        return None
    return f"master SM on {where} (LID {snap.sm.lid}, priority {snap.sm.priority})"


_PROBLEMS = (("sm", "subnet manager problem", "subnet manager problems"), ("down", "link down", "links down"),
             ("degraded", "degraded link", "degraded links"), ("state", "port not active", "ports not active"),
             ("errors", "port with errors", "ports with errors"))


def verdict(report: FabricReport) -> str:
    """'HEALTHY: 3 switches, 8 HCAs, 10 links; master SM on ...' or 'PROBLEMS: 2 degraded links (a - b; c - d), ...'."""
    snap = report.snapshot
    size = f"{len(snap.switches())} switches, {len(snap.cas())} HCAs, {len(snap.links())} links"
    if report.healthy:
        sm = describe_sm(snap)
        return f"HEALTHY: {size}; {sm}" if sm else f"HEALTHY: {size}"
    parts = []
    for kind, one, many in _PROBLEMS:
        found = [f for f in report.problems if f.kind == kind]
        if found:
            named = "; ".join(" - ".join(f.ports) if f.ports else evidence(f) for f in found[:3])
            more = f"; {len(found) - 3} more" if len(found) > 3 else ""
            parts.append(f"{len(found)} {one if len(found) == 1 else many} ({named}{more})")
    return "PROBLEMS: " + ", ".join(parts)


def _gbps(v: Optional[float]) -> str:
    return "-" if v is None else (fixed(v, 0) if v >= 10 else short(v, 3))


def evidence(f: FabricFinding) -> str:
    """What the finding rests on: 'runs 1X EDR (25 of 100 Gb/s): width 1X < 4X; expected from design 4X EDR',
    'SymbolErrorCounter 57, threshold 10 (cable to n2 HCA-1 port 1)'."""
    fig = f.figures
    if f.kind == "degraded" and fig:
        have, want = f.values.get("gbps"), f.values.get("expected_gbps")
        rate = f" ({_gbps(have)} of {_gbps(want)} Gb/s)" if have and want else ""
        return f"runs {f.values['active']}{rate}: {', '.join(fig['short'])}; expected from " + "; ".join(fig["why"])
    if f.kind == "errors" and fig:
        reasons = []
        for name, value, growth, limit in fig["counters"]:
            text = f"{name} {count(value)}"
            if growth is not None and growth > 0:
                text += f" (+{count(growth)} since the previous scan)"
            if limit is not None:
                text += f", threshold {count(limit)}"
            reasons.append(text)
        return "; ".join(reasons) + (f" (cable to {fig['peer']})" if fig.get("peer") else "")
    return f.evidence


def port_detail(r: PortRank) -> str:
    """'SymbolErrorCounter 57, LinkDownedCounter 2'; 'sent 1,000 B, received 2,000 B in 60 s on 4X EDR'."""
    fig = r.figures
    if "counters" in fig:
        return ", ".join(f"{n} {count(v)}" for n, v in fig["counters"])
    text = f"sent {count(fig['sent'])} B, received {count(fig['received'])} B"
    return text + (f" in {grouped(fig['seconds'])} s on {fig['link']}" if fig.get("seconds") else "")


def report_dict(report: FabricReport) -> Dict[str, Any]:
    """report.to_dict() with its words: the 'verdict', the subnet manager, each finding's 'evidence'
    and each port row's 'detail'."""
    plain = report.to_dict()
    data = {"healthy": plain.pop("healthy"), "verdict": verdict(report), **plain}
    data["snapshot"]["sm"] = describe_sm(report.snapshot)
    for f, out in zip(report.findings, data["findings"]):
        out["evidence"] = evidence(f)
    for key in ("worst_errors", "busiest"):
        for r, out in zip(getattr(report, key), data[key]):
            out["detail"] = port_detail(r)
    return data
