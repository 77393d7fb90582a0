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

Pure: no database, no printing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis import stats
from fabricbench.analysis.comparability import busy_host
from fabricbench.analysis.direction import lower_is_better
from fabricbench import numbers
from fabricbench.analysis.matching import definition, family, run_ranks, size_label

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
    what: str
    fix: str
    severity: str = "violation"  # or "warning"

    @property
    def hb_rule(self) -> int:
        return RULES[self.rule][0]

    def to_dict(self) -> Dict[str, Any]:
        return {"rule": self.rule, "hoefler_belli_rule": self.hb_rule, "severity": self.severity,
                "run": self.run.id if self.run is not None else None, "what": self.what, "fix": self.fix}


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

    def to_dict(self) -> Dict[str, Any]:
        return {"runs": [r.id for r in self.runs], "findings": [f.to_dict() for f in self.findings],
                "passed": self.passed()}


def _names(items: Sequence[str], limit: int = 4) -> str:
    items = list(dict.fromkeys(items))
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _n(m: Any) -> int:
    return m.n if isinstance(m.n, int) else 0


def _what(m: Any) -> str:
    d = definition(m.benchmark, m.metric)
    return m.benchmark if m.metric in (d, "latency") else f"{m.benchmark} {m.metric}"


def check_base_case(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    out = []
    if ms and all(m.value is None and m.median is None and m.mean is None for m in ms):
        out.append(Finding("base-case", run, "no absolute values: every point lacks a value",
                           "store the measured figures, not only derived ones"))
    relative = [m for m in ms if (m.unit or "").strip() in ("%", "x", "ratio", "")]
    absolute = {m.benchmark for m in ms if m not in relative}
    only_relative = [m for m in relative if m.benchmark not in absolute]
    if only_relative:
        out.append(Finding("base-case", run, f"only relative figures for {_names([_what(m) for m in only_relative])}: "
                           "a ratio or percentage without the absolute values it is based on",
                           "state the absolute value of the base case (e.g. its time in s or latency in us)"))
    starts: Dict[str, int] = {}
    for m in ms:
        size = m.params.get("size")
        d = definition(m.benchmark, m.metric)
        if lower_is_better(m.metric) and d in ("latency", "multi_lat") and isinstance(size, int):
            starts[_what(m)] = min(starts.get(_what(m), size), size)
    late = {k: v for k, v in starts.items() if v > 1}
    if late:
        where = _names([f"{k} from {size_label(v)}" for k, v in late.items()])
        out.append(Finding("base-case", run, f"no base case for {where}: the 0- or 1-byte latency is missing",
                           "measure from 0 bytes (e.g. --sizes 0:4M) or import the full table, so the startup "
                           "latency every other size is judged against is stated"))
    scales = sorted({m.params.get("nodes") for m in ms if m.benchmark == "scale" and isinstance(m.params.get("nodes"), int)})
    if scales and scales[0] > 1:
        out.append(Finding("base-case", run, f"the scaling base case is {scales[0]} nodes, not one: speedups are "
                           f"relative to {scales[0]} nodes", "say so wherever speedup or efficiency is quoted, "
                           "or measure the 1-node case", "warning"))
    return out


def check_spread(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    single = [m for m in ms if _n(m) < 2 and stats.sketch(m) is None]
    few = [m for m in ms if 2 <= _n(m) < stats.MIN_SAMPLES]
    out = []
    if single:
        if imported(run):
            fix = ("measure with fabricbench (every point keeps its sample distribution) or import output "
                   "that carries it (OSU -f prints min/max and iterations); otherwise state that the "
                   "values are deterministic. Without a spread no comparison of them can be judged")
        else:  # a run fabricbench made whose figures are single by definition (HPCC's summary, an app's time)
            from fabricbench.analysis.compare import REPEATABLE

            fix = (("repeat it (--repeat N)" if run.kind in REPEATABLE else
                    "measure it 3 or more times and compare the runs as replicates (compare A1,A2,A3 B1,B2,B3)")
                   + ": without a spread no comparison of these figures can be judged")
        out.append(Finding("spread", run, f"{len(single)} of {len(ms)} points are single numbers with no spread or "
                           f"confidence interval ({_names([_what(m) for m in single])})", fix))
    if few:
        over = {str((m.detail or {}).get("stats_over", "samples")) for m in few if isinstance(m.detail, dict)} or {"samples"}
        out.append(Finding("spread", run, f"{len(few)} points rest on fewer than {stats.MIN_SAMPLES} values "
                           f"({_names([_what(m) for m in few])}; statistics over {_names(sorted(over))}): too few for a "
                           "95% confidence interval of the median", "run more ranks or repetitions; until then these "
                           "points are shown but not judged in comparisons", "warning"))
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
        worst = max(skewed.values())
        out.append(Finding("central-tendency", run, f"the mean summarises skewed distributions in {_names(list(skewed))} "
                           f"(mean up to {numbers.fixed(worst * 100, 0)}% away from the median)",
                           "quote the median (compare and check use it) and a tail percentile such as p99",
                           "warning"))
    if averages_only:
        out.append(Finding("central-tendency", run, f"only averages recorded for {_names(averages_only)}: whether "
                           "their distributions are skewed cannot be checked",
                           "keep the median (and p99) with the average, e.g. measure with fabricbench", "warning"))
    return out


def check_rates(rd: Any) -> List[Finding]:
    run, ms = rd.run, rd.measurements
    bad = [m for m in ms if m.metric in RATE_METRICS and definition(m.benchmark, m.metric) in FIXED_WORK
           and _n(m) >= 2 and m.value is not None and m.mean is not None and m.median is not None
           and abs(m.value - m.mean) <= 1e-9 * abs(m.mean) and abs(m.mean - m.median) > SKEW * abs(m.median)]
    if not bad:
        return []
    return [Finding("rates", run, f"{_names([_what(m) for m in bad])}: the figure is the arithmetic mean of per-sample "
                    "rates, which overstates a rate when samples move a fixed amount of data",
                    "summarise rates by the harmonic mean (total bytes / total time) or quote the median")]


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
        out.append(Finding("factors", run, f"rank count not recorded for {_names(unranked)}: these figures depend on it",
                           "re-import with --ranks N (and --hosts a,b --ppn K)"))
    if not prov.get("hosts") and not prov.get("nodes") and not rd.hosts:
        out.append(Finding("factors", run, "hosts not recorded: whether traffic crossed the fabric cannot be told",
                           "re-import with --hosts a,b --ppn K, or measure with fabricbench (it records every host)"
                           if imported(run) else f"this {run.kind} run did not record its hosts: measure it again "
                           "with a version that does"))
    if mpi and not prov.get("mpi_library") and not run.tags.get("mpi") and not any(
            isinstance(h.facts, dict) and (h.facts.get("mpi") or {}).get("library") for h in rd.hosts):
        fix = ("tag it (--tag mpi=...) or measure with fabricbench" if imported(run) else
               f"this {run.kind} run was made by a fabricbench that did not record it for {run.kind} runs: tag it "
               "(--tag mpi=...) or measure again with a version that records it")
        out.append(Finding("factors", run, "MPI library not recorded", fix, "warning"))
    busy = busy_host(run)
    if busy:
        out.append(Finding("factors", run, f"the host was busy when the run started ({busy}): other work shared its "
                           "cores, and its figures include that contention",
                           "re-run on an idle host (or say so when quoting these figures)", "warning"))
    return out


def check_peak(rd: Any) -> List[Finding]:
    from fabricbench.analysis.peaks import SHARED_MEMORY, point_peak, over_peak_note, run_ceiling

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
        return [Finding("peak", run, f"bandwidth without an upper bound: {peak.why_none}",
                        "tag the run with the link it used (--tag fabric=KEY; see 'fabricbench fabrics'; lab links "
                        "lab-1g, ...; shared memory: fabric=shm)")]
    over = []  # (point, its statistic furthest above the peak): the figure of record, a percentile, the max
    for m in bandwidth:
        bound, _note = point_peak(peak.ceiling, m.benchmark, m.metric, m.params, run)
        excess = over_ceiling(m, bound)
        if excess:
            over.append((m, excess[0]))
    if not over:
        return []
    top = max((e for _m, e in over), key=lambda e: e.ratio)
    return [Finding("peak", run, f"{len(over)} bandwidth points show figures above their peak "
                    f"({_names([_what(m) for m, _e in over])}; worst: {top.statistic} {numbers.grouped(top.value, 1)} MB/s): "
                    + over_peak_note(peak.ceiling.fabric, 100.0 * top.ratio),
                    "check the fabric the run is tagged with; explain the excess wherever the figure is quoted",
                    "warning")]


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
            out.append(Finding("factors", other.run, f"differs from run {first.run.id} in "
                               f"{_names([d.label for d in undocumented], 6)}" + ("" if varied else ", and no tag says which factor was varied"),
                               "keep everything but the factor under study equal, tag that factor (e.g. --tag fabric=edr), "
                               "and state the rest next to the comparison", "warning"))
        moved = _host_moved(first, other)
        if moved:
            out.append(Finding("factors", other.run, f"the host itself was in another state than in run {first.run.id}: "
                               f"{moved.describe()} (the engine's host probe)",
                               "rerun both while the host is in one state; compare holds points that changed no "
                               "more than the host did", "warning"))
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
