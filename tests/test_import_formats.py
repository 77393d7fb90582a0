"""Each importer on its sample files: detection, canonical benchmark names, metrics, units,
conversions, and values equal to the file's (checked against the file's own text)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricbench.importers import ImportFormatError, Source, TruncatedError, detect_format, import_file
from fabricbench.importers.base import MIB_PER_S, MIBIT_PER_S

DATA = Path(__file__).parent / "data" / "import"

EXPECTED_FORMAT = {
    "osu_latency.txt": "osu", "osu_bw.txt": "osu", "osu_bibw.txt": "osu", "osu_mbw_mr.txt": "osu",
    "osu_multi_lat.txt": "osu", "osu_collectives_full.txt": "osu", "osu_alltoall.txt": "osu",
    "osu_mbw_mr_7.2_double_title.txt": "osu", "osu_latency_7.4_all_datatypes.txt": "osu",
    "osu_mbw_mr_7.4_window_varied.txt": "osu", "osu_init_7.4.txt": "osu", "osu_latency_killed_after_16k.txt": "osu",
    "osu_put_latency_7.4.txt": "osu", "osu_get_bw_5.9.txt": "osu", "osu_iallreduce_7.3_full.txt": "osu",
    "osu_ibarrier_7.3.txt": "osu", "osu_ialltoall_5.6.3.txt": "osu", "osu_latency_7.5.txt": "osu",
    "imb_mpi1.txt": "imb", "imb_v3_pingpong_allreduce.txt": "imb", "imb_2019u6_pingpong_allreduce.txt": "imb",
    "imb_2018_alltoall_killed.txt": "imb",
    "hpccoutf_2ranks.txt": "hpcc",
    "perftest_ib_write_bw.txt": "perftest", "perftest_ib_send_bw_gbits.txt": "perftest",
    "perftest_ib_write_lat.txt": "perftest", "perftest_ib_write_bw.json": "perftest",
    "mpigraph_6nodes.txt": "mpigraph",
    "nccl_all_reduce_perf.txt": "nccl", "nccl_all_gather.json": "nccl", "nccl_all_reduce_perf_old_killed.txt": "nccl",
    "iperf3_tcp_loopback.json": "iperf3", "iperf3_udp_loopback.json": "iperf3",
    "iperf3_tcp_reverse_2streams.json": "iperf3", "iperf3_server_tcp_loopback.json": "iperf3",
    "iperf3_client_text.txt": "iperf3",
    "netpipe_tcp_loopback.out": "netpipe", "netpipe_tcp_loopback_screen.txt": "netpipe",
    "netpipe_openmpi_2ranks.out": "netpipe", "netpipe_openmpi_2ranks_screen.txt": "netpipe",
    "mpip_known_calls_4ranks.mpiP": "mpip",
}
REFUSED = {"iperf3_client_text.txt"}  # detected, then refused with what to do instead
INTERRUPTED = {"osu_latency_killed_after_16k.txt", "imb_2018_alltoall_killed.txt", "nccl_all_reduce_perf_old_killed.txt"}


def load(name, **kw):
    return import_file(str(DATA / name), **kw)


def points(parsed, benchmark=None, metric=None):
    return [m for m in parsed.measurements
            if (benchmark is None or m.benchmark == benchmark) and (metric is None or m.metric == metric)]


def line_of(m):
    return int(m.detail["source"].rsplit(":", 1)[1])


def columns(name, m):
    """The whitespace-separated fields of the file line a measurement came from."""
    return (DATA / name).read_text().splitlines()[line_of(m) - 1].split()


def test_every_sample_is_listed_and_described():
    files = {p.name for p in DATA.iterdir() if p.is_file() and p.name != "README.md"}
    assert files == set(EXPECTED_FORMAT)
    readme = (DATA / "README.md").read_text()
    for name in files:
        assert name in readme, f"{name} is not described in tests/data/import/README.md"


@pytest.mark.parametrize("name", sorted(EXPECTED_FORMAT))
def test_format_is_detected_and_status_is_right(name):
    assert detect_format(Source.open(str(DATA / name))) == EXPECTED_FORMAT[name]
    if name in REFUSED:
        with pytest.raises(ImportFormatError):
            load(name)
        return
    parsed = load(name)
    assert parsed.format == EXPECTED_FORMAT[name]
    assert parsed.complete == (name not in INTERRUPTED), parsed.incomplete_reason
    for m in parsed.measurements:
        assert m.unit in ("us", "MB/s", "msg/s", "Gflop/s", "GUP/s", "s", "%")
        if parsed.format not in ("iperf3", "nccl", "mpip") or name.endswith(".txt") and parsed.format == "nccl":
            assert m.detail["source"].startswith(name)


# -- OSU -------------------------------------------------------------------------------


def test_osu_point_to_point_use_native_names_and_units():
    lat = load("osu_latency.txt")
    assert lat.tool_version == "7.3"
    assert {m.benchmark for m in lat.measurements} == {"latency"}
    first = lat.measurements[0]
    assert (first.metric, first.unit, first.params, first.value) == ("latency", "us", {"size": 0, "ranks": 2}, 1.05)
    assert first.detail["datatype"] == "MPI_CHAR" and first.detail["source"] == "osu_latency.txt:5"
    bw = load("osu_bw.txt").measurements
    assert {(m.benchmark, m.metric, m.unit) for m in bw} == {("bw", "bandwidth", "MB/s")}
    assert [m.params["size"] for m in bw] == [2 ** i for i in range(23)]
    assert not any("converted_from" in m.detail for m in bw), "OSU MB/s is already decimal"
    for m in bw:
        assert [str(m.params["size"]), f"{m.value:.2f}"] == columns("osu_bw.txt", m)
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


def test_osu_7_2_mbw_mr_with_its_title_printed_twice():
    parsed = load("osu_mbw_mr_7.2_double_title.txt")
    assert parsed.tool_version == "7.2" and len(parsed.facts["tables"]) == 1
    bw = points(parsed, "mbw_mr", "bandwidth")
    rate = points(parsed, "mbw_mr", "message_rate")
    assert len(bw) == len(rate) == 23 and bw[-1].params == {"size": 4194304, "pairs": 2, "ranks": 4, "window": 64}
    for b_, r in zip(bw, rate):
        size, mbps, msgs = columns("osu_mbw_mr_7.2_double_title.txt", b_)
        assert (b_.params["size"], f"{b_.value:.2f}", f"{r.value:.2f}") == (int(size), mbps, msgs)


def test_osu_7_4_several_datatypes_in_one_file():
    parsed = load("osu_latency_7.4_all_datatypes.txt")
    by_type = {}
    for m in parsed.measurements:
        by_type.setdefault(m.detail["datatype"], []).append(m)
    assert sorted(by_type) == ["MPI_CHAR", "MPI_FLOAT", "MPI_INT"]
    assert len(by_type["MPI_CHAR"]) == 24 and len(by_type["MPI_INT"]) == len(by_type["MPI_FLOAT"]) == 21
    # the default datatype (MPI_CHAR for latency) is no parameter, so it matches a native run; the others are
    assert "datatype" not in by_type["MPI_CHAR"][0].params
    assert by_type["MPI_INT"][0].params == {"size": 4, "ranks": 2, "datatype": "MPI_INT"}
    keys = {(m.params.get("datatype"), m.params["size"]) for m in parsed.measurements}
    assert len(keys) == len(parsed.measurements), "every point is a distinct measurement"
    m = by_type["MPI_FLOAT"][-1]
    assert f"{m.value:.2f}" == columns("osu_latency_7.4_all_datatypes.txt", m)[1]
    assert parsed.complete


def test_osu_7_5_datatype_before_the_header():
    parsed = load("osu_latency_7.5.txt")
    assert len(parsed.measurements) == 24 and parsed.measurements[0].params == {"size": 0, "ranks": 2}


def test_osu_mbw_mr_window_varied_matrix():
    parsed = load("osu_mbw_mr_7.4_window_varied.txt")
    windows = [1, 2, 4, 8, 16, 32, 64, 128]
    bw, rate = points(parsed, "mbw_mr", "bandwidth"), points(parsed, "mbw_mr", "message_rate")
    assert len(bw) == len(rate) == 23 * len(windows)
    assert {m.params["window"] for m in bw} == set(windows)
    m = next(m for m in bw if m.params["size"] == 65536 and m.params["window"] == 16)
    row = columns("osu_mbw_mr_7.4_window_varied.txt", m)
    assert row[0] == "65536" and f"{m.value:.2f}" == row[1 + windows.index(16)]
    r = next(x for x in rate if x.params["size"] == 65536 and x.params["window"] == 16)
    assert f"{r.value:.2f}" == columns("osu_mbw_mr_7.4_window_varied.txt", r)[1 + windows.index(16)]
    assert m.params["ranks"] == 4 and parsed.complete


def test_osu_window_varied_run_that_stopped_early(tmp_path):
    lines = (DATA / "osu_mbw_mr_7.4_window_varied.txt").read_text().splitlines(keepends=True)
    path = tmp_path / "osu_mbw_mr.txt"
    path.write_text("".join(lines[:20]))  # the bandwidth matrix up to 4 KiB, then nothing
    parsed = import_file(str(path))
    assert not parsed.complete and "stops at 4096 bytes" in parsed.incomplete_reason
    assert {m.params["size"] for m in parsed.measurements} == {1 << i for i in range(13)}


def test_osu_init_single_line():
    parsed = load("osu_init_7.4.txt")
    (m,) = parsed.measurements
    assert (m.benchmark, m.metric, m.unit, m.params) == ("init", "time", "s", {"ranks": 4})
    assert (m.value, m.min, m.max) == (0.27, 0.26, 0.276) and m.detail["converted_from"] == "ms"


def test_osu_one_sided_names_and_window_settings():
    put = load("osu_put_latency_7.4.txt")
    assert put.benchmarks() == ["put_latency"]
    assert put.measurements[0].params == {"win": "allocate", "sync": "flush", "ranks": 2, "size": 1}
    assert put.facts["tables"][0]["notes"] == ["Window creation: MPI_Win_allocate", "Synchronization: MPI_Win_flush"]
    get = load("osu_get_bw_5.9.txt")
    assert get.benchmarks() == ["get_bw"] and get.tool_version == "5.9"
    assert {(m.metric, m.params["win"], m.params["sync"]) for m in get.measurements} == {("bandwidth", "create", "lock")}


def test_osu_non_blocking_collectives_keep_their_extra_columns():
    ia = load("osu_iallreduce_7.3_full.txt")
    assert ia.benchmarks() == ["iallreduce"]
    m = ia.measurements[0]
    row = columns("osu_iallreduce_7.3_full.txt", m)
    assert m.params == {"size": 4} and f"{m.value:.2f}" == row[1]  # MPI_FLOAT is a reduction's default
    assert [f"{m.detail[k]:.2f}" for k in ("compute_us", "init_us", "test_us", "wait_us", "pure_comm_us",
                                           "min_comm_us", "max_comm_us", "overlap_pct")] == row[2:]
    assert load("osu_ibarrier_7.3.txt").measurements[0].benchmark == "ibarrier"
    a2a = load("osu_ialltoall_5.6.3.txt")
    assert a2a.benchmarks() == ["ialltoall"] and len(a2a.measurements) == 3 * 21
    assert {m.metric: m.unit for m in a2a.measurements} == {"latency": "us", "pure_comm": "us", "overlap": "%"}


def test_osu_collectives_with_full_columns_put_avg_min_max_in_place():
    parsed = load("osu_collectives_full.txt")
    assert {m.benchmark for m in parsed.measurements} == {"allreduce", "bcast", "barrier"}
    ar = points(parsed, "allreduce")[0]
    assert (ar.params, ar.value, ar.mean, ar.min, ar.max, ar.iterations) == ({"size": 4}, 2.40, 2.40, 2.23, 2.59, 1000)
    barrier = points(parsed, "barrier")
    assert len(barrier) == 1 and barrier[0].params == {"size": 0}
    assert (barrier[0].value, barrier[0].min, barrier[0].max) == (3.42, 3.31, 3.55)
    a2a = load("osu_alltoall.txt").measurements
    assert {m.benchmark for m in a2a} == {"alltoall"} and a2a[0].min is None and a2a[0].params == {"size": 1}


def test_osu_run_that_stopped_early_is_interrupted_with_a_note(tmp_path):
    parsed = load("osu_latency_killed_after_16k.txt")
    assert not parsed.complete and len(parsed.measurements) == 16
    assert "stops at 16384 bytes" in parsed.incomplete_reason and "4194304" in parsed.incomplete_reason
    told = load("osu_latency_killed_after_16k.txt", hints={"max_message_size": 16384})
    assert told.complete, "a run made with -m 16384 is complete"


# -- IMB -------------------------------------------------------------------------------


def test_imb_sections_names_and_processes():
    parsed = load("imb_mpi1.txt")
    assert parsed.tool_version == "2021.3"
    assert parsed.command.startswith("./IMB-MPI1 PingPong")
    assert parsed.benchmarks() == ["allreduce", "barrier", "biband", "exchange", "latency", "pingping",
                                   "sendrecv", "uniband"]
    pp = points(parsed, "latency")
    assert {m.metric for m in pp} == {"latency", "bandwidth"}
    assert pp[0].params == {"size": 0, "ranks": 2}
    assert [m.metric for m in pp if m.params["size"] == 0] == ["latency"], "0 bytes: no bandwidth figure"
    ar = points(parsed, "allreduce")
    assert sorted({m.params["ranks"] for m in ar}) == [2, 4]
    m = next(m for m in ar if m.params == {"size": 4, "ranks": 2})
    assert m.value == m.mean and m.min < m.value < m.max
    barrier = points(parsed, "barrier")
    assert [b_.params for b_ in barrier] == [{"size": 0, "ranks": 2}, {"size": 0, "ranks": 4}]
    assert {m.metric for m in points(parsed, "biband")} == {"bibandwidth", "message_rate"}
    assert not parsed.conversions, "IMB 2017+ Mbytes/sec is 1e6 B/s: nothing to convert"


def test_imb_2019_and_2018_banners():
    p19 = load("imb_2019u6_pingpong_allreduce.txt")
    assert p19.tool_version == "2019 Update 6" and p19.complete and not p19.conversions
    lat = points(p19, "latency", "latency")
    assert len(lat) == 24 and f"{lat[5].value:.2f}" == columns("imb_2019u6_pingpong_allreduce.txt", lat[5])[2]
    p18 = load("imb_2018_alltoall_killed.txt")
    assert p18.tool_version == "2018" and not p18.complete and "MPI_Finalize" in p18.incomplete_reason
    assert p18.benchmarks() == ["alltoall"] and points(p18, "alltoall")[-1].params == {"size": 65536, "ranks": 4}


def test_old_imb_mbytes_are_mebibytes_and_converted():
    parsed = load("imb_v3_pingpong_allreduce.txt")
    assert parsed.tool_version == "3.2.4"
    assert "MiB/s" in parsed.conversions
    bw = points(parsed, "latency", "bandwidth")
    assert bw[-1].value == pytest.approx(float(columns("imb_v3_pingpong_allreduce.txt", bw[-1])[-1]) * MIB_PER_S)
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
    lat = by["AvgPingPongLatency_usec"]
    assert (lat.metric, lat.unit, lat.params["size"]) == ("latency", "us", 8)
    assert lat.min == summary["MinPingPongLatency_usec"] and lat.max == summary["MaxPingPongLatency_usec"]
    ring = by["RandomlyOrderedRingBandwidth_GBytes"]
    assert (ring.unit, ring.params["size"]) == ("MB/s", 2000000)
    assert summary["HPL_N"] == 500 and summary["sizeof_double"] == 8 and summary["VersionRelease"] == "f"
    assert parsed.facts["hpl"]["N"] == 500 and parsed.facts["hpl"]["residual_passed"] is True
    # the real file's own text, line by line
    for key in ("HPL_Tflops", "StarDGEMM_Gflops", "RandomlyOrderedRingLatency_usec"):
        text = (DATA / "hpccoutf_2ranks.txt").read_text().splitlines()[line_of(by[key]) - 1]
        assert text.startswith(key + "=")


def test_hpcc_number_outside_the_database_range_names_the_line(tmp_path):
    lines = (DATA / "hpccoutf_2ranks.txt").read_text().splitlines(keepends=True)
    no = next(i for i, t in enumerate(lines) if "latency   measurements were done with" in t)
    lines[no] = lines[no].replace(" 8 bytes", " 12345678901234567890 bytes")
    path = tmp_path / "hpccoutf.txt"
    path.write_text("".join(lines))
    with pytest.raises(ImportFormatError, match=rf":{no + 1}: .*outside the range the database can store"):
        import_file(str(path))


# -- runs that stopped before the tool's end marker --------------------------------------


def _hpcc_sections(parsed):
    keys = {m.params["test"] for m in parsed.measurements}
    return {"MPIRandomAccess_GUPs", "PTRANS_GBs", "StarDGEMM_Gflops", "StarSTREAM_Triad"} <= keys and \
        "MPIFFT_Gflops" not in keys and "HPL_Tflops" not in keys


@pytest.mark.parametrize("name, cut_before, note, kept", [
    ("hpccoutf_2ranks.txt", "Begin of MPIFFT section.", "Summary", _hpcc_sections),
    ("perftest_ib_write_bw.txt", " 65536 ", "not closed",
     lambda p: points(p, "ib_write_bw", "bandwidth")[-1].params["size"] == 32768),
    ("mpigraph_6nodes.txt", "Recv\t", "no Recv matrix", lambda p: {m.params["direction"] for m in p.measurements} == {"send"}),
])
def test_a_run_cut_before_its_end_marker_is_interrupted_and_keeps_what_it_measured(tmp_path, name, cut_before, note, kept):
    text = (DATA / name).read_text()
    path = tmp_path / name
    path.write_text(text[: text.index(cut_before)].rsplit("\n", 1)[0] + "\n")
    parsed = import_file(str(path))
    assert not parsed.complete and note in parsed.incomplete_reason
    assert kept(parsed)


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


def test_perftest_json_without_final_newline_and_cut(tmp_path):
    text = (DATA / "perftest_ib_write_bw.json").read_text()
    path = tmp_path / "perftest_out.json"
    path.write_text(text.rstrip("\n"))
    assert len(import_file(str(path)).measurements) == 2
    path.write_text(text[: text.index(" }\n}")])
    with pytest.raises(TruncatedError, match="braces are not closed"):
        import_file(str(path))


# -- mpiGraph --------------------------------------------------------------------------


def test_mpigraph_matrices_become_allpairs_points():
    parsed = load("mpigraph_6nodes.txt")
    assert parsed.ranks == 6 and len(parsed.measurements) == 2 * 6 * 5
    assert {(m.benchmark, m.metric, m.unit) for m in parsed.measurements} == {("allpairs", "bandwidth", "MB/s")}
    send = {(m.params["src"], m.params["dst"]): m for m in parsed.measurements if m.params["direction"] == "send"}
    m = send[(2, 1)]
    assert (m.params["src_host"], m.params["dst_host"], m.params["size"]) == ("node03", "node02", 1048576)
    assert m.value == pytest.approx(5082.261 * MIB_PER_S) and m.detail["converted_from"] == "MiB/s"
    slow = min(parsed.measurements, key=lambda x: x.value)
    assert (slow.params["src"], slow.params["dst"]) == (2, 1)


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
    # 8 bytes in 34 us prints as 0.00 GB/s: no figure, not a zero bandwidth; the time is kept
    small = [m for m in parsed.measurements if m.params["size"] == 8]
    assert {m.metric for m in small} == {"time"} and "0.00 GB/s" in parsed.facts["not_stored"]
    assert all(m.value > 0 for m in parsed.measurements if m.metric == "bandwidth")


def test_nccl_old_layout_stopped_before_max_bytes():
    parsed = load("nccl_all_reduce_perf_old_killed.txt")
    assert parsed.ranks == 8 and parsed.benchmarks() == ["nccl.all_reduce"]
    assert not parsed.complete and "8388608 of 134217728" in parsed.incomplete_reason
    m = next(m for m in parsed.measurements if m.metric == "time" and m.params["placement"] == "out_of_place")
    assert f"{m.value:.2f}" == columns("nccl_all_reduce_perf_old_killed.txt", m)[4]


def test_nccl_json_report():
    parsed = load("nccl_all_gather.json")
    assert {m.benchmark for m in parsed.measurements} == {"nccl.all_gather"}
    assert parsed.ranks == 8 and parsed.command.startswith("./build/all_gather_perf")


# -- iperf3 ----------------------------------------------------------------------------


def test_iperf3_tcp_sums_and_interval_distribution():
    parsed = load("iperf3_tcp_loopback.json")
    sent, received = parsed.measurements
    assert (sent.benchmark, sent.metric, sent.unit) == ("iperf3", "bandwidth", "MB/s")
    assert sent.params == {"protocol": "TCP", "size": 131072, "streams": 1, "reverse": False, "direction": "sent"}
    doc = json.loads((DATA / "iperf3_tcp_loopback.json").read_text())
    assert sent.value == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 8e6)
    assert received.value == pytest.approx(doc["end"]["sum_received"]["bits_per_second"] / 8e6)
    assert sent.detail["converted_from"] == "bit/s"
    assert sent.n == len(doc["intervals"]) and sent.min <= sent.median <= sent.max
    assert parsed.tool_version.startswith("3.")


def test_iperf3_server_side_report_stores_no_zero_figure():
    parsed = load("iperf3_server_tcp_loopback.json")
    doc = json.loads((DATA / "iperf3_server_tcp_loopback.json").read_text())
    assert doc["end"]["sum_sent"]["bytes"] == 0, "the real server-side report counts 0 sent bytes"
    (m,) = parsed.measurements
    assert m.params["direction"] == "received" and m.value > 0
    assert m.value == pytest.approx(doc["end"]["sum_received"]["bits_per_second"] / 8e6)
    assert parsed.facts["not_stored"] == ["end.sum_sent: no bytes counted on this side"]


def test_iperf3_text_output_says_to_use_json():
    with pytest.raises(ImportFormatError, match="iperf3 text output is not supported: run iperf3 with -J"):
        load("iperf3_client_text.txt")


def test_iperf3_udp_and_reverse():
    udp = load("iperf3_udp_loopback.json").measurements
    assert {m.params["protocol"] for m in udp} == {"UDP"}
    received = next(m for m in udp if m.params["direction"] == "received")
    assert "lost_percent" in received.detail and "jitter_ms" in received.detail
    rev = load("iperf3_tcp_reverse_2streams.json").measurements
    assert all(m.params["reverse"] and m.params["streams"] == 2 for m in rev)
    assert next(m for m in rev if m.params["direction"] == "received").n


# -- NetPIPE ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["netpipe_tcp_loopback.out", "netpipe_openmpi_2ranks.out"])
def test_netpipe_np_out_values_equal_the_file(name):
    parsed = load(name)
    lat, bw = points(parsed, "latency", "latency"), points(parsed, "latency", "bandwidth")
    assert len(lat) == len(bw) == 124
    for t, b_ in zip(lat, bw):
        size, mbps, seconds = columns(name, t)
        assert t.params == b_.params == {"size": int(size), "ranks": 2}
        assert (t.unit, b_.unit) == ("us", "MB/s")
        assert t.value == pytest.approx(float(seconds) * 1e6)
        assert b_.value == pytest.approx(float(mbps) * MIBIT_PER_S) and b_.detail["converted_from"] == "Mibit/s"
    # NetPIPE's Mbps is bits / (seconds * 2^20): the two columns agree
    last = bw[-1]
    assert last.value == pytest.approx(last.params["size"] / (lat[-1].value * 1e-6) / 1e6, rel=1e-3)
    assert parsed.conversions["Mibit/s"]


@pytest.mark.parametrize("name, module", [("netpipe_tcp_loopback_screen.txt", "TCP"),
                                          ("netpipe_openmpi_2ranks_screen.txt", "MPI")])
def test_netpipe_screen_output(name, module):
    parsed = load(name)
    assert parsed.facts["module"] == module and parsed.facts["layout"] == "screen"
    lat = points(parsed, "latency", "latency")
    assert len(lat) == 124
    fields = columns(name, lat[7])
    assert lat[7].params["size"] == int(fields[1]) and f"{lat[7].value:.2f}" == fields[9]
    assert lat[7].detail["repeats"] == int(fields[3])
    if module == "MPI":
        assert parsed.hosts == ["vm"]
    else:
        assert parsed.facts["send_buffer"] == 16384


def test_netpipe_screen_and_np_out_of_one_run_agree():
    screen = points(load("netpipe_tcp_loopback_screen.txt"), "latency", "latency")
    out = points(load("netpipe_tcp_loopback.out"), "latency", "latency")
    assert [m.params for m in screen] == [m.params for m in out]
    assert all(abs(a.value - b_.value) <= 0.006 for a, b_ in zip(screen, out))  # two decimals vs 10 ns
