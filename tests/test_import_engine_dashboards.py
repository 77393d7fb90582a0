"""Results made elsewhere and results sent elsewhere: OSU 7.x one-sided and non-blocking outputs
and the engine's own JSON Lines imported and compared point by point with native runs; export
as OpenMetrics (checked by prometheus_client's OpenMetrics parser) and ReFrame-style perflog
lines; `check --junit` checked against a JUnit XSD (Jenkins/Ant format)."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from fabricbench.importers import ImportFormatError, import_file

DATA = Path(__file__).parent / "data"
OSU7 = DATA / "osu7"


def compare_json(cli, a: str, b: str, *extra: str) -> dict:
    return json.loads(cli("compare", a, b, "--json", *extra).stdout)


def matched_sizes(result: dict, benchmark: str, metric: str) -> List[int]:
    return sorted(p["size"] for s in result["series"] if s["definition"] == benchmark and s["metric"] == metric
                  for p in s["points"] if p["a"] is not None and p["b"] is not None)


def import_run(cli, *args: str) -> int:
    out = json.loads(cli("import", *args, "--json").stdout)
    return out[0]["run"]


def engine_jsonl(path: Path, np: int, args: List[str]) -> None:
    """`mpirun -np N fabricbench-mpi ... > path`, as a user (or a batch job) would."""
    from fabricbench.launch import Layout, get_launcher
    from fabricbench.native import engine_path

    launcher = get_launcher("mpirun", Layout(np=np))
    with open(path, "w") as out:
        proc = subprocess.run(launcher.command([str(engine_path()), *args]), env=launcher.environment(),
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


# ---- OSU 7.x outputs against native runs ----------------------------------------------------

@pytest.mark.mpi
@pytest.mark.parametrize("sample,benchmark,metric,engine_args", [
    ("osu_get_latency_7.4.txt", "get_latency", "latency", []),
    ("osu_put_latency_7.4_fence.txt", "put_latency", "latency", ["--win-sync", "fence", "--win-alloc", "create"]),
    ("osu_put_bibw_7.4.txt", "put_bibw", "bibandwidth", []),
])
def test_osu_one_sided_output_compares_with_a_native_run(cli, sample, benchmark, metric, engine_args):
    native = cli("run", benchmark, "--np", "2", "--sizes", "1:16", "--time-budget", "0.01", "--repeat", "1",
                 *engine_args)
    assert native.returncode == 0
    osu = import_run(cli, str(OSU7 / sample))
    result = compare_json(cli, "1", str(osu))
    assert matched_sizes(result, benchmark, metric) == [1, 2, 4, 8, 16]
    # another synchronisation is another measurement: not matched
    cli("run", benchmark, "--np", "2", "--sizes", "1:2", "--time-budget", "0.01", "--repeat", "1",
        "--win-sync", "lock" if benchmark != "put_bibw" else "fence")
    other = compare_json(cli, "3", str(osu))
    assert matched_sizes(other, benchmark, metric) == []


@pytest.mark.mpi
def test_osu_non_blocking_output_compares_overall_pure_communication_and_overlap(cli):
    cli("run", "ibcast", "--np", "2", "--sizes", "1:8", "--time-budget", "0.01", "--repeat", "1")
    osu = import_run(cli, str(OSU7 / "osu_ibcast_7.4.txt"), "--ranks", "2")
    result = compare_json(cli, "1", str(osu))
    for metric in ("latency", "pure_comm", "overlap"):
        assert matched_sizes(result, "ibcast", metric) == [1, 2, 4, 8], metric


def test_osu_samples_import_with_canonical_names_and_settings():
    expected = {
        "osu_get_latency_7.4.txt": ("get_latency", "latency", {"win": "allocate", "sync": "flush"}),
        "osu_put_latency_7.4_fence.txt": ("put_latency", "latency", {"win": "create", "sync": "fence"}),
        "osu_acc_latency_7.4.txt": ("acc_latency", "latency", {"win": "allocate", "sync": "flush"}),
        "osu_fop_latency_7.4.txt": ("fop_latency", "latency", {"win": "allocate", "sync": "flush"}),
        "osu_cas_latency_7.4.txt": ("cas_latency", "latency", {"win": "create", "sync": "flush"}),
        "osu_put_bw_7.4.txt": ("put_bw", "bandwidth", {"win": "allocate", "sync": "flush"}),
        "osu_put_bibw_7.4.txt": ("put_bibw", "bibandwidth", {"win": "allocate", "sync": "pscw"}),
        "osu_gatherv_7.4.txt": ("gatherv", "latency", {}),
    }
    for name, (benchmark, metric, params) in expected.items():
        parsed = import_file(str(OSU7 / name))
        assert parsed.complete and parsed.benchmarks() == [benchmark], name
        first = parsed.measurements[0]
        assert first.metric == metric and {k: first.params.get(k) for k in params} == params, name
        line = (OSU7 / name).read_text().splitlines()[int(first.detail["source"].rsplit(":", 1)[1]) - 1].split()
        assert f"{first.value:.2f}" == line[1]
    ibcast = import_file(str(OSU7 / "osu_ibcast_7.4.txt"))
    assert {m.metric for m in ibcast.measurements} == {"latency", "pure_comm", "overlap"}
    over = [m for m in ibcast.measurements if m.metric == "overlap"][0]
    assert over.unit == "%" and over.value == pytest.approx(55.0, abs=0.01)


# ---- the engine's own JSON Lines -----------------------------------------------------------

@pytest.mark.mpi
def test_engine_jsonl_made_by_hand_imports_and_compares_with_a_native_run(cli, tmp_path):
    out = tmp_path / "out.jsonl"
    engine_jsonl(out, 2, ["latency", "--sizes", "1:64", "--time-budget", "0.02"])
    cli("run", "latency", "--np", "2", "--sizes", "1:64", "--time-budget", "0.02", "--repeat", "1")
    result = json.loads(cli("import", str(out), "--tag", "site=batch", "--label", "by-hand", "--json").stdout)
    assert result[0]["format"] == "engine" and result[0]["ranks"] == 2 and result[0]["measurements"] == 7
    run_id = str(result[0]["run"])
    show = json.loads(cli("runs", "--json").stdout)
    mine = [r for r in show if str(r["id"]) == run_id][0]
    assert mine["tags"] == {"site": "batch"} and mine["status"] == "complete"
    compared = compare_json(cli, "1", run_id)
    assert matched_sizes(compared, "latency", "latency") == [1, 2, 4, 8, 16, 32, 64]
    # the same MPI library and engine on both sides: no difference reported for them
    labels = {d["label"] for d in compared["comparability"]["differences"]}
    assert "MPI library" not in labels and "Engine version" not in labels


@pytest.mark.mpi
def test_engine_jsonl_of_a_killed_run_is_stored_interrupted(cli, tmp_path):
    out = tmp_path / "killed.jsonl"
    engine_jsonl(out, 2, ["bw", "--sizes", "1:16", "--iterations", "3"])
    lines = out.read_text().splitlines()
    assert json.loads(lines[-1])["record"] == "end"
    out.write_text("\n".join(lines[:3]) + "\n")  # the run record and two points
    result = json.loads(cli("import", str(out), "--json").stdout)
    assert result[0]["measurements"] == 2 and result[0]["status"] == "interrupted"


def test_engine_jsonl_errors_name_the_line(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record":"run","tool":"fabricbench-mpi","benchmark":"latency","ranks":2}\n'
                   '{"record":"point","benchmark":"latency","params":{"size":1},"metric":"latency","unit":"us",'
                   '"value":1.5}\n{"record":"point", oops\n')
    with pytest.raises(ImportFormatError, match=r"bad.jsonl.*3.*not a JSON record"):
        import_file(str(bad))
    proc = cli("import", str(bad), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "bad.jsonl:3: not a JSON record" in proc.stderr
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"record":"run","tool":"fabricbench-mpi","benchmark":"latency","ranks":2}\n'
                   '{"record":"point","benchmark":"latency","params":{"size":1},"metric":"latency","unit":"us",'
                   '"value":NaN}\n')
    with pytest.raises(ImportFormatError, match="not a finite number"):
        import_file(str(nan))


# ---- dashboards and CI ----------------------------------------------------------------------

def test_export_openmetrics_parses_with_an_openmetrics_parser(cli):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser")
    run = import_run(cli, str(OSU7 / "osu_ibcast_7.4.txt"), "--ranks", "4", "--tag", "fabric=edr",
                     "--label", 'a "quoted" label')
    text = cli("export", str(run), "--format", "openmetrics").stdout
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert set(families) == {"fabricbench_latency_microseconds", "fabricbench_pure_comm_microseconds",
                             "fabricbench_overlap_percent"}
    lat = families["fabricbench_latency_microseconds"]
    assert lat.type == "gauge" and lat.unit == "microseconds" and len(lat.samples) == 21
    first = min(lat.samples, key=lambda s: int(s.labels["size"]))
    assert first.labels["benchmark"] == "ibcast" and first.labels["ranks"] == "4"
    assert first.labels["tag_fabric"] == "edr" and first.labels["run_label"] == 'a "quoted" label'
    assert first.value == pytest.approx(2.77) and first.timestamp is not None


def test_export_perflog_is_one_reframe_line_per_point(cli):
    run = import_run(cli, str(OSU7 / "osu_put_bw_7.4.txt"))
    lines = cli("export", str(run), "--format", "perflog").stdout.splitlines()
    assert len(lines) == 23
    fields = lines[0].split("|")
    assert len(fields) == 7 and fields[1].startswith("fabricbench ") and fields[3] == f"jobid=run{run}"
    assert fields[2].startswith("put_bw %") and "%size=1" in fields[2] and "%sync=flush" in fields[2]
    assert fields[4] == "bandwidth=3.1" and fields[5] == "ref=0 (l=null, u=null)" and fields[6] == "MB/s"


def _scaled_copy(src: Path, dst: Path, factor: float) -> None:
    """The engine's output with every latency figure (and its distribution) times factor."""
    out = []
    for line in src.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "point":
            for key in ("value", "min", "median", "mean", "p99", "max", "stdev"):
                if rec.get(key) is not None:
                    rec[key] *= factor
            sketch = (rec.get("detail") or {}).get("sketch")
            if isinstance(sketch, dict) and isinstance(sketch.get("q"), list):
                sketch["q"] = [q * factor for q in sketch["q"]]
        out.append(json.dumps(rec))
    dst.write_text("\n".join(out) + "\n")


@pytest.mark.mpi
def test_check_junit_validates_against_a_junit_schema_and_fails_regressions(cli, tmp_path):
    xmlschema = pytest.importorskip("xmlschema")
    from xml.etree import ElementTree as ET

    schema = xmlschema.XMLSchema(str(DATA / "junit" / "junit.xsd"))
    out = tmp_path / "base.jsonl"
    engine_jsonl(out, 2, ["latency", "--sizes", "1:64", "--time-budget", "0.02"])
    slow = tmp_path / "slow.jsonl"
    _scaled_copy(out, slow, 5.0)
    base = import_run(cli, str(out))
    same = import_run(cli, str(out), "--again")
    worse = import_run(cli, str(slow))
    cli("baseline", "set", "ref", str(base))

    ok = tmp_path / "ok.xml"
    proc = cli("check", str(same), "--against", "ref", "--junit", str(ok), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    schema.validate(str(ok))
    root = ET.parse(ok).getroot()
    assert root.get("failures") == "0" and int(root.get("tests")) == 7
    assert len(root.findall("testsuite/testcase")) == 7

    bad = tmp_path / "bad.xml"
    proc = cli("check", str(worse), "--against", "ref", "--junit", str(bad), check=False)
    assert proc.returncode == 1
    schema.validate(str(bad))
    root = ET.parse(bad).getroot()
    failed = root.findall("testsuite/testcase/failure")
    assert int(root.get("failures")) == len(failed) > 0
    assert all("worse" in f.text for f in failed)
    assert {c.get("classname") for c in root.findall("testsuite/testcase")} == {"fabricbench.latency.latency"}


def test_check_junit_to_a_missing_folder_is_a_usage_error(cli, tmp_path):
    run = import_run(cli, str(OSU7 / "osu_gatherv_7.4.txt"), "--ranks", "2")
    cli("baseline", "set", "ref", str(run))
    proc = cli("check", str(run), "--against", "ref", "--junit", str(tmp_path / "no" / "such" / "x.xml"), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
