"""Each user error is one line on stderr with its documented exit status, no traceback, and
nothing left behind: no file, no folder, no database."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import fabricbench
from fabricbench.store import Measurement

DATA = Path(__file__).parent / "data"


def files_under(root: Path):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def one_error(proc, status: int, *words: str) -> str:
    """The single 'error:' line of a failed command, after checking its exit status."""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == status, (proc.returncode, proc.stdout, proc.stderr)
    assert len(errors) == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for w in words:
        assert w in errors[0], (w, errors[0])
    return errors[0]


@pytest.fixture
def stored(cli, tmp_path):
    store = fabricbench.open_db(str(cli.db))
    run = store.save_run([Measurement("bw", {"size": s, "ranks": 2}, "bandwidth", "MB/s", value=100.0 * s) for s in (1, 2, 4)],
                         label="a")
    return run


@pytest.mark.parametrize("args", [
    ("export", "1", "--format", "csv", "-o", "{missing}/x.csv"),
    ("report", "1", "-o", "{missing}/x.html"),
    ("report", "1", "--format", "markdown", "-o", "{missing}/x.md"),
    ("report", "1", "-o", "{tmp}/ok.html", "--plots-dir", "{missing}/plots"),
    ("scaling-report", "1", "-o", "{missing}/x.md"),
    ("profile", "--keep", "{missing}/p.json", "--", "true"),
], ids=["export", "report-html", "report-markdown", "plots-dir", "scaling-report", "profile-keep"])
def test_an_output_file_in_a_missing_folder(cli, stored, tmp_path, args):
    missing = tmp_path / "no" / "such"
    before = files_under(tmp_path)
    proc = cli(*[a.format(missing=missing, tmp=tmp_path) for a in args], check=False)
    one_error(proc, 2, f"the folder {missing} does not exist")
    assert files_under(tmp_path) == before


def test_report_into_an_existing_folder_creates_only_what_was_asked(cli, stored, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cli("report", "1", "--format", "markdown", "-o", str(out / "r.md"), "--plots-dir", str(out / "plots"))
    assert sorted(p.name for p in out.iterdir()) == ["plots", "r.md"]
    assert not [p for p in out.rglob("*.tmp")]


@pytest.mark.parametrize("args, status", [
    (("runs",), 0), (("runs", "--json"), 0), (("show", "1"), 1), (("export", "1"), 1), (("report", "1", "-o", "{tmp}/r.html"), 1),
    (("compare", "1", "2"), 1), (("scaling-report", "1"), 1), (("show-profile", "1"), 1), (("db", "path"), 0),
], ids=lambda v: "-".join(v) if isinstance(v, tuple) else str(v))
def test_read_only_commands_never_create_a_database(tmp_path, args, status):
    from conftest import Cli

    db = tmp_path / "new" / "dir" / "results.db"
    proc = Cli(db)(*[a.format(tmp=tmp_path) for a in args], check=False)
    assert proc.returncode == status and "Traceback" not in proc.stderr, proc.stderr
    if status:
        one_error(proc, status, f"no results database at {db}")
    assert not (tmp_path / "new").exists() and not (tmp_path / "r.html").exists()


def test_a_misspelt_benchmark(cli, stored):
    one_error(cli("show", "1", "--benchmark", "bandwith", check=False), 2, "no benchmark 'bandwith'", "did you mean 'bw'",
              "it has: bw")


@pytest.mark.parametrize("rate, hint", [("1gibit", "did you mean 1gbit?"), ("10gbt", "did you mean 10gbit?"), ("fast", "")])
def test_a_misspelt_link_rate(cli, rate, hint):
    proc = cli("lab", "up", "--nodes", "2", "--link", rate, "--name", "fbtypo", check=False)
    one_error(proc, 2, f"--link {rate}: not a lab link rate", "gbit", hint)


def test_an_odd_rank_count_for_a_pairing_benchmark(cli, tmp_path):
    proc = cli("run", "bw", "--np", "3", check=False)
    one_error(proc, 2, "bw", "needs an even rank count", "--np is 3", "use --np 2 or --np 4")
    assert not cli.db.exists()


def test_a_click_usage_error_is_still_usage(cli):
    proc = cli("show", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Missing argument" in proc.stderr


OMPI_CONFLICT = """--------------------------------------------------------------------------
Your job has requested more processes than the ppr for
this topology can support:

  App: /usr/bin/fabricbench-mpi
  Number of procs:  2
  PPR: 1:node

Please revise the conflict and try again.
--------------------------------------------------------------------------
"""


def test_the_launchers_whole_explanation_as_one_line():
    from fabricbench.launch.failure import explain_failure, explain_start_failure

    assert explain_failure(OMPI_CONFLICT) == "Please revise the conflict and try again."  # the old last word
    assert explain_start_failure(OMPI_CONFLICT) == (
        "Your job has requested more processes than the ppr for this topology can support: "
        "App: /usr/bin/fabricbench-mpi; Number of procs: 2; PPR: 1:node. Please revise the conflict and try again.")
    assert explain_start_failure("mpirun: error: no such host n9\n") == "mpirun: error: no such host n9"


@pytest.mark.mpi
def test_hostfile_and_ppn_that_conflict(cli, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=2\n")
    proc = cli("run", "latency", "--np", "2", "--hostfile", str(hosts), "--ppn", "1", "--sizes", "8:8", check=False)
    if "requested more processes" not in proc.stderr:
        pytest.skip(f"this MPI does not refuse the layout: {proc.stderr[-300:]}")
    line = one_error(proc, 1, "could not start through mpirun")
    assert "Number of procs: 2; PPR: 1:node" in line and "Please revise the conflict" in line
