"""Fabric analysis on real diagnostics output (tests/data/fabric, captured from ibsim + OpenSM).

The captured fabric (topology.net): core1 over edge1 (n1-n4) and edge2 (n5-n8); the cable
edge1:3 - n3 trained at 1X SDR, edge2:2 - n6 at FDR (both ends set so), 57 symbol errors on
edge1 port 2, LinkDownedCounter 3 on n5, n8 unplugged, core1 port 5 with 250 GB sent.
``snapshot_routes.json`` is a healthy 3-switch fabric stored by ``fabric scan --routes``.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fabricbench.analysis import fabric_parse as parse
from fabricbench.analysis.fabric import FabricThresholds, check, link_fabric, same_fabric
from fabricbench.analysis.fabric_model import DATA_COUNTERS, Snapshot, data_rate_gbps, speed_from_lane_gbps
from fabricbench.analysis.fabric_routes import NoRoute, annotate_health, route, shared_links, switch_ports
from fabricbench.store import Measurement
from fabricbench.report.words.fabric import evidence, port_detail, verdict

DATA = Path(__file__).parent / "data" / "fabric"


def text(name: str) -> str:
    return (DATA / name).read_text()


def captured(design=None, taken="2026-11-23T10:57:30+00:00") -> Snapshot:
    """The captured fabric assembled the way a scan assembles it."""
    discovered = parse.parse_ibnetdiscover(text("ibnetdiscover.txt"))
    sw = {n["desc"]: n for n in discovered["nodes"]}
    portinfo = {(sw["edge1"]["guid"], 3): parse.parse_portinfo(text("portinfo_sw.txt")),
                ("0x10000a", 1): parse.parse_portinfo(text("portinfo_ca.txt"))}
    return parse.assemble(taken=taken, source="sim:cap", discovered=discovered,
                          links=parse.parse_iblinkinfo(text("iblinkinfo.txt")), portinfo=portinfo,
                          sminfo=parse.parse_sminfo(text("sminfo.txt")), smir=parse.parse_smir(text("smir.txt")),
                          errors=parse.parse_ibqueryerrors(text("ibqueryerrors.txt")),
                          counters=parse.parse_ibqueryerrors(text("ibqueryerrors_counters.txt")), design=design)


def stored(name: str = "snapshot_routes.json") -> Snapshot:
    data = json.loads((DATA / name).read_text())
    ms = [Measurement(benchmark="port_counters", params={"node": c["node"], "port": c["port"], "name": c["name"]},
                      metric=c["metric"], unit=c["unit"], value=c["value"]) for c in data["counters"]]
    return Snapshot.from_stored(data["fabric"], ms)


# -- parsers ------------------------------------------------------------------------------------------

def test_ibnetdiscover_nodes_and_cables():
    d = parse.parse_ibnetdiscover(text("ibnetdiscover.txt"))
    kinds = sorted((n["kind"], n["desc"]) for n in d["nodes"])
    assert kinds == [("ca", f"n{i} HCA-1") for i in range(1, 8)] + [("switch", "core1"), ("switch", "edge1"), ("switch", "edge2")]
    edge2 = next(n for n in d["nodes"] if n["desc"] == "edge2")
    assert (edge2["guid"], edge2["lid"], edge2["nports"]) == ("0x200002", 4, 8)
    n6 = [p for p in d["ports"] if p["node"] == edge2["guid"] and p["port"] == 2][0]
    assert (n6["remote"], n6["remote_port"], n6["remote_guid"], n6["width"], n6["speed"]) == ("0x10000a", 1, "0x10000b", 4, "FDR")
    n7 = [p for p in d["ports"] if p["node"] == "0x10000c"][0]  # a CA's own line carries its port GUID and LID
    assert (n7["guid"], n7["lid"], n7["remote"], n7["remote_port"]) == ("0x10000d", 10, "0x200002", 3)
    assert not [p for p in d["ports"] if p["node"] == "0x10000e"]  # n8 is unplugged: not discovered


def test_iblinkinfo_every_port_with_its_state():
    ports = parse.parse_iblinkinfo(text("iblinkinfo.txt"))
    assert len(ports) == 31  # 3 switches x 8 ports + 7 HCAs
    by = {(p["desc"], p["port"]): p for p in ports}
    assert by[("edge1", 3)]["width"] == 1 and by[("edge1", 3)]["speed"] == "SDR"
    assert by[("n6 HCA-1", 1)]["speed"] == "FDR" and by[("n6 HCA-1", 1)]["remote_port"] == 2
    down = by[("edge2", 4)]
    assert (down["state"], down["phys"], down["remote_guid"], down["width"]) == ("Down", "Polling", None, None)


def test_portinfo_enabled_supported_and_extended_speeds():
    sw = parse.parse_portinfo(text("portinfo_sw.txt"))
    assert sw["enabled_widths"] == [1] and sw["supported_widths"] == [1, 2, 4, 8, 12]
    assert sw["width"] == 1 and sw["speed"] == "SDR" and sw["enabled_speeds"] == ["SDR"]
    ca = parse.parse_portinfo(text("portinfo_ca.txt"))
    assert ca["speed"] == "FDR" and ca["enabled_speeds"] == ["SDR", "DDR", "QDR", "FDR"]
    assert ca["supported_speeds"][-2:] == ["EDR", "HDR"] and ca["lid"] == 9


def test_subnet_manager_counters_routes_and_traces():
    assert parse.parse_sminfo(text("sminfo.txt")) == {"lid": 1, "guid": "0x100001", "activity": 298, "priority": 7, "state": "MASTER"}
    assert [s["state"] for s in parse.parse_smir(text("smir.txt"))] == ["MASTER"]
    assert parse.parse_sminfo("ibwarn: mad_rpc failed\nsminfo: iberror: query failed") is None
    errors = parse.parse_ibqueryerrors(text("ibqueryerrors.txt"))
    assert errors == [{"guid": "0x100009", "port": 1, "counters": {"LinkDownedCounter": 3}},
                      {"guid": "0x200001", "port": 2, "counters": {"SymbolErrorCounter": 57}}]  # no 'port ALL' sums
    core = [c for c in parse.parse_ibqueryerrors(text("ibqueryerrors_counters.txt")) if c["guid"] == "0x200000" and c["port"] == 5][0]
    assert core["counters"]["PortXmitData"] == 250000016848
    lft = parse.parse_ibroute(text("ibroute.txt"))
    assert (lft["lid"], lft["guid"], lft["lft"][6], lft["lft"][3]) == (3, "0x200001", 3, 0)
    assert parse.parse_ibtracert(text("ibtracert.txt")) == [("n1 HCA-1", 1, "edge1", 1), ("edge1", 5, "core1", 5),
                                                            ("core1", 6, "edge2", 5), ("edge2", 1, "n5 HCA-1", 1)]
    assert parse.parse_ibtracert(text("ibtracert_down.txt")) == []


def test_speed_vocabulary_comes_from_the_peak_catalog():
    assert speed_from_lane_gbps(25.78125) == "EDR" and speed_from_lane_gbps(14.0625) == "FDR"
    assert speed_from_lane_gbps(10.3125) == "FDR10" and speed_from_lane_gbps(7.0) is None
    assert data_rate_gbps(4, "EDR") == pytest.approx(100.0) and data_rate_gbps(1, "SDR") == pytest.approx(2.0)


# -- the snapshot -------------------------------------------------------------------------------------

def test_assembled_snapshot_and_its_round_trip_through_the_store_format():
    snap = captured()
    assert len(snap.switches()) == 3 and len(snap.cas()) == 7 and len(snap.links()) == 9
    edge1 = next(n.guid for n in snap.switches() if n.name == "edge1")
    assert snap.ports[(edge1, 2)].counters["SymbolErrorCounter"] == 57
    assert snap.ports[(edge1, 2)].counters["PortXmitData"] % 4 == 0  # words became bytes
    assert snap.host_ports()["n5"] == ("0x100008", 1) and snap.lid_of(("0x100008", 1)) == 8
    assert snap.sm.state == "MASTER" and snap.counters_read
    back = Snapshot.from_stored(json.loads(json.dumps(snap.to_dict())), snap.counter_measurements())
    assert back.to_dict() == snap.to_dict()
    kept = {k: {n: v for n, v in p.counters.items() if n in DATA_COUNTERS or v} for k, p in snap.ports.items()}
    assert {k: p.counters for k, p in back.ports.items()} == kept
    with pytest.raises(ValueError):
        Snapshot.from_stored({"format": 99})


# -- the verdict --------------------------------------------------------------------------------------

def names(findings, kind):
    return sorted(tuple(f.ports) for f in findings if f.kind == kind)


def test_check_names_the_degraded_links_and_the_erroring_port():
    report = check(captured(design={"width": 4, "speed": "EDR"}))
    assert not report.healthy and report.exit_status == 1
    assert names(report.findings, "degraded") == [("edge1 port 3", "n3 HCA-1 port 1"), ("edge2 port 2", "n6 HCA-1 port 1")]
    assert names(report.findings, "errors") == [("edge1 port 2",)]  # n5's 3 link-downs are below the threshold of 10
    n3 = next(f for f in report.findings if f.ports[0] == "edge1 port 3")
    assert n3.severity == "critical" and "1X SDR" in evidence(n3) and "design 4X EDR" in evidence(n3)
    n6 = next(f for f in report.findings if f.ports[0] == "edge2 port 2")
    assert n6.severity == "warning" and "speed FDR < EDR" in evidence(n6)  # 54.5 of 100 Gb/s
    assert verdict(report).startswith("PROBLEMS: 2 degraded links (edge1 port 3 - n3 HCA-1 port 1")
    assert report.worst_errors[0].port == "edge1 port 2" and report.worst_errors[0].value == 57 + 0
    assert port_detail(report.worst_errors[0]).startswith("SymbolErrorCounter 57")
    assert report.busiest[0].port == "core1 port 5" and report.utilisation_unit == "bytes"


def test_without_a_design_a_link_is_judged_by_what_both_its_ends_are_enabled_for():
    snap = captured()
    assert names(check(snap).findings, "degraded") == []  # both ends of the slow cables are set that low
    edge1 = next(n.guid for n in snap.switches() if n.name == "edge1")
    snap.ports[(edge1, 3)].enabled_widths = [1, 2, 4]  # a cable that trained down: both ends could do 4X
    snap.ports[("0x100004", 1)].enabled_widths = [1, 2, 4]
    snap.ports[(edge1, 3)].enabled_speeds = snap.ports[("0x100004", 1)].enabled_speeds = ["SDR", "DDR", "QDR", "FDR", "EDR"]
    snap.ports[(edge1, 3)].supported_speeds = snap.ports[("0x100004", 1)].supported_speeds = ["SDR", "DDR", "QDR", "FDR", "EDR"]
    snap.ports[("0x100004", 1)].supported_widths = [1, 2, 4]
    found = [f for f in check(snap).findings if f.kind == "degraded"]
    assert [tuple(f.ports) for f in found] == [("edge1 port 3", "n3 HCA-1 port 1")]
    assert "both ports enabled for 4X EDR" in evidence(found[0])
    assert check(snap, thresholds=FabricThresholds(width=4, speed="FDR")).findings  # --width/--speed still apply


def test_against_the_previous_snapshot_down_links_growth_and_utilisation():
    before = captured(taken="2026-11-23T10:00:00+00:00")
    now = captured(taken="2026-11-23T10:10:00+00:00")
    edge1 = next(n.guid for n in now.switches() if n.name == "edge1")
    edge2 = next(n.guid for n in now.switches() if n.name == "edge2")
    core1 = next(n.guid for n in now.switches() if n.name == "core1")
    assert same_fabric(before, now)
    # n7's cable goes down between the scans; n5 goes down once more; edge1:2 is cleared
    now.ports[(edge2, 3)].state, now.ports[(edge2, 3)].phys, now.ports[(edge2, 3)].remote = "Down", "Polling", None
    del now.ports[("0x10000c", 1)]
    now.ports[("0x100008", 1)].counters["LinkDownedCounter"] = 4
    now.ports[(edge1, 2)].counters["SymbolErrorCounter"] = 0
    now.ports[(core1, 5)].counters["PortXmitData"] += 600 * 12_500_000_000 // 2  # half of 4X EDR for 600 s
    report = check(now, before)
    assert names(report.findings, "down") == [("edge2 port 3", "n7 HCA-1 port 1")]
    down = next(f for f in report.findings if f.kind == "down")
    assert down.severity == "critical" and "n7 HCA-1 port 1 not found" in evidence(down)
    grew = next(f for f in report.findings if f.kind == "errors")
    assert grew.ports == ["n5 HCA-1 port 1"] and "LinkDownedCounter 4 (+1 since the previous scan)" in evidence(grew)
    assert report.utilisation_unit == "%" and report.busiest[0].port == "core1 port 5"
    assert report.busiest[0].value == pytest.approx(50.0, rel=0.01)
    assert port_detail(report.busiest[0]).endswith(" B in 600 s on 4X EDR")
    other = captured()
    other.source = "sim:other"
    assert not same_fabric(before, other)


def test_no_master_sm_is_critical():
    snap = captured()
    snap.sm = None
    report = check(snap)
    assert names(report.findings, "sm") == [()] and report.findings[0].severity == "critical"
    assert "1 subnet manager problem" in verdict(report)


def test_a_healthy_fabric_is_healthy():
    report = check(stored())
    assert report.healthy and report.findings == [] and report.exit_status == 0
    assert verdict(report).startswith("HEALTHY: 3 switches, 8 HCAs, 10 links; master SM on n1 HCA-1")


# -- routes and the health link -----------------------------------------------------------------------

def test_route_follows_the_forwarding_tables():
    snap = stored()
    assert switch_ports(snap, route(snap, "n1", "n6")) == ["edge1 port 1", "edge1 port 5", "core1 port 1", "core1 port 2",
                                                          "edge2 port 5", "edge2 port 2"]
    assert switch_ports(snap, route(snap, "n1", "n2")) == ["edge1 port 1", "edge1 port 2"]
    assert route(snap, "n3", "n3") == []
    with pytest.raises(NoRoute, match="no HCA"):
        route(snap, "n1", "n99")
    broken = copy.deepcopy(snap)
    broken.routes[next(n.guid for n in snap.switches() if n.name == "core1")].pop(snap.lid_of(snap.host_ports()["n6"]))
    with pytest.raises(NoRoute, match="core1 has no route"):
        route(broken, "n1", "n6")
    counts, routed, problems = shared_links(snap, [("n1", "n5"), ("n2", "n6")])
    shared = [c for c, n in counts.items() if n == 2]
    assert routed == 2 and not problems and len(shared) == 2  # edge1-core1 and core1-edge2


def test_health_slow_pairs_are_reported_with_the_cable_they_share():
    from fabricbench.analysis.health import analyse

    snap = stored()
    nodes = [f"n{i}" for i in range(1, 9)]
    bw = np.full((8, 8), 1000.0)
    bw[2, :] = bw[:, 2] = 450.0  # n3 is slow with everyone
    np.fill_diagonal(bw, np.nan)
    report = analyse(nodes, bw, None)
    assert [(f.kind, f.nodes) for f in report.problems] == [("node", ["n3"])]
    result = SimpleNamespace(report=report, notes=[])
    findings = check(snap, thresholds=FabricThresholds(width=4, speed="EDR")).findings
    notes = annotate_health(result, snap, "snapshot run 7", findings)
    assert notes == ["fabric snapshot run 7: the 7 slow pairs all cross edge1 port 3 - n3 HCA-1 port 1"]
    assert report.problems[0].evidence.endswith("; crosses edge1 port 3 - n3 HCA-1 port 1")


def test_peak_catalog_link_from_a_scan():
    snap = captured()
    n3 = link_fabric(snap, ["n3"])
    assert n3.lanes == 1 and n3.data_rate_gbps == pytest.approx(0.25 * 8.0)  # 1X SDR: a quarter of 4X SDR
    edr = link_fabric(stored(), ["n1", "n2"])
    assert edr.data_rate_gbps == pytest.approx(100.0)
    assert link_fabric(snap, ["nobody"]) is None
