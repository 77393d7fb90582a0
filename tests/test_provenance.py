"""Provenance of this machine: the facts the seeds' configuration tables list."""
import json
import subprocess
import sys

import pytest

from fabricbench import provenance


@pytest.mark.mpi
def test_collect_has_the_listed_fields():
    facts = provenance.collect()
    for key in ("hostname", "cpu", "memory_bytes", "numa_nodes", "kernel", "os", "mpi", "compiler", "env",
                "infiniband", "net", "module_params"):
        assert key in facts, key
    assert facts["cpu"]["model"] and facts["cpu"]["threads"] >= 1 and facts["cpu"]["cores"] >= 1
    assert facts["memory_bytes"] > 2**30
    assert "Open MPI" in facts["mpi"]["version"] or "HYDRA" in facts["mpi"]["version"]
    assert isinstance(facts["net"], list)


def test_tuning_environment_keeps_tuning_and_drops_launcher_noise():
    env = {"UCX_TLS": "rc", "OMPI_MCA_btl": "tcp,self", "OMPI_COMM_WORLD_RANK": "0", "PATH": "/bin", "HFI_NO_CPUAFFINITY": "1"}
    assert provenance.tuning_environment(env) == {"HFI_NO_CPUAFFINITY": "1", "OMPI_MCA_btl": "tcp,self", "UCX_TLS": "rc"}


def test_digest_ignores_hostname_and_differing_facts_are_listed():
    a = provenance.collect()
    b = json.loads(json.dumps(a))
    b["hostname"] = "other"
    assert provenance.digest(a) == provenance.digest(b)
    b["env"]["UCX_TLS"] = "ud"
    assert provenance.digest(a) != provenance.digest(b)
    diff = provenance.differing_facts([a, b])
    assert list(diff) == ["env.UCX_TLS"]


def test_module_entry_point_prints_one_json_line():
    out = subprocess.run([sys.executable, "-m", "fabricbench.provenance"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["hostname"]
