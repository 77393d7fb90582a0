"""The engine's all-pairs benchmark and `fabricbench health` measuring for real under local mpirun.

Ranks share this machine here, so the figures are shared memory's and say nothing about a
fabric (the lab tests check the findings); these tests check the record contract: every
ordered pair measured once per metric with host names, odd and even rank counts, both
modes, retests marked, whole-matrix records, the schema, and the run stored as kind
health. Sizes and repetitions are small so the file runs in seconds.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import fabricbench
from fabricbench.launch import Layout, get_launcher
from fabricbench.native import NativeMissing, engine_path

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(fabricbench.__file__).resolve().parent / "data" / "record.schema.json").read_text())
PAIR_KEYS = {"size", "ranks", "src", "dst", "rank_src", "rank_dst", "src_host", "dst_host", "direction", "mode"}


@pytest.fixture(scope="module")
def engine() -> Path:
    if not shutil.which("mpirun"):
        pytest.skip("mpirun is not on PATH")
    try:
        path = engine_path()
    except NativeMissing as exc:
        pytest.skip(str(exc))
    help_text = subprocess.run([str(path), "--help"], capture_output=True, text=True).stdout
    if "allpairs" not in help_text:
        pytest.skip(f"{path} was built without the allpairs benchmark; rebuild the engine")
    return path


def run_engine(engine: Path, np: int, args, timeout: float = 180):
    launcher = get_launcher("mpirun", Layout(np=np))
    proc = subprocess.run(launcher.command([str(engine), *args]), env=launcher.environment(), capture_output=True,
                          text=True, timeout=timeout)
    return proc


def records(proc):
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
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
    recs = records(run_engine(engine, 3, ["allpairs", "--sizes", "64K:64K", "--window", "4", "--iterations", "2",
                                          "--pairs", "2"]))
    check_every_pair(recs, 3, "exchange")
    assert recs[0]["benchmark"] == "allpairs"


def test_pairs_mode_with_an_even_rank_count(engine):
    recs = records(run_engine(engine, 4, ["allpairs_pairs", "--sizes", "32K:32K", "--window", "2", "--iterations", "2",
                                          "--pairs", "3"]))
    points = check_every_pair(recs, 4, "pairs")
    assert all(r["params"]["window"] == 2 for r in points if r["metric"] == "bandwidth")


def test_pairs_mode_with_an_odd_rank_count_rests_one_rank_per_round(engine):
    recs = records(run_engine(engine, 5, ["allpairs_pairs", "--sizes", "16K:16K", "--window", "2", "--iterations", "2"]))
    check_every_pair(recs, 5, "pairs")


def test_one_rank_is_refused(engine):
    proc = run_engine(engine, 1, ["allpairs"])
    assert proc.returncode == 2 and "at least 2 ranks" in proc.stderr


def test_validate_checks_every_transfer(engine):
    recs = records(run_engine(engine, 2, ["allpairs", "--sizes", "4K:4K", "--window", "2", "--iterations", "2",
                                          "--validate"]))
    assert all(r["params"]["validate"] for r in recs if r["record"] == "point")
    proc = run_engine(engine, 2, ["allpairs", "--sizes", "4K:4K", "--window", "2", "--iterations", "2",
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
