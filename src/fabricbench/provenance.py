"""Facts about a host that decide whether two measurements are comparable.

`collect()` reads this host (CPU, memory, NUMA, kernel, OS, MPI, compiler, fabric tuning
variables, InfiniBand and Ethernet devices, fabric driver module parameters) from /proc
and /sys without root. Run as `python -m fabricbench.provenance` it prints the facts as
one JSON line, which is how a launcher gathers them from every host of a run.
Only slowly changing facts are kept (maximum, not current, CPU frequency) so that the
digest of two identically configured hosts is equal.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

TUNING_PREFIXES = ("OMPI_", "UCX_", "I_MPI_", "FI_", "PSM2_", "PSM3_", "MPICH_", "NCCL_", "HFI_", "MV2_", "HCOLL_", "MXM_")
# Set by launchers and schedulers for every job; they say nothing about tuning.
_ENV_NOISE = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "OMPI_COMM_WORLD", "OMPI_MCA_ess_base_jobid",
              "OMPI_MCA_orte_", "OMPI_MCA_pmix", "OMPI_MCA_ess", "OMPI_FILE_LOCATION", "OMPI_UNIVERSE_SIZE",
              "OMPI_APP_CTX", "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_MCA_initial_wdir",
              "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe", "OMPI_MCA_rmaps_base_oversubscribe",
              "OMPI_MCA_mpi_yield_when_idle", "OMPI_MCA_hwloc_base_binding_policy", "OMPI_MCA_ess_base_vpid",
              "OMPI_MCA_ess_base_num_procs", "OMPI_MCA_orte_launch", "OMPI_MCA_orte_num_nodes", "OMPI_MCA_orte_precondition_transports")
FABRIC_MODULES = ("hfi1", "ib_qib", "mlx5_core", "mlx5_ib", "mlx4_core", "mlx4_ib", "ib_core", "ib_ipoib", "ib_uverbs",
                  "rdma_cm", "rdma_rxe", "siw", "efa", "irdma", "bnxt_re", "qedr", "cxi_core", "ionic_rdma")
SYS = Path("/sys")
PROC = Path("/proc")


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def cpu_facts() -> Dict[str, Any]:
    model = None
    sockets, cores, threads = set(), set(), 0
    text = _read(PROC / "cpuinfo") or ""
    block: Dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if "processor" in block:
                threads += 1
                model = model or block.get("model name")
                phys = block.get("physical id", "0")
                sockets.add(phys)
                cores.add((phys, block.get("core id", block["processor"])))
            block = {}
            continue
        key, _, value = line.partition(":")
        block[key.strip()] = value.strip()
    cpufreq = SYS / "devices/system/cpu/cpu0/cpufreq"
    max_khz = _int(_read(cpufreq / "cpuinfo_max_freq"))
    return {
        "model": model or platform.processor() or None,
        "sockets": len(sockets) or None,
        "cores": len(cores) or None,
        "threads": threads or os.cpu_count(),
        "governor": _read(cpufreq / "scaling_governor"),
        "max_mhz": round(max_khz / 1000) if max_khz else None,
        "online": os.cpu_count(),
    }


def memory_bytes() -> Optional[int]:
    for line in (_read(PROC / "meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def os_release() -> Optional[str]:
    for line in (_read(Path("/etc/os-release")) or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def numa_nodes() -> Optional[int]:
    nodes = glob.glob(str(SYS / "devices/system/node/node[0-9]*"))
    return len(nodes) or None


def tuning_environment(environ=None) -> Dict[str, str]:
    environ = os.environ if environ is None else environ
    return {
        k: v
        for k, v in sorted(environ.items())
        if k.startswith(TUNING_PREFIXES) and not k.startswith(_ENV_NOISE)
    }


def infiniband_ports() -> List[Dict[str, Any]]:
    ports = []
    for dev in sorted(glob.glob(str(SYS / "class/infiniband/*"))):
        devp = Path(dev)
        for port in sorted(glob.glob(str(devp / "ports/*"))):
            pp = Path(port)
            ports.append(
                {
                    "device": devp.name,
                    "port": _int(pp.name),
                    "rate": _read(pp / "rate"),
                    "state": _read(pp / "state"),
                    "phys_state": _read(pp / "phys_state"),
                    "link_layer": _read(pp / "link_layer"),
                    "fw_ver": _read(devp / "fw_ver"),
                    "board_id": _read(devp / "board_id"),
                    "hca_type": _read(devp / "hca_type"),
                }
            )
    return ports


def pcie_link(device: Path) -> Optional[Dict[str, Any]]:
    speed = _read(device / "current_link_speed")
    if speed is None:
        return None
    return {
        "speed": speed,
        "width": _int(_read(device / "current_link_width")),
        "max_speed": _read(device / "max_link_speed"),
        "max_width": _int(_read(device / "max_link_width")),
    }


def net_devices() -> List[Dict[str, Any]]:
    devices = []
    for dev in sorted(glob.glob(str(SYS / "class/net/*"))):
        p = Path(dev)
        if p.name == "lo":
            continue
        driver = None
        try:
            driver = os.path.basename(os.readlink(p / "device/driver"))
        except OSError:
            pass
        speed = _int(_read(p / "speed"))
        devices.append(
            {
                "name": p.name,
                "speed_mbps": speed if speed and speed > 0 else None,
                "mtu": _int(_read(p / "mtu")),
                "driver": driver,
                "operstate": _read(p / "operstate"),
                "pcie": pcie_link(p / "device") if (p / "device").exists() else None,
            }
        )
    return devices


def module_parameters() -> Dict[str, Dict[str, str]]:
    found: Dict[str, Dict[str, str]] = {}
    for module in FABRIC_MODULES:
        params_dir = SYS / "module" / module / "parameters"
        if not params_dir.is_dir():
            continue
        values = {}
        for param in sorted(params_dir.iterdir()):
            value = _read(param)
            if value is not None:
                values[param.name] = value
        found[module] = values
    return found


def _first_line(argv: List[str]) -> Optional[str]:
    from fabricbench.launch.procs import ProcessTimeout, run_short

    try:
        out = run_short(argv, timeout=20)
    except (OSError, ProcessTimeout):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def mpi_facts() -> Dict[str, Optional[str]]:
    """The selected MPI's launcher version (FABRICBENCH_MPI, else the one on PATH) and its compiler."""
    from fabricbench.errors import FabricbenchError
    from fabricbench.launch.mpi import detect_mpi, mpi_tool
    from fabricbench.launch.procs import ProcessTimeout

    try:
        launcher = detect_mpi().version or None
    except (FabricbenchError, OSError, ProcessTimeout):
        launcher = None
    try:
        compiler = _first_line([mpi_tool("mpicc"), "--version"])
    except FabricbenchError:
        compiler = None
    return {"mpirun": launcher, "compiler": compiler}


def collect() -> Dict[str, Any]:
    """Every fact about this host, as plain JSON-able data."""
    mpi = mpi_facts()
    return {
        "hostname": socket.gethostname(),
        "cpu": cpu_facts(),
        "memory_bytes": memory_bytes(),
        "numa_nodes": numa_nodes(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "os": os_release(),
        "arch": platform.machine(),
        "mpi": {"library": None, "version": mpi["mpirun"]},
        "compiler": mpi["compiler"],
        "python": platform.python_version(),
        "env": tuning_environment(),
        "infiniband": infiniband_ports(),
        "net": net_devices(),
        "module_params": module_parameters(),
    }


def digest(facts: Dict[str, Any]) -> str:
    """A digest of everything but the host's name: equal digests mean identically configured hosts."""
    comparable = {k: v for k, v in facts.items() if k != "hostname"}
    return hashlib.sha256(json.dumps(comparable, sort_keys=True, default=str).encode()).hexdigest()


def differing_facts(hosts: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """For facts that are not the same on every host: {dotted key: {hostname: value}}."""
    flat = [(h.get("hostname", "?"), _flatten(h)) for h in hosts]
    keys = sorted({k for _, f in flat for k in f if k != "hostname"})
    out: Dict[str, Dict[str, Any]] = {}
    for key in keys:
        values = {name: f.get(key) for name, f in flat}
        if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) > 1:
            out[key] = values
    return out


def _flatten(data: Any, prefix: str = "") -> Dict[str, Any]:
    if isinstance(data, dict):
        out: Dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def main() -> None:
    sys.stdout.write(json.dumps(collect(), default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
