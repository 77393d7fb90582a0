"""Many readers, one file server: ``fabricbench transfer`` into a run of kind ``transfer``.

The tool starts a real xrootd on the server node with its own config, data folder and a
file of random bytes, and (for the raw baseline) a plain TCP sender that sends the same
number of bytes from memory. For every repetition and reader count, that many readers on
other nodes copy the file at the same moment (``xrdcp root://server//file -``, its output
read and discarded beside the reader: /dev/null with a clock on it), or read the raw
stream. Each round is stored as it ends:

    benchmark "transfer", params {protocol, cache, readers, repetition, size[, reader, node]}
    metric "reader_throughput" (MB/s; None for a failed copy, detail.reason says why),
           "aggregate_throughput" (MB/s), "time_to_last_byte" (s), "start_skew" (s),
           "fairness" (Jain's index)

Before each file round the server's copy of the file is evicted from the page cache
(``cold``: posix_fadvise DONTNEED on that file only) or read into it (``warm``).

Servers are bound to the server node only: in the lab xrootd runs inside the node's
namespace, whose only addresses are its lab address and loopback, and the TCP sender
binds to the node's address; in both cases only the readers are allowed in (xrootd's
``xrd.allow``). Every server is remembered by pid and stopped by it when the command
ends, however it ends (Ctrl-C, a failed reader, an error); the data folder is removed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from fabricbench.analysis.transfer import (BENCHMARK, MB, RAW, READER_METRIC, ReaderResult, TransferSummary, judge,
                                           round_figures, summarize)
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench.lab.errors import LabError
from fabricbench.lab.rates import tcp_goodput
from fabricbench.launch.failure import ssh_unreachable
from fabricbench.launch.nodes import Node, Nodes
from fabricbench.launch.procs import Daemon, Job, ProcessTimeout, run_short
from fabricbench.store import Measurement, Run
from fabricbench.launch import transfer_peer
from fabricbench.report.words.transfer import reader_reason
from fabricbench.workflows.hosts import node_provenance
from fabricbench.workflows.session import RunFailed, Session
from fabricbench import numbers

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

KIND = "transfer"
PROTOCOLS = ("xrootd", RAW)
CACHES = ("warm", "cold")
NO_CACHE = "none"  # the raw stream comes from memory: no file, no cache state
PEER = Path(transfer_peer.__file__).resolve()
XROOTD_USER = "nobody"  # xrootd refuses to run as root; started by root it drops to this user (-R)
READY_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 60.0
# A reader gives up on a server that does not answer within seconds, not minutes.
XRDCP_ENV = ("XRD_CONNECTIONRETRY=1", "XRD_CONNECTIONWINDOW=15", "XRD_REQUESTTIMEOUT=120")
PID_LINE = re.compile(r"^fabricbench-pid (\d+)$", re.M)
XROOTD_READY = re.compile(r"xrootd \S+:(\d+) initialization completed")
XROOTD_FAILED = re.compile(r"initialization failed|execution terminated|program is terminating")
TCP_READY = re.compile(r"^fabricbench-tcp listening \S+ (\d+)$", re.M)


class TransferCannotRun(FabricbenchError):
    """The study could not start (bad arguments, a missing tool, too few nodes): exit status 2."""

    exit_code = 2


@dataclass
class TransferPlan:
    server: str
    readers: List[int]
    file_size: int = 1 << 30
    protocols: List[str] = field(default_factory=lambda: list(PROTOCOLS))
    caches: List[str] = field(default_factory=lambda: ["warm"])
    repeat: int = 3
    reader_nodes: List[str] = field(default_factory=list)  # default (lab): every node but the server
    data_dir: str = "/var/tmp"
    timeout: Optional[float] = None  # per round, seconds; default from the file size and the ceiling

    def __post_init__(self):
        if not self.readers or any(n < 1 for n in self.readers):
            raise UsageError("--readers takes reader counts of at least 1, e.g. 1,2,4")
        if len(set(self.readers)) != len(self.readers):
            raise UsageError("--readers names a reader count twice")
        if self.file_size < 1:
            raise UsageError("--file-size must be at least 1 byte")
        if self.repeat < 1:
            raise UsageError("--repeat must be at least 1")
        for p in self.protocols:
            if p not in PROTOCOLS:
                raise UsageError(f"--protocol {p}: choose xrootd, tcp or both (xrootd,tcp)")
        for c in self.caches:
            if c not in CACHES:
                raise UsageError(f"--cache {c}: choose warm, cold or both (warm,cold)")
        if not self.protocols or not self.caches:
            raise UsageError("give at least one --protocol and one --cache")

    def variants(self) -> List[tuple]:
        """(protocol, cache) pairs of one repetition: the raw stream once (it has no cache state)."""
        out = [(p, c) for p in self.protocols if p != RAW for c in self.caches]
        if RAW in self.protocols:
            out.append((RAW, NO_CACHE))
        return out

    def rounds(self) -> int:
        return self.repeat * len(self.readers) * len(self.variants())

    def describe(self) -> Dict[str, Any]:
        return {"readers": list(self.readers), "file_size": self.file_size, "protocols": list(self.protocols),
                "caches": list(self.caches), "repeat": self.repeat, "data_dir": self.data_dir,
                "timeout_s": self.timeout}


@dataclass
class TransferOutcome:
    run: Run
    summary: TransferSummary
    failed_transfers: int
    servers: List[Dict[str, Any]]  # how each server ended: pid, exit status, stopped


Progress = Callable[[int, int, str], None]  # (rounds done, rounds planned, what runs now)


# ---- where things run ---------------------------------------------------------------------------

def place(nodes: Nodes, plan: TransferPlan) -> tuple:
    """(server node, reader nodes in order); enough readers for the largest count, none on the server."""
    try:
        server = nodes.node(plan.server)
        readers = [nodes.node(r) for r in plan.reader_nodes]
    except LabError as exc:
        raise TransferCannotRun(str(exc)) from None
    if not readers:
        readers = [n for n in nodes.all() if n.name != server.name]
        if not readers:
            raise TransferCannotRun("name the reader hosts with --hosts (readers run on other hosts than the server)")
    if nodes.kind == "lab":
        if any(r.name == server.name for r in readers):
            raise TransferCannotRun(f"{server.name} is the server; readers run on the other nodes")
        if len({r.name for r in readers}) != len(readers):
            raise TransferCannotRun("a reader node is named twice; each reader has a node of its own")
    need = max(plan.readers)
    if need > len(readers):
        raise TransferCannotRun(
            f"{need} readers need {need} reader nodes besides the server {server.name}; there "
            f"{'is' if len(readers) == 1 else 'are'} {len(readers)} ({', '.join(r.name for r in readers)})"
        )
    return server, readers


def _goodput(rate_bps: Optional[int], mtu: int) -> Optional[float]:
    return tcp_goodput(rate_bps, mtu) if rate_bps else None


def ceiling(server: Node, readers: Sequence[Node], mtu: int = 1500, uplink_bps: Optional[int] = None) -> Optional[float]:
    """Bytes/s the readers can get from the server together: the server link's TCP goodput, unless
    the readers' own links (or the uplink between two switches) allow less."""
    limit = _goodput(server.rate_bps, mtu)
    own = [_goodput(r.rate_bps, mtu) for r in readers]
    if limit is None or any(g is None for g in own):
        return limit
    near = sum(g for r, g in zip(readers, own) if r.switch == server.switch)
    far = sum(g for r, g in zip(readers, own) if r.switch != server.switch)
    if far and uplink_bps:
        far = min(far, tcp_goodput(uplink_bps, mtu))
    return min(limit, near + far)


def _lab_shape(nodes: Nodes) -> tuple:
    lab = getattr(nodes, "lab", None)
    if lab is None:
        return 1500, None
    return lab.spec.mtu, lab.spec.uplink_bps() if lab.spec.switches == 2 else None


# ---- probes ----------------------------------------------------------------------------------

def _probe(nodes: Nodes, node: Node, argv: Sequence[str], what: str, install: str) -> str:
    """First line a tool prints about its version on `node`; TransferCannotRun when it is missing."""
    try:
        done = run_short(nodes.argv(node, argv), timeout=PROBE_TIMEOUT_S)
    except ProcessTimeout:
        via_ssh = nodes.argv(node, ["true"])[0] == "ssh"
        where = f"host {node.name} does not answer through ssh" if via_ssh else f"{what} on {node.name} did not answer"
        raise TransferCannotRun(f"{where} within {numbers.seconds(PROBE_TIMEOUT_S)} s"
                                + (f" (try: ssh {node.name} true)" if via_ssh else "")) from None
    except OSError as exc:
        raise TransferCannotRun(f"cannot run {what} on {node.name}: {exc}") from None
    text = (done.stdout or "").strip() or (done.stderr or "").strip()
    unreachable = ssh_unreachable(done.returncode, done.stderr) if nodes.argv(node, ["true"])[0] == "ssh" else None
    if unreachable:
        raise TransferCannotRun(f"cannot reach host {node.name} through ssh: {unreachable} "
                                f"(try: ssh {node.name} true)")
    if done.returncode != 0:
        raise TransferCannotRun(f"{what} does not run on {node.name} ({text.splitlines()[-1] if text else done.returncode}); "
                                f"install it ({install}; or scripts/install-test-deps.sh transfer)")
    return text.splitlines()[0] if text else "unknown"


def _host_facts(nodes: Nodes, node_list: Sequence[Node]) -> tuple:
    """Provenance facts of each node (python -m fabricbench.provenance there); nodes that could not say."""
    facts, missing = [], []
    for node in node_list:
        try:
            done = run_short(nodes.argv(node, [sys.executable, "-m", "fabricbench.provenance"]), timeout=PROBE_TIMEOUT_S)
            if done.returncode == 0 and done.stdout.strip():
                facts.append(json.loads(done.stdout.strip().splitlines()[-1]))
                continue
        except (OSError, ProcessTimeout, ValueError):
            pass
        missing.append(node.name)
    return facts, missing


def _peer(nodes: Nodes, node: Node, args: Sequence[str], timeout: float = 600.0) -> Dict[str, Any]:
    """Run a peer command to its end on `node`; its JSON answer (RunFailed with its words if it fails)."""
    try:
        done = run_short(nodes.script(node, PEER, list(args)), timeout=timeout)
    except ProcessTimeout:
        raise RunFailed(f"'{args[0]}' on {node.name} did not finish within {numbers.seconds(timeout)} s") from None
    answer: Dict[str, Any] = {}
    for line in reversed(done.stdout.splitlines()):
        try:
            answer = json.loads(line)
            break
        except ValueError:
            continue
    if done.returncode != 0 or "error" in answer or not answer:
        why = answer.get("error") or (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RunFailed(f"'{args[0]}' on {node.name} failed: {why}")
    return answer


# ---- servers -----------------------------------------------------------------------------------

def xrootd_config(workdir: str, allowed: Sequence[str]) -> str:
    run = f"{workdir}/run"
    lines = [
        "# written by fabricbench transfer: one read-only server for one run",
        "xrd.port any",
        f"xrd.homepath {run}",
        f"all.adminpath {run}",
        f"all.pidpath {run}",
        f"oss.localroot {workdir}/data",
        f"all.export /{transfer_peer.FILE_DIR} r/o",
        *(f"xrd.allow host {a}" for a in dict.fromkeys(allowed)),
    ]
    return "\n".join(lines) + "\n"


class Server:
    """A server started on a node and stopped by pid: locally its own pid (the lab's exec chain
    keeps it), on an ssh host the remote pid the wrapper reports first."""

    def __init__(self, nodes: Nodes, node: Node, argv: Sequence[str], log_path: str, what: str):
        self.nodes, self.node, self.what = nodes, node, what
        self.local = nodes.is_local(node)
        if not self.local:
            argv = ["sh", "-c", 'echo "fabricbench-pid $$"; exec "$@"', "sh", *argv]
        self.daemon = Daemon(nodes.argv(node, argv), log_path)
        self.port: Optional[int] = None
        self.exit_status: Optional[int] = None
        self.stopped = False

    @property
    def pid(self) -> int:
        found = PID_LINE.search(self.daemon.log()) if not self.local else None
        return int(found.group(1)) if found else self.daemon.pid

    def wait_ready(self, ready: "re.Pattern[str]", failed: Optional["re.Pattern[str]"] = None) -> int:
        def check(log: str) -> Optional[int]:
            if failed is not None and failed.search(log):
                raise RuntimeError(f"{self.what} on {self.node.name} did not start: {self.daemon.log_tail()}")
            m = ready.search(log)
            return int(m.group(1)) if m else None

        try:
            self.port = self.daemon.wait_ready(check, READY_TIMEOUT_S, f"{self.what} on {self.node.name}")
        except RuntimeError as exc:
            self.stop()
            raise RunFailed(str(exc)) from None
        return self.port

    def alive(self) -> bool:
        return self.daemon.alive()

    def stop(self) -> Dict[str, Any]:
        """Stop by pid (idempotent); what happened, for the run's record."""
        if not self.stopped:
            pid = self.pid
            if not self.local:
                for sig, pause in (("TERM", 2.0), ("KILL", 0.0)):
                    try:
                        run_short(self.nodes.argv(self.node, ["kill", f"-{sig}", str(pid)]), timeout=30)
                    except (OSError, ProcessTimeout):
                        pass
                    time.sleep(pause)
            self.exit_status = self.daemon.stop()
            self.stopped = True
        return {"server": self.what, "node": self.node.name, "pid": self.pid, "port": self.port,
                "exit_status": self.exit_status, "stopped": self.stopped, "log_tail": self.daemon.log_tail(12)}


# ---- one round ------------------------------------------------------------------------------------

def _reader_argv(nodes: Nodes, node: Node, at: float, protocol: str, server: Node, port: int, url_path: str) -> List[str]:
    if protocol == RAW:
        return nodes.script(node, PEER, ["read-tcp", "--at", numbers.fixed(at, 6), server.address, str(port)])
    url = f"root://{server.address}:{port}/{url_path}"
    return nodes.script(node, PEER, ["read", "--at", numbers.fixed(at, 6), "--", "env", *XRDCP_ENV, "xrdcp", "--nopbar", url, "-"])


def _collect(job: Job, index: int, node: Node, deadline: float) -> ReaderResult:
    lines: List[str] = []
    try:
        for line in job.lines(deadline=deadline):
            lines.append(line)
        rc = job.wait(timeout=max(1.0, deadline - time.monotonic()))
    except (TimeoutError, ProcessTimeout):
        job.stop()
        return ReaderResult(index, node.name, reason="did not finish before the round's timeout")
    record: Dict[str, Any] = {}
    for line in reversed(lines):
        try:
            record = json.loads(line)
            break
        except ValueError:
            continue
    result = ReaderResult(index, node.name, bytes=int(record.get("bytes") or 0), t_start=record.get("t_start"),
                          t_first=record.get("t_first"), t_last=record.get("t_last"),
                          exit_status=record.get("exit_status"))
    stderr = [ln.strip() for ln in job.stderr.splitlines() if ln.strip()]
    if not record:
        how = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        result.reason = f"the reader ended without a result ({how}){': ' + stderr[-1] if stderr else ''}"
    elif record.get("error"):
        result.reason = record["error"]
    elif record.get("exit_status") not in (0, None) and stderr:
        result.reason = f"exit status {record['exit_status']}: {stderr[-1]}"
    return result


def run_round(nodes: Nodes, readers: Sequence[Node], argv_for: Callable[[Node, float], List[str]],
              lead: float, timeout: float) -> List[ReaderResult]:
    """Start every reader at the same wall-clock moment (now + lead); their results, in order."""
    at = time.time() + lead
    jobs: List[Job] = []
    try:
        for node in readers:
            jobs.append(Job(argv_for(node, at)))
        deadline = time.monotonic() + lead + timeout
        return [_collect(job, i, node, deadline) for i, (job, node) in enumerate(zip(jobs, readers))]
    finally:
        for job in jobs:
            job.stop()


def _points(key: Dict[str, Any], results: Sequence[ReaderResult], ceiling_bps: Optional[float],
            resident: Optional[int]) -> List[Measurement]:
    figures = round_figures(results)
    out = []
    for r in results:
        tp = r.throughput
        out.append(Measurement(
            benchmark=BENCHMARK, params={**key, "reader": r.index, "node": r.node}, metric=READER_METRIC, unit="MB/s",
            value=tp / MB if tp is not None else None, n=1,
            detail={"status": "ok" if r.ok else "failed", "reason": reader_reason(r), "bytes": r.bytes, "t_start": r.t_start,
                    "t_first": r.t_first, "t_last": r.t_last, "elapsed_s": r.elapsed,
                    "first_byte_s": r.first_byte_latency, "exit_status": r.exit_status},
        ))
    shared = {"readers_ok": figures.ok, "readers_failed": figures.failed, "bytes": figures.bytes,
              "ceiling_MBps": ceiling_bps / MB if ceiling_bps else None, "cache_resident_bytes": resident,
              "first_byte_spread_s": figures.first_byte_spread}
    for metric, unit, value in (
        ("aggregate_throughput", "MB/s", figures.aggregate / MB if figures.aggregate is not None else None),
        ("time_to_last_byte", "s", figures.time_to_last_byte),
        ("start_skew", "s", figures.start_skew),
        ("fairness", "Jain index", figures.fairness),
    ):
        out.append(Measurement(benchmark=BENCHMARK, params=dict(key), metric=metric, unit=unit, value=value, n=1,
                               detail=dict(shared)))
    return out


def _lead(readers: int) -> float:
    """Time for every reader's wrapper to start before the common start moment (Python startup, shared CPUs)."""
    return 1.0 + 0.25 * readers


def _round_timeout(plan: TransferPlan, readers: int, ceiling_bps: Optional[float]) -> float:
    if plan.timeout:
        return plan.timeout
    if ceiling_bps:
        return 60.0 + 10.0 * plan.file_size * readers / ceiling_bps
    return 3600.0


# ---- the study ---------------------------------------------------------------------------------

def _versions(nodes: Nodes, plan: TransferPlan, server: Node, readers: Sequence[Node]) -> Dict[str, str]:
    """xrootd on the server, xrdcp on every reader node (TransferCannotRun when one is missing)."""
    if "xrootd" not in plan.protocols:
        return {}
    client = "Debian: apt-get install xrootd-client"
    found = {"xrootd": _probe(nodes, server, ["xrootd", "-v"], "xrootd", "Debian: apt-get install xrootd-server")}
    for node in dict.fromkeys(readers):
        found.setdefault("xrdcp", _probe(nodes, node, ["xrdcp", "--version"], "xrdcp", client))
    return found


class Study:
    """One transfer run: its facts, the server's data folder, the servers, the rounds."""

    def __init__(self, nodes: Nodes, plan: TransferPlan):
        self.nodes, self.plan = nodes, plan
        self.server, self.readers = place(nodes, plan)
        self.used = self.readers[: max(plan.readers)]
        mtu, uplink = _lab_shape(nodes)
        self.ceilings = {n: ceiling(self.server, self.readers[:n], mtu, uplink) for n in plan.readers}
        # xrootd refuses to serve as root: then it is told to drop to XROOTD_USER (on the server, which may be remote).
        self.as_root = _probe(nodes, self.server, ["id", "-u"], "id", "coreutils") == "0"
        goodput = _goodput(self.server.rate_bps, mtu)
        self.facts: Dict[str, Any] = {
            "launcher": nodes.kind,
            "where": nodes.describe(),
            "server": self.server.name,
            "server_address": self.server.address,
            "server_rate": self.server.rate_bps,
            "server_goodput_MBps": goodput / MB if goodput else None,
            "mtu": mtu,
            "reader_nodes": [{"name": r.name, "address": r.address, "rate": r.rate_bps} for r in self.used],
            "ceiling_MBps": {str(n): (c / MB if c else None) for n, c in self.ceilings.items()},
            "versions": _versions(nodes, plan, self.server, self.used),
            "xrootd_user": XROOTD_USER if self.as_root else None,
            "timing": "readers' wall clocks; a reader's output is read and discarded beside it",
            **plan.describe(),
        }
        self.provenance = {"transfer": self.facts, "hosts": [self.server.name, *(r.name for r in self.used)],
                           "nodes": 1 + len({r.name for r in self.used})}
        self.servers: List[Server] = []
        self.ports: Dict[str, int] = {}
        self.file: Dict[str, Any] = {}
        self.failed = 0
        self.transfers = 0  # reader copies attempted
        self.first_failure: Optional[str] = None

    def reader_command(self) -> List[str]:
        """What a reader of the first variant runs (the server's port and file are chosen when it starts)."""
        protocol = self.plan.variants()[0][0]
        if protocol == RAW:
            return self.nodes.script(self.used[0], PEER, ["read-tcp", self.server.address, "{port}"])
        return self.nodes.script(self.used[0], PEER, ["read", "--", "env", *XRDCP_ENV, "xrdcp", "--nopbar",
                                                      f"root://{self.server.address}:{{port}}/{{file}}", "-"])

    def prepare(self, workdir: str) -> None:
        """The file and the server's config in `workdir` on the server node."""
        need_disk = "cold" in self.plan.caches and "xrootd" in self.plan.protocols
        self.facts["workdir"] = workdir
        self.file = _peer(self.nodes, self.server, [
            "prepare", workdir, str(self.plan.file_size), *(["--disk"] if need_disk else []),
            *(["--owner", XROOTD_USER] if self.as_root else []),
            "--config", xrootd_config(workdir, [r.address for r in self.used]),
        ])
        self.facts.update({"file": self.file["path"], "filesystem": self.file["filesystem"]})

    def start_servers(self, logs: str) -> None:
        if "xrootd" in self.plan.protocols:
            argv = ["xrootd", "-I", "v4", "-c", self.file["config"], "-n", "fabricbench",
                    *(["-R", XROOTD_USER] if self.as_root else [])]
            self.servers.append(Server(self.nodes, self.server, argv, os.path.join(logs, "xrootd.log"), "xrootd"))
            self.ports["xrootd"] = self.servers[-1].wait_ready(XROOTD_READY, XROOTD_FAILED)
        if RAW in self.plan.protocols:
            argv = self.nodes.python(self.server, PEER, ["serve-tcp", self.server.address, str(self.plan.file_size)])
            self.servers.append(Server(self.nodes, self.server, argv, os.path.join(logs, "tcp.log"), "tcp sender"))
            self.ports[RAW] = self.servers[-1].wait_ready(TCP_READY)
        self.facts["ports"] = dict(self.ports)
        self.facts["server_pids"] = {s.what: s.pid for s in self.servers}

    def one_round(self, protocol: str, cache: str, readers: int, repetition: int) -> List[Measurement]:
        """Set the cache, run the readers, and the round's points."""
        resident = None
        if cache != NO_CACHE:
            resident = _peer(self.nodes, self.server, ["cache", self.file["path"], cache])["resident_bytes"]
        def argv_for(node: Node, at: float) -> List[str]:
            return _reader_argv(self.nodes, node, at, protocol, self.server, self.ports[protocol], self.file["url_path"])

        results = run_round(self.nodes, self.readers[:readers], argv_for, _lead(readers),
                            _round_timeout(self.plan, readers, self.ceilings[readers]))
        results = [judge(r, self.plan.file_size) for r in results]
        self.failed += sum(1 for r in results if not r.ok)
        self.transfers += len(results)
        if self.first_failure is None:
            self.first_failure = next((f"{r.node}: {reader_reason(r)}" for r in results if not r.ok), None)
        for s in self.servers:
            if not s.alive():
                raise RunFailed(f"the {s.what} on {self.server.name} exited during the study: {s.daemon.log_tail()}")
        key = {"protocol": protocol, "cache": cache, "readers": readers, "repetition": repetition,
               "size": self.plan.file_size}
        return _points(key, results, self.ceilings[readers], resident)

    def stop(self, workdir: str) -> List[Dict[str, Any]]:
        """Every server stopped by pid, the data folder removed; how each server ended."""
        ended = [s.stop() for s in self.servers]
        try:
            _peer(self.nodes, self.server, ["cleanup", workdir], timeout=120)
        except RunFailed:
            self.facts["workdir_left"] = workdir
        self.facts["servers_stopped"] = [{k: v for k, v in e.items() if k != "log_tail"} for e in ended]
        return ended


def _describe_round(protocol: str, cache: str, readers: int, repetition: int, repeat: int) -> str:
    how = protocol if cache == NO_CACHE else f"{protocol}, {cache}"
    return f"{how}: {readers} reader{'s' if readers != 1 else ''}, repetition {repetition}/{repeat}"


def run_transfer(store: Store, nodes: Nodes, plan: TransferPlan, label: Optional[str] = None,
                 tags: Optional[Dict[str, str]] = None, command: Optional[str] = None,
                 progress: Optional[Progress] = None) -> TransferOutcome:
    """Run the study into a new run of kind transfer; returns it with its summary.

    Raises TransferCannotRun (nothing measured), RunFailed (a server failed; rounds done are
    kept), RunInterrupted on Ctrl-C; every server is stopped by pid before any of these.
    """
    study = Study(nodes, plan)
    ended: List[Dict[str, Any]] = []
    with Session(store, kind=KIND, label=label, tags=tags, command=command, provenance=study.provenance,
                 unit="rounds") as session:
        session.done, session.progress_total = 0, plan.rounds()
        host_facts, unknown = _host_facts(nodes, [study.server, *study.used])
        session.record_provenance(node_provenance(host_facts, launcher=nodes.kind, launch=study.reader_command(),
                                                  hosts=[n.name for n in (study.server, *study.used)]))
        if unknown:
            study.facts["facts_missing"] = unknown
        logs = tempfile.mkdtemp(prefix="fabricbench-transfer-")
        # The run's uuid, not its id: two databases both have a run 2, and their studies may run at once.
        workdir = f"{plan.data_dir.rstrip('/')}/fabricbench-transfer-{session.run.uuid}"
        try:
            study.prepare(workdir)
            study.start_servers(logs)
            session.update(provenance=study.provenance)
            for repetition in range(1, plan.repeat + 1):
                for n in plan.readers:
                    for protocol, cache in plan.variants():
                        if progress:
                            progress(session.done, plan.rounds(), _describe_round(protocol, cache, n, repetition, plan.repeat))
                        session.add_now(study.one_round(protocol, cache, n, repetition))
                        session.done += 1
            if progress:
                progress(session.done, plan.rounds(), "done")
            if study.transfers and study.failed == study.transfers:
                # nothing was measured: the run failed, whatever the cause (the server's link down, ...)
                session.status = "failed"
                session.message = (f"every reader transfer failed ({study.failed} of {study.transfers})"
                                   + (f"; first: {study.first_failure}" if study.first_failure else ""))
            elif study.failed:
                session.note(f"{study.failed} reader transfer{'s' if study.failed != 1 else ''} failed "
                             "(stored with the reason, left out of the per-reader figures)")
        finally:
            ended = study.stop(workdir)
            session.update(provenance=study.provenance)
            if ended:
                session.artifact("transfer_servers", ended)
            shutil.rmtree(logs, ignore_errors=True)
    run = store.get_run(session.run_id)
    data = store.load(run.id)
    return TransferOutcome(run, summarize(data.measurements, run.provenance), study.failed, ended)
