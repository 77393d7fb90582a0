"""One verdict per question, given by one function, the same in the CLI and the report on the same
stored runs: comparison (the figure of record judged), regression check (ok / worse / cannot judge,
exit 0 / 1 / 3) and rigour (lint). Health and single-valued comparisons are in test_verdicts_agree.py;
fabric state (fabric check of a simulated fabric against the report of its snapshot, with the downed
cable dashed) in test_fabric_sim.py's scan-inject-check test, which already makes that report."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import fabricbench
from fabricbench.cli import main
from fabricbench.store import Measurement

SIZES = tuple(1 << k for k in range(16, 23))


def cli(db, *args, code=0):
    res = CliRunner().invoke(main, ["--db", str(db), *args], catch_exceptions=False)
    assert res.exit_code == code, res.output
    return res.stdout


def bw_points(rng, scale, n=150, stall=0.0):
    """bw points whose figure of record (the rate over all iterations, bytes / total window time) differs
    from their median window: `stall` of the windows take 20x longer."""
    out = []
    for size in SIZES:
        x = 117.0 * size / (size + 16384.0) * scale * rng.lognormal(0, 0.03, n)
        x[: int(stall * n)] /= 20.0
        q = np.percentile(x, np.arange(101))
        out.append(Measurement("bw", {"size": size, "ranks": 2, "window": 64, "peers": [0, 1]}, "bandwidth", "MB/s",
                               value=float(n / np.sum(1.0 / x)), n=n, min=float(x.min()), median=float(np.median(x)),
                               mean=float(x.mean()), p99=float(q[99]), max=float(x.max()), stdev=float(x.std(ddof=1)),
                               detail={"sketch": {"q": [float(v) for v in q]}}))
    return out


def store_pair(db, load, b_scale, stall=0.0):
    store = fabricbench.open_db(str(db))
    rng = np.random.default_rng(5)
    prov = {"nodes": 1, "ranks": 2, "ppn": 2, "hosts": ["h1"], "launcher": "mpirun",
            "host_load": {"runnable_others": load, "cpus": 2}}
    try:
        return [store.save_run(bw_points(rng, scale, stall=stall), kind="benchmark", label=lab, provenance=prov,
                               ranks=2).id for lab, scale in (("a", 1.0), ("b", b_scale))]
    finally:
        store.close()


def report_md(db, tmp_path, *args):
    md = tmp_path / "r.md"
    cli(db, "report", *args, "--format", "markdown", "-o", str(md))
    return " ".join(html.unescape(md.read_text()).split())


def test_compare_and_report_judge_the_figure_of_record(tmp_path):
    """B's link is half as fast: compare, check and the report judge and show the rate over all iterations
    (4% of the windows stalled, so it sits well below the median window), with its CI."""
    db = tmp_path / "f.db"
    a, b = store_pair(db, 0.0, 0.5, stall=0.04)
    data = json.loads(cli(db, "compare", str(a), str(b), "--json"))
    shown = {m["params"]["size"]: m for m in json.loads(cli(db, "show", str(a), "--json"))["measurements"]}
    points = data["series"][0]["points"]
    assert {p["verdict"] for p in points} == {"worse"}, data["summary"]
    for p in points:
        rate = shown[p["size"]]["value"]
        assert p["statistic"] == "rate" and p["a"] == pytest.approx(rate, rel=1e-9)
        assert p["a"] < 0.6 * shown[p["size"]]["median"]  # the rate, not the median window
        assert p["a_ci"][0] < p["a"] < p["a_ci"][1] and p["ratio"] == pytest.approx(0.5, abs=0.05)
    text = " ".join(cli(db, "compare", str(a), str(b)).split())
    assert "A rate" in text and "Rates over all iterations (bandwidth) compared" in text
    check = cli(db, "check", str(b), "--against", "base", code=1) if cli(db, "baseline", "set", "base", str(a)) else ""
    assert "FAIL: 7 point(s) significantly worse" in " ".join(check.split())
    report = report_md(db, tmp_path, str(a), str(b), "--baseline", str(a))
    for p in points:  # the report names each point called, with the same ratio
        assert re.search(rf"bw {p['size'] >> 20 or p['size'] >> 10}\s?[KM]i?B?: b is [^)]*\(B/A {p['ratio']:.3g}\)",
                         report, re.I) or f"(B/A {p['ratio']:.3g})" in report, p
    assert "| worse |" in report  # the check column: what check answered


def test_check_cannot_judge_what_a_busy_host_could_have_done(tmp_path):
    """B 2.43x slower: on a quiet host check fails (exit 1); at load 3 on 2 CPUs contention alone could
    do that, so check says it cannot judge (exit 3), never OK; the report's check column agrees."""
    quiet, busy = tmp_path / "q.db", tmp_path / "b.db"
    qa, qb = store_pair(quiet, 0.1, 1 / 2.43)
    ba, bb = store_pair(busy, 3.0, 1 / 2.43)
    for db, a in ((quiet, qa), (busy, ba)):
        cli(db, "baseline", "set", "base", str(a))
    assert "FAIL" in cli(quiet, "check", str(qb), "--against", "base", code=1)
    text = " ".join(cli(busy, "check", str(bb), "--against", "base", code=3).split())
    assert "CANNOT JUDGE against baseline 'base': 7 point(s) worse by 3% or more were held" in text, text
    assert "OK:" not in text and "host busy: bw" in text
    data = json.loads(cli(busy, "check", str(bb), "--against", "base", "--json", code=3))
    assert data["check"]["status"] == "cannot judge" and data["ok"] is False and len(data["check"]["held"]) == 7
    assert "| cannot judge |" in report_md(busy, tmp_path, str(ba), str(bb), "--baseline", str(ba))


def test_check_of_figures_measured_once_cannot_judge(tmp_path):
    from test_verdicts_agree import HPCC, slower_hpcc

    db = tmp_path / "h.db"
    cli(db, "import", str(HPCC), str(slower_hpcc(tmp_path)))
    cli(db, "baseline", "set", "one", "1")
    text = " ".join(cli(db, "check", "2", "--against", "one", code=3).split())
    assert "CANNOT JUDGE" in text and "no point could be judged" in text and "ring bandwidth, random order" in text


def test_lint_and_the_reports_rigour_section_agree_on_an_hpcc_run(tmp_path):
    """A `fabricbench hpcc` run on a 1gbit link: no memory or compute figure is measured against the link,
    no "measure with fabricbench" for a run it made; lint and the report list the same findings."""
    db = tmp_path / "l.db"
    ms = [Measurement("hpcc", {"test": t, "ranks": 4}, metric, unit, value=v) for t, metric, unit, v in (
        ("StarSTREAM_Triad", "bandwidth", "MB/s", 33624.9), ("SingleSTREAM_Copy", "bandwidth", "MB/s", 30000.0),
        ("StarDGEMM_Gflops", "flops", "Gflop/s", 40.0), ("PTRANS_GBs", "bandwidth", "MB/s", 900.0),
        ("RandomlyOrderedRingBandwidth_GBytes", "bandwidth", "MB/s", 62.4),
        ("MaxPingPongBandwidth_GBytes", "bandwidth", "MB/s", 117.0))]
    store = fabricbench.open_db(str(db))
    try:
        rid = store.save_run(ms, kind="hpcc", label="hpcc-1g", tags={"fabric": "eth1g"}, ranks=4,
                             command="fabricbench hpcc --np 4",
                             provenance={"hosts": ["n1", "n2"], "nodes": 2, "ranks": 4, "mpi_library": "Open MPI",
                                         "launcher": "mpirun", "tool": "fabricbench"}).id
    finally:
        store.close()
    res = CliRunner().invoke(main, ["--db", str(db), "lint", str(rid), "--json"], catch_exceptions=False)
    found = json.loads(res.stdout)["findings"]
    assert not [f for f in found if f["rule"] == "peak"], found
    assert not [f for f in found if "measure with fabricbench" in f["fix"]], found
    report = report_md(db, tmp_path, str(rid))
    section = report[report.index("Rigour check"):]
    for f in found:
        assert " ".join(f["what"].split())[:60] in section, f["what"]
    assert "exceed their peak" not in section and "26899" not in section
