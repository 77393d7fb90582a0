"""`fabricbench profile -- CMD` (run under the MPI profiler, store the profile) and `show-profile`."""
from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from fabricbench.cli.app import console, json_option, label_option, main, parse_tags, pass_state, print_json, tag_option
from fabricbench.cli.measure import build_layout, launch_options, make_launcher
from fabricbench.errors import FabricbenchError, UsageError


class NoProfile(FabricbenchError):
    exit_code = 1


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@label_option
@tag_option
@click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS", help="Stop the command after this long.")
@click.option("--keep", type=click.Path(dir_okay=False), help="Also keep the JSON profile in this file.")
@launch_options(launcher_default=None, launcher_help="Start the ranks of COMMAND (the program alone) with this "
                "launcher: mpirun, srun, lab. Without it COMMAND includes its own launcher.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_state
def profile(state, label, tags, timeout, keep, np, hostfile, hosts, ppn, launcher, mpirun_args, command):
    """Run COMMAND (e.g. -- mpirun -np 4 ./app args) with the MPI profiler and store its profile.

    The profiler (libfabricbench-prof.so) is preloaded into every rank; for Open MPI's mpirun
    it is forwarded with -x. The profile is written at MPI_Finalize; if the program fails
    before that, no profile is produced and the reason is printed. With --launcher (and
    --np, --hosts, ...) COMMAND is the program alone and fabricbench starts its ranks, as
    `run` does: e.g. `profile --launcher srun --np 4 -- ./app args`.
    """
    from fabricbench.analysis.profile import summarize
    from fabricbench.report.words import profile as words
    from fabricbench.workflows.profile import run_profiled
    from fabricbench.workflows.profile import record_profile
    from fabricbench.launch.procs import guard

    from fabricbench.report.files import check_output

    tag_map = parse_tags(tags)
    if keep:
        check_output(keep)
    argv, env, chosen = list(command), None, None
    if launcher is not None:
        chosen = make_launcher(launcher, build_layout(np, hostfile, hosts, ppn, mpirun_args))
        argv, env = chosen.command(argv), chosen.environment()
    elif np or hostfile or hosts or ppn or mpirun_args:
        raise UsageError("--np, --hosts, --hostfile, --ppn and --mpirun-args go with --launcher; "
                         "without it COMMAND carries its own launcher (e.g. -- mpirun -np 4 ./app)")
    store = state.store  # open (and check) the database before spending time on the program
    with tempfile.TemporaryDirectory(prefix="fabricbench-profile-") as tmp:
        guard().remove_on_death(tmp)  # also when fabricbench is SIGKILLed while the program runs
        # Absolute, without following a symbolic link at the end: the profiler refuses one.
        path = Path(os.path.abspath(Path(keep).expanduser())) if keep else Path(tmp) / "profile.json"
        rc, data, reason = run_profiled(argv, path, env=env, timeout=timeout)
    if data is None:
        raise NoProfile(reason)
    run = record_profile(store, data, argv, launcher=chosen, label=label, tags=tag_map,
                         command=" ".join(shlex.quote(c) for c in argv))
    s = summarize(data)
    console.print(f"profile stored as run [bold]{run.id}[/]: {words.headline(s)}", highlight=False)
    for c in s["top_calls"][:3]:
        console.print(f"  {words.call_sentence(c)}", highlight=False, markup=False)
    console.print(f"see it with: fabricbench show-profile {run.id}", highlight=False, markup=False)
    if keep and reason.startswith("profile kept at"):  # --keep named something it may not replace
        console.print(f"--keep: {reason}", highlight=False, markup=False)
    if rc != 0:
        raise NoProfile(f"the profile was stored as run {run.id}, but {reason}")


@main.command("show-profile")
@click.argument("run_ref", metavar="RUN")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="How many calls and talkers to list.")
@click.option("--by", "by", type=click.Choice(["call", "callsite"]), default="call", show_default=True,
              help="Group MPI time by call, or by call site (function, file and line of the caller).")
@click.option("--phases", is_flag=True, help="Split the run into phases where the mix of calls changes (or at "
              "the program's MPI_Pcontrol calls) and list each one.")
@json_option
@pass_state
def show_profile(state, run_ref, top, by, phases, as_json):
    """Where a profiled program's time went in MPI: share of wall time, top calls, imbalance, talkers.

    --by callsite says where in the program (mpiP's call-site view); --phases says when.
    """
    from fabricbench.analysis import profile as prof
    from fabricbench.report.words import profile as words

    store = state.read(run_ref)
    run = store.get_run(run_ref)
    data = store.artifact(run.id, "profile")
    if data is None:
        raise UsageError(f"run {run.id} is a {run.kind} run, not a profile (see 'fabricbench runs --kind profile')")
    s = prof.summarize(data, top=top, talkers=top)
    if as_json:
        out = {"run": run.to_dict(), "summary": words.summary_dict(s)}
        if by == "callsite":
            from fabricbench.analysis.profile_sites import callsites

            out["callsites"] = callsites(data, top=top)
        if phases:
            out["phases"] = words.json_words(_phases(store, run, data))
        print_json(out)
        return
    if by == "callsite" or phases:
        _show_sites_or_phases(run, data, s, top, by == "callsite", _phases(store, run, data) if phases else None)
        return
    if run.label or run.tags:
        console.print(f"run {run.id} {run.label or ''} {' '.join(f'{k}={v}' for k, v in run.tags.items())}",
                      highlight=False, markup=False)
    for line in words.head_lines(s):
        console.print(line, highlight=False, markup=False)
    if s["top_calls"]:
        console.print("\nTop MPI calls by time (summed over ranks):")
        for c in s["top_calls"]:
            console.print(f"  - {words.call_sentence(c)}", highlight=False, markup=False)
        console.print(_table(words.CALL_HEADERS, words.call_rows(s), "lrrrrrl"))
        if s["calls_total"] > len(s["top_calls"]):
            console.print(f"  ... and {s['calls_total'] - len(s['top_calls'])} more calls")
    else:
        console.print("No MPI calls were recorded.")
    console.print(words.imbalance_line(s), highlight=False, markup=False)
    if s["top_talkers"]:
        console.print(f"Top talkers (bytes from source to destination rank; {words.format_bytes(s['matrix_bytes'])} in all):",
                      highlight=False, markup=False)
        console.print(_table(words.TALKER_HEADERS, words.talker_rows(s), "rrrrl"))
    else:
        console.print("No point-to-point, one-sided or collective traffic between ranks was recorded.")


def _show_sites_or_phases(run, data, s, top: int, sites: bool, phases: bool) -> None:
    from fabricbench.report.words import profile as words

    console.print(f"run {run.id} {run.label or ''}".rstrip(), highlight=False, markup=False)
    for line in words.head_lines(s):
        console.print(line, highlight=False, markup=False)
    if sites:
        from fabricbench.analysis.profile_sites import callsites
        from fabricbench.report.words.profile import SITE_HEADERS, site_note, site_rows

        cs = callsites(data, top=top)
        console.print("\nMPI time by call site (summed over ranks; COV: spread of the site's time over its ranks):",
                      highlight=False, markup=False)
        if cs["sites"]:
            console.print(_table(SITE_HEADERS, site_rows(cs), "rllrrrrrrrr"))
        note = site_note(cs)
        if note:
            console.print(note, highlight=False, markup=False)
    if phases:
        from fabricbench.report.words.profile import phase_lines

        console.print("")
        if phases.get("unnamed"):
            console.print(f"HPCC's tests cannot be named: {phases['unnamed']}", highlight=False, markup=False)
        for line in phase_lines(phases):
            console.print(line, highlight=False, markup=False)


def _phases(store, run, data):
    """The run's phases: one per HPCC test for a profiled hpcc run, else found in the profile."""
    from fabricbench.cli.hpcc_profile import test_phases

    found = test_phases(store, run.id, top=3) if run.kind == "hpcc" else None
    if found is None:
        from fabricbench.analysis.profile_phases import phases as find_phases

        found = find_phases(data)
    return found


def _table(headers, rows, aligns: str) -> Table:
    t = Table()
    for h, a in zip(headers, aligns):
        t.add_column(h, justify="right" if a == "r" else "left")
    for r in rows:
        t.add_row(*[Text(c) for c in r])
    return t
