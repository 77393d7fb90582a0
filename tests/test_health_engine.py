"""The engine's all-pairs benchmark and `fabricbench health` measuring for real under local mpirun.

Ranks share this machine here, so the figures are shared memory's and say nothing about a
fabric (the lab tests check the findings); these tests check the record contract: every
ordered pair measured once per metric with host names, odd and even rank counts, both
modes, retests marked, whole-matrix records, the schema, and the run stored as kind
health. Sizes and repetitions are small so the file runs in seconds.
"""
from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

import fabricbench
from fabricbench.workflows.health import CheckPlan
from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.failure import launcher_line
from fabricbench.native import engine_path

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(fabricbench.__file__).resolve().parent / "data" / "record.schema.json").read_text())
PAIR_KEYS = {"size", "ranks", "src", "dst", "rank_src", "rank_dst", "src_host", "dst_host", "direction", "mode"}


@pytest.fixture(scope="module")
def engine() -> Path:
    return engine_path()


def run_engine(engine: Path, np: int, args, timeout: float = 180):
    launcher = get_launcher("mpirun", Layout(np=np))
    proc = subprocess.run(launcher.command([str(engine), *args]), env=launcher.environment(), capture_output=True,
                          text=True, timeout=timeout)
    return proc


def records(proc):
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(line) for line in proc.stdout.splitlines() if line.strip() and not launcher_line(line)]  # Hydra's report
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for rec in recs:
        errors = list(validator.iter_errors(rec))
        assert not errors, f"{rec} breaks the record schema: {errors[0].message}"
    assert recs[0]["record"] == "run" and recs[-1]["record"] == "end"
    assert recs[-1]["points"] == len(recs) - 2
    return recs


def check_every_pair(recs, np: int, mode: str):
    points = [r for r in recs if r["record"] == "point"]
    assert {r["benchmark"] for r in points} == {"allpairs"}
    sweep = [r for r in points if "src" in r["params"] and not r["params"].get("retest")]
    seen = Counter((r["metric"], r["params"]["direction"], r["params"]["src"], r["params"]["dst"]) for r in sweep)
    expected = {(m, d, i, j) for i in range(np) for j in range(np) if i != j
                for m, d in (("bandwidth", "send"), ("bandwidth", "recv"), ("latency", "send"))}
    assert set(seen) == expected and set(seen.values()) == {1}
    hosts = recs[0]["hosts"]
    for r in sweep:
        p = r["params"]
        assert PAIR_KEYS <= set(p) and p["mode"] == mode
        assert (p["rank_src"], p["rank_dst"]) == (p["src"], p["dst"])
        assert p["src_host"] == hosts[p["src"]] and p["dst_host"] == hosts[p["dst"]]
        assert r["value"] > 0 and r["unit"] == ("MB/s" if r["metric"] == "bandwidth" else "us")
        assert r["n"] == 2 and r["value"] == r["median"] and len(r["detail"]["samples"]) == 2
    assert {r["params"]["size"] for r in sweep if r["metric"] == "latency"} == {8}
    matrices = [r for r in points if r["params"].get("scope") == "matrix"]
    assert sorted((r["metric"], r["params"]["direction"]) for r in matrices) == [
        ("bandwidth", "recv"), ("bandwidth", "send"), ("latency", "send")]
    for r in matrices:
        assert len(r["detail"]["matrix"]) == np and r["detail"]["matrix"][0][0] is None
        assert r["n"] == np * (np - 1)
    retests = [r for r in points if r["params"].get("retest")]
    assert retests and len(retests) % 3 == 0
    assert {r["params"]["retest_reason"] for r in retests} <= {"node", "slowest"}
    return points


def test_exchange_mode_with_an_odd_rank_count(engine):
    recs = records(run_engine(engine, 3, ["allpairs", "--size", "64K", "--window", "4", "--repetitions", "2",
                                          "--retest", "2"]))
    points = check_every_pair(recs, 3, "exchange")
    assert recs[0]["benchmark"] == "allpairs"
    options = recs[0]["options"]
    assert {k: options[k] for k in ("mode", "size", "repetitions", "retest", "window", "sizes")} == {
        "mode": "exchange", "size": 65536, "repetitions": 2, "retest": 2, "window": 4, "sizes": [65536]}
    assert not {"iterations", "time_budget_s", "pairs"} & set(options)  # allpairs does not take them
    assert {r["params"]["size"] for r in points if r["metric"] == "bandwidth"} == {65536}
    assert len([r for r in points if r["params"].get("retest")]) >= 3 * 2


def test_defaults_are_exchange_mode_three_repetitions_at_one_mebibyte(engine):
    recs = records(run_engine(engine, 2, ["allpairs", "--window", "2"]))
    options = recs[0]["options"]
    assert (options["mode"], options["size"], options["repetitions"], options["retest"]) == ("exchange", 1 << 20, 3, 4)
    sweep = [r for r in recs if r["record"] == "point" and "src" in r["params"] and not r["params"].get("retest")]
    assert {r["params"]["mode"] for r in sweep} == {"exchange"} and {r["n"] for r in sweep} == {3}
    assert {r["params"]["size"] for r in sweep if r["metric"] == "bandwidth"} == {1 << 20}


def test_pairs_mode_with_an_even_rank_count(engine):
    recs = records(run_engine(engine, 4, ["allpairs", "--mode", "pairs", "--size", "32K", "--window", "2",
                                          "--repetitions", "2", "--retest", "3"]))
    points = check_every_pair(recs, 4, "pairs")
    assert all(r["params"]["window"] == 2 for r in points if r["metric"] == "bandwidth")
    assert recs[0]["options"]["mode"] == "pairs"


def test_pairs_mode_with_an_odd_rank_count_rests_one_rank_per_round(engine):
    recs = records(run_engine(engine, 5, ["allpairs", "--mode=pairs", "--size", "16K", "--window", "2",
                                          "--repetitions", "2"]))
    check_every_pair(recs, 5, "pairs")


@pytest.mark.parametrize("args,message", [
    (["--sizes", "1M:1M"], "allpairs does not take --sizes (it measures bandwidth at one size: --size BYTES"),
    (["--iterations", "3"], "allpairs does not take --iterations (every pair is measured once in each of "
                            "--repetitions N sweeps"),
    (["--time-budget", "1"], "allpairs does not take --time-budget"),
    (["--pairs", "2"], "allpairs does not take --pairs (every pair is measured; --retest K"),
    (["--root", "1"], "allpairs does not take --root (it applies to bcast, reduce, gather, scatter, gatherv, scatterv)"),
    (["--mode", "ring"], "--mode: expected exchange or pairs, got 'ring'"),
    (["--size", "0"], "--size: expected a byte count of at least 1"),
    (["--repetitions", "0"], "--repetitions: expected an integer from 1 to 1000"),
    (["--retest", "-1"], "--retest: expected a positive integer"),
])
def test_options_it_does_not_take_are_usage_errors(engine, args, message):
    proc = run_engine(engine, 2, ["allpairs", *args], timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count(message) == 1 and proc.stderr.count("usage: fabricbench-mpi") == 1


@pytest.mark.parametrize("option,value", [("--mode", "pairs"), ("--size", "1M"), ("--repetitions", "3"),
                                          ("--retest", "2")])
def test_the_allpairs_options_are_refused_elsewhere(engine, option, value):
    proc = run_engine(engine, 2, ["latency", option, value], timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count(f"latency does not take {option} (it applies to allpairs)") == 1


def test_the_old_pairs_mode_subcommand_is_gone(engine):
    proc = run_engine(engine, 2, ["allpairs_pairs"], timeout=60)
    assert proc.returncode == 2 and "unknown benchmark 'allpairs_pairs'" in proc.stderr


def test_the_check_passes_its_options_to_the_engine():
    plan = CheckPlan(size=256 * 1024, repetitions=5, mode="pairs", retest=6)
    assert plan.engine_args() == ["allpairs", "--mode", "pairs", "--size", "262144", "--repetitions", "5",
                                  "--retest", "6", "--window", "64"]
    assert CheckPlan().engine_args() == ["allpairs", "--mode", "exchange", "--size", "1048576", "--repetitions", "3",
                                         "--retest", "4", "--window", "16"]
    assert plan.to_dict()["benchmark"] == "allpairs"


def test_one_rank_is_refused(engine):
    proc = run_engine(engine, 1, ["allpairs"])
    assert proc.returncode == 2 and "at least 2 ranks" in proc.stderr


def test_validate_checks_every_transfer(engine):
    recs = records(run_engine(engine, 2, ["allpairs", "--size", "4K", "--window", "2", "--repetitions", "2",
                                          "--validate"]))
    assert all(r["params"]["validate"] for r in recs if r["record"] == "point")
    proc = run_engine(engine, 2, ["allpairs", "--size", "4K", "--window", "2", "--repetitions", "2",
                                  "--inject-corruption", "1"])
    assert proc.returncode == 3 and "validation failed" in proc.stderr


def test_health_command_measures_stores_and_analyses(engine, cli):
    out = cli("health", "--np", "4", "--size", "64K", "--window", "4", "--repetitions", "2", "--retest", "2",
              "--label", "local", "--tag", "site=test", "--json", check=False)
    assert out.returncode in (0, 1), out.stderr  # shared memory under load: findings are possible, not failures
    data = json.loads(out.stdout)
    assert data["exit_status"] == out.returncode and data["verdict"].split(":")[0] in ("HEALTHY", "PROBLEMS")
    assert data["measurement"] == {"size": 65536, "direction": "recv", "mode": "exchange", "sizes": [65536], "nodes": 4,
                                   "retested_pairs": data["measurement"]["retested_pairs"]}
    assert data["measurement"]["retested_pairs"] >= 2
    assert any("share a host" in n for n in data["notes"])
    runs = json.loads(cli("runs", "--json").stdout)
    (run,) = [r for r in runs if r["id"] == data["run"]["id"]]
    assert run["kind"] == "health" and run["status"] == "complete" and run["label"] == "local"
    shown = json.loads(cli("show", str(run["id"]), "--json").stdout)
    assert shown["run"]["provenance"]["health"]["window"] == 4
