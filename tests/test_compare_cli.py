"""compare, baseline, check, history and lint from the command line, on a real database; fabric tags; schema 3."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import fabricbench
from fabricbench.cli import main
from fabricbench.store import Measurement
from fabricbench.store.schema import SCHEMA_VERSION

DATA = Path(__file__).resolve().parent / "data" / "import"
SIZES = [1 << k for k in range(10, 23)]  # 1K .. 4M


def bw_points(rng, scale=1.0, sizes=SIZES, n=150):
    out = []
    for size in sizes:
        x = 9000.0 * size / (size + 16384.0) * (scale if size >= 65536 else 1.0) * rng.lognormal(0, 0.04, n)
        q = np.percentile(x, np.arange(101))
        out.append(Measurement("bw", {"size": size, "ranks": 2, "window": 64, "peers": [0, 1], "cache": "warm"},
                               "bandwidth", "MB/s", value=float(np.median(x)), n=n, min=float(x.min()),
                               median=float(np.median(x)), mean=float(x.mean()), p99=float(q[99]), max=float(x.max()),
                               stdev=float(x.std(ddof=1)), detail={"sketch": {"q": [float(v) for v in q]}}))
    return out


class InProcess:
    """The command line in this process (fast); returns what `cli` does: returncode, stdout, stderr."""

    def __init__(self, db):
        self.db = str(db)

    def __call__(self, *args, check=True):
        res = CliRunner().invoke(main, ["--db", self.db, *args], catch_exceptions=False)
        res.returncode = res.exit_code
        res.text = " ".join(res.stdout.split())  # rich wraps at 80 columns here; read it as one line
        if check and res.exit_code != 0:
            raise AssertionError(f"fabricbench {' '.join(args)} exited {res.exit_code}\n{res.output}")
        return res


@pytest.fixture
def fb(db_path):
    return InProcess(db_path)


@pytest.fixture
def runs(db_path):
    """A healthy baseline, another healthy run, a run after the link lost half its bandwidth, an unrelated run."""
    rng = np.random.default_rng(21)
    store = fabricbench.open_db(str(db_path))
    prov = {"nodes": 2, "ranks": 2, "ppn": 1, "hosts": ["n1", "n2"], "mpi_library": "Open MPI 4.1"}
    ids = [store.save_run(bw_points(rng, scale), kind="benchmark", label=label, tags={"fabric": "edr"}, provenance=prov, ranks=2).id
           for label, scale in (("before", 1.0), ("again", 1.0), ("degraded", 0.5))]
    other = store.save_run([Measurement("allreduce", {"size": 8, "ranks": 4}, "latency", "us", value=3.0)], label="other")
    store.close()
    return ids + [other.id]


def test_check_exits_1_naming_the_points_that_got_worse(fb, runs):
    before, again, degraded, other = runs
    assert "baseline 'edr-ok' = run 1" in fb("baseline", "set", "edr-ok", str(before), "--note", "after maintenance").stdout
    ok = fb("check", str(again), "--against", "edr-ok", check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "OK: nothing significantly worse than baseline 'edr-ok'" in ok.stdout
    bad = fb("check", str(degraded), "--against", "edr-ok", check=False)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    worse = [line for line in bad.stdout.splitlines() if line.startswith("worse: ")]
    assert [" ".join(w.split()[3:5]).rstrip(":") for w in worse] == ["64 KiB", "128 KiB", "256 KiB", "512 KiB", "1 MiB", "2 MiB", "4 MiB"]
    assert "bw bandwidth 4 MiB: B is" in bad.stdout and "FAIL: 7 point(s)" in bad.stdout
    data = json.loads(fb("check", str(degraded), "--against", "edr-ok", "--json", check=False).stdout)
    assert data["ok"] is False and len(data["worse"]) == 7 and data["baseline"]["note"] == "after maintenance"
    # a threshold above the drop lets it pass
    assert fb("check", str(degraded), "--against", "edr-ok", "--min-effect", "60", check=False).returncode == 0
    # a baseline of replicate runs: their spread is the run-to-run noise check allows for
    fb("baseline", "set", "edr-two", str(before), str(again))
    rep = json.loads(fb("check", str(degraded), "--against", "edr-two", "--json", check=False).stdout)
    assert rep["ok"] is False and rep["a_runs"] == [before, again] and len(rep["worse"]) == 7
    assert rep["series"][0]["noise_from"] == "replicates"
    assert fb("check", f"{again}", "--against", "edr-two", check=False).returncode == 0
    nothing = fb("check", str(other), "--against", "edr-ok", check=False)
    assert nothing.returncode == 2 and "share no point" in nothing.stderr and "bw bandwidth only in A" in nothing.stderr
    unknown = fb("check", str(again), "--against", "nope", check=False)
    assert unknown.returncode == 1 and "no baseline 'nope'" in unknown.stderr and "edr-ok" in unknown.stderr


def test_baseline_list_and_replace(fb, runs):
    assert "no baselines yet" in fb("baseline", "list").stdout
    fb("baseline", "set", "edr", str(runs[0]))
    assert "(was run 1)" in fb("baseline", "set", "edr", str(runs[1])).stdout
    listed = json.loads(fb("baseline", "list", "--json").stdout)
    assert [(b["name"], b["run_ids"], b["runs"][0]["label"]) for b in listed] == [("edr", [runs[1]], "again")]
    assert "baseline 'edr' = runs 1, 2 (was run 2)" in fb("baseline", "set", "edr", str(runs[0]), str(runs[1])).stdout
    assert "again" in fb("baseline", "list").stdout
    assert fb("baseline", "set", "x", "999", check=False).returncode == 1


def test_compare_says_no_significant_difference_for_a_repeat(fb, runs):
    out = fb("compare", str(runs[0]), str(runs[1])).stdout
    assert "Overall: no significant difference between A and B at 13 points" in out
    assert "B / A" in out and "95% CI" in out and "not significant" in out
    out = fb("compare", str(runs[0]), str(runs[2])).stdout
    assert "B is 50% worse at 7 of 13 sizes" in out or "B is 2" in out
    out = fb("compare", f"{runs[0]},{runs[1]}", str(runs[2])).text
    assert "A = runs 1, 2 (before, 2 replicates)" in out and "B is" in out


def test_history_table_and_plot(cli, runs, tmp_path):
    plot = tmp_path / "h.svg"
    out = cli("history", "--benchmark", "bw", "--size", "4M", "--tag", "fabric=edr", "-o", str(plot)).stdout
    assert "bw 4 MiB: bandwidth (MB/s) across 3 runs" in out
    assert "first" in out and "not significant (x" in out and "2x worse (x0.5)" in out
    assert plot.read_text().startswith("<?xml") and "<svg" in plot.read_text()
    data = json.loads(cli("history", "--benchmark", "bw", "--size", "4M", "--json").stdout)
    assert [r["label"] for r in data["rows"]] == ["before", "again", "degraded"]
    assert data["rows"][2]["vs_first"]["verdict"] == "worse" and data["rows"][1]["vs_first"]["verdict"] != "worse"
    # the figure of record of bandwidth: the rate over all iterations, with its CI from the window times
    row = data["rows"][0]
    assert row["statistic"] == "rate" and row["ci"][0] < row["value"] < row["ci"][1]
    assert "(rate)" in out
    none = cli("history", "--benchmark", "bw", "--size", "3", check=False)
    assert none.returncode == 2 and "no run has bw at 3" in none.stderr


def test_lint_names_missing_ci_and_missing_base_case_on_an_incomplete_import(fb, tmp_path):
    lines = (DATA / "osu_latency.txt").read_text().splitlines()
    partial = tmp_path / "osu_latency_partial.txt"  # the small sizes cut off, as a copy-paste from a paper might be
    partial.write_text("\n".join(ln for ln in lines if not ln[:1].isdigit() or int(ln.split()[0]) >= 1024) + "\n")
    run = json.loads(fb("import", str(partial), "--json").stdout)[0]["run"]
    out = fb("lint", str(run), check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "VIOLATION spread (SC15 rule 5), run 1: 13 of 13 points" in out.text and "single numbers with no spread or confidence interval" in out.text
    assert "VIOLATION base-case (SC15 rule 1)" in out.text and "no base case for latency from 1 KiB" in out.text
    assert "--sizes 0:4M" in out.text and "OSU -f" in out.text  # how to fix
    data = json.loads(fb("lint", str(run), "--json", check=False).stdout)
    assert {"spread", "base-case"} <= {f["rule"] for f in data["findings"]}
    # collectives from a file that does not say how many ranks ran them
    coll = json.loads(fb("import", str(DATA / "osu_collectives_full.txt"), "--json").stdout)[0]["run"]
    out = fb("lint", str(coll), check=False).text
    assert "rank count not recorded for allreduce" in out and "--ranks N" in out


def test_lint_passes_what_is_right(fb, runs):
    data = json.loads(fb("lint", str(runs[0]), "--json", check=False).stdout)
    assert {"spread", "base-case", "rates", "peak"} <= set(data["passed"])


def test_unknown_fabric_tags_are_refused_with_close_names(fb):
    out = fb("import", str(DATA / "osu_latency.txt"), "--tag", "fabric=ehr", check=False)
    assert out.returncode == 2 and "unknown fabric 'ehr'" in out.stderr and "edr" in out.stderr
    out = fb("run", "latency", "--tag", "fabric=lab1gig", check=False)
    assert out.returncode == 2 and "unknown fabric" in out.stderr
    for ok in ("shm", "lab-1g", "lab-500m", "lab", "edr", "hdr-2x"):
        assert fb("import", str(DATA / "osu_latency.txt"), "--tag", f"fabric={ok}", check=False).returncode == 0, ok
    shm = next(f for f in json.loads(fb("fabrics", "--json").stdout) if f["key"] == "shm")
    assert shm["data_rate_MBps"] == 0 and "vader" in shm["aliases"]


def test_migration_from_version_2_adds_baselines(db_path, fb):
    store = fabricbench.open_db(str(db_path))
    store.save_run([Measurement("latency", {"size": 8}, "latency", "us", value=1.0)], label="old")
    store.close()
    con = sqlite3.connect(db_path)
    con.executescript("DROP TABLE baselines; UPDATE schema_version SET version = 2;")
    con.close()
    refused = fb("baseline", "list", check=False)
    assert refused.returncode == 1 and "fabricbench db migrate" in refused.stderr
    assert f"from schema version 2 to {SCHEMA_VERSION}" in fb("db", "migrate").stdout
    assert "baseline 'old' = run 1" in fb("baseline", "set", "old", "1").stdout
