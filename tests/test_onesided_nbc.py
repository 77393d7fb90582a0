"""The engine's one-sided, non-blocking collective and gather/scatter benchmarks, run for real
(2-3 ranks, tiny sizes, a few iterations) with --validate, and the corruption hook caught.

Run under Open MPI and again under MPICH (BOTH_MPIS in conftest.py)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import List, Sequence

import pytest

import fabricbench
from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.failure import launcher_line
from fabricbench.native import engine_path

pytestmark = pytest.mark.mpi

jsonschema = pytest.importorskip("jsonschema")


def run_engine(np: int, args: Sequence[str], timeout: int = 240) -> subprocess.CompletedProcess:
    launcher = get_launcher("mpirun", Layout(np=np))
    cmd = launcher.command([str(engine_path()), *args])
    return subprocess.run(cmd, env=launcher.environment(), capture_output=True, text=True, timeout=timeout)


def records(proc: subprocess.CompletedProcess) -> List[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip() and not launcher_line(line)]


@pytest.fixture(scope="module")
def validator():
    schema = json.loads((Path(fabricbench.__file__).parent / "data" / "record.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def open_mpi() -> bool:
    from fabricbench.launch.mpi import selected_family

    return selected_family() in (None, "openmpi")


def checked_points(proc, validator, benchmark: str, np: int) -> List[dict]:
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    for rec in recs:
        errors = list(validator.iter_errors(rec))
        assert not errors, f"{rec} does not match the schema: {errors[0].message}"
    assert recs[0]["record"] == "run" and recs[-1]["record"] == "end" and recs[-1]["status"] == "complete"
    points = [r for r in recs if r["record"] == "point"]
    assert points and len(points) == recs[0]["points_planned"]
    for p in points:
        assert p["benchmark"] == benchmark and p["params"]["ranks"] == np and p["params"]["validate"] is True
        assert p["n"] >= 1 and (p["value"] > 0 or p["metric"] == "overlap" and p["value"] == 0)
    return points


# (benchmark, sync, window creation): every benchmark with a passive and an active
# synchronisation, put_latency with all six, every window creation several times. Open MPI 4.1's MPI_Compare_and_swap on an MPI_Win_allocate
# window crashes the target rank (a bug of its own: a 20-line MPI program does the same), so
# cas_latency uses the other creations there.
ONE_SIDED = [
    ("put_latency", "flush", "allocate"), ("put_latency", "lock", "create"), ("put_latency", "pscw", "dynamic"),
    ("put_latency", "fence", "allocate"), ("put_latency", "flush_local", "create"),
    ("put_latency", "lock_all", "dynamic"),
    ("get_latency", "lock", "dynamic"), ("get_latency", "fence", "create"),
    ("acc_latency", "flush", "create"), ("acc_latency", "pscw", "allocate"),
    ("fop_latency", "lock", "allocate"), ("fop_latency", "fence", "dynamic"),
    ("cas_latency", "flush", "create"), ("cas_latency", "pscw", "dynamic"),
    ("put_bw", "flush", "dynamic"), ("put_bw", "fence", "create"),
    ("get_bw", "lock_all", "allocate"), ("get_bw", "pscw", "create"),
    ("put_bibw", "pscw", "allocate"), ("put_bibw", "fence", "dynamic"),
]
SIZELESS = {"fop_latency", "cas_latency"}


@pytest.mark.parametrize("benchmark,sync,alloc", ONE_SIDED)
def test_one_sided_benchmarks_validate_every_synchronisation(validator, benchmark, sync, alloc):
    args = [benchmark, "--win-sync", sync, "--win-alloc", alloc, "--iterations", "4", "--validate"]
    if benchmark not in SIZELESS:
        args += ["--sizes", "1:64"]
    if benchmark.endswith(("bw", "bibw")):
        args += ["--window", "4"]
    points = checked_points(run_engine(2, args), validator, benchmark, 2)
    sizes = [p["params"]["size"] for p in points]
    assert sizes == ([8] if benchmark in SIZELESS else [1, 2, 4, 8, 16, 32, 64])
    metric = {"put_bw": "bandwidth", "get_bw": "bandwidth", "put_bibw": "bibandwidth"}.get(benchmark, "latency")
    for p in points:
        assert (p["metric"], p["params"]["win"], p["params"]["sync"]) == (metric, alloc, sync)
        assert p["unit"] == ("us" if metric == "latency" else "MB/s")
        if metric != "latency":
            assert p["params"]["window"] == 4


def test_one_sided_defaults_are_osus():
    """Without --win-sync and --win-alloc: MPI_Win_allocate with flush; put_bibw: pscw."""
    put = records(run_engine(2, ["put_latency", "--sizes", "8:8", "--iterations", "3"]))
    assert [(p["params"]["win"], p["params"]["sync"]) for p in put if p["record"] == "point"] == [("allocate", "flush")]
    bibw = records(run_engine(2, ["put_bibw", "--sizes", "8:8", "--iterations", "3", "--window", "2"]))
    assert [p["params"]["sync"] for p in bibw if p["record"] == "point"] == ["pscw"]


def test_put_bibw_refuses_a_passive_synchronisation():
    proc = run_engine(2, ["put_bibw", "--win-sync", "lock", "--sizes", "8:8", "--iterations", "3"])
    assert proc.returncode == 2
    assert "put_bibw takes --win-sync pscw or fence" in proc.stderr and "Traceback" not in proc.stderr


def test_a_one_sided_option_is_refused_by_other_benchmarks():
    proc = run_engine(2, ["latency", "--win-sync", "fence", "--sizes", "8:8"])
    assert proc.returncode == 2 and "latency does not take --win-sync" in proc.stderr


@pytest.mark.parametrize("args,rank", [
    (["put_latency", "--sizes", "8:8"], 0),                              # passive: read back
    (["get_bw", "--sizes", "8:8", "--window", "2", "--win-sync", "fence"], 1),  # active: the target's data
    (["cas_latency", "--win-alloc", "create", "--win-sync", "pscw"], 0),
    (["iallreduce", "--sizes", "8:8", "--time-budget", "0.01"], 1),
    (["gatherv", "--sizes", "8:8", "--root", "1"], 0),
    (["alltoallv", "--sizes", "8:8"], 2),
])
def test_validation_catches_injected_corruption(args, rank):
    extra = [] if "--time-budget" in args else ["--iterations", "5"]
    proc = run_engine(3, [*args, *extra, "--inject-corruption", str(rank)])
    assert proc.returncode == 3, proc.stderr
    assert "validation failed" in proc.stderr and f"benchmark {args[0]}" in proc.stderr


@pytest.mark.parametrize("benchmark", ["iallreduce", "ibcast", "ialltoall", "iallgather", "ibarrier"])
def test_non_blocking_collectives_record_overall_pure_communication_and_overlap(validator, benchmark):
    args = [benchmark, "--time-budget", "0.02", "--validate"]
    if benchmark != "ibarrier":
        args += ["--sizes", "4:16"]
    points = checked_points(run_engine(2, args), validator, benchmark, 2)
    by_size = {}
    for p in points:
        by_size.setdefault(p["params"]["size"], {})[p["metric"]] = p
    assert list(by_size) == ([0] if benchmark == "ibarrier" else [4, 8, 16])
    for size, metrics in by_size.items():
        assert set(metrics) == {"latency", "pure_comm", "overlap"}
        overall, pure, overlap = metrics["latency"], metrics["pure_comm"], metrics["overlap"]
        assert (overall["unit"], pure["unit"], overlap["unit"]) == ("us", "us", "%")
        d = overall["detail"]
        # OSU's overlap, from the averages over ranks the record carries
        osu = max(0.0, 100 - 100 * (overall["value"] - (d["compute_us"] - d["test_us"])) / pure["value"])
        assert overlap["value"] == pytest.approx(osu, rel=1e-6, abs=1e-6)
        assert d["pure_comm_us"] == pytest.approx(pure["value"]) and d["min_comm_us"] <= d["max_comm_us"]
        # the computation was calibrated to the pure communication time and really ran
        assert d["compute_us"] > 0 and d["compute_steps_rank0"] >= 0
        assert d["compute_vs_pure_comm"] == pytest.approx(d["compute_us"] / pure["value"], rel=1e-6)
        assert len(overall["detail"]["per_rank"]) == 2


@pytest.mark.parametrize("benchmark", ["gather", "scatter", "gatherv", "scatterv", "allgatherv", "alltoallv"])
def test_gather_scatter_and_v_variants_validate_on_three_ranks(validator, benchmark):
    args = [benchmark, "--sizes", "1:32", "--iterations", "4", "--validate"]
    if benchmark in ("gather", "scatter", "gatherv", "scatterv"):
        args += ["--root", "2"]
    points = checked_points(run_engine(3, args), validator, benchmark, 3)
    assert [p["params"]["size"] for p in points] == [1, 2, 4, 8, 16, 32]
    for p in points:
        assert p["metric"] == "latency" and len(p["detail"]["per_rank"]) == 3
        if "--root" in args:
            assert p["params"]["root"] == 2
