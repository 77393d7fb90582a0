"""The report of an hpcc-fabrics study in seed 001's form (HPCC on two fabrics, a profile per test).

Given the study as ``workflows.study_hpcc.load_study`` read it (nothing here queries or
launches): the conditions and the command that reproduces the study; the HPCC results per
fabric with the relative difference and its verdict; the paper's sentences ("EDR
outperforms FDR by 68% in PTRANS") computed from the data, each with its verdict (one
measurement per fabric cannot be judged); and per HPCC test the MPI profile of each
fabric ("85% of MPI time (4% of wall time) in 458 KiB MPI_Sendrecv").
"""
from __future__ import annotations

import datetime as _dt
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence

from fabricbench.analysis.direction import lower_is_better
from fabricbench.analysis.hpcc_sections import TESTS
from fabricbench.analysis.study_hpcc import CANNOT_JUDGE, figure_rows, link_factor, profile_rows
from fabricbench import numbers as fmt
from fabricbench.report.model import BulletList, Cell, Column, Notice, Paragraph, Report, Section, Table

SENTENCE_KEYS = ("PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIRandomAccess_LCG_GUPs", "MPIFFT_Gflops", "HPL_Tflops",
                 "StarDGEMM_Gflops", "StarSTREAM_Triad", "RandomlyOrderedRingLatency_usec",
                 "NaturallyOrderedRingLatency_usec", "RandomlyOrderedRingBandwidth_GBytes",
                 "NaturallyOrderedRingBandwidth_GBytes", "AvgPingPongBandwidth_GBytes")
BANDWIDTH_BOUND = ("PTRANS_GBs", "RandomlyOrderedRingBandwidth_GBytes", "NaturallyOrderedRingBandwidth_GBytes")
TEST_WHAT = {"PTRANS": "PTRANS", "RandomAccess": "MPI RandomAccess", "FFT": "MPI FFT", "HPL": "HPL",
             "b_eff": "b_eff (latency and bandwidth)", "DGEMM": "DGEMM", "STREAM": "STREAM"}


def _share(x: Optional[float]) -> str:
    from fabricbench.numbers import percent_share as _pct

    return "-" if x is None else _pct(x)


def _sizes(f: Dict[str, Any]) -> str:
    """The leading call's sizes in a row of analysis.study_hpcc: '458 KiB', '8 B to 2 MiB' ('' unknown)."""
    from fabricbench.report.words.profile import phase_sizes

    return phase_sizes(f) if f.get("mean_size") is not None else ""


def _sized(f: Dict[str, Any]) -> str:
    """'458 KiB MPI_Sendrecv' for one size, 'MPI_Sendrecv of 8 B to 2 MiB' for a range."""
    sizes = _sizes(f)
    if not sizes:
        return f["lead"]
    return f"{f['lead']} of {sizes}" if f.get("size_range") else f"{sizes} {f['lead']}"


def verdict_words(v: Dict[str, Any]) -> str:
    """Why a figure's difference is called what it is, in words."""
    reason = v.get("reason")
    n = v.get("n") or [0, 0]
    if reason == "one run":
        return "cannot judge: one run per fabric shows no spread (measure with --repeat 3 or more)"
    if reason == "missing":
        return "cannot judge: a fabric has no value for this figure"
    p = fmt.number(v["p"]) if v.get("p") is not None else "-"
    if reason == "not significant":
        return f"no significant difference (p = {p}, {n[0]} and {n[1]} runs)"
    if reason == "below threshold":
        return f"significant (p = {p}) but under {fmt.percent(100 * v.get('min_effect', 0.03), decimals=0)}"
    return f"{v['verdict']} (p = {p}, {n[0]} and {n[1]} runs)"


def figure_sentence(row: Dict[str, Any], base: str, name: str) -> Optional[str]:
    """'edr outperforms fdr by 68% in PTRANS' / 'edr reduces the random ring latency by 18%'."""
    v = row["versus"][name]
    imp = v.get("improvement")
    if imp is None:
        return None
    pct = fmt.improvement_pct(abs(imp) * 100).lstrip("+")
    if lower_is_better(row["metric"]):
        what = row['display'][0].lower() + row['display'][1:]
        if imp < 0 and 1 - imp >= fmt.FACTOR_FROM:  # improvement = 1 - B/A: B is (1 - imp) times A
            return f"{name} has {fmt.ratio(1 - imp)} the {what} of {base}"
        verb = "reduces" if imp > 0 else "increases"
        return f"{name} {verb} the {what} by {pct} against {base}"
    if imp >= 0:
        by = fmt.ratio(1 + imp) if 1 + imp >= fmt.FACTOR_FROM else pct  # B is (1 + imp) times A
        return f"{name} outperforms {base} by {by} in {row['display']}"
    return f"{name} is {pct} slower than {base} in {row['display']}"


def _value_cell(per: Dict[str, Any]) -> str:
    if per["value"] is None:
        return "-"
    if per["n"] > 1:
        return f"{fmt.number(per['value'])} ({fmt.number(per['min'])} to {fmt.number(per['max'])})"
    return fmt.number(per["value"])


def _verdict_cell(v: Dict[str, Any]) -> Cell:
    style = {"better": "better", "worse": "worse"}.get(v["verdict"], "muted" if v["verdict"] == CANNOT_JUDGE else "")
    return Cell(v["verdict"], style, title=verdict_words(v))


def results_section(data: Dict[str, Any], rows: List[Dict[str, Any]], plot_format: str) -> Section:
    fabrics = data["fabrics"]
    base = fabrics[0]
    section = Section("hpcc-results", "HPCC results per fabric",
                      intro=f"Each fabric's figure is the geometric mean of its runs (range in brackets); "
                            f"'% better' is against {base}, in the figure's better direction.")
    cols = [Column("HPCC test", align="left"), Column("Figure", align="left"), Column("Unit", align="left"),
            Column("Better", align="left")]
    cols += [Column(f"{name} ({len(data['runs'][name])} runs)") for name in fabrics]
    for name in fabrics[1:]:
        cols += [Column(f"{name} vs {base}", "% better"), Column("verdict", align="left")]
    table_rows = []
    for row in rows:
        line: List[Any] = [row["test"], row["display"], row["unit"], "lower" if lower_is_better(row["metric"]) else "higher"]
        line += [_value_cell(row["fabrics"][n]) for n in fabrics]
        for name in fabrics[1:]:
            v = row["versus"][name]
            imp = v.get("improvement")
            line += [Cell(fmt.improvement_pct(None if imp is None else imp * 100),
                          "" if imp is None or v["verdict"] not in ("better", "worse") else v["verdict"]),
                     _verdict_cell(v)]
        table_rows.append(line)
    section.add(Table(cols, table_rows, caption="HPCC results (HPCC's decimal MB/s, Gflop/s, GUP/s, us)",
                      notes=["verdict: Welch's test on the logarithms of the runs' values; a difference is called "
                             "better or worse when p < 0.05 and it is at least 3%; one run per fabric cannot be judged."]))
    headline = [r for r in rows if r["headline"] or r["key"] in SENTENCE_KEYS]
    if len(fabrics) > 1 and headline:
        try:
            from fabricbench.report.plots import bar_plot, run_color

            groups = [(name, [None if r["versus"][name]["improvement"] is None else 100 * r["versus"][name]["improvement"]
                              for r in headline], run_color(i + 1)) for i, name in enumerate(fabrics[1:])]
            res = bar_plot([r["display"] for r in headline], groups, f"HPCC: % better than {base}",
                           "% better (positive = better)", fmt=plot_format, limit=900.0)
            section.add(res.figure("study-hpcc-better", f"HPCC: % better than {base}",
                                   alt="HPCC percent better per figure and fabric"))
        except ImportError:  # matplotlib missing: the table says it all
            pass
    return section


def sentences_section(data: Dict[str, Any], rows: List[Dict[str, Any]]) -> Section:
    fabrics = data["fabrics"]
    base = fabrics[0]
    section = Section("hpcc-findings", "What the study shows",
                      intro="The paper's sentences, computed from the runs, each with its verdict.")
    items = []
    by_key = {r["key"]: r for r in reversed(rows)}  # a key's first row
    for row in (by_key[k] for k in SENTENCE_KEYS if k in by_key):
        for name in fabrics[1:]:
            text = figure_sentence(row, base, name)
            if text:
                items.append(f"{text}: {verdict_words(row['versus'][name])}.")
    section.add(BulletList(items) if items else Paragraph("No figure was measured on two fabrics."))
    factors = link_factor(data["rates"], fabrics)
    checks = []
    for row in (by_key[k] for k in BANDWIDTH_BOUND if k in by_key):
        for name in fabrics[1:]:
            a, b = row["fabrics"][base]["value"], row["fabrics"][name]["value"]
            if a and b and factors.get(name):
                checks.append(f"{row['display']}: {name}/{base} = {fmt.ratio(b / a)} where the links differ by "
                              f"{fmt.ratio(factors[name])}")
    if checks:
        section.add(Paragraph("Against the link rates (a bandwidth-bound figure follows the link rate at most; "
                              "shared memory inside a node and the host's CPUs bound the rest):"), BulletList(checks))
    return section


def profile_section(data: Dict[str, Any], plot_format: str) -> Section:
    fabrics = data["fabrics"]
    prow = profile_rows(data["leads"], fabrics, TESTS)
    section = Section("hpcc-profiles", "MPI profile per HPCC test",
                      intro="Each test's stretch of the profile (from the section lines HPCC writes to hpccoutf.txt); "
                            "its leading call is the data-moving MPI call that moved the most bytes. Shares are the median "
                            "over the fabric's runs (range in brackets).")
    if not prow:
        section.add(Notice("No run of this study has a profile split into HPCC's tests.", "warning"))
        return section
    cols = [Column("HPCC test", align="left"), Column("Fabric", align="left"), Column("Leading call", align="left"),
            Column("Size", align="left"), Column("of MPI time", "%"), Column("of wall time", "%"),
            Column("runtime in MPI", "%"), Column("most MPI time", align="left"), Column("verdict", align="left")]
    table_rows, items = [], []

    def spread(s: Dict[str, Optional[float]]) -> str:
        if s["median"] is None:
            return "-"
        if s["min"] is not None and s["max"] is not None and s["max"] - s["min"] > 0.05:
            return f"{_share(s['median'])} ({_share(s['min'])} to {_share(s['max'])})"
        return _share(s["median"])

    for row in prow:
        for name, f in row["fabrics"].items():
            verdict = {"holds": f"holds in {f['agree']} of {f['runs']} runs",
                       "varies": f"varies: {f['agree']} of {f['runs']} runs lead with it",
                       CANNOT_JUDGE: "cannot judge: one run"}[f["verdict"]]
            table_rows.append([row["test"], name, f["lead"] or "-", _sizes(f) or "-", spread(f["percent_of_mpi"]),
                               spread(f["percent_of_wall"]), spread(f["percent_in_mpi"]), f["most"] or "-",
                               Cell(verdict, "muted" if f["verdict"] == CANNOT_JUDGE else "")])
            if f["lead"]:
                items.append(f"{TEST_WHAT.get(row['test'], row['test'])} on {name}: "
                             f"{_share(f['percent_of_mpi']['median'])} of MPI time "
                             f"({_share(f['percent_of_wall']['median'])} of wall time) in {_sized(f)}; "
                             f"about {_share(f['percent_in_mpi']['median'])} of its runtime in MPI ({verdict}"
                             + ("; measure with --repeat 3 or more to judge" if f["verdict"] == CANNOT_JUDGE else "")
                             + ").")
            else:
                items.append(f"{TEST_WHAT.get(row['test'], row['test'])} on {name}: no data-moving MPI call; "
                             f"about {_share(f['percent_in_mpi']['median'])} of its runtime in MPI, mostly "
                             f"{f['most'] or 'nothing'} ({verdict}).")
    section.add(Table(cols, table_rows, caption="Leading MPI call per HPCC test and fabric"), BulletList(items))
    try:
        from fabricbench.report.plots import bar_plot, run_color

        tests = [r["test"] for r in prow]
        groups = [(name, [(r["fabrics"].get(name) or {}).get("percent_of_mpi", {}).get("median") for r in prow],
                   run_color(i)) for i, name in enumerate(fabrics)]
        res = bar_plot(tests, groups, "Leading call's share of MPI time per HPCC test", "% of the test's MPI time",
                       fmt=plot_format, zero_line=False)
        section.add(res.figure("study-hpcc-profile", "Leading call's share of MPI time per HPCC test",
                               alt="share of MPI time of each test's leading call per fabric"))
    except ImportError:
        pass
    return section


def load_range(loads: Sequence[float], cpus: Any) -> str:
    """The host's load over a fabric's runs: 'a to b on N CPUs', '-' when none was read."""
    return f"{fmt.number(min(loads))} to {fmt.number(max(loads))} on {cpus} CPUs" if loads else "-"


def study_conditions(section_id: str, setting: str, study: str, table: Table, reproduce: str, rebuild: str) -> Section:
    """A study's conditions: where it ran (`setting`), its table per fabric, the command that reproduces it and
    the one that rebuilds its report (`rebuild`, the study's own command)."""
    section = Section(section_id, "Conditions and how to reproduce")
    section.add(Paragraph(setting + f"Study {study}."), table, Paragraph(f"Reproduce: {reproduce}"),
                Paragraph(f"Rebuild this report from the stored runs: {rebuild} --report {study} -o FILE.html"))
    return section


def conditions_section(data: Dict[str, Any], reproduce: str) -> Section:
    cols = [Column("Fabric", align="left"), Column("Link or launcher arguments", align="left"),
            Column("Runs (complete)", align="left"), Column("Ranks", align="right"), Column("Nodes", align="right"),
            Column("HPL N / NB / grid", align="left"), Column("Host load (1 min)", align="left"),
            Column("MPI", align="left"), Column("Run ids", align="left")]
    rows = []
    for name in data["fabrics"]:
        runs = data["runs"][name]
        first = runs[0]
        shape = first["shape"] or {}
        where = shape.get("link") and f"lab link {shape['link']}" or " ".join(shape.get("launcher_args") or []) or "default"
        plan = first["plan"] or {}
        loads = [r["load"] for r in runs if r["load"] is not None]
        load = load_range(loads, first["cpus"])
        rows.append([name, where, f"{len(runs)} ({sum(r['status'] == 'complete' for r in runs)})",
                     str(first["ranks"] or "-"), str(first["nodes"] or "-"),
                     f"{plan.get('n', '-')} / {plan.get('nb', '-')} / {plan.get('p', '-')}x{plan.get('q', '-')}",
                     load, first["mpi"] or "-", ", ".join(str(r["id"]) for r in runs)])
    lab = any((r["shape"] or {}).get("link") for runs in data["runs"].values() for r in runs)
    setting = ("On the lab: network namespaces on one machine joined by shaped links; the ranks share this machine's "
               "CPUs and memory, so compute-bound tests (DGEMM, STREAM, HPL) show the host, not the fabric. "
               if lab else "On a cluster. ")
    section = study_conditions("conditions", setting, data["study"], Table(cols, rows, caption="Conditions per fabric"),
                               reproduce, "fabricbench study hpcc-fabrics")
    busy = [r for runs in data["runs"].values() for r in runs
            if r["load"] is not None and r["cpus"] and r["load"] > r["cpus"]]
    if busy:
        section.add(Notice(f"{len(busy)} run(s) ran on a host loaded beyond its CPUs (load above the CPU count): "
                           "differences there may be the host's, not the fabric's.", "warning"))
    return section


def study_report(data: Dict[str, Any], reproduce: str, plot_format: str = "svg") -> Report:
    from fabricbench import __version__

    rows = figure_rows(data["values"], data["fabrics"])
    return Report(
        title=f"HPCC on {' and '.join(data['fabrics'])}: performance and MPI profile per test",
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        runs=[SimpleNamespace(name=f"{name} ({len(data['runs'][name])} runs)") for name in data["fabrics"]],
        sections=[conditions_section(data, reproduce), results_section(data, rows, plot_format),
                  sentences_section(data, rows), profile_section(data, plot_format)],
    )


def summary_lines(data: Dict[str, Any]) -> Sequence[str]:
    """The sentences for the terminal, after the study ran."""
    rows = figure_rows(data["values"], data["fabrics"])
    section = sentences_section(data, rows)
    out: List[str] = []
    for block in section.blocks:
        if isinstance(block, BulletList):
            out += [f"- {item}" for item in block.items]
        elif isinstance(block, Paragraph):
            out.append(block.text)
    return out
