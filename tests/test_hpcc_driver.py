"""``fabricbench hpcc``: problem sizing, the input file, the CPU peak, and real HPCC runs."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabricbench.analysis.hpcc import HEADLINE_KEYS
from fabricbench.cli import main
from fabricbench.errors import UsageError
from fabricbench.workflows.hpcc import HpccError, run_hpcc
from fabricbench.planning.hpcc_input import plan, process_grid, problem_size, render_hpccinf
from fabricbench.analysis.peaks import detect_peak, flops_per_cycle
from fabricbench.store import open_db

DATA = Path(__file__).parent / "data" / "import"
_hpcc_installed = pytest.mark.skipif(not shutil.which("hpcc"), reason="needs Debian's hpcc (apt-get install hpcc)")


def needs_hpcc(test):
    """Debian's hpcc, which is built on Open MPI."""
    return pytest.mark.openmpi(_hpcc_installed(test))


# -- sizing ----------------------------------------------------------------------------


@pytest.mark.parametrize("np_, grid", [(1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (6, (2, 3)), (7, (1, 7)),
                                       (12, (3, 4)), (32, (4, 8)), (1024, (32, 32))])
def test_near_square_grid(np_, grid):
    assert process_grid(np_) == grid


def test_problem_size_fills_the_memory_fraction_in_whole_blocks():
    gib = 1024 ** 3
    n = problem_size(128 * gib * 32, 0.25, 192)  # 32 nodes of 128 GiB, as in the seed study
    assert n % 192 == 0
    assert n * n * 8 <= 0.25 * 128 * gib * 32 < (n + 192) ** 2 * 8
    assert problem_size(1000, 0.25, 64) == 64  # never below one block
    with pytest.raises(UsageError):
        problem_size(gib, 1.5, 192)


def test_plan_from_memory_nodes_and_overrides():
    gib = 1024 ** 3
    p = plan(8, nodes=2, memory_bytes=2 * 24 * gib, memory_fraction=0.25)
    assert (p.p, p.q, p.nb) == (2, 4, 192) and p.n == problem_size(48 * gib, 0.25, 192)
    small = plan(2, n=500)
    assert (small.n, small.nb, small.p, small.q, small.memory_bytes) == (500, 64, 1, 2, None)
    assert plan(4, n=5000, nb=128, grid="1x4").to_dict()["q"] == 4
    with pytest.raises(UsageError, match="has 6 processes but --np is 4"):
        plan(4, n=1000, grid="2x3")
    with pytest.raises(UsageError, match="PxQ"):
        plan(4, n=1000, grid="four")


def test_hpccinf_keeps_hpl_line_positions():
    text = render_hpccinf(plan(6, n=2000, nb=96))
    lines = text.splitlines()
    assert lines[5].split()[0] == "2000" and lines[5].split()[1] == "Ns"
    assert lines[7].split()[0] == "96" and lines[7].split()[1] == "NBs"
    assert lines[10].split()[:2] == ["2", "Ps"] and lines[11].split()[:2] == ["3", "Qs"]
    assert lines[31].startswith("##### This line (no. 32)")
    assert len(lines) == 36


# -- peak ------------------------------------------------------------------------------


def write_cpuinfo(path: Path, flags: str, model: str = "Intel(R) Xeon(R) CPU E5-2698 v3 @ 2.30GHz", mhz: str = "1200.000",
                  cores: int = 4) -> Path:
    blocks = []
    for i in range(cores):
        blocks.append(f"processor\t: {i}\nmodel name\t: {model}\ncpu MHz\t\t: {mhz}\nphysical id\t: 0\n"
                      f"core id\t\t: {i}\ncpu cores\t: {cores}\nflags\t\t: {flags}\n")
    path.write_text("\n".join(blocks) + "\n")
    return path


@pytest.mark.parametrize("flags, isa, fpc", [
    ("fpu sse sse2 avx avx2 fma avx512f", "avx512", 32),
    ("fpu sse sse2 avx avx2 fma", "avx2+fma", 16),
    ("fpu sse sse2 avx", "avx", 8),
    ("fpu sse sse2", "sse2", 4),
])
def test_flops_per_cycle_by_instruction_set(flags, isa, fpc):
    assert flops_per_cycle(set(flags.split())) == (isa, fpc)


def test_peak_from_cpuinfo_and_cpufreq(tmp_path):
    info = write_cpuinfo(tmp_path / "cpuinfo", "sse2 avx avx2 fma")
    no_sys = tmp_path / "nosys"
    peak = detect_peak(ranks=32, nodes=1, cpuinfo=str(info), sys_cpu=str(no_sys))
    # nominal clock from the model name; ranks beyond the 4 cores do not add peak
    assert (peak.cores, peak.ghz, peak.flops_per_cycle, peak.gflops) == (4, 2.3, 16, pytest.approx(4 * 2.3 * 16))
    assert "model name" in peak.source
    freq = tmp_path / "sys" / "cpu0" / "cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3600000\n")
    peak = detect_peak(ranks=2, nodes=1, cpuinfo=str(info), sys_cpu=str(tmp_path / "sys"))
    assert (peak.cores, peak.ghz, peak.gflops) == (2, 3.6, pytest.approx(2 * 3.6 * 16))
    plain = write_cpuinfo(tmp_path / "cpuinfo2", "sse2", model="AMD EPYC", mhz="2596.124", cores=2)
    peak = detect_peak(ranks=64, nodes=4, cpuinfo=str(plain), sys_cpu=str(no_sys))
    assert (peak.cores, peak.ghz, peak.flops_per_cycle) == (8, pytest.approx(2.596124, abs=1e-3), 4)


# -- real runs -------------------------------------------------------------------------


@pytest.mark.mpi
@needs_hpcc
def test_real_hpcc_run_stores_all_seven_tests(tmp_path):
    store = open_db(str(tmp_path / "results.db"))
    result = run_hpcc(store, np=2, n=500, nb=64, workdir=str(tmp_path / "work"), tags={"fabric": "shm"}, timeout=600)
    assert result.status == "complete" and result.returncode == 0
    run = store.get_run(result.run.id)
    assert (run.kind, run.status, run.ranks, run.tags) == ("hpcc", "complete", 2, {"fabric": "shm"})
    stored = {m.params["test"]: m for m in store.measurements(run.id, benchmark="hpcc")}
    for key in HEADLINE_KEYS + ("RandomlyOrderedRingLatency_usec",):
        assert key in stored, f"{key} missing from the stored run"
        assert stored[key].value > 0
    assert stored["HPL_Tflops"].unit == "Gflop/s" and stored["StarSTREAM_Triad"].unit == "MB/s"
    assert stored["HPL_Tflops"].value == pytest.approx(result.hpl_gflops)
    inf = store.artifact(run.id, "hpccinf.txt")["text"]
    assert inf.splitlines()[5].split()[0] == "500"
    assert "Begin of Summary section." in store.artifact(run.id, "hpccoutf.txt")["text"]
    assert run.provenance["hpcc"]["summary"]["HPL_N"] == 500
    assert run.provenance["hpcc"]["plan"]["q"] == 2
    hosts = store.hosts(run.id)
    assert len(hosts) == 1 and hosts[0].facts["cpu"] and run.provenance["hosts"] == [hosts[0].hostname]
    if result.peak is not None:
        assert result.percent_of_peak == pytest.approx(result.hpl_gflops / result.peak.gflops * 100)
    assert [r["test"] for r in result.rows if r["headline"]] == ["HPL", "DGEMM", "STREAM", "PTRANS", "RandomAccess",
                                                                 "FFT", "b_eff"]
    store.close()


@pytest.mark.mpi
@needs_hpcc
def test_hpcc_command_prints_seven_tests_and_percent_of_peak(tmp_path):
    db = str(tmp_path / "results.db")
    args = ["--db", db, "hpcc", "--np", "2", "--n", "400", "--nb", "50", "--workdir", str(tmp_path / "w"),
            "--peak-gflops", "100", "--label", "shm-test"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for name in ("HPL", "DGEMM", "STREAM", "PTRANS", "RandomAccess", "FFT", "b_eff"):
        assert name in result.stdout
    assert "% of 100 Gflop/s peak (given with --peak-gflops)" in result.stdout
    out = CliRunner().invoke(main, ["--db", db, "hpcc", "--np", "2", "--n", "300", "--workdir", str(tmp_path / "w2"),
                                    "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "complete" and data["plan"]["n"] == 300
    assert {r["key"] for r in data["results"]} >= set(HEADLINE_KEYS)
    store = open_db(db)
    assert [r.label for r in store.list_runs(kind="hpcc")] == ["shm-test", None]
    store.close()


def fake_hpcc(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-hpcc"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


@pytest.mark.mpi
@needs_hpcc
def test_failing_hpcc_marks_the_run_failed_and_keeps_what_it_measured(tmp_path):
    text = (DATA / "hpccoutf_2ranks.txt").read_text()
    partial = tmp_path / "partial.txt"
    partial.write_text(text[: text.index("Begin of MPIFFT section.")])
    binary = fake_hpcc(tmp_path, f"test -f hpccinf.txt || exit 3\ncat {partial} > hpccoutf.txt\n"
                                 "echo 'MPI_ABORT was invoked on rank 0' >&2\nexit 1\n")
    store = open_db(str(tmp_path / "results.db"))
    with pytest.raises(HpccError) as info:
        run_hpcc(store, np=1, n=200, hpcc=binary, workdir=str(tmp_path / "work"))
    message = str(info.value)
    assert "exited with status" in message and "MPI_ABORT" in message and "marked failed" in message
    assert "\n" not in message
    run = store.list_runs(kind="hpcc")[-1]
    assert run.status == "failed" and "kept" in run.message
    kept = {m.params["test"] for m in store.measurements(run.id)}
    assert {"MPIRandomAccess_GUPs", "PTRANS_GBs", "StarSTREAM_Triad"} <= kept and "HPL_Tflops" not in kept
    assert store.artifact(run.id, "hpccinf.txt") is not None
    store.close()


@pytest.mark.mpi
@needs_hpcc
def test_hpcc_without_output_is_a_clear_failure(tmp_path):
    binary = fake_hpcc(tmp_path, "exit 0\n")
    db = str(tmp_path / "results.db")
    result = CliRunner().invoke(main, ["--db", db, "hpcc", "--np", "1", "--n", "100", "--hpcc", binary,
                                       "--workdir", str(tmp_path / "w")], catch_exceptions=False)
    assert result.exit_code == 1
    assert "HPCC wrote no hpccoutf.txt" in result.stderr
    store = open_db(db)
    run = store.list_runs(kind="hpcc")[-1]
    assert run.status == "failed" and store.count_measurements(run.id) == 0
    store.close()


def test_missing_binary_and_used_workdir_are_refused_before_a_run(tmp_path):
    store = open_db(str(tmp_path / "results.db"))
    with pytest.raises(HpccError, match="not found"):
        run_hpcc(store, np=1, n=100, hpcc=str(tmp_path / "no-such-hpcc"))
    used = tmp_path / "used"
    used.mkdir()
    (used / "hpccoutf.txt").write_text("old")
    if shutil.which("mpirun"):
        with pytest.raises(HpccError, match="not empty"):
            run_hpcc(store, np=1, n=100, hpcc=fake_hpcc(tmp_path, "exit 0\n"), workdir=str(used))
    assert store.list_runs() == []
    store.close()
    assert os.listdir(used) == ["hpccoutf.txt"]
