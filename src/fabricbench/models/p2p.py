"""Point-to-point cost models: Hockney per protocol regime, and LogGP.

A model is data. ``HockneyModel`` is t(n) = alpha + n / beta in microseconds (n bytes, beta in
MB/s, and 1 MB/s is 1 byte/us), one ``Regime`` per protocol range (eager, rendezvous, ...),
with the fit error and the sizes it was fitted on. ``LogGP`` holds L, o, g, G (and the
per-byte overhead O) as Netgauge's LogGP method defines them.

A model may carry the link's steady rate (``ceiling_MBps``, e.g. the lab's shaped rate): a
token bucket passes a burst at memory speed, and a regime fitted only to such bursts is a
real regime of its sizes but must not be extrapolated, so beyond the largest fitted size
the extra bytes cost at least n / ceiling.

``fit_hockney`` finds the regimes from the data: every split of the sorted sizes into up to
``MAX_REGIMES`` contiguous ranges is fitted by non-negative least squares on relative
residuals (a 1 us error matters at 1 byte, not at 4 MiB), and the number of regimes is
chosen by the Bayesian information criterion, so a breakpoint appears only where the data
ask for one. ``fit_loggp`` fits LogGP from the engine's ``loggp`` records.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy.optimize import nnls

MAX_REGIMES = 3
MIN_POINTS = 3  # per regime: two parameters and one degree of freedom


class FitError(ValueError):
    """The points cannot support a model (too few sizes, no positive times)."""


@dataclass(frozen=True)
class Regime:
    """t(n) = alpha_us + n / beta_MBps for sizes size_min..size_max (the fitted points)."""

    size_min: int
    size_max: int
    alpha_us: float
    beta_MBps: float  # inf when the regime shows no size dependence

    def time_us(self, n: float) -> float:
        return self.alpha_us + (n / self.beta_MBps if math.isfinite(self.beta_MBps) and self.beta_MBps > 0 else 0.0)


@dataclass(frozen=True)
class Fit:
    """How well a model matches the points it was fitted on (relative errors)."""

    points: int
    median_rel: float
    max_rel: float


@dataclass(frozen=True)
class HockneyModel:
    regimes: Tuple[Regime, ...]
    fit: Optional[Fit]  # None for a model that was not fitted (a catalogue figure)
    source: str
    ceiling_MBps: Optional[float] = None  # the link's steady rate: no faster beyond the fitted sizes

    @property
    def valid_sizes(self) -> Tuple[int, int]:
        return (self.regimes[0].size_min, self.regimes[-1].size_max)

    @property
    def breakpoints(self) -> List[int]:
        """The first size of every regime after the first."""
        return [r.size_min for r in self.regimes[1:]]

    def regime(self, n: float) -> Regime:
        for r in self.regimes[:-1]:
            if n <= r.size_max:
                return r
        return self.regimes[-1]

    def time_us(self, n: float) -> float:
        last = self.regimes[-1]
        if self.ceiling_MBps and n > last.size_max:
            return max(last.time_us(n), last.time_us(last.size_max) + (n - last.size_max) / self.ceiling_MBps)
        return self.regime(n).time_us(n)

    @property
    def alpha_us(self) -> float:
        return self.regimes[0].alpha_us

    @property
    def beta_MBps(self) -> float:
        """The asymptotic bandwidth: that of the largest-message regime."""
        return self.regimes[-1].beta_MBps

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": "hockney", "source": self.source, "regimes": [asdict(r) for r in self.regimes],
                "fit": asdict(self.fit) if self.fit else None, "valid_sizes": list(self.valid_sizes),
                "ceiling_MBps": self.ceiling_MBps}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "HockneyModel":
        return cls(tuple(Regime(**r) for r in d["regimes"]), Fit(**d["fit"]) if d.get("fit") else None, d["source"],
                   d.get("ceiling_MBps"))


@dataclass(frozen=True)
class LogGP:
    """LogGP parameters in microseconds (G and O per byte), from the engine's loggp benchmark."""

    L_us: float
    o_send_us: float
    o_recv_us: float
    g_us: float
    G_us_per_byte: float
    O_us_per_byte: float
    fit: Fit
    valid_sizes: Tuple[int, int]
    source: str

    def send_overhead_us(self, n: float) -> float:
        return self.o_send_us + n * self.O_us_per_byte

    def gap_us(self, n: float) -> float:
        return self.g_us + max(n - 1, 0) * self.G_us_per_byte

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["kind"] = "loggp"
        return d


def _line_fit(n: np.ndarray, t: np.ndarray) -> Tuple[float, float, float]:
    """alpha, per-byte slope >= 0 minimising the squared relative residuals; and that sum.

    alpha may be negative when the line stays positive over the regime's sizes: a token bucket
    passes its depth (-alpha * beta bytes) at memory speed and the rest at the link's rate, so
    the steady regime's line starts below zero; elsewhere alpha >= 0.
    """
    w = 1.0 / t
    a = np.column_stack([w, n * w])
    coef = np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0]
    if not (coef[1] >= 0 and coef[0] < 0 and coef[0] + coef[1] * n.min() > 0):
        coef, _ = nnls(a, np.ones_like(t))
    resid = (coef[0] + coef[1] * n - t) * w
    return float(coef[0]), float(coef[1]), float(resid @ resid)


def _segments(count: int, k: int) -> List[List[Tuple[int, int]]]:
    """Every split of range(count) into k contiguous runs of at least MIN_POINTS."""
    if k == 1:
        return [[(0, count)]] if count >= MIN_POINTS else []
    out = []
    for cut in range(MIN_POINTS, count - MIN_POINTS * (k - 1) + 1):
        for rest in _segments(count - cut, k - 1):
            out.append([(0, cut)] + [(a + cut, b + cut) for a, b in rest])
    return out


def fit_hockney(sizes: Sequence[float], times_us: Sequence[float], source: str = "",
                max_regimes: int = MAX_REGIMES, ceiling_MBps: Optional[float] = None) -> HockneyModel:
    """Hockney regimes fitted to (size, one-way time) points; see the module docstring."""
    pts = sorted((float(s), float(t)) for s, t in zip(sizes, times_us) if t is not None and t > 0 and s >= 0)
    merged: Dict[float, List[float]] = {}
    for s, t in pts:
        merged.setdefault(s, []).append(t)
    n = np.array(sorted(merged))
    t = np.array([float(np.median(merged[s])) for s in n])
    if len(n) == 0:
        raise FitError(f"{source or 'the data'}: no point with a positive time to fit a model to")
    if len(n) == 1:  # one size (a barrier): a constant
        regime = Regime(size_min=int(n[0]), size_max=int(n[0]), alpha_us=float(t[0]), beta_MBps=math.inf)
        return HockneyModel((regime,), Fit(points=1, median_rel=0.0, max_rel=0.0), source, ceiling_MBps)
    best = None
    for k in range(1, max_regimes + 1):
        for split in _segments(len(n), k) or ([[(0, len(n))]] if k == 1 else []):
            fits = [_line_fit(n[a:b], t[a:b]) for a, b in split]
            ssr = sum(f[2] for f in fits)
            bic = len(n) * math.log(ssr / len(n) + 1e-12) + 3 * k * math.log(len(n))
            if best is None or bic < best[0] - 1e-9:
                best = (bic, split, fits)
    _, split, fits = best
    regimes = tuple(
        Regime(size_min=int(n[a]), size_max=int(n[b - 1]), alpha_us=alpha, beta_MBps=(1.0 / slope) if slope > 0 else math.inf)
        for (a, b), (alpha, slope, _) in zip(split, fits)
    )
    model = HockneyModel(regimes, None, source)
    rel = np.abs(np.array([model.time_us(s) for s in n]) - t) / t
    return HockneyModel(regimes, Fit(points=len(n), median_rel=float(np.median(rel)), max_rel=float(rel.max())), source,
                        ceiling_MBps)


def catalogue_hockney(latency_us: float, bandwidth_MBps: float, source: str) -> HockneyModel:
    """A one-regime model from published figures (no fit, valid for any size)."""
    return HockneyModel((Regime(0, 1 << 40, float(latency_us), float(bandwidth_MBps)),), None, source)


def fit_loggp(records: Sequence[Dict[str, Any]], source: str = "") -> LogGP:
    """LogGP from loggp records: {size, metric in (overhead_send, overhead_recv, gap, latency), value us}.

    o(s) = o + s*O and g(s) = g + (s-1)*G are straight lines over the sizes; L is the
    one-way latency of the smallest size less both overheads (Netgauge's definition).
    """
    by: Dict[str, Dict[float, float]] = {}
    for r in records:
        if r.get("value") is not None and r["value"] >= 0:
            by.setdefault(r["metric"], {})[float(r["size"])] = float(r["value"])
    need = {"overhead_send", "overhead_recv", "gap", "latency"}
    if not need <= set(by):
        raise FitError(f"{source or 'the run'}: LogGP needs {', '.join(sorted(need))}; it has {', '.join(sorted(by)) or 'none'}")

    def line(metric: str, shift: float = 0.0) -> Tuple[float, float, List[float]]:
        s = np.array(sorted(by[metric]))
        v = np.array([by[metric][x] for x in s])
        if len(s) < 2:
            return float(v[0]), 0.0, [0.0]
        slope, icpt = np.polyfit(np.maximum(s - shift, 0.0), v, 1)
        pred = icpt + slope * np.maximum(s - shift, 0.0)
        rel = list(np.abs(pred - v) / np.maximum(v, 1e-9))
        return float(max(icpt, 0.0)), float(max(slope, 0.0)), rel

    o_s, big_o, r1 = line("overhead_send")
    o_r, _, r2 = line("overhead_recv")
    g, big_g, r3 = line("gap", shift=1.0)
    smallest = min(by["latency"])
    lat = by["latency"][smallest]
    rel = np.array(r1 + r2 + r3)
    sizes = sorted(set().union(*(by[m] for m in need)))
    return LogGP(L_us=max(lat - (o_s + smallest * big_o) - o_r, 0.0), o_send_us=o_s, o_recv_us=o_r, g_us=g, G_us_per_byte=big_g,
                 O_us_per_byte=big_o, fit=Fit(len(rel), float(np.median(rel)), float(rel.max())),
                 valid_sizes=(int(sizes[0]), int(sizes[-1])), source=source)
