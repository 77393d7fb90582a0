"""Parsers of the infiniband-diags outputs a fabric scan reads (pure: text in, records out).

Each parser takes the tool's stdout and returns plain records; a line it does not
understand is skipped (the tools print banners, summaries and, under the simulator,
``ibwarn`` lines), never guessed at. Formats, as infiniband-diags 44 prints them:

- ``ibnetdiscover``: node blocks (``Switch 8 "S-<guid>" # "desc" base port 0 lid 4 lmc 0``,
  ``Ca 1 "H-<guid>" # "desc"``) with one line per cabled port (``[1] "H-<guid>"[1](<port guid>)
  # "remote desc" lid 8 4xEDR``; a CA's line starts ``[1](<port guid>)`` and carries its own LID).
- ``iblinkinfo --line``: one line per port, port GUIDs, state and the remote end.
- ``smpquery portinfo LID PORT`` / ``sminfo`` / ``saquery SMIR``: ``Key:....value`` dumps.
- ``ibqueryerrors`` (with a zero threshold file, and ``--counters``): ``GUID <guid> port N:
  [Counter == value] ...``; the ``port ALL`` sums are skipped.
- ``ibroute LID``: ``0x0005 002 : (...)`` lines, destination LID and out port.
- ``ibtracert``: ``[out] -> switch port {<guid>}[in] lid 3-3 "desc"`` hops.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.analysis.fabric_model import Snapshot, normalise_speed, speed_from_lane_gbps


def guid(text: str) -> str:
    """'0x0000000000200001' or '200001' -> '0x200001' (one spelling for comparisons)."""
    value = int(str(text), 16)
    return f"0x{value:x}"


# -- ibnetdiscover -----------------------------------------------------------------------

_ND_NODE = re.compile(r'^(?P<kind>Switch|Ca|Rt)\s+(?P<nports>\d+)\s+"[SHR]-(?P<guid>[0-9a-fA-F]+)"\s*(?:#\s*"(?P<desc>.*)"(?P<rest>[^"]*))?$')
_ND_PORT = re.compile(
    r'^\[(?P<port>\d+)\](?:\((?P<pguid>[0-9a-fA-F]+)\))?\s*"[SHR]-(?P<rguid>[0-9a-fA-F]+)"\[(?P<rport>\d+)\]'
    r'(?:\((?P<rpguid>[0-9a-fA-F]+)\))?\s*#\s*(?P<rest>.*)$')
_ND_LINK = re.compile(r'"(?P<rdesc>.*)"\s+lid\s+(?P<rlid>\d+)\s+(?P<width>\d+)x(?P<speed>[A-Za-z0-9]+)')
_KINDS = {"Switch": "switch", "Ca": "ca", "Rt": "router"}


def parse_ibnetdiscover(text: str) -> Dict[str, List[Dict[str, Any]]]:
    """{'nodes': [{guid, kind, nports, desc, lid}], 'ports': [{node, port, guid, lid, remote, remote_port,
    remote_guid, width, speed}]} - only cabled ports are listed by the tool."""
    nodes: List[Dict[str, Any]] = []
    ports: List[Dict[str, Any]] = []
    current: Optional[Dict[str, Any]] = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _ND_NODE.match(line)
        if m:
            rest = m.group("rest") or ""
            lid = re.search(r"\blid\s+(\d+)", rest)
            current = {"guid": guid(m.group("guid")), "kind": _KINDS[m.group("kind")], "nports": int(m.group("nports")),
                       "desc": m.group("desc") if m.group("desc") is not None else "", "lid": int(lid.group(1)) if lid else None}
            nodes.append(current)
            continue
        m = _ND_PORT.match(line)
        if m and current is not None:
            rest = m.group("rest")
            link = _ND_LINK.search(rest)
            own_lid = re.match(r"lid\s+(\d+)\s+lmc\s+\d+", rest)
            ports.append({
                "node": current["guid"],
                "port": int(m.group("port")),
                "guid": guid(m.group("pguid")) if m.group("pguid") else (current["guid"] if current["kind"] == "switch" else None),
                "lid": int(own_lid.group(1)) if own_lid else None,
                "remote": guid(m.group("rguid")),
                "remote_port": int(m.group("rport")),
                "remote_guid": guid(m.group("rpguid")) if m.group("rpguid") else None,
                "width": int(link.group("width")) if link else None,
                "speed": normalise_speed(link.group("speed")) if link else None,
            })
    return {"nodes": nodes, "ports": ports}


# -- iblinkinfo --line -------------------------------------------------------------------

_LI_LINE = re.compile(
    r'^(?P<guid>0x[0-9a-fA-F]+)\s+"\s*(?P<desc>.*?)"\s+(?P<lid>\d+)\s+(?P<port>\d+)\[[^\]]*\]\s+'
    r'==\(\s*(?:(?P<width>\d+)X\s+(?P<gbps>[\d.]+)\s+Gbps\s+)?(?P<state>[A-Za-z]+)/\s*(?P<phys>[A-Za-z]+)\s*\)==>\s*'
    r'(?:(?P<rguid>0x[0-9a-fA-F]+)\s+(?P<rlid>\d+)\s+(?P<rport>\d+))?\s*\[[^\]]*\]\s+"(?P<rdesc>.*?)"')


def parse_iblinkinfo(text: str) -> List[Dict[str, Any]]:
    """One record per port: {guid (the port GUID), desc, lid, port, state, phys, width, speed, remote_guid,
    remote_lid, remote_port, remote_desc}; remote_* are None for a port with nothing on the other end."""
    out = []
    for raw in text.splitlines():
        m = _LI_LINE.match(raw.strip())
        if not m:
            continue
        gbps = m.group("gbps")
        out.append({
            "guid": guid(m.group("guid")),
            "desc": m.group("desc").strip(),
            "lid": int(m.group("lid")),
            "port": int(m.group("port")),
            "state": _state(m.group("state")),
            "phys": m.group("phys"),
            "width": int(m.group("width")) if m.group("width") else None,
            "speed": speed_from_lane_gbps(float(gbps)) if gbps else None,
            "remote_guid": guid(m.group("rguid")) if m.group("rguid") else None,
            "remote_lid": int(m.group("rlid")) if m.group("rlid") else None,
            "remote_port": int(m.group("rport")) if m.group("rport") else None,
            "remote_desc": m.group("rdesc") if m.group("rguid") else None,
        })
    return out


def _state(text: str) -> str:
    """The tools say 'Initialize' or 'Init', 'Active', 'Down', 'Armed'."""
    return {"init": "Initialize", "initialize": "Initialize"}.get(text.lower(), text.capitalize())


# -- Key:.....value dumps (smpquery, sminfo records) -------------------------------------

_DUMP = re.compile(r"^\s*(?P<key>[A-Za-z0-9_]+):?\.{2,}:?\s*(?P<value>.*?)\s*$")


def parse_dump(text: str) -> Dict[str, str]:
    """'LinkWidthEnabled:................1X or 4X' -> {'LinkWidthEnabled': '1X or 4X'} (first occurrence wins)."""
    out: Dict[str, str] = {}
    for raw in text.splitlines():
        m = _DUMP.match(raw)
        if m and m.group("key") not in out:
            out[m.group("key")] = m.group("value")
    return out


def _widths(text: str) -> List[int]:
    return sorted({int(w) for w in re.findall(r"(\d+)X", text or "")})


def _speeds(text: str) -> List[str]:
    names = []
    for rate in re.findall(r"([\d.]+)\s*Gbps", text or ""):
        name = speed_from_lane_gbps(float(rate))
        if name and name not in names:
            names.append(name)
    return names


def parse_portinfo(text: str) -> Dict[str, Any]:
    """Width and speed (active, enabled, supported; extended speeds folded in), state and LID of a port."""
    d = parse_dump(text)
    if not d:
        return {}
    ext_active = _speeds(d.get("LinkSpeedExtActive", ""))
    active = ext_active or _speeds(d.get("LinkSpeedActive", ""))
    return {
        "lid": int(d["Lid"]) if d.get("Lid", "").isdigit() else None,
        "state": _state(d["LinkState"]) if d.get("LinkState") else None,
        "phys": d.get("PhysLinkState"),
        "width": (_widths(d.get("LinkWidthActive", "")) or [None])[0],
        "speed": active[0] if active else None,
        "enabled_widths": _widths(d.get("LinkWidthEnabled", "")),
        "supported_widths": _widths(d.get("LinkWidthSupported", "")),
        "enabled_speeds": _speeds(d.get("LinkSpeedEnabled", "")) + _speeds(d.get("LinkSpeedExtEnabled", "")),
        "supported_speeds": _speeds(d.get("LinkSpeedSupported", "")) + _speeds(d.get("LinkSpeedExtSupported", "")),
    }


# -- subnet managers ---------------------------------------------------------------------

SM_STATES = {0: "NOTACTIVE", 1: "DISCOVERING", 2: "STANDBY", 3: "MASTER"}
_SMINFO = re.compile(r"sm lid (?P<lid>\d+) sm guid (?P<guid>0x[0-9a-fA-F]+), activity count (?P<act>\d+) "
                     r"priority (?P<prio>\d+) state (?P<state>\d+)")


def parse_sminfo(text: str) -> Optional[Dict[str, Any]]:
    """'sminfo: sm lid 1 sm guid 0x100001, activity count 299 priority 7 state 3 SMINFO_MASTER' -> record."""
    m = _SMINFO.search(text)
    if not m:
        return None
    return {"lid": int(m.group("lid")), "guid": guid(m.group("guid")), "activity": int(m.group("act")),
            "priority": int(m.group("prio")), "state": SM_STATES.get(int(m.group("state")), m.group("state"))}


def parse_smir(text: str) -> List[Dict[str, Any]]:
    """Every 'SMInfoRecord dump' block of saquery SMIR."""
    out = []
    for block in re.split(r"SMInfoRecord dump:", text)[1:]:
        d = parse_dump(block)
        try:
            state = int(d.get("SMState", ""))
            out.append({"lid": int(d["LID"]), "guid": guid(d["GUID"]), "priority": int(d.get("Priority", 0)),
                        "state": SM_STATES.get(state, str(state)), "activity": int(d.get("ActCount", 0))})
        except (KeyError, ValueError):
            continue
    return out


# -- counters ----------------------------------------------------------------------------

_QE_PORT = re.compile(r"^\s*GUID\s+(?P<guid>0x[0-9a-fA-F]+)\s+port\s+(?P<port>\d+|ALL):\s*(?P<rest>.*)$")
_QE_COUNTER = re.compile(r"\[(?P<name>[A-Za-z0-9]+)\s*==\s*(?P<value>\d+)")


def parse_ibqueryerrors(text: str) -> List[Dict[str, Any]]:
    """[{guid, port, counters: {name: value}}] for each port line; the per-node 'port ALL' sums are left out."""
    out = []
    for raw in text.splitlines():
        m = _QE_PORT.match(raw)
        if not m or m.group("port") == "ALL":
            continue
        counters = {c.group("name"): int(c.group("value")) for c in _QE_COUNTER.finditer(m.group("rest"))}
        if counters:
            out.append({"guid": guid(m.group("guid")), "port": int(m.group("port")), "counters": counters})
    return out


# -- routes ------------------------------------------------------------------------------

_ROUTE_HEAD = re.compile(r"of switch Lid (?P<lid>\d+) guid (?P<guid>0x[0-9a-fA-F]+)")
_ROUTE_LINE = re.compile(r"^(?P<lid>0x[0-9a-fA-F]+)\s+(?P<port>\d+)\s*:")


def parse_ibroute(text: str) -> Dict[str, Any]:
    """{'lid', 'guid', 'lft': {destination LID: out port}} of one switch."""
    head = _ROUTE_HEAD.search(text)
    lft: Dict[int, int] = {}
    for raw in text.splitlines():
        m = _ROUTE_LINE.match(raw.strip())
        if m:
            lft[int(m.group("lid"), 16)] = int(m.group("port"))
    return {"lid": int(head.group("lid")) if head else None, "guid": guid(head.group("guid")) if head else None, "lft": lft}


_TR_FROM = re.compile(r'^From (?P<kind>ca|switch|router) \{(?P<guid>0x[0-9a-fA-F]+)\} portnum (?P<port>\d+) lid [\d-]+ "(?P<desc>.*)"')
_TR_HOP = re.compile(r'^\[(?P<out>\d+)\] -> (?P<kind>ca|switch|router) port \{(?P<guid>0x[0-9a-fA-F]+)\}\[(?P<in>\d+)\] lid [\d-]+ "(?P<desc>.*)"')


def parse_ibtracert(text: str) -> List[Tuple[str, int, str, int]]:
    """The hops of a trace: [(from desc, out port, to desc, in port)], first hop from the source HCA."""
    hops: List[Tuple[str, int, str, int]] = []
    here: Optional[Tuple[str, int]] = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _TR_FROM.match(line)
        if m:
            here = (m.group("desc"), int(m.group("port")))
            continue
        m = _TR_HOP.match(line)
        if m and here is not None:
            hops.append((here[0], int(m.group("out")), m.group("desc"), int(m.group("in"))))
            here = (m.group("desc"), int(m.group("in")))
    return hops


# -- one snapshot from all of them -------------------------------------------------------

def assemble(*, taken: str, source: str, discovered: Dict[str, List[Dict[str, Any]]], links: List[Dict[str, Any]],
             portinfo: Dict[Tuple[str, int], Dict[str, Any]], sminfo: Optional[Dict[str, Any]] = None,
             smir: Optional[List[Dict[str, Any]]] = None, errors: Optional[List[Dict[str, Any]]] = None,
             counters: Optional[List[Dict[str, Any]]] = None, routes: Optional[Dict[str, Dict[int, int]]] = None,
             design: Optional[Dict[str, Any]] = None, problems: Optional[List[str]] = None) -> Snapshot:
    """A Snapshot from the parsed outputs: ibnetdiscover names the nodes, iblinkinfo gives every port's
    state (also ports that are down), portinfo the enabled and supported widths and speeds,
    ibqueryerrors the counters (``errors`` None: they could not be read)."""
    from fabricbench.analysis.fabric_model import BYTE_COUNTERS, Node, Port, SMInfo

    snap = Snapshot(taken=taken, source=source, design=dict(design or {}), problems=list(problems or []))
    for n in discovered.get("nodes", []):
        snap.nodes[n["guid"]] = Node(guid=n["guid"], kind=n["kind"], desc=n["desc"], nports=n["nports"], lid=n["lid"])
    owner: Dict[str, str] = {g: g for g in snap.nodes}  # port GUID (or node GUID) -> node GUID
    for p in discovered.get("ports", []):
        if p.get("guid"):
            owner[p["guid"]] = p["node"]
        if p.get("remote_guid"):
            owner[p["remote_guid"]] = p["remote"]

    for rec in links:
        node = owner.get(rec["guid"])
        if node is None:
            snap.problems.append(f"iblinkinfo names port GUID {rec['guid']} ({rec['desc']}) that ibnetdiscover did not find")
            continue
        remote = (owner.get(rec["remote_guid"]), rec["remote_port"]) if rec["remote_guid"] else None
        is_switch = snap.nodes[node].kind == "switch"
        snap.ports[(node, rec["port"])] = Port(
            node=node, num=rec["port"], guid=rec["guid"], lid=None if is_switch else rec["lid"], state=rec["state"],
            phys=rec["phys"], width=rec["width"], speed=rec["speed"], remote=remote if remote and remote[0] else None)
    for p in discovered.get("ports", []):  # cabled ports iblinkinfo did not report (it failed or timed out)
        key = (p["node"], p["port"])
        port = snap.ports.get(key)
        if port is None:
            snap.ports[key] = Port(node=p["node"], num=p["port"], guid=p.get("guid"), lid=p.get("lid"), width=p["width"],
                                   speed=p["speed"], remote=(p["remote"], p["remote_port"]))
        elif port.lid is None and p.get("lid") is not None:
            port.lid = p["lid"]
    for key, info in portinfo.items():
        port = snap.ports.get(key)
        if port is None or not info:
            continue
        for name in ("enabled_widths", "supported_widths", "enabled_speeds", "supported_speeds"):
            setattr(port, name, list(info.get(name) or []))
        for name in ("state", "phys", "width", "speed"):
            if getattr(port, name) is None and info.get(name) is not None:
                setattr(port, name, info[name])

    if sminfo:
        snap.sm = SMInfo(**sminfo)
    snap.sms = [SMInfo(**s) for s in smir or []]
    if errors is not None:
        snap.counters_read = True
        for rec in list(errors) + list(counters or []):
            key = (owner.get(rec["guid"], rec["guid"]), rec["port"])
            if key not in snap.ports:
                continue
            for name, value in rec["counters"].items():
                snap.ports[key].counters[name] = value * 4 if name in BYTE_COUNTERS else value
    if routes is not None:
        snap.routes = {g: dict(t) for g, t in routes.items()}
    return snap
