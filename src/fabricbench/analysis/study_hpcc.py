"""The numbers and verdicts of an hpcc-fabrics study (seed 001): pure functions of stored data.

Input per fabric: the repetitions' HPCC values ({summary key: value}, from
``analysis.hpcc.hpcc_values``) and their per-test profile leads
(``analysis.hpcc_sections.leading_calls``). Output: per figure, each fabric's geometric
mean and range over its repetitions, how much better each fabric is than the first, and a
verdict; per HPCC test and fabric, the leading MPI call with its share of MPI time over the
repetitions, and whether the repetitions agree. The sentences are written in report/.

Verdict rule for a figure (B against the baseline A): with fewer than two repetitions on
either side it cannot be judged (one measurement shows no spread); otherwise Welch's test
on the logarithms of the repetitions' values: "better"/"worse" when p < ALPHA and the
difference is at least MIN_EFFECT, "below threshold" when significant but smaller, else "no
significant difference".
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.analysis.direction import improvement
from fabricbench.analysis.hpcc import FIGURES, SEVEN_TESTS

ALPHA = 0.05
MIN_EFFECT = 0.03
CANNOT_JUDGE = "cannot judge"


def geomean(values: Sequence[float]) -> Optional[float]:
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def figure_verdict(a: Sequence[float], b: Sequence[float], metric: str, min_effect: float = MIN_EFFECT,
                   alpha: float = ALPHA) -> Dict[str, Any]:
    """B's repetitions against A's: {'improvement' (fraction, + = B better), 'verdict', 'p', 'n',
    'reason': 'missing' | 'one run' | 'not significant' | 'below threshold' | 'significant'}."""
    from fabricbench.analysis.stats import welch
    from scipy import stats as st

    a = [v for v in a if v is not None and v > 0]
    b = [v for v in b if v is not None and v > 0]
    ga, gb = geomean(a), geomean(b)
    out: Dict[str, Any] = {"improvement": improvement(ga, gb, metric), "p": None, "n": [len(a), len(b)]}
    if not a or not b:
        return dict(out, verdict=CANNOT_JUDGE, reason="missing")
    if len(a) < 2 or len(b) < 2:
        return dict(out, verdict=CANNOT_JUDGE, reason="one run")
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]

    def sd(xs):
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))

    t, df = welch(sum(la) / len(la), sd(la), len(la), sum(lb) / len(lb), sd(lb), len(lb))
    p = 0.0 if math.isinf(t) else float(2 * st.t.sf(abs(t), df))
    out["p"] = p
    if p >= alpha:
        return dict(out, verdict="no significant difference", reason="not significant")
    if abs(out["improvement"]) < min_effect:
        return dict(out, verdict="below threshold", reason="below threshold", min_effect=min_effect)
    return dict(out, verdict="better" if out["improvement"] > 0 else "worse", reason="significant")


def figure_rows(values: Dict[str, List[Dict[str, float]]], fabrics: Sequence[str]) -> List[Dict[str, Any]]:
    """One row per HPCC figure (the seven tests' headline figures and their companions) that a
    fabric measured: {'test', 'key', 'display', 'unit', 'metric', 'headline', 'fabrics':
    {name: {'value' (geometric mean), 'min', 'max', 'n'}}, 'versus': {name: figure_verdict
    against the first fabric}}."""
    base = fabrics[0]
    rows = []
    for test in SEVEN_TESTS:
        for fig in test.figures:
            per = {}
            for name in fabrics:
                vals = [run[fig.key] for run in values.get(name, []) if run.get(fig.key) is not None]
                per[name] = {"value": geomean(vals), "min": min(vals) if vals else None,
                             "max": max(vals) if vals else None, "n": len(vals), "values": vals}
            if not any(p["n"] for p in per.values()):
                continue
            versus = {name: figure_verdict(per[base]["values"], per[name]["values"], fig.metric)
                      for name in fabrics[1:]}
            rows.append({"test": test.name, "key": fig.key, "display": fig.display, "unit": fig.unit,
                         "metric": fig.metric, "headline": fig is test.headline, "fabrics": per, "versus": versus})
    return rows


def profile_rows(leads: Dict[str, List[Dict[str, Dict[str, Any]]]], fabrics: Sequence[str],
                 tests: Sequence[str]) -> List[Dict[str, Any]]:
    """Per HPCC test and fabric, over the repetitions: the leading data-moving call (the most
    frequent one), its sizes, its share of MPI time and of wall time (median, min, max), the
    share of the test's runtime in MPI, and 'agree' (how many repetitions led with it) and
    'verdict' ('cannot judge' with one repetition, 'holds' when every repetition agrees,
    'varies' otherwise)."""
    rows = []
    for test in tests:
        row: Dict[str, Any] = {"test": test, "fabrics": {}}
        for name in fabrics:
            reps = [r[test] for r in leads.get(name, []) if test in r]
            if not reps:
                continue
            names = Counter(r["lead"] for r in reps)
            lead, agree = names.most_common(1)[0]
            calls = [r["lead_call"] for r in reps if r["lead"] == lead and r["lead_call"]]
            share = [c["percent_mpi"] for c in calls]
            wall = [c["percent_wall"] for c in calls]
            in_mpi = [r["percent_mpi"] for r in reps]
            # the sizes most repetitions saw: one size bin, or a range of bins (report/words/profile words it)
            keys = Counter(_size_key(c) for c in calls).most_common(1)[0][0] if calls else None
            seen = next((c for c in calls if _size_key(c) == keys), None)
            verdict = CANNOT_JUDGE if len(reps) < 2 else ("holds" if agree == len(reps) else "varies")
            row["fabrics"][name] = {
                "lead": lead, "size_range": seen["size_range"] if seen else None,
                "begun_earlier": seen["begun_earlier"] if seen else False,
                "mean_size": _median([c["mean_size"] for c in calls]) if seen else None,
                "percent_of_mpi": _spread(share), "percent_of_wall": _spread(wall), "percent_in_mpi": _spread(in_mpi),
                "agree": agree, "runs": len(reps), "verdict": verdict,
                "most": Counter(r["most"]["call"] for r in reps if r["most"]).most_common(1)[0][0]
                if any(r["most"] for r in reps) else None,
            }
        if row["fabrics"]:
            rows.append(row)
    return rows


def _size_key(call: Dict[str, Any]) -> Tuple[Any, ...]:
    """What a leading call's sizes are, to count the repetitions that agree: the bins' range, or
    the one bin its mean size falls in."""
    if call["begun_earlier"]:
        return ("begun earlier",)
    if call["size_range"]:
        return tuple(call["size_range"])
    return ("bin", int(call["mean_size"]).bit_length())


def _median(xs: Sequence[float]) -> Optional[float]:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _spread(xs: Sequence[float]) -> Dict[str, Optional[float]]:
    xs = [x for x in xs if x is not None]
    return {"median": _median(xs), "min": min(xs) if xs else None, "max": max(xs) if xs else None}


def link_factor(rates_bps: Dict[str, Optional[float]], fabrics: Sequence[str]) -> Dict[str, Optional[float]]:
    """Each fabric's link rate over the first one's (None where a rate is unknown): the factor
    a bandwidth-bound figure such as PTRANS can at most differ by."""
    base = rates_bps.get(fabrics[0])
    return {name: (rates_bps[name] / base if base and rates_bps.get(name) else None) for name in fabrics}


def key_figure(rows: Sequence[Dict[str, Any]], key: str) -> Optional[Dict[str, Any]]:
    return next((r for r in rows if r["key"] == key), None)


__all__ = ["figure_rows", "profile_rows", "figure_verdict", "link_factor", "key_figure", "FIGURES", "CANNOT_JUDGE"]
