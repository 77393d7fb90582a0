"""Each importer on its sample files: detection, benchmark names, metrics, units and conversions."""
from __future__ import annotations

from pathlib import Path

import pytest

from fabricbench.importers import Source, detect_format, import_file
from fabricbench.importers.base import MIB_PER_S

DATA = Path(__file__).parent / "data" / "import"

EXPECTED_FORMAT = {
    "osu_latency.txt": "osu", "osu_bw.txt": "osu", "osu_bibw.txt": "osu", "osu_mbw_mr.txt": "osu",
    "osu_multi_lat.txt": "osu", "osu_collectives_full.txt": "osu", "osu_alltoall.txt": "osu",
    "imb_mpi1.txt": "imb", "imb_v3_pingpong_allreduce.txt": "imb",
    "hpccoutf_2ranks.txt": "hpcc",
    "perftest_ib_write_bw.txt": "perftest", "perftest_ib_send_bw_gbits.txt": "perftest",
    "perftest_ib_write_lat.txt": "perftest", "perftest_ib_write_bw.json": "perftest",
    "mpigraph_6nodes.txt": "mpigraph",
    "nccl_all_reduce_perf.txt": "nccl", "nccl_all_gather.json": "nccl",
    "iperf3_tcp_loopback.json": "iperf3", "iperf3_udp_loopback.json": "iperf3",
    "iperf3_tcp_reverse_2streams.json": "iperf3",
}


def load(name, **kw):
    return import_file(str(DATA / name), **kw)


def points(parsed, benchmark=None, metric=None):
    return [m for m in parsed.measurements
            if (benchmark is None or m.benchmark == benchmark) and (metric is None or m.metric == metric)]


def test_every_sample_is_listed_and_described():
    files = {p.name for p in DATA.iterdir() if p.name != "README.md"}
    assert files == set(EXPECTED_FORMAT)
    readme = (DATA / "README.md").read_text()
    for name in files:
        assert name in readme, f"{name} is not described in tests/data/import/README.md"


@pytest.mark.parametrize("name", sorted(EXPECTED_FORMAT))
def test_format_is_detected_from_content(name):
    source = Source.read(str(DATA / name))
    assert detect_format(source) == EXPECTED_FORMAT[name]
    parsed = load(name)
    assert parsed.format == EXPECTED_FORMAT[name]
    assert parsed.complete
    for m in parsed.measurements:
        assert m.detail and (m.detail.get("source", "").startswith(name) or parsed.format in ("iperf3", "nccl"))


# -- OSU -------------------------------------------------------------------------------


def test_osu_point_to_point_use_native_names_and_units():
    lat = load("osu_latency.txt")
    assert lat.tool_version == "7.3"
    assert {m.benchmark for m in lat.measurements} == {"latency"}
    first = lat.measurements[0]
    assert (first.metric, first.unit, first.params, first.value) == ("latency", "us", {"size": 0, "ranks": 2}, 1.05)
    assert first.detail["datatype"] == "MPI_CHAR"
    assert first.detail["source"] == "osu_latency.txt:5"
    bw = load("osu_bw.txt").measurements
    assert {(m.benchmark, m.metric, m.unit) for m in bw} == {("bw", "bandwidth", "MB/s")}
    assert [m.params["size"] for m in bw] == [2 ** i for i in range(23)]
    assert not any("converted_from" in m.detail for m in bw), "OSU MB/s is already decimal"
    bibw = load("osu_bibw.txt").measurements
    assert {(m.benchmark, m.metric) for m in bibw} == {("bibw", "bibandwidth")}
    ml = load("osu_multi_lat.txt").measurements
    assert {m.benchmark for m in ml} == {"multi_lat"} and "ranks" not in ml[0].params


def test_osu_mbw_mr_gives_bandwidth_and_message_rate_with_pairs():
    parsed = load("osu_mbw_mr.txt")
    bw, rate = points(parsed, "mbw_mr", "bandwidth"), points(parsed, "mbw_mr", "message_rate")
    assert len(bw) == len(rate) == 23
    assert bw[0].params == {"size": 1, "pairs": 2, "ranks": 4, "window": 64}
    assert (rate[0].unit, rate[0].value) == ("msg/s", 2105073.77)
    assert parsed.ranks == 4


def test_osu_collectives_with_full_columns_put_avg_min_max_in_place():
    parsed = load("osu_collectives_full.txt")
    assert {m.benchmark for m in parsed.measurements} == {"allreduce", "bcast", "barrier"}
    ar = points(parsed, "allreduce")[0]
    assert (ar.params["size"], ar.value, ar.mean, ar.min, ar.max, ar.iterations) == (4, 2.40, 2.40, 2.23, 2.59, 1000)
    barrier = points(parsed, "barrier")
    assert len(barrier) == 1 and barrier[0].params == {"size": 0}
    assert (barrier[0].value, barrier[0].min, barrier[0].max) == (3.42, 3.31, 3.55)
    a2a = load("osu_alltoall.txt").measurements
    assert {m.benchmark for m in a2a} == {"alltoall"} and a2a[0].min is None


# -- IMB -------------------------------------------------------------------------------


def test_imb_sections_names_and_processes():
    parsed = load("imb_mpi1.txt")
    assert parsed.tool_version == "2021.3"
    assert parsed.command.startswith("./IMB-MPI1 PingPong")
    assert parsed.benchmarks() == ["imb.Allreduce", "imb.Barrier", "imb.Biband", "imb.Exchange", "imb.PingPing",
                                   "imb.PingPong", "imb.Sendrecv", "imb.Uniband"]
    pp = points(parsed, "imb.PingPong")
    assert {m.metric for m in pp} == {"latency", "bandwidth"}
    assert pp[0].params == {"size": 0, "ranks": 2}
    ar = points(parsed, "imb.Allreduce")
    assert sorted({m.params["ranks"] for m in ar}) == [2, 4]
    m = next(m for m in ar if m.params == {"size": 4, "ranks": 2})
    assert m.value == m.mean and m.min < m.value < m.max
    barrier = points(parsed, "imb.Barrier")
    assert [b.params for b in barrier] == [{"size": 0, "ranks": 2}, {"size": 0, "ranks": 4}]
    assert {m.metric for m in points(parsed, "imb.Biband")} == {"bibandwidth", "message_rate"}
    assert not parsed.conversions, "IMB 2017+ Mbytes/sec is 1e6 B/s: nothing to convert"


def test_old_imb_mbytes_are_mebibytes_and_converted():
    parsed = load("imb_v3_pingpong_allreduce.txt")
    assert parsed.tool_version == "3.2.4"
    assert "MiB/s" in parsed.conversions
    bw = points(parsed, "imb.PingPong", "bandwidth")
    raw = (DATA / "imb_v3_pingpong_allreduce.txt").read_text().splitlines()
    last_line = int(bw[-1].detail["source"].rsplit(":", 1)[1])
    mbytes = float(raw[last_line - 1].split()[-1])
    assert bw[-1].value == pytest.approx(mbytes * MIB_PER_S)
    assert bw[-1].detail["converted_from"] == "MiB/s"


# -- HPCC ------------------------------------------------------------------------------


def test_hpcc_summary_in_project_units():
    parsed = load("hpccoutf_2ranks.txt")
    assert parsed.tool_version == "1.5.0" and parsed.ranks == 2
    by = {m.params["test"]: m for m in parsed.measurements}
    summary = parsed.facts["summary"]
    hpl = by["HPL_Tflops"]
    assert (hpl.metric, hpl.unit, hpl.value) == ("flops", "Gflop/s", pytest.approx(summary["HPL_Tflops"] * 1000))
    assert hpl.detail["converted_from"] == "Tflop/s"
    triad = by["StarSTREAM_Triad"]
    assert (triad.metric, triad.unit, triad.value) == ("bandwidth", "MB/s", pytest.approx(summary["StarSTREAM_Triad"] * 1000))
    assert by["PTRANS_GBs"].value == pytest.approx(summary["PTRANS_GBs"] * 1000)
    assert (by["MPIRandomAccess_GUPs"].metric, by["MPIRandomAccess_GUPs"].unit) == ("update_rate", "GUP/s")
    assert (by["MPIFFT_Gflops"].metric, by["MPIFFT_Gflops"].unit) == ("flops", "Gflop/s")
    lat = by["AvgPingPongLatency_usec"]
    assert (lat.metric, lat.unit, lat.params["size"]) == ("latency", "us", 8)
    assert lat.min == summary["MinPingPongLatency_usec"] and lat.max == summary["MaxPingPongLatency_usec"]
    ring = by["RandomlyOrderedRingBandwidth_GBytes"]
    assert (ring.unit, ring.params["size"]) == ("MB/s", 2000000)
    assert ring.value == pytest.approx(summary["RandomlyOrderedRingBandwidth_GBytes"] * 1000)
    # every other summary key is kept in the provenance
    assert summary["HPL_N"] == 500 and summary["sizeof_double"] == 8 and summary["VersionRelease"] == "f"
    assert parsed.facts["hpl"]["N"] == 500 and parsed.facts["hpl"]["residual_passed"] is True
    assert parsed.provenance()["hpcc"]["summary"]["CommWorldProcs"] == 2


def test_hpcc_without_summary_keeps_completed_sections_when_allowed(tmp_path):
    text = (DATA / "hpccoutf_2ranks.txt").read_text()
    cut = text[: text.index("Begin of MPIFFT section.")]
    path = tmp_path / "hpccoutf.txt"
    path.write_text(cut)
    from fabricbench.importers import TruncatedError

    with pytest.raises(TruncatedError, match="no 'Begin of Summary section.'"):
        import_file(str(path))
    parsed = import_file(str(path), allow_truncated=True)
    assert not parsed.complete
    keys = {m.params["test"] for m in parsed.measurements}
    assert {"MPIRandomAccess_GUPs", "PTRANS_GBs", "StarDGEMM_Gflops", "StarSTREAM_Triad"} <= keys
    assert "MPIFFT_Gflops" not in keys and "HPL_Tflops" not in keys


# -- perftest --------------------------------------------------------------------------


def test_perftest_bandwidth_is_mebibytes_converted():
    parsed = load("perftest_ib_write_bw.txt")
    bw = points(parsed, "ib_write_bw", "bandwidth")
    assert len(bw) == 23 and bw[0].params == {"size": 2, "qps": 1, "connection": "RC"}
    assert bw[0].value == pytest.approx(10.03 * MIB_PER_S) and bw[0].max == pytest.approx(10.09 * MIB_PER_S)
    assert bw[0].detail["converted_from"] == "MiB/s" and bw[0].iterations == 5000
    rate = points(parsed, "ib_write_bw", "message_rate")
    assert rate[0].unit == "msg/s" and rate[0].value == pytest.approx(5.258447e6)
    assert parsed.facts["device"] == "mlx5_0"


def test_perftest_gbits_and_latency_and_json():
    g = points(load("perftest_ib_send_bw_gbits.txt"), "ib_send_bw", "bandwidth")[0]
    assert g.value == pytest.approx(96.73 * 125) and g.detail["converted_from"] == "Gb/s"
    lat = load("perftest_ib_write_lat.txt").measurements
    assert {m.benchmark for m in lat} == {"ib_write_lat"}
    m = lat[0]
    assert (m.metric, m.unit, m.value, m.min, m.max, m.median, m.mean, m.stdev, m.p99) == \
        ("latency", "us", 1.0, 0.95, 3.07, 0.99, 1.0, 0.06, 1.07)
    assert m.detail["p99.9_us"] == 2.67
    js = load("perftest_ib_write_bw.json")
    bw = points(js, "ib_write_bw", "bandwidth")
    assert len(bw) == 1 and bw[0].params["size"] == 65536 and bw[0].detail["converted_from"] == "MiB/s"
    assert js.facts["device"] == "mlx5_0"


def test_perftest_json_without_final_newline_and_cut(tmp_path):
    text = (DATA / "perftest_ib_write_bw.json").read_text()
    path = tmp_path / "perftest_out.json"
    path.write_text(text.rstrip("\n"))
    assert len(import_file(str(path)).measurements) == 2
    path.write_text(text[: text.index(" }\n}")])
    from fabricbench.importers import TruncatedError

    with pytest.raises(TruncatedError, match="braces are not closed"):
        import_file(str(path))


# -- mpiGraph --------------------------------------------------------------------------


def test_mpigraph_matrices_become_allpairs_points():
    parsed = load("mpigraph_6nodes.txt")
    assert parsed.ranks == 6 and len(parsed.measurements) == 2 * 6 * 5
    assert {(m.benchmark, m.metric, m.unit) for m in parsed.measurements} == {("allpairs", "bandwidth", "MB/s")}
    send = {(m.params["src"], m.params["dst"]): m for m in parsed.measurements if m.params["direction"] == "send"}
    recv = {(m.params["src"], m.params["dst"]): m for m in parsed.measurements if m.params["direction"] == "recv"}
    assert set(send) == set(recv) == {(i, j) for i in range(6) for j in range(6) if i != j}
    m = send[(2, 1)]
    assert set(m.params) == {"size", "src", "dst", "src_host", "dst_host", "direction", "ranks"}
    assert (m.params["src_host"], m.params["dst_host"], m.params["size"]) == ("node03", "node02", 1048576)
    assert m.value == pytest.approx(5082.261 * MIB_PER_S) and m.detail["converted_from"] == "MiB/s"
    slow = min(parsed.measurements, key=lambda x: x.value)
    assert (slow.params["src"], slow.params["dst"]) == (2, 1)  # Recv row 1 (node02) from column 2 (node03)


# -- NCCL-tests ------------------------------------------------------------------------


def test_nccl_text_algbw_busbw_and_time():
    parsed = load("nccl_all_reduce_perf.txt")
    assert parsed.ranks == 16 and parsed.hosts == ["gpu01", "gpu02"]
    assert {m.benchmark for m in parsed.measurements} == {"nccl.all_reduce"}
    row = [m for m in parsed.measurements if m.params["size"] == 8388608]
    assert len(row) == 6
    bus = next(m for m in row if m.params.get("bw") == "bus" and m.params["placement"] == "out_of_place")
    assert (bus.unit, bus.value, bus.detail["converted_from"]) == ("MB/s", 62230.0, "GB/s")
    t = next(m for m in row if m.metric == "time" and m.params["placement"] == "in_place")
    assert (t.unit, t.value) == ("us", 251.47)
    assert bus.params["redop"] == "sum" and bus.params["root"] == -1 and bus.params["type"] == "float"
    assert parsed.facts["avg_busbw_GBps"] > 0


def test_nccl_json_report():
    parsed = load("nccl_all_gather.json")
    assert {m.benchmark for m in parsed.measurements} == {"nccl.all_gather"}
    assert parsed.ranks == 8 and parsed.command.startswith("./build/all_gather_perf")
    alg = [m for m in parsed.measurements if m.params.get("bw") == "alg"]
    assert alg and all(m.unit == "MB/s" for m in alg)


# -- iperf3 ----------------------------------------------------------------------------


def test_iperf3_tcp_sums_and_interval_distribution():
    parsed = load("iperf3_tcp_loopback.json")
    sent, received = parsed.measurements
    assert (sent.benchmark, sent.metric, sent.unit) == ("iperf3", "bandwidth", "MB/s")
    assert sent.params == {"protocol": "TCP", "size": 131072, "streams": 1, "reverse": False, "direction": "sent"}
    assert received.params["direction"] == "received"
    import json

    doc = json.loads((DATA / "iperf3_tcp_loopback.json").read_text())
    assert sent.value == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 8e6)
    assert sent.detail["converted_from"] == "bit/s"
    assert sent.n == len(doc["intervals"]) and sent.min <= sent.median <= sent.max
    assert parsed.tool_version.startswith("3.")


def test_iperf3_udp_and_reverse():
    udp = load("iperf3_udp_loopback.json").measurements
    assert {m.params["protocol"] for m in udp} == {"UDP"}
    received = next(m for m in udp if m.params["direction"] == "received")
    assert "lost_percent" in received.detail and "jitter_ms" in received.detail
    rev = load("iperf3_tcp_reverse_2streams.json").measurements
    assert all(m.params["reverse"] and m.params["streams"] == 2 for m in rev)
    # in reverse mode the client's intervals are the receiving side
    assert next(m for m in rev if m.params["direction"] == "received").n
