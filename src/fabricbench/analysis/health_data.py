"""All-pairs measurements (benchmark ``allpairs``) as matrices for ``analysis.health``.

Both sources share one shape: the native engine's ``allpairs`` records and imported
mpiGraph results, one measurement per ordered pair with params ``src``, ``dst`` (ranks),
``src_host``, ``dst_host``, ``size`` and, for bandwidth, ``direction`` (``send``: timed by
the sender, ``recv``: timed by the receiver). The engine adds latency records, retests
(``params.retest``) and whole-matrix records (``params.scope == "matrix"``, skipped here).

Rows are senders, columns receivers, indexed by rank; ``labels`` names each rank by its
host (``host:rank`` when several ranks share a host).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from fabricbench.errors import FabricbenchError

BENCHMARK = "allpairs"
PREFERRED_DIRECTIONS = ("recv", "send")


class NoAllPairsData(FabricbenchError):
    """A run without all-pairs measurements (nothing to check)."""

    exit_code = 2


@dataclass
class AllPairs:
    labels: List[str]  # by rank
    hosts: List[str]  # by rank (may repeat)
    size: Optional[int]
    direction: Optional[str]
    bandwidth: Optional[np.ndarray]  # MB/s, row = src, column = dst; NaN where not measured
    latency: Optional[np.ndarray] = None  # us
    retest_bandwidth: Optional[np.ndarray] = None
    retest_latency: Optional[np.ndarray] = None
    sizes: List[int] = field(default_factory=list)  # bandwidth sizes available
    directions: List[str] = field(default_factory=list)
    mode: Optional[str] = None
    notes: List[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def shared_hosts(self) -> bool:
        return len(set(self.hosts)) < len(self.hosts)


def _is_pair(m: Any) -> bool:
    p = m.params or {}
    return m.benchmark == BENCHMARK and p.get("scope") != "matrix" and "src" in p and "dst" in p


def _labels(hosts: Sequence[str]) -> List[str]:
    counts = Counter(hosts)
    return [h if counts[h] == 1 else f"{h}:{r}" for r, h in enumerate(hosts)]


def allpairs_from_measurements(measurements: Iterable[Any], size: Optional[int] = None,
                               direction: Optional[str] = None) -> AllPairs:
    """Matrices of one run's all-pairs measurements; bandwidth at `size` (default: the largest measured)
    timed from `direction` (default: recv when there is one, else send)."""
    pairs = [m for m in measurements if _is_pair(m) and m.value is not None]
    if not pairs:
        raise NoAllPairsData("no all-pairs measurements (benchmark allpairs with src and dst) in this run")
    n = 0
    hosts: Dict[int, str] = {}
    for m in pairs:
        p = m.params
        src, dst = int(p["src"]), int(p["dst"])
        n = max(n, src + 1, dst + 1, int(p.get("ranks") or 0))
        if p.get("src_host"):
            hosts.setdefault(src, str(p["src_host"]))
        if p.get("dst_host"):
            hosts.setdefault(dst, str(p["dst_host"]))
    host_list = [hosts.get(r, f"rank{r}") for r in range(n)]

    bw = [m for m in pairs if m.metric == "bandwidth"]
    lat = [m for m in pairs if m.metric == "latency"]
    sizes = sorted({int(m.params["size"]) for m in bw if m.params.get("size") is not None})
    directions = sorted({str(m.params.get("direction")) for m in bw if m.params.get("direction")})
    notes: List[str] = []
    if size is None and sizes:
        size = sizes[-1]
        if len(sizes) > 1:
            notes.append(f"bandwidth measured at {len(sizes)} sizes; analysing the largest, {size} bytes")
    elif size is not None and sizes and size not in sizes:
        raise NoAllPairsData(f"no all-pairs bandwidth at {size} bytes in this run (sizes: {', '.join(map(str, sizes))})")
    if direction is None:
        direction = next((d for d in PREFERRED_DIRECTIONS if d in directions), directions[0] if directions else None)
    elif directions and direction not in directions:
        raise NoAllPairsData(f"no all-pairs bandwidth timed by the '{direction}' side (there is: {', '.join(directions)})")

    def fill(items: List[Any], retest: bool) -> Optional[np.ndarray]:
        chosen = [m for m in items if bool((m.params or {}).get("retest")) == retest]
        if not chosen:
            return None
        mat = np.full((n, n), np.nan)
        for m in chosen:
            mat[int(m.params["src"]), int(m.params["dst"])] = float(m.value)
        np.fill_diagonal(mat, np.nan)
        return mat

    bw_sel = [m for m in bw if (size is None or m.params.get("size") == size)
              and (direction is None or m.params.get("direction") in (direction, None))]
    modes = {m.params.get("mode") for m in pairs if m.params.get("mode")}
    data = AllPairs(
        labels=_labels(host_list),
        hosts=host_list,
        size=size,
        direction=direction,
        bandwidth=fill(bw_sel, False),
        latency=fill(lat, False),
        retest_bandwidth=fill(bw_sel, True),
        retest_latency=fill(lat, True),
        sizes=sizes,
        directions=directions,
        mode=modes.pop() if len(modes) == 1 else None,
        notes=notes,
    )
    if data.bandwidth is None and data.latency is None:
        raise NoAllPairsData("the all-pairs measurements of this run have neither bandwidth nor latency")
    if data.shared_hosts:
        data.notes.append("several ranks share a host: those pairs measure the host's memory, not the fabric "
                          "(run one rank per node)")
    return data
