"""Scaling analysis: statistics, efficiency definitions, comparisons, thresholds; seed 004 imported
from its CSV reproduces the published story; malformed CSVs are refused with file and line."""
import json
import math
from pathlib import Path

import pytest

from fabricbench.analysis import scaling as sc
from fabricbench.store import Measurement, open_db
from fabricbench.report.words.scaling import error_text, threshold_note

DATA = Path(__file__).parent / "data" / "scaling"
SEED004 = DATA / "seed004_lsdyna.csv"

# Seed 004 (Cisco, LS-DYNA on GigE vs DDR InfiniBand), Tables 1 and 2: seconds at 8 and 16 nodes.
PUBLISHED = {
    ("three-car", "gige"): {8: 10732, 16: 14273},
    ("three-car", "ddr"): {8: 6344, 16: 3761},
    ("neon-refined", "gige"): {8: 1276, 16: 5106},
    ("neon-refined", "ddr"): {8: 558, 16: 398},
}


def rep(nodes, value, repetition=1, metric="time", unit="s", ok=True, ranks=None, **detail):
    return Measurement(
        benchmark="scale",
        params={"nodes": nodes, "ranks": ranks or nodes, "ppn": 1, "repetition": repetition, "size": None},
        metric=metric,
        unit=unit,
        value=value if ok else None,
        n=1,
        detail={"status": "ok" if ok else "failed", **({} if ok else {"reason": "exit status 3: boom"}), **detail},
    )


def series_of(values, **kw):
    """{nodes: [values]} -> ScalingSeries."""
    items = [rep(n, v, i + 1) for n, vs in values.items() for i, v in enumerate(vs)]
    return sc.build_series(items, kw.pop("name", "s"), **kw)


# ---- statistics ------------------------------------------------------------------------------


def test_point_statistics_and_student_t_interval():
    s = series_of({1: [10.0, 12.0, 11.0], 2: [6.0]})
    p = s.point(1)
    assert (p.n, p.mean, p.min, p.max) == (3, 11.0, 10.0, 12.0)
    assert p.stdev == pytest.approx(1.0)
    # t(0.975, 2) = 4.303: half width 4.303 * 1 / sqrt(3)
    assert p.ci_half == pytest.approx(4.303 / math.sqrt(3), rel=1e-3)
    single = s.point(2)
    assert single.n == 1 and single.ci_low is None and single.stdev is None


def test_failed_repetitions_are_listed_and_left_out_of_the_mean():
    items = [rep(1, 10.0, 1), rep(1, 12.0, 2), rep(1, None, 3, ok=False), rep(2, 6.0, 1)]
    s = sc.build_series(items, "s")
    p = s.point(1)
    assert p.n == 2 and p.mean == 11.0 and p.failed == 1
    assert [(f.scale, f.repetition, f.reason) for f in s.failures] == [(1, 3, "exit status 3: boom")]


# ---- efficiency -----------------------------------------------------------------------------


def test_strong_scaling_speedup_and_efficiency():
    s = series_of({1: [100.0], 2: [55.0], 4: [30.0]})
    eff = {e.scale: e for e in sc.efficiency(s)}
    assert eff[1].speedup == 1 and eff[1].efficiency == 1
    assert eff[2].speedup == pytest.approx(100 / 55) and eff[2].efficiency == pytest.approx(100 / 110)
    assert eff[4].efficiency == pytest.approx(1 * 100 / (4 * 30))
    # A chosen baseline: relative to 2 nodes, as the seeds normalise to 4 or 8 nodes.
    eff2 = {e.scale: e for e in sc.efficiency(s, baseline=2)}
    assert eff2[2].efficiency == 1 and eff2[4].efficiency == pytest.approx(2 * 55 / (4 * 30))
    assert eff2[1].efficiency == pytest.approx(2 * 55 / (1 * 100))


def test_weak_scaling_and_rate_like_figures_of_merit():
    weak = series_of({1: [10.0], 4: [12.5]}, weak=True)
    assert sc.efficiency(weak)[1].efficiency == pytest.approx(0.8)
    assert sc.efficiency(weak)[1].speedup == pytest.approx(3.2)  # scaled speedup
    items = [rep(1, 100.0, metric="fom", unit="Mcells/s", higher_is_better=True),
             rep(4, 300.0, metric="fom", unit="Mcells/s", higher_is_better=True)]
    fom = sc.build_series(items, "f")
    assert fom.higher_is_better and fom.unit == "Mcells/s"
    assert sc.efficiency(fom)[1].efficiency == pytest.approx(0.75)
    assert sc.efficiency(fom)[1].speedup == pytest.approx(3.0)


def test_baseline_must_be_a_measured_scale():
    s = series_of({1: [10.0], 2: [6.0]})
    with pytest.raises(sc.ScalingAnalysisError) as caught:
        sc.efficiency(s, baseline=8)
    assert error_text(caught.value) == "baseline 8 nodes is not a measured scale of s (scales: 1, 2)"


def test_axis_is_ranks_when_nodes_do_not_vary():
    items = [rep(1, 10.0, ranks=1), rep(1, 6.0, ranks=2), rep(1, 4.0, ranks=4)]
    s = sc.build_series(items, "local")
    assert s.axis == "ranks" and s.scales == [1, 2, 4]


# ---- comparisons, model, threshold ----------------------------------------------------------


def test_relative_performance_in_both_directions():
    a = series_of({8: [10.0, 10.2, 9.8], 16: [12.0, 12.1, 11.9]}, name="gige", tags={"fabric": "gige"})
    b = series_of({8: [5.0, 5.1, 4.9], 16: [3.0, 3.05, 2.95]}, name="ib", tags={"fabric": "ib"})
    rel = {p.scale: p for p in sc.relative_performance(a, b)}
    assert rel[8].ratio == pytest.approx(2.0) and rel[8].percent_faster == pytest.approx(100)
    assert rel[8].time_saved == pytest.approx(50) and rel[8].significant is True
    assert rel[16].ratio == pytest.approx(4.0)
    study = sc.analyse([a, b])
    assert study.comparisons[0].compare_by == "fabric" and study.comparisons[0].a == "gige"


def test_model_and_predicted_threshold_scale():
    # t = 1 + 64/p: efficiency N0 t0 / (N t) = 65 / (p + 64) with N0 = 1 -> below 0.7 past p = 28.86
    s = series_of({p: [1 + 64 / p] for p in (1, 2, 4, 8, 16)})
    sa = sc.analyse_series(s, threshold=0.7)
    assert (sa.model.term.i, sa.model.term.j) == (-1, 0)
    assert sa.threshold.measured_scale is None
    assert sa.threshold.predicted_scale == pytest.approx(65 / 0.7 - 64, rel=1e-3)
    assert sa.threshold.predicted_at == 29
    too_few = sc.analyse_series(series_of({8: [1.0], 16: [0.9]}))
    assert too_few.model is None and "3 or more scales" in too_few.model_note
    assert threshold_note(sa.threshold, s) == "" and threshold_note(too_few.threshold, too_few.series) == "no model to extrapolate"
    ideal = series_of({p: [10.0 / p] for p in (1, 2, 4, 8)})  # never below the threshold: said with the limit searched
    assert threshold_note(sc.analyse_series(ideal).threshold, ideal) == "the model stays above 70% up to 1048576 nodes"


# ---- seed 004 through the command line -------------------------------------------------------


def expected_seed004():
    out = {}
    for case in ("three-car", "neon-refined"):
        g, d = PUBLISHED[(case, "gige")], PUBLISHED[(case, "ddr")]
        out[case] = {
            "gige_eff16": 8 * g[8] / (16 * g[16]),
            "ddr_eff16": 8 * d[8] / (16 * d[16]),
            "faster8": g[8] / d[8],
            "faster16": g[16] / d[16],
        }
    return out


def test_seed004_csv_holds_the_published_numbers():
    rows = [ln.split(",") for ln in SEED004.read_text().splitlines() if ln and not ln.startswith("#")][1:]
    table = {(r[0], r[1], int(r[2])): float(r[5]) for r in rows}
    assert table == {(c, f, n): v for (c, f), by in PUBLISHED.items() for n, v in by.items()}
    assert (Path(__file__).parents[1] / "examples" / "seed004_lsdyna.csv").read_text() == SEED004.read_text()


def test_seed004_imported_tells_the_papers_story(cli, db_path):
    out = cli("import-scaling", str(SEED004))
    assert "imported 4 series" in out.stdout
    db = open_db(str(db_path))
    runs = db.list_runs(kind="scaling")
    assert len(runs) == 4 and all(r.status == "complete" for r in runs)
    assert {tuple(sorted(r.tags.items())) for r in runs} == {
        (("case", c), ("fabric", f)) for c, f in PUBLISHED
    }
    ids = [str(r.id) for r in runs]
    data = json.loads(cli("scaling-report", *ids, "--baseline", "8", "--format", "json").stdout)
    by_name = {(s["tags"]["case"], s["tags"]["fabric"]): s for s in data["series"]}
    exp = expected_seed004()
    for case, e in exp.items():
        gige, ddr = by_name[(case, "gige")], by_name[(case, "ddr")]
        eff = lambda s, n: next(p["efficiency"] for p in s["points"] if p["nodes"] == n)  # noqa: E731
        assert eff(gige, 8) == 1 and eff(ddr, 8) == 1
        assert eff(gige, 16) == pytest.approx(e["gige_eff16"])
        assert eff(ddr, 16) == pytest.approx(e["ddr_eff16"])
        sp = next(p["speedup"] for p in gige["points"] if p["nodes"] == 16)
        assert sp < 1  # GigE gets slower from 8 to 16 nodes
        (comp,) = [c for c in data["comparisons"] if c["group"] == {"case": case}]
        assert comp["compare_by"] == "fabric" and comp["a"].endswith("gige") and comp["b"].endswith("ddr")
        ratio = {p["scale"]: p["ratio"] for p in comp["points"]}
        assert ratio[8] == pytest.approx(e["faster8"]) and ratio[16] == pytest.approx(e["faster16"])
        assert all(p["n"] == 3 for s in (gige, ddr) for p in s["points"])  # three runs averaged
    # The published figures, as the text tables print them.
    assert round(exp["three-car"]["gige_eff16"], 2) == 0.38 and round(exp["three-car"]["ddr_eff16"], 2) == 0.84
    assert round(exp["three-car"]["faster8"], 2) == 1.69 and round(exp["three-car"]["faster16"], 2) == 3.80
    assert round(exp["neon-refined"]["gige_eff16"], 2) == 0.12 and round(exp["neon-refined"]["ddr_eff16"], 2) == 0.70
    assert round(exp["neon-refined"]["faster8"], 2) == 2.29 and round(exp["neon-refined"]["faster16"], 2) == 12.83
    text = cli("scaling-report", *ids, "--baseline", "8").stdout
    for figure in ("0.38", "0.84", "0.12", "0.70", "1.69x", "3.80x", "2.29x", "12.83x", "Relative performance by fabric"):
        assert figure in text, figure
    md = cli("scaling-report", *ids, "--format", "markdown").stdout
    assert "| 16 | 64 | 3 | 14,273.0 |" in md and "3.80x" in md  # the one number formatter: one decimal from 100 to 1e5


def test_scaling_report_html_with_plots(cli, db_path, tmp_path):
    cli("import-scaling", str(SEED004), "--tag", "site=cisco")
    out = tmp_path / "seed004.html"
    cli("scaling-report", "1", "2", "3", "4", "-o", str(out))
    html = out.read_text()
    assert html.count("<img") == 4 and "Relative performance by fabric" in html and "12.83x" in html
    assert "site" in json.dumps(open_db(str(db_path)).get_run(1).tags)


# ---- import errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        ("nodes,time,fabric\n8,100,gige\n16,abc,gige\n", ":3: column 'time': 'abc' is not a number"),
        ("nodes,time\n8,100\n16\n", ":3: 1 fields, the header has 2"),
        ("# a comment\n\nnodes,time\n8,100\n2.5,50\n", ":5: column 'nodes': '2.5' is not a whole number"),
        ("nodes,time\n8,-4\n", ":2: column 'time': '-4' must be greater than 0"),
        ("fabric,time\ngige,4\n", ":1: no 'nodes' or 'ranks' column"),
        ("nodes,fabric\n8,gige\n", ":1: no 'time' or 'fom' column"),
        ("nodes,time\n", "a header but no rows"),
    ],
)
def test_malformed_csv_names_file_and_line_and_stores_nothing(cli, db_path, tmp_path, body, message):
    bad = tmp_path / "bad.csv"
    bad.write_text(body)
    proc = cli("import-scaling", str(bad), check=False)
    assert proc.returncode == 1
    assert str(bad) in proc.stderr and message in proc.stderr.replace("\n", "")
    assert open_db(str(db_path)).list_runs() == []


def test_csv_with_repetitions_fom_and_labels(cli, db_path, tmp_path):
    f = tmp_path / "fom.csv"
    f.write_text(
        "label,nodes,ranks,fom,fabric\n"
        'app,1,4,"1,000",edr\napp,1,4,1100,edr\napp,2,8,1900,edr\napp,2,8,2000,edr\n'
    )
    out = json.loads(cli("import-scaling", str(f), "--fom-unit", "Mcells/s", "--json").stdout)
    assert len(out) == 1 and out[0]["label"] == "app" and out[0]["tags"] == {"fabric": "edr"}
    data = json.loads(cli("scaling-report", str(out[0]["id"]), "--format", "json").stdout)
    (s,) = data["series"]
    assert s["metric"] == "fom" and s["unit"] == "Mcells/s" and s["higher_is_better"] is True
    p1, p2 = s["points"]
    assert (p1["n"], p1["mean"], p1["ppn"]) == (2, 1050.0, 4)
    assert p2["efficiency"] == pytest.approx((1950 / 2) / 1050)
