"""The all-pairs health analysis on synthetic matrices with known planted faults.

A synthetic fabric follows the bottleneck model of a real one: a transfer i -> j runs at
the slower of i's sending and j's receiving capacity, times lognormal noise; faults are
planted as a node's capacity (one side or both), a link's factor (one or both directions)
or latency. Each test checks that exactly the planted fault is reported, with the right
kind, nodes and side, and nothing else; noise-only matrices give no flags. False-positive
counts over many seeds are printed (run with -s).
"""
from __future__ import annotations

import json
from typing import Dict, Optional, Tuple

import numpy as np
import pytest

from fabricbench.analysis.health import Thresholds, analyse, analyse_metric, host_order, natural_key, row_col_medians
from fabricbench.report.words.health import evidence, report_dict, verdict_line
from fabricbench.analysis.health_data import NoAllPairsData, allpairs_from_measurements
from fabricbench.store.records import Measurement

BASE_BW = 12000.0  # MB/s
BASE_LAT = 1.6  # us


def labels(n: int):
    return [f"n{i + 1}" for i in range(n)]


def bandwidth(n: int = 16, noise: float = 0.04, seed: int = 0, send: Optional[Dict[int, float]] = None,
              recv: Optional[Dict[int, float]] = None, links: Optional[Dict[Tuple[int, int], float]] = None,
              base: float = BASE_BW) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s, r = np.ones(n), np.ones(n)
    for k, v in (send or {}).items():
        s[k] = v
    for k, v in (recv or {}).items():
        r[k] = v
    m = base * np.minimum(s[:, None], r[None, :]) * np.exp(rng.normal(0.0, noise, (n, n)))
    for (i, j), f in (links or {}).items():
        m[i, j] *= f
    np.fill_diagonal(m, np.nan)
    return m


def latency(n: int = 16, noise: float = 0.05, seed: int = 1, slow: Optional[Dict[int, float]] = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    f = np.ones(n)
    for k, v in (slow or {}).items():
        f[k] = v
    m = BASE_LAT * np.maximum(f[:, None], f[None, :]) * np.exp(rng.normal(0.0, noise, (n, n)))
    np.fill_diagonal(m, np.nan)
    return m


def problems(report):
    return [f for f in report.problems]


def only_problem(report):
    found = problems(report)
    assert len(found) == 1, [evidence(f) for f in found]
    return found[0]


# ---- noise only ------------------------------------------------------------------------------

@pytest.mark.parametrize("n, noise", [(8, 0.06), (16, 0.04), (64, 0.05)])
def test_noise_only_gives_no_flags(n, noise):
    flagged = 0
    seeds = 60
    for seed in range(seeds):
        report = analyse(labels(n), bandwidth(n, noise, seed), latency(n, noise, seed + 1000))
        flagged += not report.healthy
    print(f"noise-only {n} nodes, {noise:.0%} noise: {flagged} false positives in {seeds} matrices")
    assert flagged == 0


def test_healthy_report_says_so():
    report = analyse(labels(8), bandwidth(8), latency(8))
    assert report.healthy and report.exit_status == 0 and report.findings == []
    assert verdict_line(report).startswith("HEALTHY: 8 nodes, 56 pairs")
    bw = report.summaries["bandwidth"]
    assert bw.median == pytest.approx(BASE_BW, rel=0.05)
    assert bw.min <= bw.p5 <= bw.median <= bw.p95 <= bw.max
    assert set(bw.send) == set(labels(8)) and bw.pairs == 56


# ---- planted faults ----------------------------------------------------------------------------

def test_bad_node_both_directions():
    report = analyse(labels(16), bandwidth(16, send={5: 0.5}, recv={5: 0.5}), latency(16))
    f = only_problem(report)
    assert (f.kind, f.nodes, f.side, f.metric) == ("node", ["n6"], "both", "bandwidth")
    assert f.ratio == pytest.approx(0.5, abs=0.05)
    assert "n6" in evidence(f) and "15 of its 15 links" in evidence(f) and "NIC" in evidence(f)
    assert len(f.pairs) == 30
    assert report.exit_status == 1 and verdict_line(report).startswith("PROBLEMS: 1 bad node (n6)")


def test_bad_node_send_side_only():
    f = only_problem(analyse(labels(12), bandwidth(12, send={2: 0.45})))
    assert (f.kind, f.nodes, f.side) == ("node", ["n3"], "send")
    assert "only what it sends" in evidence(f)


def test_bad_node_receive_side_only():
    f = only_problem(analyse(labels(12), bandwidth(12, recv={9: 0.6})))
    assert (f.kind, f.nodes, f.side) == ("node", ["n10"], "receive")
    assert f.severity == "warning"


def test_node_with_most_links_slow_is_a_node_not_many_links():
    # 10 of its 15 outgoing links at 40%: most, so the row median is slow.
    links = {(4, j): 0.4 for j in range(16) if j != 4 and j < 11}
    f = only_problem(analyse(labels(16), bandwidth(16, links=links)))
    assert (f.kind, f.nodes, f.side) == ("node", ["n5"], "send")
    assert "10 of its 15 links" in evidence(f)


def test_bad_link_both_directions():
    f = only_problem(analyse(labels(16), bandwidth(16, links={(2, 9): 0.4, (9, 2): 0.35})))
    assert f.kind == "link" and sorted(f.nodes) == ["n10", "n3"]
    assert set(f.pairs) == {("n3", "n10"), ("n10", "n3")}
    assert f.severity == "critical" and f.ratio == pytest.approx(0.35, abs=0.05)
    assert "neither node explains it" in evidence(f)


def test_asymmetric_pair_one_direction_slow():
    f = only_problem(analyse(labels(16), bandwidth(16, links={(4, 11): 0.4})))
    assert f.kind == "asymmetric" and f.pairs == [("n5", "n12")]
    assert "one direction only" in evidence(f)


def test_asymmetric_pair_without_a_slow_direction():
    # 80% one way (not below the 75% threshold) and 150% the other: 53% of the reverse.
    f = only_problem(analyse(labels(16), bandwidth(16, noise=0.02, links={(4, 11): 0.8, (11, 4): 1.5})))
    assert f.kind == "asymmetric" and f.pairs == [("n5", "n12")]
    assert f.ratio == pytest.approx(0.8 / 1.5, abs=0.05)


def test_bad_node_and_a_bad_link_elsewhere():
    report = analyse(labels(16), bandwidth(16, send={0: 0.5}, recv={0: 0.5}, links={(6, 13): 0.3, (13, 6): 0.3}))
    kinds = sorted((f.kind, tuple(sorted(f.nodes))) for f in problems(report))
    assert kinds == [("link", ("n14", "n7")), ("node", ("n1",))]


def test_links_of_a_bad_node_are_explained_by_it():
    # n4 slow both ways; its links are not also reported as bad links or asymmetric pairs.
    report = analyse(labels(16), bandwidth(16, send={3: 0.3}, recv={3: 0.3}))
    assert [f.kind for f in problems(report)] == ["node"]


def test_pair_between_two_bad_nodes_is_explained_by_them():
    report = analyse(labels(16), bandwidth(16, send={1: 0.5, 7: 0.55}, recv={1: 0.5}))
    assert sorted((f.kind, f.nodes[0], f.side) for f in problems(report)) == [("node", "n2", "both"), ("node", "n8", "send")]


def test_latency_bad_node():
    report = analyse(labels(16), bandwidth(16), latency(16, slow={4: 3.0}))
    f = only_problem(report)
    assert (f.kind, f.metric, f.nodes, f.side) == ("node", "latency", ["n5"], "both")
    assert "3.0x the median latency" in evidence(f)


def test_latency_bad_link():
    lat = latency(16)
    lat[2, 8] *= 4
    lat[8, 2] *= 4
    f = only_problem(analyse(labels(16), latency=lat))
    assert f.kind == "link" and f.metric == "latency" and sorted(f.nodes) == ["n3", "n9"]


def test_threshold_is_a_parameter():
    m = bandwidth(16, noise=0.01, send={3: 0.8}, recv={3: 0.8})
    assert analyse(labels(16), m).healthy  # 80% is above the default 75%
    f = only_problem(analyse(labels(16), m, thresholds=Thresholds(threshold=0.9)))
    assert f.nodes == ["n4"]


def test_floor_from_the_catalog_catches_a_uniformly_slow_fabric():
    m = bandwidth(8, base=3000.0)  # every pair at 3,000 MB/s on a 12,500 MB/s link
    assert analyse(labels(8), m).healthy
    report = analyse(labels(8), m, thresholds=Thresholds(floor_MBps=6250.0, floor_note="50% of EDR"))
    kinds = {f.kind for f in report.problems}
    assert "fabric" in kinds and "50% of EDR" in evidence(report.problems[0])
    assert verdict_line(report).startswith("PROBLEMS: fabric below the floor")


# ---- retests ------------------------------------------------------------------------------------

def retest_of(m: np.ndarray, cells, factor: float = 1.0, seed: int = 9) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rt = np.full_like(m, np.nan)
    for i, j in cells:
        rt[i, j] = BASE_BW * factor * float(np.exp(rng.normal(0, 0.02)))
    return rt


def test_retest_clears_a_busy_moment():
    m = bandwidth(16, links={(3, 7): 0.5})
    report = analyse(labels(16), m, retest_bandwidth=retest_of(m, [(3, 7), (0, 1)]))
    assert report.healthy and report.exit_status == 0
    (f,) = [f for f in report.findings if f.kind == "transient"]
    assert f.retest == "cleared" and f.severity == "info" and f.values["was"] == "asymmetric"
    assert "busy moment" in evidence(f)
    assert "1 slow reading cleared by retest" in verdict_line(report)


def test_retest_confirms_a_bad_link():
    m = bandwidth(16, links={(3, 7): 0.5, (7, 3): 0.5})
    f = only_problem(analyse(labels(16), m, retest_bandwidth=retest_of(m, [(3, 7), (7, 3)], factor=0.5)))
    assert f.kind == "link" and f.retest == "confirmed" and "confirmed alone" in evidence(f)


def test_retest_clears_a_node_slowed_by_a_busy_moment():
    m = bandwidth(16, send={2: 0.6}, recv={2: 0.6})
    cells = [(2, j) for j in range(16) if j != 2] + [(j, 2) for j in range(16) if j != 2]
    report = analyse(labels(16), m, retest_bandwidth=retest_of(m, cells))
    assert report.healthy
    assert [f.values["was"] for f in report.findings] == ["node"]


def test_retest_confirms_a_bad_node():
    m = bandwidth(16, send={2: 0.5}, recv={2: 0.5})
    cells = [(2, j) for j in range(16) if j != 2]
    f = only_problem(analyse(labels(16), m, retest_bandwidth=retest_of(m, cells, factor=0.5)))
    assert f.kind == "node" and f.retest == "confirmed" and "(15 pairs)" in evidence(f)


def test_finding_without_retest_says_so_when_others_were_retested():
    m = bandwidth(16, links={(3, 7): 0.4, (7, 3): 0.4})
    f = only_problem(analyse(labels(16), m, retest_bandwidth=retest_of(m, [(0, 1)])))
    assert f.retest == "not retested"


def test_outliers_cleared_by_retest_leave_a_noisy_fabric_healthy():
    # 2% of cells hit by a busy moment (60%), every one of them retested alone.
    rng = np.random.default_rng(5)
    m = bandwidth(16, noise=0.05, seed=5)
    hit = [(int(i), int(j)) for i, j in zip(*np.nonzero(rng.random((16, 16)) < 0.02)) if i != j]
    for i, j in hit:
        m[i, j] *= 0.6
    report = analyse(labels(16), m, retest_bandwidth=retest_of(m, hit))
    assert report.healthy, [evidence(f) for f in report.problems]


# ---- edge cases -----------------------------------------------------------------------------------

def test_missing_cells_take_the_general_path():
    m = bandwidth(12, send={4: 0.4}, recv={4: 0.4})
    m[0, 5] = m[7, 2] = m[9, 11] = np.nan
    f = only_problem(analyse(labels(12), m))
    assert f.nodes == ["n5"]


def test_fast_and_general_medians_agree():
    m = bandwidth(9, seed=3)
    rows, cols = row_col_medians(m)
    assert np.allclose(rows, np.nanmedian(m, axis=1)) and np.allclose(cols, np.nanmedian(m, axis=0))
    m[0, 1] = np.nan
    rows, cols = row_col_medians(m)
    assert np.allclose(rows, np.nanmedian(m, axis=1)) and np.allclose(cols, np.nanmedian(m, axis=0))


def test_two_nodes_only_asymmetry_is_checked():
    m = np.array([[np.nan, 100.0], [40.0, np.nan]])
    report = analyse(["a", "b"], m)
    assert any(f.kind == "note" for f in report.findings)
    assert [f.kind for f in report.problems] == ["asymmetric"]


def test_bad_matrix_shape_is_refused():
    with pytest.raises(ValueError, match="N x N"):
        analyse_metric(np.ones((3, 4)), labels(3))


def test_report_is_json_serialisable():
    report = analyse(labels(8), bandwidth(8, send={1: 0.4}), latency(8))
    d = json.loads(json.dumps(report_dict(report)))
    assert d["healthy"] is False and d["findings"][0]["kind"] == "node"
    assert d["summary"]["bandwidth"]["pairs"] == 56 and "latency" in d["summary"]


def test_natural_host_order():
    names = ["n10", "n2", "n1", "node-b", "n9"]
    assert [names[i] for i in host_order(names)] == ["n1", "n2", "n9", "n10", "node-b"]
    assert natural_key("a10b") > natural_key("a9c")


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(n=st.integers(6, 40), factor=st.floats(0.1, 0.6), noise=st.floats(0.005, 0.05), data=st.data())
def test_any_planted_bad_node_is_found_and_nothing_else(n, factor, noise, data):
    k = data.draw(st.integers(0, n - 1))
    seed = data.draw(st.integers(0, 10_000))
    f = only_problem(analyse(labels(n), bandwidth(n, noise, seed, send={k: factor}, recv={k: factor})))
    assert (f.kind, f.nodes, f.side) == ("node", [f"n{k + 1}"], "both")


# ---- from stored measurements ----------------------------------------------------------------------

def pair_record(src, dst, value, metric="bandwidth", direction="recv", size=1 << 20, retest=False, hosts=None, **extra):
    hosts = hosts or {}
    params = {"size": size if metric == "bandwidth" else 8, "ranks": 4, "src": src, "dst": dst, "rank_src": src,
              "rank_dst": dst, "src_host": hosts.get(src, f"h{src}"), "dst_host": hosts.get(dst, f"h{dst}"),
              "direction": direction, "mode": "exchange", **extra}
    if retest:
        params["retest"] = True
    return Measurement("allpairs", params, metric, "MB/s" if metric == "bandwidth" else "us", value=value)


def test_matrices_from_engine_records():
    ms = []
    for i in range(4):
        for j in range(4):
            if i != j:
                ms.append(pair_record(i, j, 100.0 + 10 * i + j))
                ms.append(pair_record(i, j, 50.0 + i, direction="send"))
                ms.append(pair_record(i, j, 2.0 + i, metric="latency", direction="send"))
                ms.append(pair_record(i, j, 999.0, size=4096))
    ms.append(pair_record(1, 2, 80.0, retest=True))
    ms.append(Measurement("allpairs", {"size": 1 << 20, "ranks": 4, "scope": "matrix", "direction": "recv"},
                          "bandwidth", "MB/s", value=1.0))
    ms.append(Measurement("latency", {"size": 8, "ranks": 2}, "latency", "us", value=1.0))
    d = allpairs_from_measurements(ms)
    assert d.labels == ["h0", "h1", "h2", "h3"] and d.size == 1 << 20 and d.direction == "recv"
    assert d.bandwidth[1, 2] == 112.0 and np.isnan(d.bandwidth[2, 2])
    assert d.latency[3, 0] == 5.0
    assert d.retest_bandwidth[1, 2] == 80.0 and np.isfinite(d.retest_bandwidth).sum() == 1
    assert "largest" in d.notes[0]
    assert allpairs_from_measurements(ms, direction="send").bandwidth[3, 1] == 53.0
    assert allpairs_from_measurements(ms, size=4096).bandwidth[0, 1] == 999.0
    with pytest.raises(NoAllPairsData, match="8192"):
        allpairs_from_measurements(ms, size=8192)


def test_matrices_from_mpigraph_shaped_records_and_shared_hosts():
    ms = [Measurement("allpairs", {"size": 1 << 20, "src": i, "dst": j, "src_host": "same", "dst_host": "same",
                                   "direction": "send", "ranks": 3}, "bandwidth", "MB/s", value=10.0)
          for i in range(3) for j in range(3) if i != j]
    d = allpairs_from_measurements(ms)
    assert d.labels == ["same:0", "same:1", "same:2"] and d.direction == "send" and d.latency is None
    assert any("share a host" in n for n in d.notes)
    with pytest.raises(NoAllPairsData):
        allpairs_from_measurements([Measurement("bw", {"size": 1}, "bandwidth", "MB/s", value=1.0)])


def test_link_ceiling_makes_a_slow_node_a_suspect_in_a_noisy_sweep():
    # 4 nodes, exchange-like crowding: the healthy cells spread 45-100 MB/s, n3 reads 0.6 of the others
    # (a 250mbit node of a 1gbit lab among busy senders). The noise guard hides it; the lab's ceiling
    # (125 MB/s: n3 is below half of it) makes it a suspect, and the retest alone confirms it.
    rng = np.random.default_rng(3)
    m = 70.0 * np.exp(rng.normal(0.0, 0.3, (4, 4)))
    m[2, :], m[:, 2] = 42.0, 44.0
    np.fill_diagonal(m, np.nan)
    alone = np.full((4, 4), np.nan)
    alone[2, [0, 1, 3]] = alone[[0, 1, 3], 2] = 28.5
    noisy = analyse(labels(4), m, retest_bandwidth=alone)
    assert not [f for f in noisy.findings if f.kind == "node"], [evidence(f) for f in noisy.findings]
    th = Thresholds(ceiling_MBps=125.0)
    f = only_problem(analyse(labels(4), m, retest_bandwidth=alone, thresholds=th))
    assert (f.kind, f.nodes, f.retest) == ("node", ["n3"], "confirmed")
    # the same sweep alone at the others' rate is a busy moment, not a fault
    alone[2, [0, 1, 3]] = alone[[0, 1, 3], 2] = 70.0
    assert analyse(labels(4), m, retest_bandwidth=alone, thresholds=th).healthy


def test_link_ceiling_of_a_lab_run_is_its_nominal_link_not_the_degraded_node():
    from types import SimpleNamespace

    from fabricbench.analysis.health_check import link_ceiling

    lab = {"name": "x", "link": "1gbit", "link_bps": 1e9, "mtu": 1500,
           "nodes": {"x-n1": {"rate_bps": 1e9, "switch": "x-sw1"}, "x-n3": {"rate_bps": 250e6, "switch": "x-sw1"}}}
    run = SimpleNamespace(provenance={"lab": lab}, tags={}, id=1)
    assert link_ceiling(run, []) == pytest.approx(125.0)


def test_latency_on_a_busy_host_is_not_judged():
    from fabricbench.analysis.health import set_aside_busy_latency
    from fabricbench.analysis.host_state import HostLoad

    lat = latency(8, slow={3: 5.0})  # n4's round trips 5x the others'
    report = analyse(labels(8), latency=lat)
    assert [f.nodes for f in report.findings if f.problem] == [["n4"]]
    # load 30 on 2 CPUs with 4 ranks: contention alone moves a round trip up to 289x
    assert set_aside_busy_latency(report, 289.0, HostLoad("", 1, 30.0, 2, 4)) == 1
    assert report.healthy and "too busy to judge latency (load 30.00 on 2 CPUs with 4 ranks:" in evidence(report.findings[0])
    # on a quiet host (factor 1) the same finding stands
    assert set_aside_busy_latency(analyse(labels(8), latency=lat), 1.0, HostLoad("", 1, 0.1, 2, 4)) == 0


def test_evidence_is_worded_from_the_finding_and_what_befell_it_in_order():
    """A finding is figures and clauses (analysis); its one sentence is written by report.words.health,
    the retest's clause before what other checks add (fabric_routes' cables)."""
    import re

    m = bandwidth(16, links={(2, 7): 0.3, (7, 2): 0.4})
    rt = np.full_like(m, np.nan)
    rt[2, 7], rt[7, 2] = 0.3 * BASE_BW, 0.3 * BASE_BW
    [f] = analyse(labels(16), m, retest_bandwidth=rt).problems
    assert f.kind == "link" and [c for c, _x in f.clauses] == ["confirmed"] and f.figures["form"] == "link"
    f.evidence += "; crosses n3 - sw1"
    text = evidence(f)
    assert text.startswith("link n3 <-> n8: bandwidth ") and "neither node explains it" in text, text
    assert re.search(r"; confirmed alone: \d+% of the expectation \(2 pairs\); crosses n3 - sw1$", text), text
    assert report_dict(analyse(labels(16), m, retest_bandwidth=rt))["findings"][0]["evidence"].startswith("link n3 <-> n8")
