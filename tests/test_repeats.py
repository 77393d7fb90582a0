"""`run --repeat N`: launches interleaved, each point stored once with its launches merged in."""
from __future__ import annotations

import json
import signal
import sqlite3
import time

import numpy as np
import pytest
from conftest import skip_unless

from fabricbench.analysis import stats
from fabricbench.store import Measurement, open_db
from fabricbench.suite import Step
from fabricbench.planning import repeats


def point(values, **kw) -> Measurement:
    v = np.asarray(values, dtype=float)
    q = np.percentile(v, np.linspace(0, 100, 101))
    base = dict(benchmark="latency", params={"size": 8, "ranks": 2}, metric="latency", unit="us", n=len(v),
                iterations=len(v), value=float(v.mean()), min=float(v.min()), median=float(np.median(v)),
                mean=float(v.mean()), p99=float(np.percentile(v, 99)), max=float(v.max()), stdev=float(v.std()),
                detail={"sketch": {"q": [float(x) for x in q]}})
    base.update(kw)
    return Measurement(**base)


def test_schedule_interleaves_launches_and_splits_the_budget():
    steps = [Step("latency", "0:64K", ("--time-budget", "0.06")), Step("bw", "1:4M", ("--iterations", "10")),
             Step("allreduce", "4:64", ("--order", "random"))]
    plan = repeats.schedule(steps, 3)
    assert [(s.benchmark, s.launch) for s in plan] == [(b, k) for k in (1, 2, 3) for b in ("latency", "bw", "allreduce")]
    assert plan[0].args == ("--time-budget", "0.02")
    assert plan[1].args == ("--iterations", "4")  # ceil(10 / 3): about the iterations asked for, in all
    assert plan[2].args == ("--order", "random", "--time-budget", "0.0666667", "--seed", "1")
    assert plan[5].args[-1] == "2"  # each launch its own shuffle
    assert repeats.schedule(steps, 1) == steps


def test_merge_keeps_every_launch_and_mixes_the_samples():
    rng = np.random.default_rng(3)
    fast = rng.normal(1.0, 0.01, 400)
    slow = rng.normal(2.0, 0.01, 400)
    a, b = point(fast), point(slow)
    m = stats.merge_launch(a, b)
    assert m.n == 800 and m.iterations == 800
    assert m.min == a.min and m.max == b.max
    assert m.mean == pytest.approx((fast.mean() + slow.mean()) / 2)
    assert m.value == pytest.approx(m.mean)  # a launch's value was its mean, so the merged one is too
    q = stats.sketch(m)
    assert q is not None and q[25] < 1.05 and q[75] > 1.95  # half the samples from each launch
    assert m.stdev == pytest.approx(np.concatenate([fast, slow]).std(), rel=1e-6)
    assert [x["median"] for x in m.detail["launches"]] == [a.median, b.median]
    third = stats.merge_launch(m, point(fast))
    assert len(third.detail["launches"]) == 3 and third.n == 1200
    assert stats.launch_values(third) == [a.median, b.median, pytest.approx(a.median)]


def test_merged_rate_is_the_rate_over_all_iterations():
    # bandwidth: a launch's value is bytes over its elapsed time, neither its mean nor its median
    a = point([100.0, 110.0, 120.0], benchmark="bw", metric="bandwidth", unit="MB/s", value=105.0, iterations=30)
    b = point([200.0, 210.0, 220.0], benchmark="bw", metric="bandwidth", unit="MB/s", value=205.0, iterations=10)
    m = stats.merge_launch(a, b)
    # 40 iterations of equal size: 30 at 105 MB/s and 10 at 205 MB/s
    assert m.value == pytest.approx(40 / (30 / 105.0 + 10 / 205.0))


def run_id(out) -> int:
    return int(out.stdout.split("run ")[1].split()[0])


@pytest.mark.mpi
@pytest.mark.both_mpis
def test_run_repeat_stores_each_point_once_with_its_launches(cli, db_path):
    skip_unless("mpi", "engine")
    out = cli("run", "latency", "allreduce", "--np", "2", "--sizes", "8:64", "--time-budget", "0.03")
    assert "8 points from 2 benchmarks (3 launches each)" in out.stdout
    first = run_id(out)
    store = open_db(str(db_path))
    data = store.load(first)
    assert len(data.measurements) == 8
    for m in data.measurements:
        launches = m.detail["launches"]
        assert len(launches) == 3, m
        assert m.n == sum(x["n"] for x in launches)
        assert m.min == min(x["min"] for x in launches) and m.max == max(x["max"] for x in launches)
    assert store.get_run(first).provenance["repeat"] == 3
    once = run_id(cli("run", "latency", "--np", "2", "--sizes", "8:64", "--time-budget", "0.01", "--repeat", "1"))
    assert all("launches" not in (m.detail or {}) for m in store.load(once).measurements)
    second = run_id(cli("run", "latency", "allreduce", "--np", "2", "--sizes", "8:64", "--time-budget", "0.03"))
    data = json.loads(cli("compare", str(first), str(second), "--json").stdout)
    by_name = {s["definition"]: s for s in data["series"]}
    assert by_name["latency"]["noise_from"] == "launches"
    # the collectives' points carry a per-call distribution and their 3 launches' spread
    assert all(p["p"] is not None for p in by_name["allreduce"]["points"]), by_name["allreduce"]["points"]
    assert "each benchmark launched 3 times, merged per point" in cli("show", str(first)).stdout


@pytest.mark.mpi
def test_sigterm_during_a_later_launch_keeps_the_merged_points(cli, db_path):
    skip_unless("mpi", "engine")
    proc = cli.popen("run", "latency", "bw", "--np", "2", "--sizes", "1:1M", "--time-budget", "0.3",
                     "--precision", "0", "--label", "stopped")  # the budget, not the precision rule, sets its length
    # latency's 21 and bw's 21 points of the first launches, then the second launch of latency merges in
    end = time.monotonic() + 240
    merged = 0
    while time.monotonic() < end and proc.poll() is None:
        time.sleep(0.3)
        if db_path.exists():
            try:
                con = sqlite3.connect(db_path, timeout=5)
                merged = con.execute("SELECT count(*) FROM measurements WHERE detail LIKE '%\"launches\"%'").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:
                continue
            if merged >= 3:
                break
    assert merged >= 3, "no point of a second launch was merged in time"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 143
    store = open_db(str(db_path))
    (run,) = store.list_runs()
    assert run.status == "interrupted"
    points = store.load(run.id).measurements
    keys = [(m.benchmark, m.size) for m in points]
    assert len(keys) == len(set(keys)) == 42  # every point once; none lost, none doubled
    assert sum("launches" in (m.detail or {}) for m in points) >= 3
