"""The peak catalog: consistency of every entry, detection from host facts, % of peak, PCIe ceilings."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from fabricbench.analysis import peaks
from fabricbench.report.words.peaks import ceiling_note
from fabricbench.store.records import Run

REQUIRED = {"sdr", "ddr", "qdr", "fdr", "edr", "hdr", "ndr", "xdr", "opa100", "eth1g", "eth10g", "eth25g", "eth40g",
            "eth100g", "eth200g", "eth400g", "pcie3x16", "pcie4x16", "pcie5x16"}


def test_catalog_has_every_generation():
    assert REQUIRED <= set(peaks.load_catalog())


@pytest.mark.parametrize("key", sorted(REQUIRED))
def test_entry_is_consistent(key):
    f = peaks.load_catalog()[key]
    assert f.lanes > 0 and f.signalling_gbps > 0 and f.source and f.encoding
    # data rate = lanes x lane rate x encoding efficiency, and MB/s is decimal
    assert f.computed_gbps == pytest.approx(f.data_rate_gbps, rel=1e-9)
    assert f.data_rate_MBps == pytest.approx(f.data_rate_gbps * 1e9 / 8 / 1e6, rel=1e-9)
    assert 0 < f.efficiency <= 1


def test_encoding_efficiencies_match_their_names():
    for f in peaks.load_catalog().values():
        if f.encoding == "8b/10b":
            assert f.efficiency == Fraction(8, 10)
        elif f.encoding.startswith("64b/66b"):
            assert f.efficiency == Fraction(64, 66)
        elif f.encoding == "128b/130b":
            assert f.efficiency == Fraction(128, 130)
        elif "RS(544,514)" in f.encoding:
            # 64b/66b -> 256b/257b transcoding -> RS(544,514) FEC
            assert f.efficiency == Fraction(64, 66) * Fraction(264, 257) * Fraction(514, 544)


def test_known_figures():
    cat = peaks.load_catalog()
    assert cat["edr"].data_rate_MBps == 12500 and cat["edr"].signalling_gbps == 25.78125
    assert cat["fdr"].data_rate_gbps == pytest.approx(54.545, rel=1e-4)
    assert cat["qdr"].data_rate_MBps == 4000
    assert cat["hdr"].data_rate_gbps == 200 and cat["ndr"].data_rate_gbps == 400 and cat["xdr"].data_rate_gbps == 800
    assert cat["opa100"].data_rate_MBps == 12500
    assert cat["eth10g"].data_rate_MBps == 1250 and cat["eth400g"].data_rate_gbps == 400
    assert cat["pcie3x16"].data_rate_MBps == pytest.approx(15753.85, rel=1e-5)
    assert cat["pcie4x16"].data_rate_MBps == pytest.approx(2 * cat["pcie3x16"].data_rate_MBps)


def test_aliases_and_widths():
    assert peaks.get_fabric("OPA").key == "opa100"
    assert peaks.get_fabric("100gbe").key == "eth100g"
    hdr100 = peaks.get_fabric("hdr-2x")
    assert hdr100.lanes == 2 and hdr100.data_rate_gbps == pytest.approx(100)
    assert peaks.get_fabric("warp-drive") is None and peaks.get_fabric(None) is None


@pytest.mark.parametrize("rate,device,link_layer,expected,gbps", [
    ("100 Gb/sec (4X EDR)", "mlx5_0", "InfiniBand", "edr", 100),
    ("56 Gb/sec (4X FDR)", "mlx4_0", "InfiniBand", "fdr", 54.545),
    ("40 Gb/sec (4X QDR)", "mlx4_0", "InfiniBand", "qdr", 32),
    ("200 Gb/sec (4X HDR)", "mlx5_0", "InfiniBand", "hdr", 200),
    ("100 Gb/sec (2X HDR)", "mlx5_0", "InfiniBand", "hdr-2x", 100),
    ("400 Gb/sec (4X NDR)", "mlx5_0", "InfiniBand", "ndr", 400),
    ("25 Gb/sec (1X EDR)", "mlx5_0", "InfiniBand", "edr-1x", 25),
    ("100 Gb/sec (4X EDR)", "hfi1_0", "InfiniBand", "opa100", 100),  # Omni-Path reports itself as 4X EDR
    ("100 Gb/sec (4X EDR)", "mlx5_0", "Ethernet", "eth100g", 100),  # RoCE
    ("25 Gb/sec (1X EDR)", "mlx5_1", "Ethernet", "eth25g", 25),
    ("20 Gb/sec (4X DDR)", "mthca0", "InfiniBand", "ddr", 16),
    ("10 Gb/sec (4X)", "mthca0", "InfiniBand", "sdr", 8),  # old kernels: no speed name
])
def test_detect_fabric_from_port_rate(rate, device, link_layer, expected, gbps):
    facts = {"infiniband": [{"device": device, "port": 1, "rate": rate, "state": "4: ACTIVE", "link_layer": link_layer}]}
    f = peaks.detect_fabric(facts)
    assert f is not None and f.key == expected
    assert f.data_rate_gbps == pytest.approx(gbps, rel=1e-4)


def test_detect_prefers_active_ports_then_fastest_nic():
    facts = {
        "infiniband": [{"device": "mlx5_0", "port": 1, "rate": "200 Gb/sec (4X HDR)", "state": "1: DOWN"},
                       {"device": "mlx5_1", "port": 1, "rate": "100 Gb/sec (4X EDR)", "state": "4: ACTIVE"}],
    }
    assert peaks.detect_fabric(facts).key == "edr"
    eth = {"net": [{"name": "lo", "speed_mbps": 100000}, {"name": "veth0", "driver": "veth", "speed_mbps": 10000},
                   {"name": "eno1", "speed_mbps": 1000, "operstate": "up"},
                   {"name": "ens1f0", "speed_mbps": 25000, "operstate": "up", "driver": "mlx5_core"},
                   {"name": "ens1f1", "speed_mbps": 100000, "operstate": "down"}]}
    assert peaks.detect_fabric(eth).key == "eth25g"
    assert peaks.detect_fabric({}) is None and peaks.detect_fabric(None) is None
    assert peaks.detect_fabric({"net": [{"name": "veth1", "driver": "veth", "speed_mbps": 10000}]}) is None


def _run(tags=None, provenance=None):
    return Run(id=1, uuid="u", created="", label=None, tags=tags or {}, kind="benchmark", command=None,
               tool_version="0", status="complete", provenance=provenance or {})


def test_fabric_for_run_precedence():
    hosts = [{"infiniband": [{"device": "mlx5_0", "port": 1, "rate": "56 Gb/sec (4X FDR)", "state": "4: ACTIVE"}]}]
    assert peaks.fabric_for_run(_run({"fabric": "edr"}, {"fabric": "hdr"}), hosts).key == "edr"
    assert peaks.fabric_for_run(_run({}, {"fabric": "hdr"}), hosts).key == "hdr"
    assert peaks.fabric_for_run(_run(), hosts).key == "fdr"
    assert peaks.choose_fabric(_run(), hosts).how == "detected"
    assert peaks.fabric_for_run(_run()) is None
    # the slowest host bounds the run
    mixed = hosts + [{"infiniband": [{"device": "mlx5_0", "port": 1, "rate": "40 Gb/sec (4X QDR)", "state": "4: ACTIVE"}]}]
    assert peaks.fabric_for_run(_run(), mixed).key == "qdr"


def test_percent_of_peak():
    edr = peaks.get_fabric("edr")
    assert peaks.percent_of_peak(12300, edr) == pytest.approx(98.4)
    assert peaks.percent_of_peak(12300, "opa100") == pytest.approx(98.4)
    assert peaks.percent_of_peak(24300, edr, directions=2) == pytest.approx(97.2)
    assert peaks.percent_of_peak(None, edr) is None and peaks.percent_of_peak(1, None) is None
    assert peaks.peak_for("bibw", edr) == 25000 and peaks.peak_for("bw", edr) == 12500


def test_pcie_ceiling():
    link = peaks.pcie_data_rate("8.0 GT/s PCIe", "x8")
    assert link.name == "PCIe Gen3 x8" and link.data_rate_MBps == pytest.approx(7876.9, rel=1e-4)
    assert peaks.pcie_data_rate("2.5 GT/s", 4).data_rate_MBps == pytest.approx(1000)
    assert peaks.pcie_data_rate("16 GT/s", "16").generation == 4
    assert peaks.pcie_data_rate("fast", "x16") is None
    facts = {"net": [{"name": "ib0", "speed_mbps": 100000, "pcie": {"speed": "8.0 GT/s PCIe", "width": "x8"}}]}
    c = peaks.ceiling(peaks.get_fabric("edr"), [facts])
    assert c.by == "pcie" and c.limit_MBps == pytest.approx(7876.9, rel=1e-4)
    assert "PCIe Gen3 x8" in ceiling_note(c) and "is the ceiling, not InfiniBand EDR 4x" in ceiling_note(c)
    wide = {"net": [{"name": "ib0", "speed_mbps": 100000, "pcie": {"speed": "8.0 GT/s PCIe", "width": "x16"}}]}
    assert peaks.ceiling(peaks.get_fabric("edr"), [wide]).by == "fabric"
    assert peaks.ceiling(peaks.get_fabric("hdr"), [wide]).by == "pcie"  # HDR 200 Gb/s needs Gen4 x16
    assert peaks.ceiling(None, []) is None


def test_cli_fabrics():
    from fabricbench.cli.app import main
    import fabricbench.cli.report  # noqa: F401

    runner = CliRunner()
    res = runner.invoke(main, ["fabrics", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    edr = next(f for f in data if f["key"] == "edr")
    assert edr["data_rate_MBps"] == 12500 and edr["encoding"] == "64b/66b" and edr["efficiency"] == "32/33"
    res = runner.invoke(main, ["fabrics"])
    assert res.exit_code == 0 and "opa100" in res.output and "12,500" in res.output


def test_unknown_fabric_names_are_refused_with_close_names():
    with pytest.raises(peaks.UnknownFabric, match=r"unknown fabric 'ehr'; did you mean .*edr"):
        peaks.resolve_fabric("ehr")
    with pytest.raises(peaks.UnknownFabric, match="lab-1g"):
        peaks.resolve_fabric("lab-1gg")
    assert peaks.resolve_fabric("EDR").key == "edr" and peaks.resolve_fabric("lab") is None
    lab = peaks.resolve_fabric("lab-500m")
    assert lab.family == "lab" and lab.data_rate_MBps == 62.5 and peaks.resolve_fabric("lab-1gbit").data_rate_MBps == 125.0
    # a stored run with an unknown tag gets no peak, and says why
    peak = peaks.run_ceiling(_run({"fabric": "ehr"}, {"nodes": 2}))
    assert peak.ceiling is None and "unknown fabric 'ehr'" in peak.why_none


def _lab_prov(**rates):
    return {"nodes": len(rates), "lab": {"name": "fbl", "link": "1gbit", "link_bps": 10**9, "uplink": None, "uplink_bps": None,
            "nodes": {n: {"rate": r, "rate_bps": int(float(r[:-4]) * 1e6), "switch": "fbl-sw1"} for n, r in rates.items()}}}


def test_lab_runs_are_measured_against_their_shaped_rate():
    prov = _lab_prov(**{"fbl-n1": "1000mbit", "fbl-n2": "500mbit"})
    choice = peaks.choose_fabric(_run({}, prov))
    assert choice.how == "lab" and choice.fabric.data_rate_MBps == 62.5  # the slowest link used bounds the run
    assert peaks.choose_fabric(_run({"fabric": "lab-1g"}, prov)).fabric.data_rate_MBps == 62.5  # recorded beats the tag
    assert peaks.choose_fabric(_run({"fabric": "lab-1g"}, {"nodes": 2})).fabric.data_rate_MBps == 125.0
    assert peaks.choose_fabric(_run({"fabric": "edr"}, prov)).fabric.key == "edr"  # an explicit catalog link wins
    c = peaks.run_ceiling(_run({}, prov)).ceiling
    assert c.limit_MBps == 62.5 and c.by == "fabric" and c.pcie is None


def test_shared_memory_has_no_ceiling():
    for run in (_run({"fabric": "shm"}, {"nodes": 1}), _run({}, {"nodes": 1, "hosts": ["vm"]}), _run({"fabric": "vader"})):
        peak = peaks.run_ceiling(run, [{"net": [{"name": "eth0", "speed_mbps": 10000, "operstate": "up"}]}])
        assert peak.ceiling is None and peak.why_none == "shared memory: no link ceiling"
    assert peaks.choose_fabric(_run({}, {"nodes": 1})).how == "one host"


def test_aggregate_figures_get_the_right_multiple_of_the_link():
    assert peaks.link_multiple("bibw", "bibandwidth", {"size": 8})[0] == 2
    assert peaks.link_multiple("bw", "bandwidth", {"size": 8})[0] == 1
    spread = _run({}, {"nodes": 4, "rank_hosts": ["n1", "n2", "n3", "n4"]})  # round robin: pairs (0,2), (1,3)
    assert peaks.link_multiple("mbw_mr", "bandwidth", {"ranks": 4, "pairs": 2}, spread)[0] == 2
    block = _run({}, {"nodes": 2, "rank_hosts": ["n1", "n1", "n2", "n2"]})  # both pairs share n1's link
    assert peaks.link_multiple("mbw_mr", "bandwidth", {"ranks": 4, "pairs": 2}, block)[0] == 1
    inside = _run({}, {"nodes": 2, "rank_hosts": ["n1", "n2", "n1", "n2"]})  # pairs inside one host
    multiple, note = peaks.link_multiple("mbw_mr", "bandwidth", {"ranks": 4, "pairs": 2}, inside)
    assert multiple is None and "inside one host" in note
    edr = peaks.Ceiling(12500.0, "fabric", peaks.get_fabric("edr"), None)
    assert peaks.point_peak(edr, "mbw_mr", "bandwidth", {"ranks": 4, "pairs": 2}, spread)[0] == 25000
    from fabricbench.report.words.peaks import over_peak_note

    assert "more than the link can carry" in over_peak_note(peaks.is_lab(peaks.get_fabric("edr")), 108.5)
    assert "token bucket" in over_peak_note(peaks.is_lab(peaks.lab_fabric(1e9)), 101.0)
