"""Scaling models: t(p) = c0 + c1 * p^i * log2(p)^j, chosen by leave-one-out cross-validation.

This is Extra-P's single-parameter performance model normal form with one term: for every
candidate exponent pair (i from ``EXPONENTS_I``, j from ``EXPONENTS_J``; plus the constant
model t = c0) the coefficients are fitted by linear least squares, and each candidate is
scored by leave-one-out cross-validation - fit on all points but one, predict the one left
out - with the symmetric mean absolute percentage error (SMAPE) of those predictions. The
candidate with the smallest cross-validated SMAPE wins; near-ties go to the smaller
in-sample residual sum of squares, then to the simpler term.

A model is data (``ScalingModel``: term, coefficients, error figures); ``fit_scaling_model``
fits one, ``ScalingModel.predict`` evaluates one, and ``report.words.models.format_model`` prints one. ``p`` is
whatever the study scales (nodes or ranks); the model does not care which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

EXPONENTS_I: Tuple[Fraction, ...] = tuple(
    Fraction(x) for x in ("-1", "-2/3", "-1/2", "-1/3", "0", "1/3", "1/2", "2/3", "1", "3/2", "2")
)
EXPONENTS_J: Tuple[int, ...] = (0, 1, 2)
MIN_SCALES = 3  # fewer distinct scales cannot tell candidates apart by cross-validation
_TIE = 1e-9


class ModelError(ValueError):
    """The points cannot support a model (too few scales, non-positive scales, no finite values)."""


@dataclass(frozen=True)
class Term:
    """p^i * log2(p)^j."""

    i: Fraction
    j: int

    def evaluate(self, p: Union[float, np.ndarray]) -> Union[float, np.ndarray]:
        p_arr = np.asarray(p, dtype=float)
        out = np.power(p_arr, float(self.i)) * np.power(np.log2(p_arr), self.j)
        return float(out) if out.ndim == 0 else out

    @property
    def complexity(self) -> Tuple[int, float]:
        """Orders terms from simple to elaborate (ties between equally good models go to the simpler)."""
        return (self.j, abs(float(self.i)))

    def format(self, var: str = "p") -> str:
        parts = []
        if self.i != 0:
            parts.append(var if self.i == 1 else f"{var}^({self.i})" if self.i.denominator != 1 or self.i < 0 else f"{var}^{self.i}")
        if self.j:
            parts.append(f"log2({var})" if self.j == 1 else f"log2({var})^{self.j}")
        return " * ".join(parts) or "1"

    def to_dict(self) -> Dict[str, Any]:
        return {"i": str(self.i), "i_value": float(self.i), "j": self.j}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Term":
        return cls(Fraction(str(d["i"])), int(d["j"]))


@dataclass
class ScalingModel:
    """value(p) = c0 + c1 * term(p), with how well it fits (in-sample and cross-validated)."""

    c0: float
    c1: float
    term: Optional[Term]  # None: the constant model value(p) = c0
    n_points: int
    rss: float  # residual sum of squares, in-sample (value units squared)
    smape: float  # in-sample symmetric mean absolute percentage error, %
    adj_r2: Optional[float]  # None when the points cannot define it (constant data, too few points)
    cv_smape: Optional[float]  # leave-one-out SMAPE, %: the selection criterion
    cv_rss: Optional[float]  # leave-one-out residual sum of squares
    metric: str = "time"
    unit: str = "s"
    variable: str = "p"
    candidates: int = 0  # hypotheses compared
    scales: List[float] = field(default_factory=list)  # distinct p the model was fitted on

    def predict(self, p: Union[float, Sequence[float], np.ndarray]) -> Union[float, np.ndarray]:
        p_arr = np.asarray(p, dtype=float)
        out = self.c0 + (self.c1 * np.asarray(self.term.evaluate(p_arr)) if self.term is not None else 0.0 * p_arr)
        out = np.asarray(out, dtype=float)
        return float(out) if out.ndim == 0 else out

    def to_dict(self) -> Dict[str, Any]:
        return {
            "c0": self.c0,
            "c1": self.c1,
            "term": self.term.to_dict() if self.term else None,
            "n_points": self.n_points,
            "rss": self.rss,
            "smape": self.smape,
            "adj_r2": self.adj_r2,
            "cv_smape": self.cv_smape,
            "cv_rss": self.cv_rss,
            "metric": self.metric,
            "unit": self.unit,
            "variable": self.variable,
            "candidates": self.candidates,
            "scales": list(self.scales),
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "ScalingModel":
        return cls(
            c0=float(d["c0"]),
            c1=float(d["c1"]),
            term=Term.from_dict(d["term"]) if d.get("term") else None,
            n_points=int(d["n_points"]),
            rss=float(d["rss"]),
            smape=float(d["smape"]),
            adj_r2=d.get("adj_r2"),
            cv_smape=d.get("cv_smape"),
            cv_rss=d.get("cv_rss"),
            metric=d.get("metric", "time"),
            unit=d.get("unit", "s"),
            variable=d.get("variable", "p"),
            candidates=int(d.get("candidates", 0)),
            scales=list(d.get("scales", [])),
        )


def candidate_terms(exponents_i: Iterable[Fraction] = EXPONENTS_I, exponents_j: Iterable[int] = EXPONENTS_J) -> List[Optional[Term]]:
    """The hypotheses: the constant model (None) and every p^i*log2(p)^j except p^0*log2(p)^0."""
    terms: List[Optional[Term]] = [None]
    for j in exponents_j:
        for i in exponents_i:
            i = Fraction(i)
            if i == 0 and j == 0:
                continue
            terms.append(Term(i, int(j)))
    return terms


def smape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Symmetric mean absolute percentage error, in % (0 when both are 0 at a point)."""
    a, f = np.asarray(actual, float), np.asarray(predicted, float)
    denom = np.abs(a) + np.abs(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = np.where(denom > 0, 2.0 * np.abs(f - a) / denom, 0.0)
    return float(np.mean(parts) * 100.0)


def _design(p: np.ndarray, term: Optional[Term]) -> np.ndarray:
    if term is None:
        return np.ones((len(p), 1))
    return np.column_stack([np.ones(len(p)), term.evaluate(p)])


def _lstsq(p: np.ndarray, y: np.ndarray, term: Optional[Term]) -> Tuple[float, float]:
    coef, *_ = np.linalg.lstsq(_design(p, term), y, rcond=None)
    return float(coef[0]), (float(coef[1]) if term is not None else 0.0)


def _predict(c0: float, c1: float, term: Optional[Term], p: np.ndarray) -> np.ndarray:
    return c0 + (c1 * term.evaluate(p) if term is not None else 0.0 * p)


def _adjusted_r2(y: np.ndarray, rss: float, predictors: int) -> Optional[float]:
    n = len(y)
    tss = float(np.sum((y - y.mean()) ** 2))
    if tss <= 0 or n - predictors - 1 <= 0:
        return None
    r2 = 1.0 - rss / tss
    return 1.0 - (1.0 - r2) * (n - 1) / (n - predictors - 1)


def _fit_one(p: np.ndarray, y: np.ndarray, term: Optional[Term]) -> Tuple[float, float, float, float, float]:
    """(c0, c1, rss, cv_smape, cv_rss) of one hypothesis."""
    c0, c1 = _lstsq(p, y, term)
    rss = float(np.sum((y - _predict(c0, c1, term, p)) ** 2))
    held_out = np.empty(len(p))
    for k in range(len(p)):
        keep = np.arange(len(p)) != k
        k0, k1 = _lstsq(p[keep], y[keep], term)
        held_out[k] = _predict(k0, k1, term, p[k : k + 1])[0]
    if not np.all(np.isfinite(held_out)):
        return c0, c1, rss, math.inf, math.inf
    return c0, c1, rss, smape(y, held_out), float(np.sum((y - held_out) ** 2))


def _better(a: Tuple[float, float, Tuple], b: Tuple[float, float, Tuple]) -> bool:
    """Whether score a beats score b: (cv_smape, rss, complexity), with tolerance on the errors."""
    for x, y in zip(a[:2], b[:2]):
        if abs(x - y) > _TIE * max(1.0, abs(x), abs(y)):
            return x < y
    return a[2] < b[2]


def fit_scaling_model(
    points: Iterable[Tuple[float, float]],
    exponents_i: Iterable[Fraction] = EXPONENTS_I,
    exponents_j: Iterable[int] = EXPONENTS_J,
    metric: str = "time",
    unit: str = "s",
    variable: str = "p",
) -> ScalingModel:
    """The best model of (p, value) points (several values per p are fine: repetitions).

    Raises ModelError when fewer than MIN_SCALES distinct p are given or a p is not positive.
    """
    pairs = [(float(p), float(v)) for p, v in points if v is not None and math.isfinite(float(v))]
    if any(p <= 0 or not math.isfinite(p) for p, _ in pairs):
        raise ModelError("scales must be positive numbers")
    scales = sorted({p for p, _ in pairs})
    if len(scales) < MIN_SCALES:
        raise ModelError(f"a model needs at least {MIN_SCALES} distinct scales with values; got {len(scales)}")
    p = np.array([q for q, _ in pairs])
    y = np.array([v for _, v in pairs])
    terms = candidate_terms(exponents_i, exponents_j)
    best = None
    best_score = None
    for term in terms:
        c0, c1, rss, cv_smape, cv_rss = _fit_one(p, y, term)
        score = (cv_smape, rss, (-1, 0.0) if term is None else term.complexity)
        if best_score is None or _better(score, best_score):
            best, best_score = (term, c0, c1, rss, cv_smape, cv_rss), score
    term, c0, c1, rss, cv_smape, cv_rss = best
    fitted = _predict(c0, c1, term, p)
    return ScalingModel(
        c0=c0,
        c1=c1,
        term=term,
        n_points=len(p),
        rss=rss,
        smape=smape(y, fitted),
        adj_r2=_adjusted_r2(y, rss, 0 if term is None else 1),
        cv_smape=cv_smape if math.isfinite(cv_smape) else None,
        cv_rss=cv_rss if math.isfinite(cv_rss) else None,
        metric=metric,
        unit=unit,
        variable=variable,
        candidates=len(terms),
        scales=scales,
    )
