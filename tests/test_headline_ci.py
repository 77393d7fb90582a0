"""The run summary gives bandwidth's figure of record (the rate over all iterations) with its 95% CI, as it
gives latency's median with its own, within 80 columns."""
from __future__ import annotations

import numpy as np

import fabricbench
from fabricbench import numbers as fmt
from fabricbench.analysis.record import figure_of_record
from fabricbench.cli.measure import headline_lines
from fabricbench.store import Measurement


def point(bench, metric, unit, size, x, value):
    q = np.percentile(x, np.arange(101))
    return Measurement(bench, {"size": size, "ranks": 2, "window": 64}, metric, unit, value=float(value), n=len(x),
                       min=float(x.min()), median=float(np.median(x)), mean=float(x.mean()), p99=float(q[99]),
                       max=float(x.max()), stdev=float(x.std(ddof=1)), detail={"sketch": {"q": [float(v) for v in q]}})


def test_the_bandwidth_headline_carries_the_ci_of_its_rate(tmp_path):
    rng = np.random.default_rng(7)
    lat = rng.lognormal(np.log(4.5), 0.03, 300)
    rates = 117.0 * rng.lognormal(0, 0.02, 150)
    rates[:4] /= 10.0  # four stalled windows: the rate over all iterations sits below the median window
    points = [point("latency", "latency", "us", 8, lat, lat.mean()),
              point("bw", "bandwidth", "MB/s", 4 << 20, rates, len(rates) / np.sum(1.0 / rates))]
    store = fabricbench.open_db(str(tmp_path / "h.db"))
    try:
        run = store.save_run(points, kind="benchmark", label="ci", provenance={"nodes": 2, "ranks": 2}, ranks=2)
        lines = headline_lines(store, run)
    finally:
        store.close()
    text = " ".join(" ".join(lines).split())
    bw = figure_of_record(points[1])
    assert bw.ci is not None and bw.ci[0] < bw.value < bw.ci[1] < points[1].median
    assert (f"peak bandwidth {fmt.number(bw.value)} MB/s at 4 MiB (rate over all iterations, 95% CI "
            f"{fmt.number(bw.ci[0])}-{fmt.number(bw.ci[1])}") in text, text
    assert f"lowest latency {fmt.number(points[0].median)} us at 8 B (median, 95% CI " in text, text
    assert all(len(line) <= 80 for line in lines), lines
