"""Two MPIs side by side (Open MPI and MPICH): each build runs only under its own launcher,
provenance says which MPI and launcher ran, Hydra's report of a dead rank names it, and
compare across the two MPIs flags the library before it compares the points.

Builds are found where `make` puts them (the package's own, <venv>/native/<mpi>) or where
FABRICBENCH_TEST_NATIVE_OPENMPI / FABRICBENCH_TEST_NATIVE_MPICH point (developer builds).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Optional

import pytest

from fabricbench.launch.failure import explain_failure, find_dead_rank
from fabricbench.launch.mpi import TOOLS, detect_mpi
from fabricbench.native import find_native
from fabricbench.store import open_db

pytestmark = pytest.mark.mpi
FAMILIES = ("openmpi", "mpich")


def native_build(family: str) -> Optional[Path]:
    """A native build for `family` (its share/mpi.json says so), or None."""
    override = os.environ.get(f"FABRICBENCH_TEST_NATIVE_{family.upper()}")
    return find_native(family, *([Path(override)] if override else []))


def launcher_installed(family: str) -> bool:
    return any(shutil.which(name) for name in TOOLS[family]["mpiexec"])


def run_id(out: str) -> int:
    return int(out.split("run ")[1].split()[0])


def test_a_build_for_one_mpi_is_refused_under_the_others_launcher(cli, monkeypatch, tmp_path):
    running = detect_mpi().flavour
    other = "mpich" if running == "openmpi" else "openmpi"
    build = native_build(other)
    if build is None:  # no real build for the other MPI here: this MPI's engine, labelled as built for the other
        build = tmp_path / "native"
        (build / "bin").mkdir(parents=True)
        (build / "share").mkdir()
        (build / "bin" / "fabricbench-mpi").symlink_to(native_build(running) / "bin" / "fabricbench-mpi")
        (build / "share" / "benchmarks.jsonl").symlink_to(native_build(running) / "share" / "benchmarks.jsonl")
        (build / "share" / "mpi.json").write_text(json.dumps({"flavour": other, "library": f"{other} 9.9",
                                                              "mpicc": f"/opt/{other}/bin/mpicc"}))
    monkeypatch.setenv("FABRICBENCH_NATIVE_DIR", str(build))
    proc = cli("run", "latency", "--np", "2", "--sizes", "0:8", check=False)
    assert proc.returncode != 0
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message
    family = {"openmpi": "Open MPI", "mpich": "MPICH"}
    assert "was built against" in message and family[running] in message and str(build) in message, message
    assert f"FABRICBENCH_MPI={other}" in message, message
    assert open_db(str(cli.db)).list_runs() == []  # refused before anything started


def test_provenance_names_the_mpi_and_its_launcher(cli):
    out = cli("run", "latency", "--np", "2", "--sizes", "0:8", "--time-budget", "0.02").stdout
    run = open_db(str(cli.db)).get_run(run_id(out))
    mpi = detect_mpi()
    assert run.provenance["mpi_launcher"] == {"family": mpi.flavour, "path": mpi.mpirun, "version": mpi.version}
    assert run.provenance["mpi_build"]["flavour"] == mpi.flavour
    assert run.provenance["launch"][0] == mpi.mpirun
    library = {"openmpi": "Open MPI", "mpich": "MPICH"}[mpi.flavour]
    assert library in run.provenance["mpi_library"]


def test_a_profile_run_records_the_mpi_launcher_and_host_facts_an_engine_run_does(cli):
    """One provenance collection for every run kind, under either MPI: a profile run of a program
    started by hand with the launcher says which MPI, launcher and command ran, as an engine run does."""
    from conftest import mpirun_argv
    from fabricbench.native import engine_path
    from fabricbench.workflows.hosts import RUN_FACTS

    engine = run_id(cli("run", "latency", "--np", "2", "--sizes", "0:8", "--time-budget", "0.02").stdout)
    argv = mpirun_argv(2, engine_path(), "latency", "--sizes", "0:8", "--iterations", "20")
    cli("profile", "--", *argv)
    db = open_db(str(cli.db))
    (prof,) = db.list_runs(kind="profile")
    eng = db.get_run(engine)
    assert set(RUN_FACTS) <= set(prof.provenance), sorted(prof.provenance)
    for key in ("mpi_library", "mpi_launcher", "launcher", "hosts", "nodes"):
        assert prof.provenance[key] == eng.provenance[key], (key, prof.provenance[key], eng.provenance[key])
    assert prof.provenance["launch"] == [str(a) for a in argv]
    library = {"openmpi": "Open MPI", "mpich": "MPICH"}[detect_mpi().flavour]
    assert library in prof.provenance["mpi_library"]
    differing = json.loads(cli("compare", str(eng.id), str(prof.id), "--json").stdout)["comparability"]["differences"]
    # The programs differ and the engine run's own --repeat; no host, MPI or launcher fact.
    assert {d["key"] for d in differing} <= {"launch", "provenance.repeat"}, differing


def test_a_killed_rank_is_named_with_rank_and_host(db_path):
    from fabricbench.launch import Layout, get_launcher
    from fabricbench.suite import Step
    from fabricbench.workflows.engine import measure
    from fabricbench.workflows.session import RunFailed

    store = open_db(str(db_path))
    steps = [Step("latency", "0:1M", ("--iterations", "50", "--test-die-after", "3"))]
    with pytest.raises(RunFailed) as failed:
        measure(store, get_launcher("mpirun", Layout(np=3)), steps)
    host = os.uname().nodename
    message = str(failed.value)
    # Hydra SIGKILLs the survivors, often before they end on their own: then only the host is certain.
    ambiguous = detect_mpi().flavour == "mpich" and f"a rank on host {host} died (signal 9" in message
    assert f"rank 2 on host {host} died (signal 9" in message or ambiguous, message
    (run,) = store.list_runs()
    # the points measured are kept (Hydra may end the job before the last one printed reached us)
    assert run.status == "failed" and 1 <= store.count_measurements(run.id) <= 3


# What Hydra (MPICH 4.0.2's mpiexec) printed on its stdout for a killed rank, captured on this machine.
HYDRA_KILLED = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 30345 RUNNING AT n2
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
This typically refers to a problem with your application.
Please see the FAQ page for debugging suggestions
"""


def codes(text: str) -> str:
    return HYDRA_KILLED + "[mpiexec@n1] Exit codes: " + text


def test_hydra_reports_name_the_rank_from_the_exit_codes():
    hosts = ["n1", "n2", "n1", "n2"]
    assert explain_failure(codes("[n1] 0,0\n[n2] 0,9\n"), hosts) == "rank 3 on host n2 died (signal 9, Killed)"
    # A status other than Hydra's own SIGKILL of the survivors is the cause, wherever it is.
    segv = find_dead_rank(codes("[n1] 9,11\n[n2] 9,9\n"), hosts)
    assert (segv.rank, segv.host, segv.code) == (2, "n1", 11)
    # Two ranks SIGKILLed: which one died first, the statuses cannot tell; the host they can.
    both = find_dead_rank(codes("[n1] 0,0\n[n2] 9,9\n"), hosts)
    assert (both.rank, both.host, both.code) == (None, "n2", 9)
    assert explain_failure(HYDRA_KILLED) == "a rank on host n2 died (signal 9, Killed)"  # the banner alone
    exited = find_dead_rank("[mpiexec@vm] Exit codes: [vm] 0,768\n")
    assert (exited.how, exited.rank, exited.host, exited.code) == ("exit", 1, "vm", 3)


@pytest.mark.skipif(not all(native_build(f) for f in FAMILIES) or not all(launcher_installed(f) for f in FAMILIES),
                    reason="needs builds for Open MPI and MPICH (make native MPI=mpich) and both launchers")
def test_compare_across_the_two_mpis_flags_the_library_then_compares_points(cli, monkeypatch):
    runs = {}
    for family in FAMILIES:
        monkeypatch.setenv("FABRICBENCH_MPI", family)
        monkeypatch.setenv("FABRICBENCH_NATIVE_DIR", str(native_build(family)))
        out = cli("run", "latency", "--np", "2", "--sizes", "0:64", "--time-budget", "0.05", "--label", family).stdout
        runs[family] = run_id(out)
    data = json.loads(cli("compare", str(runs["openmpi"]), str(runs["mpich"]), "--json").stdout)
    differences = {d["label"]: (d["a"], d["b"]) for d in data["comparability"]["differences"]}
    assert "Open MPI" in differences["MPI library"][0] and "MPICH" in differences["MPI library"][1], differences
    assert "HYDRA" in differences["MPI launcher"][1], differences
    points = data["series"][0]["points"]
    assert [p["size"] for p in points] == [0] + [1 << k for k in range(7)]
    assert all(p["ratio"] > 0 for p in points)
    text = cli("compare", str(runs["openmpi"]), str(runs["mpich"])).stdout
    assert "MPI library" in text and "latency" in text


@pytest.fixture(scope="module")
def four_nodes():
    """A lab of four nodes at 200mbit, shared by the lab tests here (three or more ranks over the
    lab once hung in MPICH's MPI_Finalize about every other run: native/common/fb_quiesce.c)."""
    from fabricbench.lab import Lab, LabSpec
    from fabricbench.lab import core as lab_core

    name = f"fm{os.getpid() % 100000:05d}"
    lab = Lab.up(LabSpec(nodes=4, link="200mbit"), name)
    try:
        yield lab
    finally:
        lab_core.down(name)


@pytest.mark.lab
def test_a_lab_run_reaches_every_node_through_the_selected_launcher(cli, monkeypatch, four_nodes):
    """Four lab nodes, one rank each (Hydra's rsh launcher for MPICH, Open MPI's plm rsh otherwise):
    the ranks run on every node and the bandwidth is held to the shaped link, so the traffic
    crossed it instead of going through shared memory."""
    from fabricbench.lab import tcp_goodput

    lab = four_nodes
    monkeypatch.setenv("FABRICBENCH_LAB", lab.name)
    out = cli("run", "latency", "bw", "--launcher", "lab", "--sizes", "8:64K", "--time-budget", "0.05",
              "--timeout", "300").stdout
    run = open_db(str(cli.db)).get_run(run_id(out))
    assert run.status == "complete"
    assert run.provenance["hosts"] == lab.node_names and run.provenance["nodes"] == 4
    assert run.provenance["mpi_launcher"]["family"] == detect_mpi().flavour
    peak = max(m.value for m in open_db(str(cli.db)).measurements(run.id, benchmark="bw"))
    # Shared memory would carry hundreds of times the link; the lab's shaping lets no window pass
    # above the line (lab/rates.py), so the rate over all iterations stays at or below it.
    line = 200e6 / 8 / 1e6
    assert peak <= 1.03 * line, f"{peak:.1f} MB/s over a 200mbit link ({line:.1f} MB/s line): not through the lab"


@pytest.mark.lab
def test_a_profiled_program_runs_over_the_lab_and_finalizes(cli, monkeypatch, four_nodes):
    """The profiler gathers at MPI_Finalize, where rank 0 writes while the others wait: the program
    still ends on every node, and the profile names the four lab hosts."""
    from fabricbench.native import engine_path

    lab = four_nodes
    monkeypatch.setenv("FABRICBENCH_LAB", lab.name)
    out = cli("profile", "--launcher", "lab", "--timeout", "300", "--", str(engine_path()), "allreduce",
              "--sizes", "8:1K", "--iterations", "50").stdout
    assert "profile stored as run" in out
    db = open_db(str(cli.db))
    (run,) = db.list_runs()
    assert run.kind == "profile" and run.status == "complete" and run.ranks == 4
    profile = db.artifact(run.id, "profile")
    assert sorted(r["host"] for r in profile["rank_info"]) == lab.node_names, profile["rank_info"]
