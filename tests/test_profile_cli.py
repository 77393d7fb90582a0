"""`fabricbench profile` / `show-profile` and the report's profile section, end to end."""
import json

import pytest

from conftest import mpirun_argv
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


def test_show_profile_of_a_benchmark_run_is_refused(cli, db_path):
    db = open_db(str(db_path))
    db.finish_run(db.create_run(label="not a profile").id, "complete")
    proc = cli("show-profile", "1", check=False)
    assert proc.returncode == 2 and "not a profile" in proc.stderr
