"""The studies in the papers' form: `study list`, `study osu-fabric` (seed 000) and `study
scaling-claims` (seed 003) on a 2-node lab, and the pieces they share with `scaling-report`
(the tuning variables read back from a run's launch line, tables without empty columns)."""
import html
import json
import re
import shutil
from types import SimpleNamespace

import pytest

from fabricbench.store import open_db


def _text(path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", path.read_text()))


def test_study_list_names_all_five_with_their_papers(cli):
    out = cli("study", "list").stdout
    for name, seed in (("osu-fabric", "000"), ("hpcc-fabrics", "001"), ("site", "002"), ("scaling-claims", "003"),
                       ("apps", "004")):
        assert re.search(rf"^{name} +seed {seed}", out, re.M), out
    assert all(len(line) <= 80 for line in out.splitlines())
    rows = json.loads(cli("study", "list", "--json").stdout)
    assert [r["seed"] for r in rows] == ["000", "001", "002", "003", "004"]
    available = {r["name"] for r in rows if r["available"]}
    assert {"osu-fabric", "scaling-claims", "apps"} <= available
    assert all(r["paper"] and r["produces"] for r in rows)


def _run(launch, env=None, tags=None):
    return SimpleNamespace(provenance={"launch": launch, "env": env or {}}, tags=tags or {})


def test_tuning_is_read_from_the_launch_line_and_only_differences_count():
    from fabricbench.analysis.studies import tuning_differences, tuning_of

    base = ["mpirun", "-np", "2", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_eager_limit", "4096", "-x",
            "UCX_RNDV_THRESH=8192", "app"]
    a = _run(base, env={"OMPI_MCA_pml": "ob1", "HOME": "/root"})
    b = _run([x.replace("4096", "65536") for x in base])
    assert tuning_of(a) == {"btl": "tcp,self", "btl_tcp_eager_limit": "4096", "UCX_RNDV_THRESH": "8192", "OMPI_MCA_pml": "ob1"}
    assert tuning_differences([a, b]) == {"OMPI_MCA_pml": ["ob1", None], "btl_tcp_eager_limit": ["4096", "65536"]}
    srun = _run(["srun", "--export=ALL,OMPI_MCA_btl_tcp_eager_limit=4096,UCX_RNDV_THRESH=8k", "-n", "2", "app"])
    assert tuning_of(srun) == {"btl_tcp_eager_limit": "4096", "UCX_RNDV_THRESH": "8k"}

    from fabricbench.workflows.scaling_claims import parse_tuning

    eager, ucx = parse_tuning("btl_tcp_eager_limit=4096,65536"), parse_tuning("UCX_RNDV_THRESH=8k,64k")
    assert eager.launch_args("4096") == ["--mca", "btl_tcp_eager_limit", "4096"]
    assert ucx.launch_args("8k") == ["-x", "UCX_RNDV_THRESH=8k"]
    assert tuning_of(_run(["srun", *eager.launch_args("4096", "srun"), "app"])) == {"btl_tcp_eager_limit": "4096"}


def test_tables_drop_columns_nobody_has_a_value_in():
    from fabricbench.report.model import Column, Table
    from fabricbench.report.sections.scaling import without_empty_columns

    t = without_empty_columns(Table([Column("Nodes"), Column("Stdev"), Column("-")], [["1", "-", ""], ["2", "-", "-"]]))
    assert [c.title for c in t.columns] == ["Nodes"] and t.rows == [["1"], ["2"]]


def test_a_setting_is_judged_only_with_repetitions_and_a_quiet_host():
    from fabricbench.analysis.studies import Conditions, setting_findings

    point = lambda sig: SimpleNamespace(scale=2, ratio=1.3, significant=sig)  # noqa: E731
    series = [SimpleNamespace(series=SimpleNamespace(name=n, axis="nodes", tags={"app": "lj", "eager": v}))
              for n, v in (("a", "4096"), ("b", "65536"))]

    def verdicts(sig, load):
        analysis = SimpleNamespace(series=series, comparisons=[SimpleNamespace(a="a", b="b", group={}, points=[point(sig)])])
        return [x.verdict for x in setting_findings(analysis, "eager", Conditions("lab", load_min=load, load_max=load, cpus=2))]

    assert verdicts(True, 0.0) == ["better"]
    assert verdicts(False, 0.0) == ["no significant difference"]
    assert verdicts(None, 0.0)[0].startswith("cannot judge: one repetition")
    assert verdicts(True, 5.0)[0].startswith("cannot judge: host busy")


def _need_fabric_sim():
    from fabricbench.workflows.fabric_sim import SimError, umad2sim_library

    try:
        umad2sim_library()
    except SimError as exc:
        pytest.skip(str(exc))
    for tool in ("ibsim", "opensm", "ibnetdiscover", "iblinkinfo"):
        if not (shutil.which(tool) or shutil.which(f"/usr/sbin/{tool}")):
            pytest.skip(f"needs {tool} (scripts/install-test-deps.sh fabric)")


@pytest.mark.mpi
@pytest.mark.lab
def test_osu_fabric_on_two_lab_fabrics(cli, db_path, tmp_path):
    """Seed 000 on a 2-node lab: the slower link has the lower bandwidth, each fabric manager's view is
    in the report with its link speed, and the report names its conditions and command."""
    _need_fabric_sim()
    report = tmp_path / "osu.html"
    out = cli("study", "osu-fabric", "--fabric", "fast:1gbit,ib=4xEDR", "--fabric", "slow:100mbit,ib=4xFDR",
              "--apps", "none", "--sizes", "16K:64K", "--time-budget", "0.02", "--repeat", "1",
              "--lab-name", "fbtosu", "-o", str(report), timeout=600).stdout
    assert "wrote" in out
    db = open_db(str(db_path))
    runs = sorted(db.list_runs(), key=lambda r: r.id)
    assert sorted(r.kind for r in runs) == ["benchmark", "benchmark", "fabric", "fabric"]
    assert len({r.tags["study"] for r in runs}) == 1 and all(r.status == "complete" for r in runs)
    assert [r.tags["fabric"] for r in runs if r.kind == "benchmark"] == ["lab-1g", "lab-100m"]

    from fabricbench.report.sections.study import osu_findings_of

    engine = {r.label.split(" on ")[1]: r.id for r in runs if r.kind == "benchmark"}
    bandwidth = [x for x in osu_findings_of({k: db.load(i) for k, i in engine.items()}) if x.kind == "bandwidth"]
    assert bandwidth and bandwidth[0].b < bandwidth[0].a  # 100mbit carries less than 1gbit
    assert bandwidth[0].b < 12.5 * 1.05  # and never more than its link (12.5 MB/s)

    text = _text(report)
    for expected in ("Study osu-fabric", "Latency", "Bandwidth", "Fabric: fabric of fast", "Fabric: fabric of slow",
                     "4X EDR", "4X FDR", "master SM", "link rates: fast 1gbit, slow 100mbit", "MPI:", "host load:",
                     "Reproduce with: fabricbench --db", "lower bandwidth than fast"):
        assert expected in text, expected
    from fabricbench.lab import current_lab

    assert current_lab("fbtosu") is None


@pytest.mark.mpi
@pytest.mark.lab
def test_scaling_claims_sweeps_the_eager_limit(cli, db_path, tmp_path):
    """Seed 003 on a 2-node lab: one run per setting, efficiency 1 at the base and below 1 across the
    link, every setting with a verdict, the variable in the tables, no empty column."""
    from tests.test_apps import need_app

    need_app("lammps-lj")
    report = tmp_path / "claims.html"
    out = cli("study", "scaling-claims", "--tune", "btl_tcp_eager_limit=4096,65536", "--nodes", "1,2", "--repeat", "1",
              "--lab-name", "fbtclm", "-o", str(report), timeout=600).stdout
    assert "Relative performance by btl_tcp_eager_limit" in out and "tuning: btl_tcp_eager_limit (differs)" in out
    assert "cannot judge: one repetition" in out  # --repeat 1: no verdict is guessed
    db = open_db(str(db_path))
    runs = sorted(db.list_runs(kind="scaling"), key=lambda r: r.id)
    assert [r.tags["btl_tcp_eager_limit"] for r in runs] == ["4096", "65536"]
    assert all("--mca btl_tcp_eager_limit" in " ".join(r.provenance["launch"]) for r in runs)

    from fabricbench.cli.studies import claims_analysis

    _, _, analysis = claims_analysis(db, [r.id for r in runs], "btl_tcp_eager_limit", "4096")
    for sa in analysis.series:
        eff = {e.scale: e.efficiency for e in sa.efficiency}
        assert eff[1] == pytest.approx(1.0) and eff[2] < 1.0  # a tiny problem over a 1 Gb/s link

    page = report.read_text()
    for table in re.findall(r"<table.*?</table>", page, re.S):
        heads = [html.unescape(h).strip() for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table, re.S)]
        assert "-" not in heads and "" not in heads, heads
    text = _text(report)
    assert "scaling efficiency at 2 nodes relative to the 1 node result" in text
    assert "Reproduce with: fabricbench --db" in text and "link rates:" in text


def test_a_cluster_fabric_is_the_launcher_arguments_that_select_it():
    from fabricbench.errors import UsageError
    from fabricbench.workflows.osu_fabric import parse_cluster_fabric, parse_osu_fabric

    ib = parse_cluster_fabric("ib:--mca pml ucx -x UCX_TLS=rc")
    assert ib.fabric.name == "ib" and ib.args == ["--mca", "pml", "ucx", "-x", "UCX_TLS=rc"]
    lab = parse_osu_fabric("slow:100mbit,ib=4xFDR")
    assert (lab.fabric.link, lab.width, lab.speed) == ("100mbit", 4, "FDR")
    with pytest.raises(UsageError, match="NAME:LAUNCHER_ARGS"):
        parse_cluster_fabric("--mca pml ucx")
