"""Collective cost models: a Hockney fit of each measured collective, scaled to other rank
counts by the usual algorithm's form, or derived from a point-to-point model when a
collective was not measured (a catalogue fabric).

The forms (p ranks, n the bytes the profiler counts for one call) are the textbook ones
(Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations in
MPICH", 2005): t = A(p) * alpha + B(p) * n / beta. A fitted collective keeps its measured
alpha and beta at the rank count it was measured at and is scaled by A(p)/A(p0) and
B(p)/B(p0) elsewhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from fabricbench.models.p2p import HockneyModel, Regime


def _log2(p: int) -> float:
    return float(math.ceil(math.log2(p))) if p > 1 else 0.0


# call -> (algorithm, A(p): latency terms, B(p): bytes moved per n through one link)
FORMS: Dict[str, Tuple[str, Callable[[int], float], Callable[[int], float]]] = {
    "barrier": ("dissemination", _log2, lambda p: 0.0),
    "bcast": ("binomial tree", _log2, _log2),
    "reduce": ("binomial tree", _log2, _log2),
    "allreduce": ("recursive doubling / Rabenseifner", _log2, lambda p: 2.0 * (p - 1) / p if p > 1 else 0.0),
    "allgather": ("ring / recursive doubling", _log2, lambda p: float(p - 1)),
    "alltoall": ("pairwise exchange", lambda p: float(p - 1), lambda p: float(p - 1)),
    "reduce_scatter": ("recursive halving", _log2, lambda p: (p - 1) / p if p > 1 else 0.0),
    "gather": ("binomial tree", _log2, lambda p: float(p - 1)),
    "scatter": ("binomial tree", _log2, lambda p: float(p - 1)),
    "scan": ("recursive doubling", _log2, _log2),
}

# MPI call in a profile -> (collective form, divide the profiled bytes by p - 1 first)
MPI_COLLECTIVES: Dict[str, Tuple[str, bool]] = {
    "MPI_Barrier": ("barrier", False), "MPI_Bcast": ("bcast", False), "MPI_Reduce": ("reduce", False),
    "MPI_Allreduce": ("allreduce", False), "MPI_Allgather": ("allgather", False),
    "MPI_Allgatherv": ("allgather", False), "MPI_Alltoall": ("alltoall", False),
    "MPI_Alltoallv": ("alltoall", True), "MPI_Alltoallw": ("alltoall", True),
    "MPI_Reduce_scatter": ("reduce_scatter", False), "MPI_Reduce_scatter_block": ("reduce_scatter", False),
    "MPI_Gather": ("gather", False), "MPI_Gatherv": ("gather", False), "MPI_Scatter": ("scatter", False),
    "MPI_Scatterv": ("scatter", False), "MPI_Scan": ("scan", False), "MPI_Exscan": ("scan", False),
}


@dataclass(frozen=True)
class CollectiveModel:
    """Cost of one collective: a fit at `ranks` (fitted) or the form over a p2p model (derived)."""

    call: str
    ranks: int
    model: HockneyModel
    derived: bool  # True: A(p) alpha + B(p) n / beta from a point-to-point model

    @property
    def algorithm(self) -> str:
        return FORMS[self.call][0]

    def time_us(self, n: float, ranks: int) -> float:
        _, a_of, b_of = FORMS[self.call]
        if self.derived:
            r: Regime = self.model.regime(n)
            return a_of(ranks) * r.alpha_us + b_of(ranks) * (r.time_us(n) - r.alpha_us)
        r = self.model.regime(n)
        if ranks == self.ranks:
            return r.time_us(n)
        a0, b0 = a_of(self.ranks), b_of(self.ranks)
        sa = a_of(ranks) / a0 if a0 else 1.0
        sb = b_of(ranks) / b0 if b0 else 1.0
        return sa * r.alpha_us + sb * (r.time_us(n) - r.alpha_us)

    def to_dict(self) -> Dict[str, Any]:
        return {"call": self.call, "ranks": self.ranks, "derived": self.derived, "algorithm": self.algorithm,
                "model": self.model.to_dict()}


def derived_collective(call: str, p2p: HockneyModel) -> CollectiveModel:
    return CollectiveModel(call=call, ranks=0, model=p2p, derived=True)


ROOTED = frozenset({"bcast", "reduce", "gather", "scatter"})


def collective_stream_floor_us(mpi_call: str, nbytes: float, ranks: int, gap_us: Callable[[float], float]) -> float:
    """The least one call of a collective costs in a stream of them (an application's loop), mean
    over ranks: its busiest link carries B(p) messages of the call's size, and back-to-back
    messages cannot leave faster than the gap (gap_us: LogGP's g + (n-1) G). A lone collective, as
    the engine times it, can pass inside a link's burst (at 100mbit the lab's token bucket passes
    64 KiB at memory speed) while an application's thousands of them drain it to the link's rate.
    Rooted collectives: the root leaves once its sends are buffered, so the mean over ranks
    carries (p-1)/p of it. 0 for a call that is not a collective."""
    if mpi_call not in MPI_COLLECTIVES:
        return 0.0
    form, per_peer = MPI_COLLECTIVES[mpi_call]
    if per_peer and ranks > 1:
        nbytes = nbytes / (ranks - 1)
    links = FORMS[form][2](ranks)
    if links <= 0:
        return 0.0
    floor = links * gap_us(nbytes)
    return floor * (ranks - 1) / ranks if form in ROOTED and ranks > 1 else floor


def collective_cost_us(models: Dict[str, CollectiveModel], p2p: HockneyModel, mpi_call: str, nbytes: float,
                       ranks: int) -> Optional[float]:
    """Cost of one call of an MPI collective (None for a call that is not a collective)."""
    if mpi_call not in MPI_COLLECTIVES:
        return None
    form, per_peer = MPI_COLLECTIVES[mpi_call]
    if per_peer and ranks > 1:
        nbytes = nbytes / (ranks - 1)
    model = models.get(form) or derived_collective(form, p2p)
    return model.time_us(nbytes, ranks)
