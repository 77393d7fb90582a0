"""libfabricbench-prof writes only regular files it created (issue 37), and counts a
thread's time once per call (issue 37): real mpirun runs of small programs.

Targets: a character device (made with mknod in the test's folder, the same device as
/dev/full, so that a regression cannot harm the machine's own), a FIFO, a symbolic link, a
file owned by another user: each is left unchanged, the profile is kept beside it and both
the library (stderr) and run_profiled say where. An ordinary path is replaced as before.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import MPICC, mpirun_argv
from fabricbench.analysis.profile import summarize
from fabricbench.report.words.profile import format_summary
from fabricbench.analysis.profile_phases import phases
from fabricbench.analysis.profile_sites import callsites
from fabricbench.native import NativeMissing, profiler_library
from fabricbench.workflows.profile import run_profiled

DATA = Path(__file__).parent / "data" / "profiler"
TIMEOUT = 120


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    try:
        profiler_library()
    except NativeMissing as exc:
        pytest.fail(str(exc))
    if not (shutil.which(MPICC) and shutil.which(mpirun_argv(1)[0])):
        pytest.skip(f"needs {MPICC} and mpirun")
    out = tmp_path_factory.mktemp("targets") / "one_allreduce"
    subprocess.run([MPICC, "-O1", "-o", str(out), str(DATA / "one_allreduce.c")], check=True, timeout=TIMEOUT)
    return out


def _char_device(path: Path) -> None:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's numbers


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _symlink(path: Path) -> None:
    victim = path.parent / "victim.txt"
    victim.write_text("precious\n")
    path.symlink_to(victim)


def _foreign_file(path: Path) -> None:
    path.write_text("someone else's\n")
    os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)


def _snapshot(path: Path):
    st = os.lstat(path)
    content = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    if stat.S_ISREG(st.st_mode):
        content = path.read_bytes()
    return stat.S_IFMT(st.st_mode), st.st_rdev, st.st_uid, content


TARGETS = {
    "character device": (_char_device, True),
    "FIFO": (_fifo, False),
    "symbolic link": (_symlink, False),
    "file owned by another user": (_foreign_file, True),
}


@pytest.mark.mpi
@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_what_stands_at_the_path_is_left_unchanged_and_the_profile_kept_beside_it(program, tmp_path, capfd, kind):
    make, needs_root = TARGETS[kind]
    if needs_root and os.geteuid() != 0:
        pytest.skip("needs root (mknod, chown)")
    target = tmp_path / "profile.json"
    make(target)
    before = _snapshot(target)
    if kind == "symbolic link":
        victim_before = (tmp_path / "victim.txt").read_bytes()

    rc, profile, reason = run_profiled(mpirun_argv(2, program), target, timeout=TIMEOUT)

    assert rc == 0 and profile is not None, reason
    assert _snapshot(target) == before  # same kind, device, owner, content or link
    if kind == "symbolic link":
        assert (tmp_path / "victim.txt").read_bytes() == victim_before
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("profile.json.tmp.")]
    assert len(kept) == 1 and stat.S_ISREG(os.lstat(kept[0]).st_mode)
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    assert json.loads(kept[0].read_text())["format"] == "fabricbench-mpi-profile"
    assert sum(row[3] for row in profile["calls"] if row[1] == "MPI_Allreduce") == 2
    err = capfd.readouterr().err
    said = f"libfabricbench-prof: the profile is kept at {kept[0]}: {target} is a"
    assert said in err and "left unchanged" in err
    assert reason.startswith(f"profile kept at {kept[0]}: {target} is a") and "left unchanged" in reason
    assert kind.split()[-1] in reason  # names what stands there: device, FIFO, link, user


@pytest.mark.mpi
def test_an_ordinary_path_is_replaced_as_before(program, tmp_path):
    target = tmp_path / "profile.json"
    target.write_text("an old profile\n")
    rc, profile, reason = run_profiled(mpirun_argv(2, program), target, timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    assert reason == f"profile written to {target}"
    assert json.loads(target.read_text())["ranks"] == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name]


@pytest.mark.mpi
def test_threads_in_mpi_at_once_never_give_a_share_over_100_percent(tmp_path):
    """2 ranks x 4 threads, MPI_THREAD_MULTIPLE, receives waiting at the same time."""
    if not (shutil.which(MPICC) and shutil.which(mpirun_argv(1)[0])):
        pytest.skip(f"needs {MPICC} and mpirun")
    exe = tmp_path / "threads_share"
    subprocess.run([MPICC, "-O1", "-pthread", "-o", str(exe), str(DATA / "threads_share.c")], check=True,
                   timeout=TIMEOUT)
    rc, profile, reason = run_profiled(mpirun_argv(2, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    if rc == 77:
        pytest.skip("this MPI gives no MPI_THREAD_MULTIPLE")
    assert rc == 0 and profile is not None, reason
    for info in profile["rank_info"]:
        assert info["mpi_threads"] == 5  # the main thread's barriers, then four talkers
        assert info["mpi_time_all_threads"] == pytest.approx(sum(info["mpi_time_per_thread"]), rel=1e-6)
        assert info["mpi_time"] <= info["app_time"]
    waiting = profile["rank_info"][0]
    # The four receivers waited at the same time: summed over threads, the calls' time is
    # well over the rank's time in MPI, which is what made shares exceed 100% before.
    assert waiting["mpi_time_all_threads"] > 1.5 * waiting["mpi_time"]

    summary = summarize(profile, top=10)
    shares = [(c["call"], c["percent_mpi"], c["percent_wall"]) for c in summary["top_calls"]]
    assert all(pm <= 100.0 and pw <= 100.0 for _, pm, pw in shares), shares
    assert sum(pm for _, pm, _ in shares) == pytest.approx(100.0, abs=0.5)  # every call is in the top 10
    recv = next(c for c in summary["top_calls"] if c["call"] == "MPI_Recv")
    assert recv["percent_mpi"] > 50  # most of the threads' MPI time is waiting
    for line in format_summary(summary).splitlines():
        for figure in re.findall(r"(\d+(?:\.\d+)?)\s?%", line):
            assert float(figure) <= 100.0, line
    for site in callsites(profile, top=100)["sites"]:
        assert site["percent_mpi"] <= 100.0 and site["percent_wall"] <= 100.0, site
    phase = phases(profile)
    for part in (phase or {}).get("phases", []):
        assert part["percent_mpi"] <= 100.0 + 1e-9
        for call in part["top_calls"]:
            assert call["percent_mpi"] <= 100.0 + 1e-9 and call["percent_wall"] <= 100.0 + 1e-9


@pytest.mark.mpi
def test_profile_keep_at_a_fifo_says_where_the_profile_is(program, cli, db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    fifo = tmp_path / "keep.json"
    os.mkfifo(fifo)
    proc = cli("profile", "--keep", str(fifo), "--", *mpirun_argv(2, program))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("keep.json.tmp.")]
    assert len(kept) == 1
    assert "profile stored as run 1" in proc.stdout
    assert f"--keep: profile kept at {kept[0]}: {fifo} is a FIFO" in proc.stdout.replace("\n", " ")
    assert "Traceback" not in proc.stderr


@pytest.mark.mpi
def test_a_datatype_freed_while_recording_is_off_is_not_sized_from_the_cache(program, tmp_path):
    exe = tmp_path / "type_reuse"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(DATA / "type_reuse.c")], check=True, timeout=TIMEOUT)
    rc, profile, reason = run_profiled(mpirun_argv(2, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    sends = sorted((row[2], row[3], row[4]) for row in profile["calls"] if row[0] == 0 and row[1] == "MPI_Send")
    assert sends == [(4, 1, 8), (5, 1, 16)]  # (size bin, count, bytes): 8 B, then 16 B
    assert not [row for row in profile["calls"] if row[1] == "MPI_Type_free"]  # made while recording was off


@pytest.mark.mpi
def test_point_to_point_counts_alike_on_the_fast_and_the_out_of_line_path(program, tmp_path):
    """Sends on a communicator whose ranks are not world ranks, datatypes alternating and a
    0 count take the wrappers' out-of-line path; the rest the fast path: one record."""
    exe = tmp_path / "p2p_paths"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(DATA / "p2p_paths.c")], check=True, timeout=TIMEOUT)
    rc, profile, reason = run_profiled(mpirun_argv(2, exe), tmp_path / "profile.json", timeout=TIMEOUT)
    assert rc == 0 and profile is not None, reason
    for rank, call in ((0, "MPI_Send"), (1, "MPI_Recv")):
        rows = sorted((row[2], row[3], row[4]) for row in profile["calls"] if row[0] == rank and row[1] == call)
        assert rows == [(0, 1, 0), (3, 5, 20), (4, 2, 16)], (rank, rows)  # (size bin, count, bytes)
    assert [row for row in profile["matrix"]["p2p"]] == [[0, 1, 8, 36]]
