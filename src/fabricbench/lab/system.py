"""The commands the lab runs (ip, tc) and what it asks the system (root, namespaces, processes).

Everything that changes the system goes through run(); every change happens inside a
namespace the lab created (`ip -n NS`, `tc -n NS`), never on the host's interfaces.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import List, Optional, Sequence, Tuple

from fabricbench.lab.errors import LabError
from fabricbench import numbers

COMMAND_TIMEOUT_S = 30.0
NETNS_DIR = "/run/netns"  # where `ip netns add` mounts namespaces (/var/run is a link to /run)
ETC_NETNS_DIR = "/etc/netns"  # `ip netns exec NS` bind-mounts /etc/netns/NS/* over /etc/*


def tool(name: str) -> str:
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
    if not path:
        package = {"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "nsenter": "util-linux"}.get(name, name)
        raise LabError(f"the lab needs '{name}', which is not installed (Debian/Ubuntu: apt-get install {package})")
    return path


def run(argv: Sequence[str], check: bool = True, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run a command; on failure raise LabError naming the command and quoting its stderr."""
    argv = [tool(argv[0]) if not os.path.isabs(argv[0]) else argv[0], *argv[1:]]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise LabError(f"'{_show(argv)}' did not finish within {numbers.seconds(timeout)} s") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise LabError(f"'{_show(argv)}' failed: {detail[-1] if detail else f'exit status {done.returncode}'}")
    return done


def _show(argv: Sequence[str]) -> str:
    return " ".join([os.path.basename(argv[0]), *argv[1:]])


def is_root() -> bool:
    return os.geteuid() == 0


def require_root(action: str) -> None:
    if not is_root():
        raise LabError(
            f"{action} needs root: the lab makes network namespaces, veth links and tc qdiscs "
            "(run it as root, e.g. sudo fabricbench lab ...)"
        )


def list_namespaces() -> List[str]:
    """Names of the named network namespaces (`ip netns list`, which needs no root)."""
    done = run(["ip", "netns", "list"], check=False)
    if done.returncode != 0:
        # No /run/netns yet means no named namespaces at all.
        return []
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def host_networks() -> List[Tuple[str, "ipaddress.IPv4Network"]]:
    """The host's IPv4 networks as (what, network): each address's network and each route's
    destination and gateway (`ip -j addr`, `ip -j route show table all`); default routes left out
    (they cover everything), their gateways kept."""
    import ipaddress
    import json

    found: List[Tuple[str, ipaddress.IPv4Network]] = []
    for argv in (["ip", "-j", "-4", "addr"], ["ip", "-j", "-4", "route", "show", "table", "all"]):
        done = run(argv, check=False)
        if done.returncode != 0:
            continue
        try:
            entries = json.loads(done.stdout or "[]")
        except ValueError:
            continue
        for e in entries:
            for a in e.get("addr_info", []) if "addr_info" in e else []:
                if a.get("family") == "inet" and a.get("local"):
                    net = ipaddress.IPv4Interface(f"{a['local']}/{a.get('prefixlen', 32)}").network
                    found.append((f"address {a['local']}/{a.get('prefixlen', 32)} of {e.get('ifname', '?')}", net))
            if "dst" in e:
                dev = f" via {e['dev']}" if e.get("dev") else ""
                if e["dst"] != "default":
                    try:
                        found.append((f"route {e['dst']}{dev}", ipaddress.IPv4Network(e["dst"], strict=False)))
                    except ValueError:
                        pass
                if e.get("gateway"):
                    try:
                        found.append((f"gateway {e['gateway']}{dev}", ipaddress.IPv4Network(e["gateway"])))
                    except ValueError:
                        pass
    return found


def namespace_exists(ns: str) -> bool:
    return os.path.exists(os.path.join(NETNS_DIR, ns))


def namespace_pids(ns: str) -> List[int]:
    done = run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()] if done.returncode == 0 else []


def stop_processes_in(namespaces: Sequence[str], grace_s: float = 3.0) -> List[int]:
    """SIGTERM, then SIGKILL, the processes still running inside the given (lab) namespaces.

    A rank or orted left behind by a crashed job would otherwise keep its namespace, and
    the node's interface, alive after `ip netns del`.
    """
    found = sorted({pid for ns in namespaces for pid in namespace_pids(ns) if pid != os.getpid()})
    if not found:
        return []
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 1.0)):
        alive = [p for p in found if _alive(p)]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_alive(p) for p in alive):
            time.sleep(0.05)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return False


def netns_usable() -> Optional[str]:
    """None if this process can make network namespaces, else why not (for skips and doctors)."""
    if not is_root():
        return "not root (the lab needs root for network namespaces and tc)"
    for name in ("ip", "tc", "unshare"):
        try:
            tool(name)
        except LabError as exc:
            return str(exc)
    probe = f"fbprobe{os.getpid() % 100000}-n0"
    done = run(["ip", "netns", "add", probe], check=False)
    if done.returncode != 0:
        return f"'ip netns add' does not work here: {done.stderr.strip() or done.returncode}"
    try:
        done = run(["ip", "-n", probe, "link", "set", "lo", "up"], check=False)
        if done.returncode != 0:
            return f"cannot configure a network namespace: {done.stderr.strip()}"
    finally:
        run(["ip", "netns", "del", probe], check=False)
    return None
