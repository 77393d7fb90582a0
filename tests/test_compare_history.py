"""Run-to-run noise from stored runs of the same configuration (compare's history), on a real database.

The runs are built through the Store as `run --repeat 3` stores them: every point merged from
3 launches (``detail.launches``). The host's state holds for a whole run, so the launches of one
run agree while identical runs differ by more; the history shows that, the launches cannot.
One test measures real runs with the engine (2 ranks, tiny budget) to see the history found.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import skip_unless
from test_compare_cli import InProcess

import fabricbench
from fabricbench.store import Measurement

SIZES = [1 << k for k in range(0, 13)]  # 1 B .. 4 KiB
PROV = {"nodes": 1, "ranks": 2, "ppn": 2, "hosts": ["vm"], "mpi_library": "Open MPI 4.1", "repeat": 3,
        "launch": ["mpirun", "-np", "2", "fabricbench-mpi"]}


def latency_point(size, rng, level, launch_sd=0.003, n=400):
    """A latency point merged from 3 launches that share the run's level (its host state)."""
    true = (0.3 + size / 8000.0) * level
    launches = [true * rng.lognormal(0.0, launch_sd) * rng.lognormal(0.0, 0.02, n) for _ in range(3)]
    x = np.concatenate(launches)
    q = np.percentile(x, np.arange(101))
    return Measurement("latency", {"size": size, "ranks": 2, "peers": [0, 1]}, "latency", "us", value=float(x.mean()),
                       n=len(x), min=float(x.min()), median=float(np.median(x)), mean=float(x.mean()),
                       p99=float(q[99]), max=float(x.max()), stdev=float(x.std(ddof=1)),
                       detail={"sketch": {"q": [float(v) for v in q]},
                               "launches": [{"median": float(np.median(lx)), "value": float(lx.mean()), "n": n}
                                            for lx in launches]})


def save(store, rng, level, label, prov=PROV, tags=None, status="complete"):
    run = store.save_run([latency_point(s, rng, level) for s in SIZES], kind="benchmark", label=label,
                         tags=tags or {}, provenance=dict(prov), ranks=2, status=status)
    return run.id


@pytest.fixture
def fb(db_path):
    return InProcess(db_path)


@pytest.fixture
def stored(db_path):
    """8 earlier runs whose whole curves sit 2.5% apart from run to run (launches agree within 0.3%),
    then A, B 4% faster than A (one more such state), C at half A's speed."""
    rng = np.random.default_rng(7)
    store = fabricbench.open_db(str(db_path))
    levels = [1.0, 1.03, 0.975, 1.02, 0.99, 1.035, 0.97, 1.01]
    history = [save(store, rng, lv, f"h{i}") for i, lv in enumerate(levels)]
    a = save(store, rng, 1.02, "A")
    b = save(store, rng, 0.98, "B")
    c = save(store, rng, 2.0, "C")
    store.close()
    return history, a, b, c


def compare(fb, *args):
    return json.loads(fb("compare", *map(str, args), "--json").stdout)


def flagged(data):
    return [(s["definition"], p["size"]) for s in data["series"] for p in s["points"]
            if p["verdict"] in ("better", "worse")]


def test_history_shows_the_run_level_noise_the_launches_hide(fb, stored):
    history, a, b, _c = stored
    alone = json.loads(fb("compare", str(a), str(b), "--json", "--no-history").stdout)
    assert alone["noise_from"] == "launches" and alone["history_runs"] == 0 and alone["history_ignored"]
    assert len(flagged(alone)) >= 10, alone["series"][0]["summary"]  # launches agree: a 4% shift is "significant"
    assert "from the spread between each run's launches" in alone["noise_note"] and "--no-history" in alone["noise_note"]
    data = compare(fb, a, b)
    assert flagged(data) == [], data["series"][0]["summary"]
    s = data["series"][0]
    assert data["noise_from"] == s["noise_from"] == "history" and data["history_runs"] == s["history_runs"] == 8
    assert data["history"]["used"] == history
    assert 0.015 < s["run_level_noise"] < 0.06 and s["launch_noise"] < 0.01
    assert "run-to-run noise about" in s["summary"] and "(from 8 earlier runs of the same configuration)" in s["summary"]
    out = fb("compare", str(a), str(b)).text
    assert "Overall: no significant difference between A and B at 13 points" in out
    assert "Run-to-run noise: from 8 earlier runs of the same configuration (runs 1-8)" in out
    out = fb("compare", str(a), str(b), "--no-history").text
    assert "B is worse at 0 and better at" in out and "identical runs made at different times can differ by more" in out


def report_comparison(fb, db_path, out, a, b, data):
    """`report A B -o out`'s comparison section, checked against `compare A B --json` (`data`): the same
    verdict at every point (the report's comparisons, read back through its own loader), the same counts,
    noise and points called different in the written text. Returns the section's text."""
    from fabricbench.numbers import exact_binary_size as size_label
    from fabricbench.cli.report import given_for
    from fabricbench.report.context import ReportContext

    store = fabricbench.open_db(str(db_path))
    runs = store.load_runs([a, b])
    comp = ReportContext(runs, given=given_for(runs)).comparison(runs[1])
    store.close()
    assert [(s.definition, p.size, p.verdict) for s in comp.series for p in s.points] == \
        [(s["definition"], p["size"], p["verdict"]) for s in data["series"] for p in s["points"]]
    from fabricbench.report.words.compare import noise_note

    assert noise_note(comp) == data["noise_note"] and comp.history_runs == data["history"]["used"]
    fb("report", str(a), str(b), "-o", str(out), "--format", "markdown")
    text = out.read_text()
    text = text[text.index("## Comparison"):].split("\n## ", 1)[0]
    points = [p for s in data["series"] for p in s["points"]]
    row = [line for line in text.splitlines() if line.startswith(f"| {runs[1].name} |")][0].split(" | ")
    counts = [sum(p["verdict"] in v for p in points) for v in (("worse",), ("better",), (
        "no significant difference", "below threshold", "isolated", "host changed", "host busy"))]
    assert [int(c) for c in row[1:4]] == counts, row
    for s in data["series"]:
        if "run-to-run noise about" in s["summary"]:
            assert "run-to-run noise about" + s["summary"].split("run-to-run noise about")[1] in text
    assert data["noise_note"] in text
    called = [p for p in points if p["verdict"] in ("worse", "better")]
    listed = text.split("Points called different:")[1].strip().split("\n\n")[0].splitlines() if called else []
    assert "Points called different:" in text if called else "Points called different:" not in text
    assert [line.split(": ")[0].rsplit(" ", 2)[1:] for line in listed] == \
        [size_label(p["size"]).split(" ") for s in data["series"] for p in s["points"] if p in called]
    assert [line.split(": ")[1].split(" (")[0].split(" is ")[1] for line in listed] == \
        [p["text"].split(" is ")[1] for s in data["series"] for p in s["points"] if p in called]
    return text


def test_the_report_compares_with_the_same_history(fb, stored, db_path, tmp_path):
    history, a, b, c = stored
    data = compare(fb, a, b)
    text = report_comparison(fb, db_path, tmp_path / "ab.md", a, b, data)
    # identical configuration, a 4% shift as identical runs here show: nothing called, as compare says
    assert "Run-to-run noise: from 8 earlier runs of the same configuration (runs 1-8)" in text
    assert "(from 8 earlier runs of the same configuration)" in text and "between launches only" not in text
    assert "Points called different" not in text and flagged(data) == []
    assert len(flagged(json.loads(fb("compare", str(a), str(b), "--json", "--no-history").stdout))) >= 10
    # report --no-history compares as compare --no-history does, and says so
    fb("report", str(a), str(b), "-o", str(tmp_path / "alone.md"), "--format", "markdown", "--no-history")
    alone = (tmp_path / "alone.md").read_text()
    assert "Stored runs of the same configuration were not looked at (--no-history)" in alone
    assert "Points called different" in alone
    # a real change is still called, point by point as compare calls it (C's history holds B too)
    data = compare(fb, a, c)
    text = report_comparison(fb, db_path, tmp_path / "ac.md", a, c, data)
    assert len(flagged(data)) == len(SIZES) and "from 9 earlier runs of the same configuration (runs 1-8, 10)" in text


def test_a_real_change_is_still_called_with_history(fb, stored):
    _history, a, _b, c = stored
    data = compare(fb, a, c)
    assert data["noise_from"] == "history"
    assert flagged(data) == [("latency", s) for s in SIZES]  # 2x slower at every size: C's own run is left out
    assert all(p["verdict"] == "worse" for p in data["series"][0]["points"])


def test_history_is_only_earlier_replicates_of_each_side(fb, stored, db_path):
    history, a, b, c = stored
    rng = np.random.default_rng(8)
    store = fabricbench.open_db(str(db_path))
    tcp = save(store, rng, 1.0, "tcp", prov=dict(PROV, launch=["mpirun", "-np", "2", "--mca", "btl", "tcp,self",
                                                              "fabricbench-mpi"]))
    tagged = save(store, rng, 1.0, "tagged", tags={"fabric": "shm"})
    failed = save(store, rng, 1.0, "failed", status="failed")
    later = save(store, rng, 1.0, "later")
    store.close()
    data = compare(fb, a, b)
    used = data["history"]["a"]
    assert used == data["history"]["b"] == history  # neither A nor B, nor C started after B, nor the runs above
    # compared with the run after the others: the 10 most recent of the same configuration before it
    data = compare(fb, history[0], later)
    assert data["history"]["a"] == data["history"]["b"] == history[1:] + [a, b, c]
    # a side of another configuration finds its own replicates: none here
    data = compare(fb, a, tcp)
    assert data["history"]["b"] == [] and data["history"]["a"] == history + [b, c]
    # 1 stored replicate is not enough: the launches are all there is, and the note says why
    store = fabricbench.open_db(str(db_path))
    shm = [save(store, rng, 1.0, f"shm{i}", tags={"fabric": "shm"}) for i in range(2)]
    store.close()
    data = compare(fb, *shm)
    assert data["history"]["a"] == data["history"]["b"] == [tagged] and data["noise_from"] == "launches"
    assert "Only 1 other run of the same configuration is stored; 2 would be used" in data["noise_note"]


def test_imports_that_record_no_configuration_are_nobody_s_history(fb, tmp_path):
    from test_compare_cli import DATA

    ids = []
    for i in range(4):  # 4 files (an identical file is imported once)
        f = tmp_path / f"osu_latency_{i}.txt"
        f.write_text((DATA / "osu_latency.txt").read_text() + "\n" * (i + 1))
        ids.append(json.loads(fb("import", str(f), "--json").stdout)[0]["run"])
    assert len(set(ids)) == 4
    data = compare(fb, ids[2], ids[3])
    assert data["history"] == {"a": [], "b": [], "used": []} and data["noise_from"] != "history"


def test_check_fails_on_a_real_degradation_with_history(fb, stored):
    history, a, b, c = stored
    fb("baseline", "set", "vm", str(b))
    # A is 4% slower than the baseline run, as identical runs here can be: not a failure with history
    ok = fb("check", str(a), "--against", "vm", check=False)
    assert ok.returncode == 0 and "Run-to-run noise: from 8 earlier runs" in ok.text, ok.stdout
    assert fb("check", str(a), "--against", "vm", "--no-history", check=False).returncode == 1  # launches only
    bad = fb("check", str(c), "--against", "vm", check=False)
    assert bad.returncode == 1 and f"FAIL: {len(SIZES)} point(s) significantly worse" in bad.text, bad.stdout
    data = json.loads(fb("check", str(c), "--against", "vm", "--json", check=False).stdout)
    assert data["ok"] is False and data["noise_from"] == "history" and data["history_runs"] == 9  # A's too


@pytest.mark.mpi
def test_real_runs_find_their_history(cli, tmp_path):
    """4 identical engine runs: compare and the report of the last two both take the noise from the first two."""
    skip_unless("mpi", "engine")
    ids = []
    # two launches a run (not the default three): enough for the launches' spread that --no-history falls back on
    for _ in range(4):
        out = cli("run", "latency", "--np", "2", "--sizes", "8:64", "--time-budget", "0.01", "--repeat", "2")
        ids.append(int(out.stdout.split("run ")[1].split()[0]))
    other = cli("run", "latency", "--np", "2", "--sizes", "8:64", "--time-budget", "0.01", "--repeat", "2", "--tag", "fabric=shm")
    data = json.loads(cli("compare", str(ids[2]), str(ids[3]), "--json").stdout)
    assert data["noise_from"] == "history" and data["history"]["used"] == ids[:2], data["history"]
    assert "from 2 earlier runs of the same configuration" in data["series"][0]["summary"]
    assert int(other.stdout.split("run ")[1].split()[0]) not in data["history"]["a"]
    text = report_comparison(cli, cli.db, tmp_path / "r.md", ids[2], ids[3], data)
    assert f"Run-to-run noise: from 2 earlier runs of the same configuration (runs {ids[0]}-{ids[1]})" in text
    data = json.loads(cli("compare", str(ids[2]), str(ids[3]), "--json", "--no-history").stdout)
    assert data["noise_from"] == "launches" and data["history"]["used"] == []


def test_robust_run_variance_is_consistent_and_ignores_a_run_far_off():
    from fabricbench.analysis import stats

    rng = np.random.default_rng(3)
    for n in (3, 7, 11):
        est = [stats.robust_between_run_variance(rng.normal(0.0, 0.02, (20, n))) for _ in range(120)]
        assert 0.85 < np.median(est) / 0.02**2 < 1.2, n
    runs = rng.normal(0.0, 0.02, (20, 7))
    clean = stats.robust_between_run_variance(runs)
    runs[:, 3] += np.log(2.5)  # one run in a 2.5x slower state at every point
    assert stats.robust_between_run_variance(runs) < 1.5 * clean
    assert stats.between_run_variance(runs) > 20 * clean  # a plain variance is swamped by it
