"""Reports: sections, self-containment, escaping, Markdown and plot files, the section extension point."""
from __future__ import annotations

import hashlib
import json
import re
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

import fabricbench
from fabricbench.store import Host, Measurement

XSS = "<script>alert(1)</script>"
SIZES = [0, 1, 8, 64, 512, 4096, 65536, 1048576]


def _facts(host, cpu="Intel Xeon Gold 6148", kernel="5.10.0-21-amd64", rate="100 Gb/sec (4X EDR)", eager="8388608",
           env_value="^openib", pcie_width="x16"):
    return {
        "hostname": host,
        "cpu": {"model": cpu, "sockets": 2, "cores": 40, "threads": 80, "governor": "performance", "mhz": 2400.0},
        "memory_bytes": 192 * 2**30,
        "numa_nodes": 2,
        "kernel": kernel,
        "os": "Debian GNU/Linux 12 (bookworm)",
        "mpi": {"library": "Open MPI", "version": "4.1.4"},
        "compiler": "gcc 12.2.0",
        "env": {"OMPI_MCA_btl": env_value},
        "infiniband": [{"device": "mlx5_0", "port": 1, "rate": rate, "state": "4: ACTIVE", "link_layer": "InfiniBand", "fw_ver": "16.35.2000"}],
        "net": [{"name": "ib0", "speed_mbps": 100000, "mtu": 4092, "driver": "ib_ipoib", "operstate": "up",
                 "pcie": {"speed": "8.0 GT/s PCIe", "width": pcie_width}}],
        "module_params": {"hfi1": {"eager_buffer_size": eager}},
    }


def _host(name, **kw):
    facts = _facts(name, **kw)
    digest = hashlib.sha256(json.dumps({k: v for k, v in facts.items() if k != "hostname"}, sort_keys=True).encode()).hexdigest()
    return Host(hostname=name, digest=digest, facts=facts)


def _m(bench, metric, unit, size, value, ranks=2, spread=0.02, **params):
    p = {"ranks": ranks, **params}
    if size is not None:
        p["size"] = size
    s = value * spread
    return Measurement(bench, p, metric, unit, value=value, n=100, iterations=1000, min=value - s, median=value,
                       mean=value, p99=value + 2 * s, max=value + 3 * s, stdev=s)


def demo_measurements(scale: float, hpcc: dict):
    out = []
    for size in SIZES:
        lat = scale * (1.0 + size / 10000.0)
        bw = 11000.0 / scale * size / (size + 4000.0)
        out.append(_m("latency", "latency", "us", size, lat))
        out.append(_m("bw", "bandwidth", "MB/s", size, max(bw, 0.5), window=64))
        out.append(_m("bibw", "bibandwidth", "MB/s", size, max(1.9 * bw, 0.5), window=64))
        out.append(_m("mbw_mr", "bandwidth", "MB/s", size, max(bw, 0.5), window=64, pairs=1))
        out.append(_m("mbw_mr", "message_rate", "msg/s", size, 1e6 / lat, window=64, pairs=1))
        for ranks in (2, 4):
            m = _m("allreduce", "latency", "us", size, lat * ranks, ranks=ranks)
            m.detail = {"per_rank": [lat * ranks * 0.9, lat * ranks * 1.2]}
            out.append(m)
    out.append(_m("barrier", "latency", "us", 0, 2.5 * scale))
    for order, f in (("natural", 1.0), ("random", 1.3)):
        out.append(_m("ring", "latency", "us", 8, scale * f, ranks=4, ordering=order, loop_length=100))
        out.append(_m("ring", "bandwidth", "MB/s", 2000000, 9000 / scale / f, ranks=4, ordering=order, loop_length=2))
    out.append(_m("pingpong_pairs", "latency", "us", 8, scale * 1.1, ranks=4, pairs=12))
    out.append(_m("pingpong_pairs", "bandwidth", "MB/s", 2000000, 9500 / scale, ranks=4, pairs=3))
    for test, (metric, unit, value) in hpcc.items():
        out.append(Measurement("hpcc", {"test": test, "ranks": 1024}, metric, unit, value=value))
    out.append(_m("putlat", "latency", "us", 8, 1.7 * scale, ranks=4))
    return out


HPCC_EDR = {"HPL_Tflops": ("flops", "Gflop/s", 30000.0), "PTRANS_GBs": ("bandwidth", "MB/s", 168000.0),
            "MPIRandomAccess_GUPs": ("update_rate", "GUP/s", 1.39), "MPIFFT_Gflops": ("flops", "Gflop/s", 1800.0),
            "StarDGEMM_Gflops": ("flops", "Gflop/s", 35.0), "StarSTREAM_Triad": ("bandwidth", "MB/s", 3900.0),
            "NaturallyOrderedRingLatency_usec": ("latency", "us", 1.96), "RandomlyOrderedRingLatency_usec": ("latency", "us", 10.2)}
HPCC_FDR = {"HPL_Tflops": ("flops", "Gflop/s", 29000.0), "PTRANS_GBs": ("bandwidth", "MB/s", 100000.0),
            "MPIRandomAccess_GUPs": ("update_rate", "GUP/s", 1.0), "MPIFFT_Gflops": ("flops", "Gflop/s", 1000.0),
            "StarDGEMM_Gflops": ("flops", "Gflop/s", 35.1), "StarSTREAM_Triad": ("bandwidth", "MB/s", 3900.0),
            "NaturallyOrderedRingLatency_usec": ("latency", "us", 4.0), "RandomlyOrderedRingLatency_usec": ("latency", "us", 12.4)}


def make_demo_store(path: Path):
    """Two runs with full provenance (EDR, with a hostile label and an odd host; FDR) and an imported run."""
    store = fabricbench.open_db(str(path))
    edr = store.save_run(
        demo_measurements(1.0, HPCC_EDR), kind="benchmark", label=f"EDR {XSS}", tags={"fabric": "edr", "site": "<b>lab</b>"},
        provenance={"nodes": 3, "ranks": 3, "ppn": 1, "launcher": "mpirun", "mpi_library": "Open MPI 4.1.4",
                    "env": {"OMPI_MCA_btl": "^openib", "UCX_TLS": "<img src=x onerror=alert(2)>"}},
        ranks=3,
        hosts=[_host("node01"), _host("node02"), _host("<i>node03</i>", kernel="5.10.0-9-amd64", eager="2097152")],
        command="fabricbench run latency bw",
    )
    fdr = store.save_run(
        demo_measurements(1.6, HPCC_FDR), kind="benchmark", label="FDR", tags={"fabric": "fdr"},
        provenance={"nodes": 2, "ranks": 2, "ppn": 1, "launcher": "mpirun", "mpi_library": "Open MPI 4.1.4",
                    "env": {"OMPI_MCA_btl": "^openib"}},
        ranks=2, hosts=[_host(n, cpu="Intel Xeon E5-2698 v3", rate="56 Gb/sec (4X FDR)", pcie_width="x8") for n in ("fdr01", "fdr02")],
    )
    imported = store.save_run([_m("latency", "latency", "us", s, 1.2 + s / 9000.0) for s in SIZES], label="imported OSU")
    return store, edr, fdr, imported


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    store, edr, fdr, imported = make_demo_store(d / "demo.db")
    from fabricbench.cli.report import report_of
    from fabricbench.report import write_report

    report = report_of(store, [edr.id, fdr.id, imported.id])
    html_path = write_report(report, d / "report.html")
    return types.SimpleNamespace(dir=d, store=store, edr=edr, fdr=fdr, imported=imported, report=report,
                                 html=html_path.read_text(encoding="utf-8"))


def test_every_benchmark_has_its_section(demo):
    ids = {s.id for s in demo.report.sections}
    assert {"runs", "configuration", "host-differences", "latency", "bandwidth", "message-rate", "collectives",
            "hpcc-network", "hpcc-summary", "other-benchmarks"} <= ids
    subs = {sub.id for s in demo.report.sections for sub in s.subsections}
    assert {"latency-latency", "bw-bandwidth", "bibw-bibandwidth", "mbw_mr-message_rate", "allreduce-latency",
            "barrier-latency", "other-putlat-latency"} <= subs
    assert not [s for s in demo.report.sections if s.id.startswith("error-")]


def test_the_report_renders_what_it_is_given_and_never_queries(demo):
    """Loaded and fitted first (given_for), the report renders with every run's store handle gone:
    a query while rendering would fail its section; the same sections come out."""
    from fabricbench.cli.report import given_for
    from fabricbench.report import build_report

    class NoQueries:
        def __getattr__(self, name):
            raise AssertionError(f"the report queried the store while rendering: {name}")

    runs = demo.store.load_runs([demo.edr.id, demo.fdr.id, demo.imported.id])
    given = given_for(runs)
    for r in runs:
        r.store = NoQueries()
    report = build_report(runs, given)
    assert not [s.id for s in report.sections if s.id.startswith("error-")]
    assert [s.id for s in report.sections] == [s.id for s in demo.report.sections]


def test_html_is_self_contained(demo):
    html = demo.html
    assert "<script" not in html.replace("&lt;script", "")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    imgs = re.findall(r'<img src="data:image/(svg\+xml|png);base64,', html)
    assert len(imgs) == len(demo.report.figures()) >= 11


def test_user_strings_are_escaped(demo):
    html = demo.html
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>lab</b>" not in html and "&lt;b&gt;lab&lt;/b&gt;" in html
    assert "<i>node03</i>" not in html and "&lt;i&gt;node03&lt;/i&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html


def test_units_in_every_table_header(demo):
    tables = [b for s in demo.report.sections for sec in [s] + s.subsections for b in sec.blocks if b.kind == "table"]
    assert tables
    for t in tables:
        numeric = [c for c in t.columns if c.align == "right"]
        for c in numeric:
            assert c.unit, f"column '{c.title}' has no unit"
    assert "decimal MB/s" in demo.html


def test_bandwidth_peak_and_pcie_ceiling(demo):
    bw = next(s for s in demo.report.sections if s.id == "bandwidth")
    text = " ".join(b.text for b in bw.blocks if b.kind == "notice")
    # FDR hosts sit in PCIe Gen3 x8 slots (7,877 MB/s): above FDR's 6,818 MB/s, so FDR stays the ceiling;
    # EDR (12,500 MB/s) on Gen3 x16 (15,754 MB/s) too. No PCIe warning expected here.
    assert "PCIe" not in text
    sub = next(s for s in bw.subsections if s.id == "bw-bandwidth")
    table = next(b for b in sub.blocks if b.kind == "table")
    headers = [c.header for c in table.columns]
    assert any("% of peak (%)" in h for h in headers)
    last = table.cells()[-1]
    pct = [c.text for c, col in zip(last, table.columns) if col.title.endswith("% of peak")]
    # EDR at 1 MiB: 11000 * 1048576 / (1048576 + 4000) = 10958 MB/s = 87.7% of 12,500
    assert pct[0] == "87.7%"
    assert pct[1] == f"{100 * (11000 / 1.6 * 1048576 / (1048576 + 4000)) / 6818.181818:.1f}%"


def test_pcie_ceiling_is_reported_when_lower(tmp_path):
    from fabricbench.cli.report import report_of

    store = fabricbench.open_db(str(tmp_path / "p.db"))
    run = store.save_run([_m("bw", "bandwidth", "MB/s", 1 << 20, 7000.0)], label="narrow slot", tags={"fabric": "edr"},
                         provenance={"nodes": 2}, hosts=[_host("a", pcie_width="x8"), _host("b", pcie_width="x8")])
    report = report_of(store, [run.id])
    bw = next(s for s in report.sections if s.id == "bandwidth")
    notes = " ".join(b.text for b in bw.blocks if b.kind == "notice")
    assert "PCIe Gen3 x8 (7,877 MB/s)" in notes and "is the ceiling, not InfiniBand EDR 4x" in notes


def test_configuration_and_host_differences(demo):
    conf = next(s for s in demo.report.sections if s.id == "configuration")
    table = next(b for b in conf.blocks if b.kind == "table")
    rows = {r[0].text: [c.text for c in r[1:]] for r in table.cells()}
    assert rows["CPU model"][:2] == ["Intel Xeon Gold 6148", "Intel Xeon E5-2698 v3"]
    assert rows["Tuning variable UCX_TLS"][0] == "<img src=x onerror=alert(2)>"  # plain text; escaped by the template
    assert rows["Memory per node"][0] == "192 GiB"
    assert "InfiniBand EDR 4x (tag)" in rows["Fabric"][0]
    hosts = next(s for s in demo.report.sections if s.id == "host-differences")
    t = next(b for b in hosts.blocks if b.kind == "table")
    found = {(r[1].text, r[3].text): (r[4].text, r[5].text) for r in t.cells()}
    assert found[("<i>node03</i>", "kernel")] == ("5.10.0-9-amd64", "5.10.0-21-amd64 (2 hosts)")
    assert found[("<i>node03</i>", "module_params.hfi1.eager_buffer_size")][0] == "2097152"


def test_hpcc_tables_say_better_in_the_right_direction(demo):
    sec = next(s for s in demo.report.sections if s.id == "hpcc-summary")
    table = next(b for b in sec.blocks if b.kind == "table")
    rows = {r[2].text: r for r in table.cells()}
    # FDR vs EDR (baseline): PTRANS 100000 vs 168000 -> 40.5% worse; ring latency 4.0 vs 1.96 us -> 104% worse
    assert rows["PTRANS_GBs"][-2].text == "-40.5%" and rows["PTRANS_GBs"][-2].style == "worse"
    assert rows["NaturallyOrderedRingLatency_usec"][-2].text == "-104.1%"
    assert rows["NaturallyOrderedRingLatency_usec"][4].text == "lower"
    assert rows["HPL_Tflops"][5].text == "30,000.0" and rows["HPL_Tflops"][5].style == "better"
    keys = [r[2].text for r in table.cells()]
    assert keys.index("HPL_Tflops") < keys.index("StarDGEMM_Gflops") < keys.index("StarSTREAM_Triad") < keys.index("PTRANS_GBs") \
        < keys.index("MPIRandomAccess_GUPs") < keys.index("MPIFFT_Gflops") < keys.index("RandomlyOrderedRingLatency_usec")
    assert rows["HPL_Tflops"][0].text.startswith("HPL")
    net = next(s for s in demo.report.sections if s.id == "hpcc-network")
    labels = {r[0].text for b in net.blocks if b.kind == "table" for r in b.cells()}
    assert {"Naturally ordered ring", "Randomly ordered ring", "Ping-pong over pairs"} <= labels


def test_collective_band_uses_per_rank_detail(demo):
    coll = next(s for s in demo.report.sections if s.id == "collectives")
    sub = next(s for s in coll.subsections if s.id == "allreduce-latency")
    table = next(b for b in sub.blocks if b.kind == "table")
    first = table.cells()[0]  # size 0; EDR ranks=2: mean 2.0, per-rank 1.8 .. 2.4
    assert first[1].text == "2.00 [1.80-2.40]"


def test_markdown_and_plots_dir(demo, tmp_path):
    from fabricbench.report import write_report

    out = write_report(demo.report, tmp_path / "wiki" / "report.md", fmt="markdown")
    text = out.read_text(encoding="utf-8")
    plots = sorted((tmp_path / "wiki" / "report_plots").iterdir())
    assert len(plots) == len(demo.report.figures())
    assert all(p.read_bytes().startswith(b"<?xml") for p in plots)
    for p in plots:
        assert f"](report_plots/{p.name})" in text
    assert XSS not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "| Size (bytes) |" in text
    table_lines = [l for l in text.splitlines() if l.startswith("|")]
    # every row of a table has as many cells as its header
    assert table_lines and all(l.endswith("|") for l in table_lines)


def test_cli_report_html_markdown_png(demo, tmp_path):
    from fabricbench.cli.app import main
    import fabricbench.cli.report  # noqa: F401  (attaches the commands)

    db = str(demo.dir / "demo.db")
    runner = CliRunner()
    res = runner.invoke(main, ["--db", db, "report", str(demo.edr.id), str(demo.fdr.id), "-o", str(tmp_path / "r.html"),
                               "--plots-dir", str(tmp_path / "png"), "--plot-format", "png"])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output
    html = (tmp_path / "r.html").read_text()
    assert "data:image/png;base64," in html
    pngs = list((tmp_path / "png").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    res = runner.invoke(main, ["--db", db, "report", str(demo.fdr.id), "--format", "markdown", "-o", str(tmp_path / "x.md"),
                               "--baseline", str(demo.fdr.id)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x_plots").is_dir()
    res = runner.invoke(main, ["--db", db, "report", "999", "-o", str(tmp_path / "no.html")])
    assert res.exit_code == 1 and "no run '999'" in res.output
    assert not (tmp_path / "no.html").exists()


def test_report_of_an_imported_run_without_provenance(tmp_path):
    from fabricbench.cli.report import report_of
    from fabricbench.report import render_html

    store = fabricbench.open_db(str(tmp_path / "i.db"))
    run = store.save_run([_m("latency", "latency", "us", s, 1.0 + s / 1000) for s in SIZES], status="interrupted",
                         message="stopped by Ctrl-C")
    report = report_of(store, [run.id])
    html = render_html(report)
    assert "Little or no provenance recorded" in html
    assert "is interrupted: stopped by Ctrl-C; its results are partial." in html
    assert not [s for s in report.sections if s.id.startswith("error-")]
    assert not [s for s in report.sections if s.id == "host-differences"]


def test_a_new_section_module_is_picked_up_and_a_failing_one_becomes_a_notice(demo, monkeypatch):
    from fabricbench.cli.report import given_for
    from fabricbench.report import build_report, sections
    from fabricbench.report.model import Paragraph, Section

    good = types.ModuleType("fabricbench.report.sections.zz_test_extra")
    good.ORDER = 5
    good.build = lambda ctx: Section("extra", "Extra").add(Paragraph(f"{len(ctx.runs)} runs"))
    bad = types.ModuleType("fabricbench.report.sections.zz_test_broken")
    bad.ORDER = 6

    def boom(ctx):
        raise RuntimeError("kaput")

    bad.build = boom
    mods = sections.discover() + [sections.SectionModule("zz_test_extra", 5, set(), good),
                                  sections.SectionModule("zz_test_broken", 6, set(), bad)]
    monkeypatch.setattr(sections, "_CACHE", sorted(mods, key=lambda m: (m.order, m.name)))
    report = build_report(demo.report.runs, given_for(demo.report.runs))
    assert report.sections[0].id == "extra" and report.sections[0].blocks[0].text == "3 runs"
    broken = next(s for s in report.sections if s.id == "error-zz_test_broken")
    assert "kaput" in broken.blocks[0].text
    assert any(s.id == "latency" for s in report.sections)


def test_discovery_finds_every_builtin_section():
    from fabricbench.report.sections import claimed_benchmarks, discover

    names = [m.name for m in discover()]
    assert names[:3] == ["overview", "configuration", "host_differences"]
    assert names[-1] == "other_benchmarks"
    assert {"latency", "bw", "bibw", "mbw_mr", "allreduce", "ring", "pingpong_pairs", "hpcc"} <= claimed_benchmarks()


def test_seed_example_report(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    try:
        import seed000_switch_latency as example
    finally:
        sys.path.pop(0)
    result = example.run_example(str(tmp_path / "seed.db"), tmp_path / "out")
    html = result["html"].read_text()
    assert "Switch adds 0.125 us on average vs B2B" in html
    assert html.count("data:image/svg+xml;base64,") == 1
    md = result["markdown"].read_text()
    assert "| 512 | 1.03 | 1.16 |" in md
