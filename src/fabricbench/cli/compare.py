"""`fabricbench compare A B` and `fabricbench check RUN --against NAME`: load, call analysis.compare, print."""
from __future__ import annotations

from typing import Optional

import click
from rich import box
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench.errors import UsageError
from fabricbench import numbers
from fabricbench.report.words.matching import mismatch_paragraph


def verdict_options(f):
    """The options that say when a difference is called: threshold, alpha, correction."""
    for opt in reversed([
        click.option("--min-effect", type=click.FloatRange(min=0), default=3.0, show_default=True, metavar="PERCENT",
                     help="Smallest difference called better or worse, in % of A."),
        click.option("--alpha", type=click.FloatRange(min=1e-9, max=0.5), default=0.05, show_default=True,
                     help="Significance level after correction."),
        click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
                     help="Correction for the number of points compared: Holm (family-wise) or Benjamini-Hochberg."),
        click.option("--benchmark", "-b", default=None, metavar="NAME", help="Only this benchmark."),
        click.option("--no-history", is_flag=True,
                     help="Ignore the stored runs of the same configuration: take the run-to-run noise from the "
                     "compared runs alone (their launches, or their replicates)."),
    ]):
        f = opt(f)
    return f


def make_options(min_effect: float, alpha: float, correction: str):
    from fabricbench.analysis.compare import Options

    return Options(min_effect=min_effect / 100.0, alpha=alpha, correction=correction)


def _num(v: Optional[float]) -> str:

    return numbers.number(v)




def print_comparability(comp) -> None:
    from fabricbench.report.words.comparability import cautions, fact_text

    for caution in cautions(comp):
        console.print(Text(f"Caution: {caution}.", style="yellow"))
    if comp.comparable:
        msg = "Comparable: no recorded provenance differences."
        if comp.not_recorded:
            msg += " Not recorded for either run: " + ", ".join(comp.not_recorded) + "."
        console.print(Text(msg, style="green"))
        return
    t = Table(title=f"Comparability: {len(comp.differences)} difference(s) that could confound this comparison",
              title_justify="left")
    for name in ("Fact", "A", "B", "Why it matters"):
        t.add_column(name, style="dim" if name.startswith("Why") else None, overflow="fold")
    for d in comp.differences:
        t.add_row(Text(d.label), Text(fact_text(d.a) or "-"), Text(fact_text(d.b) or "-"), Text(d.why))
    console.print(t)
    if comp.not_recorded:
        console.print(Text("Not recorded for either run: " + ", ".join(comp.not_recorded) + ".", style="dim"))


_STYLE = {"better": "green", "worse": "red", "isolated": "yellow", "host changed": "yellow", "host busy": "yellow", "no significant difference": "dim", "below threshold": "dim",
          "not judged": "yellow"}


def series_table(s, wide: bool = False) -> Table:
    """Size, A, B, B/A with its 95% CI, verdict (and B - A when the terminal is wide)."""
    from fabricbench.analysis.direction import direction_word
    from fabricbench.report.words import compare as words

    stats = {p.statistic for p in s.points}
    stat = {"median": " median", "rate": " rate"}.get(stats.pop(), "") if len(stats) == 1 else ""
    t = Table(title=f"{s.title}: {direction_word(s.metric)}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    has_size = any(p.size is not None for p in s.points)
    heads = (["Size\n(bytes)"] if has_size else []) + [f"A{stat}\n({s.unit})", f"B{stat}\n({s.unit})"]
    heads += ([f"B - A\n({s.unit})"] if wide else []) + ["B / A", "95% CI\nof B / A"]
    for head in heads:
        t.add_column(head, justify="right", overflow="fold")
    t.add_column("Verdict", overflow="fold")
    for p in s.points:
        row = ([numbers.count(p.size) if isinstance(p.size, int) else ""] if has_size else [])
        row += [_num(p.a), _num(p.b)] + ([numbers.difference(p.diff)] if wide else []) + [numbers.factor(p.ratio), numbers.interval(p.ratio_ci)]
        t.add_row(*[Text(c) for c in row], Text(words.point_short(p), style=_STYLE.get(p.verdict, "")))
    return t


def _change(c: Optional[float]) -> str:
    from fabricbench.numbers import percent

    return "-" if c is None else percent(100.0 * c, signed=True)


def single_table(result) -> Table:
    """The figures measured once on each side, side by side: name, unit, A, B, change, which way."""
    from fabricbench.report.words.compare import single_row

    rows = [single_row(s, p) for s, p in result.single_valued]
    t = Table(title=f"Measured once on each side ({len(rows)} figure{'s' if len(rows) != 1 else ''})",
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("Figure", overflow="fold")
    t.add_column("Unit")
    for head in ("A", "B", "Change"):
        t.add_column(head, justify="right", no_wrap=True)
    t.add_column("B is", no_wrap=True)
    for r in rows:
        big = abs(r["improvement"] or 0.0) >= result.options.min_effect  # smaller changes get no word
        way = r["direction"] if r["direction"] in ("better", "worse") and big or r["direction"] == "within resolution" else ""
        t.add_row(r["name"], r["unit"], _num(r["a"]), _num(r["b"]), _change(r["change"]),
                  Text(way, style=_STYLE.get(way, "")))
    return t


def _cannot_judge_line(result) -> str:
    from fabricbench.report.words.compare import cannot_judge

    line = cannot_judge(result)
    return line[0].upper() + line[1:] + "."


def print_comparison(result, show_points: bool = True, history_ignored: bool = False) -> None:
    from fabricbench.report.words import compare as words

    console.print(Text.assemble(("A", "bold"), f" = {_side_text(result.a_runs)}   ", ("B", "bold"),
                                f" = {_side_text(result.b_runs)}"))
    print_comparability(result.comparability)
    if not result.series:
        console.print("No common points to compare.")
    for s in result.judged_series:
        if show_points:
            console.print(series_table(s, wide=console.width >= 100))
        console.print(Text(f"{s.title}: {words.series_summary(s)}", style="bold"))
    if result.single_valued:
        console.print(single_table(result))
        for s in result.series:  # a curve of single figures: its average change still tells something
            if s not in result.judged_series and len(s.points) >= 2:
                console.print(Text(f"{s.title}: {words.series_summary(s)}", style="bold"))
        if result.judged_series:  # else the overall line says it
            console.print(Text(_cannot_judge_line(result), style="yellow"))
    if result.mismatches:
        console.print(Text(mismatch_paragraph(result.mismatches), style="dim"))
    if result.series:
        console.print(Text(words.summary(result), style="bold"))
        note = words.noise_note(result, history_ignored)
        if note:
            console.print(Text(note, style="dim" if result.noise_from == "history" else "yellow"))
        if words.host_note(result):
            console.print(Text(words.host_note(result), style="yellow"))
        if show_points and result.judged_series:
            console.print(Text(f"{compared_figures(result)} compared; each 95% CI of B / A allows for the "
                               "run-to-run noise its series names; the verdicts are corrected for every point tested.",
                               style="dim"))


def compared_figures(result) -> str:
    """'Medians (bandwidth: the rate over all iterations)': the figures of record the verdicts judged."""
    said = {p.statistic for s in result.judged_series for p in s.points}
    words = [w for k, w in (("median", "medians"), ("rate", "rates over all iterations (bandwidth)"),
                            ("value", "values")) if k in said]
    text = " and ".join(words) or "figures"
    return text[0].upper() + text[1:]


def compared(a, b, options, benchmark: Optional[str], no_history: bool):
    """B against A (analysis.compare) with the stored replicates of each side as the run-to-run
    noise's history (RunData.replicates), unless --no-history: what `compare` and `check` judge."""
    from fabricbench.analysis.compare import compare as compare_runs
    from fabricbench.store.replicates import replicate_history

    history = ((), ()) if no_history else replicate_history(a, b)
    return compare_runs(a, b, options, benchmark=benchmark, history=history)


def load_side(store, refs: str):
    """'3' or '3,4,5' (replicate runs of one configuration): every point, as --benchmark also
    matches other tools' names for a benchmark."""
    parts = [r.strip() for r in str(refs).split(",") if r.strip()]
    if not parts:
        raise UsageError(f"no run in '{refs}'")
    return [store.load(r) for r in parts]


def _side_text(runs) -> str:
    if len(runs) == 1:
        return f"run {runs[0].id} ({runs[0].name})"
    return f"runs {', '.join(str(r.id) for r in runs)} ({runs[0].name}, {len(runs)} replicates)"


@main.command()
@click.argument("run_a", metavar="A")
@click.argument("run_b", metavar="B")
@verdict_options
@json_option
@pass_state
def compare(state, run_a: str, run_b: str, min_effect: float, alpha: float, correction: str,
            benchmark: Optional[str], no_history: bool, as_json: bool) -> None:
    """Compare run B against run A: comparability, then medians, B/A with its CI and a verdict per point.

    A point is called better or worse only when the difference is significant after correcting
    for the number of points compared, and at least --min-effect percent. How much runs vary by
    themselves comes from up to 10 stored earlier runs of the same configuration (2 or more
    needed; --no-history ignores them), else from replicate runs given as A or B (3,4,5), else
    from the spread between each run's launches.
    """
    store = state.read(run_a)
    a, b = load_side(store, run_a), load_side(store, run_b)
    result = compared(a, b, make_options(min_effect, alpha, correction), benchmark, no_history)
    if benchmark and not result.series and not result.mismatches:
        raise UsageError(f"neither run has benchmark '{benchmark}'")
    hpcc_pair = len(a) == len(b) == 1 and a[0].run.kind == b[0].run.kind == "hpcc"
    if as_json:
        extra = {}
        if hpcc_pair:
            from fabricbench.cli.hpcc_profile import compare_json

            extra["hpcc_profile"] = compare_json(store, a[0].run.id, b[0].run.id)
        from fabricbench.report.words.compare import comparison_dict

        print_json(dict(comparison_dict(result, no_history), history_ignored=no_history, **extra))
        return
    print_comparison(result, history_ignored=no_history)
    if hpcc_pair:
        from fabricbench.cli.hpcc_profile import print_compare

        print_compare(store, a[0].run.id, b[0].run.id)


@main.command()
@click.argument("run", metavar="RUN[,RUN...]")
@click.option("--against", "baseline", required=True, metavar="NAME", help="The baseline to check against (baseline set NAME RUN).")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the verdicts as JUnit XML for CI: a testcase per point, a failure per regression.")
@verdict_options
@json_option
@pass_state
@click.pass_context
def check(ctx, state, run: str, baseline: str, junit: Optional[str], min_effect: float, alpha: float,
          correction: str, benchmark: Optional[str], no_history: bool, as_json: bool) -> None:
    """Check RUN against a baseline: exit 0 when nothing is significantly worse beyond --min-effect, 1 when something is.

    The points that got worse are named; exit status 2 when the two share no point; exit status 3
    when check cannot judge: a point that got worse by --min-effect or more was held because the
    host was too busy or changed state, or no point could be judged at all (figures measured once
    on each side). A baseline of several replicate runs tells check how much runs vary by
    themselves, as do stored earlier runs of the same configuration (--no-history ignores those).
    """
    from fabricbench.analysis.compare import CANNOT_JUDGE, check_verdict
    from fabricbench.report.words import compare as words
    from fabricbench.report.words.compare import describe_point

    if junit:
        from fabricbench.report.files import check_output

        check_output(junit)  # before the comparison: a bad path is a usage error at once
    store = state.read(run)
    base = store.baseline(baseline)
    result = compared([store.load(i) for i in base.run_ids], load_side(store, run),
                      make_options(min_effect, alpha, correction), benchmark, no_history)
    if not result.series:
        raise UsageError(f"nothing to check: {_side_text(result.b_runs)} and baseline '{baseline}' share no "
                         f"point. {mismatch_paragraph(result.mismatches)}".strip())
    verdict = check_verdict(result)
    worse = list(verdict.worse)
    if junit:
        from fabricbench.report.dashboards import to_junit
        from fabricbench.report.files import write_text

        write_text(junit, to_junit(result, base.name, min_effect))
    if as_json:
        data = words.comparison_dict(result, no_history)
        data.update(baseline=base.to_dict(), ok=verdict.exit_status == 0, worse=[describe_point(s, p) for s, p in worse],
                    check=words.check_dict(verdict), history_ignored=no_history)
        print_json(data)
    else:
        console.print(Text.assemble(("A", "bold"), f" = baseline '{base.name}' ({_side_text(result.a_runs)})   ",
                                    ("B", "bold"), f" = {_side_text(result.b_runs)}"))
        if not result.comparability.comparable:
            labels = ", ".join(d.label for d in result.comparability.differences)
            console.print(Text(f"Differs from the baseline in: {labels}.", style="yellow"))
        for r in result.b_runs:
            if r.status != "complete":
                console.print(Text(f"Run {r.id} is {r.status}: only the points it measured are checked.", style="yellow"))
        for s in result.judged_series:
            console.print(Text(f"{s.title}: {words.series_summary(s)}"))
        if result.single_valued:
            console.print(single_table(result))
            console.print(Text(_cannot_judge_line(result), style="yellow"))
        if result.mismatches:
            console.print(Text(mismatch_paragraph(result.mismatches), style="dim"))
        console.print(Text(words.summary(result), style="bold"))
        if words.noise_note(result, no_history):
            console.print(Text(words.noise_note(result, no_history), style="dim"))
        if words.host_note(result):
            console.print(Text(words.host_note(result), style="yellow"))
        for s, p in worse:
            console.print(Text(f"worse: {describe_point(s, p)}", style="red"))
        for held in ("isolated", "host changed", "host busy"):
            for s, p in result.flagged(held):
                if p.improvement is not None and p.improvement < 0:
                    console.print(Text(f"{held}: {describe_point(s, p)}", style="yellow"))
        if worse:
            console.print(Text(f"FAIL: {len(worse)} point(s) significantly worse than baseline '{base.name}' "
                               f"by {numbers.short(min_effect)}% or more.", style="bold red"))
        elif verdict.status == CANNOT_JUDGE:
            why = (f"{len(verdict.held)} point(s) worse by {numbers.short(min_effect)}% or more were held because of the host "
                   "(too busy, or changed state); rerun on a quieter host" if verdict.held else
                   "no point could be judged (measure with --repeat N, or against a baseline of several runs)")
            console.print(Text(f"CANNOT JUDGE against baseline '{base.name}': {why}.", style="bold yellow"))
        else:
            console.print(Text(f"OK: nothing significantly worse than baseline '{base.name}' by {numbers.short(min_effect)}% or more.",
                               style="bold green"))
    ctx.exit(verdict.exit_status)
