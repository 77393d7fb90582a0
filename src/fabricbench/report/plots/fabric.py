"""The fabric's picture: switches and HCAs in layers, cables coloured by state and drawn by speed.

``topology(snapshot, findings)`` lays the graph out with networkx (``multipartite_layout``:
spine switches on top, leaf switches - those with HCAs - below them, HCAs at the bottom,
each HCA under its leaf) and draws it with matplotlib's object API. A cable is green when
nothing is wrong with it, orange when a finding names it as degraded or erroring, red when
it is down (from the previous snapshot) or its ports are not active; its thickness grows
with its data rate and a cable below what it should run at is labelled with what it runs at.
Returns the image bytes (SVG or PNG).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fabricbench.analysis.fabric_model import Snapshot, link_label
from fabricbench.analysis.health import natural_key
from fabricbench.report.plots import safe_label, save_figure

_RC = {"svg.hashsalt": "fabricbench", "svg.fonttype": "none", "font.size": 8, "axes.titlesize": 10}
OK, WARN, BAD = "#2ca02c", "#ff7f0e", "#d62728"
MAX_LABELS = 48  # more HCAs than this: their names are left out


def _layers(snap: Snapshot) -> Dict[str, int]:
    """node GUID -> layer: 0 spine switches, 1 leaf switches (with HCAs), 2 HCAs."""
    leaves: Set[str] = set()
    for link in snap.links():
        kinds = {snap.nodes[k[0]].kind for k in link.ends if k[0] in snap.nodes}
        if "switch" in kinds and kinds != {"switch"}:
            leaves.update(k[0] for k in link.ends if snap.nodes[k[0]].kind == "switch")
    out = {}
    for guid, node in snap.nodes.items():
        out[guid] = 2 if node.kind != "switch" else (1 if guid in leaves else 0)
    if all(v != 0 for v in out.values()):  # no spine: leaves on top
        out = {g: v - 1 if v == 1 else v for g, v in out.items()}
    return out


def _ordered(snap: Snapshot, layers: Dict[str, int], ghosts: Dict[str, Any], ghost_leaf: Dict[str, str]) -> List[str]:
    """Nodes in drawing order: switches by name, each HCA (also a vanished one) after the leaf it hung on."""
    leaf_of: Dict[str, str] = dict(ghost_leaf)
    for link in snap.links():
        a, b = link.ends
        if snap.nodes[a[0]].kind == "switch" and snap.nodes[b[0]].kind != "switch":
            leaf_of.setdefault(b[0], a[0])
    names = {g: natural_key(n.name) for g, n in list(snap.nodes.items()) + list(ghosts.items())}
    switches = sorted((g for g in names if layers[g] < 2), key=names.get)
    rank = {g: i for i, g in enumerate(switches)}
    cas = sorted((g for g in names if layers[g] == 2), key=lambda g: (rank.get(leaf_of.get(g, ""), 1 << 30), names[g]))
    return switches + cas


def topology(snap: Snapshot, findings: Sequence[Any] = (), title: str = "", fmt: str = "svg",
             previous: Optional[Snapshot] = None) -> bytes:
    """The picture (see the module docstring). Cables of ``down`` findings are drawn dashed red, to
    nodes of the previous snapshot (drawn hollow) when they are gone from this one."""
    import networkx as nx  # here, not at import: every report imports the section modules

    ghosts, ghost_leaf = _ghost_nodes(snap, findings, previous)
    layers = _layers(snap)
    layers.update({g: (2 if n.kind != "switch" else 1) for g, n in ghosts.items()})
    nodes = dict(snap.nodes, **ghosts)
    graph = nx.Graph()
    order: Dict[int, List[str]] = {}
    for guid in _ordered(snap, layers, ghosts, ghost_leaf):
        graph.add_node(guid)
        order.setdefault(layers[guid], []).append(guid)
    colour_of: Dict[str, str] = {}
    for f in findings:
        if getattr(f, "problem", False):
            for port in f.ports:
                colour_of[port] = BAD if f.kind in ("down", "state") else colour_of.get(port, WARN)
    top_rate = max([l.gbps for l in snap.links() if l.gbps] or [1.0])
    for link in snap.links():
        names = [snap.port_name(k) for k in link.ends]
        degraded = any(getattr(f, "kind", "") == "degraded" and set(names) <= set(f.ports) for f in findings)
        graph.add_edge(link.a[0], link.b[0], colour=next((colour_of[n] for n in names if n in colour_of), OK),
                       width=0.8 + 3.2 * (link.gbps or 0) / top_rate, style="-",
                       label=link_label(link.width, link.speed) if degraded else "")
    for f in findings:
        ends = (getattr(f, "values", None) or {}).get("ends") if getattr(f, "kind", "") == "down" else None
        if ends and all(e[0] in graph for e in ends):
            graph.add_edge(ends[0][0], ends[1][0], colour=BAD, width=1.2, style=(0, (3, 2)), label="down")
    pos = nx.multipartite_layout(graph, subset_key=dict(sorted(order.items())), align="horizontal", scale=1.0)
    pos = {g: (x, -y) for g, (x, y) in pos.items()}  # spines on top
    n_cas = sum(1 for g in graph if layers[g] == 2)
    width = min(14.0, max(6.0, 0.35 * n_cas + 2.0))
    with rc_context(_RC):
        fig = Figure(figsize=(width, 4.6), layout="constrained")
        ax = fig.add_subplot()
        for u, v, data in graph.edges(data=True):
            (x1, y1), (x2, y2) = pos[u], pos[v]
            ax.plot([x1, x2], [y1, y2], color=data["colour"], linewidth=data["width"], linestyle=data["style"], zorder=1)
            if data["label"]:
                ax.annotate(safe_label(data["label"]), ((x1 + x2) / 2, (y1 + y2) / 2), fontsize=7, color=data["colour"],
                            ha="center", va="center",
                            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": data["colour"], "lw": 0.6})
        for guid, (x, y) in pos.items():
            node = nodes[guid]
            is_switch = node.kind == "switch"
            ax.scatter([x], [y], s=260 if is_switch else 90, marker="s" if is_switch else "o", zorder=2,
                       color="white" if guid in ghosts else ("#4c72b0" if is_switch else "#dddddd"),
                       edgecolors=BAD if guid in ghosts else "#333333", linewidths=0.8)
            if is_switch or n_cas <= MAX_LABELS:
                label = node.name if is_switch else (node.host or node.name)
                ax.annotate(safe_label(label, 14), (x, y), xytext=(0, 11 if is_switch else -12), textcoords="offset points",
                            ha="center", va="center", fontsize=8 if is_switch else 7,
                            rotation=0 if is_switch or n_cas <= 16 else 90)
        ax.set_axis_off()
        ax.margins(0.08, 0.18)
        legend = [Line2D([0], [0], color=OK, lw=2, label="healthy"), Line2D([0], [0], color=WARN, lw=2, label="degraded or errors"),
                  Line2D([0], [0], color=BAD, lw=2, label="down or not active")]
        ax.legend(handles=legend, loc="lower right", fontsize=7, frameon=False, ncol=3, bbox_to_anchor=(1.0, -0.12))
        if title:
            ax.set_title(safe_label(title))
        return save_figure(fig, fmt)


def _ghost_nodes(snap: Snapshot, findings: Sequence[Any], previous: Optional[Snapshot]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """Nodes at the far end of a down cable that are gone from this snapshot (known from the previous one),
    and the switch each hung on."""
    nodes, leaf = {}, {}
    for f in findings:
        ends = (getattr(f, "values", None) or {}).get("ends") if getattr(f, "kind", "") == "down" else None
        for (guid, _port), (other, _) in zip(ends or [], reversed(ends or [])):
            if guid not in snap.nodes and previous is not None and guid in previous.nodes:
                nodes[guid] = previous.nodes[guid]
                leaf[guid] = other
    return nodes, leaf
