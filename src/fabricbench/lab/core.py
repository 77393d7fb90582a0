"""The lab: an emulated cluster of network namespaces joined by shaped veth links and bridges.

Topology (one switch; with two, nodes n1..n(ceil N/2) hang on sw1, the rest on sw2,
and the switches are joined by NAME-up, shaped at the uplink rate):

    [NAME-n1: NAME-eth0 10.213.0.1] ==veth== [NAME-sw1: NAME-p1 -- bridge NAME-br]
    [NAME-n2: NAME-eth0 10.213.0.2] ==veth== [NAME-sw1: NAME-p2 -- bridge NAME-br]

Every veth is shaped in both directions with htb on the egress of each end (the node
side shapes what the node sends, the switch port what it receives): rate = ceil, GSO
packets of at most 0.125 ms at the rate and a bucket of one frame (two from 1gbit), so no
window of messages passes faster than the line, and TCP in the nodes paces nothing of its
own (lab.rates says why; docs/methods/lab.md has the figures). The switches are
namespaces too and have no addresses, so nothing of the lab touches the host's own
interfaces or routes, and no lab address is reachable from (or routed to) anywhere
but the lab's own namespaces.

Removing a lab means deleting its namespaces (which takes their interfaces, bridges
and qdiscs with them), found by name, plus its /etc/netns entries and state files.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import ipaddress
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from fabricbench.lab import agent, slurm, system
from fabricbench.lab.errors import LabError
from fabricbench.lab.rates import TCP_CONGESTION, bucket_bytes, format_rate, gso_max_bytes, parse_rate, tcp_goodput
from fabricbench.lab.spec import (
    LabSpec,
    bridge_ifname,
    lab_name,
    namespace_pattern,
    node_ifname,
    node_index,
    node_name,
    port_ifname,
    switch_name,
    uplink_ifname,
)

STATE_FORMAT = 1
DEFAULT_RUN_DIR = "/run/fabricbench-lab"


def run_dir() -> Path:
    """Where state files and hostfiles live ($FABRICBENCH_LAB_RUNDIR, default /run/fabricbench-lab)."""
    return Path(os.environ.get("FABRICBENCH_LAB_RUNDIR") or DEFAULT_RUN_DIR)


@dataclass(frozen=True)
class LabNode:
    """One emulated host: a network namespace whose name is also its host name."""

    name: str  # "fbl-n1": namespace, host name, hostfile entry
    index: int  # 1-based
    address: str  # IPv4 address on the lab subnet
    switch: str  # namespace of the switch it hangs on, "fbl-sw1"
    rate: str  # tc rate of its link, "1gbit" (lower if degraded)
    interface: str  # its interface inside its namespace, "fbl-eth0"
    port: str  # its switch port inside the switch namespace, "fbl-p1"

    @property
    def rate_bps(self) -> int:
        return parse_rate(self.rate)


class Lab:
    """A lab that is up (or described by its state file). Build one with Lab.up(spec)."""

    def __init__(self, name: str, spec: LabSpec, created: Optional[str] = None):
        self.name = lab_name(name)
        self.spec = spec
        self.created = created
        shape = spec.shape()
        net = spec.network()
        hosts = net.hosts()
        degraded = spec.degraded_bps()
        link = spec.link_bps()
        self.nodes: List[LabNode] = []
        for i in range(1, spec.nodes + 1):
            self.nodes.append(
                LabNode(
                    name=node_name(self.name, i),
                    index=i,
                    address=str(next(hosts)),
                    switch=switch_name(self.name, spec.switch_of(i)),
                    rate=format_rate(degraded.get(i, link)),
                    interface=node_ifname(self.name),
                    port=port_ifname(self.name, i),
                )
            )
        self.switches: List[str] = [switch_name(self.name, j) for j in range(1, spec.switches + 1)]
        self.shape: Dict[str, Any] = shape

    # ---- paths ------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return run_dir() / f"{self.name}.json"

    @property
    def hostfile_path(self) -> Path:
        return run_dir() / f"{self.name}.hostfile"

    @property
    def subnet(self) -> str:
        return str(self.spec.network())

    @property
    def interface(self) -> str:
        return node_ifname(self.name)

    @property
    def node_names(self) -> List[str]:
        return [n.name for n in self.nodes]

    @property
    def namespaces(self) -> List[str]:
        return [*self.node_names, *self.switches]

    def node(self, ref: str) -> LabNode:
        """A node by 'n3', '3', 'fbl-n3' or its address."""
        for n in self.nodes:
            if ref == n.address or ref == n.name:
                return n
        index = node_index(ref, len(self.nodes))
        return self.nodes[index - 1]

    def expected_goodput(self, a: str, b: str) -> float:
        """TCP payload bytes/s one stream from node a to node b can get: the narrowest link's goodput."""
        na, nb = self.node(a), self.node(b)
        rates = [na.rate_bps, nb.rate_bps]
        if na.switch != nb.switch:
            rates.append(self.spec.uplink_bps() or na.rate_bps)
        return tcp_goodput(min(rates), self.spec.mtu)

    # ---- running things in nodes ------------------------------------------------------------
    def exec_argv(self, node: str, argv: Sequence[str]) -> List[str]:
        """argv that runs `argv` inside `node`, with the node's name as host name."""
        return agent.node_argv(self.node(node).name, argv)

    def run(self, node: str, argv: Sequence[str], timeout: float = 120.0, **kwargs) -> Any:
        """Run a command in a node and wait (stdout/stderr captured as text unless told otherwise):
        launch.procs.run_short's completed process."""
        from fabricbench.launch.procs import run_short

        return run_short(self.exec_argv(node, argv), timeout=timeout, **kwargs)

    # ---- bring up / tear down -----------------------------------------------------------------
    @classmethod
    def up(cls, spec: LabSpec, name: Optional[str] = None) -> "Lab":
        """Bring a lab up; a no-op if the same shape is already up; refused if another shape is.

        Leftovers of a lab that crashed half-way are removed first. If building fails, what
        was built is removed again and LabError says which command failed.
        """
        name = lab_name(name)
        system.require_root("bringing a lab up")
        spec.validate()
        for t in ("ip", "tc", "unshare"):
            system.tool(t)
        with _locked(name):
            existing = _load(name)
            if existing is not None and existing.is_intact():
                if existing.shape == spec.shape():
                    return existing
                raise LabError(
                    f"lab '{name}' is already up with another shape ({existing.describe()}); "
                    f"tear it down first (fabricbench lab down{_name_flag(name)}) or use another --name"
                )
            check_subnet_free(spec.network(), name)
            _teardown(name)
            lab = cls(name, spec, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
            try:
                lab._build()
                lab._write_files()
                if spec.slurm:
                    slurm.start(lab, run_dir())
            except BaseException:
                with contextlib.suppress(Exception):  # the build's own error is the one to report
                    _teardown(name)
                raise
            return lab

    def down(self) -> List[str]:
        """Remove this lab (everything named after it); returns what was removed."""
        return down(self.name)

    def _build(self) -> None:
        for sw in self.switches:
            _make_namespace(sw)
            _ip(sw, "link", "add", bridge_ifname(self.name), "type", "bridge", "stp_state", "0")
            _ip(sw, "link", "set", bridge_ifname(self.name), "up")
        if len(self.switches) == 2:
            up_if = uplink_ifname(self.name)
            sw1, sw2 = self.switches
            system.run(["ip", "link", "add", up_if, "netns", sw1, "type", "veth", "peer", "name", up_if, "netns", sw2])
            rate = self.spec.uplink_bps() or self.spec.link_bps()
            for sw in (sw1, sw2):
                _ip(sw, "link", "set", up_if, "mtu", str(self.spec.mtu), "master", bridge_ifname(self.name), "up")
                _shape(sw, up_if, rate, self.spec.mtu)
        for n in self.nodes:
            _make_namespace(n.name)
            system.run(["ip", "link", "add", n.interface, "netns", n.name, "type", "veth", "peer", "name", n.port, "netns", n.switch])
            _ip(n.switch, "link", "set", n.port, "mtu", str(self.spec.mtu), "master", bridge_ifname(self.name), "up")
            _ip(n.name, "link", "set", n.interface, "mtu", str(self.spec.mtu), "up")
            _ip(n.name, "addr", "add", f"{n.address}/{self.spec.network().prefixlen}", "dev", n.interface)
            _shape(n.name, n.interface, n.rate_bps, self.spec.mtu)
            _shape(n.switch, n.port, n.rate_bps, self.spec.mtu)

    def _write_files(self) -> None:
        try:
            self._write_files_unchecked()
        except OSError as exc:
            raise LabError(f"cannot write the lab's files: {exc.filename}: {exc.strerror}") from None

    def _write_files_unchecked(self) -> None:
        hosts = "".join(f"{n.address}\t{n.name}\n" for n in self.nodes)
        for n in self.nodes:
            etc = Path(system.ETC_NETNS_DIR) / n.name
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(
                f"# fabricbench lab '{self.name}': seen as /etc/hosts inside the lab's namespaces only\n"
                f"127.0.0.1\tlocalhost\n{hosts}"
            )
            # No name servers: lab names resolve from hosts; nothing is ever asked outside.
            (etc / "resolv.conf").write_text(f"# fabricbench lab '{self.name}': no name servers inside the lab\n")
        run_dir().mkdir(parents=True, exist_ok=True)
        _atomic_write(
            self.hostfile_path,
            f"# fabricbench lab '{self.name}': {self.describe()}\n"
            "# names resolve inside the lab's namespaces; launch with: fabricbench run ... --launcher lab\n"
            + "".join(f"{n.name}\n" for n in self.nodes),
        )
        _atomic_write(self.state_path, json.dumps(self.to_state(), indent=2) + "\n")

    # ---- what it looks like -------------------------------------------------------------------
    def describe(self) -> str:
        s = self.shape
        text = f"{s['nodes']} node{'s' if s['nodes'] != 1 else ''} at {s['link']}"
        if s["switches"] == 2:
            text += f", 2 switches joined at {s['uplink']}"
        else:
            text += ", 1 switch"
        if s["degrade"]:
            text += ", degraded " + ", ".join(f"{k}={v}" for k, v in s["degrade"].items())
        if s.get("slurm"):
            text += ", Slurm"
        return text + f", subnet {s['subnet']}"

    def to_state(self) -> Dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "name": self.name,
            "created": self.created,
            "shape": self.shape,
            "hostfile": str(self.hostfile_path),
            "interface": self.interface,
            "switches": self.switches,
            "nodes": [asdict(n) for n in self.nodes],
        }

    def is_intact(self) -> bool:
        """Every namespace of the lab exists (and, with Slurm, every daemon of it runs)."""
        present = set(system.list_namespaces())
        if not all(ns in present for ns in self.namespaces):
            return False
        return not self.spec.slurm or len(slurm.daemons_alive(run_dir(), self.name)) == len(self.nodes) + 2

    def status(self) -> Dict[str, Any]:
        """The lab as it is: every node's namespace, address and shaping checked against its shape."""
        present = set(system.list_namespaces())
        checked = system.is_root()  # reading qdiscs means entering the namespaces
        nodes = []
        problems: List[str] = []
        for n in self.nodes:
            row: Dict[str, Any] = asdict(n)
            row["namespace"] = n.name in present
            row["shaped"] = {}
            if checked and row["namespace"]:
                row["shaped"]["out"] = _qdisc_rate(n.name, n.interface)
            if checked and n.switch in present:
                row["shaped"]["in"] = _qdisc_rate(n.switch, n.port)
            for direction in ("out", "in") if checked else ():
                got = row["shaped"].get(direction)
                if got != n.rate:
                    problems.append(f"{n.name} {direction}bound is shaped at {got or 'nothing'}, not {n.rate}")
            if not row["namespace"]:
                problems.append(f"namespace {n.name} is missing")
            nodes.append(row)
        for sw in self.switches:
            if sw not in present:
                problems.append(f"switch namespace {sw} is missing")
        uplink = None
        if checked and len(self.switches) == 2 and all(sw in present for sw in self.switches):
            uplink = {sw: _qdisc_rate(sw, uplink_ifname(self.name)) for sw in self.switches}
            for sw, got in uplink.items():
                if got != self.shape["uplink"]:
                    problems.append(f"uplink end in {sw} is shaped at {got or 'nothing'}, not {self.shape['uplink']}")
        slurm_status = slurm.status(self, run_dir()) if self.spec.slurm else None
        if slurm_status is not None and not slurm_status["healthy"]:
            problems.append(f"Slurm: {len(slurm_status['running'])} of {len(self.nodes) + 2} daemons run "
                            f"(munged, slurmctld, one slurmd per node)")
        return {
            "name": self.name,
            "up": True,
            "slurm": slurm_status,
            "healthy": not problems,
            "problems": problems,
            "shaping_checked": checked,
            "created": self.created,
            "shape": self.shape,
            "description": self.describe(),
            "hostfile": str(self.hostfile_path),
            "state": str(self.state_path),
            "interface": self.interface,
            "switches": self.switches,
            "uplink": uplink,
            "goodput_MBps": round(tcp_goodput(parse_rate(self.shape["link"]), self.spec.mtu) / 1e6, 2),
            "nodes": nodes,
        }

    def __repr__(self) -> str:
        return f"Lab({self.name!r}, {self.describe()})"


# ---- module API -----------------------------------------------------------------------------

def check_subnet_free(net: "ipaddress.IPv4Network", name: str) -> None:
    """Refuse a lab subnet that overlaps an address or route of the host, or another lab that is up
    (nothing is created): lab nodes would shadow real hosts, or two labs answer for one address."""
    clash = next(((what, other) for what, other in system.host_networks() if net.overlaps(other)), None)
    if clash is not None:
        raise LabError(f"lab subnet {net} overlaps the host's {clash[0]} ({clash[1]}): the lab would hide "
                       "those addresses; give another --subnet (e.g. a free 10.x.y.0/24)")
    for path in sorted(run_dir().glob("*.json")):
        other_name = path.stem
        if other_name == name:
            continue
        other = _load(other_name)
        if other is None or not other.is_intact():
            continue
        other_net = other.spec.network()
        if net.overlaps(other_net):
            raise LabError(f"lab subnet {net} overlaps lab '{other_name}' ({other_net}), which is up: give another "
                           f"--subnet, or tear it down first (fabricbench lab down{_name_flag(other_name)})")


def current_lab(name: Optional[str] = None) -> Optional[Lab]:
    """The lab called `name` ($FABRICBENCH_LAB, default 'fbl') if it is up, else None."""
    name = lab_name(name)
    lab = _load(name)
    if lab is None or not lab.is_intact():
        return None
    return lab


def up(spec: LabSpec, name: Optional[str] = None) -> Lab:
    """Same as Lab.up(spec, name)."""
    return Lab.up(spec, name)


def down(name: Optional[str] = None) -> List[str]:
    """Remove lab `name` completely, found by name (works after a crash, without the state file).

    Returns the namespaces and files removed; an absent lab is no error.
    """
    name = lab_name(name)
    system.require_root("tearing a lab down")
    with _locked(name):
        return _teardown(name)


def leftovers(name: Optional[str] = None) -> List[str]:
    """Namespaces and files of lab `name` that exist (for status after a crash)."""
    name = lab_name(name)
    pattern = namespace_pattern(name)
    found = [ns for ns in system.list_namespaces() if pattern.match(ns)]
    etc = Path(system.ETC_NETNS_DIR)
    if etc.is_dir():
        found += [str(p) for p in sorted(etc.iterdir()) if pattern.match(p.name)]
    for suffix in ("json", "hostfile"):
        path = run_dir() / f"{name}.{suffix}"
        if path.exists():
            found.append(str(path))
    found += slurm.daemons_alive(run_dir(), name)
    if slurm.slurm_dir(run_dir(), name).exists():
        found.append(str(slurm.slurm_dir(run_dir(), name)))
    return found


def status(name: Optional[str] = None) -> Dict[str, Any]:
    """Status of lab `name` as a dict: {'up': False, 'leftovers': [...]} when it is not up."""
    name = lab_name(name)
    lab = _load(name)
    if lab is not None and lab.is_intact():
        return lab.status()
    return {"name": name, "up": False, "leftovers": leftovers(name)}


@contextlib.contextmanager
def lab_session(
    nodes: int = 2,
    link: str = "1gbit",
    *,
    name: Optional[str] = None,
    switches: int = 1,
    uplink: Optional[str] = None,
    degrade: Optional[Dict[str, str]] = None,
    subnet: Optional[str] = None,
    slurm: bool = False,
    keep: bool = False,
) -> Iterator[Lab]:
    """A lab for the duration of a with-block; torn down afterwards, also on errors (unless keep)."""
    spec = LabSpec(
        nodes=nodes,
        link=link,
        switches=switches,
        uplink=uplink,
        degrade=tuple((degrade or {}).items()),
        slurm=slurm,
        **({"subnet": subnet} if subnet else {}),
    )
    chosen = lab_name(name)
    try:
        lab = Lab.up(spec, chosen)
        yield lab
    finally:
        if not keep:
            down(chosen)


# ---- internals --------------------------------------------------------------------------------

def _name_flag(name: str) -> str:
    return "" if name == lab_name(None) else f" --name {name}"


def _load(name: str) -> Optional[Lab]:
    path = run_dir() / f"{name}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("format") != STATE_FORMAT or data.get("name") != name:
            return None
        return Lab(name, LabSpec.from_shape(data["shape"]), created=data.get("created"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, LabError):
        return None  # unreadable state: treated as a crashed lab, cleaned up by up/down


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Serialise ups and downs between processes: an flock on the run directory itself
    (one lock for all labs; they take a second), so no lock file is left behind."""
    directory = run_dir()
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _teardown(name: str) -> List[str]:
    pattern = namespace_pattern(name)
    namespaces = [ns for ns in system.list_namespaces() if pattern.match(ns)]
    # Nodes first, so no stray rank keeps a namespace (and its veth end) alive.
    namespaces.sort(key=lambda ns: (0 if "-n" in ns[len(name):] else 1, ns))
    # Slurm's daemons by their pids first (munged runs outside the namespaces), then whatever
    # still runs inside: job steps, ranks.
    removed: List[str] = slurm.stop(run_dir(), name)
    system.stop_processes_in(namespaces)
    failures: List[str] = []
    for ns in namespaces:
        try:
            system.run(["ip", "netns", "del", ns])
            removed.append(ns)
        except LabError as exc:
            failures.append(str(exc))
    etc = Path(system.ETC_NETNS_DIR)
    if etc.is_dir():
        for entry in sorted(etc.iterdir()):
            if pattern.match(entry.name) and entry.is_dir():
                shutil.rmtree(entry)
                removed.append(str(entry))
        with contextlib.suppress(OSError):
            etc.rmdir()  # only if empty: other users of /etc/netns keep theirs
    for suffix in ("json", "hostfile"):
        path = run_dir() / f"{name}.{suffix}"
        if path.exists():
            path.unlink()
            removed.append(str(path))
    if failures:
        raise LabError(f"lab '{name}' is only partly removed: {'; '.join(failures)}")
    return removed


def _make_namespace(ns: str) -> None:
    system.run(["ip", "netns", "add", ns])
    # No IPv6 inside the lab: no link-local addresses, router solicitations or DAD chatter. TCP's
    # congestion control is the host's unless lab.rates.TCP_CONGESTION names one.
    choose = f"; echo {TCP_CONGESTION} > /proc/sys/net/ipv4/tcp_congestion_control" if TCP_CONGESTION else ""
    system.run(
        ["ip", "netns", "exec", ns, "sh", "-c",
         "for f in /proc/sys/net/ipv6/conf/default/disable_ipv6 /proc/sys/net/ipv6/conf/all/disable_ipv6; "
         "do [ -w $f ] && echo 1 > $f; done" + choose],
    )
    _ip(ns, "link", "set", "lo", "up")


def _ip(ns: str, *args: str) -> None:
    system.run(["ip", "-n", ns, *args])


def _shape(ns: str, dev: str, rate_bps: int, mtu: int) -> None:
    """htb on the egress of `dev` in `ns`: one class at rate = ceil with a small bucket, small GSO packets."""
    system.run(["ip", "-n", ns, "link", "set", "dev", dev, "gso_max_size", str(gso_max_bytes(rate_bps, mtu))])
    burst = str(bucket_bytes(rate_bps, mtu))
    # r2q only silences htb's quantum warning; with one class the quantum never matters.
    system.run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
                "r2q", "100000"])
    system.run(["tc", "-n", ns, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                "rate", f"{rate_bps}bit", "ceil", f"{rate_bps}bit", "burst", burst, "cburst", burst])


def _qdisc_rate(ns: str, dev: str) -> Optional[str]:
    """The rate `dev` in `ns` is shaped at ("1gbit"), or None when it is not shaped as the lab shapes."""
    done = system.run(["tc", "-n", ns, "class", "show", "dev", dev, "classid", "1:1"], check=False)
    if done.returncode != 0:
        return None
    words = (done.stdout or "").split()
    if words[:2] != ["class", "htb"] or "rate" not in words:
        return None
    try:
        return format_rate(parse_rate(words[words.index("rate") + 1]))
    except (LabError, IndexError):
        return None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
