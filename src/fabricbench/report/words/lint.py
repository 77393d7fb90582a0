"""Findings -> words for ``fabricbench lint`` and the report's rigour section: what each finding of
``analysis.lint`` says is violated and how to fix it, from its kind and figures.
Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Tuple

from fabricbench.analysis.lint import Finding, LintResult
from fabricbench.numbers import exact_binary_size as size_label
from fabricbench.numbers import fixed, grouped
from fabricbench.report.words.comparability import busy_text
from fabricbench.report.words.host import shift_text
from fabricbench.report.words.peaks import over_peak_note


def names(items: Sequence[str], limit: int = 4) -> str:
    """'a, b, c, d and 3 more'."""
    items = list(dict.fromkeys(items))
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _single_fix(x: Dict[str, Any]) -> str:
    if x["imported"]:
        return ("measure with fabricbench (every point keeps its sample distribution) or import output "
                "that carries it (OSU -f prints min/max and iterations); otherwise state that the "
                "values are deterministic. Without a spread no comparison of them can be judged")
    # a run fabricbench made whose figures are single by definition (HPCC's summary, an app's time)
    return (("repeat it (--repeat N)" if x["repeatable"] else
             "measure it 3 or more times and compare the runs as replicates (compare A1,A2,A3 B1,B2,B3)")
            + ": without a spread no comparison of these figures can be judged")


# kind: (what is violated, how to fix it), each from the finding's figures
WORDS: Dict[str, Tuple[Callable[[Dict[str, Any]], str], Callable[[Dict[str, Any]], str]]] = {
    "no-values": (
        lambda x: "no absolute values: every point lacks a value",
        lambda x: "store the measured figures, not only derived ones"),
    "only-relative": (
        lambda x: (f"only relative figures for {names(x['names'])}: "
                   "a ratio or percentage without the absolute values it is based on"),
        lambda x: "state the absolute value of the base case (e.g. its time in s or latency in us)"),
    "no-base-case": (
        lambda x: (f"no base case for {names([f'{k} from {size_label(v)}' for k, v in x['from'].items()])}: "
                   "the 0- or 1-byte latency is missing"),
        lambda x: ("measure from 0 bytes (e.g. --sizes 0:4M) or import the full table, so the startup "
                   "latency every other size is judged against is stated")),
    "scaling-base": (
        lambda x: f"the scaling base case is {x['nodes']} nodes, not one: speedups are relative to {x['nodes']} nodes",
        lambda x: "say so wherever speedup or efficiency is quoted, or measure the 1-node case"),
    "single-numbers": (
        lambda x: (f"{x['count']} of {x['total']} points are single numbers with no spread or "
                   f"confidence interval ({names(x['names'])})"),
        _single_fix),
    "few-samples": (
        lambda x: (f"{x['count']} points rest on fewer than {x['min_samples']} values "
                   f"({names(x['names'])}; statistics over {names(x['over'])}): too few for a "
                   "95% confidence interval of the median"),
        lambda x: "run more ranks or repetitions; until then these points are shown but not judged in comparisons"),
    "skewed-mean": (
        lambda x: (f"the mean summarises skewed distributions in {names(x['names'])} "
                   f"(mean up to {fixed(x['worst'] * 100, 0)}% away from the median)"),
        lambda x: "quote the median (compare and check use it) and a tail percentile such as p99"),
    "averages-only": (
        lambda x: f"only averages recorded for {names(x['names'])}: whether their distributions are skewed cannot be checked",
        lambda x: "keep the median (and p99) with the average, e.g. measure with fabricbench"),
    "mean-of-rates": (
        lambda x: (f"{names(x['names'])}: the figure is the arithmetic mean of per-sample "
                   "rates, which overstates a rate when samples move a fixed amount of data"),
        lambda x: "summarise rates by the harmonic mean (total bytes / total time) or quote the median"),
    "ranks-not-recorded": (
        lambda x: f"rank count not recorded for {names(x['names'])}: these figures depend on it",
        lambda x: "re-import with --ranks N (and --hosts a,b --ppn K)"),
    "hosts-not-recorded": (
        lambda x: "hosts not recorded: whether traffic crossed the fabric cannot be told",
        lambda x: ("re-import with --hosts a,b --ppn K, or measure with fabricbench (it records every host)"
                   if x["imported"] else f"this {x['kind']} run did not record its hosts: measure it again "
                   "with a version that does")),
    "mpi-not-recorded": (
        lambda x: "MPI library not recorded",
        lambda x: ("tag it (--tag mpi=...) or measure with fabricbench" if x["imported"] else
                   f"this {x['kind']} run was made by a fabricbench that did not record it for {x['kind']} runs: "
                   "tag it (--tag mpi=...) or measure again with a version that records it")),
    "busy-host": (
        lambda x: (f"the host was busy when the run started ({busy_text(x['busy'])}): other work shared its "
                   "cores, and its figures include that contention"),
        lambda x: "re-run on an idle host (or say so when quoting these figures)"),
    "no-peak": (
        lambda x: f"bandwidth without an upper bound: {x['why']}",
        lambda x: ("tag the run with the link it used (--tag fabric=KEY; see 'fabricbench fabrics'; lab links "
                   "lab-1g, ...; shared memory: fabric=shm)")),
    "over-peak": (
        lambda x: (f"{x['count']} bandwidth points show figures above their peak "
                   f"({names(x['names'])}; worst: {x['statistic']} {grouped(x['value'], 1)} MB/s): " + over_peak_note(x["shaped"], 100.0 * x["ratio"])),
        lambda x: "check the fabric the run is tagged with; explain the excess wherever the figure is quoted"),
    "differs": (
        lambda x: (f"differs from run {x['first_run']} in {names(x['labels'], 6)}"
                   + ("" if x["tagged"] else ", and no tag says which factor was varied")),
        lambda x: ("keep everything but the factor under study equal, tag that factor (e.g. --tag fabric=edr), "
                   "and state the rest next to the comparison")),
    "host-moved": (
        lambda x: (f"the host itself was in another state than in run {x['first_run']}: "
                   f"{shift_text(x['shift'])} (the engine's host probe)"),
        lambda x: "rerun both while the host is in one state; compare holds points that changed no more than the host did"),
}


def what(f: Finding) -> str:
    """What the finding says is violated."""
    return WORDS[f.kind][0](f.figures)


def fix(f: Finding) -> str:
    """How to fix it."""
    return WORDS[f.kind][1](f.figures)


def finding_dict(f: Finding) -> Dict[str, Any]:
    return {"rule": f.rule, "hoefler_belli_rule": f.hb_rule, "severity": f.severity,
            "run": f.run.id if f.run is not None else None, "what": what(f), "fix": fix(f)}


def result_dict(result: LintResult) -> Dict[str, Any]:
    """``fabricbench lint --json``."""
    return {"runs": [r.id for r in result.runs], "findings": [finding_dict(f) for f in result.findings],
            "passed": result.passed()}
