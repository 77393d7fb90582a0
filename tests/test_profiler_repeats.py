"""libfabricbench-prof's entries for point-to-point calls that repeat their arguments
(native/profiler/fbprof.h, fb_ent_t): the calls they hold reach the per-call table, the
call sites, the time windows and the matrix exactly as calls recorded one by one, whether
the arguments repeat, alternate, move to another communicator, or name a datatype made
after another was freed (tests/data/profiler/repeats.c, 2 ranks)."""
from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import MPICC, mpirun_argv
from fabricbench.native import profiler_library
from fabricbench.workflows.profile import run_profiled

DATA = Path(__file__).parent / "data" / "profiler"
TIMEOUT = 120

# size bin -> (calls, bytes): 40 x 8 B; 1 B and 2 B in turn, 15 each; 20 x 16 B on a dup'ed
# communicator; 10 x 40 B, then 10 x 100 B of a datatype made after the first was freed.
BINS = {4: (40, 320), 1: (15, 15), 2: (15, 30), 5: (20, 320), 6: (10, 400), 7: (10, 1000)}


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    if not (shutil.which(MPICC) and shutil.which(mpirun_argv(1)[0])):
        pytest.skip(f"needs {MPICC} and {mpirun_argv(1)[0]}")
    profiler_library()
    tmp = tmp_path_factory.mktemp("repeats")
    exe = tmp / "repeats"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(DATA / "repeats.c")], check=True, timeout=TIMEOUT)
    rc, prof, reason = run_profiled(mpirun_argv(2, exe), tmp / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and prof is not None, reason
    return prof


@pytest.mark.mpi
def test_repeated_alternating_and_retyped_calls_are_counted_exactly(profile):
    for rank, call in ((0, "MPI_Send"), (1, "MPI_Recv")):
        got = {b: (count, nbytes) for r, c, b, count, nbytes, *_ in profile["calls"] if r == rank and c == call}
        assert got == BINS, (rank, call)
    total = sum(n for n, _ in BINS.values()), sum(b for _, b in BINS.values())
    assert {(s, d): (m, b) for s, d, m, b in profile["matrix"]["p2p"]} == {(0, 1): total}


@pytest.mark.mpi
def test_the_windows_and_call_sites_hold_every_call(profile):
    cols = profile["window_columns"]
    windows = Counter()
    for row in profile["windows"]:
        w = dict(zip(cols, row))
        windows[(w["rank"], w["call"])] += w["count"]
    assert windows[(0, "MPI_Send")] == windows[(1, "MPI_Recv")] == 110
    cols = profile["callsite_columns"]
    sites = Counter()
    for row in profile["callsites"]:
        s = dict(zip(cols, row))
        if s["call"] in ("MPI_Send", "MPI_Recv"):
            sites[(s["rank"], s["call"])] += s["count"]
    assert sites == {(0, "MPI_Send"): 110, (1, "MPI_Recv"): 110}
