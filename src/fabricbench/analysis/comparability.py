"""Provenance facts of a run, what differs between two runs, and hosts that differ within a run.

- ``run_facts(run, hosts)`` -> ordered ``{key: Fact}``: the configuration that describes a run
  (nodes, ranks per node, CPU, memory, OS, kernel, MPI, fabric, link, PCIe, firmware, driver
  and module parameters, tuning variables), each value summarised over the run's hosts
  ("a, b" when hosts disagree). The report's configuration table and the comparability check
  both read it, so they always agree.
- ``check_comparability(run_a, hosts_a, run_b, hosts_b)`` -> ``Comparability``: every fact that
  differs (and could confound a comparison), and the facts recorded for neither run.
- ``is_replicate(run, hosts, other, other_hosts)`` -> whether another run measured the same
  configuration (what ``compare`` takes run-to-run noise from).
- ``host_outliers(hosts)`` -> hosts whose provenance digest differs from the majority, with the
  facts that differ.

Everything is defensive: imported runs have little provenance, and missing keys are simply
"not recorded". Nothing here prints: a fact's value is the recorded text, or a ``Quantity`` (memory,
an uneven ranks per node, a PCIe link) that ``report.words.comparability`` writes out, as it writes
the cautions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from fabricbench.analysis.peaks import choose_fabric, pcie_link

MISSING = None


@dataclass(frozen=True)
class Quantity:
    """A fact that is a figure: `kind` says what ("memory_gib", "ppn_uneven", "pcie"), `value` is rounded
    as it is shown (to `decimals`), so two facts are equal when they read the same; `detail`: what else
    the words need (a PCIe link's name and NIC)."""

    kind: str
    value: float
    decimals: int = 0
    detail: Tuple[str, ...] = ()


class Several(tuple):
    """The values of a fact when hosts disagree, in first-seen order (shown 'x, y')."""


FactValue = Union[str, Quantity, Several]


@dataclass
class Fact:
    key: str
    label: str
    value: Optional[FactValue]
    why: str = ""  # why it can confound a comparison


@dataclass
class Difference:
    key: str
    label: str
    a: Optional[FactValue]
    b: Optional[FactValue]
    why: str = ""


@dataclass(frozen=True)
class BusyHost:
    """A run's host was busy when the run started: its 1-minute load average over half its CPUs."""

    load: float
    cpus: int


@dataclass
class Comparability:
    differences: List[Difference] = field(default_factory=list)
    not_recorded: List[str] = field(default_factory=list)  # labels recorded for neither run
    # not a difference of configuration, but a reason to doubt: the sides ("A", "B") that started busy
    busy: List[Tuple[str, BusyHost]] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return not self.differences


# -- helpers -----------------------------------------------------------------------

def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _facts(host: Any) -> Dict[str, Any]:
    f = getattr(host, "facts", host)
    return f if isinstance(f, dict) else {}


def _text(v: Any) -> Optional[str]:
    if v is None or v == "" or v == [] or v == {}:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _summarise(values: Iterable[Any]) -> Optional[FactValue]:
    """One value, or 'x, y' when hosts disagree (in first-seen order; ``Several`` when a figure is
    among them); None when nowhere recorded."""
    seen = list(dict.fromkeys(t for t in (v if isinstance(v, Quantity) else _text(v) for v in values)
                              if t is not None))
    if not seen:
        return None
    if all(isinstance(t, str) for t in seen):
        return ", ".join(seen)
    return seen[0] if len(seen) == 1 else Several(seen)


def memory(n: Any) -> Optional[Quantity]:
    """Memory per node in GiB, as it reads: whole from 10 GiB up, else one decimal; None when unknown."""
    if not isinstance(n, (int, float)) or isinstance(n, bool) or n <= 0:
        return None
    g = n / 2**30
    decimals = 0 if g >= 10 else 1
    return Quantity("memory_gib", round(g, decimals), decimals)


def _host_list(run: Any, hosts: Sequence[Any]) -> List[str]:
    names = _get(run.provenance, "hosts")
    if isinstance(names, list) and names:
        return [str(h) for h in dict.fromkeys(names)]
    return [h.hostname for h in hosts]


def _nodes(run: Any, hosts: Sequence[Any]) -> Optional[int]:
    n = _get(run.provenance, "nodes")
    if isinstance(n, int) and n > 0:
        return n
    names = _host_list(run, hosts)
    return len(names) or None


def _ranks(run: Any) -> Optional[int]:
    r = _get(run.provenance, "ranks")
    if isinstance(r, int) and r > 0:
        return r
    return run.ranks if isinstance(run.ranks, int) and run.ranks > 0 else None


def _ppn(run: Any, hosts: Sequence[Any]) -> Optional[FactValue]:
    ppn = _get(run.provenance, "ppn")
    if isinstance(ppn, int) and ppn > 0:
        return str(ppn)
    ranks, nodes = _ranks(run), _nodes(run, hosts)
    if ranks and nodes:
        return str(ranks // nodes) if ranks % nodes == 0 else Quantity("ppn_uneven", round(ranks / nodes, 1), 1)
    return None


def _host_values(hosts: Sequence[Any], fn: Callable[[Dict[str, Any]], Any]) -> Optional[FactValue]:
    return _summarise(fn(_facts(h)) for h in hosts)


def _ib_ports(f: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [p for p in f.get("infiniband") or [] if isinstance(p, dict)]


def _mpi(run: Any, hosts: Sequence[Any]) -> Optional[str]:
    prov = _text(_get(run.provenance, "mpi_library"))
    if prov:
        return " ".join(prov.split())  # MPICH's first line is "MPICH Version:<TAB>4.0.2"
    return _host_values(hosts, lambda f: _get(f, "mpi", "library"))


def _mpi_launcher(run: Any) -> Optional[str]:
    """The MPI launcher that started the ranks: its version and path (Hydra's mpiexec, Open MPI's mpirun)."""
    launcher = _get(run.provenance, "mpi_launcher")
    if not isinstance(launcher, dict):
        return None
    version, path = _text(launcher.get("version")), _text(launcher.get("path"))
    return f"{version} ({path})" if version and path else version or path


def _mpi_version(run: Any, hosts: Sequence[Any]) -> Optional[str]:
    """The library's version as each host reports it (provenance "mpi_version" is the MPI standard's)."""
    return _host_values(hosts, lambda f: _get(f, "mpi", "version"))


def _launch(run: Any) -> Optional[str]:
    """The recorded launch command line (how ranks were started, with the launcher's options)."""
    argv = _get(run.provenance, "launch")
    if isinstance(argv, list) and argv:
        return " ".join(str(a) for a in argv)
    return None


def _fabric(run: Any, hosts: Sequence[Any]) -> Optional[str]:
    choice = choose_fabric(run, hosts)
    if choice is None:
        return _text(_get(run.provenance, "fabric"))
    if choice.how == "one host":
        return choice.fabric.name  # "shared memory (one host)" says how already
    return f"{choice.fabric.name} ({choice.how})"


def _nics(f: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Network devices that are up (or whose state is unknown), loopback left out."""
    return [n for n in f.get("net") or [] if isinstance(n, dict) and n.get("name") != "lo"
            and str(n.get("operstate") or "up").lower() != "down"]


def _link(f: Dict[str, Any]) -> Optional[str]:
    ports = [f"{p.get('device', '?')}/{p.get('port', '?')}: {p.get('rate')}" for p in _ib_ports(f) if p.get("rate")]
    if ports:
        return "; ".join(ports)
    nics = [n for n in _nics(f) if n.get("speed_mbps")]
    return "; ".join(f"{n.get('name')}: {n.get('speed_mbps')} Mb/s" for n in nics) or None


def _pcie(f: Dict[str, Any]) -> Optional[Quantity]:
    link = pcie_link(f)
    return Quantity("pcie", round(link.data_rate_MBps), 0, (link.name, link.nic)) if link else None


def _firmware(f: Dict[str, Any]) -> Optional[str]:
    return _summarise(p.get("fw_ver") for p in _ib_ports(f))


def _driver(f: Dict[str, Any]) -> Optional[str]:
    return _summarise(n.get("driver") for n in _nics(f))


def _mtu(f: Dict[str, Any]) -> Optional[str]:
    nics = _nics(f)
    return _summarise(f"{n.get('name')}={n.get('mtu')}" for n in nics if n.get("mtu"))


# (key, label, extractor(run, hosts), why it confounds)
_FIXED: List[tuple] = [
    ("nodes", "Nodes", lambda r, h: _text(_nodes(r, h)), "traffic inside one node never crosses the fabric"),
    ("ranks", "Ranks", lambda r, h: _text(_ranks(r)), "collectives and message rate scale with ranks"),
    ("ppn", "Ranks per node", _ppn, "ranks per node share the NIC, memory bandwidth and caches"),
    ("cpu_model", "CPU model", lambda r, h: _host_values(h, lambda f: _get(f, "cpu", "model")), "per-core speed sets small-message latency"),
    ("sockets", "Sockets", lambda r, h: _host_values(h, lambda f: _get(f, "cpu", "sockets")), "socket count changes NUMA distance to the NIC"),
    ("cores", "Cores per node", lambda r, h: _host_values(h, lambda f: _get(f, "cpu", "cores")), "cores per node change memory bandwidth per core"),
    ("threads", "Hardware threads per node", lambda r, h: _host_values(h, lambda f: _get(f, "cpu", "threads")), "SMT changes how ranks share cores"),
    ("governor", "CPU frequency governor", lambda r, h: _host_values(h, lambda f: _get(f, "cpu", "governor")), "power-saving governors add latency"),
    ("memory", "Memory per node", lambda r, h: _host_values(h, lambda f: memory(f.get("memory_bytes"))), "memory size and speed affect large messages"),
    ("numa_nodes", "NUMA nodes", lambda r, h: _host_values(h, lambda f: f.get("numa_nodes")), "NUMA layout changes which ranks are near the NIC"),
    ("os", "OS", lambda r, h: _host_values(h, lambda f: f.get("os")), "OS and its drivers differ"),
    ("kernel", "Kernel", lambda r, h: _host_values(h, lambda f: f.get("kernel")), "kernel version changes drivers and scheduling"),
    ("mpi_library", "MPI library", _mpi, "MPI library and its protocol thresholds"),
    ("mpi_version", "MPI version", _mpi_version, "MPI versions change eager/rendezvous thresholds and algorithms"),
    ("mpi_standard", "MPI standard version", lambda r, h: _text(_get(r.provenance, "mpi_version")), "MPI standard level of the library"),
    ("compiler", "Compiler", lambda r, h: _host_values(h, lambda f: f.get("compiler")), "compiler and flags of the benchmark"),
    ("launcher", "Launcher", lambda r, h: _text(_get(r.provenance, "launcher")), "launchers bind and map ranks differently"),
    ("mpi_launcher", "MPI launcher", lambda r, h: _mpi_launcher(r), "each MPI's launcher places, binds and wires up ranks its own way"),
    ("launch", "Launch command", lambda r, h: _launch(r), "launcher options (e.g. --mca btl tcp,self) choose the transport"),
    ("fabric", "Fabric", _fabric, "the interconnect itself"),
    ("link", "Link (port rate / NIC speed)", lambda r, h: _host_values(h, _link), "a link trained at a lower rate or width"),
    ("pcie", "NIC PCIe link", lambda r, h: _host_values(h, _pcie), "a narrow or slow PCIe slot caps bandwidth"),
    ("firmware", "HCA firmware", lambda r, h: _host_values(h, _firmware), "firmware changes latency and features"),
    ("driver", "NIC driver", lambda r, h: _host_values(h, _driver), "driver changes offloads and latency"),
    ("mtu", "MTU", lambda r, h: _host_values(h, _mtu), "MTU changes packetisation"),
]


def _env(run: Any, hosts: Sequence[Any]) -> Dict[str, Optional[str]]:
    """Tuning variables: the run's provenance env, then each host's (summarised)."""
    names: Dict[str, None] = {}
    prov_env = _get(run.provenance, "env") if isinstance(_get(run.provenance, "env"), dict) else {}
    names.update(dict.fromkeys(prov_env))
    for h in hosts:
        e = _facts(h).get("env")
        if isinstance(e, dict):
            names.update(dict.fromkeys(e))
    out = {}
    for name in sorted(names):
        if name in prov_env:
            out[name] = _text(prov_env[name])
        else:
            out[name] = _summarise(_get(_facts(h), "env", name) for h in hosts)
    return out


def _module_params(hosts: Sequence[Any]) -> Dict[str, Optional[str]]:
    names: Dict[str, None] = {}
    for h in hosts:
        mp = _facts(h).get("module_params")
        if isinstance(mp, dict):
            for mod, params in mp.items():
                if isinstance(params, dict):
                    names.update(dict.fromkeys(f"{mod}.{p}" for p in params))
    out = {}
    for name in sorted(names):
        mod, _, param = name.partition(".")
        out[name] = _summarise(_get(_facts(h), "module_params", mod, param) for h in hosts)
    return out


# Provenance keys handled above or expected to differ between any two runs.
_PROVENANCE_SKIP = frozenset(
    {"hosts", "nodes", "ranks", "ppn", "launcher", "mpi_library", "mpi_version", "fabric", "env",
     "started", "finished", "created", "command", "argv", "cwd", "user", "pid", "uuid", "timestamp", "date",
     "rank_hosts", "ranks_per_node", "steps", "launch"}
)


def run_facts(run: Any, hosts: Sequence[Any] = ()) -> Dict[str, Fact]:
    """The facts describing a run, in display order; values are None where not recorded."""
    facts: Dict[str, Fact] = {}
    names = _host_list(run, hosts)
    facts["hosts"] = Fact("hosts", "Hosts", _abbreviate(names), "")
    for key, label, fn, why in _FIXED:
        try:
            value = fn(run, hosts)
        except Exception:  # a malformed fact must not break a report
            value = None
        facts[key] = Fact(key, label, value, why)
    prov = run.provenance if isinstance(run.provenance, dict) else {}
    for key in sorted(prov):
        if key in _PROVENANCE_SKIP or isinstance(prov[key], (dict, list)):
            continue
        facts[f"provenance.{key}"] = Fact(f"provenance.{key}", _label(key), _text(prov[key]), "recorded with the run")
    for name, value in _module_params(hosts).items():
        facts[f"module.{name}"] = Fact(f"module.{name}", f"Module parameter {name}", value, "driver parameters change protocol behaviour")
    for name, value in _env(run, hosts).items():
        facts[f"env.{name}"] = Fact(f"env.{name}", f"Tuning variable {name}", value, "tuning variables change MPI protocols")
    return facts


_UNIT_SUFFIXES = {"_us": " (us)", "_s": " (s)", "_ns": " (ns)", "_bytes": " (bytes)", "_mbps": " (Mb/s)", "_MBps": " (MB/s)"}


def _label(key: str) -> str:
    """'timer_resolution_us' -> 'Timer resolution (us)'."""
    suffix = ""
    for end, text in _UNIT_SUFFIXES.items():
        if key.endswith(end) and len(key) > len(end):
            key, suffix = key[: -len(end)], text
            break
    return key.replace("_", " ").capitalize() + suffix


def _abbreviate(names: List[str], limit: int = 8) -> Optional[str]:
    if not names:
        return None
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:3])}, ..., {names[-1]} ({len(names)} hosts)"


# Facts that name the hosts themselves; different hosts are not a confound.
_NOT_CONFOUNDS = frozenset({"hosts"})


def busy_host(run: Any) -> Optional[BusyHost]:
    """The host's load when the run started on a host whose 1-minute load average was over half
    its CPUs (other work shared its cores), else None. From the run's provenance ``host_load``."""
    prov = getattr(run, "provenance", None) or {}
    load = prov.get("host_load") if isinstance(prov.get("host_load"), dict) else {}
    avg, cpus = load.get("loadavg_1m"), load.get("cpus")
    if isinstance(avg, (int, float)) and isinstance(cpus, int) and cpus > 0 and avg > 0.5 * cpus:
        return BusyHost(avg, cpus)
    return None


def check_comparability(run_a: Any, hosts_a: Sequence[Any], run_b: Any, hosts_b: Sequence[Any]) -> Comparability:
    """Every recorded fact that differs between the runs; facts recorded on one side only count too."""
    fa, fb = run_facts(run_a, hosts_a), run_facts(run_b, hosts_b)
    result = Comparability()
    for key in list(dict.fromkeys(list(fa) + list(fb))):
        if key in _NOT_CONFOUNDS:
            continue
        a, b = fa.get(key), fb.get(key)
        va, vb = (a.value if a else None), (b.value if b else None)
        fact = a or b
        if va is None and vb is None:
            if not key.startswith(("env.", "module.", "provenance.")):
                result.not_recorded.append(fact.label)
            continue
        if va != vb:
            why = fact.why
            if va is None or vb is None:
                why = (why + "; " if why else "") + f"recorded for {'B' if va is None else 'A'} only"
            result.differences.append(Difference(key, fact.label, va, vb, why))
    result.busy = [(side, busy) for side, run in (("A", run_a), ("B", run_b)) for busy in [busy_host(run)] if busy]
    return result


def is_replicate(run: Any, hosts: Sequence[Any], other: Any, other_hosts: Sequence[Any]) -> bool:
    """Whether `other` measured the same configuration as `run`: a complete run of the same kind with
    the same tags and no difference ``check_comparability`` finds (its timings are another sample of
    how runs of that configuration vary). Both must record their hosts and MPI library: two imports
    that record nothing have no difference to find, yet may come from anywhere."""
    if other.status != "complete" or other.kind != run.kind or (other.tags or {}) != (run.tags or {}):
        return False
    for r, h in ((run, hosts), (other, other_hosts)):
        facts = run_facts(r, h)
        if facts["hosts"].value is None or facts["mpi_library"].value is None:
            return False
    return check_comparability(run, hosts, other, other_hosts).comparable


# -- hosts that differ within a run --------------------------------------------------

# Facts that differ between healthy identical hosts.
VOLATILE_FACTS = ("hostname", "cpu.mhz", "uptime", "boot_id", "loadavg", "date", "time")


def flatten(facts: Any, prefix: str = "") -> Dict[str, Any]:
    """{'cpu': {'model': x}} -> {'cpu.model': x}; lists of dicts are keyed by their name/device."""
    out: Dict[str, Any] = {}
    if isinstance(facts, dict):
        for k, v in facts.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(facts, list) and facts and all(isinstance(x, dict) for x in facts):
        for i, item in enumerate(facts):
            name = item.get("name") or item.get("device")
            if item.get("port") is not None and item.get("device"):
                name = f"{item['device']}/{item['port']}"
            out.update(flatten(item, f"{prefix}{name if name else i}."))
    else:
        out[prefix[:-1]] = facts
    return out


@dataclass
class HostOutlier:
    hostname: str
    digest: str
    differences: List[Difference]  # a = the majority's value, b = this host's


@dataclass
class HostGroups:
    """Hosts of one run grouped by provenance digest: the majority and the rest."""

    total: int
    groups: Dict[str, List[str]]  # digest -> host names
    majority_digest: Optional[str]
    outliers: List[HostOutlier]


def _volatile(key: str) -> bool:
    return any(key == v or key.startswith(v + ".") for v in VOLATILE_FACTS)


def host_outliers(hosts: Sequence[Any]) -> HostGroups:
    """Hosts whose digest differs from the most common one, with the (non-volatile) facts that differ."""
    groups: Dict[str, List[str]] = {}
    for h in hosts:
        groups.setdefault(h.digest, []).append(h.hostname)
    if not groups:
        return HostGroups(0, {}, None, [])
    counts = Counter({d: len(names) for d, names in groups.items()})
    majority = max(groups, key=lambda d: (counts[d], -list(groups).index(d)))
    reference = next(h for h in hosts if h.digest == majority)
    ref_flat = {k: v for k, v in flatten(_facts(reference)).items() if not _volatile(k)}
    outliers = []
    for h in hosts:
        if h.digest == majority:
            continue
        flat = {k: v for k, v in flatten(_facts(h)).items() if not _volatile(k)}
        diffs = [
            Difference(k, k, _text(ref_flat.get(k)), _text(flat.get(k)))
            for k in sorted(set(ref_flat) | set(flat))
            if ref_flat.get(k) != flat.get(k)
        ]
        outliers.append(HostOutlier(h.hostname, h.digest, diffs))
    return HostGroups(len(hosts), groups, majority, outliers)
