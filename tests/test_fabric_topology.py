"""The simulated fabric's topology: fat-tree cabling, ibsim's net file, degraded cables, port references."""
from __future__ import annotations

import pytest

from fabricbench.errors import UsageError
from fabricbench.planning.fabric_topology import SimSpec, build, parse_link, render, speed_masks, width_mask

HOSTS = [f"n{i}" for i in range(1, 9)]


def test_fat_tree_of_edges_and_a_core():
    topo = build(SimSpec(hosts=HOSTS, switches=3))
    assert list(topo.switches) == ["edge1", "edge2", "core1"] and set(topo.switches.values()) == {8}
    assert topo.peer(("n1", 1)) == ("edge1", 1) and topo.peer(("n5", 1)) == ("edge2", 1)
    assert topo.peer(("edge1", 5)) == ("core1", 1) and topo.peer(("edge2", 5)) == ("core1", 2)
    assert len(topo.cables) == 10


def test_two_switches_are_cabled_to_each_other_and_one_holds_everything():
    two = build(SimSpec(hosts=HOSTS, switches=2, uplinks=2))
    assert two.peer(("edge1", 5)) == ("edge2", 5) and two.peer(("edge1", 6)) == ("edge2", 6)
    one = build(SimSpec(hosts=[f"h{i}" for i in range(1, 11)], switches=1))
    assert one.switches == {"edge1": 10} and one.peer(("h10", 1)) == ("edge1", 10)
    big = build(SimSpec(hosts=[f"h{i}" for i in range(1, 33)], switches=6, uplinks=2))
    assert len([s for s in big.switches if s.startswith("core")]) == 2
    assert big.switches["edge1"] == 8 + 2 * 2  # 8 hosts, 2 cables to each of 2 cores


def test_net_file_gives_both_ends_of_a_degraded_cable_the_same_masks():
    spec = SimSpec(hosts=HOSTS, switches=3, degrade={"edge1:3": "1x", "n6": "FDR", "edge2[5]": "2xQDR"})
    text = render(spec, build(spec), "t")
    assert "width=19\nspeed=7\nextspeed=3" in text  # 4X EDR: 1x|2x|4x, SDR|DDR|QDR, FDR|EDR
    assert '[3]\t"n3"[1]\tw=1 s=7 e=3' in text and '[1]\t"edge1"[3]\tw=1 s=7 e=3' in text
    assert '[2]\t"n6"[1]\tw=19 s=7 e=1' in text and '[1]\t"edge2"[2]\tw=19 s=7 e=1' in text
    assert '[5]\t"core1"[2]\tw=17 s=7 e=0' in text and '[2]\t"edge2"[5]\tw=17 s=7 e=0' in text
    assert 'Hca\t1 "n3"\t# "n3 HCA-1"' in text


def test_masks_and_links():
    assert width_mask(4) == 0x13 and width_mask(1) == 1 and width_mask(12) == 0x1F
    assert speed_masks("EDR") == (7, 3) and speed_masks("QDR") == (7, 0) and speed_masks("SDR") == (1, 0)
    assert parse_link("1x") == (1, None) and parse_link("FDR") == (None, "FDR") and parse_link("1xQDR") == (1, "QDR")
    with pytest.raises(UsageError, match="width"):
        parse_link("3x")


@pytest.mark.parametrize("spec, message", [
    (dict(hosts=HOSTS, switches=3, degrade={"edge9:1": "1x"}), "no switch or host 'edge9'"),
    (dict(hosts=HOSTS, switches=3, degrade={"edge1:7": "1x"}), "has no cable"),
    (dict(hosts=HOSTS, switches=3, degrade={"edge1:99": "1x"}), "ports 1 to 8"),
    (dict(hosts=HOSTS, switches=3, speed="NDR"), "speed 'NDR'"),
    (dict(hosts=["a", "a"]), "unique"),
    (dict(hosts=HOSTS, switches=4, cores=0), "need a core"),
    (dict(hosts=HOSTS[:2], switches=4), "some would be empty"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(UsageError, match=message):
        build(SimSpec(**spec))
