"""One provenance collection for every run kind (workflows.hosts.run_provenance through
Session.record_provenance): an hpcc run and a profile run on the same hosts record the same
host, MPI, launcher and command facts, so comparing them finds no host difference."""
from __future__ import annotations

import json
import shutil
import socket

import pytest

from conftest import mpirun_argv
from fabricbench.native import engine_path
from fabricbench.store import open_db
from fabricbench.workflows.hosts import RUN_FACTS, local_provenance
from fabricbench.workflows.session import Session

# Facts that describe a host or the MPI it runs: none may differ between two runs on the same hosts.
HOST_FACTS = {"nodes", "cpu_model", "sockets", "cores", "threads", "governor", "memory", "numa_nodes", "os", "kernel",
              "mpi_library", "mpi_version", "mpi_standard", "compiler", "launcher", "mpi_launcher", "fabric", "link",
              "pcie", "firmware", "driver", "mtu"}


@pytest.fixture(autouse=True)
def root_mpirun(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


def test_collected_facts_stay_through_a_workflows_own_provenance_updates(db_path):
    store = open_db(str(db_path))
    with Session(store, kind="hpcc", provenance={"hpcc": {"n": 1}}) as s:
        s.record_provenance({"run": {"launcher": "mpirun", "mpi_library": "Open MPI v4.1.4", "launch": ["mpirun", "x"],
                                     "hosts": ["h1"]}, "hosts": [{"hostname": "h1", "cpu": {"model": "m"}}]})
        s.update(provenance={"hpcc": {"n": 2}, "hosts": ["h1"]})  # what a workflow does later, unaware of the facts
    run = open_db(str(db_path)).get_run(s.run_id)
    assert run.provenance["launcher"] == "mpirun" and run.provenance["mpi_library"] == "Open MPI v4.1.4"
    assert run.provenance["launch"] == ["mpirun", "x"] and run.provenance["hpcc"] == {"n": 2}
    assert "owner" in run.provenance
    assert [h.hostname for h in open_db(str(db_path)).hosts(run.id)] == ["h1"]


def test_local_provenance_is_this_hosts_facts():
    info = local_provenance()
    assert info["hosts"][0]["hostname"] == socket.gethostname() and info["hosts"][0]["cpu"]["model"] is not None
    assert "loadavg_1m" in info["run"]["host_load"]


@pytest.mark.openmpi
@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which("hpcc"), reason="needs Debian's hpcc (apt-get install hpcc)")
def test_an_hpcc_run_and_a_profile_run_on_the_same_hosts_differ_in_no_host_fact(cli, db_path, tmp_path):
    cli("hpcc", "--np", "2", "--n", "200", "--workdir", str(tmp_path / "hpcc"))
    cli("profile", "--", *mpirun_argv(2), str(engine_path()), "latency", "--sizes", "0:64", "--iterations", "50")
    store = open_db(str(db_path))
    hpcc, prof = store.get_run(1), store.get_run(2)
    assert (hpcc.kind, prof.kind) == ("hpcc", "profile")
    for run in (hpcc, prof):
        assert set(RUN_FACTS) <= set(run.provenance), (run.kind, sorted(run.provenance))
        assert run.provenance["mpi_library"] and run.provenance["launcher"] == "mpirun"
        assert run.provenance["launch"] and run.provenance["hosts"] == [socket.gethostname()]
        facts = [h.facts for h in store.hosts(run.id)]
        assert len(facts) == 1 and facts[0]["cpu"]["model"] and facts[0]["kernel"] and facts[0]["memory_bytes"]
    assert hpcc.provenance["mpi_library"] == prof.provenance["mpi_library"]

    comp = json.loads(cli("compare", "1", "2", "--json").stdout)["comparability"]
    differing = {d["key"] for d in comp["differences"]}
    assert not differing & HOST_FACTS, comp["differences"]
    assert differing <= {"launch"}, comp["differences"]  # the programs differ, nothing else
    text = cli("compare", "1", "2").stdout
    assert "CPU model" not in text and "MPI library" not in text
