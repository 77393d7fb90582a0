"""NetPIPE run here over loopback (NPtcp) and shared memory (NPopenmpi, 2 ranks), then
imported: the stored values are the ones in the np.out file NetPIPE wrote."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from fabricbench.importers import import_file
from fabricbench.importers.base import MIBIT_PER_S


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_against_file(path):
    parsed = import_file(str(path))
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    lat = [m for m in parsed.measurements if m.metric == "latency"]
    bw = [m for m in parsed.measurements if m.metric == "bandwidth"]
    assert len(lat) == len(bw) == len(rows) > 10
    for (size, mbps, seconds), t, b in zip(rows, lat, bw):
        assert t.params == b.params == {"size": int(size), "ranks": 2}
        assert t.value == pytest.approx(float(seconds) * 1e6) and t.unit == "us"
        assert b.value == pytest.approx(float(mbps) * MIBIT_PER_S) and b.unit == "MB/s"
    return parsed


@pytest.mark.skipif(not shutil.which("NPtcp"), reason="needs NetPIPE (Debian netpipe-tcp)")
def test_nptcp_over_loopback(tmp_path):
    port = str(free_port())
    sizes = ["-u", "1024", "-n", "20"]  # up to 1 KiB, 20 repeats each: a second, not NetPIPE's minute
    receiver = subprocess.Popen(["NPtcp", "-P", port, *sizes], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = tmp_path / "np.out"
        subprocess.run(["NPtcp", "-h", "127.0.0.1", "-P", port, *sizes, "-o", str(out)], cwd=tmp_path,
                       check=True, timeout=120, capture_output=True)
        check_against_file(out)
    finally:
        receiver.kill()
        receiver.wait(timeout=10)


@pytest.mark.mpi
@pytest.mark.openmpi
@pytest.mark.skipif(not shutil.which("NPopenmpi"), reason="needs NetPIPE (netpipe-openmpi)")
def test_npopenmpi_two_ranks(tmp_path):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = tmp_path / "np.out"
    subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "NPopenmpi", "-u", "1024", "-n", "20", "-o", str(out)],
                   cwd=tmp_path, check=True, timeout=120, capture_output=True, env=env)
    check_against_file(out)
