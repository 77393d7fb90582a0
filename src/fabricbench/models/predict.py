"""What-if: the run time of a profiled application on another fabric.

A profile measured on fabric A (per rank, per MPI call and size bin: calls, bytes, time) and
models of A and of B give, per rank:

- compute time (application time less MPI time): kept;
- point-to-point traffic, per rank: the time of its blocking point-to-point calls and of the
  completions of non-blocking ones (MPI_Wait*/MPI_Test*) is what A exposed; its messages cost
  D_A on A's model and D_B on B's (the busier direction: what it sends or what it receives).
  Exposed time above D_A is kept: up to D_A again it is per-message overhead, scaled by the
  small-message latency ratio; the rest is a late partner or a rank waiting for its core (a
  loaded host), kept as it was; the transfer becomes D_B less what A hid behind computation (D_A - exposed,
  at most the compute time), so an overlapped halo exchange surfaces when B is slow enough;
- each collective, per size bin: split into the transfer part (calls x the mean per-call
  time over ranks, what its model is fitted to) and waiting (what a rank spent above that:
  imbalance). A transfer part below A's model cost is scaled by cost_B / cost_A of the models
  at the bin's mean size; above it, it becomes cost_B plus the residual, treated as the
  point-to-point one is (overhead up to cost_A scaled by the latency ratio, the rest kept);
  keeping all of the residual is the other end of the band. Waiting is kept
  (it comes from compute imbalance) and bounded by the same ratio on the other side;
- every other call (posting non-blocking calls, communicator management, probes): kept.

The predicted run time is the slowest rank's; low and high come from the two re-costings, the
waiting bounds, overlap or none and, for a catalogue fabric, the ends of its published figures.
With several stored profiles of the application (``widen_band``), the band becomes a prediction
interval for one future run around their predictions (``interval_factor``), widened by those
choices and the models' fit error. Assumptions and cautions are findings (kind and figures);
``report.words.models`` writes their sentences.
When the ranks shared cores on A (more ranks than CPUs on a machine, and they waited for them:
``analysis.profile_cpu``), none of it goes below that machine's computation over its CPUs: on A
part of the time in MPI was a rank waiting for a core, which a faster fabric does not remove
(the band's low end takes the lower demand of ranks that poll without yielding). The floor
also holds the core time B's messages take: each message sent or received costs half of what
B's ``exchange`` benchmark measured a swap to take from a rank that also computes
(``models.exchange``), when B's engine run has it and its ranks shared cores too.
``predict`` is a pure function of a profile and models; ``predict_from_store`` resolves run
references and fabric names and fits the models.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.profile_cpu import cpu_floor
from fabricbench.models.collective import MPI_COLLECTIVES, collective_cost_us, collective_stream_floor_us
from fabricbench.models.fabric import FabricModel, ModelUnavailable, catalogue_models, fit_run

BAND_LEVEL = 0.90  # with several profiles, the band is a prediction interval for one future run at this level
LATENCY_NOISE = 1.25  # small-message latencies closer than this ratio are taken as equal
BLOCKING_P2P = frozenset({"MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Recv", "MPI_Sendrecv",
                          "MPI_Sendrecv_replace", "MPI_Mrecv"})
NB_SENDS = frozenset({"MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend", "MPI_Start", "MPI_Startall"})
NB_RECVS = frozenset({"MPI_Irecv", "MPI_Imrecv"})


def _is_completion(call: str) -> bool:
    return call.startswith("MPI_Wait") or call.startswith("MPI_Test")


@dataclass
class CallChange:
    """One MPI call, per rank on average (seconds), on A and as predicted on B."""

    call: str
    how: str
    count: int
    bytes: int
    time_a_s: float
    time_b_s: float
    low_b_s: float
    high_b_s: float

    @property
    def change_s(self) -> float:
        return self.time_b_s - self.time_a_s


@dataclass
class Prediction:
    source: str
    target: str
    ranks: int
    measured_s: float  # the profile's run time (slowest rank, MPI_Init to MPI_Finalize)
    compute_s: float  # mean over ranks of application time less MPI time
    mpi_a_s: float  # mean MPI time per rank on A
    predicted_s: float
    low_s: float
    high_s: float
    calls: List[CallChange] = field(default_factory=list)
    # What the prediction assumes, as findings ({"kind": ..., figures}); report.words.models words them.
    assumptions: List[Dict[str, Any]] = field(default_factory=list)
    # Ranks shared cores on A: the machine, its CPUs and demand, floor_s, and network_s (the
    # prediction before the floor). None when they did not, or the profile does not say.
    cpu_floor: Optional[Dict[str, Any]] = None
    # What was predicted from what: the application, its profile run, the engine runs (or catalogue
    # fabrics) of A and B; filled in by predict_case.
    application: Optional[str] = None
    profile_run: Optional[int] = None
    source_ref: Optional[str] = None
    target_ref: Optional[str] = None
    # The band's parts (band_parts): the re-costing band of this profile alone, the spread of the
    # application's own runs on A, the models' fit error; low_s/high_s include all of them.
    band: Dict[str, Any] = field(default_factory=dict)

    @property
    def floor_applies(self) -> bool:
        return bool(self.cpu_floor) and self.cpu_floor["floor_s"] > self.cpu_floor["network_s"]

    @property
    def speedup(self) -> float:
        """How many times faster B is than A (below 1: slower)."""
        return self.measured_s / self.predicted_s if self.predicted_s > 0 else float("inf")

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["speedup"] = self.speedup
        d["faster"] = self.predicted_s < self.measured_s
        for c, obj in zip(d["calls"], self.calls):
            c["change_s"] = obj.change_s
        if d["cpu_floor"]:
            d["cpu_floor"]["applies"] = self.floor_applies
        return d


def _cost_us(model: FabricModel, call: str, size: float, ranks: int) -> Optional[float]:
    if call in BLOCKING_P2P:
        return model.message_us(size)
    return collective_cost_us(model.collectives, model.p2p, call, size, ranks)


def _stream_floor_s(model: FabricModel, call: str, size: float, ranks: int) -> float:
    """Least time per call of a collective in a stream on this fabric (0 without LogGP)."""
    return collective_stream_floor_us(call, size, ranks, model.loggp.gap_us) * 1e-6 if model.loggp else 0.0


def _scaled_residual(residual: float, overhead_cap: float, ratio: float) -> float:
    """A's time above its model, on B: the part that can be per-message overhead (at most
    `overhead_cap`) scales by `ratio`; the rest is a late partner or a rank waiting for its core
    (a loaded host) and is kept: a fabric's latency does not stretch another process's time slice.
    Scaling all of it made a profile taken at load 17 predict 6x slower on a fabric with 7x the
    latency, its MPI_Wait (a partner waiting for a core) multiplied with the latency."""
    overhead = min(residual, overhead_cap)
    return overhead * ratio + (residual - overhead)


def _recost(transfer: float, cost_a: float, cost_b: float, residual_ratio: float) -> float:
    """Transfer time on B: B's model cost plus A's residual (measured above A's model), its
    overhead part (at most A's model cost again) scaled by residual_ratio; a transfer faster than
    A's model scales by cost_B / cost_A instead."""
    if cost_a <= 0:
        return transfer
    if transfer >= cost_a:
        return cost_b + _scaled_residual(transfer - cost_a, cost_a, residual_ratio)
    return transfer * cost_b / cost_a


def latency_ratio(a: FabricModel, b: FabricModel) -> float:
    """How per-message overheads change from A to B: the ratio of small-message latencies,
    1 when they are within measurement noise of each other (LATENCY_NOISE)."""
    la, lb = a.small_latency_us, b.small_latency_us
    if la <= 0 or lb <= 0:
        return 1.0
    r = lb / la
    return 1.0 if 1 / LATENCY_NOISE <= r <= LATENCY_NOISE else r


def _split(per_rank: Dict[int, List[float]], collective: bool = False) -> Dict[int, Tuple[float, float]]:
    """rank -> (transfer, waiting): transfer = calls x the cheapest per-call time of any rank; for a
    collective, the mean per-call time over ranks (what its model is fitted to: ranks that leave a
    collective early are part of its cost, not of the imbalance)."""
    if collective:
        calls = sum(c for c, _n, _t in per_rank.values())
        unit = sum(t for _c, _n, t in per_rank.values()) / calls if calls else 0.0
    else:
        unit = min((t / c for c, _n, t in per_rank.values() if c > 0), default=0.0)
    return {r: (min(c * unit, t), t - min(c * unit, t)) for r, (c, _n, t) in per_rank.items()}


def _group_costs(call: str, count: float, size: float, a: FabricModel, b: FabricModel, ranks: int) -> Optional[Tuple[float, float]]:
    ca = _cost_us(a, call, size, ranks)
    if ca is None or ca <= 0:
        return None
    return count * ca * 1e-6, count * _cost_us(b, call, size, ranks) * 1e-6


P2P_SENDS = frozenset({"MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Sendrecv", "MPI_Sendrecv_replace"}) | NB_SENDS
P2P_RECVS = frozenset({"MPI_Recv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace"}) | NB_RECVS


@dataclass
class _Stream:
    """One rank's point-to-point traffic: the time its blocking and completing calls took on A
    (exposed), its compute, and what its messages cost on A's model and on each B's (demand:
    the larger of what it sends and what it receives, the busier direction of its link)."""

    exposed: float = 0.0
    compute: float = 0.0
    demand_a: float = 0.0
    demand_b: List[float] = field(default_factory=list)

    def on_b(self, k: int, lat_ratio: float, overlap: bool = True) -> float:
        """Exposed time on B. What A's model does not explain (overheads, a late partner) is
        kept, its overhead part scaled by the small-message latency ratio; the transfer is B's demand, less what
        A hid behind computation (a transfer quicker than A's model with no computation to hide
        behind means A's model overstates it: B's demand is scaled down alike)."""
        da, db = self.demand_a, self.demand_b[k]
        if da <= 0:
            return self.exposed
        residual = max(self.exposed - da, 0.0)
        hidden = min(max(da - self.exposed, 0.0), self.compute) if overlap else 0.0
        scale = min(1.0, (self.exposed + hidden) / da)
        # Per-message overhead is at most what the messages cost on A's model again.
        return _scaled_residual(residual, da, lat_ratio) + max(db * scale - hidden, 0.0)


def _streams(groups, model_a: FabricModel, models_b: Sequence[FabricModel], compute: Dict[int, float]) -> Dict[int, _Stream]:
    sends: Dict[int, List[float]] = defaultdict(lambda: [0.0] * (1 + len(models_b)))
    recvs: Dict[int, List[float]] = defaultdict(lambda: [0.0] * (1 + len(models_b)))
    out: Dict[int, _Stream] = {}
    for (call, _b), per_rank in groups.items():
        for rank, (c, nby, t) in per_rank.items():
            if _is_p2p_time(call, groups):
                out.setdefault(rank, _Stream(compute=compute.get(rank, 0.0))).exposed += t
            for table, names in ((sends, P2P_SENDS), (recvs, P2P_RECVS)):
                if call in names and c:
                    row = table[rank]
                    row[0] += c * model_a.message_us(nby / c) * 1e-6
                    for k, m in enumerate(models_b):
                        row[k + 1] += c * m.message_us(nby / c) * 1e-6
    for rank, st in out.items():
        rows = [r for r in (sends.get(rank), recvs.get(rank)) if r]
        if rows:
            busier = max(rows, key=lambda r: r[0])
            st.demand_a, st.demand_b = busier[0], busier[1:]
        else:
            st.demand_b = [0.0] * len(models_b)
    return out


def _is_p2p_time(call: str, groups) -> bool:
    """A call whose time is point-to-point transfer: blocking p2p, and completions of non-blocking ones."""
    if call in BLOCKING_P2P:
        return True
    return _is_completion(call) and any(c in NB_SENDS or c in NB_RECVS for c, _b in groups)


def predict(profile: Dict[str, Any], model_a: FabricModel, models_b: Sequence[FabricModel]) -> Prediction:
    """Predict the profile's run time on B; models_b[0] is B's model, any others its band's ends."""
    ranks = int(profile["ranks"])
    info = profile["rank_info"]
    app = {r["rank"]: float(r["app_time"]) for r in info}
    mpi = {r["rank"]: float(r["mpi_time"]) for r in info}
    groups: Dict[Tuple[str, int], Dict[int, List[float]]] = defaultdict(dict)
    for rank, call, b, count, nbytes, t, _tmin, _tmax in profile["calls"]:
        acc = groups[(call, b)].setdefault(rank, [0, 0, 0.0])
        acc[0] += count
        acc[1] += nbytes
        acc[2] += t

    ratios = [latency_ratio(model_a, m) for m in models_b]
    streams = _streams(groups, model_a, models_b, {r: max(app[r] - mpi.get(r, 0.0), 0.0) for r in app})
    # Each rank's point-to-point time on B: the point, then the band's ends (every B, latency
    # scaling or not, overlap or not).
    p2p_new: Dict[int, List[float]] = {}
    for rank, st in streams.items():
        ends = [st.on_b(k, lat, overlap) for k in range(len(models_b)) for lat in (ratios[k], 1.0)
                for overlap in (True, False)]
        p2p_new[rank] = [st.on_b(0, ratios[0]), min(ends), max(ends)]

    delta = {r: [0.0, 0.0, 0.0] for r in app}  # point, low, high change per rank (s)
    per_call: Dict[Tuple[str, str], List[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0, 0.0])
    largest = 0.0
    for (call, b), per_rank in groups.items():
        count = sum(v[0] for v in per_rank.values())
        size = sum(v[1] for v in per_rank.values()) / count if count else 0.0
        stream = _is_p2p_time(call, groups)
        costs = None if stream else [_group_costs(call, 1, size, model_a, m, ranks) for m in models_b]
        recosted = stream or (costs is not None and costs[0] is not None)
        how = ("completion of non-blocking transfers" if _is_completion(call) and stream else
               "kept" if not recosted else "collective" if call in MPI_COLLECTIVES else "point-to-point")
        if recosted and not _is_completion(call):
            largest = max(largest, size)
        split = None if stream else _split(per_rank, call in MPI_COLLECTIVES)
        for rank, (c, nby, t) in per_rank.items():
            new = [t, t, t]
            if stream:
                st = streams[rank]
                share = t / st.exposed if st.exposed > 0 else 0.0
                new = [share * x for x in p2p_new[rank]]
            elif recosted:
                transfer, wait = split[rank]
                ends = []
                for k, m in enumerate(models_b):
                    ca, cb = costs[k][0] * c, costs[k][1] * c
                    floor = c * _stream_floor_s(m, call, size, ranks)
                    for kept in (False, True):
                        tb = max(_recost(transfer, ca, cb, 1.0 if kept else ratios[k]), floor)
                        step = tb - transfer  # a late partner delays a rank by at most its own change
                        ends += [tb + max(0.0, wait + min(0.0, step)), tb + wait + max(0.0, step)]
                        if k == 0 and not kept:
                            new[0] = tb + wait
                new[1], new[2] = min(ends + [new[0]]), max(ends + [new[0]])
            if rank in delta:
                for i in range(3):
                    delta[rank][i] += new[i] - t
            pc = per_call[(call, how)]
            pc[0] += c
            pc[1] += nby
            pc[2] += t
            for i in range(3):
                pc[3 + i] += new[i]

    predicted = [app[r] + delta[r][0] for r in app]
    low = [app[r] + delta[r][1] for r in app]
    high = [app[r] + delta[r][2] for r in app]
    calls = [CallChange(call=call, how=how, count=int(v[0]), bytes=int(v[1]), time_a_s=v[2] / ranks,
                        time_b_s=v[3] / ranks, low_b_s=v[4] / ranks, high_b_s=v[5] / ranks)
             for (call, how), v in per_call.items()]
    calls.sort(key=lambda c: (-abs(c.change_s), -c.time_a_s, c.call))
    point = max(predicted)
    point_low, point_high = min(max(low), point), max(max(high), point)
    shared = cpu_floor(profile, _messaging(groups, models_b[0]))
    floor, floor_low = (shared.floor_s, shared.floor_low_s) if shared else (0.0, 0.0)
    pred = Prediction(
        source=model_a.name, target=models_b[0].name, ranks=ranks, measured_s=max(app.values()),
        compute_s=sum(app[r] - mpi[r] for r in app) / len(app), mpi_a_s=sum(mpi.values()) / len(mpi),
        predicted_s=max(point, floor), low_s=max(point_low, floor_low), high_s=max(point_high, floor),
        calls=calls, cpu_floor={**shared.to_dict(), "network_s": point} if shared else None,
    )
    nb = any(_is_completion(c) for c, _b in groups) and any(c in NB_SENDS or c in NB_RECVS for c, _b in groups)
    pred.assumptions = _assumptions(profile, model_a, models_b, largest, nb, ratios[0])
    if shared:
        pred.assumptions.append(_floor_finding(pred, models_b[0]))
    return pred


def _messaging(groups, model: FabricModel) -> Optional[Dict[int, Tuple[float, float]]]:
    """rank -> (core time of its point-to-point messages on B, lower estimate), seconds: a message
    sent or received is half of a swap (one send and one receive) of B's exchange benchmark."""
    x = model.exchange
    if x is None or x.core_share <= 1:
        return None
    out: Dict[int, List[float]] = defaultdict(lambda: [0.0, 0.0])
    for (call, _b), per_rank in groups.items():
        sides = (call in P2P_SENDS) + (call in P2P_RECVS)
        if not sides:
            continue
        for rank, (c, nby, _t) in per_rank.items():
            if c:
                n = nby / c
                out[rank][0] += sides * c * x.cpu_per_message_us(n) / 2 * 1e-6
                out[rank][1] += sides * c * x.cpu_per_message_low_us(n) / 2 * 1e-6
    return {r: (v[0], v[1]) for r, v in out.items()}


def _floor_finding(p: Prediction, b: FabricModel) -> Dict[str, Any]:
    """What the CPU-bound floor is made of (words: report.words.models)."""
    exchange = ("shared" if b.exchange and b.exchange.core_share > 1 else "core_per_rank" if b.exchange else "none")
    return {**p.cpu_floor, "kind": "cpu_floor", "applies": p.floor_applies, "target": b.name, "exchange": exchange}


def _assumptions(profile, a: FabricModel, bs: Sequence[FabricModel], largest: float, nb: bool,
                 ratio: float) -> List[Dict[str, Any]]:
    """The assumptions behind a prediction, as findings (kind and figures; worded in report.words.models)."""
    out: List[Dict[str, Any]] = [
        {"kind": "compute_kept"},
        {"kind": "p2p_recosted", "latency_ratio": ratio},
        {"kind": "overlap_kept"},
        {"kind": "collectives_recosted"},
        {"kind": "other_calls_kept"},
    ]
    if nb:
        out.append({"kind": "completions_are_p2p"})
    for m in (a, *bs[:1]):
        if m.catalogue:
            out.append({"kind": "catalogue_model", "model": m.name, "source": m.p2p.source})
        else:
            hi = m.p2p.valid_sizes[1]
            if largest > hi:
                out.append({"kind": "extrapolated", "model": m.name, "largest_b": int(largest), "measured_b": hi})
            if m.ranks and m.ranks != profile["ranks"] and m.collectives:
                out.append({"kind": "collective_ranks", "model": m.name, "measured_ranks": m.ranks,
                            "ranks": profile["ranks"]})
    if len(bs) > 1:
        out.append({"kind": "catalogue_ends"})
    return out


# ---- from the database -------------------------------------------------------------


def _looks_like_run(ref: str) -> bool:
    return ref.isdigit() or ref in ("last",) or ref.startswith("last~") or ref.startswith("#")


def resolve_models(store, ref: str) -> Tuple[List[FabricModel], Optional[Dict[str, Any]]]:
    """([model] of a stored engine run, with the points it was fitted to), or ([typical, fast end,
    slow end] of a catalogue fabric, None)."""
    from fabricbench.analysis.peaks import resolve_fabric
    from fabricbench.models.fabric import fitted_points

    text = str(ref).strip()
    if _looks_like_run(text):
        run = store.get_run(text)
        measurements = store.measurements(run.id)
        return [fit_run(run, measurements)], fitted_points(measurements)
    fabric = resolve_fabric(text)
    if fabric is None:
        raise ModelUnavailable(f"'{ref}' is a lab rate, not a fabric with figures: give the engine run measured there")
    return list(catalogue_models(fabric)), None


def models_for(store, ref: str) -> List[FabricModel]:
    """[model] of a stored engine run, or [typical, fast end, slow end] of a catalogue fabric."""
    return resolve_models(store, ref)[0]


def profile_source(run) -> Optional[str]:
    """The fabric a profile run says it was measured on (its fabric= tag)."""
    return (run.tags or {}).get("fabric")


def predict_case(store, profile_ref: str, on: str, source: Optional[str] = None, level: float = BAND_LEVEL):
    """(prediction, [model of A, model of B], [points A was fitted to, B's]; None for a catalogue fabric)."""
    from fabricbench.errors import UsageError

    run = store.get_run(profile_ref)
    profile = store.artifact(run.id, "profile")
    if profile is None:
        raise UsageError(f"run {run.id} is a {run.kind} run, not a profile (see 'fabricbench runs --kind profile')")
    source = source or profile_source(run)
    if not source:
        raise UsageError(f"run {run.id} does not say which fabric it was measured on: give --from RUN_OR_FABRIC "
                         "(an engine run measured there, or a catalogue name such as 1gbe or edr)")
    models_a, points_a = resolve_models(store, source)
    models_b, points_b = resolve_models(store, on)
    p = predict(profile, models_a[0], models_b)
    profiles = replicate_profiles(store, run, profile)
    replicas = [predict(data, models_a[0], models_b) for _r, data in profiles[1:]]
    widen_band(p, replicas, fit_error([models_a[0], models_b[0]]), level)
    loads = [x for x in (run_load(r) for r, _d in profiles) if x is not None]
    if loads:
        p.band["profiles_load_1m"] = [min(loads), max(loads)]
    p.application, p.profile_run = application_of(run, profile), run.id
    p.source_ref, p.target_ref = _describe_ref(store, source), _describe_ref(store, on)
    return p, [models_a[0], models_b[0]], [points_a, points_b]


def _describe_ref(store, ref: str) -> Optional[str]:
    """'the fabric engine run 5 (model-1g) measured'; None for a catalogue fabric (its model's name says it)."""
    text = str(ref).strip()
    if _looks_like_run(text):
        run = store.get_run(text)
        kind = "engine" if run.kind == "benchmark" else run.kind
        return f"the fabric {kind} run {run.id}" + (f" ({run.label})" if run.label else "") + " measured"
    return None


def check_against(p: Prediction, store, ref: str) -> Dict[str, Any]:
    """The prediction against a run measured at the target (an app run, a profile): the same figure
    (MPI_Init to MPI_Finalize, slowest rank), the relative error and whether the band holds it."""
    from fabricbench.errors import UsageError

    run = store.get_run(ref)
    measured = measured_runtime(store, run)
    if measured is None:
        raise UsageError(f"run {run.id} ({run.kind}) has no MPI_Init to MPI_Finalize time to check against: "
                         "measure one with fabricbench app run NAME (or fabricbench profile) on the target fabric")
    value = measured["value"]
    cautions: List[Dict[str, Any]] = []
    if run.ranks and run.ranks != p.ranks:
        cautions.append({"kind": "other_ranks", "run": run.id, "ranks": run.ranks, "profile_ranks": p.ranks})
    app = (run.tags or {}).get("app")
    if app and p.application and app != p.application:
        cautions.append({"kind": "other_application", "run": run.id, "application": app, "profile_application": p.application})
    load, seen = run_load(run), (p.band or {}).get("profiles_load_1m")
    if load is not None and seen and not seen[0] <= load <= seen[1]:
        cautions.append({"kind": "other_load", "run": run.id, "load_1m": load, "profiles_load_1m": list(seen)})
    return {"run": run.id, "label": run.label, "kind": run.kind, "measured_s": value, "figure": measured["source"],
            "resolution_s": measured["resolution_s"], "predicted_s": p.predicted_s,
            "error": (p.predicted_s - value) / value if value else None,
            "in_band": p.low_s <= value <= p.high_s, "cautions": cautions}


def run_load(run) -> Optional[float]:
    """The host's 1-minute load average when `run` started (its provenance), or None."""
    load = ((run.provenance or {}).get("host_load") or {}) if isinstance(run.provenance, dict) else {}
    value = load.get("loadavg_1m") if isinstance(load, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def application_of(run, profile: Dict[str, Any]) -> Optional[str]:
    """The application a profile (or profiled app run) is of: its app= tag, else the program's name."""
    import os

    app = (run.tags or {}).get("app")
    if app:
        return str(app)
    command = profile.get("command") or []
    return os.path.basename(str(command[0])) if command else None


def _place(run) -> Tuple[Optional[str], Any]:
    """Where a run ran, for matching runs of one application: its fabric= tag and its lab's link."""
    lab = (run.provenance or {}).get("lab") if isinstance(run.provenance, dict) else None
    return (run.tags or {}).get("fabric"), (lab or {}).get("link") if isinstance(lab, dict) else None


def replicate_profiles(store, run, profile: Dict[str, Any]) -> List[Tuple[Any, Dict[str, Any]]]:
    """Every stored profile (profile runs, app runs with --profile) of the same application on the same
    ranks and fabric as `run`, `run` first: the application's own run-to-run spread on A."""
    app, place = application_of(run, profile), _place(run)
    out = [(run, profile)]
    for other in store.list_runs():
        if other.id == run.id or other.status != "complete" or other.kind not in ("profile", "app"):
            continue
        if other.ranks != run.ranks or _place(other) != place:
            continue
        data = store.artifact(other.id, "profile")
        if data is None or data.get("ranks") != profile.get("ranks") or application_of(other, data) != app:
            continue
        out.append((other, data))
    return out


def measured_runtime(store, run) -> Optional[Dict[str, Any]]:
    """The figure a prediction is checked against, measured by `run`: MPI_Init to MPI_Finalize of the
    slowest rank ({"value", "source", "resolution_s"}); None when the run has none."""
    from fabricbench.analysis.app_figures import RUNTIME, profile_runtime

    for m in store.measurements(run.id):
        if m.metric == RUNTIME and "section" not in m.params:
            d = m.detail or {}
            return {"value": m.value, "source": d.get("source") or "MPI_Init to MPI_Finalize",
                    "resolution_s": d.get("resolution_s")}
    t = profile_runtime(store.artifact(run.id, "profile"))
    if t is None:
        return None
    return {"value": t["value"], "source": f"its profile: MPI_Init to MPI_Finalize, slowest rank ({t['rank']})",
            "resolution_s": t["resolution_s"]}


def fit_error(models: Sequence[FabricModel]) -> float:
    """The larger median relative fit error of the fitted models' point-to-point (0 for catalogue figures)."""
    errs = [m.p2p.fit.median_rel for m in models if m.p2p.fit is not None]
    return max(errs, default=0.0)


def interval_factor(predictions: Sequence[float], level: float = BAND_LEVEL) -> Optional[Dict[str, float]]:
    """A prediction interval for ONE future run from n predictions of the application's runs on B
    (one per profile), on the log of the time: on a busy host the run time stretches by a factor
    (28.8 .. 59.4 s for five OpenFOAM profiles at load 15-24), so log times spread evenly where times
    do not. The interval is centre / factor .. centre * factor with centre the geometric mean and
    factor exp(t(level, n-1) * sd * sqrt(1 + 1/n)): Student's t carries that sd is estimated from n
    runs, sqrt(1 + 1/n) that the centre is too. None with fewer than 2 positive predictions."""
    import math

    logs = [math.log(x) for x in predictions if x > 0]
    n = len(logs)
    if n < 2:
        return None
    from scipy.stats import t as student_t

    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    quantile = float(student_t.ppf(0.5 + level / 2, n - 1))
    return {"level": level, "n": n, "centre_s": math.exp(mean), "log_sd": sd, "t": quantile,
            "factor": math.exp(quantile * sd * math.sqrt(1 + 1 / n))}


def widen_band(p: Prediction, replicas: Sequence[Prediction], fit: float, level: float = BAND_LEVEL) -> None:
    """The band as wide as what is known to vary. With several profiles: a prediction interval for one
    future run (``interval_factor``) around their predictions on B, its ends moved by the re-costing
    choices (each profile's low and high against its point: the same model choices apply to every run);
    with one profile, that profile's re-costing band alone. Then the models' fit error widens the
    communication part. The band never drops this profile's own re-costing band."""
    preds = [p, *replicas]
    interval = interval_factor([q.predicted_s for q in preds], level)
    p.band = {
        "recosting": [p.low_s, p.high_s],
        "profiles": len(preds),
        "profiles_measured_s": [q.measured_s for q in preds],
        "profiles_predicted_s": [q.predicted_s for q in preds],
        "fit_error": fit,
        "interval": interval,
    }
    low, high = p.low_s, p.high_s
    if interval:
        down = min(q.low_s / q.predicted_s for q in preds if q.predicted_s > 0)
        up = max(q.high_s / q.predicted_s for q in preds if q.predicted_s > 0)
        low = min(low, interval["centre_s"] / interval["factor"] * down)
        high = max(high, interval["centre_s"] * interval["factor"] * up)
    comm_low, comm_high = max(low - p.compute_s, 0.0), max(high - p.compute_s, 0.0)
    p.low_s, p.high_s = max(low - fit * comm_low, 0.0), high + fit * comm_high
    if replicas:
        # The figure of record is the application's, not this profile's: the median over its profiles on A
        # and of their predictions on B (one profile caught in a slow minute of a loaded host set the point
        # 16% above that median; at load 17 the profiles of one LAMMPS case took 3.8 to 11 s).
        from statistics import median

        measured = p.band["profiles_measured_s"]
        p.band["this_profile"] = {"measured_s": p.measured_s, "predicted_s": p.predicted_s}
        p.measured_s, p.predicted_s = median(measured), median(p.band["profiles_predicted_s"])
        p.assumptions.append({"kind": "profiles_spread", "profiles": len(measured), "measured_s": [min(measured), max(measured)],
                              "interval": interval})
    else:
        p.assumptions.append({"kind": "one_profile"})
    if fit:
        p.assumptions.append({"kind": "fit_error", "fit_error": fit})


def predict_from_store(store, profile_ref: str, on: str, source: Optional[str] = None,
                       level: float = BAND_LEVEL) -> Prediction:
    return predict_case(store, profile_ref, on, source, level)[0]
