"""What a launch runs on: every host's provenance facts and the engine's view of the ranks.

Facts are collected on this host directly or, for multi-host launches, by running
``python -m fabricbench.provenance`` on every host through the launcher; the engine's
``info`` run says which MPI library runs and where every rank landed.

``run_provenance(launcher, launch=argv)`` is THE collection every run kind that starts ranks
uses (engine runs, hpcc, profile, app, scaling): ``{"run": run-level facts, "hosts": [facts of
each host]}``, which ``Session.record_provenance`` stores. Run-level facts are always the same
keys (``RUN_FACTS``), ``None`` where one does not apply, so that two runs of different kinds on
the same hosts differ only in what really differs. ``local_provenance()`` is the same for work
that starts no ranks (a fabric scan): this host's facts.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from fabricbench import provenance as prov
from fabricbench.errors import FabricbenchError
from fabricbench.launch import Launcher, Layout
from fabricbench.launch.failure import explain_start_failure, launcher_line
from fabricbench.launch.procs import run_capture
from fabricbench.native import engine_path
from fabricbench.workflows.session import RunFailed


def _host_layout(launcher: Launcher, hosts: List[str]) -> Layout:
    # No hosts known before the launch (a scheduler places the ranks): one rank on each node it will use.
    return Layout(np=len(hosts) or launcher.node_count(), hosts=hosts, hostfile=None, ppn=1, extra_args=list(launcher.layout.extra_args))


def gather_hosts(launcher: Launcher, timeout: float = 120.0, rank_hosts: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """Provenance facts of every host of the launch: this host directly, remote hosts through the launcher
    (on the hosts the layout names, else on those the ranks ran on: a scheduler chose them)."""
    hosts = list(dict.fromkeys(launcher.layout.hosts or rank_hosts))
    if len(hosts) <= 1 and launcher.name == "mpirun":
        return [prov.collect()]
    probe = type(launcher)(_host_layout(launcher, hosts))
    rc, out, err = run_capture(probe.command([sys.executable, "-m", "fabricbench.provenance"]), env=probe.environment(), timeout=timeout)
    facts = []
    for line in out.splitlines():
        try:
            facts.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if rc != 0 or not facts:
        raise RunFailed(f"could not collect provenance from the hosts: {explain_start_failure(err)}")
    return facts


def engine_info(launcher: Launcher, timeout: float = 120.0) -> Dict[str, Any]:
    """The engine's `info` run: MPI library and the host of every rank."""
    rc, out, err = run_capture(launcher.command([str(engine_path()), "info", "--format", "jsonl"]), env=launcher.environment(), timeout=timeout)
    header: Dict[str, Any] = {}
    ranks = []
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("record") == "run":
            header = rec
        elif rec.get("record") == "rank_info":
            ranks.append(rec)
    if rc != 0 or not header:
        said = [line for line in out.splitlines() if launcher_line(line)]  # Hydra reports on stdout
        raise RunFailed(f"the engine could not start through {launcher.name}: {explain_start_failure(chr(10).join([err, *said]))}")
    return {"header": header, "ranks": ranks}


def host_load() -> Dict[str, Any]:
    """This host's 1-minute load average and CPU count when the run starts: other work on the
    host shares its cores with the ranks, and the figures include that contention. Also the
    work runnable right now besides this process (``runnable_others``, the median of a few
    reads of /proc/loadavg): the 1-minute average still holds the ranks of a run that has just
    ended, which share no core with the next one."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return {}
    facts: Dict[str, Any] = {"loadavg_1m": round(load, 2), "cpus": os.cpu_count()}
    others = runnable_others()
    if others is not None:
        facts["runnable_others"] = others
    return facts


def runnable_others(reads: int = 5, pause_s: float = 0.02) -> Optional[float]:
    """Tasks runnable on the host besides the reader (median of `reads` reads of /proc/loadavg's
    'running/total' field, less the reader itself); None where the file is not there."""
    import statistics
    import time

    counts = []
    for i in range(reads):
        try:
            with open("/proc/loadavg", encoding="ascii") as f:
                running = int(f.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return None
        counts.append(max(0, running - 1))
        if i + 1 < reads:
            time.sleep(pause_s)
    return float(statistics.median(counts))


def collect_provenance(launcher: Launcher, timeout: float = 120.0) -> Dict[str, Any]:
    info = engine_info(launcher, timeout)
    header = info["header"]
    rank_hosts = header.get("hosts") or [r.get("host") for r in info["ranks"]]
    facts = gather_hosts(launcher, timeout, rank_hosts)
    for f in facts:
        f.setdefault("mpi", {})["library"] = header.get("mpi_library")
    per_node: Dict[str, int] = {}
    for h in rank_hosts:
        per_node[h] = per_node.get(h, 0) + 1
    return {
        "run": {
            "hosts": sorted(per_node),
            "nodes": len(per_node),
            "ranks": header.get("ranks"),
            "ranks_per_node": per_node,
            "ppn": launcher.layout.ppn or (max(per_node.values()) if per_node else None),
            "launcher": launcher.name,
            "mpi_library": header.get("mpi_library"),
            "mpi_version": header.get("mpi_version"),
            "timer_resolution_us": header.get("timer_resolution_us"),
            "engine_version": header.get("version"),
            "env": prov.tuning_environment(launcher.environment()),
            "rank_hosts": rank_hosts,
            "host_load": host_load(),
            **launcher.provenance(),
        },
        "hosts": facts,
    }


# The run-level facts every run that starts ranks records (None where one does not apply).
RUN_FACTS = ("hosts", "nodes", "ranks", "ranks_per_node", "ppn", "launcher", "mpi_library", "mpi_version",
             "timer_resolution_us", "engine_version", "env", "rank_hosts", "host_load", "launch")


def _without_engine(launcher: Launcher, timeout: float) -> Dict[str, Any]:
    """The facts when the engine cannot run (not built, or not for this MPI): every host's facts
    and the MPI found on PATH; rank placement as the layout says."""
    facts = gather_hosts(launcher, timeout=timeout)
    hosts = list(dict.fromkeys(launcher.layout.hosts)) or [f.get("hostname", "?") for f in facts]
    mpi = (facts[0].get("mpi") if facts else None) or {}
    return {
        "run": {
            "hosts": hosts,
            "nodes": len(hosts),
            "ranks": launcher.layout.np,
            "ppn": launcher.layout.ppn,
            "launcher": launcher.name,
            "mpi_library": mpi.get("library") or mpi.get("version"),
            "env": prov.tuning_environment(launcher.environment()),
            "host_load": host_load(),
            **launcher.provenance(),
        },
        "hosts": facts,
    }


def run_provenance(launcher: Launcher, timeout: float = 120.0, launch: Optional[Sequence[str]] = None,
                   engine: bool = False) -> Dict[str, Any]:
    """THE provenance of a run whose ranks `launcher` starts: {"run": facts, "hosts": [facts per host]}.

    The engine's info run through the same launcher says which MPI library runs and where the
    ranks land (when the engine is not installed: the MPI on PATH and the layout). ``launch`` is
    the command line the run's ranks are started with. ``engine``: the run needs the engine, so
    an engine that cannot start is the run's failure (RunFailed), not a fallback."""
    try:
        info = collect_provenance(launcher, timeout=timeout)
    except FabricbenchError:
        if engine:
            raise
        info = _without_engine(launcher, timeout)
    if launch is not None:
        info["run"]["launch"] = [str(a) for a in launch]
    for key in RUN_FACTS:
        info["run"].setdefault(key, None)
    return info


def node_provenance(host_facts: Sequence[Dict[str, Any]], launcher: Optional[str] = None,
                    launch: Optional[Sequence[str]] = None, hosts: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Provenance of work that starts processes but no MPI ranks (a transfer study's servers and
    readers, a fabric scan on this host), in the same shape as ``run_provenance``: every
    ``RUN_FACTS`` key, the MPI ones None (they do not apply), the hosts and how their
    processes were started (``launcher``: how commands reach the nodes; ``launch``: the
    command line of the work, e.g. one reader's)."""
    names = list(dict.fromkeys(hosts or [f.get("hostname", "?") for f in host_facts]))
    run: Dict[str, Any] = {
        "hosts": names,
        "nodes": len(names),
        "launcher": launcher,
        "launch": [str(a) for a in launch] if launch else None,
        "env": prov.tuning_environment(dict(os.environ)),
        "host_load": host_load(),
    }
    for key in RUN_FACTS:
        run.setdefault(key, None)
    return {"run": run, "hosts": list(host_facts)}


def local_provenance(launch: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Provenance of work that starts no ranks and runs on this host alone (a fabric scan):
    this host's facts and load, ``launch`` the command that did the work."""
    return node_provenance([prov.collect()], launcher="local", launch=launch)
