"""Scan a fabric with infiniband-diags and store the snapshot as a run of kind ``fabric``.

A scan runs, in order and each under a timeout (a diagnostic that hangs - ``iblinkinfo -S``
does on some fabrics - is stopped and noted, the scan goes on): ``ibnetdiscover`` (the
nodes and cables; without it there is no scan), ``iblinkinfo --line`` (every port's
state, also ports that are down), ``smpquery portinfo`` on every cabled port (enabled and
supported widths and speeds), ``sminfo`` and ``saquery SMIR`` (the subnet managers),
``ibqueryerrors`` with a zero threshold file and with ``--counters`` (every non-zero error
counter and the data counters), and with ``routes`` ``ibroute`` on every switch (the
forwarding tables ``fabric route`` and ``health`` follow).

On a cluster the diagnostics run as they are; with a simulation (``sim``) under
``LD_PRELOAD`` of libumad2sim.so, in the simulation's scratch directory. The run stores
the snapshot (artifact ``fabric``), every diagnostic's output (artifact ``diags``) and the
counters as measurements; the analysis reads it back with ``load_snapshot``.
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.fabric import same_fabric
from fabricbench.analysis.fabric_model import ERROR_COUNTERS, Snapshot
from fabricbench.analysis import fabric_parse as parse
from fabricbench.errors import FabricbenchError
from fabricbench.launch import procs
from fabricbench.store import Run
from fabricbench.workflows.hosts import local_provenance
from fabricbench.workflows.session import Session
from fabricbench import numbers

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

DISCOVERY_TIMEOUT_S = 60.0
QUERY_TIMEOUT_S = 10.0
QUERY_PARALLEL = 4  # per-port queries (smpquery, ibroute) in flight at once
PREVIOUS_LOOKBACK = 50  # fabric runs searched for the previous snapshot of the same fabric
IGNORED_STDERR = ("sim_connect: attached as client",)  # libumad2sim says hello on every call


class FabricCannotScan(FabricbenchError):
    """The diagnostics are missing or the fabric could not be discovered: exit status 2."""

    exit_code = 2


class NotASnapshot(FabricbenchError):
    exit_code = 2


@dataclass
class Diags:
    """Runs infiniband-diags commands with a timeout each and keeps what they printed."""

    env: Optional[Dict[str, str]] = None
    cwd: Optional[str] = None
    sweep_timeout: float = DISCOVERY_TIMEOUT_S  # a diagnostic that walks the whole fabric
    outputs: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    problems: List[str] = field(default_factory=list)

    def sweep(self, name: str, argv: Sequence[str], ok: Sequence[int] = (0,)) -> Optional[str]:
        """A diagnostic that walks the whole fabric: the sweep timeout, and what it printed before failing
        (a fabric with one unreachable node is still mostly discovered)."""
        return self.run(name, argv, timeout=self.sweep_timeout, ok=ok, partial=True)

    def run(self, name: str, argv: Sequence[str], timeout: float = QUERY_TIMEOUT_S, ok: Sequence[int] = (0,),
            partial: bool = False) -> Optional[str]:
        """stdout, or None (noted in ``problems``) when the command failed (an exit status not in `ok`;
        with `partial`, what it printed is still returned), timed out or is missing."""
        tool = shutil.which(argv[0]) or next((p for p in (f"/usr/sbin/{argv[0]}", f"/sbin/{argv[0]}") if os.access(p, os.X_OK)), None)
        if tool is None:
            raise FabricCannotScan(f"{argv[0]} not found: install infiniband-diags (Debian: apt-get install infiniband-diags)")
        started = time.monotonic()
        record: Dict[str, Any] = {"argv": list(argv)}
        try:
            done = procs.run_short([tool, *argv[1:]], timeout=timeout, env=self.env, cwd=self.cwd)
            record.update(rc=done.returncode, stdout=done.stdout, stderr=_stderr(done.stderr))
        except procs.ProcessTimeout:
            record.update(rc=None, stdout="", stderr="", error=f"timed out after {numbers.seconds(timeout)} s")
        except OSError as exc:
            record.update(rc=None, stdout="", stderr="", error=str(exc))
        record["seconds"] = round(time.monotonic() - started, 3)
        self.outputs[name] = record
        if record.get("error") or record["rc"] not in ok:
            why = record.get("error") or (record["stderr"].strip().splitlines() or [f"exit status {record['rc']}"])[-1]
            self.problems.append(f"{' '.join(argv)}: {why}")
            return record["stdout"] or None if partial and not record.get("error") else None
        return record["stdout"]


    def run_many(self, commands: Dict[Any, Tuple[str, Sequence[str]]]) -> Dict[Any, Optional[str]]:
        """{key: (name, argv)} -> {key: stdout or None}, QUERY_PARALLEL at a time: a fabric has thousands of ports,
        and each query mostly waits for its answer."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=QUERY_PARALLEL) as pool:
            futures = {key: pool.submit(self.run, name, argv) for key, (name, argv) in commands.items()}
            return {key: f.result() for key, f in futures.items()}


def _stderr(text: str) -> str:
    return "".join(l for l in text.splitlines(keepends=True) if not any(s in l for s in IGNORED_STDERR))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def collect(diags: Diags, source: str, routes: bool = False, design: Optional[Dict[str, Any]] = None) -> Snapshot:
    """Run the diagnostics and assemble the snapshot (see the module docstring)."""
    taken = _now()
    text = diags.sweep("ibnetdiscover", ["ibnetdiscover"])
    discovered = parse.parse_ibnetdiscover(text or "")
    if not discovered["nodes"]:
        why = diags.problems[-1] if diags.problems else "it found no nodes"
        hint = "" if source.startswith("sim:") else " (no InfiniBand port here? fabricbench fabric sim up, then --sim)"
        raise FabricCannotScan(f"could not discover the fabric: {why}{hint}")
    links = parse.parse_iblinkinfo(diags.sweep("iblinkinfo", ["iblinkinfo", "--line"]) or "")
    lids = {n["guid"]: n["lid"] for n in discovered["nodes"] if n["kind"] == "switch"}
    queries = {(p["node"], p["port"]): lids.get(p["node"]) if p["node"] in lids else p.get("lid") for p in discovered["ports"]}
    portinfo = {key: parse.parse_portinfo(out or "") for key, out in diags.run_many(
        {key: (f"portinfo {key[0]} {key[1]}", ["smpquery", "portinfo", str(lid), str(key[1])])
         for key, lid in queries.items() if lid}).items()}
    sminfo = parse.parse_sminfo(diags.run("sminfo", ["sminfo"]) or "")
    smir = parse.parse_smir(diags.run("saquery SMIR", ["saquery", "SMIR"]) or "") if sminfo else []
    with tempfile.TemporaryDirectory(prefix="fabricbench-thresholds-") as tmp:
        zero = Path(tmp) / "error_thresholds"
        zero.write_text("".join(f"{name}=0\n" for name in ERROR_COUNTERS))
        # ibqueryerrors exits 1 when it found ports above the thresholds: that is an answer, not a failure
        errors_text = diags.sweep("ibqueryerrors", ["ibqueryerrors", "--threshold-file", str(zero)], ok=(0, 1))
    counters_text = diags.sweep("ibqueryerrors --counters", ["ibqueryerrors", "--counters"])
    tables: Optional[Dict[str, Dict[int, int]]] = None
    if routes:
        dumps = diags.run_many({guid: (f"ibroute {guid}", ["ibroute", str(lid)]) for guid, lid in lids.items() if lid})
        tables = {guid: lft for guid, lft in ((g, parse.parse_ibroute(out or "")["lft"]) for g, out in dumps.items()) if lft}
    return parse.assemble(
        taken=taken, source=source, discovered=discovered, links=links, portinfo=portinfo, sminfo=sminfo, smir=smir,
        errors=parse.parse_ibqueryerrors(errors_text) if errors_text is not None else None,
        counters=parse.parse_ibqueryerrors(counters_text or ""), routes=tables, design=design, problems=diags.problems)


def sim_diags(sim_name: Optional[str]) -> Tuple[Diags, str, Dict[str, Any], Any]:
    """(Diags under the simulation's preload, source, design, sim) for a running simulation."""
    from fabricbench.workflows import fabric_sim

    sim = fabric_sim.require(sim_name)
    scratch = sim.dir / "diag"
    scratch.mkdir(exist_ok=True)
    return Diags(env=sim.diag_env(), cwd=str(scratch)), f"sim:{sim.name}", sim.design(), sim


def _clean_scratch(diags: Diags) -> None:
    """libumad2sim leaves sys-PID directories behind for processes that were killed."""
    if diags.cwd:
        for entry in Path(diags.cwd).glob("sys-*"):
            shutil.rmtree(entry, ignore_errors=True)


def scan(store: Store, sim: Optional[str] = None, use_sim: bool = False, routes: bool = False,
         design: Optional[Dict[str, Any]] = None, label: Optional[str] = None,
         tags: Optional[Dict[str, str]] = None, timeout: Optional[float] = None) -> Tuple[Run, Snapshot]:
    """Scan (the simulation when ``use_sim``) and store the snapshot; (run, snapshot). ``timeout``: the longest
    a diagnostic that walks the whole fabric may take (default DISCOVERY_TIMEOUT_S)."""
    if use_sim:
        diags, source, sim_design, _ = sim_diags(sim)
        design = {**sim_design, **(design or {})}
    else:
        diags, source = Diags(), f"live:{socket.gethostname()}"
    if timeout:
        diags.sweep_timeout = timeout
    try:
        snapshot = collect(diags, source, routes=routes, design=design)
    finally:
        _clean_scratch(diags)
    provenance = {"fabric_source": source, "hostname": socket.gethostname(), "routes": routes,
                  "design": snapshot.design}
    with Session(store, kind="fabric", label=label, tags=tags, provenance=provenance, unit="counters") as session:
        # The host that scanned (its HCAs, OS, kernel) and the discovery command the snapshot rests on.
        first = next(iter(diags.outputs.values()), {})
        session.record_provenance(local_provenance(launch=first.get("argv")))
        session.artifact("fabric", snapshot.to_dict())
        session.artifact("diags", diags.outputs)
        session.add_now(snapshot.counter_measurements())
        failed = f"; {len(diags.problems)} diagnostics failed" if diags.problems else ""
        session.note(f"{len(snapshot.switches())} switches, {len(snapshot.cas())} HCAs, {len(snapshot.links())} links{failed}")
    return session.run, snapshot


# -- reading snapshots back ----------------------------------------------------------------------------

def load_snapshot(store: Store, ref: Any) -> Tuple[Run, Snapshot]:
    data = store.load(ref, benchmark="port_counters")
    artifact = store.artifact(data.run.id, "fabric")
    if data.run.kind != "fabric" or artifact is None:
        raise NotASnapshot(f"run {data.run.id} ({data.run.kind}) is not a fabric snapshot (fabricbench fabric scan)")
    try:
        return data.run, Snapshot.from_stored(artifact, data.measurements)
    except (ValueError, KeyError, TypeError) as exc:
        raise NotASnapshot(f"run {data.run.id}: {exc}") from None


def latest_snapshot(store: Store, with_routes: bool = False) -> Optional[Tuple[Run, Snapshot]]:
    """The newest complete fabric snapshot (with forwarding tables, when asked)."""
    for run in reversed(store.list_runs(kind="fabric", limit=PREVIOUS_LOOKBACK)):
        if run.status != "complete" or (with_routes and not (run.provenance or {}).get("routes")):
            continue
        return load_snapshot(store, run.id)
    return None


def previous_snapshot(store: Store, run: Run, snapshot: Snapshot) -> Optional[Tuple[Run, Snapshot]]:
    """The newest earlier complete snapshot of the same fabric (same source, mostly the same switches)."""
    source = (run.provenance or {}).get("fabric_source")
    for other in reversed(store.list_runs(kind="fabric")):
        if other.id >= run.id or other.status != "complete" or (other.provenance or {}).get("fabric_source") != source:
            continue
        found = load_snapshot(store, other.id)
        if same_fabric(snapshot, found[1]):
            return found
    return None


def judge_stored(store: Store, run: Run, snapshot: Snapshot, against: Optional[Any] = None,
                 thresholds: Optional[Any] = None) -> Tuple[Any, Optional[Tuple[Run, Snapshot]]]:
    """The verdict on a stored snapshot, as `fabric check` and the report give it: judged against
    the snapshot `against` names, else the newest earlier snapshot of the same fabric in the store
    (so that a cable that went down since is found, wherever the verdict is shown).
    Returns (analysis.fabric.FabricReport, (previous run, previous snapshot) or None)."""
    from fabricbench.analysis.fabric import FabricThresholds, check

    previous = load_snapshot(store, against) if against else previous_snapshot(store, run, snapshot)
    report = check(snapshot, previous[1] if previous else None, thresholds or FabricThresholds())
    return report, previous


# -- a live route ---------------------------------------------------------------------------------------

def trace(host_a: str, host_b: str, use_sim: bool = False, sim: Optional[str] = None) -> List[Tuple[str, int, str, int]]:
    """The hops between two hosts as ibtracert reports them now: [(from, out port, to, in port)]."""
    diags = sim_diags(sim)[0] if use_sim else Diags()
    try:
        discovered = parse.parse_ibnetdiscover(diags.sweep("ibnetdiscover", ["ibnetdiscover"]) or "")
        if not discovered["nodes"]:
            raise FabricCannotScan(f"could not discover the fabric: {diags.problems[-1] if diags.problems else 'no nodes'}")
        lids = {}
        for node in discovered["nodes"]:
            if node["kind"] == "ca" and node["desc"].split():
                host = node["desc"].split()[0]
                lid = next((p["lid"] for p in discovered["ports"] if p["node"] == node["guid"] and p.get("lid")), None)
                lids.setdefault(host, lid)
        missing = [h for h in (host_a, host_b) if not lids.get(h)]
        if missing:
            raise FabricCannotScan(f"no HCA with a LID for {', '.join(missing)} (hosts: {', '.join(sorted(lids)[:12])})")
        out = diags.run("ibtracert", ["ibtracert", str(lids[host_a]), str(lids[host_b])])
        if out is None:
            raise FabricCannotScan(f"ibtracert {host_a} {host_b}: {diags.problems[-1]}")
        return parse.parse_ibtracert(out)
    finally:
        _clean_scratch(diags)


# -- next to a health check ---------------------------------------------------------------------------

def health_notes(store: Store, result: Any) -> List[str]:
    """Notes for a health result from the newest fabric snapshot with forwarding tables that has HCAs
    of the checked nodes: the cables the slow pairs share and what the fabric check says of them.
    Nothing when there is no such snapshot; a note, never an error, when it cannot be read."""
    from fabricbench.analysis.fabric import check
    from fabricbench.analysis.fabric_routes import annotate_health

    try:
        found = latest_snapshot(store, with_routes=True)
        if found is None:
            return []
        run, snapshot = found
        hosts = snapshot.host_ports()
        if not any(n in hosts or str(n).split(".")[0] in hosts for n in result.report.nodes):
            return []
        previous = previous_snapshot(store, run, snapshot)
        findings = check(snapshot, previous[1] if previous else None).findings
    except FabricbenchError as exc:
        return [f"fabric snapshot not used: {exc}"]
    from fabricbench.report.words.fabric import evidence

    findings = [replace(f, evidence=evidence(f)) for f in findings]  # the notes quote the evidence in words
    return annotate_health(result, snapshot, f"snapshot run {run.id} of {snapshot.taken}", findings)
