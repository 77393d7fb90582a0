"""The report shows the same verdicts as `compare`, the rigour check, and peaks that are right or explained."""
from __future__ import annotations

import numpy as np

import fabricbench
from fabricbench.store import Measurement

SIZES = [1 << k for k in range(12, 23)]


def pt(bench, metric, unit, size, samples, **params):
    x = np.asarray(samples, dtype=float)
    q = np.percentile(x, np.arange(101))
    return Measurement(bench, {"size": size, **params}, metric, unit, value=float(np.median(x)), n=len(x),
                       min=float(x.min()), median=float(np.median(x)), mean=float(x.mean()), p99=float(q[99]),
                       max=float(x.max()), stdev=float(x.std(ddof=1)), detail={"sketch": {"q": [float(v) for v in q]}})


def make_runs(path):
    rng = np.random.default_rng(31)
    store = fabricbench.open_db(str(path))
    prov = {"nodes": 2, "ranks": 4, "ppn": 2, "hosts": ["n1", "n2"], "rank_hosts": ["n1", "n1", "n2", "n2"],
            "mpi_library": "Open MPI 4.1"}
    ids = []
    for label, scale in (("ok", 1.0), ("slow", 0.6)):
        ms = []
        for size in SIZES:
            bw = 117.0 * size / (size + 2048.0)
            ms.append(pt("bw", "bandwidth", "MB/s", size, bw * scale * rng.lognormal(0, 0.02, 100), ranks=4, window=64))
            # two pairs share n1's 1 GbE link, yet report 130 MB/s: more than the link carries
            ms.append(pt("mbw_mr", "bandwidth", "MB/s", size, 130.0 * scale * rng.lognormal(0, 0.02, 100), ranks=4,
                         window=64, pairs=2))
        for order in ("natural", "random"):
            ms.append(pt("ring", "latency", "us", 8, 20.0 / scale * rng.lognormal(0, 0.02, 30), ranks=4, ordering=order))
        ids.append(store.save_run(ms, kind="benchmark", label=label, tags={"fabric": "eth1g"}, provenance=prov, ranks=4).id)
    return store, ids


def test_report_comparison_rigour_and_peaks(tmp_path):
    from fabricbench.cli.report import report_of

    store, ids = make_runs(tmp_path / "r.db")
    report = report_of(store, ids)
    by_id = {s.id: s for s in report.sections}
    assert not [s for s in report.sections if s.id.startswith("error-")]
    comp = by_id["comparison"]
    row = comp.blocks[0].cells()[0]
    assert row[0].text == "slow" and int(row[1].text) == 2 * len(SIZES) + 2 and row[2].text == "0"
    sub = comp.subsections[0]
    items = [i for b in sub.blocks if b.kind == "list" for i in b.items]
    assert any(i.startswith("bw bandwidth: slow is 40% worse at 11 of 11 sizes") for i in items), items
    assert any("bw bandwidth 4 MiB: slow is 40% worse" in i for i in items), items
    # HPCC ring: % better from analysis.compare, coloured because significant
    net = by_id["hpcc-network"]
    cells = [r for b in net.blocks if b.kind == "table" for r in b.cells()]
    vs = [r[-1] for r in cells if r[0].text == "Naturally ordered ring"][0]
    assert vs.text.startswith("-6") and vs.style == "worse"  # 20 us vs 20 / 0.6 us: 67% worse
    # mbw_mr above the link: the note explains it
    bw = by_id["bandwidth"]
    notes = " ".join(b.text for b in bw.blocks if b.kind == "notice")
    assert "mbw_mr at 4,096" in notes and "more than the link can carry" in notes
    assert "2 pairs sending from 1 host(s): 1 x the link" not in notes  # 1 x needs no note of its multiple
    # the rigour check runs over the report's runs
    rigour = by_id["rigour"]
    text = " ".join(c.text for b in rigour.blocks if b.kind == "table" for r in b.cells() for c in r)
    assert "peak (rule 11)" in text and "above their peak" in text
    assert "Passed:" in " ".join(b.text for b in rigour.blocks if b.kind == "paragraph")
