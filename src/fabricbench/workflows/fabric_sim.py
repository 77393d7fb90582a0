"""A simulated InfiniBand fabric: real ibsim and OpenSM daemons on a generated topology.

    sim = up(SimSpec(hosts=["n1", ..., "n8"], switches=3, degrade={"edge1:3": "1x"}), "fbf")
    sim.diag_env()            # LD_PRELOAD=libumad2sim.so ...: the diagnostics talk to ibsim
    inject("fbf", "errors", "edge1:2", "57"); inject("fbf", "down", "edge2:4")
    down("fbf")               # OpenSM first, then ibsim; then the run directory

Everything of a simulation lives in its run directory (``$FABRICBENCH_FABRIC_RUNDIR/NAME``,
default ``/run/fabricbench-fabric`` as root, else the user's runtime directory): the net
file, OpenSM's configuration, cache and log, ibsim's log and its console (a FIFO ibsim
reads commands from), ``state.json`` with each daemon's pid and start time, and a scratch
directory the diagnostics run in (libumad2sim leaves a ``sys-PID`` directory behind in the
working directory of a process it was preloaded into that is killed). ``down`` stops only the
recorded pids that still are those processes, so nothing outlives it, also after a crash
of ``up`` half-way (the pids are recorded before anything waits on them).

Faults go through ibsim's console: ``PerformanceSet`` for counters, ``Unlink``/``ReLink`` for
cables. A cable's width and speed are fixed when ibsim reads the net file, so a new
degradation rewrites it and restarts both daemons, replaying the console faults; OpenSM's
guid2lid cache (``honor_guid2lid_file``) keeps every LID across the restart.
"""
from __future__ import annotations

import datetime as _dt
import glob
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.launch import procs
from fabricbench import numbers
from fabricbench.planning.fabric_topology import SimSpec, Topology, build, parse_link, render

DEFAULT_NAME = "fbf"
STATE_FORMAT = 1
IBSIM_READY_S = 20.0
SUBNET_UP_S = 60.0
CONSOLE_S = 5.0
UMAD2SIM_PATHS = ("/usr/lib/*/umad2sim/libumad2sim.so", "/usr/lib/umad2sim/libumad2sim.so",
                  "/usr/lib64/umad2sim/libumad2sim.so", "/usr/local/lib/umad2sim/libumad2sim.so")
_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
COUNTER_ALIASES = {
    "symbol": "SymbolErrorCounter", "symbolerrors": "SymbolErrorCounter", "linkdowned": "LinkDownedCounter",
    "linkrecovery": "LinkErrorRecoveryCounter", "rcverrors": "PortRcvErrors", "overrun": "ExcessiveBufferOverrunErrors",
    "integrity": "LocalLinkIntegrityErrors", "discards": "PortXmitDiscards",
}
COUNTERS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
            "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
            "PortRcvConstraintErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
            "PortXmitWait")
FAULTS = ("errors", "traffic", "down", "up", "width", "speed", "clear")


class SimError(FabricbenchError):
    """The simulator could not start, is not up, or refused a command."""


def sim_name(name: Optional[str] = None) -> str:
    chosen = name or os.environ.get("FABRICBENCH_SIM") or DEFAULT_NAME
    if not _NAME_RE.match(chosen):
        raise UsageError(f"simulator name '{chosen}': 1 to 12 lower-case letters and digits, starting with a letter")
    return chosen


def run_dir() -> Path:
    """$FABRICBENCH_FABRIC_RUNDIR, else /run/fabricbench-fabric (root) or the user's runtime directory."""
    configured = os.environ.get("FABRICBENCH_FABRIC_RUNDIR")
    if configured:
        return Path(configured)
    if os.geteuid() == 0:
        return Path("/run/fabricbench-fabric")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "fabricbench-fabric" if runtime else Path(f"/tmp/fabricbench-fabric-{os.getuid()}")


def umad2sim_library() -> str:
    for pattern in UMAD2SIM_PATHS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise SimError("libumad2sim.so not found: install ibsim-utils (Debian: apt-get install ibsim-utils opensm "
                   "infiniband-diags)")


def _tool(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)), None)
    if not found:
        raise SimError(f"{name} not found: install ibsim-utils, opensm and infiniband-diags "
                       "(Debian: apt-get install ibsim-utils opensm infiniband-diags)")
    return found


@dataclass
class Sim:
    """A simulation as its state file describes it."""

    name: str
    spec: SimSpec
    created: str
    pids: Dict[str, List[int]] = field(default_factory=dict)  # daemon -> [pid, start time]
    faults: List[str] = field(default_factory=list)  # console commands to replay after a restart
    library: str = ""

    @property
    def dir(self) -> Path:
        return run_dir() / self.name

    @property
    def sockname(self) -> str:
        return f"fabricbench-{self.name}"

    @property
    def sm_host(self) -> str:
        return self.spec.hosts[0]

    @property
    def topology(self) -> Topology:
        return build(self.spec)

    def alive(self) -> Dict[str, bool]:
        return {d: procs.daemon_alive(*self.pids[d]) for d in ("ibsim", "opensm") if d in self.pids}

    def diag_env(self) -> Dict[str, str]:
        """The environment under which infiniband-diags talk to this simulation."""
        env = dict(os.environ)
        env.update(LD_PRELOAD=self.library, IBSIM_SOCKNAME=self.sockname, SIM_HOST=self.sm_host)
        env.pop("IBSIM_SERVER_NAME", None)
        env.pop("IBSIM_SERVER_PORT", None)
        return env

    def design(self) -> Dict[str, Any]:
        return {"width": self.spec.width, "speed": self.spec.speed}

    def to_dict(self) -> Dict[str, Any]:
        return {"format": STATE_FORMAT, "name": self.name, "spec": self.spec.to_dict(), "created": self.created,
                "pids": self.pids, "faults": self.faults, "library": self.library}

    def save(self) -> None:
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(self.to_dict(), indent=2))
        os.replace(tmp, self.dir / "state.json")


def current(name: Optional[str] = None) -> Optional[Sim]:
    """The simulation's state, or None when there is none (whether or not its daemons still run)."""
    path = run_dir() / sim_name(name) / "state.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("format") != STATE_FORMAT:
        return None
    return Sim(name=data["name"], spec=SimSpec(**data["spec"]), created=data["created"], pids=data.get("pids", {}),
               faults=data.get("faults", []), library=data.get("library", ""))


def require(name: Optional[str] = None) -> Sim:
    """The simulation, up and running; SimError naming what to do otherwise."""
    chosen = sim_name(name)
    sim = current(chosen)
    flag = "" if chosen == DEFAULT_NAME else f" --name {chosen}"
    if sim is None:
        raise SimError(f"no simulated fabric '{chosen}' is up (fabricbench fabric sim up{flag})")
    dead = [d for d, ok in sim.alive().items() if not ok]
    if dead:
        raise SimError(f"simulated fabric '{chosen}': {' and '.join(dead)} stopped (see {sim.dir}); "
                       f"fabricbench fabric sim down{flag}, then up again")
    return sim


# -- up and down -----------------------------------------------------------------------------------

def up(spec: SimSpec, name: Optional[str] = None) -> Tuple[Sim, bool]:
    """Bring a simulation up; (sim, False) if the same one was already up."""
    chosen = sim_name(name)
    existing = current(chosen)
    if existing is not None:
        if all(existing.alive().values()) and existing.alive():
            if existing.spec.to_dict() == spec.to_dict():
                return existing, False
            raise SimError(f"simulated fabric '{chosen}' is up with another shape; fabricbench fabric sim down first")
        down(chosen)
    library = umad2sim_library()
    for tool in ("ibsim", "opensm"):
        _tool(tool)
    build(spec)  # a bad degradation fails here, before anything starts
    sim = Sim(name=chosen, spec=spec, created=_now(), library=library)
    sim.dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(sim.dir / "console")
    for sub in ("cache", "diag"):
        (sim.dir / sub).mkdir()
    (sim.dir / "opensm.conf").write_text(_opensm_conf(sim))
    sim.save()
    try:
        _start(sim)
    except BaseException:
        down(chosen)
        raise
    return sim, True


def down(name: Optional[str] = None) -> List[str]:
    """Stop OpenSM, then ibsim (recorded pids only), and remove the run directory; what was stopped."""
    chosen = sim_name(name)
    sim = current(chosen)
    stopped = []
    if sim is not None:
        for daemon in ("opensm", "ibsim"):  # OpenSM first: it would log errors about a vanished fabric
            if daemon in sim.pids and procs.stop_daemon(*sim.pids[daemon]):
                stopped.append(f"{daemon} (pid {sim.pids[daemon][0]})")
    shutil.rmtree(run_dir() / chosen, ignore_errors=True)
    return stopped


def status(name: Optional[str] = None) -> Dict[str, Any]:
    chosen = sim_name(name)
    sim = current(chosen)
    if sim is None:
        return {"name": chosen, "up": False, "leftovers": (run_dir() / chosen).exists()}
    alive = sim.alive()
    topo = sim.topology
    return {"name": chosen, "up": bool(alive) and all(alive.values()), "daemons": {d: {"pid": sim.pids[d][0], "running": ok}
                                                                               for d, ok in alive.items()},
            "dir": str(sim.dir), "created": sim.created, "switches": list(topo.switches), "hosts": topo.hosts,
            "cables": len(topo.cables), "design": f"{sim.spec.width}X {sim.spec.speed}", "degraded": sim.spec.degrade,
            "faults": sim.faults, "sm_host": sim.sm_host}


def _opensm_conf(sim: Sim) -> str:
    # Everything OpenSM writes stays in the run directory; the default force_link_* (255/15/31) are kept:
    # with them OpenSM leaves the widths and speeds ibsim trained the links at alone.
    return "\n".join([
        "sm_priority 7",
        "force_log_flush TRUE",  # "SUBNET UP" must reach the log when it happens: up waits for it
        "honor_guid2lid_file TRUE",
        f"dump_files_dir {sim.dir}/",
        f"partition_config_file {sim.dir}/partitions.conf",
        f"per_module_logging_file {sim.dir}/per-module-logging.conf",
        f"qos_policy_file {sim.dir}/qos-policy.conf",
        f"prefix_routes_file {sim.dir}/prefix-routes.conf",
        f"torus_config {sim.dir}/torus-2QoS.conf",
        "",
    ])


def _start(sim: Sim) -> None:
    """ibsim (on the current spec, replaying the console faults), then OpenSM until SUBNET UP."""
    (sim.dir / "topology.net").write_text(render(sim.spec, sim.topology, f"fabricbench fabric sim '{sim.name}'"))
    for log in ("ibsim.log", "opensm.log", "opensm.out"):
        (sim.dir / log).unlink(missing_ok=True)
    env = dict(os.environ, IBSIM_SOCKNAME=sim.sockname)
    console = os.open(sim.dir / "console", os.O_RDWR)  # read-write: ibsim never sees the console close
    try:
        sim.pids["ibsim"] = list(procs.start_daemon([_tool("ibsim"), "-s", str(sim.dir / "topology.net")],
                                                    log=str(sim.dir / "ibsim.log"), env=env, cwd=str(sim.dir), stdin=console))
    finally:
        os.close(console)
    sim.save()
    _wait_for(sim, "ibsim", sim.dir / "ibsim.log", "Network simulator ready", IBSIM_READY_S)
    for command in sim.faults:
        console_command(sim, command)
    env = dict(sim.diag_env(), OSM_CACHE_DIR=str(sim.dir / "cache"), OSM_TMP_DIR=str(sim.dir / "cache"))
    sim.pids["opensm"] = list(procs.start_daemon([_tool("opensm"), "-F", str(sim.dir / "opensm.conf"), "-f",
                                                  str(sim.dir / "opensm.log")], log=str(sim.dir / "opensm.out"),
                                                 env=env, cwd=str(sim.dir)))
    sim.save()
    _wait_for(sim, "opensm", sim.dir / "opensm.log", "SUBNET UP", SUBNET_UP_S)


def _wait_for(sim: Sim, daemon: str, log: Path, text: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in _read(log):
            return
        if not procs.daemon_alive(*sim.pids[daemon]):
            raise SimError(f"{daemon} stopped while starting:\n{_tail(sim, daemon)}")
        time.sleep(0.1)
    raise SimError(f"{daemon} did not report '{text}' within {numbers.seconds(timeout)} s:\n{_tail(sim, daemon)}")


def _tail(sim: Sim, daemon: str, lines: int = 12) -> str:
    logs = ["ibsim.log"] if daemon == "ibsim" else ["opensm.out", "opensm.log"]
    text = "\n".join(_read(sim.dir / log) for log in logs)
    kept = [l for l in text.splitlines() if l.strip() and "parse_port_connection_data" not in l]
    return "\n".join(kept[-lines:])


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# -- the console and faults ------------------------------------------------------------------------

def console_command(sim: Sim, command: str, timeout: float = CONSOLE_S) -> str:
    """Send one command to ibsim's console; its answer (SimError when ibsim answers with an error)."""
    log = sim.dir / "ibsim.log"
    before = len(_read(log))
    try:
        fd = os.open(sim.dir / "console", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SimError(f"ibsim of '{sim.name}' does not read its console ({exc.strerror})") from None
    try:
        os.write(fd, (command + "\n").encode())
    finally:
        os.close(fd)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        answer = _read(log)[before:]
        if "sim>" in answer:
            text = answer.split("sim>")[0].strip()
            errors = [l.strip("# ").strip() for l in text.splitlines() if l.startswith("#")]
            if errors:
                raise SimError(f"ibsim refused '{command}': {'; '.join(errors)}")
            return text
        time.sleep(0.05)
    raise SimError(f"ibsim did not answer '{command}' within {numbers.seconds(timeout)} s")


def _counter(text: str) -> Tuple[str, int]:
    """'57', 'SymbolErrorCounter=57', 'symbol=57' -> (counter, value)."""
    name, sep, value = str(text).rpartition("=")
    name = name.strip() or "SymbolErrorCounter"
    name = COUNTER_ALIASES.get(name.lower().replace("_", ""), name)
    if name not in COUNTERS:
        raise UsageError(f"counter '{name}': one of {', '.join(COUNTERS)} (or {', '.join(COUNTER_ALIASES)})")
    try:
        return name, int(value)
    except ValueError:
        raise UsageError(f"'{text}': the counter's value is a whole number, e.g. SymbolErrorCounter=57") from None


def inject(name: Optional[str], fault: str, target: Optional[str] = None, value: Optional[str] = None) -> str:
    """Apply a fault to a running simulation; a sentence saying what was done.

    errors PORT [COUNTER=]N   set an error counter (default SymbolErrorCounter)
    traffic PORT BYTES        set the port's transmitted data counter
    down PORT / up PORT       unplug / plug back the port's cable
    width PORT 1x / speed PORT FDR   retrain the port's cable (restarts the simulation)
    clear                     restart with every cable healthy and every counter at zero
    """
    sim = require(name)
    if fault not in FAULTS:
        raise UsageError(f"fault '{fault}': one of {', '.join(FAULTS)}")
    if fault == "clear":
        sim.faults, sim.spec.degrade = [], {}
        _restart(sim)
        return f"cleared '{sim.name}': every cable healthy, every counter at zero (daemons restarted)"
    if not target:
        raise UsageError(f"inject {fault} needs a port (SWITCH:PORT such as edge1:3, or a host)")
    topo = sim.topology
    node, port = topo.resolve(target)
    where = f'"{node}"[{port}]'
    if fault in ("errors", "traffic"):
        if value is None:
            raise UsageError(f"inject {fault} {target} needs a value" + (" (e.g. SymbolErrorCounter=57)" if fault == "errors" else " in bytes"))
        if fault == "errors":
            counter, number = _counter(value)
            command = f"PerformanceSet {where} PortCounters.{counter}={number}"
        else:
            number = _bytes(value)
            command = f"PerformanceSet {where} PortCountersExtended.PortXmitData={number // 4}"
        console_command(sim, command)
        sim.faults = [f for f in sim.faults if not f.startswith(command.split("=")[0] + "=")] + [command]
        sim.save()
        return f"{node} port {port}: {command.split(' ', 2)[2]}"
    if fault in ("down", "up"):
        a, b = topo.cable(target)
        unlink = f'Unlink "{a[0]}"[{a[1]}]'
        if fault == "down":
            console_command(sim, unlink)
            sim.faults = [f for f in sim.faults if f != unlink] + [unlink]
        else:
            console_command(sim, f'ReLink "{a[0]}"[{a[1]}]')
            sim.faults = [f for f in sim.faults if f != unlink]
        sim.save()
        return f"cable {a[0]} port {a[1]} - {b[0]} port {b[1]} is {'unplugged' if fault == 'down' else 'plugged back'}"
    if value is None:
        raise UsageError(f"inject {fault} {target} needs the new {fault} (e.g. {'1x' if fault == 'width' else 'FDR'})")
    width, speed = parse_link(value)
    if (fault == "width") != (width is not None) or (fault == "speed") != (speed is not None):
        raise UsageError(f"inject {fault} {target} {value}: give a {fault} (e.g. {'1x' if fault == 'width' else 'FDR'})")
    a, b = topo.cable(target)
    sim.spec.degrade = {k: v for k, v in sim.spec.degrade.items() if set(topo.cable(k)) != {a, b}}
    sim.spec.degrade[f"{a[0]}:{a[1]}"] = value
    _restart(sim)
    return f"cable at {a[0]} port {a[1]} retrains at {value} (daemons restarted, console faults replayed)"


def _bytes(text: str) -> int:
    from fabricbench.suite import parse_size

    try:
        return parse_size(str(text))
    except UsageError:
        raise UsageError(f"'{text}': a number of bytes with an optional K/M/G suffix, e.g. 200G") from None


def _restart(sim: Sim) -> None:
    build(sim.spec)
    for daemon in ("opensm", "ibsim"):
        if daemon in sim.pids:
            procs.stop_daemon(*sim.pids[daemon])
    sim.pids = {}
    sim.save()
    try:
        _start(sim)
    except BaseException:
        down(sim.name)
        raise
