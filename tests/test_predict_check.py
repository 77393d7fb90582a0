"""A prediction checkable in one step, with an honest band: app figures carry their resolution,
MPI_Init to MPI_Finalize is the figure of record, the band holds every stored profile of the
application and the models' fit error, and `predict --check RUN` prints the error on that figure."""
import json

import pytest

from fabricbench.analysis.app_figures import RUNTIME, coarse, headline_figure, profile_runtime
from fabricbench.apps import get_recipe
from fabricbench.apps.base import printed_step
from fabricbench.store import Measurement, open_db

from test_predict import synthetic_profile


def test_printed_step_is_the_resolution_of_the_number_as_printed():
    assert printed_step("2") == 1.0 and printed_step("1.51") == pytest.approx(0.01)
    assert printed_step("1.2e-3") == pytest.approx(1e-4) and printed_step("20.8362") == pytest.approx(1e-4)


def test_openfoams_whole_second_clock_is_never_the_headline():
    text = "\n".join(["Time = 0.001", "ExecutionTime = 0.41 s  ClockTime = 1 s", "Time = 0.002",
                      "ExecutionTime = 0.52 s  ClockTime = 2 s", "End", "ExecutionTime = 0.52 s  ClockTime = 2 s"])
    r = get_recipe("openfoam-cavity").parse(text)
    assert r.elapsed_s == 2.0 and r.resolution["elapsed"] == 1.0 and r.resolution["clock"] == 1.0
    assert r.resolution["execution"] == pytest.approx(0.01)
    assert coarse(r.elapsed_s, r.resolution["elapsed"])

    def point(metric, value, step):
        return Measurement(benchmark="app", params={"app": "openfoam-cavity"}, metric=metric, unit="s", value=value,
                           detail={"resolution_s": step})

    assert headline_figure([point("time", 2.0, 1.0), point("wall", 2.4, 1e-6)]) is None
    assert headline_figure([point("time", 2.0, 1.0), point(RUNTIME, 1.734, 1e-6)]).metric == RUNTIME
    lammps = get_recipe("lammps-lj").parse("Loop time of 20.8362 on 2 procs for 200 steps with 4000 atoms\n"
                                           "Performance: 4146.568 tau/day, 9.598 timesteps/s\n")
    assert lammps.resolution["elapsed"] == pytest.approx(1e-4)
    assert headline_figure([point("time", lammps.elapsed_s, lammps.resolution["elapsed"])]).metric == "time"


def test_the_runtime_is_the_slowest_ranks_mpi_init_to_mpi_finalize():
    prof = synthetic_profile()
    t = profile_runtime(prof)
    assert t["value"] == max(r["app_time"] for r in prof["rank_info"]) and t["rank"] == 3


def _profile_runs(db, times, tags):
    """Stored profiles of one application whose runs took `times` (compute scaled, same traffic)."""
    from fabricbench.importers.fbprofile import store_profile

    runs = []
    for t in times:
        data = synthetic_profile(compute_s=t)
        data["command"] = ["/usr/bin/lmp", "-in", "in.lammps"]
        runs.append(store_profile(db, data, label=f"lmp {t}", tags=tags))
    return runs


def _measured_app_run(db, value, tags):
    m = Measurement(benchmark="app", params={"app": "lmp", "ranks": 4}, metric=RUNTIME, unit="s", value=value,
                    n=1, median=value, detail={"resolution_s": 1e-6, "source": "libfabricbench-prof: MPI_Init to "
                                                                             "MPI_Finalize, slowest rank (3)"})
    return db.save_run([m], kind="app", label="lmp at B", tags=dict(tags, app="lmp"), ranks=4)


def test_the_band_holds_every_profile_of_the_application_and_check_prints_the_error(cli, db_path):
    db = open_db(str(db_path))
    runs = _profile_runs(db, [4.0, 8.0, 6.0], {"fabric": "1gbe"})
    elsewhere = _profile_runs(db, [30.0], {"fabric": "edr"})[0]  # another fabric: not a replicate
    measured = _measured_app_run(db, 7.5, {"fabric": "ddr"})

    alone = json.loads(cli("predict", str(elsewhere.id), "--on", "ddr", "--json").stdout)
    assert alone["band"]["profiles"] == 1 and "one profile" in " ".join(alone["assumptions"])
    out = json.loads(cli("predict", str(runs[1].id), "--on", "ddr", "--json", "--check", str(measured.id)).stdout)
    band = out["band"]
    assert band["profiles"] == 3 and sorted(band["profiles_measured_s"]) == sorted(
        max(r["app_time"] for r in synthetic_profile(compute_s=t)["rank_info"]) for t in (4.0, 8.0, 6.0))
    # Every profile's own prediction lies inside the band; the band is wider than one profile's.
    assert all(out["low_s"] <= q <= out["high_s"] for q in band["profiles_predicted_s"])
    assert out["low_s"] <= band["recosting"][0] and out["high_s"] >= band["recosting"][1]
    assert out["application"] == "lmp" and out["profile_run"] == runs[1].id
    # The point is the application's: the medians over its profiles (run 1 alone is the slowest, 8 s of compute).
    from statistics import median

    assert out["predicted_s"] == pytest.approx(median(band["profiles_predicted_s"]))
    assert out["measured_s"] == pytest.approx(median(band["profiles_measured_s"]))
    assert band["this_profile"]["measured_s"] == max(band["profiles_measured_s"]) > out["measured_s"]
    check = out["check"]
    assert check["run"] == measured.id and check["measured_s"] == 7.5 and "MPI_Init to MPI_Finalize" in check["figure"]
    assert check["error"] == pytest.approx((out["predicted_s"] - 7.5) / 7.5)
    assert check["in_band"] == (out["low_s"] <= 7.5 <= out["high_s"])

    text = cli("predict", str(runs[1].id), "--on", "ddr", "--check", str(measured.id)).stdout
    assert f"lmp, profile run {runs[1].id}: measured" in text and "3 profiles" in text
    assert "the 3 profiles of lmp took" in text and f"s on B (median); profile run {runs[1].id} alone:" in text
    assert f"checked against run {measured.id} (lmp at B): measured 7.50 s" in text and "% (" in text

    html = db_path.parent / "whatif.html"
    cli("predict", str(runs[1].id), "--on", "ddr", "--check", str(measured.id), "--report", str(html))
    page = html.read_text()
    assert f"lmp (profile run {runs[1].id})" in page and f"Checked against run {measured.id}" in page
    assert "3 profiles of the application on A" in page


def test_check_refuses_a_run_without_the_figure(cli, db_path):
    db = open_db(str(db_path))
    run = _profile_runs(db, [4.0], {"fabric": "1gbe"})[0]
    m = Measurement(benchmark="app", params={"app": "lmp"}, metric="time", unit="s", value=2.0, n=1)
    other = db.save_run([m], kind="app", tags={"app": "lmp"}, ranks=4)
    proc = cli("predict", str(run.id), "--on", "ddr", "--check", str(other.id), check=False)
    assert proc.returncode != 0 and "has no MPI_Init to MPI_Finalize time" in proc.stderr and "Traceback" not in proc.stderr


def test_the_reports_app_table_quotes_the_run_time_and_marks_a_whole_second_clock():
    from types import SimpleNamespace

    from fabricbench.report.sections.apps import runs_table

    def point(metric, value, step, unit="s"):
        return Measurement(benchmark="app", params={"app": "openfoam-cavity", "ranks": 2, "nodes": 2, "size": 1},
                           metric=metric, unit=unit, value=value, detail={"resolution_s": step})

    foam = [point("fom", 0.0102, 2e-4, "s/step"), point("time", 2.0, 1.0), point(RUNTIME, 1.734, 1e-6),
            point("wall", 2.41, 1e-6)]
    table = runs_table([SimpleNamespace(name="run 1", measurements=foam)])
    headers = [c.title for c in table.columns]
    row = [str(c) for c in table.rows[0]]
    assert row[headers.index("Run time")] == "1.73" and row[headers.index("Own time")].endswith("(1.00 s clock)")
    # Without the profiler's figure, a whole-second clock is no run time at all.
    table = runs_table([SimpleNamespace(name="run 2", measurements=foam[:2] + foam[3:])])
    assert [str(c) for c in table.rows[0]][headers.index("Run time")] == "-"


def test_time_a_loaded_host_added_to_mpi_calls_is_kept_not_scaled_with_the_latency():
    """A rank waiting for its core (or for a partner waiting for one) spends seconds in MPI calls
    whose messages cost milliseconds on A's model: that time is kept on B; only an overhead as
    large as the model's own cost scales with B's latency (a profile at load 17 was predicted 6x
    slower on a fabric with 7x the latency when all of it scaled)."""
    from fabricbench.analysis.peaks import get_fabric
    from fabricbench.models.fabric import catalogue_models
    from fabricbench.models.predict import predict

    a, b = catalogue_models(get_fabric("eth10g")), catalogue_models(get_fabric("eth1g"))
    assert b[0].small_latency_us > 2 * a[0].small_latency_us
    prof = synthetic_profile(comm_s=4.0, size=64, count=1000)  # 4 s for 2000 calls of 8 and 64 B
    p = predict(prof, a[0], b)
    # B's cost of 1000 messages and 1000 allreduces is well under 0.5 s: the seconds above A's model stay seconds.
    assert p.measured_s < p.predicted_s < p.measured_s + 0.5
    assert p.low_s <= p.predicted_s <= p.high_s < p.measured_s + 1.0


def test_check_cautions_when_the_measured_run_saw_another_load_than_the_profiles(cli, db_path):
    db = open_db(str(db_path))
    runs = _profile_runs(db, [4.0, 6.0], {"fabric": "1gbe"})
    for run, load in zip(runs, (2.0, 3.0)):
        db.update_run(run.id, provenance=dict(run.provenance or {}, host_load={"loadavg_1m": load, "cpus": 2}))
    inside = _measured_app_run(db, 7.5, {"fabric": "ddr"})
    busier = _measured_app_run(db, 9.0, {"fabric": "ddr"})
    for run, load in ((inside, 2.5), (busier, 12.0)):
        db.update_run(run.id, provenance={"host_load": {"loadavg_1m": load, "cpus": 2}})
    calm = json.loads(cli("predict", str(runs[0].id), "--on", "ddr", "--json", "--check", str(inside.id)).stdout)
    assert calm["band"]["profiles_load_1m"] == [2.0, 3.0] and calm["check"]["notes"] == []
    text = cli("predict", str(runs[0].id), "--on", "ddr", "--check", str(busier.id)).stdout
    assert f"caution: run {busier.id} started at load 12.00, the profiles at 2.00 .. 3.00" in text


def test_a_scaling_repetition_stores_each_figures_step_as_printed():
    import re

    from fabricbench.workflows.scaling import RepetitionResult, figure_step, parse_figure

    out = "ExecutionTime = 0.52 s  ClockTime = 2 s\nExecutionTime = 0.61 s  ClockTime = 3 s\n"
    clock = re.compile(r"ClockTime = ([0-9.]+) s")
    assert parse_figure(clock, out) == 3.0 and figure_step(clock, out) == 1.0
    assert figure_step(re.compile(r"ExecutionTime = ([0-9.]+) s"), out) == pytest.approx(0.01)
    assert figure_step(clock, "nothing printed") is None
    result = RepetitionResult(True, 3.4, {"time": 3.0, "fom": 0.0102}, 0, resolution={"time": 1.0, "fom": 2e-4})
    from types import SimpleNamespace

    from fabricbench.workflows.scaling import measurements_of

    point = SimpleNamespace(nodes=2, ranks=2, ppn=1)
    spec = SimpleNamespace(metrics=["time", "fom"], higher_is_better=False, unit=lambda m: "s")
    steps = {m.metric: m.detail["resolution_s"] for m in measurements_of(point, 1, result, spec)}
    assert steps == {"time": 1.0, "fom": 2e-4}


def test_the_band_is_a_prediction_interval_for_one_run_at_its_level():
    """Run times that stretch by a factor (a loaded host): from 5 runs, the band holds the next run
    about as often as its level says; a 1-sigma band (or the 5 runs' range) would hold it 2 times in 3."""
    import math
    import random

    from fabricbench.models.predict import interval_factor

    rng = random.Random(31)
    for level in (0.9, 0.95):
        held = 0
        for _ in range(2000):
            runs = [math.exp(rng.gauss(3.4, 0.4)) for _ in range(6)]
            iv = interval_factor(runs[:5], level)
            held += iv["centre_s"] / iv["factor"] <= runs[5] <= iv["centre_s"] * iv["factor"]
        assert abs(held / 2000 - level) < 0.025, (level, held)
    assert interval_factor([4.0]) is None and interval_factor([4.0, 4.0])["factor"] == 1.0


def test_a_higher_level_widens_the_band(cli, db_path):
    from fabricbench.models.predict import predict_case
    from fabricbench.report.words.models import format_prediction, prediction_json

    db = open_db(str(db_path))
    runs = _profile_runs(db, [4.0, 8.0, 6.0, 5.0, 7.0], {"fabric": "1gbe"})
    p = predict_case(db, str(runs[0].id), on="ddr")[0]
    at90 = prediction_json(p)
    at99 = json.loads(cli("predict", str(runs[0].id), "--on", "ddr", "--json", "--level", "0.99").stdout)
    assert at90["band"]["interval"]["level"] == 0.9 and at90["band"]["interval"]["n"] == 5
    assert at99["band"]["interval"]["level"] == 0.99
    assert at99["low_s"] < at90["low_s"] < at90["predicted_s"] < at90["high_s"] < at99["high_s"]
    assert "profiles_spread" in [a["kind"] for a in at90["assumption_findings"]]
    assert "a 90% prediction interval for one run" in " ".join(at90["assumptions"])
    assert "90% interval for one run from 5 profiles" in "\n".join(format_prediction(p))
