"""Findings -> words for a fabric check (analysis.fabric): the evidence of a degraded link or
of a port with errors, and the detail of the worst and busiest ports. Used by `fabricbench
fabric check` (table and JSON) and the report's fabric section. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from fabricbench.analysis.fabric import FabricFinding, FabricReport, PortRank
from fabricbench.numbers import count, fixed, grouped, short


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
    """report.to_dict() with the words each finding and port row had: 'evidence' and 'detail'."""
    data = report.to_dict()
    for f, out in zip(report.findings, data["findings"]):
        out["evidence"] = evidence(f)
    for key in ("worst_errors", "busiest"):
        for r, out in zip(getattr(report, key), data[key]):
            out["detail"] = port_detail(r)
    return data
