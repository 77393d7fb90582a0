"""mpiP reports: the known-calls program's report imports with the counts fabricbench's own
profiler measures for the same program, and the stored profile works where a native one does.

``tests/data/import/mpip_known_calls_4ranks.mpiP`` is the report mpiP writes for
``tests/data/profiler/known_calls.c`` on 4 ranks (laid out after mpiP's report.c, see the
data README). The program runs here under libfabricbench-prof (real MPI, 4 ranks) and
both profiles are compared call by call and rank by rank.
"""
from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import MPICC, mpirun_argv
from fabricbench.cli import main
from fabricbench.importers import ImportFormatError, import_file
from fabricbench.native import profiler_library
from fabricbench.analysis.profile import summarize
from fabricbench.workflows.profile import run_profiled

DATA = Path(__file__).parent / "data"
REPORT = DATA / "import" / "mpip_known_calls_4ranks.mpiP"
LOCAL_ONLY_IN_MPIP: set = set()  # fabricbench's profiler now counts MPI_Comm_rank and MPI_Comm_size too, as mpiP does


def per_rank_counts(profile) -> Counter:
    counts: Counter = Counter()
    for rank, call, _bin, count, *_rest in profile["calls"]:
        counts[(rank, call)] += count
    return counts


@pytest.fixture(scope="module")
def native_profile(tmp_path_factory):
    profiler_library()  # MPI and the native parts: the `mpi` marker (tests/conftest.py)
    tmp = tmp_path_factory.mktemp("known_calls_mpip")
    exe = tmp / "known_calls"
    subprocess.run([MPICC, "-O1", "-o", str(exe), str(DATA / "profiler" / "known_calls.c")], check=True, timeout=120)
    rc, profile, reason = run_profiled(mpirun_argv(4, exe), tmp / "profile.json", timeout=120)
    assert rc == 0 and profile is not None, reason
    return profile


@pytest.fixture(scope="module")
def imported():
    return import_file(str(REPORT))


@pytest.mark.mpi
def test_the_report_imports_with_the_counts_fabricbench_measures(native_profile, imported):
    mpip = per_rank_counts(imported.artifacts["profile"])
    native = per_rank_counts(native_profile)
    assert native, "the native profile recorded calls"
    for key, count in native.items():
        assert mpip.get(key) == count, f"{key}: mpiP report {mpip.get(key)}, fabricbench {count}"
    assert {call for _rank, call in set(mpip) - set(native)} == LOCAL_ONLY_IN_MPIP
    # by function, summed over ranks, as show-profile lists them
    by_call = {c["call"]: c["count"] for c in summarize(imported.artifacts["profile"], top=100)["top_calls"]}
    for c in summarize(native_profile, top=100)["top_calls"]:
        assert by_call[c["call"]] == c["count"], c["call"]


def test_the_profile_has_fabricbench_profile_shape(imported):
    profile = imported.artifacts["profile"]
    assert imported.kind == "profile" and imported.tool_version == "3.5.0" and imported.ranks == 4
    assert profile["format"] == "fabricbench-mpi-profile" and profile["source"] == "mpiP"
    assert profile["command"] == ["./known_calls"] and profile["hosts"] == ["vm"]
    # per rank: app and MPI time from the report's MPI Time table (%g, 3 significant digits)
    lines = REPORT.read_text().splitlines()
    table = lines[lines.index("Task    AppTime    MPITime     MPI%") + 1:][:4]
    for info, row in zip(profile["rank_info"], table):
        task, app, mpi, _pct = row.split()
        assert (info["rank"], info["app_time"], info["mpi_time"]) == (int(task), float(app), float(mpi))
    # per call: count, time, bytes and the size bin (MPI_Send of rank 0: 5 x 800 B at line 24, 1 x 8 B at line 101)
    sends = {c[2]: c for c in profile["calls"] if c[0] == 0 and c[1] == "MPI_Send"}
    assert sends[10][3:5] == [5, 4000] and sends[4][3:5] == [1, 8]
    assert all(c[5] >= 0 and c[6] <= c[7] for c in profile["calls"])
    receives = [c for c in profile["calls"] if c[1] == "MPI_Recv"]
    assert receives and all(c[2] == 0 and c[4] == 0 for c in receives), "mpiP counts no bytes for a receive"
    assert profile["matrix"] == {"p2p": [], "rma": [], "coll": []} and "matrix_note" in profile


def test_call_sites_keep_file_line_and_function(imported):
    sites = {s["site"]: s for s in imported.artifacts["profile"]["callsites"]}
    assert len(sites) == 30
    source = (DATA / "profiler" / "known_calls.c").read_text().splitlines()
    for site in sites.values():
        (frame,) = site["frames"]
        assert frame["file"] == "known_calls.c" and frame["function"] == "main"
        assert site["call"] + "(" in source[frame["line"] - 1], (site["call"], frame["line"])
    assert (sites[3]["call"], sites[3]["count"], sites[3]["bytes"]) == ("MPI_Send", 5, 4000)
    assert sites[13]["count"] == 8 and sites[13]["bytes"] == 4 * 16380  # mpiP prints 16384 as 1.638e+04


def test_stored_profile_works_in_show_profile_and_the_report(tmp_path):
    db = str(tmp_path / "results.db")
    runner = CliRunner()
    out = runner.invoke(main, ["--db", db, "import", str(REPORT), "--tag", "app=known_calls", "--json"],
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)[0]["run"]
    shown = runner.invoke(main, ["--db", db, "show-profile", str(run)], catch_exceptions=False)
    assert shown.exit_code == 0 and "MPI_Barrier" in shown.stdout and "4 ranks" in shown.stdout
    html = tmp_path / "report.html"
    report = runner.invoke(main, ["--db", db, "report", str(run), "-o", str(html)], catch_exceptions=False)
    assert report.exit_code == 0, report.output
    text = html.read_text()
    assert "MPI profile" in text and "MPI_Barrier" in text


def test_a_concise_report_is_refused_with_the_reason(tmp_path):
    text = REPORT.read_text().replace("@--- MPI Time (seconds) -----", "@--- Task Time Statistics (seconds) -----")
    path = tmp_path / "concise.mpiP"
    path.write_text(text)
    with pytest.raises(ImportFormatError, match="concise mpiP report"):
        import_file(str(path))
