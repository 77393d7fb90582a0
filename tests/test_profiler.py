"""libfabricbench-prof and the profile workflow and analysis.

Real mpirun runs of small programs (tests/data/profiler/) whose MPI calls are known, checked
entry by entry: counts, bytes, size bins and the communication matrix; Fortran through all
three bindings; MPI_Pcontrol; a rank killed mid-run; fabricbench's own engine. Then the
Python side (loading, summary, plots) on synthetic profiles.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import MPICC, MPIFORT, mpi_env, mpirun_argv
from fabricbench.native import NativeMissing, engine_path, profiler_library
from fabricbench.analysis.profile import summarize
from fabricbench.report.words.profile import call_sentence, call_size, format_summary, headline
from fabricbench.analysis.profile_data import ProfileError, bin_range, load_profile, matrix_dense
from fabricbench.launch.failure import explain_exit as explain_failure
from fabricbench.workflows.profile import prepare_command, run_profiled

DATA = Path(__file__).parent / "data" / "profiler"
GENERATOR = Path(__file__).parent.parent / "native" / "profiler" / "gen_wrappers.py"
TIMEOUT = 120



@pytest.fixture(scope="module")
def library() -> Path:
    try:
        return profiler_library()
    except NativeMissing as exc:
        pytest.fail(f"{exc} (build it: cmake -S . -B build/prof && cmake --build build/prof && "
                    "cmake --install build/prof --prefix build/profstage, then FABRICBENCH_NATIVE_DIR=build/profstage)")


def mpirun(np: int, *program) -> list:
    return mpirun_argv(np, *program)


def compile_c(source: Path, out: Path, *extra: str) -> Path:
    subprocess.run([MPICC, "-O1", "-o", str(out), str(source), *extra], check=True, timeout=TIMEOUT)
    return out


def entries(profile) -> dict:
    """{rank: {(call, bin): (count, bytes)}}"""
    out = defaultdict(dict)
    for rank, call, b, count, nbytes, *_times in profile["calls"]:
        assert (call, b) not in out[rank], f"duplicate entry {call} bin {b} on rank {rank}"
        out[rank][(call, b)] = (count, nbytes)
    return dict(out)


def layer(profile, name) -> dict:
    return {(src, dst): (msgs, nbytes) for src, dst, msgs, nbytes in profile["matrix"][name]}


# ------------------------------------------------------------------ C program, 4 ranks

@pytest.fixture(scope="module")
def c_profile(library, tmp_path_factory):
    if not (shutil.which(MPICC) and shutil.which(mpirun(1)[0])):
        pytest.skip(f"needs {MPICC} and {mpirun(1)[0]}")
    tmp = tmp_path_factory.mktemp("known_calls")
    exe = compile_c(DATA / "known_calls.c", tmp / "known_calls")
    rc, profile, reason = run_profiled(mpirun(4, exe), tmp / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    return profile


# (call, size bin) -> (count, bytes) on every rank, then per-rank extras; see known_calls.c.
COMMON = {
    ("MPI_Irecv", 7): (3, 192),          # 3 x 64 B
    ("MPI_Isend", 7): (3, 192),
    ("MPI_Waitall", 0): (1, 0),
    ("MPI_Sendrecv", 9): (1, 256),       # 256 B in [256, 511]
    ("MPI_Comm_split", 0): (1, 0),
    ("MPI_Alltoall", 14): (2, 16384),    # 8 KiB per destination block, twice
    ("MPI_Comm_free", 0): (1, 0),
    ("MPI_Bcast", 4): (1, 8),
    ("MPI_Allreduce", 3): (1, 4),
    ("MPI_Win_create", 0): (1, 0),
    ("MPI_Win_fence", 0): (3, 0),
    ("MPI_Put", 5): (1, 16),
    ("MPI_Get", 4): (1, 8),
    ("MPI_Win_free", 0): (1, 0),
    ("MPI_Barrier", 0): (1, 0),          # the five under MPI_Pcontrol(0) are not counted
    ("MPI_Send", 4): (1, 8),             # to MPI_PROC_NULL
    ("MPI_Comm_rank", 0): (2, 0),        # of MPI_COMM_WORLD and of the split communicator
    ("MPI_Comm_size", 0): (1, 0),
}
PER_RANK = {
    0: {("MPI_Send", 10): (5, 4000), ("MPI_Ssend", 3): (1, 4)},
    1: {("MPI_Recv", 10): (5, 4000), ("MPI_Ssend", 3): (1, 4)},
    2: {("MPI_Recv", 3): (1, 4), ("MPI_Send_init", 0): (1, 0), ("MPI_Start", 8): (4, 512),
        ("MPI_Wait", 0): (4, 0), ("MPI_Request_free", 0): (1, 0)},
    3: {("MPI_Recv", 3): (1, 4), ("MPI_Recv_init", 0): (1, 0), ("MPI_Start", 8): (4, 512),
        ("MPI_Wait", 0): (4, 0), ("MPI_Request_free", 0): (1, 0)},
}


@pytest.mark.mpi
def test_c_calls_counted_exactly(c_profile):
    got = entries(c_profile)
    for rank in range(4):
        assert got[rank] == {**COMMON, **PER_RANK[rank]}, f"rank {rank}"


@pytest.mark.mpi
def test_c_communication_matrix(c_profile):
    # p2p: Send 0->1 (5 x 800 B), Isend ring r->r+1 (3 x 64 B), Sendrecv r<->r^1 (256 B),
    # Ssend on the split communicators 0->2 and 1->3 (4 B), persistent 2->3 (4 x 128 B).
    assert layer(c_profile, "p2p") == {
        (0, 1): (9, 4000 + 192 + 256), (1, 2): (3, 192), (2, 3): (3 + 1 + 4, 192 + 256 + 512), (3, 0): (3, 192),
        (1, 0): (1, 256), (3, 2): (1, 256), (0, 2): (1, 4), (1, 3): (1, 4),
    }
    # rma: Put r->r+1 (16 B) and Get at r+1 from r, data r->r+1 (8 B).
    assert layer(c_profile, "rma") == {(r, (r + 1) % 4): (2, 24) for r in range(4)}
    # coll: Alltoall within {0,2} and {1,3} (2 x 8 KiB), Bcast from 2 to the others (8 B).
    assert layer(c_profile, "coll") == {
        (0, 2): (2, 16384), (2, 0): (3, 16392), (1, 3): (2, 16384), (3, 1): (2, 16384), (2, 1): (1, 8), (2, 3): (1, 8),
    }


@pytest.mark.mpi
def test_pcontrol_switches_recording(c_profile):
    got = entries(c_profile)
    for rank in range(4):
        assert got[rank][("MPI_Barrier", 0)] == (1, 0)
    assert got[0][("MPI_Send", 4)] == (1, 8)  # the 8 B send to rank 1 under Pcontrol(0) is absent
    assert got[1].get(("MPI_Recv", 4)) is None


@pytest.mark.mpi
def test_c_profile_metadata(c_profile):
    assert c_profile["ranks"] == 4
    assert len(c_profile["hosts"]) == 1
    assert c_profile["mpi"]["library"]
    assert c_profile["command"][0].endswith("known_calls")
    for info in c_profile["rank_info"]:
        assert info["app_time"] >= info["mpi_time"] > 0
        assert info["host"] == c_profile["hosts"][0]
    for rank, call, b, count, nbytes, t, tmin, tmax in c_profile["calls"]:
        lo, hi = bin_range(b)
        assert lo * count <= nbytes <= hi * count, (rank, call, b)
        assert 0 <= tmin <= tmax <= t


@pytest.fixture(scope="module")
def coverage_profile(library, tmp_path_factory):
    if not (shutil.which(MPICC) and shutil.which(mpirun(1)[0])):
        pytest.skip(f"needs {MPICC} and {mpirun(1)[0]}")
    tmp = tmp_path_factory.mktemp("coverage")
    exe = compile_c(DATA / "coverage.c", tmp / "coverage", "-pthread")
    rc, profile, reason = run_profiled(mpirun(4, exe), tmp / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    return profile


@pytest.mark.mpi
def test_every_wrapped_call_is_recorded(c_profile, coverage_profile):
    table = (GENERATOR.parent / "mpi_calls.tbl").read_text()
    wrapped = set(re.findall(r"^\w+\s+(MPI_\w+)\(", table, re.M))
    if "Open MPI" in coverage_profile["mpi"]["library"]:  # its MPIX_ extensions (?OMPI_HAVE_MPI_EXT_* lines)
        wrapped |= set(re.findall(r"^\?OMPI_HAVE_MPI_EXT_\w+\s+\w+\s+(MPIX_\w+)\(", table, re.M))
    lifecycle = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Pcontrol"}
    recorded = {row[1] for p in (c_profile, coverage_profile) for row in p["calls"]}
    assert recorded == wrapped - lifecycle


def per_call(profile, call) -> list:
    got = entries(profile)
    return [{b: v for (c, b), v in got[rank].items() if c == call} for rank in range(profile["ranks"])]


@pytest.mark.mpi
def test_vector_collectives_threads_and_windows(coverage_profile):
    p = coverage_profile
    assert p["mpi"]["thread_level"] == "multiple"
    # rank i sends i + 1 ints to every rank: all it sends, as mpiP counts Alltoallv
    for call in ("MPI_Alltoallv", "MPI_Alltoallw", "MPI_Ialltoallv", "MPI_Ialltoallw"):
        assert per_call(p, call) == [{5: (1, 16)}, {6: (1, 32)}, {6: (1, 48)}, {7: (1, 64)}], call
    # Scatterv root 0 sends 1+2+3+4 ints; Gatherv root 3 (not in place) contributes its 4
    assert per_call(p, "MPI_Scatterv") == [{6: (1, 40)}, {4: (1, 8)}, {4: (1, 12)}, {5: (1, 16)}]
    assert per_call(p, "MPI_Gatherv") == [{3: (1, 4)}, {4: (1, 8)}, {4: (1, 12)}, {5: (1, 16)}]
    assert per_call(p, "MPI_Allgather") == [{4: (1, 8)}] * 4  # in place: the receive block
    assert per_call(p, "MPI_Reduce_scatter") == [{6: (1, 40)}] * 4  # the whole reduced vector
    # neighbourhood: 2 + 3 ints to the two cartesian neighbours; 1 int on a dist graph
    assert per_call(p, "MPI_Neighbor_alltoallv") == [{3: (1, 4), 5: (1, 20)}] * 4
    assert per_call(p, "MPI_Neighbor_alltoallw") == [{5: (1, 20)}] * 4
    # on an intercommunicator (28 B), and rank 0's pid for the MPI-IO file name (4 B)
    assert per_call(p, "MPI_Bcast") == [{3: (1, 4), 5: (1, 28)}] * 4
    assert per_call(p, "MPI_Startall") == [{6: (2, 80)}] * 4  # a 20 B send and a 20 B receive, twice
    # two threads x 50 sends from ranks 0 and 2, plus one 4 B send on the intercommunicator
    assert per_call(p, "MPI_Send")[0] == {3: (101, 404), 4: (3, 36), 5: (1, 24)}
    assert layer(p, "p2p") == {
        (0, 1): (113, 540), (2, 3): (113, 540), (1, 2): (12, 136), (3, 0): (12, 136),
        (0, 2): (1, 24), (2, 0): (1, 24),  # MPI_Comm_create_group of the even ranks
        (1, 0): (1, 4), (3, 2): (1, 4),    # intercommunicator {0,2} <-> {1,3}
    }
    # window ranks run backwards (window rank i is world 3 - i); every rank targets world rank - 1:
    # Put 12 + Accumulate 8 + 6 single-int updates = 8 messages, 44 B to it; Rget 4 + Get 8 from it
    assert layer(p, "rma") == {
        **{(r, (r + 3) % 4): (8, 44) for r in range(4)},
        **{((r + 3) % 4, r): (2, 12) for r in range(4)},
    }


# ------------------------------------------------------------------ Fortran, 2 ranks

FORTRAN_EXPECTED = {
    0: {("MPI_Send", 6): (3, 120)},
    1: {("MPI_Recv", 6): (3, 120)},
}
FORTRAN_COMMON = {
    ("MPI_Irecv", 7): (1, 64), ("MPI_Isend", 7): (1, 64), ("MPI_Waitall", 0): (1, 0), ("MPI_Iprobe", 0): (1, 0),
    ("MPI_Allreduce", 4): (1, 8), ("MPI_Bcast", 4): (1, 8), ("MPI_Comm_split", 0): (1, 0),
    ("MPI_Alltoall", 5): (1, 16), ("MPI_Comm_free", 0): (1, 0),
    ("MPI_Gather", 4): (1, 12),  # the root's MPI_IN_PLACE is recognised: its receive block counts
    ("MPI_Barrier", 0): (1, 0),
    ("MPI_Comm_rank", 0): (1, 0), ("MPI_Comm_size", 0): (1, 0),
}


@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which(MPIFORT), reason=f"needs {MPIFORT}")
@pytest.mark.parametrize("binding", ["use mpi", "mpif.h", "use mpi_f08"])
def test_fortran_calls_counted_once(library, tmp_path, binding):
    exe = tmp_path / "known_calls_f"
    if binding == "use mpi_f08":
        cmd = [MPIFORT, "-o", str(exe), str(DATA / "known_calls_f08.f90")]
    elif binding == "mpif.h":
        cmd = [MPIFORT, "-DMPIF_H", "-fallow-argument-mismatch", "-w", "-o", str(exe), str(DATA / "known_calls.F90")]
    else:
        cmd = [MPIFORT, "-o", str(exe), str(DATA / "known_calls.F90")]
    built = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT)
    if built.returncode != 0 and binding == "use mpi_f08" and "mpi_f08" in built.stderr:
        pytest.skip(f"this MPI has no mpi_f08 module: {built.stderr.strip()[:200]}")
    assert built.returncode == 0, built.stderr
    rc, profile, reason = run_profiled(mpirun(2, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    got = entries(profile)
    for rank in range(2):
        assert got[rank] == {**FORTRAN_COMMON, **FORTRAN_EXPECTED[rank]}, f"{binding}, rank {rank}"
    assert layer(profile, "p2p") == {(0, 1): (4, 120 + 64), (1, 0): (1, 64)}
    assert layer(profile, "coll") == {(0, 1): (1, 16), (1, 0): (3, 16 + 8 + 12)}


# ------------------------------------------------------------------ failures and other launches

@pytest.mark.mpi
def test_killed_rank_gives_no_profile_and_says_why(library, tmp_path):
    exe = compile_c(DATA / "dies.c", tmp_path / "dies")
    rc, profile, reason = run_profiled(mpirun(3, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    assert profile is None
    assert "did not finish" not in reason, reason  # nobody hung
    assert rc != 0
    assert reason.startswith("no profile was produced")
    # Hydra names the first dead process by pid only and often kills the others with the same signal:
    # then the host, not the rank, is what it tells.
    from fabricbench.launch.mpi import detect_mpi

    named = "rank 1" in reason or (detect_mpi().flavour == "mpich" and f"a rank on {os.uname().nodename}" in reason)
    assert named and "signal 9" in reason, reason
    assert not (tmp_path / "profile.json").exists()


@pytest.mark.mpi
def test_linked_library_and_singleton(library, tmp_path):
    """Linking the library works like LD_PRELOAD; a run without mpirun gets it from the environment."""
    linked = compile_c(DATA / "dies.c", tmp_path / "linked", "-DNO_KILL", f"-L{library.parent}",
                       "-lfabricbench-prof", f"-Wl,-rpath,{library.parent}")
    env = dict(mpi_env(), FABRICBENCH_PROFILE=str(tmp_path / "linked.json"))
    subprocess.run(mpirun(2, linked), env=env, check=True, timeout=TIMEOUT)
    got = entries(load_profile(tmp_path / "linked.json"))
    assert got[0][("MPI_Allreduce", 3)] == (20, 80) and got[1][("MPI_Allreduce", 3)] == (20, 80)

    plain = compile_c(DATA / "dies.c", tmp_path / "plain", "-DNO_KILL")
    rc, profile, reason = run_profiled([str(plain)], tmp_path / "single.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    assert profile["ranks"] == 1
    assert entries(profile)[0][("MPI_Allreduce", 3)] == (20, 80)


@pytest.mark.mpi
def test_the_profile_is_private_and_a_planted_link_is_not_followed(library, tmp_path):
    exe = compile_c(DATA / "plants_link.c", tmp_path / "plants_link")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = tmp_path / "profile.json"
    rc, profile, reason = run_profiled(mpirun(2, exe, victim), path, timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    assert victim.read_text() == "precious\n"
    assert entries(profile)[0][("MPI_Allreduce", 3)] == (1, 4)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith("profile.json.tmp.")]
    assert len(leftovers) == 1 and leftovers[0].is_symlink()  # the planted link, left alone; no temp file
    assert os.readlink(leftovers[0]) == str(victim)


@pytest.mark.mpi
def test_threads_inside_mpi_at_once_count_once_for_the_rank(library, tmp_path):
    exe = compile_c(DATA / "threads_wait.c", tmp_path / "threads_wait", "-pthread")
    rc, profile, reason = run_profiled(mpirun(2, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    waiting = profile["rank_info"][0]
    per_thread = waiting["mpi_time_per_thread"]
    assert waiting["mpi_threads"] == len(per_thread) == 5  # the main thread's barrier, then four waiters
    assert min(per_thread[1:]) > 0.5  # each waiter sat in MPI_Recv for about a second
    assert waiting["mpi_time_all_threads"] == pytest.approx(sum(per_thread), rel=1e-6)
    assert waiting["mpi_time_all_threads"] > waiting["app_time"]  # the calls overlap ...
    assert 0.5 < waiting["mpi_time"] <= waiting["app_time"]  # ... the rank's time in MPI does not
    assert "mpi_time_capped" not in waiting
    sender = profile["rank_info"][1]
    assert sender["mpi_threads"] == 1  # one thread: the time inside MPI covers its calls
    assert sender["mpi_time_all_threads"] <= sender["mpi_time"] <= sender["app_time"]
    assert summarize(profile)["mpi_percent"]["overall"] <= 100


@pytest.mark.mpi
def test_prepare_command_hands_library_to_ranks(tmp_path):
    argv, env = prepare_command(["mpirun", "-np", "2", "./app"], "/x/libfabricbench-prof.so", tmp_path / "p.json",
                                env={"PATH": os.environ["PATH"]})
    assert argv[0] == "mpirun" and argv[-3:] == ["-np", "2", "./app"]
    from fabricbench.launch.mpi import detect_mpi

    if detect_mpi().is_openmpi:
        assert argv[1:5] == ["-x", "LD_PRELOAD=/x/libfabricbench-prof.so", "-x", f"FABRICBENCH_PROFILE={tmp_path / 'p.json'}"]
        assert "LD_PRELOAD" not in env  # mpirun itself is not preloaded
    argv, env = prepare_command(["./app", "-n", "3"], "/x/lib.so", "/p.json", env={"LD_PRELOAD": "/other.so"})
    assert argv == ["./app", "-n", "3"]
    assert env["LD_PRELOAD"] == "/x/lib.so:/other.so" and env["FABRICBENCH_PROFILE"] == "/p.json"


@pytest.mark.mpi
def test_profiling_the_engine(library, tmp_path):
    try:
        engine = engine_path()
    except NativeMissing as exc:
        pytest.skip(str(exc))
    rc, profile, reason = run_profiled(
        mpirun(2, engine, "latency", "--sizes", "0:64", "--iterations", "100"), tmp_path / "engine.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    assert profile["ranks"] == 2
    p2p = layer(profile, "p2p")
    assert p2p[(0, 1)][0] >= 100 and p2p[(1, 0)][0] >= 100  # at least the timed ping-pongs
    summary = summarize(profile)
    assert summary["top_calls"] and summary["mpi_percent"]["overall"] > 0
    assert "of MPI time" in format_summary(summary)


# ------------------------------------------------------------------ the generator

def test_one_table_line_makes_c_and_fortran_wrappers(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_wrappers", GENERATOR)
    gen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen  # dataclasses look their module up
    try:
        spec.loader.exec_module(gen)
    finally:
        del sys.modules[spec.name]
    table = tmp_path / "calls.tbl"
    table.write_text("send  MPI_Send(const void *buf, int count@count, MPI_Datatype datatype@type, "
                     "int dest@peer, int tag@tag, MPI_Comm comm@comm)\n")
    assert gen.main(["gen", str(table), str(tmp_path / "out")]) == 0
    source = (tmp_path / "out" / "fb_wrappers.c").read_text()
    assert "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)" in source
    assert "fb_rec_send(FB_ID_MPI_Send, fb_sp, 0, count, datatype, dest, comm);" in source
    for symbol in ("mpi_send_(", "mpi_send__(", "MPI_SEND(", "mpi_send_f08_("):
        assert symbol in source
    assert "PMPI_Comm_f2c(*comm)" in source and "PMPI_Type_f2c(*datatype)" in source
    table.write_text("send  MPI_Send(const void *buf, int count@count, MPI_Datatype datatype@type)\n")
    with pytest.raises(gen.TableError, match=r"calls.tbl:1: kind send needs an argument with @peer"):
        gen.parse_table(table)


# ------------------------------------------------------------------ Python side, synthetic profiles

def synthetic(ranks=2, app=10.0, calls=None, matrix=None):
    """A profile shaped like the seed's MPI FFT: 74% of MPI time in 16 KiB Alltoall."""
    if calls is None:
        calls = []
        for r in range(ranks):
            calls += [
                [r, "MPI_Alltoall", 15, 100, 100 * 16384, 0.37, 0.003, 0.005],
                [r, "MPI_Bcast", 4, 1000, 8000, 0.125, 1e-4, 2e-4],
                [r, "MPI_Allreduce", 4, 50, 400, 0.005, 1e-4, 1e-4],
            ]
    mpi_time = defaultdict(float)
    for row in calls:
        mpi_time[row[0]] += row[5]
    return {
        "format": "fabricbench-mpi-profile", "version": 1, "created": "2024-01-01T00:00:00Z", "ranks": ranks,
        "hosts": ["n1"], "mpi": {"library": "Test MPI", "standard": "3.1", "thread_level": "single"},
        "command": ["./fft"], "timer": "tsc", "size_bins": "",
        "rank_info": [{"rank": r, "host": "n1", "pid": 1, "app_time": app, "mpi_time": mpi_time[r], "untracked_peers": 0}
                      for r in range(ranks)],
        "call_columns": ["rank", "call", "bin", "count", "bytes", "time", "min", "max"],
        "calls": calls,
        "matrix_columns": ["src", "dst", "messages", "bytes"],
        "matrix": matrix if matrix is not None else {
            "p2p": [[0, 1, 10, 1000]], "rma": [], "coll": [[0, 1, 100, 1638400], [1, 0, 100, 1638400]]},
    }


def write(tmp_path, data, name="p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_summary_in_the_seed_style(tmp_path):
    profile = load_profile(write(tmp_path, synthetic()))
    s = summarize(profile)
    assert headline(s) == "About 5.0% of overall runtime spent in MPI"
    top = s["top_calls"][0]
    assert top["call"] == "MPI_Alltoall" and round(top["percent_mpi"]) == 74
    assert call_size(top) == "16 KiB" and top["dominant_bin_range"] == [16384, 32767]
    assert call_sentence(top) == "MPI_Alltoall 74% of MPI time (3.7% of wall time), mostly 16 KiB"
    assert call_sentence(s["top_calls"][1]) == "MPI_Bcast 25% of MPI time (1.2% of wall time), mostly 8 B"
    assert s["mpi_percent"]["mean"] == pytest.approx(5.0)
    assert s["imbalance"]["cov"] == pytest.approx(0.0)
    assert [(t["src"], t["dst"]) for t in s["top_talkers"]] == [(0, 1), (1, 0)]
    assert s["top_talkers"][0]["bytes"] == 1638400 + 1000 and s["top_talkers"][0]["messages"] == 110
    text = format_summary(s)
    assert "MPI_Alltoall 74% of MPI time (3.7% of wall time), mostly 16 KiB" in text
    assert "About 5.0% of overall runtime spent in MPI" in text
    assert "0 -> 1" in text


def test_imbalance_and_mixed_sizes():
    calls = [
        [0, "MPI_Send", 10, 10, 8000, 1.0, 0.1, 0.1],
        [0, "MPI_Send", 20, 10, 10 * 600000, 1.0, 0.1, 0.1],
        [0, "MPI_Send", 3, 10, 40, 0.5, 0.05, 0.05],
        [1, "MPI_Recv", 10, 30, 8000, 0.5, 0.01, 0.1],
    ]
    s = summarize(synthetic(calls=calls, matrix={"p2p": [], "rma": [], "coll": []}))
    send = next(c for c in s["top_calls"] if c["call"] == "MPI_Send")
    assert "sizes vary" in call_sentence(send)
    im = s["imbalance"]
    assert (im["min"], im["min_rank"], im["max"], im["max_rank"]) == (0.5, 1, 2.5, 0)
    assert im["cov"] == pytest.approx(2 / 3)
    assert s["top_talkers"] == []
    assert "No point-to-point" in format_summary(s)


@pytest.mark.parametrize("content, message", [
    (None, "no such profile file"),
    ("{not json", "not valid JSON"),
    ({"format": "something else"}, "'format' is 'something else'"),
])
def test_bad_profile_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json" if content is None else write(tmp_path, content, "bad.json")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_bad_rows_are_reported():
    for mutate, message in [
        (lambda p: p["calls"].append([7, "MPI_Send", 1, 1, 1, 0.0, 0.0, 0.0]), "rank 7 is not between 0 and 1"),
        (lambda p: p["calls"].append([0, "MPI_Send", 99, 1, 1, 0.0, 0.0, 0.0]), "size bin 99"),
        (lambda p: p["matrix"]["p2p"].append([0, 5, 1, 1]), "outside 0..1"),
        (lambda p: p["rank_info"].pop(), "'rank_info' must list 2 ranks"),
        (lambda p: p.update(version=99), "newer than this fabricbench reads"),
    ]:
        profile = synthetic()
        mutate(profile)
        with pytest.raises(ProfileError, match=message):
            from fabricbench.analysis.profile_data import validate_profile

            validate_profile(profile)


def test_matrix_dense_sums_layers():
    dense = matrix_dense(synthetic())
    assert dense == [[0, 1638400 + 1000], [1638400, 0]]
    assert matrix_dense(synthetic(), "p2p", "messages") == [[0, 10], [0, 0]]


def test_explain_failure():
    text = "mpirun noticed that process rank 2 with PID 0 on node n7 exited on signal 9 (Killed)."
    assert explain_failure(137, text) == (
        "the command exited with status 137 (128 + signal 9, SIGKILL): rank 2 on n7 was killed by signal 9 (Killed)")
    assert explain_failure(-11, "") == "the command was killed by signal 11 (SIGSEGV)"
    wrapped = "mpirun has exited due to process rank 1 with PID 0 on\nnode n3 exiting improperly. There are"
    assert explain_failure(1, wrapped) == "the command exited with status 1: rank 1 on n3 exited without calling MPI_Finalize"
    assert "LD_PRELOAD" in explain_failure(0, "")


def test_plots_return_figures():
    from matplotlib.figure import Figure

    from fabricbench.report.plots import profile as plots

    profile = synthetic()
    empty = synthetic(calls=[], matrix={"p2p": [], "rma": [], "coll": []})
    for fig in (plots.mpi_time_by_rank(profile), plots.message_size_histogram(profile),
                plots.message_size_histogram(profile, weight="time"), plots.matrix_heatmap(profile),
                plots.matrix_heatmap(profile, "coll", "messages"), plots.mpi_time_by_rank(empty),
                plots.matrix_heatmap(empty)):
        assert isinstance(fig, Figure)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        assert buf.getvalue().startswith(b"\x89PNG")
