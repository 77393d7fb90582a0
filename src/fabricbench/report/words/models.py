"""Findings -> words: the lines a user reads for what models/ and analysis/ return.

analysis/ and models/ return numbers and structured findings (a model, a prediction, a check of
a prediction); the sentence is written here, once, and both the terminal (cli/) and the report
use it. Every number in it is written by ``fabricbench.numbers``.
"""
from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from fabricbench.models.fabric import FabricModel
from fabricbench.models.p2p import HockneyModel
from fabricbench.models.predict import Prediction
from fabricbench.numbers import binary_size, fixed, number, percent, ratio, scientific, short, signed

if TYPE_CHECKING:  # numpy comes with it: only the scaling words need the type
    from fabricbench.models.scaling import ScalingModel


# ---- a scaling model (models/scaling.py) -------------------------------------------------------

def _coef(value: float) -> str:
    if value == 0:
        return "0"
    return short(value, 4) if 1e-3 <= abs(value) < 1e6 else scientific(value, 4)


def format_model(model: "ScalingModel", name: Optional[str] = None, errors: bool = False) -> str:
    """'t(p) = 10 + 100 * p^(-1)'; with errors=True the fit figures follow in parentheses."""
    lhs = f"{name or ('t' if model.metric == 'time' else model.metric)}({model.variable})"
    text = f"{lhs} = {_coef(model.c0)}"
    if model.term is not None:
        sign = "-" if model.c1 < 0 else "+"
        text += f" {sign} {_coef(abs(model.c1))} * {model.term.format(model.variable)}"
    if errors:
        text += f" ({format_errors(model)})"
    return text


def format_errors(model: "ScalingModel") -> str:
    """The fit figures of a scaling model: cross-validated and in-sample errors, points and scales."""
    parts = []
    if model.cv_smape is not None:
        parts.append(f"leave-one-out SMAPE {fixed(model.cv_smape, 2)}%")
    parts.append(f"SMAPE {fixed(model.smape, 2)}%")
    if model.adj_r2 is not None:
        parts.append(f"adj. R^2 {fixed(model.adj_r2, 4)}")
    parts.append(f"RSS {short(model.rss, 4)}")
    parts.append(f"{model.n_points} points, {len(model.scales)} scales")
    return ", ".join(parts)


def scaling_model_json(model: "ScalingModel") -> Dict[str, Any]:
    """A scaling model as JSON, with its formula as printed."""
    return dict(formula=format_model(model), **model.to_dict())


# ---- what a fitted fabric model notes (FabricModel.notes) -----------------------------------------

def model_note(n: Dict[str, Any]) -> str:
    """One note of a fabric model (a finding of models.fabric) as a sentence."""
    kind = n["kind"]
    if kind == "burst":
        return (f"the largest sizes measured ({n['largest_b']} B) still pass faster than the link's "
                f"{short(n['ceiling_MBps'], 4)} MB/s (a burst regime): larger messages are costed at the link's rate")
    if kind == "disturbed":
        return (f"{n['call']}: measured {short(n['measured_us'], 4)} us at {int(n['size_b'])} B, over {n['limit']}x "
                f"its algorithm over point-to-point ({short(n['form_us'], 4)} us): a disturbed measurement, the form is used")
    if kind == "catalogue":
        return (f"point-to-point {short(n['latency_us'])} us + n / {short(n['bandwidth_MBps'])} MB/s; "
                "collectives from the textbook algorithms")
    if kind == "fit_failed":
        return f"{n['call']}: {n['error']}" if n.get("call") else n["error"]
    return str(n)


def model_notes(m: FabricModel) -> List[str]:
    return [model_note(n) for n in m.notes]


def fabric_model_json(m: FabricModel) -> Dict[str, Any]:
    """The model as JSON, its notes as sentences beside their findings."""
    d = m.to_dict()
    d["note_findings"], d["notes"] = d["notes"], model_notes(m)
    return d


# ---- a fabric's communication model (models/fabric.py) -----------------------------------------

def format_fabric_model(m: FabricModel) -> List[str]:
    """A fabric model as lines: point-to-point regimes, LogGP, collectives, with fit errors."""
    def fit_text(h: HockneyModel) -> str:
        if h.fit is None:
            return "published figures, not fitted"
        return (f"fit error median {percent(100 * h.fit.median_rel)}, worst {percent(100 * h.fit.max_rel)} "
                f"over {h.fit.points} sizes")

    def regimes(h: HockneyModel) -> List[str]:
        out = []
        for r in h.regimes:
            beta = f"{number(r.beta_MBps)} MB/s" if r.beta_MBps != float("inf") else "no size dependence"
            span = "any size" if h.fit is None else f"{binary_size(r.size_min)} .. {binary_size(r.size_max)}"
            out.append(f"    {span:<22} alpha {number(r.alpha_us)} us, beta {beta}")
        return out

    lines = [f"model of {m.name}", f"  point-to-point (Hockney, t = alpha + n / beta): {fit_text(m.p2p)}"]
    if m.p2p.breakpoints:
        lines.append("  protocol breakpoints found at " + ", ".join(binary_size(b) for b in m.p2p.breakpoints))
    lines += regimes(m.p2p)
    if m.loggp:
        g = m.loggp
        lines.append(f"  LogGP: L {number(g.L_us)} us, o_send {number(g.o_send_us)} us, o_recv {number(g.o_recv_us)} us, "
                     f"g {number(g.g_us)} us, G {number(g.G_us_per_byte * 1e3)} ns/byte, O {number(g.O_us_per_byte * 1e3)} ns/byte "
                     f"(sizes {binary_size(g.valid_sizes[0])} .. {binary_size(g.valid_sizes[1])}; fit error median "
                     f"{percent(100 * g.fit.median_rel)})")
    if m.exchange:
        x = m.exchange
        lines.append(f"  exchange on shared cores (core share {number(x.core_share)}): core time per message "
                     + ", ".join(f"{number(x.cpu_per_message_us(n))} us at {binary_size(n)}" for n in x.sizes[::max(1, len(x.sizes) // 4)]))
    for name, c in m.collectives.items():
        lines.append(f"  {name} on {c.ranks} ranks ({c.algorithm} form for other counts): {fit_text(c.model)}")
        lines += regimes(c.model)
    if not m.collectives:
        lines.append("  collectives: derived from point-to-point with the textbook algorithms")
    lines += [f"  note: {n}" for n in model_notes(m)]
    return lines


# ---- a prediction for another fabric (models/predict.py) ---------------------------------------

def _band_note(p: Prediction) -> str:
    """'; 90% interval for one run from 5 profiles, fit error 3.1%' — what the band is made of."""
    b = p.band or {}
    if not b:
        return ""
    interval = b.get("interval")
    parts = [f"{level_text(interval['level'])} interval for one run from {b['profiles']} profiles" if interval else
             f"{b['profiles']} profiles" if b["profiles"] > 1 else "1 profile: its spread unknown"]
    if b.get("fit_error"):
        parts.append(f"fit error {fixed(100 * b['fit_error'], 1)}%")
    return "; " + ", ".join(parts)


def level_text(level: float) -> str:
    """A band's level: '90%', '99.5%'."""
    pc = 100 * level
    return percent(pc, decimals=0 if abs(pc - round(pc)) < 1e-9 else 1)


def interval_words(interval: Dict[str, Any]) -> str:
    """'a 90% prediction interval for one run: x1.85 either way of their geometric mean 31.2 s (Student's t, 5 runs)'."""
    return (f"a {level_text(interval['level'])} prediction interval for one run: x{short(interval['factor'], 3)} "
            f"either way of their geometric mean {number(interval['centre_s'])} s (Student's t on the log times, "
            f"{interval['n']} runs)")


_FIXED_ASSUMPTIONS = {
    "compute_kept": "compute time (application time less MPI time) is the same on both fabrics: same nodes, same ranks",
    "overlap_kept": "a transfer A hid behind computation stays hidden on B up to the same amount; the band's ends "
                    "assume no overlap",
    "collectives_recosted": "each collective's transfer time (calls x the mean time per call over ranks) is re-costed "
                            "with B's model at its mean message size; waiting above that mean (imbalance) is kept; the "
                            "band lets it change by the rank's own change",
    "other_calls_kept": "posting non-blocking calls, probes and communicator calls cost the same on both fabrics",
    "completions_are_p2p": "MPI_Wait/MPI_Test time is the completion of the non-blocking transfers: point-to-point time",
    "catalogue_ends": "the band spans the low and high ends of the catalogue figures as well as the re-costing choices",
    "one_profile": "one profile: the application's run-to-run spread is not in the band; profile it several times "
                   "on A (fabricbench profile ... or app run --profile, the same ranks and tags) and predict again",
}


def _floor_words(f: Dict[str, Any]) -> str:
    from fabricbench.analysis.profile_cpu import sharing_sentence

    m = f"ranks shared cores on A: {sharing_sentence(f)}"
    b = f["target"]
    if f["exchange"] == "shared":
        msgs = (f"and their messages {number(f['messaging_s'])} s on {b} (its exchange benchmark: the core "
                "time a swap takes from a rank that also computes)")
    elif f["exchange"] == "core_per_rank":
        msgs = (f"and their messages no core time: {b}'s exchange benchmark ran with a core per rank, so its "
                "time per message is not core time (run it with the application's ranks on the same machines)")
    else:
        msgs = (f"and their messages no core time: {b} has no exchange benchmark (fabricbench run exchange "
                "there, with the application's ranks, measures it)")
    why = (f"their computation needs {number(f['demand_s'])} s of CPU whatever the fabric (each rank's time "
           f"outside MPI less the run-queue wait its MPI time cannot hold, at most its CPU time) {msgs}, over "
           f"{f['cpus']} CPUs; the band's low end spreads the wait evenly over the run, as for ranks that poll "
           f"without yielding, and takes the bare exchange's time per message ({number(f['floor_low_s'])} s)")
    if f["applies"]:
        return f"{m}; a CPU-bound floor of {number(f['floor_s'])} s applies: {why}; the network alone " \
               f"predicts {number(f['network_s'])} s"
    return f"{m}; their CPU-bound floor of {number(f['floor_s'])} s is below the prediction: {why}"


def assumption_text(a: Dict[str, Any]) -> str:
    """One assumption of a prediction (a finding of models.predict) as a sentence."""
    kind = a["kind"]
    if kind in _FIXED_ASSUMPTIONS:
        return _FIXED_ASSUMPTIONS[kind]
    if kind == "p2p_recosted":
        r = a["latency_ratio"]
        same = ("A and B have the same small-message latency within noise, so it is kept" if r == 1.0 else
                f"it scales with the small-message latency, x{short(r, 3)}")
        return ("each rank's point-to-point messages are re-costed with B's model at their sizes (the busier direction "
                f"of its link); time above A's model, up to the model's own cost again, is a per-message overhead: "
                f"{same}; the rest is a late partner or a rank waiting for its core, kept")
    if kind == "catalogue_model":
        return (f"{a['model']}: one Hockney regime from published figures ({a['source']}); "
                "collectives follow the textbook algorithms")
    if kind == "extrapolated":
        return f"{a['model']}: messages up to {a['largest_b']} B exceed the largest size measured ({a['measured_b']} B): extrapolated"
    if kind == "collective_ranks":
        return (f"{a['model']}: collectives measured on {a['measured_ranks']} ranks, scaled to {a['ranks']} by the "
                "algorithms' forms")
    if kind == "cpu_floor":
        return _floor_words(a)
    if kind == "profiles_spread":
        lo, hi = a["measured_s"]
        text = (f"the band holds the application's own run-to-run spread: {a['profiles']} profiles of it on A took "
                f"{short(lo, 4)} .. {short(hi, 4)} s, each predicted on B")
        return text + (f"; {interval_words(a['interval'])}, widened by the re-costing choices" if a.get("interval") else "")
    if kind == "fit_error":
        return f"the band widens the communication time by the models' fit error ({fixed(100 * a['fit_error'], 1)}%)"
    return str(a)


def assumption_lines(p: Prediction) -> List[str]:
    return [assumption_text(a) for a in p.assumptions]


def caution_text(c: Dict[str, Any]) -> str:
    """Why a check of a prediction against a run may mislead (a finding of models.predict.check_against)."""
    kind = c["kind"]
    if kind == "other_ranks":
        return f"run {c['run']} ran {c['ranks']} ranks, the profile {c['profile_ranks']}"
    if kind == "other_application":
        return f"run {c['run']} is {c['application']}, the profile {c['profile_application']}"
    if kind == "other_load":
        lo, hi = c["profiles_load_1m"]
        return (f"run {c['run']} started at load {number(c['load_1m'])}, the profiles at {number(lo)} .. {number(hi)}: "
                "on a busy host the run time follows the load, which the prediction does not model, so the error "
                "includes it")
    return str(c)


def check_notes(c: Dict[str, Any]) -> List[str]:
    return [caution_text(x) for x in c.get("cautions", [])]


def prediction_json(p: Prediction, check: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The prediction (and its check) as JSON: every finding beside the sentence it reads as."""
    d = p.to_dict()
    d["assumption_findings"], d["assumptions"] = d["assumptions"], assumption_lines(p)
    if check:
        d["check"] = dict(check, notes=check_notes(check))
    return d


def _replicate_line(p: Prediction) -> List[str]:
    """With several profiles: what they took on A and the median of their predictions on B."""
    b = p.band or {}
    if b.get("profiles", 1) < 2:
        return []
    measured, predicted = b["profiles_measured_s"], b["profiles_predicted_s"]
    own = b.get("this_profile") or {}
    mine = (f"; profile run {p.profile_run} alone: {number(own['measured_s'])} s on A, {number(own['predicted_s'])} s "
            "predicted" if own else "")
    return [f"the {b['profiles']} profiles of {p.application or 'the application'} took {number(min(measured))} .. "
            f"{number(max(measured))} s on A and predict {number(median(predicted))} s on B (median){mine}"]


def format_check(c: Dict[str, Any]) -> List[str]:
    """A check of a prediction against a measured run, as lines."""
    where = "inside" if c["in_band"] else "outside"
    lines = [f"checked against run {c['run']}" + (f" ({c['label']})" if c["label"] else "") +
             f": measured {number(c['measured_s'])} s ({c['figure']}); predicted {number(c['predicted_s'])} s: "
             f"error {signed(100 * c['error'])}% ({where} the band)" if c["error"] is not None else
             f"checked against run {c['run']}: measured 0 s"]
    lines += [f"  caution: {n}" for n in check_notes(c)]
    return lines


def format_prediction(p: Prediction, top: int = 5) -> List[str]:
    """The prediction as lines: headline, band, the calls behind the change, assumptions."""
    faster = p.predicted_s < p.measured_s
    word = "faster" if faster else "slower"
    factor = p.speedup if faster else (1 / p.speedup if p.speedup > 0 else float("inf"))
    what = (f"{p.application}, profile run {p.profile_run}" if p.application else
            f"profile run {p.profile_run}" if p.profile_run else "the profile")
    several = (p.band or {}).get("profiles", 1) > 1
    lines = [
        f"{what}: measured {number(p.measured_s)} s on A{' (median of its profiles)' if several else ''}, "
        f"{p.source_ref or p.source} ({p.ranks} ranks; {'this profile: ' if several else ''}"
        f"compute {number(p.compute_s)} s, MPI {number(p.mpi_a_s)} s per rank on average)",
        f"predicted on {'B, ' + p.target_ref if p.target_ref else p.target}: {number(p.predicted_s)} s [band {number(p.low_s)} .. "
        f"{number(p.high_s)} s{_band_note(p)}]",
        *_replicate_line(p),
        f"{ratio(factor)} {word} on {p.target} (speedup {ratio(p.speedup)})",
    ]
    if p.floor_applies:
        f = p.cpu_floor
        msgs = f"; their messages {number(f['messaging_s'])} s of core time on B" if f["messaging_s"] else ""
        lines.append(f"CPU-bound floor: {number(f['floor_s'])} s ({len(f['ranks'])} ranks on {f['cpus']} CPUs on A{msgs}; "
                     f"network alone {number(f['network_s'])} s)")
    moved = [c for c in p.calls if abs(c.change_s) > 0][:top]
    if moved:
        lines.append(f"calls that account for the change (seconds per rank, A -> B{f', profile run {p.profile_run}' if several else ''}):")
        for c in moved:
            size = binary_size(c.bytes / c.count) if c.count and c.bytes else "0 B"
            lines.append(f"  {c.call:<16} {number(c.time_a_s):>9} -> {number(c.time_b_s):>9} ({signed(c.change_s)} s; "
                         f"{number(c.count)} calls, mean {size}; {c.how})")
    else:
        lines.append("no MPI call changes: the profile has no communication the models re-cost")
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in assumption_lines(p)]
    return lines
