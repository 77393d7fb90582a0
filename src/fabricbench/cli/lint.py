"""`fabricbench lint RUN...`: the result set against the rules of scientific benchmarking (analysis.lint)."""
from __future__ import annotations

from typing import Tuple

import click
from rich.text import Text

from fabricbench.cli.app import console, json_option, main, pass_state, print_json


@main.command()
@click.argument("runs", nargs=-1, required=True)
@json_option
@pass_state
@click.pass_context
def lint(ctx, state, runs: Tuple[str, ...], as_json: bool) -> None:
    """Check RUNS against Hoefler and Belli's rules (SC15) that stored data can show.

    Prints each violation and how to fix it; exit status 1 when there is a violation
    (warnings alone leave it 0).
    """
    from fabricbench.analysis.lint import RULES
    from fabricbench.analysis.lint import lint as check
    from fabricbench.report.words.lint import fix, result_dict, what

    store = state.reader
    loaded, seen = [], set()
    for ref in runs:
        rd = store.load(ref)
        if rd.run.id not in seen:
            seen.add(rd.run.id)
            loaded.append(rd)
    result = check(loaded)
    if as_json:
        print_json(result_dict(result))
        ctx.exit(1 if result.violations else 0)
    names = ", ".join(f"{r.id} ({r.name})" for r in result.runs)
    console.print(Text(f"lint: runs {names}", style="bold"))
    for f in result.findings:
        style = "red" if f.severity == "violation" else "yellow"
        where = f"run {f.run.id}" if f.run is not None else "all runs"
        console.print(Text.assemble((f"{f.severity.upper()} ", f"bold {style}"), (f"{f.rule} (SC15 rule {f.hb_rule})", style),
                                    f", {where}: {what(f)}"))
        console.print(Text(f"  fix: {fix(f)}", style="dim"))
    passed = [f"{r} ({RULES[r][0]})" for r in result.passed()]
    if passed:
        console.print(Text("passed: " + ", ".join(passed), style="green"))
    n_v, n_w = len(result.violations), len(result.findings) - len(result.violations)
    console.print(Text(f"{n_v} violation(s), {n_w} warning(s) for runs {names}.", style="bold"))
    ctx.exit(1 if result.violations else 0)
