"""Entering a lab node: the rsh agent MPI launchers call, and the argv prefix for exact commands.

A node is a network namespace (NAME-nI). Commands run in it under `ip netns exec`, in
a UTS namespace of their own whose host name is the node's name, so every rank sees
its node's name as its host name.
"""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import List, Sequence

from fabricbench.lab import system
from fabricbench.lab.errors import LabError

_AGENT = Path(__file__).resolve().parent / "rsh-agent.sh"

# Sets the UTS host name, then runs the exact argv that follows (no word splitting).
_ENTER_SCRIPT = 'printf %s "$0" > /proc/sys/kernel/hostname || exit 255; exec "$@"'


def agent_script() -> Path:
    """The packaged rsh agent (a POSIX shell script)."""
    if not _AGENT.is_file():
        raise LabError(f"the lab's rsh agent is missing from the installation: {_AGENT}")
    return _AGENT


def agent_executable(run_dir: Path) -> str:
    """A path to the agent that can be exec'd directly (MPICH's -launcher-exec takes one path).

    An installed package may have lost the executable bit, or live under a path with
    spaces (Open MPI splits plm_rsh_agent on blanks); then a copy in the lab's run
    directory serves.
    """
    script = agent_script()
    if os.access(script, os.X_OK) and " " not in str(script):
        return str(script)
    copy = run_dir / "rsh-agent"
    data = script.read_bytes()
    if not copy.exists() or copy.read_bytes() != data:
        run_dir.mkdir(parents=True, exist_ok=True)
        tmp = copy.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.chmod(0o755)
        tmp.replace(copy)
    elif not os.access(copy, os.X_OK):
        copy.chmod(copy.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(copy)


def node_argv(node: str, argv: Sequence[str]) -> List[str]:
    """argv run inside lab node `node` with host name `node`: exact words, no shell re-parsing."""
    return [system.tool("ip"), "netns", "exec", node, *_named(node, argv)]


def _named(node: str, argv: Sequence[str]) -> List[str]:
    """argv in a UTS namespace of its own whose host name is `node`."""
    return [system.tool("unshare"), "--uts", "--", shutil.which("sh") or "/bin/sh", "-c", _ENTER_SCRIPT, node, *argv]


def daemon_argv(node: str, argv: Sequence[str]) -> List[str]:
    """argv run as a daemon of lab node `node`: its network namespace and host name, the host's mounts.

    `ip netns exec` mounts a fresh /sys, in which slurmd finds no cgroup file system and refuses
    to start; nsenter joins the network namespace only. Names resolve through NodeAddr, so the
    node's /etc/hosts is not needed there.
    """
    return [system.tool("nsenter"), f"--net={system.NETNS_DIR}/{node}", "--", *_named(node, argv)]
