"""`fabricbench health` as a user runs it: analysing stored runs (--from-run), exit statuses, JSON, the report.

No MPI here: runs are imported (mpiGraph) or stored through the Store API; the
measuring path is in test_health_engine.py (local mpirun) and test_health_lab.py (lab).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fabricbench.store import Measurement, open_db

MPIGRAPH = Path(__file__).resolve().parent / "data" / "import" / "mpigraph_6nodes.txt"


def store_allpairs(db_path: Path, bw: np.ndarray, lat: np.ndarray = None, hosts=None, label="synthetic", tags=None) -> int:
    n = bw.shape[0]
    hosts = hosts or [f"c{i + 1:02d}" for i in range(n)]
    ms = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            base = {"ranks": n, "src": i, "dst": j, "rank_src": i, "rank_dst": j, "src_host": hosts[i],
                    "dst_host": hosts[j], "mode": "exchange"}
            for direction in ("send", "recv"):
                ms.append(Measurement("allpairs", dict(base, size=1 << 20, direction=direction, window=16), "bandwidth",
                                      "MB/s", value=float(bw[i, j]), n=3, median=float(bw[i, j])))
            if lat is not None:
                ms.append(Measurement("allpairs", dict(base, size=8, direction="send"), "latency", "us",
                                      value=float(lat[i, j]), n=3))
    store = open_db(str(db_path))
    try:
        return store.save_run(ms, kind="health", label=label, ranks=n, tags=tags).id
    finally:
        store.close()


def healthy(n=8, seed=0):
    rng = np.random.default_rng(seed)
    bw = 12000.0 * np.exp(rng.normal(0, 0.03, (n, n)))
    lat = 1.5 * np.exp(rng.normal(0, 0.03, (n, n)))
    return bw, lat


def test_from_run_healthy_exits_0_with_the_verdict_first(cli, db_path):
    run_id = store_allpairs(db_path, *healthy())
    out = cli("health", "--from-run", str(run_id))
    assert out.returncode == 0
    first = out.stdout.splitlines()[0]
    assert first.startswith("HEALTHY: 8 nodes, 56 pairs"), out.stdout
    assert "c01" in out.stdout  # the per-node table


def test_from_run_bad_node_exits_1_and_names_it(cli, db_path):
    bw, lat = healthy()
    bw[4, :] *= 0.45
    bw[:, 4] *= 0.45
    run_id = store_allpairs(db_path, bw, lat)
    out = cli("health", "--from-run", str(run_id), "--json", check=False)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["healthy"] is False and data["exit_status"] == 1
    problems = [f for f in data["findings"] if f["severity"] != "info"]
    assert [(f["kind"], f["nodes"], f["side"]) for f in problems] == [("node", ["c05"], "both")]
    assert data["verdict"].startswith("PROBLEMS: 1 bad node (c05)")
    assert data["summary"]["bandwidth"]["send"]["c05"] < 0.5 * data["summary"]["bandwidth"]["median"]
    assert data["run"]["id"] == run_id and data["measurement"]["nodes"] == 8


def test_threshold_option_changes_the_verdict(cli, db_path):
    bw, lat = healthy()
    bw[2, :] *= 0.8
    bw[:, 2] *= 0.8
    run_id = store_allpairs(db_path, bw, lat)
    assert cli("health", "--from-run", str(run_id), check=False).returncode == 0
    out = cli("health", "--from-run", str(run_id), "--threshold", "0.9", check=False)
    assert out.returncode == 1 and "c03" in out.stdout.splitlines()[0]


def test_from_run_on_an_imported_mpigraph_run(cli):
    cli("import", str(MPIGRAPH))
    out = cli("health", "--from-run", "last", "--json", check=False)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    (finding,) = [f for f in data["findings"] if f["severity"] != "info"]
    # mpiGraph's node03 -> node02 transfer at half rate (both matrices), the reverse at full rate.
    assert finding["kind"] == "asymmetric" and finding["pairs"] == [["node03", "node02"]]
    assert data["measurement"]["direction"] == "recv" and data["run"]["kind"] == "import"
    send = cli("health", "--from-run", "last", "--direction", "send", "--json", check=False)
    assert json.loads(send.stdout)["measurement"]["direction"] == "send"


def test_from_run_without_allpairs_data_exits_2(cli, db_path):
    store = open_db(str(db_path))
    run = store.save_run([Measurement("bw", {"size": 1024, "ranks": 2}, "bandwidth", "MB/s", value=10.0)], kind="import")
    store.close()
    out = cli("health", "--from-run", str(run.id), check=False)
    assert out.returncode == 2
    assert "no all-pairs measurements" in out.stderr
    out = cli("health", "--from-run", str(run.id), "--json", check=False)
    assert out.returncode == 2 and json.loads(out.stdout)["exit_status"] == 2


def test_unknown_run_exits_2(cli):
    out = cli("health", "--from-run", "4242", check=False)
    assert out.returncode == 2 and "no run '4242'" in out.stderr


def test_one_rank_cannot_check_links_exits_2(cli):
    out = cli("health", "--np", "1", check=False)
    assert out.returncode == 2
    assert "at least 2 ranks" in out.stderr


def test_size_must_be_a_power_of_two(cli):
    out = cli("health", "--np", "2", "--size", "1000", check=False)
    assert out.returncode == 2 and "powers of two" in out.stderr


def test_from_run_refuses_launch_options(cli, db_path):
    run_id = store_allpairs(db_path, *healthy())
    out = cli("health", "--from-run", str(run_id), "--np", "4", check=False)
    assert out.returncode == 2 and "--from-run" in out.stderr


def test_report_has_the_health_section(cli, db_path, tmp_path):
    bw, lat = healthy(12)
    bw[7, 3] *= 0.3
    bw[3, 7] *= 0.3
    run_id = store_allpairs(db_path, bw, lat)
    html = tmp_path / "r.html"
    cli("report", str(run_id), "-o", str(html))
    text = html.read_text()
    assert "Link health (all pairs)" in text and "PROBLEMS: 1 bad link (c04&lt;-&gt;c08)" in text
    assert text.count("<svg") >= 3 or text.count("data:image/svg+xml") >= 3  # two heatmaps and the histogram
    md = tmp_path / "r.md"
    cli("report", str(run_id), "-o", str(md), "--format", "markdown", "--plot-format", "png")
    assert "health-bandwidth-heatmap" in md.read_text()


def test_floor_from_the_fabric_catalog(cli, db_path):
    bw, lat = healthy()
    bw *= 0.25  # every pair at ~3,000 MB/s: relatively healthy, absolutely slow for EDR (12,500 MB/s)
    tagged = store_allpairs(db_path, bw, lat, tags={"fabric": "edr"})
    untagged = store_allpairs(db_path, bw, lat)
    assert cli("health", "--from-run", str(tagged), check=False).returncode == 0
    out = cli("health", "--from-run", str(tagged), "--floor", "50", "--json", check=False)
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["findings"][0]["kind"] == "fabric" and "50% of" in data["findings"][0]["evidence"]
    out = cli("health", "--from-run", str(untagged), "--floor", "50", "--json", check=False)
    assert out.returncode == 0 and any("--floor ignored" in n for n in json.loads(out.stdout)["notes"])


def test_health_command_and_report_give_the_same_verdict_for_one_run(cli, db_path):
    """One verdict (analysis.health_check.check): the command and the report name the same findings,
    including the note that an interrupted run misses pairs."""
    from fabricbench.report.context import ReportContext
    from fabricbench.report.model import Notice, Table
    from fabricbench.report.sections import health as section

    bw, lat = healthy(10, seed=3)
    bw[2, :] *= 0.4
    bw[:, 2] *= 0.4
    bw[6, 8] *= 0.3
    bw[8, 6] *= 0.3
    run_id = store_allpairs(db_path, bw, lat)
    store = open_db(str(db_path))
    store.finish_run(run_id, "interrupted", "stopped by SIGTERM")
    data = json.loads(cli("health", "--from-run", str(run_id), "--json", check=False).stdout)
    cli_findings = sorted((f["severity"], f["kind"], ", ".join(f["nodes"])) for f in data["findings"])
    assert ("critical", "node", "c03") in cli_findings or ("warning", "node", "c03") in cli_findings

    (built,) = section.build_all(ReportContext(store.load_runs([run_id])))
    notices = [b.text for b in built.blocks if isinstance(b, Notice)]
    (flagged,) = [b for b in built.blocks if isinstance(b, Table) and b.caption == "Flagged"]
    report_findings = sorted((row[0].text, row[1].text, row[3].text) for row in flagged.cells())
    assert report_findings == cli_findings
    assert notices[0] == data["verdict"]
    assert f"run {run_id} is interrupted: pairs it did not reach are missing" in notices
    assert f"run {run_id} is interrupted: pairs it did not reach are missing" in data["notes"]
