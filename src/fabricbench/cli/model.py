"""`fabricbench model fit RUN` and `model show RUN_OR_FABRIC`: communication models of a fabric."""
from __future__ import annotations

import click

from fabricbench.cli.app import console, json_option, main, pass_state, print_json
from fabricbench import numbers


@main.group(cls=type(main))
def model() -> None:
    """Communication models of a fabric, fitted from an engine run or from the catalogue."""


def _show(state, ref: str, as_json: bool) -> None:
    from fabricbench.report.words.models import fabric_model_json, format_fabric_model
    from fabricbench.models.predict import _looks_like_run, models_for

    store = state.read(ref) if _looks_like_run(str(ref)) else None
    models = models_for(store, ref)
    if as_json:
        print_json({"model": fabric_model_json(models[0]), "band": [fabric_model_json(m) for m in models[1:]]})
        return
    for line in format_fabric_model(models[0]):
        console.print(line, highlight=False, markup=False)
    if len(models) > 1:
        ends = ", ".join(f"{numbers.short(m.p2p.alpha_us)} us + n / {numbers.short(m.p2p.beta_MBps)} MB/s" for m in models[1:])
        console.print(f"  band ends: {ends}", highlight=False, markup=False)


@model.command("fit")
@click.argument("run_ref", metavar="RUN")
@json_option
@pass_state
def fit(state, run_ref, as_json):
    """Fit point-to-point (Hockney regimes, LogGP) and collective models to an engine run and print them.

    Models are recomputed from the run's measurements whenever they are used (predict, report),
    so nothing is stored.
    """
    _show(state, run_ref, as_json)


@model.command("show")
@click.argument("ref", metavar="RUN_OR_FABRIC")
@json_option
@pass_state
def show(state, ref, as_json):
    """Show the model of an engine run or of a catalogue fabric (e.g. edr, 1gbe, ddr)."""
    _show(state, ref, as_json)
