"""fabricbench-mpi, the native engine, run for real under mpirun with 2 to 4 ranks.

Every test launches the installed binary (``FABRICBENCH_NATIVE_DIR`` in a dev tree) through
the project's mpirun launcher and checks what a consumer of its JSON Lines relies on: the
record schema, the sizes and counts asked for, sane values, clean failures. Iteration
counts are fixed and small so the file runs in well under a minute; nothing here asserts a
wall-clock time.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

pytestmark = pytest.mark.mpi

import fabricbench
from fabricbench.errors import UsageError
from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.failure import launcher_line
from fabricbench.native import engine_path

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_PATH = Path(fabricbench.__file__).resolve().parent / "data" / "record.schema.json"
RUN_TIMEOUT = 120  # seconds; a hang fails the test instead of stalling the suite


@pytest.fixture(scope="module")
def engine() -> Path:
    return engine_path()


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


class Run:
    """One finished engine run: exit status, raw streams and the parsed records."""

    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def records(self) -> List[dict]:
        # MPICH's Hydra prints its report of a dead rank on the same stdout: that is not the engine's.
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip() and not launcher_line(line)]

    def of(self, kind: str) -> List[dict]:
        return [r for r in self.records if r["record"] == kind]

    @property
    def points(self) -> List[dict]:
        return self.of("point")


def run_engine(engine: Path, np: int, args: Sequence[str], timeout: int = RUN_TIMEOUT) -> Run:
    launcher = get_launcher("mpirun", Layout(np=np))
    cmd = launcher.command([str(engine), *args])
    proc = subprocess.run(cmd, env=launcher.environment(), capture_output=True, text=True, timeout=timeout)
    return Run(proc)


def check_complete_run(run: Run, validator, np: int, benchmark: str) -> List[dict]:
    """The contract every clean run keeps; returns the point records."""
    assert run.returncode == 0, run.stderr
    assert run.stdout.endswith("\n")
    records = run.records
    for rec in records:
        errors = sorted(validator.iter_errors(rec), key=str)
        assert not errors, f"{rec} does not match the schema: {errors[0].message}"
    first, last = records[0], records[-1]
    assert first["record"] == "run" and last["record"] == "end"
    assert first["benchmark"] == benchmark
    assert first["ranks"] == np and len(first["hosts"]) == np
    assert [r["record"] for r in records[1:-1]].count("run") == 0
    points = run.points
    assert first["points_planned"] == len(points) == last["points"]
    assert last["status"] == "complete"
    for p in points:
        assert p["benchmark"] == benchmark
        assert p["params"]["ranks"] == np
        assert p["min"] <= p["median"] <= p["max"]
        assert p["min"] <= p["mean"] <= p["max"]
        assert p["min"] <= p["p99"] <= p["max"]
        assert p["stdev"] >= 0
    return points


def sizes_of(points: List[dict], metric: Optional[str] = None) -> List[int]:
    return [p["params"]["size"] for p in points if metric is None or p["metric"] == metric]


POW2_4_TO_1K = [4, 8, 16, 32, 64, 128, 256, 512, 1024]


# ---- every benchmark ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "benchmark,np,args,sizes",
    [
        ("latency", 2, ["--sizes", "0:1K", "--iterations", "20"], [0] + [2**i for i in range(11)]),
        ("bw", 2, ["--sizes", "1K:64K", "--iterations", "5", "--window", "8"], [2**i for i in range(10, 17)]),
        ("bibw", 2, ["--sizes", "1K:64K", "--iterations", "5", "--window", "8"], [2**i for i in range(10, 17)]),
        ("multi_lat", 4, ["--sizes", "0:256", "--iterations", "10"], [0] + [2**i for i in range(9)]),
    ],
)
def test_pt2pt_records(engine, validator, benchmark, np, args, sizes):
    points = check_complete_run(run_engine(engine, np, [benchmark, *args]), validator, np, benchmark)
    assert sizes_of(points) == sizes
    for p in points:
        assert p["iterations"] == int(args[args.index("--iterations") + 1])
        assert p["unit"] == ("us" if p["metric"] == "latency" else "MB/s")
        if benchmark == "bw":
            assert p["metric"] == "bandwidth" and p["params"]["window"] == 8
        if benchmark == "bibw":
            assert p["metric"] == "bibandwidth"
        assert p["value"] > 0 or p["params"]["size"] == 0 and p["metric"] != "latency"
    if benchmark == "multi_lat":
        for p in points:
            assert p["params"]["pairs"] == 2
            assert [pp["ranks"] for pp in p["detail"]["per_pair"]] == [[0, 2], [1, 3]]


def test_mbw_mr_reports_bandwidth_and_message_rate(engine, validator):
    points = check_complete_run(
        run_engine(engine, 4, ["mbw_mr", "--sizes", "1:1K", "--iterations", "5", "--window", "16"]),
        validator, 4, "mbw_mr",
    )
    expected = [2**i for i in range(11)]
    assert sizes_of(points, "bandwidth") == expected
    assert sizes_of(points, "message_rate") == expected
    for bw, mr in zip(points[0::2], points[1::2]):
        assert (bw["metric"], bw["unit"], mr["metric"], mr["unit"]) == ("bandwidth", "MB/s", "message_rate", "msg/s")
        assert bw["params"]["pairs"] == 2 and bw["params"]["window"] == 16
        # Both are views of the same messages: rate * size = bandwidth.
        assert bw["value"] == pytest.approx(mr["value"] * bw["params"]["size"] / 1e6, rel=1e-9)
        assert len(bw["detail"]["per_pair"]) == 2


@pytest.mark.parametrize(
    "benchmark,sizes",
    [
        ("barrier", [0]),
        ("bcast", POW2_4_TO_1K),
        ("reduce", POW2_4_TO_1K),
        ("allreduce", POW2_4_TO_1K),
        ("allgather", POW2_4_TO_1K),
        ("alltoall", POW2_4_TO_1K),
        ("reduce_scatter", POW2_4_TO_1K),
    ],
)
def test_collective_records(engine, validator, benchmark, sizes):
    args = [benchmark, "--iterations", "5"] + ([] if benchmark == "barrier" else ["--sizes", "4:1K"])
    points = check_complete_run(run_engine(engine, 4, args), validator, 4, benchmark)
    assert sizes_of(points) == sizes
    for p in points:
        # The distribution is over the 5 calls (each call's time: the max over ranks); the
        # value stays OSU's mean over ranks of each rank's average, with the rank extremes.
        assert (p["metric"], p["unit"], p["iterations"], p["n"]) == ("latency", "us", 5, 5)
        detail = p["detail"]
        assert detail["stats_over"] == "per-call time, max over ranks"
        per_rank = detail["per_rank"]
        assert len(per_rank) == 4 and all(v > 0 for v in per_rank)
        assert p["value"] == pytest.approx(sum(per_rank) / 4)
        assert detail["rank_average_min"] == pytest.approx(per_rank[detail["min_rank"]]) == pytest.approx(min(per_rank))
        assert detail["rank_average_max"] == pytest.approx(per_rank[detail["max_rank"]]) == pytest.approx(max(per_rank))
        assert 0 < p["min"] <= p["median"] <= p["p99"] <= p["max"]
        assert p["min"] <= p["mean"] <= p["max"]
        # A rank's average call time cannot exceed the mean of the calls' slowest-rank times.
        assert max(per_rank) <= p["mean"] * (1 + 1e-9)
        assert detail["fastest_call_us"] <= p["min"] and detail["slowest_call_us"] == pytest.approx(p["max"])
        assert detail["stop"] == "iterations" and detail["precision"]["target"] is None
        if benchmark != "barrier":
            assert p["params"]["size_meaning"]
        if benchmark in ("bcast", "reduce"):
            assert p["params"]["root"] == 0


def test_pingpong_pairs_measures_every_ordered_pair(engine, validator):
    points = check_complete_run(run_engine(engine, 4, ["pingpong_pairs", "--iterations", "2"]), validator, 4,
                                "pingpong_pairs")
    lat, bw = points
    assert (lat["metric"], lat["unit"], lat["params"]["size"]) == ("latency", "us", 8)
    assert (bw["metric"], bw["unit"], bw["params"]["size"]) == ("bandwidth", "MB/s", 2_000_000)
    for p in points:
        d = p["detail"]
        assert d["pairs_measured"] == d["pairs_total"] == p["n"] == 12 and d["sampled"] is False
        pairs = {(c, s) for c, s, _ in d["per_pair"]}
        assert pairs == {(c, s) for c in range(4) for s in range(4) if c != s}
        assert p["value"] == pytest.approx(p["mean"])
        assert p["min"] > 0
        # How many loops and measurements were taken is bookkeeping (detail), not what was measured (params).
        assert (d["loop_length"], d["measurements"]) == (2, 5 if p["metric"] == "latency" else 2)
        assert not {"loop_length", "measurements"} & set(p["params"]) and p["params"]["pairs"] == 12
        assert p["iterations"] == d["loop_length"] * d["measurements"]
    assert lat["detail"]["worst_pair"]["value"] == pytest.approx(lat["max"])
    assert bw["detail"]["worst_pair"]["value"] == pytest.approx(bw["min"])


def test_pingpong_pairs_samples_when_asked(engine, validator):
    points = check_complete_run(run_engine(engine, 4, ["pingpong_pairs", "--iterations", "2", "--pairs", "5"]),
                                validator, 4, "pingpong_pairs")
    for p in points:
        d = p["detail"]
        assert (d["pairs_measured"], d["pairs_total"], d["sampled"]) == (5, 12, True)
        pairs = [(c, s) for c, s, _ in d["per_pair"]]
        assert len(set(pairs)) == 5 and all(c != s for c, s in pairs)


def test_ring_natural_and_random(engine, validator):
    points = check_complete_run(run_engine(engine, 4, ["ring", "--iterations", "2", "--random-rings", "3"]),
                                validator, 4, "ring")
    got = [(p["params"]["ordering"], p["metric"], p["params"]["size"]) for p in points]
    assert got == [("natural", "latency", 8), ("random", "latency", 8),
                   ("natural", "bandwidth", 2_000_000), ("random", "bandwidth", 2_000_000)]
    for p in points:
        assert p["value"] > 0
        assert not {"loop_length", "measurements"} & set(p["params"])
        assert p["detail"]["loop_length"] == 2
        assert p["detail"]["measurements"] == (8 if p["metric"] == "latency" else 3)
        if p["params"]["ordering"] == "random":
            assert p["n"] == 3 == len(p["detail"]["permutations"]) == len(p["detail"]["per_ring"])
            for perm in p["detail"]["permutations"]:
                assert sorted(perm) == [0, 1, 2, 3]
            # HPCC: the geometric mean over rings, which never exceeds the arithmetic mean.
            assert p["min"] <= p["value"] <= p["mean"] * (1 + 1e-9)
        else:
            assert p["value"] == pytest.approx(p["min"] if p["metric"] == "latency" else p["max"])


def random_rings(engine, seed: int) -> Dict[str, dict]:
    run = run_engine(engine, 4, ["ring", "--iterations", "1", "--random-rings", "4", "--seed", str(seed)])
    assert run.returncode == 0, run.stderr
    return {p["metric"]: p for p in run.points if p["params"]["ordering"] == "random"}


def test_random_rings_follow_the_seed(engine):
    first, again, other = random_rings(engine, 7), random_rings(engine, 7), random_rings(engine, 8)
    for metric in ("latency", "bandwidth"):
        a, b, c = first[metric]["detail"], again[metric]["detail"], other[metric]["detail"]
        assert first[metric]["params"]["seed"] == 7 and other[metric]["params"]["seed"] == 8
        assert a["permutations"] == b["permutations"]
        assert a["permutations_digest"] == b["permutations_digest"]
        assert a["permutations"] != c["permutations"]
        assert a["permutations_digest"] != c["permutations_digest"]
    # Latency and bandwidth use the same rings, as HPCC does.
    assert first["latency"]["detail"]["permutations"] == first["bandwidth"]["detail"]["permutations"]


def measured_order(engine, *args: str) -> List[int]:
    run = run_engine(engine, 2, ["latency", "--sizes", "1:1K", "--iterations", "5", *args])
    assert run.returncode == 0, run.stderr
    [start] = run.of("run")
    assert start["options"]["order"] == ("random" if "random" in args else "ascending")
    assert start["options"]["sizes"] == sizes_of(run.points)  # the record says the order it measured in
    return sizes_of(run.points)


def test_random_order_measures_every_size_once_in_the_seeds_order(engine):
    ascending = measured_order(engine)
    first = measured_order(engine, "--order", "random", "--seed", "7")
    again = measured_order(engine, "--order", "random", "--seed", "7")
    other = measured_order(engine, "--order", "random", "--seed", "8")
    assert ascending == [1 << i for i in range(11)]
    assert sorted(first) == sorted(other) == ascending
    assert first == again and first != ascending and first != other
    refused = run_engine(engine, 2, ["latency", "--seed", "7"])  # a seed without a shuffle is still refused
    assert refused.returncode == 2 and "does not take --seed" in refused.stderr


def test_run_shuffles_only_the_steps_that_measure_several_sizes():
    from fabricbench import suite

    steps = {s.benchmark: s for s in suite.plan(["quick", "barrier"], 2, order="random")}
    assert steps["latency"].args[-2:] == ("--order", "random")
    assert "--order" not in steps["barrier"].args
    assert all("--order" not in s.args for s in suite.plan(["quick"], 2))


def table_of(engine, args, header_start):
    """The engine's --format table output on 2 ranks: (header lines starting so, split data rows)."""
    run = run_engine(engine, 2, [*args, "--format", "table"])
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    headers = [line for line in lines if line.startswith(header_start)]
    return headers, [line.split() for line in lines if not line.startswith("#")]


def test_ring_table_has_an_ordering_column(engine):
    headers, rows = table_of(engine, ["ring", "--iterations", "1", "--random-rings", "2"], "# Ordering")
    assert len(headers) == 2 and "Latency(us)" in headers[0] and "(MB/s)" in headers[1]
    rows = [r[:2] for r in rows]
    assert rows == [["natural", "8"], ["random", "8"], ["natural", "2000000"], ["random", "2000000"]]


def test_info_one_record_per_rank(engine, validator):
    run = run_engine(engine, 3, ["info"])
    check_complete_run(run, validator, 3, "info")
    infos = run.of("rank_info")
    assert [r["rank"] for r in infos] == [0, 1, 2]
    assert len({r["pid"] for r in infos}) == 3
    for r in infos:
        assert r["host"] and r["mpi_library"]
        assert r["timer_resolution_us"] > 0 and r["timer_resolution_source"] == "MPI_Wtick"


# ---- options and values -------------------------------------------------------------------------

def test_size_suffixes_and_adaptive_iterations(engine, validator):
    run = run_engine(engine, 2, ["latency", "--sizes", "1K:4KiB", "--time-budget", "0.01", "--min-iterations", "7"])
    points = check_complete_run(run, validator, 2, "latency")
    assert sizes_of(points) == [1024, 2048, 4096]
    assert run.records[0]["options"]["sizes"] == [1024, 2048, 4096]
    for p in points:
        assert p["iterations"] >= 7
        assert p["n"] <= p["iterations"]


@pytest.mark.serial  # 4 ranks on 2 cores beside another worker's MPI job missed its 120 s launch timeout at load 20
def test_the_time_budget_guard_stops_a_point_the_warm_up_misjudged(engine, validator):
    # The hook makes the plan take the warm-up pace as a million times faster than it was, as
    # a loaded machine can: the plan asks for ~10^6 budgets' worth, the guard stops at two. (At
    # 1000 a warm-up that was itself 1000x slow, 4 ranks descheduled on 2 cores under MPICH's
    # polling, planned about one budget and was never stopped.)
    run = run_engine(engine, 4, ["latency", "--sizes", "0:4", "--time-budget", "0.01", "--precision", "0",
                                 "--test-underestimate", "1e6"])
    points = check_complete_run(run, validator, 4, "latency")
    assert run.records[0]["options"]["test_underestimate"] == 1e6
    for p in points:
        d = p["detail"]
        assert d["stopped_early"] is True and d["time_limit_s"] == pytest.approx(0.02) and d["stop"] == "guard"
        assert 10 <= p["iterations"] < d["iterations_planned"]  # --min-iterations (10) is still the floor
        assert p["n"] == -(-p["iterations"] // d["batch"])  # every sample taken is reported, no more
        assert p["min"] <= p["value"] and p["value"] > 0


def test_the_guard_also_stops_collectives_and_never_a_fixed_count(engine, validator):
    points = check_complete_run(run_engine(engine, 4, ["allreduce", "--sizes", "4:4", "--time-budget", "0.01",
                                                       "--precision", "0", "--test-underestimate", "1000"]),
                                validator, 4, "allreduce")
    assert points[0]["detail"]["stopped_early"] is True
    assert points[0]["iterations"] < points[0]["detail"]["iterations_planned"]
    fixed = check_complete_run(run_engine(engine, 2, ["bw", "--sizes", "1K:1K", "--iterations", "30"]), validator, 2, "bw")
    assert fixed[0]["iterations"] == 30 and "stopped_early" not in fixed[0]["detail"]


def test_bandwidth_grows_with_message_size(engine, validator):
    # One message per window: 1 KiB is then bound by per-message cost, 4 MiB by copying.
    # Other processes can only slow a sample down, so the best samples are compared.
    points = check_complete_run(
        run_engine(engine, 2, ["bw", "--sizes", "1K:4M", "--iterations", "50", "--window", "1"]),
        validator, 2, "bw")
    by_size = {p["params"]["size"]: p for p in points}
    small, large = by_size[1024], by_size[4 * 1024 * 1024]
    assert large["max"] > small["max"] > 0


def test_latency_grows_with_message_size(engine, validator):
    points = check_complete_run(run_engine(engine, 2, ["latency", "--sizes", "0:1M", "--iterations", "50"]),
                                validator, 2, "latency")
    by_size = {p["params"]["size"]: p for p in points}
    assert by_size[1 << 20]["median"] > by_size[0]["median"] > 0


def test_cold_cache_with_validation(engine, validator):
    points = check_complete_run(
        run_engine(engine, 2, ["latency", "--sizes", "4K:16K", "--iterations", "20", "--cache", "cold",
                               "--cache-pool", "1M", "--validate"]),
        validator, 2, "latency")
    assert all(p["params"]["cache"] == "cold" and p["params"]["validate"] is True for p in points)


def test_table_format(engine):
    headers, rows = table_of(engine, ["latency", "--sizes", "0:64", "--iterations", "10"], "# Size")
    assert len(headers) == 1 and "Latency(us)" in headers[0] and "Iterations" in headers[0]
    assert [int(r[0]) for r in rows] == [0, 1, 2, 4, 8, 16, 32, 64]
    assert all(float(r[1]) > 0 and int(r[-1]) == 10 for r in rows)
    assert not any(r and r[0].startswith("{") for r in rows)


def test_table_format_two_metrics_per_row(engine):
    run = run_engine(engine, 2, ["mbw_mr", "--sizes", "1K:2K", "--iterations", "5", "--format", "table"])
    assert run.returncode == 0, run.stderr
    header = next(l for l in run.stdout.splitlines() if l.startswith("# Size"))
    assert "(MB/s)" in header and "(msg/s)" in header
    rows = [l.split() for l in run.stdout.splitlines() if not l.startswith("#")]
    assert [int(r[0]) for r in rows] == [1024, 2048]


# ---- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "benchmark,np,inject,extra",
    [
        ("latency", 2, 1, ["--sizes", "1K:2K"]),
        ("bw", 2, 0, ["--sizes", "1K:2K", "--window", "4"]),
        ("allreduce", 4, 2, ["--sizes", "1K:2K"]),
        ("alltoall", 4, 3, ["--sizes", "1K:2K"]),
        ("ring", 4, 2, ["--random-rings", "2"]),
        ("exchange", 3, 1, ["--sizes", "1K:2K"]),
    ],
)
def test_validation_catches_injected_corruption(engine, validator, benchmark, np, inject, extra):
    base = [benchmark, "--iterations", "4", *extra]
    clean = run_engine(engine, np, base + ["--validate"])
    check_complete_run(clean, validator, np, benchmark)

    bad = run_engine(engine, np, base + ["--inject-corruption", str(inject)])
    assert bad.returncode == 3, bad.stderr
    failures = [l for l in bad.stderr.splitlines() if "validation failed" in l]
    assert len(failures) == 1, bad.stderr
    size = 8 if benchmark == "ring" else 1024
    assert f"benchmark {benchmark}," in failures[0]
    assert f"size {size} bytes" in failures[0]
    assert "rank" in failures[0]
    records = bad.records  # whatever was printed is whole JSON
    assert records[0]["record"] == "run" and not bad.of("end")


# ---- bad input and failures -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "args,message",
    [
        (["latency", "--bogus", "1"], "unknown option '--bogus'"),
        (["latency", "--sizes", "4K:1K"], "MIN is larger than MAX"),
        (["latency", "--window", "zero"], "--window"),
        (["nosuch"], "unknown benchmark 'nosuch'"),
        (["ring", "--sizes", "1K:2K"], "does not take --sizes"),
        (["latency", "--window", "8"], "latency does not take --window (it applies to bw, bibw, mbw_mr, loggp, put_bw, get_bw, put_bibw, allpairs)"),
        (["allreduce", "--root", "1"], "allreduce does not take --root (it applies to bcast, reduce, gather, scatter, gatherv, scatterv)"),
        (["bw", "--pairs", "1"], "bw does not take --pairs (it applies to mbw_mr, multi_lat, pingpong_pairs)"),
        (["bw", "--mode", "pairs"], "bw does not take --mode (it applies to allpairs)"),
        (["latency", "--iterations", "5", "--test-underestimate", "10"], "--test-underestimate applies to the adaptive"),
        (["latency", "--iterations", "5", "--precision", "0.01"], "--precision is the stopping rule of the adaptive"),
        (["latency", "--precision", "2"], "--precision: expected a fraction from 0 to 1"),
        (["allpairs", "--precision", "0.01"], "allpairs does not take --precision"),
        ([], "no benchmark given"),
    ],
)
def test_bad_input_exits_2_with_one_usage_message(engine, args, message):
    run = run_engine(engine, 4, args, timeout=60)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("usage: fabricbench-mpi") == 1
    assert run.stderr.count(message) == 1


@pytest.mark.parametrize(
    "np,args,message",
    [
        (3, ["mbw_mr", "--iterations", "2"], "mbw_mr needs an even number of ranks (got 3)"),
        (3, ["multi_lat", "--iterations", "2"], "multi_lat needs an even number of ranks (got 3)"),
        (1, ["latency", "--iterations", "2"], "latency needs at least 2 ranks (got 1)"),
        (4, ["mbw_mr", "--pairs", "3"], "at most np/2 = 2 pairs"),
    ],
)
def test_rank_count_requirements(engine, np, args, message):
    run = run_engine(engine, np, args, timeout=60)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count(message) == 1


def test_killed_rank_leaves_only_complete_lines(engine, validator):
    run = run_engine(engine, 4, ["latency", "--sizes", "0:1M", "--iterations", "50", "--test-die-after", "3"])
    assert run.returncode != 0
    assert run.stdout.endswith("\n")
    records = run.records  # raises if any line is cut short
    assert records[0]["record"] == "run"
    assert len(run.points) >= 2  # the dying rank got past point 3, so rank 0 wrote points 1 and 2
    assert not run.of("end")
    for rec in records:
        validator.validate(rec)


# ---- the benchmark table: `fabricbench-mpi list` and fabricbench.suite -------------------------------

EXAMPLE_VALUES = {
    "--sizes": "4:8", "--window": "2", "--warmup": "1", "--iterations": "2", "--time-budget": "0.01",
    "--min-iterations": "2", "--cache": "cold", "--cache-pool": "64K", "--validate": None, "--seed": "3",
    "--pairs": "1", "--random-rings": "1", "--root": "1", "--format": "jsonl", "--mode": "pairs",
    "--size": "4K", "--repetitions": "1", "--retest": "1", "--order": "random", "--precision": "0.05",
    "--max-window-bytes": "1K", "--win-sync": "fence", "--win-alloc": "create",
}


def engine_table(engine: Path) -> List[dict]:
    """`fabricbench-mpi list` run as a plain program: no mpirun, and nothing of MPI's in the environment."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    proc = subprocess.run([str(engine), "list", "--format", "jsonl"], capture_output=True, text=True, env=env,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_list_exports_the_benchmark_table_without_mpi(engine):
    table = engine_table(engine)
    names = [b["name"] for b in table]
    assert len(names) == len(set(names)) >= 16 and "allpairs" in names and "multi_lat" in names
    for b in table:
        assert set(b) >= {"name", "family", "metrics", "sizes", "fixed_sizes", "size_floor", "min_ranks",
                          "even_ranks", "options", "summary"}
        assert b["summary"] and b["min_ranks"] >= 1
        assert b["sizes"] is None or b["sizes"].count(":") == 1
        assert "--validate" in b["options"] and "--inject-corruption" not in b["options"]
        assert ("--sizes" in b["options"]) == (b["sizes"] is not None)
    by_name = {b["name"]: b for b in table}
    assert by_name["multi_lat"]["sizes"] == "0:4M" and by_name["multi_lat"]["even_ranks"] is True
    assert by_name["ring"]["fixed_sizes"] == [8, 2000000]
    assert by_name["mbw_mr"]["metrics"] == ["bandwidth", "message_rate"]
    # The same table, read by a person.
    human = subprocess.run([str(engine), "list", "--format", "table"], capture_output=True, text=True, timeout=30)
    rows = [l for l in human.stdout.splitlines()[1:] if not l.startswith(" ")]  # not a summary's continuation
    assert human.returncode == 0 and [l.split()[0] for l in rows] == names
    assert all(len(l) <= 80 for l in human.stdout.splitlines())
    bad = subprocess.run([str(engine), "list", "--window", "4"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "list takes no option but --format" in bad.stderr


def test_the_python_table_is_the_engines(engine):
    from fabricbench import native, suite

    table = engine_table(engine)
    installed = [json.loads(line) for line in native.benchmark_table_path().read_text().splitlines()]
    assert installed == table  # the build installed what this engine says
    assert list(suite.BENCHMARKS) == [b["name"] for b in table]
    for b in table:
        spec = suite.BENCHMARKS[b["name"]]
        assert (spec.family, spec.sizes, spec.min_ranks, spec.even_ranks) == (
            b["family"], b["sizes"], b["min_ranks"], b["even_ranks"])
        assert list(spec.options) == b["options"] and list(spec.metrics) == b["metrics"]
    # allpairs is known, but it is the health check's, not a suite's.
    assert suite.BENCHMARKS["allpairs"].family == "health"
    for name in ("quick", "standard"):
        steps = suite.SUITES[name]
        assert "allpairs" not in {s.benchmark for s in steps}
        for step in steps:
            suite.check_options(suite.BENCHMARKS[step.benchmark], step.args)
    assert {s.benchmark for s in suite.SUITES["standard"]} == {
        b["name"] for b in table if b["family"] in ("pt2pt", "collective", "hpcc")}
    with pytest.raises(UsageError, match="allpairs does not take --iterations"):
        suite.plan(["allpairs"], 2, extra=["--iterations", "3"])


def test_every_listed_option_is_accepted(engine):
    """Each benchmark run with every option its table entry lists: none is refused. Where the
    list holds both --iterations and --time-budget, which exclude each other, that exclusion
    (checked after the refusals) is the only complaint; otherwise the run completes."""
    for b in engine_table(engine):
        args = [b["name"]]
        for option in b["options"]:
            assert option in EXAMPLE_VALUES, f"{option} of {b['name']} needs an example value in this test"
            args += [option] if EXAMPLE_VALUES[option] is None else [option, EXAMPLE_VALUES[option]]
        run = run_engine(engine, 2, args, timeout=60)
        assert "does not take" not in run.stderr and "unknown option" not in run.stderr, (args, run.stderr)
        if {"--iterations", "--time-budget"} <= set(b["options"]):
            assert run.returncode == 2 and "exclude each other" in run.stderr, (args, run.stderr)
        else:
            assert run.returncode == 0, (args, run.stderr)


def test_python_knows_the_table_is_missing(tmp_path, monkeypatch):
    from fabricbench import native, suite

    monkeypatch.setenv("FABRICBENCH_NATIVE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no fabricbench-mpi to fall back on either
    assert list(suite.SUITES) == ["quick", "standard", "hpcc-net"]
    with pytest.raises(native.NativeMissing, match="benchmarks.jsonl is missing"):
        suite.plan(["latency"], 2)
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "benchmarks.jsonl").write_text('{"name": "latency"}\n')
    with pytest.raises(native.NativeMissing, match=r"benchmarks.jsonl:1: not a line of `fabricbench-mpi list`"):
        suite.plan(["latency"], 2)


# ---- the sketch of each point's samples -----------------------------------------------------------

@pytest.mark.parametrize(
    "np,args",
    [
        (2, ["latency", "--sizes", "0:8", "--iterations", "60"]),
        (2, ["mbw_mr", "--sizes", "1K:1K", "--iterations", "20", "--window", "4"]),
        (3, ["allreduce", "--sizes", "4:8", "--iterations", "10"]),
        (2, ["ring", "--iterations", "2", "--random-rings", "1"]),  # random rings: n = 1
        (2, ["allpairs", "--size", "1K", "--repetitions", "2", "--retest", "1"]),
    ],
)
def test_each_point_carries_a_sketch_of_its_samples(engine, validator, np, args):
    run = run_engine(engine, np, args)
    if args[0] == "allpairs":  # plans no point count (retests depend on what the sweep finds)
        assert run.returncode == 0, run.stderr
        for rec in run.records:
            validator.validate(rec)
        points = run.points
    else:
        points = check_complete_run(run, validator, np, args[0])
    sketched = 0
    for p in points:
        if p["benchmark"] == "allpairs" and p["params"].get("scope") != "matrix":
            assert "sketch" not in p["detail"]  # one per ordered pair would be too many
            continue
        q = p["detail"]["sketch"]["q"]
        assert len(q) == 101
        assert (q[0], q[50], q[99], q[100]) == (p["min"], p["median"], p["p99"], p["max"])
        assert all(a <= b for a, b in zip(q, q[1:]))
        if p["n"] == 1:
            assert len(set(q)) == 1
        sketched += 1
    assert sketched >= 2


def test_the_engine_help_is_read_at_80_columns(engine):
    """--help lists every benchmark and option, and no line of it passes column 80."""
    shown = subprocess.run([str(engine), "--help"], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert [l for l in lines if len(l) > 80] == []
    listed = {l.split()[0] for l in lines if l.startswith("  ") and not l.startswith("   ")}
    assert {b["name"] for b in engine_table(engine)} <= listed
    assert {"--sizes", "--precision", "--max-window-bytes", "--mode"} <= listed
