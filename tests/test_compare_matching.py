"""Matching by meaning: other tools' names, incidental parameters, rank counts, grouped mismatches."""
from __future__ import annotations

from pathlib import Path

import pytest

from fabricbench.analysis.compare import compare
from fabricbench.analysis.matching import UNKNOWN, match, point_key
from fabricbench.report.words.matching import mismatch_paragraph, reason
from fabricbench.importers import import_file
from fabricbench.store import Measurement, RunData
from fabricbench.store.records import Run

DATA = Path(__file__).resolve().parent / "data" / "import"


def _run(rid, ranks=None, **prov):
    return Run(id=rid, uuid=str(rid), created="2024-01-01T00:00:00+00:00", label=f"r{rid}", tags={}, kind="benchmark",
               command=None, tool_version="0", status="complete", ranks=ranks, provenance=dict(prov, ranks=ranks) if ranks else prov)


def native(bench, metric, unit, sizes, ranks=2, value=1.0, **params):
    """Points as the engine records them (its bookkeeping params included)."""
    base = {"ranks": ranks, "cache": "warm", "validate": False, **params}
    if bench in ("latency", "bw", "bibw"):
        base["peers"] = [0, 1]
    return [Measurement(bench, dict(base, size=s), metric, unit, value=value, n=100, median=value, mean=value,
                        stdev=0.01 * value, min=0.9 * value, max=1.2 * value) for s in sizes]


def test_osu_import_compares_with_a_native_run_point_by_point():
    parsed = import_file(str(DATA / "osu_latency.txt"))
    imported = RunData(_run(1), parsed.measurements, [])
    sizes = [m.params["size"] for m in parsed.measurements]
    run = RunData(_run(2, ranks=2, nodes=1), native("latency", "latency", "us", sizes), [])
    m = match(imported, run)
    assert len(m.pairs) == len(sizes) and not m.mismatches  # peers, cache, validate never block a match
    bw = RunData(_run(3), import_file(str(DATA / "osu_bw.txt")).measurements, [])
    bw_sizes = [x.params["size"] for x in bw.measurements]
    assert len(match(bw, RunData(_run(4, ranks=2), native("bw", "bandwidth", "MB/s", bw_sizes, window=64), [])).pairs) == len(bw_sizes)
    # a window that is not OSU's default is a different measurement
    other = match(bw, RunData(_run(5, ranks=2), native("bw", "bandwidth", "MB/s", bw_sizes, window=16), []))
    assert not other.pairs and reason(other.mismatches[0]) == "window 64 in A, 16 in B"


def test_imb_pingpong_latency_is_the_engine_latency_but_its_bandwidth_is_not_bw():
    imb = RunData(_run(1, ranks=2), import_file(str(DATA / "imb_mpi1.txt")).measurements, [])
    run = RunData(_run(2, ranks=2), native("latency", "latency", "us", [0, 1, 2, 4]) +
                  native("bw", "bandwidth", "MB/s", [1, 2, 4], window=64), [])
    result = compare(imb, run)
    lat = [s for s in result.series if s.definition == "latency"]
    # the importer already gives IMB's PingPong the engine's name, so both sides say latency
    assert lat and [p.size for p in lat[0].points] == [0, 1, 2, 4] and lat[0].benchmark_a == "latency"
    assert lat[0].benchmark_b == "latency"
    assert not [s for s in result.series if s.definition == "bw"]


def test_point_to_point_compares_across_total_rank_counts():
    two = RunData(_run(1, ranks=2, nodes=1), native("latency", "latency", "us", [0, 8, 64], ranks=2), [])
    four = RunData(_run(2, ranks=4, nodes=1), native("latency", "latency", "us", [0, 8, 64], ranks=4) +
                   native("pingpong_pairs", "latency", "us", [8], ranks=4, pairs=12), [])
    result = compare(two, four)
    assert [p.size for p in result.series[0].points] == [0, 8, 64]
    assert mismatch_paragraph(result.mismatches) == "Not compared: pingpong_pairs latency only in B (1 size)."  # said once
    # the total rank count is no confounder for a point-to-point comparison
    assert "ranks" not in [d.key for d in result.comparability.differences]


def test_a_pair_inside_one_host_is_not_a_pair_across_hosts():
    same = RunData(_run(1, ranks=2, nodes=1), native("latency", "latency", "us", [8]), [])
    across = RunData(_run(2, ranks=2, nodes=2, ppn=1), native("latency", "latency", "us", [8]), [])
    m = match(same, across)
    assert not m.pairs and reason(m.mismatches[0]) == "path same host in A, across hosts in B"
    placed = RunData(_run(3, ranks=4, rank_hosts=["a", "a", "b", "b"]), native("latency", "latency", "us", [8], ranks=4), [])
    assert point_key(placed.measurements[0], placed.run).soft == (("path", "same host"),)


def test_collectives_need_equal_and_known_rank_counts():
    osu = import_file(str(DATA / "osu_collectives_full.txt")).measurements  # OSU does not print the rank count
    allreduce = [m for m in osu if m.benchmark == "allreduce"]
    sizes = [m.params["size"] for m in allreduce]
    run2 = RunData(_run(2, ranks=2), native("allreduce", "latency", "us", sizes, ranks=2), [])
    unknown = match(RunData(_run(1), allreduce, []), run2)
    assert not unknown.pairs
    assert reason(unknown.mismatches[0]) == "rank count not recorded in A (import it with --ranks N)"
    assert point_key(allreduce[0], _run(1)).strict[1] == ("ranks", UNKNOWN)
    # the run's rank count (import --ranks) completes what the file does not say
    told = match(RunData(_run(1, ranks=2), allreduce, []), run2)
    assert len(told.pairs) == len(sizes) and not told.mismatches
    run4 = RunData(_run(3, ranks=4), native("allreduce", "latency", "us", sizes, ranks=4), [])
    differ = match(run2, run4)
    assert not differ.pairs and [reason(m) for m in differ.mismatches] == ["ranks 2 in A, 4 in B"]


def test_cold_cache_is_another_measurement_but_an_unrecorded_one_is_warm():
    warm = RunData(_run(1, ranks=2), native("latency", "latency", "us", [8]), [])
    cold = RunData(_run(2, ranks=2), native("latency", "latency", "us", [8], cache="cold"), [])
    plain = RunData(_run(3, ranks=2), [Measurement("latency", {"size": 8}, "latency", "us", value=1.0)], [])
    assert reason(match(warm, cold).mismatches[0]) == "cache warm in A, cold in B"
    assert len(match(warm, plain).pairs) == 1


def test_mismatches_are_one_short_grouped_paragraph():
    a = RunData(_run(1, ranks=2), native("latency", "latency", "us", range(0, 22)) +
                native("bw", "bandwidth", "MB/s", [1 << k for k in range(23)], window=64), [])
    b = RunData(_run(2, ranks=4), native("latency", "latency", "us", range(0, 10)) +
                native("allreduce", "latency", "us", [4, 8], ranks=4), [])
    text = mismatch_paragraph(compare(a, b).mismatches)
    assert text == ("Not compared: latency: sizes 10 B to 21 B only in A; bw bandwidth only in A (23 sizes); "
                    "allreduce latency only in B (2 sizes).")


@pytest.mark.parametrize("benchmark", ["latency", "imb.PingPong"])
def test_benchmark_filter_uses_definitions(benchmark):
    imb = RunData(_run(1, ranks=2), import_file(str(DATA / "imb_mpi1.txt")).measurements, [])
    run = RunData(_run(2, ranks=2), native("latency", "latency", "us", [0, 1]), [])
    result = compare(imb, run, benchmark=benchmark)
    assert [s.definition for s in result.series] == ["latency"]


def test_a_window_cut_to_fit_a_slow_link_still_meets_the_window_asked_for():
    """bw at 1 MiB with 4 messages per window (the engine cut 64 to fit the point's time on a
    500mbit link) matches 64 at 1gbit: 4 MiB in flight no longer limits the rate; a window the
    user chose, or a cut window under 1 MiB in flight, stays a different measurement."""
    def bw(size, window, capped=None):
        return Measurement("bw", {"size": size, "window": window}, "bandwidth", "MB/s", value=100.0,
                           detail={"window_capped_from": capped} if capped else None)

    assert point_key(bw(1 << 20, 4, capped=64)) == point_key(bw(1 << 20, 64))
    assert point_key(bw(1 << 20, 4)) != point_key(bw(1 << 20, 64))  # chosen, not cut
    assert point_key(bw(64 << 10, 8, capped=64)) != point_key(bw(64 << 10, 64))  # 512 KiB in flight
