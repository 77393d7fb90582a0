"""Findings -> words for the link-health check (``analysis.health``, ``analysis.health_check``): a
finding's evidence, the verdict line, the notes of a check and its JSON, for ``fabricbench health``
and the report's health section. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any, Dict, List, Optional

from fabricbench.analysis.health import Finding, HealthReport, Thresholds
from fabricbench.numbers import fixed, grouped, number, percent, short


def ratio_text(ratio: float, metric: str) -> str:
    """'48%' (of something) for bandwidth; '2.3x' for latency, whose ratio is a speed ratio."""
    if metric == "latency":
        return f"{fixed(1.0 / ratio, 1)}x" if ratio > 0 else "inf x"
    return percent(100.0 * ratio, decimals=0)


def _pairs(count: int) -> str:
    return f"{count} pair{'s' if count != 1 else ''}"


def floor_note(figures: Dict[str, Any]) -> str:
    """'50% of InfiniBand EDR 4x's 12,500 MB/s': where a floor comes from ('' when not said)."""
    of = figures.get("floor_of")
    if of:
        pct, fabric, rate = of
        return f"{short(pct)}% of {fabric}'s {grouped(rate)} MB/s"
    return figures.get("floor_note") or ""


def thresholds_note(th: Thresholds) -> str:
    return floor_note({"floor_of": th.floor_of, "floor_note": th.floor_note})


def _node_head(f: Finding) -> str:
    x = f.figures
    name = f.nodes[0]
    if x.get("below_floor"):
        note = floor_note(x)
        return (f"node {name}: median bandwidth {number(f.values['node_median'])} MB/s is below the floor of "
                f"{number(f.values['floor'])} MB/s" + (f" ({note})" if note else ""))
    t, unit, latency = x["threshold"], x["unit"], f.metric == "latency"
    what = "median latency" if latency else "median bandwidth"
    parts = []
    for s in x["sides"]:
        other = f"{number(s['median'])} vs {number(s['reference'])} {unit} between the other nodes"
        r = ratio_text(s["ratio"], f.metric)
        if latency:
            role = "initiator" if s["side"] == "send" else "responder"
            parts.append(f"{r} the {what} as {role} ({other}), {s['slow']} of its {s['links']} links above "
                         f"{fixed(1 / t, 1)}x")
        else:
            verb = "sending" if s["side"] == "send" else "receiving"
            parts.append(f"{verb} at {r} of the {what} ({other}), {s['slow']} of its {s['links']} links below "
                         f"{percent(100.0 * t, decimals=0)}")
    if latency:
        cause = "likely the node itself (CPU, interrupts, power states, a busy process) or its link"
    elif f.side == "both":
        cause = "likely its link, NIC or switch port (both directions slow)"
    elif f.side == "send":
        cause = "only what it sends is slow: likely its transmit path (NIC, cable, port) or its host"
    else:
        cause = "only what it receives is slow: likely its receive path (NIC, cable, port) or its host"
    return f"node {name}: " + "; ".join(parts) + f"; {cause}"


def _pair_head(f: Finding) -> str:
    """A link or an asymmetric pair: both directions' figures, in one place for either kind."""
    x = f.figures
    a, b = f.nodes
    fwd, bwd = f"{number(x['forward'])} {x['unit']}", f"{number(x['backward'])} {x['unit']}"
    if x["form"] == "reverse":
        return (f"pair {a}->{b} ({fwd}) runs at {ratio_text(f.ratio, f.metric)} of the reverse direction "
                f"({bwd}), relative to what each end does elsewhere: asymmetric")
    r1, r2 = (ratio_text(r, f.metric) for r in x["ratios"])
    if x["form"] == "link":
        what = "latency" if f.metric == "latency" else "bandwidth"
        return (f"link {a} <-> {b}: {what} {r1} of expectation {a}->{b} ({fwd}) and {r2} {b}->{a} ({bwd}), "
                "expectation being what each sender sends and each receiver receives elsewhere; neither node "
                "explains it: likely the path between them (cable, switch port, route)")
    return (f"pair {a}->{b} at {r1} of expectation ({fwd}) while {b}->{a} runs at {r2} ({bwd}): one direction "
            f"only; likely a fault on the path {a}->{b} that the reverse path does not share (a cable lane, a port, "
            "a route)")


def _head(f: Finding) -> str:
    kind = f.first_kind
    if kind == "fabric":
        note = floor_note(f.figures)
        return (f"the median pair bandwidth, {number(f.values['median'])} MB/s, is below the floor of "
                f"{number(f.values['floor'])} MB/s" + (f" ({note})" if note else "")
                + ": the whole fabric is slow (or the catalog's link is not this fabric)")
    if kind == "note":
        return (f"{f.figures['few_nodes']} nodes: a slow pair cannot be told from a slow node; "
                "only asymmetry and the floor are checked (measure 3 or more nodes)")
    if kind == "node":
        return _node_head(f)
    return _pair_head(f)


def _clause(f: Finding, clause: str, x: Dict[str, Any]) -> str:
    latency = f.metric == "latency"
    if clause == "not retested":
        return "; not measured again alone"
    if clause == "not retested both ways":
        return "; not measured again alone in both directions"
    if clause in ("inconsistent", "cleared", "confirmed"):
        against = "the other nodes' median" if x["against"] == "nodes" else "the expectation"
        r = ratio_text(x["alone"], f.metric)
        alone = f"{r} {against}" if latency else f"{r} of {against}"
        if clause == "inconsistent":
            return (f"; but {alone} when measured alone ({_pairs(x['count'])}), {ratio_text(x['sweep'], f.metric)} "
                    f"in the sweep: the readings disagree by more than {short(x['limit'])}x, the host too busy to "
                    "judge this pair (measure again on a quieter host)")
        if clause == "cleared":
            return f"; but {alone} when measured alone ({_pairs(x['count'])}): a busy moment during the sweep, not a fault"
        return f"; confirmed alone: {alone} ({_pairs(x['count'])})"
    if clause == "cleared against the reverse":
        return (f"; but {ratio_text(x['alone'], f.metric)} of the reverse direction when measured alone: "
                "a busy moment during the sweep, not a fault")
    if clause == "confirmed against the reverse":
        return f"; confirmed alone: {ratio_text(x['alone'], f.metric)} of the reverse direction"
    if clause == "explained":
        return f"; explained by node {x['node']}, slow in {x['metric']}"
    if clause == "host busy":
        return (f"; the host was too busy to judge latency ({busy_text(x['busy'])}: contention alone moves it up to "
                f"{fixed(x['factor'], 0)}x)")
    raise ValueError(f"unknown health clause '{clause}'")


def busy_text(busy: Any) -> str:
    """'load 30 on 2 CPUs with 4 ranks' (a ``host_state.HostLoad``)."""
    return f"load {number(busy.load)} on {busy.cpus} CPUs with {busy.ranks} ranks"


def evidence(f: Finding) -> str:
    """What the finding rests on, then what befell it (retest, a bad node, a busy host), then what
    other checks added (``f.evidence``)."""
    return _head(f) + "".join(_clause(f, c, x) for c, x in f.clauses) + f.evidence


def verdict_line(report: HealthReport) -> str:
    """One line: HEALTHY or PROBLEMS, what is wrong, the scale of the check."""
    bw = report.summaries.get("bandwidth")
    lat = report.summaries.get("latency")
    scale = f"{len(report.nodes)} nodes"
    if bw and bw.pairs:
        scale += f", {bw.pairs} pairs; bandwidth median {number(bw.median)} MB/s"
        if bw.worst_pair:
            scale += f" (lowest {number(bw.worst_value)}, {bw.worst_pair[0]}->{bw.worst_pair[1]})"
    if lat and lat.pairs:
        scale += f"; latency median {number(lat.median)} us"
    if not report.problems:
        cleared = [f for f in report.findings if f.kind == "transient"]
        extra = f"; {len(cleared)} slow reading{'s' if len(cleared) != 1 else ''} cleared by retest" if cleared else ""
        return f"HEALTHY: {scale}{extra}"
    parts = []
    kinds = {f.kind for f in report.problems}
    for kind, word in (("fabric", "slow fabric"), ("node", "bad node"), ("link", "bad link"), ("asymmetric", "asymmetric pair")):
        if kind not in kinds:
            continue
        if kind == "fabric":
            parts.append("fabric below the floor")
            continue
        names = report.names(kind)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        parts.append(f"{len(names)} {word}{'s' if len(names) != 1 else ''} ({shown})")
    return f"PROBLEMS: {'; '.join(parts)}; {scale}"


def finding_dict(f: Finding) -> Dict[str, Any]:
    return {"kind": f.kind, "severity": f.severity, "metric": f.metric, "nodes": f.nodes, "evidence": evidence(f),
            "ratio": f.ratio, "side": f.side, "pairs": [list(p) for p in f.pairs], "retest": f.retest,
            "values": dict(f.values)}


def report_dict(report: HealthReport) -> Dict[str, Any]:
    th = asdict(report.thresholds)
    th.pop("floor_of")
    th["floor_note"] = thresholds_note(report.thresholds)
    return {
        "healthy": report.healthy,
        "verdict": verdict_line(report),
        "nodes": report.nodes,
        "findings": [finding_dict(f) for f in report.findings],
        "omitted_findings": report.omitted,
        "summary": {k: v.to_dict() for k, v in report.summaries.items()},
        "thresholds": th,
    }


def notes(result: Any) -> List[str]:
    """The notes of a check (``health_check.HealthResult``), the busy host's among them."""
    return [n if isinstance(n, str) else f"latency findings not judged: {busy_text(n)}" for n in result.notes]


def result_dict(result: Any) -> Dict[str, Any]:
    """``fabricbench health --json``."""
    d = report_dict(result.report)
    d["exit_status"] = result.report.exit_status
    run, data = result.run, result.data
    d["run"] = {"id": run.id, "uuid": run.uuid, "kind": run.kind, "label": run.label,
                "status": run.status, "created": run.created}
    d["measurement"] = {"size": data.size, "direction": data.direction, "mode": data.mode,
                        "sizes": data.sizes, "nodes": data.n,
                        "retested_pairs": result.report.summaries["bandwidth"].retested
                        if "bandwidth" in result.report.summaries else 0}
    d["notes"] = notes(result)
    return d


