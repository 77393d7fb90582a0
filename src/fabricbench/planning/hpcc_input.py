"""HPCC's input: the problem size and process grid, and the hpccinf.txt that says them.

HPL's problem size N is chosen so the N x N matrix of doubles fills a fraction of the
nodes' memory (N = sqrt(fraction x memory / 8)), rounded down to a multiple of the
block size NB; the P x Q process grid is the most nearly square one with P <= Q, as
HPL runs best on. hpccinf.txt is HPL.dat plus four PTRANS lines; its line positions
matter, so it is written whole from one template.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Dict, Optional, Tuple

from fabricbench.errors import UsageError

DEFAULT_NB = 192
SMALL_NB = 64


@dataclass
class HpccPlan:
    np: int
    n: int
    nb: int
    p: int
    q: int
    nodes: int
    memory_bytes: Optional[int]  # memory the size was derived from (None when --n was given)
    memory_fraction: Optional[float]

    @property
    def matrix_bytes(self) -> int:
        return self.n * self.n * 8

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def process_grid(np_: int) -> Tuple[int, int]:
    """The most nearly square P x Q = np with P <= Q."""
    if np_ < 1:
        raise UsageError(f"--np must be at least 1, not {np_}")
    p = int(math.isqrt(np_))
    while np_ % p:
        p -= 1
    return p, np_ // p


def parse_grid(text: str, np_: int) -> Tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text or "")
    if not m:
        raise UsageError(f"bad --grid '{text}': give it as PxQ, e.g. --grid 2x4")
    p, q = int(m.group(1)), int(m.group(2))
    if p < 1 or q < 1 or p * q != np_:
        raise UsageError(f"--grid {p}x{q} has {p * q} processes but --np is {np_}")
    return p, q


def problem_size(memory_bytes: int, fraction: float, nb: int) -> int:
    """N = sqrt(fraction x memory / 8), rounded down to a multiple of NB (at least NB)."""
    if not 0 < fraction <= 0.95:
        raise UsageError(f"--memory-fraction must be above 0 and at most 0.95, not {fraction}")
    n = int(math.sqrt(fraction * memory_bytes / 8.0))
    return max(nb, n - n % nb)


def memory_total_bytes(meminfo: str = "/proc/meminfo") -> int:
    try:
        for line in open(meminfo, encoding="utf-8"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    raise UsageError(f"cannot read the memory size from {meminfo}; give the problem size with --n")


def plan(np_: int, nodes: int = 1, memory_bytes: Optional[int] = None, memory_fraction: float = 0.25,
         n: Optional[int] = None, nb: Optional[int] = None, grid: Optional[str] = None) -> HpccPlan:
    """The problem size, block size and grid for an HPCC run on ``np_`` processes."""
    p, q = parse_grid(grid, np_) if grid else process_grid(np_)
    if nb is not None and nb < 1:
        raise UsageError(f"--nb must be at least 1, not {nb}")
    if n is not None:
        if n < 1:
            raise UsageError(f"--n must be at least 1, not {n}")
        block = nb or (SMALL_NB if n < 4 * DEFAULT_NB else DEFAULT_NB)
        return HpccPlan(np=np_, n=n, nb=min(block, n), p=p, q=q, nodes=nodes, memory_bytes=None, memory_fraction=None)
    if memory_bytes is None:
        raise UsageError("give the problem size with --n or the memory to size it from")
    block = nb or DEFAULT_NB
    size = problem_size(memory_bytes, memory_fraction, block)
    return HpccPlan(np=np_, n=size, nb=block, p=p, q=q, nodes=nodes, memory_bytes=memory_bytes,
                    memory_fraction=memory_fraction)


HPCCINF = """\
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n:<12} Ns
1            # of NBs
{nb:<12} NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p:<12} Ps
{q:<12} Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
"""


def render_hpccinf(plan_: HpccPlan) -> str:
    """hpccinf.txt for one HPL problem size, block size and grid (HPCC derives the other tests' sizes)."""
    return HPCCINF.format(n=int(plan_.n), nb=int(plan_.nb), p=int(plan_.p), q=int(plan_.q))  # whole numbers, left-aligned in 12 columns
