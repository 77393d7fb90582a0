"""`fabricbench predict PROFILE_RUN --on RUN_OR_FABRIC [--from RUN_OR_FABRIC]`: the what-if."""
from __future__ import annotations

import click

from fabricbench.cli.app import console, json_option, main, pass_state, print_json


@main.command()
@click.argument("profile_ref", metavar="PROFILE_RUN")
@click.option("--on", "on", required=True, metavar="RUN_OR_FABRIC",
              help="The fabric to predict for: an engine run measured there, or a catalogue name (edr, 1gbe, ddr, ...).")
@click.option("--from", "source", metavar="RUN_OR_FABRIC",
              help="The fabric the profile was measured on (default: the profile's fabric= tag).")
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True, help="How many calls to list.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the prediction as a report (HTML; .md for Markdown): per-call breakdown on A and B, "
                   "both fabrics' models against their measured points.")
@click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.9, show_default=True,
              help="The band's level: with several profiles it is a prediction interval for one run at this level.")
@click.option("--check", "check_ref", metavar="RUN",
              help="Also hold the prediction against RUN, measured on the target fabric (an app run, or a profile): "
                   "its MPI_Init to MPI_Finalize time, the error and whether the band holds it.")
@json_option
@pass_state
def predict(state, profile_ref, on, source, top, report_path, level, check_ref, as_json):
    """Predict a profiled application's run time on another fabric, with a low/high band.

    The run time is MPI_Init to MPI_Finalize of the slowest rank, as `app run` stores it. The band
    holds the re-costing choices, the models' fit error and, with several stored profiles of the same
    application on the same ranks and fabric, their spread: a prediction interval for one run at
    --level (Student's t on the log times of their predictions); --check RUN prints the error
    against a run measured on the target.

    Compute time is kept; every MPI call and message size is re-costed with the two fabrics'
    models; waiting from imbalance is bounded separately. Prints the predicted time, how many
    times faster, the calls that account for the change and the assumptions.
    """
    from fabricbench.models.predict import check_against, predict_case
    from fabricbench.report.words.models import format_check, format_prediction, prediction_json

    store = state.read(profile_ref)
    p, models, points = predict_case(store, profile_ref, on=on, source=source, level=level)
    check = check_against(p, store, check_ref) if check_ref else None
    if report_path:
        from fabricbench.report import write_report
        from fabricbench.report.files import check_output
        from fabricbench.report.sections.prediction import prediction_report

        out = check_output(report_path)
        fmt = "markdown" if out.suffix.lower() == ".md" else "html"
        write_report(prediction_report(p, models, points, check=check), out, fmt=fmt, create_folders=False)
    if as_json:
        print_json(prediction_json(p, check))
        return
    for line in format_prediction(p, top=top) + (format_check(check) if check else []):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if report_path:
        console.print(f"wrote {report_path}", highlight=False, markup=False)
