"""Comparisons across lab links (marker `lab`: root, network namespaces, MPI, the engine).

A 2-node lab at 1gbit is measured twice (bw, 64 KiB to 1 MiB), then the same lab with its
links at 500mbit once. 500mbit must be flagged worse at every size, `check` must pass the
repeat and fail the slower link, and the runs must carry their shaped rate as their peak.
Each lab is uniquely named and always torn down.
"""
from __future__ import annotations

import json
import re
import os

import pytest
from conftest import skip_unless

from fabricbench.lab import lab_session

# Every test here judges shaped links' rates: never beside another worker's load (tests/conftest.py).
pytestmark = pytest.mark.serial

SIZES = ["--sizes", "64K:1M", "--time-budget", "0.3"]


@pytest.fixture(scope="module")
def lab_runs(tmp_path_factory):
    skip_unless("lab", "mpi", "engine")
    from conftest import Cli, lab_slot

    cli = Cli(tmp_path_factory.mktemp("labcmp") / "results.db")
    name, subnet = f"cm{os.getpid() % 100000:05d}", f"10.215.{lab_slot()}.0/24"
    old = os.environ.get("FABRICBENCH_LAB")
    os.environ["FABRICBENCH_LAB"] = name
    ids = {}
    try:
        for link, labels in (("1gbit", ("fast", "fast again")), ("500mbit", ("slow",))):
            with lab_session(nodes=2, link=link, name=name, subnet=subnet):
                for label in labels:
                    out = cli("run", "bw", "--launcher", "lab", *SIZES, "--label", label, "--tag", "fabric=lab", timeout=600)
                    ids[label] = int(out.stdout.split("run ")[1].split()[0])
    finally:
        if old is None:
            os.environ.pop("FABRICBENCH_LAB", None)
        else:
            os.environ["FABRICBENCH_LAB"] = old
    return cli, ids


@pytest.mark.lab
def test_500mbit_is_flagged_worse_than_1gbit_at_every_size(lab_runs):
    cli, ids = lab_runs
    data = json.loads(cli("compare", str(ids["fast"]), str(ids["slow"]), "--json").stdout)
    points = data["series"][0]["points"]
    print("\n" + "\n".join(f"{p['size']:>8} B: {p['a']:.1f} vs {p['b']:.1f} MB/s, B/A {p['ratio']:.3f} -> {p['verdict']}"
                           for p in points))
    assert [p["size"] for p in points] == [1 << k for k in range(16, 21)]
    assert not [p for p in points if p["verdict"] == "better"], points
    if any(p["verdict"] == "host busy" for p in points):
        # Other work on the host could move these figures as much: compare rightly cannot judge them.
        pytest.skip(f"host too busy to judge: {[(p['size'], p['verdict']) for p in points]}")
    assert all(p["verdict"] == "worse" for p in points), points
    assert all(0.35 < p["ratio"] < 0.7 for p in points if p["size"] >= 1 << 18)  # 500mbit / 1gbit, on a busy host
    assert any(d["key"] == "fabric" and "1 Gb/s" in d["a"] and "500 Mb/s" in d["b"]
               for d in data["comparability"]["differences"])


@pytest.mark.lab
def test_check_passes_a_repeat_and_fails_the_slower_link(lab_runs):
    cli, ids = lab_runs
    cli("baseline", "set", "lab-1g", str(ids["fast"]))
    same = cli("check", str(ids["fast again"]), "--against", "lab-1g", check=False)
    print("\n" + same.stdout)
    if same.returncode == 3 and "CANNOT JUDGE" in same.stdout:
        pytest.skip(f"host too busy to judge the repeat:\n{same.stdout}")
    assert same.returncode == 0, same.stdout + same.stderr
    slow = cli("check", str(ids["slow"]), "--against", "lab-1g", check=False)
    if slow.returncode == 3 and "host too busy" in slow.stdout:
        pytest.skip(f"host too busy to judge the slower link:\n{slow.stdout}")
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert sum(line.startswith("worse: bw bandwidth") for line in slow.stdout.splitlines()) == 5


@pytest.mark.lab
def test_lab_runs_are_measured_against_their_shaped_rate(lab_runs):
    from fabricbench.analysis.lint import lint
    from fabricbench.report.words.lint import what
    from fabricbench.analysis.peaks import run_ceiling
    from fabricbench.store import open_db

    cli, ids = lab_runs
    store = open_db(str(cli.db))
    for label, rate in (("fast", 125.0), ("slow", 62.5)):
        rd = store.load(ids[label])
        assert rd.run.provenance["lab"]["link_bps"] == rate * 8e6
        c = run_ceiling(rd.run, rd.hosts).ceiling
        assert c.limit_MBps == rate and c.fabric.family == "lab"
        top = max(m.median for m in rd.measurements)
        # Physics: never above the shaped rate. TCP through the lab reaches ~96% of it on a quiet host,
        # 67-73% at load 20 on 2 cores (CPU-bound, tbf and htb alike): the floor only tells a link
        # from a broken lab, not the load.
        assert 0.4 * rate < top <= rate, (label, top)
        # The figures of record stay under the shaped rate; should a single iteration on a busy host
        # still read above it, lint names it (the worst is a sample, never the figure).
        for f in lint([rd]).findings:
            if f.rule == "peak":
                assert re.search(r"worst: (max|p99|p\d+)", what(f)), what(f)
    store.close()
