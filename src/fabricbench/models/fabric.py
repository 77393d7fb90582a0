"""A fabric as a cost model: point-to-point (Hockney regimes, LogGP when measured) plus one
model per collective. Fitted from a stored engine run (``fit_run``), or made from the
published latency and bandwidth of a catalogue entry (``catalogue_models``: the figure and
its low and high ends, which give the prediction its band).

Fitted models are recomputed from the run's measurements whenever they are needed, not
stored: a fit takes milliseconds, it is a pure function of data the database already
keeps, and a stored copy would go stale when the fitting improves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.errors import FabricbenchError
from fabricbench.models.collective import FORMS, CollectiveModel, derived_collective
from fabricbench.models.exchange import ExchangeCost, fit_exchange
from fabricbench.models.p2p import FitError, HockneyModel, LogGP, catalogue_hockney, fit_hockney, fit_loggp


SMALL = 64  # bytes: messages whose time is the per-message overhead alone
# A measured collective this many times slower than its algorithm over the point-to-point model
# (at its smallest size) was disturbed throughout (every sample had a descheduled rank): the
# form is used instead. Real collectives stay well below: software overhead is a few alphas.
DISTURBED = 10


class ModelUnavailable(FabricbenchError):
    """No model can be made from what was given (a run without latency points, a fabric without figures)."""

    exit_code = 2


@dataclass(frozen=True)
class FabricModel:
    name: str
    p2p: HockneyModel
    collectives: Dict[str, CollectiveModel] = field(default_factory=dict)
    loggp: Optional[LogGP] = None
    catalogue: bool = False
    ranks: Optional[int] = None
    # What the fit noticed, as findings ({"kind": ..., figures}; worded by report.words.models.model_note).
    notes: Tuple[Dict[str, Any], ...] = ()
    small_latency_us: float = 0.0  # lowest median one-way time of messages up to SMALL bytes
    exchange: Optional[ExchangeCost] = None  # what a message costs shared cores (models.exchange)

    def __post_init__(self):
        if not self.small_latency_us:
            object.__setattr__(self, "small_latency_us", self.p2p.time_us(0))

    def message_us(self, n: float) -> float:
        """One message of n bytes in a stream of them (what an application's halo exchange is): the
        ping-pong's Hockney time, but never less than LogGP's gap g + (n-1) G when the run measured
        it. Back-to-back messages cannot leave faster than the gap: on a token-bucket link the
        ping-pong of one message passes in a burst while a stream drains the bucket to the link's
        rate, and on any link the gap is the per-message cost of messages in flight."""
        t = self.p2p.time_us(n)
        return max(t, self.loggp.gap_us(n)) if self.loggp else t

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "catalogue": self.catalogue, "ranks": self.ranks, "p2p": self.p2p.to_dict(),
                "loggp": self.loggp.to_dict() if self.loggp else None,
                "collectives": {k: v.to_dict() for k, v in self.collectives.items()}, "notes": list(self.notes),
                "small_latency_us": self.small_latency_us,
                "exchange": self.exchange.to_dict() if self.exchange else None}


def _stat(m) -> Optional[float]:
    """The least disturbed sample (the minimum): on a loaded machine a point's median jumps between
    the network's cost and a descheduled rank's by 10x; the prediction keeps what the model does
    not explain (that disturbance) as a residual, so the model itself is the network's cost."""
    for v in (m.min, m.median, m.value):
        if v is not None:
            return v
    return None


def _collective_stat(m) -> Optional[float]:
    """A collective's cost: the mean over ranks of their average call time. Its samples are ranks,
    not repetitions: the least is the rank that waited least (at 100mbit an alltoall's fastest rank
    saw 2x its 1gbit time while the mean rose 5 to 8x), and the profile's calls are re-costed
    against the same mean (``predict``)."""
    detail = m.detail if isinstance(getattr(m, "detail", None), dict) else {}
    if str(detail.get("stats_over", "")).startswith(("per-rank", "per-call")) and m.value is not None:
        return m.value
    return _stat(m)


def fitted_points(measurements: Sequence[Any]) -> Dict[str, Tuple[List[float], List[float]]]:
    """benchmark -> (sizes, times in us) of what the models are fitted to: point-to-point latency
    (each size's least disturbed sample) and every collective with an algorithm form (the mean
    over ranks); what the report plots against the fit."""
    least: Dict[str, Dict[float, float]] = {}
    for m in measurements:
        if m.metric != "latency" or (m.benchmark != "latency" and m.benchmark not in FORMS):
            continue
        if m.benchmark == "latency" and m.size is None:
            continue
        t = _stat(m) if m.benchmark == "latency" else _collective_stat(m)
        if t is None or t <= 0:
            continue
        per = least.setdefault(m.benchmark, {})
        size = float(m.size if m.size is not None else 0)
        per[size] = min(t, per.get(size, t))
    return {bench: lower_envelope(per) for bench, per in least.items()}


def lower_envelope(times: Dict[float, float]) -> Tuple[List[float], List[float]]:
    """Sizes and times with each time lowered to the cheapest of any larger size: moving more
    bytes never costs less, so a size above a larger one only had no undisturbed sample (with
    few iterations on a loaded machine, half the small sizes do)."""
    sizes = sorted(times)
    out: List[float] = []
    cheapest = float("inf")
    for size in reversed(sizes):
        cheapest = min(cheapest, times[size])
        out.append(cheapest)
    return sizes, out[::-1]


def link_ceiling_MBps(run) -> Optional[float]:
    """The payload rate of the slowest link a lab run crossed (its recorded shape), else None."""
    from fabricbench.analysis.peaks import lab_shape_fabric
    from fabricbench.lab.rates import tcp_goodput

    prov = run.provenance if isinstance(getattr(run, "provenance", None), dict) else {}
    fabric = lab_shape_fabric(prov)
    if fabric is None:
        return None
    return tcp_goodput(fabric.data_rate_MBps * 8e6, int(prov["lab"].get("mtu") or 1500)) / 1e6


def fit_runs(runs: Sequence[Any]) -> Dict[int, FabricModel]:
    """run id -> the models of each loaded run that measured what they need (``latency`` and
    ``loggp``); a run that cannot be fitted has none. What a report is given before it renders."""
    out: Dict[int, FabricModel] = {}
    for lr in runs:
        if not {"latency", "loggp"} <= {m.benchmark for m in lr.measurements}:
            continue
        try:
            out[lr.run.id] = fit_run(lr.run, lr.measurements)
        except ModelUnavailable:
            continue
    return out


def fit_run(run, measurements: Sequence[Any]) -> FabricModel:
    """Models of every benchmark a stored engine run measured (latency is required)."""
    label = f"run {run.id}" + (f" ({run.label})" if run.label else "")
    points = fitted_points(measurements)
    if "latency" not in points:
        raise ModelUnavailable(f"{label} has no latency points (benchmark 'latency'): measure them with "
                               "fabricbench run latency bw loggp allreduce alltoall ... and fit that run")
    ceiling = link_ceiling_MBps(run)
    try:
        p2p = fit_hockney(*points["latency"], source=f"{label}: latency", ceiling_MBps=ceiling)
    except FitError as exc:
        raise ModelUnavailable(str(exc)) from None
    notes: List[Dict[str, Any]] = []
    if ceiling and p2p.beta_MBps > ceiling:
        notes.append({"kind": "burst", "largest_b": p2p.valid_sizes[1], "ceiling_MBps": ceiling})
    colls: Dict[str, CollectiveModel] = {}
    ranks = run.ranks or 0
    for call in FORMS:
        if call not in points:
            continue
        try:
            per_link = FORMS[call][2](ranks)  # bytes through one link per byte counted
            cap = ceiling / per_link if ceiling and per_link > 0 else None
            fitted = CollectiveModel(call, ranks, fit_hockney(*points[call], source=f"{label}: {call}",
                                                              ceiling_MBps=cap), derived=False)
        except FitError as exc:
            notes.append({"kind": "fit_failed", "call": call, "error": str(exc)})
            continue
        smallest = points[call][0][0]
        form = derived_collective(call, p2p).time_us(smallest, ranks or 2)
        if form > 0 and fitted.time_us(smallest, ranks) > DISTURBED * form:
            notes.append({"kind": "disturbed", "call": call, "measured_us": fitted.time_us(smallest, ranks),
                          "size_b": smallest, "limit": DISTURBED, "form_us": form})
            continue
        colls[call] = fitted
    loggp = None
    lg = [m for m in measurements if m.benchmark == "loggp" and m.size is not None]
    if lg:
        try:
            loggp = fit_loggp([{"size": m.size, "metric": m.metric, "value": _stat(m)} for m in lg], source=f"{label}: loggp")
        except FitError as exc:
            notes.append({"kind": "fit_failed", "call": None, "error": str(exc)})
    # The least disturbed small-message median: on a busy machine single sizes jump by 100x.
    small = [t for n, t in zip(*points["latency"]) if n <= SMALL and t]
    return FabricModel(name=label, p2p=p2p, collectives=colls, loggp=loggp, ranks=ranks or None, notes=tuple(notes),
                       small_latency_us=min(small) if small else 0.0,
                       exchange=fit_exchange(measurements, source=f"{label}: exchange"))


def catalogue_models(fabric) -> Tuple[FabricModel, FabricModel, FabricModel]:
    """(typical, fast end, slow end) models of a catalogue fabric from its MPI figures."""
    if not getattr(fabric, "mpi_latency_us", None) or not getattr(fabric, "mpi_bandwidth_MBps", None):
        raise ModelUnavailable(f"{fabric.name} has no MPI latency and bandwidth figures in data/fabrics.toml; "
                               "measure such a fabric (fabricbench run latency bw ...) and give the run instead")
    lo, hi = fabric.mpi_latency_us
    bw_lo, bw_hi = fabric.mpi_bandwidth_MBps
    src = f"{fabric.name}: {fabric.perf_source}"

    def make(lat: float, bw: float, tag: str) -> FabricModel:
        return FabricModel(name=f"{fabric.name} (catalogue{tag})", p2p=catalogue_hockney(lat, bw, src), catalogue=True,
                           notes=({"kind": "catalogue", "latency_us": lat, "bandwidth_MBps": bw},))

    return (make((lo + hi) / 2, (bw_lo + bw_hi) / 2, ""), make(lo, bw_hi, ", fast end"), make(hi, bw_lo, ", slow end"))
