"""Messages that name the real cause (issue 37): an unreachable ssh host, an MPI program's own
error under `profile`, and a quiet stop of `profile` on SIGTERM."""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from conftest import MPICC, mpirun_argv, reaped
from fabricbench.launch.failure import explain_exit, mpi_library_error, ssh_unreachable
from fabricbench.store import open_db


@pytest.fixture
def root_mpirun(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


@pytest.mark.parametrize("stderr, words", [
    ("ssh: connect to host 10.255.255.1 port 22: Connection timed out", "does not answer"),
    ("ssh: connect to host 10.1.1.1 port 22: No route to host", "no route"),
    ("ssh: Could not resolve hostname nodex: Name or service not known", "does not resolve"),
    ("ssh: connect to host h port 22: Connection refused", "refuses ssh"),
    ("root@h: Permission denied (publickey).", "refuses the login"),
])
def test_ssh_failures_are_classified(stderr, words):
    assert words in ssh_unreachable(255, stderr)
    assert ssh_unreachable(1, stderr) is None  # the remote command's own failure is not ssh's


def test_transfer_names_an_unreachable_host_not_a_missing_tool(monkeypatch):
    from fabricbench.launch.nodes import host_nodes
    from fabricbench.launch.procs import ProcessTimeout
    from fabricbench.workflows import transfer

    def fake_run_short(argv, timeout=None, **kw):
        assert argv[0] == "ssh" and "n9.invalid" in argv  # ssh is not started (and .invalid never resolves)
        return subprocess.CompletedProcess(argv, 255, "", "ssh: connect to host n9.invalid port 22: Connection timed out\n")

    monkeypatch.setattr(transfer, "run_short", fake_run_short)
    nodes = host_nodes(None)
    with pytest.raises(transfer.TransferCannotRun) as err:
        transfer._probe(nodes, nodes.node("n9.invalid"), ["id", "-u"], "id", "coreutils")
    text = str(err.value)
    assert "cannot reach host n9.invalid" in text and "does not answer" in text
    assert "install" not in text and "coreutils" not in text

    def fake_timeout(argv, timeout=None, **kw):
        raise ProcessTimeout.of(subprocess.TimeoutExpired(argv, timeout))

    monkeypatch.setattr(transfer, "run_short", fake_timeout)
    with pytest.raises(transfer.TransferCannotRun, match="host n9.invalid does not answer through ssh"):
        transfer._probe(nodes, nodes.node("n9.invalid"), ["id", "-u"], "id", "coreutils")


def test_the_mpi_librarys_own_error_is_quoted():
    ompi = ("[vm:11] *** An error occurred in MPI_Send\n[vm:11] *** reported by process [1,0]\n"
            "[vm:11] *** on communicator MPI_COMM_WORLD\n[vm:11] *** MPI_ERR_RANK: invalid rank\n"
            "[vm:11] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n")
    assert mpi_library_error(ompi) == "An error occurred in MPI_Send: MPI_ERR_RANK: invalid rank."
    mpich = "Abort(4) on node 0 (rank 0 in comm 0): Fatal error in internal_Send: Invalid rank, error stack:\n"
    assert mpi_library_error(mpich) == "Fatal error in internal_Send: Invalid rank"
    assert mpi_library_error("just a program's line\n") is None
    assert explain_exit(1, ompi).startswith("the command exited with status 1: MPI said: An error occurred")


AFTER_FINALIZE = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    MPI_Init(&argc, &argv);
    return 0;
}
"""

NOISY_ON_TERM = r"""
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
static void on_term(int sig) {
    (void)sig;
    static const char line[] = "[noise] backtrace frame of a dying rank\n";
    for (int i = 0; i < 20; i++) write(2, line, sizeof line - 1);
    _exit(1);
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    signal(SIGTERM, on_term);
    write(1, "ready\n", 6);
    for (;;) sleep(1);
}
"""


def _build(tmp_path, name, source):
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    exe = tmp_path / name
    subprocess.run([MPICC, "-o", str(exe), str(c)], check=True, timeout=120)
    return exe


@pytest.mark.mpi
def test_mpi_init_after_finalize_says_what_mpi_said_once(cli, db_path, tmp_path, root_mpirun):
    exe = _build(tmp_path, "twice", AFTER_FINALIZE)
    proc = cli("profile", "--", *mpirun_argv(2), str(exe), check=False, timeout=300)
    assert proc.returncode == 1
    last = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert len(last) == 1, proc.stderr
    line = last[0]
    assert line.startswith("error: the profile was stored as run 1, but the command exited with status 1")
    assert line.count(", but ") == 1 and "profile written to" not in line
    assert "MPI_Init() function was called after MPI_FINALIZE" in line
    assert open_db(str(db_path)).get_run(1).kind == "profile"


@pytest.mark.mpi
def test_sigterm_of_profile_shows_our_line_not_the_ranks_dying_noise(cli, db_path, tmp_path, root_mpirun):
    exe = _build(tmp_path, "noisy", NOISY_ON_TERM)
    proc = cli.popen("profile", "--", *mpirun_argv(2), str(exe))
    with reaped(proc):
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "[noise]" not in err, err
    assert err.strip().splitlines()[-1].startswith("error:") and "SIGTERM" in err
