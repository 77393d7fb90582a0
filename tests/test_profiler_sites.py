"""Where and when: call sites, time windows and phases of libfabricbench-prof profiles.

Real mpirun runs of small programs (tests/data/profiler/callsites.c, phases.c) and of
Debian's hpcc; then the change-point segmentation and the window grid on synthetic data.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import MPICC, mpirun_argv
from fabricbench.analysis.profile_phases import phases, segment, window_grid
from fabricbench.analysis.profile_sites import callsites
from fabricbench.report.words.profile import phase_call_sentence, phase_lines, phase_sizes, site_rows
from fabricbench.native import NativeMissing, profiler_library
from fabricbench.planning.hpcc_input import plan, render_hpccinf
from fabricbench.workflows.profile import run_profiled

DATA = Path(__file__).parent / "data" / "profiler"
GENERATOR = Path(__file__).parent.parent / "native" / "profiler" / "gen_wrappers.py"
TIMEOUT = 180
NONBLOCKING = {"MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Waitany", "MPI_Waitall", "MPI_Waitsome",
               "MPI_Test", "MPI_Testany", "MPI_Testall", "MPI_Testsome"}


@pytest.fixture(scope="module")
def library() -> Path:
    if not (shutil.which(MPICC) and shutil.which(mpirun_argv(1)[0])):
        pytest.skip(f"needs {MPICC} and an MPI launcher on PATH")
    try:
        return profiler_library()
    except NativeMissing as exc:
        pytest.fail(str(exc))


@pytest.fixture(autouse=True)
def root_mpirun(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


def profiled(np_: int, *argv, tmp: Path, cwd_file: str = "profile.json") -> dict:
    rc, profile, reason = run_profiled(mpirun_argv(np_, *argv),
                                       tmp / cwd_file, timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    return profile


@pytest.fixture(scope="module")
def sites_profile(library, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("callsites")
    exe = tmp / "callsites"
    subprocess.run([MPICC, "-g", "-O1", "-pthread", "-o", str(exe), str(DATA / "callsites.c")], check=True,
                   timeout=TIMEOUT)
    return profiled(2, exe, tmp=tmp)


def site_lines() -> dict:
    """{function: line} from the 'site:' comments of callsites.c."""
    out = {}
    for no, text in enumerate((DATA / "callsites.c").read_text().splitlines(), 1):
        m = re.search(r"/\* site: (\w+) \*/", text)
        if m:
            out[m.group(1)] = no
    return out


@pytest.mark.mpi
def test_mpi_time_is_attributed_to_the_calling_functions_and_lines(sites_profile):
    lines = site_lines()
    expected = {"MPI_Sendrecv": ("halo_exchange", 300), "MPI_Allreduce": ("global_sum", 200),
                "MPI_Bcast": ("share_config", 100)}
    found = callsites(sites_profile, top=100)["sites"]
    for call, (function, iterations) in expected.items():
        mine = [s for s in found if s["call"] == call]
        assert len(mine) == 1, (call, mine)  # one site: every call of it comes from one line
        site = mine[0]
        assert site["function"] == function and site["line"] == lines[function], site
        assert site["file"].endswith("callsites.c") and site["label"] == f"{function} (callsites.c:{lines[function]})"
        assert site["count"] == 2 * iterations and site["ranks"] == 2
        # all the call's time, on both ranks, is at that site
        total = sum(row[5] for row in sites_profile["calls"] if row[1] == call)
        assert site["time"] == pytest.approx(total, rel=1e-6)
    rows = site_rows(callsites(sites_profile, top=3))
    assert [r[1] for r in rows if r[1] in expected] and all(len(r) == 11 for r in rows)


@pytest.mark.mpi
def test_calls_before_init_and_from_a_second_thread_are_reported(sites_profile):
    for info in sites_profile["rank_info"]:
        assert info["calls_before_init"] == {"MPI_Initialized": 1}
        main, helper = info["threads"]
        assert main["main"] and not main["outside_thread_level"]
        # MPI_THREAD_FUNNELED: the helper thread's MPI_Comm_rank is outside what the level allows
        assert not helper["main"] and helper["outside_thread_level"] and helper["calls"] == 1
        assert main["calls"] == 1 + 300 + 200 + 100  # MPI_Comm_rank and the three loops


@pytest.mark.mpi
def test_pcontrol_calls_mark_the_phases(sites_profile):
    marks = sites_profile["rank_info"][0]["pcontrol"]
    assert [level for _t, level in marks] == [2, 3, 4]
    assert all(a[0] <= b[0] for a, b in zip(marks, marks[1:]))
    result = phases(sites_profile)
    assert result["method"] == "pcontrol"
    labels = [p["label"] for p in result["phases"]]
    assert labels[-3:] == ["MPI_Pcontrol(2)", "MPI_Pcontrol(3)", "MPI_Pcontrol(4)"]
    assert result["phases"][-3]["top_calls"][0]["call"] == "MPI_Sendrecv"
    text = "\n".join(phase_lines(result))
    assert "marked by the program's MPI_Pcontrol calls" in text and "after MPI_Pcontrol(3)" in text


def collapsed_top_calls(result) -> list:
    """The phases' top calls, non-blocking ones as 'non-blocking', repeats merged (under load
    the share of Isend against Waitall moves, and a stretch of them may be split in two)."""
    tops = [p["top_calls"][0]["call"] if p["top_calls"] else None for p in result["phases"]]
    tops = ["non-blocking" if c in NONBLOCKING else c for c in tops]
    return [c for i, c in enumerate(tops) if c and (i == 0 or c != tops[i - 1])]


@pytest.mark.mpi
def test_phases_are_found_where_the_call_mix_changes(library, tmp_path):
    exe = tmp_path / "phases"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(DATA / "phases.c")], check=True, timeout=TIMEOUT)
    profile = profiled(2, exe, tmp=tmp_path)
    info = profile["rank_info"][0]
    assert info["windows"] <= 2048 and info["window_s"] > 0  # the ring stays fixed: windows grow instead
    result = phases(profile)
    assert result["method"] == "change points"
    tops = collapsed_top_calls(result)
    assert tops == ["MPI_Sendrecv", "MPI_Alltoall", "non-blocking"], tops
    alltoall = next(p for p in result["phases"] if p["top_calls"][0]["call"] == "MPI_Alltoall")
    assert phase_sizes(alltoall["top_calls"][0]) == "16 KiB"
    assert phase_call_sentence(alltoall["top_calls"][0]).endswith("of wall time) in 16 KiB MPI_Alltoall")
    assert alltoall["percent_mpi"] > 0


@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which("hpcc"), reason="needs Debian's hpcc")
def test_hpcc_phases_in_hpcc_order(library, tmp_path):
    """A small-N hpcc at 4 ranks: RandomAccess, PTRANS, MPIFFT, the b_eff rings and HPL, in
    HPCC's order, each led (data-moving calls first, by bytes) by the calls the HPCC
    profiling study names: non-blocking point-to-point, MPI_Sendrecv, MPI_Alltoall, ...

    HPCC runs MPIRandomAccess(_LCG), PTRANS, DGEMM, STREAM, MPIFFT, LatencyBandwidth, HPL.
    MPIFFT lasts about 10 ms of a 4 s run here; the profiler's 2048 windows resolve it.
    """
    text = render_hpccinf(plan(4, n=256, nb=32))
    # PTRANS gets a size of its own, so that its transpose moves MiB-sized MPI_Sendrecv blocks
    text = re.sub(r"0(\s+Number of additional problem sizes for PTRANS\n)\S.*\n", r"1\g<1>1600\n", text)
    assert "1600\n" in text
    (tmp_path / "hpccinf.txt").write_text(text)
    # 4 ranks on 2 cores: idle ranks yield instead of spinning, as on an oversubscribed node
    rc, profile, reason = run_profiled(["mpirun", "-np", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
                                        "--wdir", str(tmp_path), "hpcc"], tmp_path / "profile.json", timeout=600)
    assert rc == 0 and profile is not None, reason
    result = phases(profile, top=5)
    found = "\n".join(phase_lines(result))
    assert "Calls: data-moving calls first, by bytes moved; then waits, by time." in found
    ph = result["phases"]
    assert len(ph) >= 4, found
    assert all(p["top_calls"][0]["call"] == p["lead"] for p in ph if p["lead"]), found  # the lead is listed first
    # MPIRandomAccess first: MPI_Isend/MPI_Irecv, completed by Testany/Waitany. HPCC's start-up
    # (hpccinf.txt broadcast, a few ms) can form a phase of its own before it.
    ra = next(i for i, p in enumerate(ph) if p["lead"] in NONBLOCKING
              and any(c["call"] in NONBLOCKING and not c["moves_data"] for c in p["top_calls"]))
    assert ra == 0 or (ra == 1 and ph[0]["end"] - ph[0]["start"] < 0.05), found
    ptrans = next(i for i, p in enumerate(ph) if p["lead"] == "MPI_Sendrecv")
    assert ph[ptrans]["top_calls"][0]["mean_size"] >= 1 << 20, found  # the transpose's MiB blocks
    fft = next(i for i, p in enumerate(ph) if i > ptrans and p["lead"] == "MPI_Alltoall")
    beff = next(i for i, p in enumerate(ph) if i > fft and p["lead"] == "MPI_Sendrecv")
    assert ra < ptrans < fft < beff < len(ph) - 1, found
    hpl = {c["call"] for p in ph[-2:] for c in p["top_calls"]}
    assert {"MPI_Send", "MPI_Recv", "MPI_Iprobe"} & hpl, found  # HPL last


# ------------------------------------------------------------------ pure functions

def test_segment_finds_the_changes_and_not_the_noise():
    rng = np.random.default_rng(7)
    mixes = [np.array([1.0, 0, 0, 0.9]), np.array([0, 1.0, 0, 0.5]), np.array([0.5, 0, 0.5, 0.95])]
    x = np.vstack([np.tile(m, (n, 1)) for m, n in zip(mixes, (40, 25, 60))])
    x += rng.normal(0, 0.03, x.shape)
    assert segment(x) == [0, 40, 65, 125]
    steady = np.tile(mixes[0], (100, 1)) + rng.normal(0, 0.03, (100, 4))
    assert segment(steady) == [0, 100]
    assert segment(np.zeros((0, 3))) == [0]


def synthetic(windows_by_rank, window_s, app=1.0) -> dict:
    return {"ranks": len(window_s),
            "rank_info": [{"rank": r, "app_time": app, "mpi_time": 0.5, "window_s": w, "windows": int(app / w) + 1}
                          for r, w in enumerate(window_s)],
            "windows": windows_by_rank}


def test_window_grid_puts_ranks_with_different_window_lengths_on_one_grid():
    # rank 0 has 0.1 s windows, rank 1 0.2 s: both fall on the 0.2 s grid
    p = synthetic([[0, 0, "MPI_Send", 2, 16, 0.05, 1 << 4], [0, 1, "MPI_Send", 1, 8, 0.05, 1 << 4],
                   [0, 7, "MPI_Recv", 1, 8, 0.02, 1 << 4], [1, 3, "MPI_Recv", 4, 32, 0.1, 1 << 4]], [0.1, 0.2])
    g = window_grid(p)
    assert g["step"] == 0.2 and len(g["wall"]) == 5 and g["calls"] == ["MPI_Recv", "MPI_Send"]
    assert g["time"][0].tolist() == [0.0, pytest.approx(0.1)] and g["count"][0, 1] == 3
    assert g["time"][3, 0] == pytest.approx(0.12) and g["wall"][0] == pytest.approx(0.4)
    assert window_grid({"ranks": 1, "rank_info": [{"app_time": 1.0}]}) is None  # an older profile
    assert phases({"ranks": 1, "rank_info": [{"app_time": 1.0}], "calls": []})["method"] is None


def test_guarded_and_character_lines_make_the_right_wrappers(tmp_path):
    table = tmp_path / "t.tbl"
    table.write_text("plain MPI_Comm_set_name(MPI_Comm comm, const char *name@str)\n"
                     "?OMPI_HAVE_MPI_EXT_PCOLLREQ plain MPIX_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *r)\n")
    subprocess.run(["python3", str(GENERATOR), str(table), str(tmp_path)], check=True)
    src = (tmp_path / "fb_wrappers.c").read_text()
    # gfortran's hidden CHARACTER length goes after ierr, passed through
    assert "void *name, MPI_Fint *ierr, size_t fb_len_name)" in src and "(comm, name, ierr, fb_len_name)" in src
    guarded = src.split("#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)\n", 1)[1].split("#endif", 1)[0]
    assert "static __attribute__((noinline)) int fb_slow_MPIX_Barrier_init(" in guarded
    assert "FB_EXPORT int MPIX_Barrier_init(" in guarded
    assert "mpix_barrier_init_" not in src  # guarded calls get a C wrapper only
    # the call site: the C wrapper's caller, passed on to its slow path; a Fortran wrapper's own
    assert "return fb_slow_MPI_Comm_set_name(__builtin_return_address(0), comm, name);" in src
    assert "fb_span_t fb_sp = {__builtin_return_address(0), fb_t0, fb_now(), 0};" in src


def test_bad_call_site_and_window_rows_name_the_row():
    from fabricbench.analysis.profile_data import ProfileError, validate_profile

    base = {"format": "fabricbench-mpi-profile", "version": 1, "ranks": 1, "hosts": ["h"], "mpi": {},
            "rank_info": [{"rank": 0, "app_time": 1.0, "mpi_time": 0.5, "window_s": 0.1}], "calls": [],
            "matrix": {}, "callsite_columns": [], "callsites": [[0, "MPI_Send", 0, 10, "", 1, 8, 0.1, 0.1, 0.1]],
            "window_columns": [], "windows": [[0, 3, "MPI_Send", 1, 8, 0.1, 16]]}
    validate_profile(base)
    with pytest.raises(ProfileError, match=r"callsites\[0\]"):
        validate_profile({**base, "callsites": [[3, "MPI_Send", 0, 10, "", 1, 8, 0.1, 0.1, 0.1]]})
    with pytest.raises(ProfileError, match=r"windows\[0\]"):
        validate_profile({**base, "windows": [[0, -1, "MPI_Send", 1, 8, 0.1, 16]]})
