"""The theoretical double-precision peak of the CPUs an HPL run used.

peak = cores x frequency x DP flops per cycle per core, where the flops per cycle come
from the widest vector instruction set /proc/cpuinfo lists: AVX-512 (avx512f) 32,
AVX2 with FMA 16, AVX 8, SSE2 4. These assume two FMA/vector units per core, as on
most server CPUs; parts with one AVX-512 unit peak at half that. The frequency is the
cpufreq maximum if the kernel exposes it, else the nominal clock in the model name
(``@ 2.30GHz``), else the highest ``cpu MHz`` reported. Vector code often runs below
the nominal clock (the seed study's E5-2698v3: 2.3 GHz nominal, 1.9 GHz under AVX2),
so efficiency against this peak is an upper-bound denominator; ``--peak-gflops``
overrides it.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Set, Tuple
from fabricbench import numbers

ISA_FLOPS: List[Tuple[str, Tuple[str, ...], int]] = [
    ("avx512", ("avx512f",), 32),
    ("avx2+fma", ("avx2", "fma"), 16),
    ("avx", ("avx",), 8),
    ("sse2", ("sse2",), 4),
]


@dataclass
class CpuPeak:
    gflops: float
    cores: int
    ghz: Optional[float]
    flops_per_cycle: Optional[int]
    isa: Optional[str]
    model: Optional[str]
    source: str  # how the figure was obtained

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def flops_per_cycle(flags: Set[str]) -> Tuple[str, int]:
    """(instruction set, DP flops per cycle per core) for a set of /proc/cpuinfo flags."""
    for isa, needed, flops in ISA_FLOPS:
        if all(f in flags for f in needed):
            return isa, flops
    return "scalar", 2


def read_cpuinfo(path: str = "/proc/cpuinfo") -> List[Dict[str, str]]:
    """One dict per logical CPU."""
    cpus: List[Dict[str, str]] = []
    current: Dict[str, str] = {}
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    for line in text.splitlines():
        if not line.strip():
            if current:
                cpus.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        cpus.append(current)
    return cpus


def physical_cores(cpus: List[Dict[str, str]]) -> int:
    """Distinct (package, core) pairs; logical CPUs when the file does not say."""
    pairs = {(c.get("physical id"), c.get("core id")) for c in cpus if "core id" in c}
    return len(pairs) if pairs else max(1, len(cpus) or (os.cpu_count() or 1))


def frequency_ghz(cpus: List[Dict[str, str]], sys_cpu: str = "/sys/devices/system/cpu") -> Tuple[Optional[float], str]:
    try:
        khz = int(open(os.path.join(sys_cpu, "cpu0", "cpufreq", "cpuinfo_max_freq")).read().strip())
        if khz > 0:
            return khz / 1e6, "cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    model = cpus[0].get("model name", "") if cpus else ""
    m = re.search(r"@\s*([\d.]+)\s*GHz", model)
    if m:
        return float(m.group(1)), "model name"
    mhz = []
    for c in cpus:
        try:
            mhz.append(float(c.get("cpu MHz", "")))
        except ValueError:
            pass
    if mhz:
        return max(mhz) / 1000.0, "/proc/cpuinfo cpu MHz"
    return None, "unknown"


def detect_peak(ranks: int, nodes: int = 1, cpuinfo: str = "/proc/cpuinfo",
                sys_cpu: str = "/sys/devices/system/cpu") -> Optional[CpuPeak]:
    """Peak of the cores ``ranks`` processes run on (one core each, at most all cores of
    ``nodes`` nodes like this one); None when the frequency cannot be found."""
    cpus = read_cpuinfo(cpuinfo)
    flags = set(cpus[0].get("flags", "").split()) if cpus else set()
    isa, fpc = flops_per_cycle(flags)
    ghz, how = frequency_ghz(cpus, sys_cpu)
    if ghz is None:
        return None
    cores = max(1, min(ranks, physical_cores(cpus) * max(1, nodes)))
    return CpuPeak(
        gflops=round(cores * ghz * fpc, 3),
        cores=cores,
        ghz=round(ghz, 4),
        flops_per_cycle=fpc,
        isa=isa,
        model=cpus[0].get("model name") if cpus else None,
        source=f"{cores} cores x {numbers.fixed(ghz, 3)} GHz ({how}) x {fpc} DP flops/cycle ({isa})",
    )


def given_peak(gflops: float) -> CpuPeak:
    return CpuPeak(gflops=gflops, cores=0, ghz=None, flops_per_cycle=None, isa=None, model=None,
                   source="given with --peak-gflops")
