"""A result set checked against the rules of scientific benchmarking that stored data can show.

The rules are Hoefler and Belli's ("Scientific Benchmarking of Parallel Computing Systems",
SC15); ``lint(runs)`` checks those a results database can answer for loaded runs
(``RunData``) and returns ``Finding``s, each saying what is violated and how to fix it:

- ``base-case`` (rule 1): absolute values are stated, not only ratios; a latency curve
  includes its base case (the 0- or 1-byte message); a scaling study has its base scale.
- ``rates`` (rule 3): a rate over samples of fixed work (bytes per window) is summarised by
  the harmonic mean (total work / total time), not the arithmetic mean of per-sample rates.
- ``spread`` (rule 5): every nondeterministic figure carries its spread or a confidence
  interval; single numbers cannot be compared soundly (rule 7).
- ``central-tendency`` (rules 6 and 8): a skewed distribution is summarised by its median
  (and a tail percentile), not its mean.
- ``factors`` (rule 9): what the figures depend on is recorded (ranks, hosts, MPI), and
  what differs between the compared runs (or loaded their hosts) is documented.
- ``peak`` (rule 11): bandwidth is shown against an upper bound (a known link rate, or the
  statement that shared memory has none), and nothing exceeds it unexplained.

Pure: no database, no printing. A finding is a kind and its figures; what it says and how to fix
it are worded in ``report.words.lint``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis import stats
from fabricbench.analysis.comparability import busy_host
from fabricbench.analysis.direction import lower_is_better
from fabricbench.analysis.matching import definition, family, run_ranks

RULES = {
    "base-case": (1, "base case and absolute values stated"),
    "rates": (3, "rates summarised by the harmonic mean"),
    "spread": (5, "spread or confidence interval reported"),
    "central-tendency": (8, "median where the distribution is skewed"),
    "factors": (9, "factors that matter recorded and documented"),
    "peak": (11, "upper bound (peak) shown"),
}
RATE_METRICS = frozenset({"bandwidth", "bibandwidth", "message_rate"})
SKEW = 0.05  # mean more than 5% from the median: call the distribution skewed
FIXED_WORK = frozenset({"bw", "bibw", "mbw_mr", "pingpong_pairs", "ring"})  # samples move a fixed number of bytes


@dataclass
class Finding:
    rule: str
    run: Optional[Any]  # the Run it concerns, None for the set
    kind: str  # what is violated: "single-numbers", "no-base-case", "over-peak", ... (report.words.lint)
    figures: Dict[str, Any] = field(default_factory=dict)  # names, counts and figures the words need
    severity: str = "violation"  # or "warning"

    @property
    def hb_rule(self) -> int:
        return RULES[self.rule][0]


@dataclass
class LintResult:
    findings: List[Finding] = field(default_factory=list)
    runs: List[Any] = field(default_factory=list)

    @property
    def violations(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == "violation"]

    def passed(self) -> List[str]:
        """Rules with no finding."""
        hit = {f.rule for f in self.findings}
        return [r for r in RULES if r not in hit]



def _n(m: Any) -> int:
    return m.n if isinstance(m.n, int) else 0


def _what(m: Any) -> str:
    d = definition(m.benchmark, m.metric)
    return m.benchmark if m.metric in (d, "latency") else f"{m.benchmark} {m.metric}"


def check_base_case(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    out = []
    if ms and all(m.value is None and m.median is None and m.mean is None for m in ms):
        out.append(Finding("base-case", run, "no-values"))
    relative = [m for m in ms if (m.unit or "").strip() in ("%", "x", "ratio", "")]
    absolute = {m.benchmark for m in ms if m not in relative}
    only_relative = [m for m in relative if m.benchmark not in absolute]
    if only_relative:
        out.append(Finding("base-case", run, "only-relative", {"names": [_what(m) for m in only_relative]}))
    starts: Dict[str, int] = {}
    for m in ms:
        size = m.params.get("size")
        d = definition(m.benchmark, m.metric)
        if lower_is_better(m.metric) and d in ("latency", "multi_lat") and isinstance(size, int):
            starts[_what(m)] = min(starts.get(_what(m), size), size)
    late = {k: v for k, v in starts.items() if v > 1}
    if late:
        out.append(Finding("base-case", run, "no-base-case", {"from": late}))
    scales = sorted({m.params.get("nodes") for m in ms if m.benchmark == "scale" and isinstance(m.params.get("nodes"), int)})
    if scales and scales[0] > 1:
        out.append(Finding("base-case", run, "scaling-base", {"nodes": scales[0]}, "warning"))
    return out


def check_spread(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    single = [m for m in ms if _n(m) < 2 and stats.sketch(m) is None]
    few = [m for m in ms if 2 <= _n(m) < stats.MIN_SAMPLES]
    out = []
    if single:
        from fabricbench.analysis.compare import REPEATABLE

        out.append(Finding("spread", run, "single-numbers", {
            "count": len(single), "total": len(ms), "names": [_what(m) for m in single],
            "imported": imported(run), "repeatable": run.kind in REPEATABLE}))
    if few:
        over = {str((m.detail or {}).get("stats_over", "samples")) for m in few if isinstance(m.detail, dict)} or {"samples"}
        out.append(Finding("spread", run, "few-samples", {"count": len(few), "min_samples": stats.MIN_SAMPLES,
                                                          "names": [_what(m) for m in few], "over": sorted(over)},
                           "warning"))
    return out


def check_central_tendency(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    skewed: Dict[str, float] = {}
    averages_only = []
    for m in ms:
        if not lower_is_better(m.metric):
            continue
        if m.median is None and stats.sketch(m) is None and (m.value is not None or m.mean is not None):
            averages_only.append(_what(m))
            continue
        if m.mean is None or m.median in (None, 0) or _n(m) < stats.MIN_SAMPLES:
            continue
        shown = m.value if m.value is not None else m.mean
        skew = abs(m.mean - m.median) / abs(m.median)
        if skew > SKEW and abs(shown - m.mean) <= 1e-9 * max(abs(shown), 1e-30):
            skewed[_what(m)] = max(skewed.get(_what(m), 0.0), skew)
    out = []
    if skewed:
        out.append(Finding("central-tendency", run, "skewed-mean",
                           {"names": list(skewed), "worst": max(skewed.values())}, "warning"))
    if averages_only:
        out.append(Finding("central-tendency", run, "averages-only", {"names": averages_only}, "warning"))
    return out


def check_rates(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    bad = [m for m in ms if m.metric in RATE_METRICS and definition(m.benchmark, m.metric) in FIXED_WORK
           and _n(m) >= 2 and m.value is not None and m.mean is not None and m.median is not None
           and abs(m.value - m.mean) <= 1e-9 * abs(m.mean) and abs(m.mean - m.median) > SKEW * abs(m.median)]
    if not bad:
        return []
    return [Finding("rates", run, "mean-of-rates", {"names": [_what(m) for m in bad]})]


def _needs_ranks(rd: Any) -> List[str]:
    return [_what(m) for m in rd.measurements if family(definition(m.benchmark, m.metric)) in ("collective", "multi-pair", "hpcc")
            and not isinstance(m.params.get("ranks"), int) and not isinstance(m.params.get("pairs"), int)]


NON_MPI_KINDS = frozenset({"fabric", "transfer"})  # fabric scans and file transfers start no MPI job
NON_MPI_FORMATS = frozenset({"iperf3", "perftest", "netpipe"})  # imported tools that do not use MPI


def imported(run: Any) -> bool:
    """True for a run made from another tool's output (``fabricbench import``), not measured by fabricbench."""
    prov = run.provenance if isinstance(run.provenance, dict) else {}
    return run.kind == "import" or isinstance(prov.get("import"), dict)


def uses_mpi(run: Any) -> bool:
    """Whether the run's figures come from an MPI job, so that rules needing MPI facts apply to it."""
    if run.kind in NON_MPI_KINDS:
        return False
    prov = run.provenance if isinstance(run.provenance, dict) else {}
    source = prov.get("import") if isinstance(prov.get("import"), dict) else {}
    return not ({str(source.get("format", "")).lower(), str(source.get("tool", "")).lower()} & NON_MPI_FORMATS)


def check_factors(rd: Any) -> List[Finding]:
    run = rd.run
    prov = run.provenance if isinstance(run.provenance, dict) else {}
    out = []
    mpi = uses_mpi(run)
    unranked = _needs_ranks(rd) if mpi else []
    if unranked and run_ranks(run) is None:
        out.append(Finding("factors", run, "ranks-not-recorded", {"names": unranked}))
    if not prov.get("hosts") and not prov.get("nodes") and not rd.hosts:
        out.append(Finding("factors", run, "hosts-not-recorded", {"imported": imported(run), "kind": run.kind}))
    if mpi and not prov.get("mpi_library") and not run.tags.get("mpi") and not any(
            isinstance(h.facts, dict) and (h.facts.get("mpi") or {}).get("library") for h in rd.hosts):
        out.append(Finding("factors", run, "mpi-not-recorded", {"imported": imported(run), "kind": run.kind}, "warning"))
    busy = busy_host(run)
    if busy:
        out.append(Finding("factors", run, "busy-host", {"busy": busy}, "warning"))
    return out


def check_peak(rd: Any) -> List[Finding]:
    from fabricbench.analysis.peaks import SHARED_MEMORY, is_lab, point_peak, run_ceiling

    from fabricbench.analysis.record import held_to_link, over_ceiling

    run = rd.run
    if not uses_mpi(run) and run.kind != "transfer":  # a fabric scan's counters are not figures to bound
        return []
    # Only network figures meet the link's ceiling: STREAM and PTRANS (memory, all pairs at once), DGEMM
    # and HPL are no figures of one link.
    bandwidth = [m for m in rd.measurements if m.metric in ("bandwidth", "bibandwidth") and (m.unit or "") == "MB/s"
                 and held_to_link(m)]
    if not bandwidth:
        return []
    peak = run_ceiling(run, rd.hosts)
    if peak.ceiling is None:
        if peak.why_none == SHARED_MEMORY:
            return []
        return [Finding("peak", run, "no-peak", {"why": peak.why_none})]
    over = []  # (point, its statistic furthest above the peak): the figure of record, a percentile, the max
    for m in bandwidth:
        bound, _note = point_peak(peak.ceiling, m.benchmark, m.metric, m.params, run)
        excess = over_ceiling(m, bound)
        if excess:
            over.append((m, excess[0]))
    if not over:
        return []
    top = max((e for _m, e in over), key=lambda e: e.ratio)
    return [Finding("peak", run, "over-peak", {
        "count": len(over), "names": [_what(m) for m, _e in over], "statistic": top.statistic, "value": top.value,
        "ratio": top.ratio, "shaped": is_lab(peak.ceiling.fabric)}, "warning")]


def check_differences(runs: Sequence[Any]) -> List[Finding]:
    """Facts that differ between the first run and each other one, unless a tag names them as the factor."""
    from fabricbench.analysis.comparability import check_comparability

    if len(runs) < 2:
        return []
    first = runs[0]
    out = []
    for other in runs[1:]:
        comp = check_comparability(first.run, first.hosts, other.run, other.hosts)
        varied = {k for k in set(first.run.tags) | set(other.run.tags) if first.run.tags.get(k) != other.run.tags.get(k)}
        undocumented = [d for d in comp.differences if d.key.split(".")[-1] not in varied]
        if undocumented:
            out.append(Finding("factors", other.run, "differs", {
                "first_run": first.run.id, "labels": [d.label for d in undocumented], "tagged": bool(varied)}, "warning"))
        moved = _host_moved(first, other)
        if moved:
            out.append(Finding("factors", other.run, "host-moved", {"first_run": first.run.id, "shift": moved}, "warning"))
    return out


def _host_moved(a: Any, b: Any) -> Any:
    """How the host probe moved between two runs on the same hosts, over all their launches, or None."""
    from fabricbench.analysis.host_state import host_shift, same_hosts

    probes_a, probes_b = getattr(a, "probes", None) or [], getattr(b, "probes", None) or []
    if not (probes_a and probes_b and same_hosts(a, b)):
        return None
    return host_shift(probes_a, probes_b)


# A fabric scan stores port counters and link states, which `fabric check` judges: no rule of
# benchmarking figures (spread, central tendency, peak, MPI facts) is about them.
FIGURELESS_KINDS = frozenset({"fabric"})
CHECKS = (check_base_case, check_rates, check_spread, check_central_tendency, check_factors, check_peak)


def lint(runs: Sequence[Any]) -> LintResult:
    """Every finding for the runs (RunData), run by run, then across them."""
    result = LintResult(runs=[r.run for r in runs])
    for rd in runs:
        if rd.run.kind in FIGURELESS_KINDS:
            continue
        for check in CHECKS:
            result.findings.extend(check(rd))
    result.findings.extend(check_differences(runs))
    return result
