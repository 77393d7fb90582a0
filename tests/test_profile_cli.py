"""`fabricbench profile` / `show-profile` and the report's profile section, end to end."""
import json

import pytest

from conftest import MPICC, mpirun_argv
from fabricbench.native import engine_path
from fabricbench.store import open_db


@pytest.fixture(autouse=True)
def root_mpirun(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


@pytest.mark.mpi
def test_profile_engine_store_show_and_report(cli, db_path, tmp_path):
    engine = str(engine_path())
    out = cli("profile", "--label", "engine latency", "--tag", "app=engine", "--",
              *mpirun_argv(2), engine, "latency", "--sizes", "0:1K", "--iterations", "200").stdout
    assert "profile stored as run 1" in out and "of overall runtime spent in MPI" in out
    db = open_db(str(db_path))
    run = db.get_run(1)
    assert run.kind == "profile" and run.status == "complete" and run.ranks == 2 and run.tags == {"app": "engine"}
    calls = {}
    for m in db.measurements(run.id):
        calls[m.params["call"]] = calls.get(m.params["call"], 0) + m.n
    # The ping-pong: 200 timed (plus warm-up) Sends and Recvs per size on each rank, 11 sizes 0..1K.
    assert calls["MPI_Send"] >= 2 * 11 * 200 and calls["MPI_Recv"] >= 2 * 11 * 200
    assert db.artifact(run.id, "profile")["ranks"] == 2

    shown = cli("show-profile", "1").stdout
    assert "MPI profile: 2 ranks" in shown and "Top MPI calls by time" in shown and "MPI_Send" in shown
    summary = json.loads(cli("show-profile", "1", "--json").stdout)["summary"]
    assert summary["ranks"] == 2 and {c["call"] for c in summary["top_calls"]} & {"MPI_Send", "MPI_Recv"}

    report = tmp_path / "r.html"
    cli("report", "1", "-o", str(report))
    html = report.read_text()
    assert "MPI profile: engine latency" in html
    assert html.count("data:image/svg+xml;base64") >= 3 and "could not be built" not in html


@pytest.mark.mpi
def test_a_failing_program_produces_no_profile_and_says_why(cli, db_path):
    proc = cli("profile", "--", *mpirun_argv(2), "sh", "-c", "exit 3", check=False)
    assert proc.returncode == 1
    assert "no profile was produced" in proc.stderr and "Traceback" not in proc.stderr
    assert open_db(str(db_path)).list_runs() == []


@pytest.mark.mpi
def test_profile_with_a_launcher_starts_the_ranks_itself(cli, db_path):
    """--launcher/--np: COMMAND is the program alone, started as `run` starts the engine, and the
    run records the launcher; launch options without --launcher are a usage error."""
    out = cli("profile", "--launcher", "mpirun", "--np", "2", "--", str(engine_path()), "latency",
              "--sizes", "0:64", "--iterations", "50").stdout
    assert "profile stored as run 1" in out
    run = open_db(str(db_path)).get_run(1)
    assert run.kind == "profile" and run.ranks == 2 and run.provenance["launcher"] == "mpirun"
    assert run.command.split()[0].endswith("mpirun")
    proc = cli("profile", "--np", "2", "--", "true", check=False)
    assert proc.returncode == 2 and "go with --launcher" in proc.stderr


def test_show_profile_of_a_benchmark_run_is_refused(cli, db_path):
    db = open_db(str(db_path))
    db.finish_run(db.create_run(label="not a profile").id, "complete")
    proc = cli("show-profile", "1", check=False)
    assert proc.returncode == 2 and "not a profile" in proc.stderr


@pytest.mark.mpi
def test_show_profile_by_callsite_and_phases(cli, db_path, tmp_path):
    from pathlib import Path
    import re
    import subprocess

    source = Path(__file__).parent / "data" / "profiler" / "callsites.c"
    exe = tmp_path / "callsites"
    subprocess.run([MPICC, "-g", "-O1", "-pthread", "-o", str(exe), str(source)], check=True, timeout=120)
    line = next(no for no, text in enumerate(source.read_text().splitlines(), 1) if "site: global_sum" in text)
    cli("profile", "--", *mpirun_argv(2), str(exe))

    shown = cli("show-profile", "1", "--by", "callsite").stdout
    assert "MPI time by call site" in shown and f"global_sum (callsites.c:{line})" in shown
    assert re.search(r"MPI_Allreduce\s.*global_sum", shown)
    phases = cli("show-profile", "1", "--phases").stdout
    assert "marked by the program's MPI_Pcontrol calls" in phases and "Phase 1" in phases
    assert "of MPI time" in phases and "MPI_Pcontrol(3)" in phases
    data = json.loads(cli("show-profile", "1", "--by", "callsite", "--phases", "--json").stdout)
    assert {s["function"] for s in data["callsites"]["sites"]} >= {"halo_exchange", "global_sum", "share_config"}
    assert data["phases"]["method"] == "pcontrol" and len(data["phases"]["phases"]) >= 3

    report = tmp_path / "r.html"
    cli("report", "1", "-o", str(report))
    html = report.read_text()
    assert "MPI time by call site" in html and "share_config (callsites.c:" in html
    assert "Phases of the run, split at the program&#39;s MPI_Pcontrol calls" in html or \
        "Phases of the run, split at the program's MPI_Pcontrol calls" in html


def test_call_sites_of_an_mpip_import(cli, db_path):
    from pathlib import Path

    report = Path(__file__).parent / "data" / "import" / "mpip_known_calls_4ranks.mpiP"
    cli("import", str(report))
    shown = cli("show-profile", "1", "--by", "callsite", "--phases").stdout
    assert "main (known_calls.c:98)" in shown and "MPI_Barrier" in shown  # mpiP's own resolution
    assert "no time windows" in shown and "Traceback" not in shown
