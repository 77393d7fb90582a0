"""Plots that do not mislead: colour bars with distinct ticks on an honest scale, a comparison
plot with a ratio panel, bars for one-point series, percentile bands, legends without internal
parameters, and '% better' for latencies that stays readable."""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm

import fabricbench
from fabricbench.store import Measurement
from test_report import make_demo_store


def near_equal_profile(a: int = 122256000, b: int = 122257000):
    """Two ranks sending each other almost the same number of bytes (the issue's 1.22256x10^8)."""
    calls = [[r, "MPI_Send", 20, 1000, a if r == 0 else b, 0.5, 1e-4, 1e-3] for r in range(2)]
    return {"format": "fabricbench-mpi-profile", "version": 1, "created": "2024-01-01T00:00:00Z", "ranks": 2, "hosts": ["n1"],
            "mpi": {"library": "Test MPI"}, "command": ["./app"], "timer": "tsc", "size_bins": "",
            "rank_info": [{"rank": r, "host": "n1", "pid": 1, "app_time": 10.0, "mpi_time": 0.5, "untracked_peers": 0} for r in range(2)],
            "call_columns": ["rank", "call", "bin", "count", "bytes", "time", "min", "max"], "calls": calls,
            "matrix_columns": ["src", "dst", "messages", "bytes"],
            "matrix": {"p2p": [[0, 1, 1000, a], [1, 0, 1000, b]], "rma": [], "coll": []}}


def colorbar_labels(fig):
    FigureCanvasAgg(fig).draw()
    bar = fig.axes[-1]
    return [t.get_text() for t in bar.get_yticklabels() if t.get_text()]


def test_profile_matrix_colour_bar_has_distinct_ticks_on_a_scale_from_zero():
    from fabricbench.report.plots.profile import matrix_heatmap

    fig = matrix_heatmap(near_equal_profile())
    labels = colorbar_labels(fig)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
    assert labels[0] == "0" and all("MiB" in lab for lab in labels[1:]), labels
    image = fig.axes[0].images[0]
    assert not isinstance(image.norm, LogNorm) and image.norm.vmin == 0  # nearly equal cells, nearly equal colours

    wide = matrix_heatmap(near_equal_profile(1024, 64 * 2**20))  # a 65,536x range: log scale, power-of-two ticks
    labels = colorbar_labels(wide)
    assert isinstance(wide.axes[0].images[0].norm, LogNorm)
    assert len(set(labels)) == len(labels) >= 3 and "1 KiB" in labels, labels


def test_health_heatmap_colour_bar_ticks_are_distinct():
    import numpy as np

    from fabricbench.report.plots import health as hp

    m = np.full((4, 4), 12000.0) + np.arange(16).reshape(4, 4) * 0.01
    np.fill_diagonal(m, np.nan)
    svg = hp.heatmap(m, ["a", "b", "c", "d"], "bw", "MB/s").decode()
    ticks = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if re.fullmatch(r"[0-9,.]+", t)]
    assert len(ticks) == len(set(ticks)) >= 3, ticks
    assert "9,000" in ticks or "9,600" in ticks  # the scale spans a quarter of the best value: equal pairs look equal


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("plots")
    store, edr, fdr, imported = make_demo_store(d / "demo.db")
    return types.SimpleNamespace(store=store, edr=edr, fdr=fdr, imported=imported)


def figures_of(store, ids):
    from fabricbench.cli.report import report_of

    return {f.slug: f for f in report_of(store, ids).figures()}


def test_a_comparison_plot_when_two_runs_share_a_benchmark(demo):
    both = figures_of(demo.store, [demo.edr.id, demo.fdr.id])
    assert "latency-latency-comparison" in both and "bw-bandwidth-comparison" in both
    fig = both["latency-latency-comparison"]
    assert "Lower panel: each run divided by" in fig.caption and f"EDR" in fig.caption
    svg = fig.data.decode()
    assert "ratio" in svg and "below 1: faster" in svg  # the ratio panel and which way is better
    one = figures_of(demo.store, [demo.edr.id])
    assert "latency-latency" in one and not any(s.endswith("-comparison") for s in one)


def test_a_single_point_is_a_bar_with_its_value(demo):
    figs = figures_of(demo.store, [demo.edr.id, demo.fdr.id])
    barrier = figs["barrier-latency"].data.decode()
    assert ">2.50<" in barrier.replace(" ", "") or "2.50" in barrier  # EDR's barrier written on its bar
    assert "4.00" in barrier  # FDR's (2.5 us x 1.6)


def test_legends_carry_the_run_label_and_only_the_parameters_that_differ():
    from fabricbench.analysis.series import Series
    from fabricbench.report.blocks import series_labels

    run = lambda name: types.SimpleNamespace(name=name)  # noqa: E731
    engine = Series("bw", "bandwidth", "MB/s", {"cache": "warm", "peers": [0, 1], "validate": False, "ranks": 2, "window": 64}, [], run("run 1"))
    imported = Series("bw", "bandwidth", "MB/s", {"ranks": 2}, [], run("osu"))
    assert series_labels([engine, imported]) == ["run 1", "osu"]
    r4 = Series("bw", "bandwidth", "MB/s", {"cache": "warm", "ranks": 4, "window": 64}, [], run("run 1"))
    assert series_labels([engine, r4, imported]) == ["run 1 [ranks=2]", "run 1 [ranks=4]", "osu [ranks=2]"]


def test_percentile_bands_from_the_sketch_else_min_to_p99():
    from fabricbench.report.blocks import band_of, percentile_band

    m = Measurement("latency", {"size": 8}, "latency", "us", value=1.0, min=0.5, p99=3.0, max=9.0)
    assert percentile_band(m) == (0.5, 3.0)
    m.detail = {"sketch": {"q": [0.5 + k / 100 for k in range(101)]}}
    assert percentile_band(m) == (pytest.approx(0.51), pytest.approx(1.49))
    assert percentile_band(Measurement("latency", {"size": 8}, "latency", "us", value=1.0)) == (None, None)
    coll = Measurement("allreduce", {"size": 8}, "latency", "us", value=2.0, min=1.0, max=4.0)
    coll.detail = {"per_rank": [1.8, 2.4]}
    assert band_of(coll) == (1.8, 2.4)


def test_latency_plot_draws_the_spread(demo):
    from fabricbench.cli.report import report_of

    fig = next(f for f in report_of(demo.store, [demo.edr.id]).figures() if f.slug == "latency-latency")
    assert "1st to 99th percentile" in fig.caption


def test_hpcc_latency_thousands_of_times_worse_reads_as_a_factor(tmp_path):
    from fabricbench.cli.report import report_of

    store = fabricbench.open_db(str(tmp_path / "h.db"))
    def hpcc(lat):
        return [Measurement("hpcc", {"test": "RandomlyOrderedRingLatency_usec", "ranks": 4}, "latency", "us", value=lat),
                Measurement("hpcc", {"test": "PTRANS_GBs", "ranks": 4}, "bandwidth", "MB/s", value=1000.0)]
    a = store.save_run(hpcc(0.3), label="shm")
    b = store.save_run(hpcc(0.3 * (1 + 18855.293)), label="lab")
    sec = next(s for s in report_of(store, [a.id, b.id]).sections if s.id == "hpcc-summary")
    table = next(x for x in sec.blocks if x.kind == "table")
    row = next(r for r in table.cells() if r[2].text == "RandomlyOrderedRingLatency_usec")
    assert row[-1].text == "18,856x worse" and row[-1].style == "worse"
    assert not any(re.search(r"-\d{5,}", c.text) for r in table.cells() for c in r)
