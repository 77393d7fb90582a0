"""The Slurm pieces that need no cluster: srun's plugin list, the plugin choice, the job script,
the lab's slurm.conf, srun's command line, and the jobs table's migration."""
from __future__ import annotations

import sqlite3
import subprocess

import pytest

import fabricbench
from fabricbench.lab.core import Lab
from fabricbench.lab.slurm import config_text
from fabricbench.lab.spec import LabSpec
from fabricbench.launch.base import LaunchError, Layout
from fabricbench.launch.sbatch import BatchOptions, job_argv, script_text
from fabricbench.launch.slurm import allocation_facts, choose_mpi_plugin, parse_mpi_list
from fabricbench.store.schema import SCHEMA_VERSION

MPI_LIST_22_05 = """MPI plugin types are...
\tcray_shasta
\tnone
\tpmi2
\tpmix
specific pmix plugin versions available: pmix_v4
"""


def test_mpi_list_of_slurm_22_05_and_23():
    assert parse_mpi_list(MPI_LIST_22_05) == ["cray_shasta", "none", "pmi2", "pmix", "pmix_v4"]
    assert parse_mpi_list("srun: MPI types are...\nsrun: none\nsrun: mpi/pmi2\n") == ["none", "pmi2"]


def test_plugin_follows_the_mpi_library():
    offered = parse_mpi_list(MPI_LIST_22_05)
    assert choose_mpi_plugin("openmpi", offered) == "pmix"
    assert choose_mpi_plugin("openmpi", ["none", "pmi2"]) == "pmi2"
    assert choose_mpi_plugin("mpich", offered) == "pmi2"
    with pytest.raises(LaunchError, match="no MPI plugin"):
        choose_mpi_plugin("openmpi", ["none"])


def test_job_script_execs_this_fabricbench_with_the_database(tmp_path):
    text = script_text(["fabricbench", "health", "--launcher", "srun", "--label", "a b"],
                       BatchOptions(partition="debug", time="30", nodes=4), str(tmp_path / "slurm-%j.out"),
                       {"FABRICBENCH_DB": "sqlite:////shared/r b.db"})
    lines = text.splitlines()
    assert lines[0] == "#!/bin/sh"
    assert {"#SBATCH --partition=debug", "#SBATCH --time=30", "#SBATCH --nodes=4"} <= set(lines)
    assert "export FABRICBENCH_DB='sqlite:////shared/r b.db'" in lines
    assert lines[-1].startswith("exec ") and lines[-1].endswith("-m fabricbench health --launcher srun --label 'a b'")
    # The script is valid sh that runs the command it names.
    assert subprocess.run(["sh", "-n"], input=text, text=True).returncode == 0
    assert job_argv(["/opt/bin/fabricbench", "runs"])[1:] == ["-m", "fabricbench", "runs"]
    with pytest.raises(LaunchError):
        job_argv([])


def test_lab_slurm_conf_names_every_node_at_its_lab_address(tmp_path):
    lab = Lab("cfg", LabSpec(nodes=3, link="1gbit", subnet="10.219.0.0/24", slurm=True))
    text = config_text(lab, tmp_path)
    assert "SlurmctldHost=cfg-n1(10.219.0.1)" in text
    for i in (1, 2, 3):
        assert f"NodeName=cfg-n{i} NodeAddr=10.219.0.{i} " in text
    assert "PartitionName=lab Nodes=cfg-n1,cfg-n2,cfg-n3 Default=YES" in text
    for needed in ("ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", f"SlurmdSpoolDir={tmp_path}/spool/%n",
                   f"AuthInfo=socket={tmp_path}/munge/munge.socket"):
        assert needed in text
    assert lab.describe().endswith("Slurm, subnet 10.219.0.0/24")
    assert LabSpec.from_shape(lab.spec.shape()).slurm and "slurm" not in LabSpec(nodes=2).shape()


def test_allocation_facts_come_from_slurms_environment():
    assert allocation_facts({}) == {}
    facts = allocation_facts({"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-4]", "SLURM_JOB_NUM_NODES": "4",
                              "SLURM_CLUSTER_NAME": "c"})
    assert facts == {"job_id": "42", "nodelist": "n[1-4]", "nodes": 4, "cluster": "c"}


def test_srun_command_inside_an_allocation(monkeypatch):
    from fabricbench.launch import slurm
    from fabricbench.launch.srun import SrunLauncher

    monkeypatch.setenv("FABRICBENCH_LAB", "nolab")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "3")
    monkeypatch.setenv("FABRICBENCH_SRUN_MPI", "pmi2")
    monkeypatch.setattr(slurm.SlurmCluster, "tool", staticmethod(lambda name: f"/usr/bin/{name}"))
    argv = SrunLauncher(Layout(np=4)).command(["prog"])
    assert argv == ["/usr/bin/srun", "--mpi=pmi2", "--kill-on-bad-exit=1", "--ntasks", "4", "--nodes", "3", "prog"]
    argv = SrunLauncher(Layout(np=4, ppn=2, hosts=["a", "b"])).command(["prog"])
    assert argv[3:] == ["--ntasks", "4", "--nodes", "2", "--ntasks-per-node", "2", "--nodelist", "a,b", "prog"]
    scaled = SrunLauncher(Layout(np=2, extra_args=["--nodes", "2"])).command(["prog"])
    assert scaled.count("--nodes") == 1


def test_jobs_table_arrives_by_migration(tmp_path):
    path = tmp_path / "r.db"
    store = fabricbench.open_db(str(path))
    store.close()
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE slurm_jobs; UPDATE schema_version SET version = 3;")
    con.close()
    with pytest.raises(fabricbench.store.StoreError, match="db migrate"):
        fabricbench.open_db(str(path))
    store = fabricbench.open_db(str(path), migrate=True)
    assert store.schema_version() == SCHEMA_VERSION == 4
    job = store.add_slurm_job("12", "lab", "fabricbench runs", "/x.sbatch", "/x.out", {"nodes": 2})
    run = store.create_run(kind="benchmark")
    assert store.link_slurm_job("12", "lab", run.id) and not store.link_slurm_job("13", "lab", run.id)
    [again] = store.slurm_jobs()
    assert again.id == job.id and again.run_id == run.id and again.options == {"nodes": 2}


def test_jobs_without_an_answer_from_slurm_show_the_last_states(tmp_path, monkeypatch):
    from fabricbench.launch import sbatch
    from fabricbench.workflows.submit import list_jobs

    store = fabricbench.open_db(str(tmp_path / "r.db"))
    store.add_slurm_job("12", None, "fabricbench runs", None, None, {}, state="RUNNING")

    def unreachable(_cluster):
        raise LaunchError("squeue failed: Unable to contact slurm controller")

    monkeypatch.setattr(sbatch, "job_states", unreachable)
    views, stale = list_jobs(store)
    assert [v.state for v in views] == ["RUNNING"] and "did not answer" in stale
    monkeypatch.setattr(sbatch, "job_states", lambda _c: {"12": "COMPLETED"})
    views, stale = list_jobs(store)
    assert views[0].state == "COMPLETED" and stale is None and store.slurm_jobs()[0].state == "COMPLETED"
    monkeypatch.setattr(sbatch, "job_states", lambda _c: {})
    assert list_jobs(store)[0][0].state == "COMPLETED"  # forgotten by Slurm after it ended: stays as it ended
