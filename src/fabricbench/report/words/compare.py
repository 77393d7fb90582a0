"""Findings -> words for a comparison of two runs (``analysis.compare``): a point's verdict, a
series' summary, the overall line, where the run-to-run noise came from, what the host did, and
the JSON of a comparison with those sentences in it. The terminal (``fabricbench compare``,
``check``, ``history``) and the report (comparison, study, dashboards) use these.
Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis.compare import (HOST_BUSY, MIN_HISTORY, ONE_EACH, REPEATABLE, WITHIN_RESOLUTION, CheckVerdict, Comparison,
                                          Options, PointComparison, SeriesComparison)
from fabricbench.analysis.host_state import HostLoad, HostShift, stall_us
from fabricbench.numbers import exact_binary_size as size_label
from fabricbench.numbers import factor, fraction_pct, number, short
from fabricbench.report.words.direction import change_words, describe, describe_ratio
from fabricbench.report.words.host import load_dict, load_text, shift_dict, shift_text
from fabricbench.report.words.matching import mismatch_dict, mismatch_paragraph

HOST_BUSY_TEXT = "host too busy to judge"


def options_text(o: Options) -> str:
    """'Holm-corrected at 0.05, threshold 3%'."""
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(o.correction, o.correction)
    return f"{name}-corrected at {short(o.alpha)}, threshold {short(o.min_effect * 100)}%"


# ---- one point ---------------------------------------------------------------------------------

def reason(p: PointComparison) -> str:
    """Why a point got its verdict: the analysis' own words, what held it (the host's move, the busy
    host's contention) or its p-value after correction."""
    if p.reason == WITHIN_RESOLUTION and p.resolution is not None:
        return f"the change is within the figure's resolution ({short(p.resolution)} s)"
    if p.reason:
        return p.reason
    if isinstance(p.held_by, HostShift):
        return shift_text(p.held_by)
    if isinstance(p.held_by, HostLoad):
        times = p.held_factor
        return (f"{load_text(p.held_by)}: contention alone can move this figure "
                + (f"{number(times)}x" if times is not None and math.isfinite(times) else "without bound"))
    if p.p_adjusted is not None:
        return f"p={short(p.p_adjusted, 2)} after correction"
    return ""


def point_text(p: PointComparison, b_name: str = "B") -> str:
    """The verdict as a table shows it: 'B is 17% worse', 'no significant difference', ..."""
    if p.flagged:
        return describe_ratio(p.ratio, p.metric, b_name)
    if p.verdict == "below threshold":
        return f"{describe(p.improvement, b_name)}: below the threshold"
    if p.verdict == "isolated":
        return f"{describe_ratio(p.ratio, p.metric, b_name)} at this size only: {reason(p)}"
    if p.verdict == "host changed":
        return f"{describe_ratio(p.ratio, p.metric, b_name)}, no more than the host itself changed"
    if p.verdict == HOST_BUSY:
        return f"{HOST_BUSY_TEXT} ({describe_ratio(p.ratio, p.metric, b_name)}; {reason(p)})"
    if p.verdict == "no significant difference":
        return "no significant difference"
    return f"not judged: {reason(p)}"


def point_short(p: PointComparison) -> str:
    """The verdict in a few words for a table column: '17% worse', '2.1x better', 'not significant'."""
    if p.flagged:
        return change_words(p.ratio, p.metric)
    if p.verdict in ("isolated", "host changed", HOST_BUSY):
        word = "host too busy" if p.verdict == HOST_BUSY else p.verdict
        return f"{word} ({change_words(p.ratio, p.metric)})"
    return {"below threshold": "below threshold", "no significant difference": "not significant"}.get(
        p.verdict, "not judged")


def point_dict(p: PointComparison) -> Dict[str, Any]:
    """PointComparison.to_dict with its reason and verdict in words ("text")."""
    d = p.to_dict()
    d["reason"] = reason(p)
    d["text"] = point_text(p)
    return d


def describe_point(s: SeriesComparison, p: PointComparison) -> str:
    """'bw 4M: B is 52% worse (B/A 0.48)' - how check names a point."""
    where = f"{s.title} {size_label(p.size)}" if p.size is not None else s.title
    ratio = f" (B/A {factor(p.ratio)})" if p.ratio is not None else ""
    return f"{where}: {point_text(p)}{ratio}"


# ---- a series ----------------------------------------------------------------------------------

def noise_text(s: SeriesComparison) -> str:
    """'run-to-run noise about 2.9% (from 6 earlier runs of the same configuration)'."""
    where = {"history": f"from {s.history_runs} earlier runs of the same configuration",
             "replicates": "between the replicate runs", "launches": "between launches only",
             "curve": "along the curve"}[s.noise_from]
    return f"run-to-run noise about {fraction_pct(s.run_noise)} ({where})"


def _absolute(s: SeriesComparison, a_name: str, b_name: str) -> str:
    d = [p.diff for p in s.points if p.diff is not None]
    if not d:
        return ""
    md = sum(d) / len(d)
    if s.lower_is_better:
        verb = "adds" if md > 0 else "saves"
    else:
        verb = "gains" if md > 0 else "loses"
    text = f"{b_name} {verb} {number(abs(md))} {s.unit} on average vs {a_name}"
    if len(d) > 1:
        text += f" ({number(min(d))} to {number(max(d))} {s.unit} over {len(d)} sizes)"
    return text


def series_summary(s: SeriesComparison, a_name: str = "A", b_name: str = "B") -> str:
    """One sentence: what differs, by how much, over how many points, or that nothing does."""
    n = len(s.points)
    if not n:
        return "no points to compare."
    what = "sizes" if any(p.size is not None for p in s.points) else "points"
    judged = s.judged
    parts = []
    for verdict in ("worse", "better"):
        pts = s.flagged(verdict)
        if pts:
            gm = s.geometric_mean(verdict)
            head = describe_ratio(gm[0], s.metric, b_name)
            parts.append(f"{head} at {len(pts)} of {n} {what} (geometric mean of {b_name}/{a_name} "
                         f"{factor(gm[0])}, 95% CI {factor(gm[1])}-{factor(gm[2])})")
    isolated = sum(1 for p in judged if p.verdict == "isolated")
    host = sum(1 for p in judged if p.verdict == "host changed")
    busy = sum(1 for p in judged if p.verdict == HOST_BUSY)
    rest = len(judged) - sum(1 for p in judged if p.flagged) - isolated - host - busy
    if parts:
        text = "; ".join(parts)
        if rest:
            text += f"; no significant difference at {rest}"
    elif rest:
        text = f"no significant difference at {'any of the' if rest > 1 else 'the'} {rest} {what} judged"
    elif not judged:
        text = _absolute(s, a_name, b_name) or "nothing to judge"
    else:
        text = "no confirmed difference"
    if host:
        text += (f"; {host} {what} changed no more than the host itself "
                 f"({number(s.host_shift.factor)}x, see below)")
    if busy:
        text += f"; {HOST_BUSY_TEXT} at {busy} {what} (they changed no more than the busy host can move them)"
    if isolated:
        text += f"; isolated differences at {isolated} (one size only, re-measure)"
    unjudged = n - len(judged)
    if unjudged:
        reasons = sorted({reason(p) for p in s.points if p.significant is None})
        text += f"; not judged at {unjudged} ({', '.join(reasons)})"
    if s.judged and (s.run_noise >= 0.01 or s.noise_from != "curve"):
        text += f"; {noise_text(s)}"
    return text + "."


def series_dict(s: SeriesComparison) -> Dict[str, Any]:
    """SeriesComparison.to_dict with its summary, the host's move and its points in words."""
    d = s.to_dict()
    d["host_shift"] = shift_dict(s.host_shift) if s.host_shift else None
    d.pop("points")
    d["summary"] = series_summary(s)
    d["points"] = [point_dict(p) for p in s.points]
    return d


# ---- two runs ----------------------------------------------------------------------------------

def cannot_judge(result: Comparison) -> str:
    """The line that goes with the single figures (empty when there are none)."""
    if not result.single_valued:
        return ""
    kinds = {getattr(r, "kind", None) for r in (result.a_runs or [result.a]) + (result.b_runs or [result.b])}
    how = ("measure with --repeat N" if kinds <= REPEATABLE else
           "measure each side 3 or more times and compare the runs as replicates: compare A1,A2,A3 B1,B2,B3")
    return f"{ONE_EACH}: significance cannot be judged ({how})"


def summary(result: Comparison, a_name: str = "A", b_name: str = "B") -> str:
    """'Overall: B is worse at 3 and better at 0 of 12 points; ... (Holm-corrected at 0.05, ...).'"""
    total = len(result.points)
    if not total:
        return "No common points to compare."
    worse, better = len(result.flagged("worse")), len(result.flagged("better"))
    judged = sum(1 for _s, p in result.points if p.significant is not None)
    unjudged = total - judged
    tail = f" ({options_text(result.options)}; {result.tested} points tested)" if result.tested else ""
    isolated = len(result.flagged("isolated"))
    single = len(result.single_valued)
    busy = len(result.flagged(HOST_BUSY))
    quiet = judged - isolated - len(result.flagged("host changed")) - busy
    if not worse and not better and not quiet:
        # nothing was judged the same: never "no significant difference"
        if single == total:
            return f"Overall: {cannot_judge(result)}."
        text = f"Overall: no difference between {a_name} and {b_name} could be called"
        if busy and busy == judged:
            text = f"Overall: {HOST_BUSY_TEXT} at {busy} point{'s' if busy != 1 else ''} ({load_text(result.busy)})"
    elif not worse and not better:
        text = (f"Overall: no significant difference between {a_name} and {b_name} "
                f"at {quiet} point{'s' if quiet != 1 else ''}")
    else:
        text = f"Overall: {b_name} is worse at {worse} and better at {better} of {total} points"
        rest = judged - worse - better - isolated - len(result.flagged("host changed")) - busy
        if rest:
            text += f"; no significant difference at {rest}"
    if isolated:
        text += f"; {isolated} isolated (one size only, re-measure)"
    host = len(result.flagged("host changed"))
    if host:
        text += f"; {host} changed no more than the host itself did"
    if busy and busy != judged:
        text += f"; {busy} differ{'s' if busy == 1 else ''} by no more than the busy host can move a figure ({HOST_BUSY_TEXT})"
    if unjudged:
        text += f"; {unjudged} not judged" + (f" ({single} {ONE_EACH})" if single else "")
    return text + tail + "."


def id_list(ids: Sequence[int]) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    spans: List[List[int]] = []
    for i in sorted(ids):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in spans)


def noise_note(result: Comparison, history_ignored: Optional[bool] = None) -> str:
    """Where the run-to-run noise came from, in a sentence or two (empty when nothing was judged);
    `history_ignored`: stored runs were not looked at (``--no-history``)."""
    if not any(s.judged for s in result.series):
        return ""
    source = result.noise_from
    if source == "history":
        ids = result.history_runs
        return (f"Run-to-run noise: from {len(ids)} earlier runs of the same configuration "
                f"(runs {id_list(ids)}): how much identical runs made at different times differ.")
    if source == "replicates":
        return "Run-to-run noise: from the spread between the replicate runs compared."
    offered = len({r.id for r in result.history_a + result.history_b})
    stored = (f" Only {offered} other run of the same configuration is stored; {MIN_HISTORY} would be used."
              if 0 < offered < MIN_HISTORY else "")
    if result.history_ignored if history_ignored is None else history_ignored:
        stored = " Stored runs of the same configuration were not looked at (--no-history)."
    if source == "launches":
        return ("Run-to-run noise: from the spread between each run's launches, taken to vary from run to run "
                "at least as much again (no earlier runs of this configuration to measure it); identical runs "
                "made at different times can differ by more still (the host's state can hold for a whole run)."
                + stored + " To allow for it, keep 2 or more other runs of the same configuration in this "
                "database (compare finds them), compare against several runs (baseline set NAME RUN RUN RUN), "
                "or rerun both to confirm a difference.")
    return ("Run-to-run noise: estimated from the jitter between neighbouring sizes (one launch per run)."
            + stored)


def host_note(result: Comparison) -> str:
    """What the host probe and load say, when the host itself changed between the runs or was too
    busy and that kept points from being called (else empty: the series' ``host_shift`` still says how it moved)."""
    busy = result.flagged(HOST_BUSY)
    note = ""
    if busy:
        note = (f"The host was too busy to judge: {load_text(result.busy)}, so two communicating ranks could run "
                f"{number(result.busy.factor)}x slower from the contention alone, and one sample can wait "
                f"{number(stall_us(result.busy) / 1000.0)} ms for a CPU. {len(busy)} point"
                f"{'s' if len(busy) != 1 else ''} that changed no more than that are not called "
                "(\"host too busy to judge\"). To compare the fabric, rerun both on a quieter host.")
    held = result.flagged("host changed")
    if not held:
        return note
    worst = max({id(sc): sc for sc, _p in held}.values(), key=lambda sc: sc.host_shift.log_shift)
    where = "" if all(sc.host_shift for sc in result.series) else f" (during {worst.benchmark_a})"
    return (f"The host itself changed state between the runs: {shift_text(worst.host_shift)}{where}. "
            f"{len(held)} point{'s' if len(held) != 1 else ''} that changed no more than the host did "
            "are not attributed to the fabric (\"host changed\"). To compare the fabric, rerun both while "
            "the host is in one state." + (" " + note if note else ""))


def comparison_dict(result: Comparison, history_ignored: Optional[bool] = None) -> Dict[str, Any]:
    """The comparison as JSON (``compare --json``, ``check --json``), its findings with their sentences."""
    def run_info(r):
        return {"id": r.id, "uuid": r.uuid, "name": r.name, "label": r.label, "tags": r.tags}

    from fabricbench.report.words.comparability import comparability_dict

    return {
        "a": run_info(result.a),
        "b": run_info(result.b),
        "a_runs": [r.id for r in result.a_runs or [result.a]],
        "b_runs": [r.id for r in result.b_runs or [result.b]],
        "options": asdict(result.options),
        "comparability": comparability_dict(result.comparability),
        "summary": summary(result),
        "tested": result.tested,
        "noise_from": result.noise_from,
        "history_runs": len(result.history_runs),
        "history": {"a": [r.id for r in result.history_a], "b": [r.id for r in result.history_b],
                    "used": result.history_runs},
        "noise_note": noise_note(result, history_ignored),
        "host_note": host_note(result),
        "host_busy": load_dict(result.busy) if result.busy else None,
        "series": [series_dict(s) for s in result.series],
        "single_valued": [single_row(s, p) for s, p in result.single_valued],
        "cannot_judge": cannot_judge(result),
        "mismatches": [mismatch_dict(m) for m in result.mismatches],
        "not_compared": mismatch_paragraph(result.mismatches),
    }


def check_dict(verdict: CheckVerdict) -> Dict[str, Any]:
    """A regression check's verdict as JSON, the points held named as ``describe_point`` names them."""
    return {"status": verdict.status, "exit_status": verdict.exit_status, "worse": len(verdict.worse),
            "held": [describe_point(s, p) for s, p in verdict.held], "judged": verdict.judged}


def figure_name(s: SeriesComparison, p: PointComparison) -> str:
    """What a reader calls a point's figure: an HPCC summary key by its name ('ring bandwidth,
    random order'), else the series title and the size."""
    test = s.variant.get("test")
    if s.definition == "hpcc" and isinstance(test, str):
        from fabricbench.analysis.hpcc import figure_name as hpcc_name

        return hpcc_name(test)
    return f"{s.title} {size_label(p.size)}" if p.size is not None else s.title


def single_row(s: SeriesComparison, p: PointComparison) -> Dict[str, Any]:
    """A figure measured once on each side, as the side-by-side table shows it: name, unit, A, B,
    change (B/A - 1) and whether B is better, worse or within the threshold's reach."""
    change = None if p.ratio is None else p.ratio - 1.0
    way = "" if p.improvement is None else ("better" if p.improvement > 0 else "worse" if p.improvement < 0 else "same")
    if p.reason == WITHIN_RESOLUTION:
        way = "within resolution"  # a change no larger than the clock's step is not seen
    return {"name": figure_name(s, p), "unit": s.unit, "a": p.a, "b": p.b, "change": change,
            "improvement": p.improvement, "direction": way, "metric": s.metric}
