"""`fabricbench scale` end to end: the Jacobi mini-app compiled with mpicc and run at 1, 2 and 4
ranks through the real CLI; failed repetitions, timeouts, Ctrl-C; the lab when it exists."""
import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from proc_table import processes

from conftest import MPICC, reaped
from fabricbench.store import open_db

DATA = Path(__file__).parent / "data" / "scaling"
FOM = r"FOM: ([0-9.]+) Mcells/s"

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def jacobi(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jacobi") / "jacobi"
    subprocess.run([MPICC, "-O2", "-o", str(out), str(DATA / "jacobi.c")], check=True, capture_output=True, timeout=120)
    return out


def scale_items(db_path, run_id, metric=None):
    return [m for m in open_db(str(db_path)).measurements(run_id, benchmark="scale") if metric in (None, m.metric)]


def test_jacobi_strong_scaling_study_and_report(cli, db_path, jacobi, tmp_path):
    marker = tmp_path / "fail-once"
    marker.write_text("")  # the first repetition (1 rank) exits 3 and removes it
    out = cli(
        "scale", "--np-list", "1,2,4", "--repeat", "2", "--fom", FOM, "--fom-unit", "Mcells/s",
        "--label", "jacobi", "--tag", "fabric=shm",
        "--", str(jacobi), "-n", "512", "-i", "100", "--fail-marker", str(marker),
    )
    assert "5 of 6 repetitions succeeded" in out.stdout and "failed" in out.stdout
    db = open_db(str(db_path))
    (run,) = db.list_runs(kind="scaling")
    assert run.status == "complete" and "1 of 6 repetitions failed" in run.message
    assert run.tags == {"fabric": "shm"} and run.label == "jacobi"
    study = run.provenance["study"]
    assert study["primary_metric"] == "fom" and study["repeat"] == 2 and study["metrics"] == ["time", "fom"]
    assert [p["ranks"] for p in study["points"]] == [1, 2, 4]
    assert run.provenance["launch"][-1] == str(marker) and db.hosts(run.id)  # provenance once per study

    items = scale_items(db_path, run.id)
    assert len(items) == 12  # 3 scales x 2 repetitions x (time, fom)
    for m in items:
        assert set(m.params) == {"nodes", "ranks", "ppn", "repetition", "size"} and m.params["size"] is None
        assert m.params["nodes"] == 1
    failed = [m for m in items if m.detail["status"] == "failed"]
    assert {(m.params["ranks"], m.params["repetition"], m.metric) for m in failed} == {(1, 1, "time"), (1, 1, "fom")}
    assert all(m.value is None and m.detail["exit_status"] == 3 and "failing on purpose" in m.detail["reason"] for m in failed)
    good = [m for m in items if m.detail["status"] == "ok"]
    assert all(m.value > 0 and m.detail["exit_status"] == 0 for m in good)
    assert {m.unit for m in good if m.metric == "fom"} == {"Mcells/s"}
    assert all(m.detail["higher_is_better"] is True for m in good if m.metric == "fom")

    data = json.loads(cli("scaling-report", str(run.id), "--format", "json").stdout)
    (s,) = data["series"]
    assert s["axis"] == "ranks" and s["metric"] == "fom" and s["baseline"] == 1
    p1 = s["points"][0]
    assert p1["n"] == 1 and p1["failed"] == 1  # the failed repetition is out of the mean
    assert p1["mean"] == next(m.value for m in good if m.metric == "fom" and m.params["ranks"] == 1)
    assert p1["speedup"] == 1 and p1["efficiency"] == 1
    assert all(0 < p["efficiency"] <= 1.5 for p in s["points"])
    assert s["failures"][0]["reason"].startswith("exit status 3")
    assert s["model"] is not None  # three scales: a model is fitted (what it says depends on the load)

    for metric in ("fom", "time"):
        text = cli("scaling-report", str(run.id), "--metric", metric).stdout
        assert "Efficiency" in text and "Speedup" in text and "failing on purpose" in text
    html = tmp_path / "jacobi.html"
    cli("scaling-report", str(run.id), "-o", str(html), "--plot-format", "png")
    assert html.read_text().count("<img") == 3  # time, speedup, efficiency (no second series to compare)


def test_nodes_with_ppn_locally_and_wall_time(cli, db_path, jacobi):
    cli("scale", "--nodes", "1,2", "--ppn", "1", "--repeat", "1", "--", str(jacobi), "-n", "256", "-i", "20")
    run = open_db(str(db_path)).list_runs(kind="scaling")[0]
    items = scale_items(db_path, run.id)
    assert [(m.metric, m.params["nodes"], m.params["ranks"], m.params["ppn"]) for m in items] == [
        ("time", 1, 1, 1), ("time", 2, 2, 1)]
    assert all(m.unit == "s" and m.value > 0 for m in items)
    assert all(m.detail["resolution_s"] == 1e-6 for m in items)  # the launch's wall time, timed to the microsecond
    data = json.loads(cli("scaling-report", "last", "--format", "json").stdout)
    assert data["series"][0]["axis"] == "nodes" and data["series"][0]["points"][0]["efficiency"] == 1


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_timeout_and_missing_figure_are_failed_repetitions(cli, db_path, tmp_path):
    state = tmp_path / "state"
    app = write_script(
        tmp_path / "app.sh",
        f'n=$(cat {state} 2>/dev/null || echo 0); echo $((n+1)) > {state}\n'
        'case $n in 0) echo "FOM: 5 u";; 1) sleep 60;; *) echo "no figure here";; esac\n',
    )
    proc = cli("scale", "--np-list", "1", "--repeat", "3", "--timeout", "2", "--fom", r"FOM: (\d+)", "--time", "none",
               "--", str(app))
    assert "1 of 3 repetitions succeeded" in proc.stdout
    items = scale_items(db_path, 1)
    assert [m.metric for m in items] == ["fom"] * 3
    reasons = [m.detail.get("reason") for m in items]
    assert reasons[0] is None and items[0].value == 5
    assert reasons[1].startswith("timeout") and "figure of merit not found" in reasons[2]
    assert not _processes_matching(str(app))


def test_every_repetition_failing_fails_the_run(cli, db_path, tmp_path):
    app = write_script(tmp_path / "bad.sh", 'echo "solver diverged" >&2; exit 4\n')
    proc = cli("scale", "--np-list", "1", "--repeat", "2", "--", str(app), check=False)
    assert proc.returncode == 1 and "every repetition failed" in proc.stderr
    run = open_db(str(db_path)).get_run(1)
    assert run.status == "failed"
    assert all("solver diverged" in m.detail["reason"] for m in scale_items(db_path, 1))


def test_ctrl_c_keeps_finished_repetitions(cli, db_path, tmp_path):
    state = tmp_path / "state"
    app = write_script(tmp_path / "slow.sh", f'if [ -e {state} ]; then sleep 120; else touch {state}; echo ok; fi\n')
    p = cli.popen("scale", "--np-list", "1", "--repeat", "3", "--", str(app))
    with reaped(p):
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if db_path.exists() and state.exists():
                try:
                    con = sqlite3.connect(db_path, timeout=5)
                    n = con.execute("SELECT count(*) FROM measurements").fetchone()[0]
                    con.close()
                except sqlite3.OperationalError:
                    n = 0
                if n >= 1:
                    break
            time.sleep(0.1)
        time.sleep(1.0)  # the second repetition is sleeping now
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    run = open_db(str(db_path)).get_run(1)
    assert run.status == "interrupted" and "after 1 of 3 repetitions" in run.message
    (m,) = scale_items(db_path, 1)
    assert m.detail["status"] == "ok" and m.value > 0
    assert not _processes_matching(str(app))


def _processes_matching(text: str):
    return [pid for pid, cmdline, _cwd in processes() if text in cmdline]


def test_bad_arguments_are_refused_before_anything_runs(cli, db_path, tmp_path):
    for args, message in [
        (["--nodes", "1,x", "--", "true"], "'x' is not a positive whole number"),
        (["--nodes", "1,2", "--np-list", "1", "--", "true"], "same number of entries"),
        (["--np-list", "1", "--fom", "FOM", "--", "true"], "needs a capture group"),
        (["--np-list", "1", "--time", "none", "--", "true"], "nothing to record"),
        (["--nodes", "4", "--hosts", "a,b", "--", "true"], "--nodes 4 needs 4 hosts"),
    ]:
        proc = cli("scale", *args, check=False)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    assert not db_path.exists() or open_db(str(db_path)).list_runs() == []


@pytest.mark.lab
def test_jacobi_on_the_lab_uses_the_first_n_nodes(cli, db_path, jacobi, monkeypatch):
    from fabricbench.lab import lab_session

    monkeypatch.setenv("FABRICBENCH_LAB", "fbscal")
    with lab_session(nodes=2, link="1gbit", name="fbscal", subnet="10.213.93.0/24"):
        cli("scale", "--launcher", "lab", "--nodes", "1,2", "--repeat", "2", "--fom", FOM, "--fom-unit", "Mcells/s",
            "--tag", "fabric=lab-1g", "--", str(jacobi), "-n", "512", "-i", "50", timeout=300)
    run = open_db(str(db_path)).list_runs(kind="scaling")[0]
    assert run.status == "complete"
    assert run.provenance["launcher"] == "lab" and run.provenance["nodes"] == 2
    assert "fbscal-n1" in " ".join(run.provenance["launch"])
    items = scale_items(db_path, run.id, "fom")
    assert sorted({m.params["nodes"] for m in items}) == [1, 2] and all(m.value > 0 for m in items)
    data = json.loads(cli("scaling-report", str(run.id), "--format", "json").stdout)
    assert all(0 < p["efficiency"] <= 1.5 for p in data["series"][0]["points"])


def test_strict_makes_a_partial_failure_exit_1_and_keeps_the_run_complete(cli, db_path, tmp_path):
    state = tmp_path / "state"
    app = write_script(tmp_path / "flaky.sh", f'n=$(cat {state} 2>/dev/null || echo 0); echo $((n+1)) > {state}\n'
                       'test $n -eq 0 || { echo "rep $n failing" >&2; exit 5; }\n')
    proc = cli("scale", "--np-list", "1", "--repeat", "2", "--strict", "--", str(app), check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 of 2 repetitions succeeded" in proc.stdout
    assert "--strict: 1 of 2 repetitions of run 1 failed" in proc.stderr
    assert open_db(str(db_path)).get_run(1).status == "complete"
    state.unlink()
    proc = cli("scale", "--np-list", "1", "--repeat", "2", "--", str(app))  # without --strict: exit 0
    assert "1 of 2 repetitions succeeded" in proc.stdout
