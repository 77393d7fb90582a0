"""Findings -> words: the lines a user reads for what models/ and analysis/ return.

analysis/ and models/ return numbers and structured findings (a model, a prediction, a check of
a prediction); the sentence is written here, once, and both the terminal (cli/) and the report
use it. Every number in it is written by ``fabricbench.numbers``.
"""
from __future__ import annotations

from statistics import median
from typing import Any, Dict, List

from fabricbench.models.fabric import FabricModel
from fabricbench.models.p2p import HockneyModel
from fabricbench.models.predict import Prediction
from fabricbench.numbers import binary_size, fixed, number, percent, ratio, signed


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
    lines += [f"  note: {n}" for n in m.notes]
    return lines


# ---- a prediction for another fabric (models/predict.py) ---------------------------------------

def _band_note(p: Prediction) -> str:
    """'; 5 profiles, fit error 3.1%' — what the band is made of."""
    b = p.band or {}
    if not b:
        return ""
    parts = [f"{b['profiles']} profiles" if b["profiles"] > 1 else "1 profile: its spread unknown"]
    if b.get("fit_error"):
        parts.append(f"fit error {fixed(100 * b['fit_error'], 1)}%")
    return "; " + ", ".join(parts)


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
    lines += [f"  caution: {n}" for n in c["notes"]]
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
    lines += [f"  - {a}" for a in p.assumptions]
    return lines
