"""`study site` (seed 002): MPI latency and bandwidth, HPCC and many-reader file transfer, one report."""
from __future__ import annotations

import shutil

import pytest

from fabricbench.store import open_db

needs_tools = pytest.mark.skipif(not (shutil.which("hpcc") and shutil.which("xrootd") and shutil.which("xrdcp")),
                                 reason="needs hpcc and xrootd (apt-get install hpcc xrootd-server xrootd-client)")


def test_site_spec_refuses_more_readers_than_nodes():
    from fabricbench.errors import UsageError
    from fabricbench.workflows.study_site import SiteStudySpec

    with pytest.raises(UsageError, match="--nodes 4"):
        SiteStudySpec(fabric_texts=["lab:1gbit"], nodes=3, readers=[1, 3])


@pytest.mark.mpi
@pytest.mark.lab
@needs_tools
def test_study_site_on_two_lab_links(cli, db_path, tmp_path):
    report = tmp_path / "site.html"
    out = cli("study", "site", "--fabric", "slow:250mbit", "--fabric", "fast:1gbit", "--nodes", "2", "--readers", "1",
              "--file-size", "4M", "--n", "400", "--nb", "50", "--time-budget", "0.02", "--lab-name", "fbtsite",
              "--workdir", str(tmp_path / "w"),
              "-o", str(report), timeout=900)
    assert "report written to" in out.stdout and "reach" in out.stdout
    store = open_db(str(db_path))
    kinds = sorted((r.tags["fabric"], r.kind) for r in store.list_runs(tags={"study_kind": "site"}))
    assert kinds == [("fast", "benchmark"), ("fast", "hpcc"), ("fast", "transfer"),
                     ("slow", "benchmark"), ("slow", "hpcc"), ("slow", "transfer")]
    from fabricbench.analysis.record import headline_value
    from fabricbench.workflows.study_site import load_site

    data = load_site(store, store.list_runs(tags={"study_kind": "site"})[0].tags["study"])
    best = {name: max(headline_value(m) for m in f["bandwidth"].values()) for name, f in data["fabrics"].items()}
    assert best["slow"] < best["fast"], best  # the slower link moves less
    agg = {name: max(r.aggregate.median for r in f["transfer"].rows if r.protocol == "xrootd")
           for name, f in data["fabrics"].items()}
    assert agg["slow"] < agg["fast"], agg
    html = report.read_text()
    for text in ("MPI raw performance", "HPCC", "File transfer: many readers of one server", "best latency with",
                 "Reproduce: fabricbench study site --fabric slow:250mbit", 'data-slug="site-transfer"'):
        assert text in html, text
    from fabricbench.lab import current_lab

    assert current_lab("fbtsite") is None
