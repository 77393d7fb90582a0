"""The precision stopping rule (--precision) and the collectives' per-call distribution.

Real engine runs (2-4 ranks). Nothing here asserts a wall-clock time: a loaded machine may
take longer, but the records must say truthfully why each point stopped and what it reached."""
from __future__ import annotations

import math

import pytest

from tests.test_engine import RUN_TIMEOUT, check_complete_run, run_engine, validator, engine  # noqa: F401

pytestmark = pytest.mark.mpi


def ci_ranks(n: int):
    """The 0-based order statistics bounding the median's 95 % CI (the engine's binomial rule)."""
    if n < 6:
        return None
    cdf, j = 0.0, 0
    for k in range(n):
        pmf = math.comb(n, k) / 2 ** n
        if cdf + pmf > 0.025:
            break
        cdf += pmf
        j = k + 1
    j = max(j, 1)
    return j - 1, n - j


def test_ci_rule_matches_the_binomial_coverage():
    # The rule itself, as the engine applies it: coverage at least 95 %, and one rank
    # narrower would fall below it.
    for n in (6, 7, 10, 30, 100, 1000):
        lo, hi = ci_ranks(n)
        cover = sum(math.comb(n, k) for k in range(lo + 1, hi + 1)) / 2 ** n
        assert cover >= 0.95
        narrower = sum(math.comb(n, k) for k in range(lo + 2, hi)) / 2 ** n
        assert narrower < 0.95


def test_a_point_that_reaches_its_precision_stops_early(engine, validator):
    # A loose target, a generous ceiling: the rule must stop long before the budget's count.
    run = run_engine(engine, 2, ["latency", "--sizes", "8:8", "--time-budget", "5", "--precision", "0.25"])
    points = check_complete_run(run, validator, 2, "latency")
    assert run.records[0]["options"]["precision"] == 0.25
    (p,) = points
    d = p["detail"]
    assert d["stop"] == "precision"
    assert p["n"] >= 30 and p["iterations"] >= 10  # the rule's floor of samples, --min-iterations
    assert p["iterations"] < d["iterations_planned"]
    assert "stopped_early" not in d  # stopping on precision is not the guard's cut
    pr = d["precision"]
    assert pr["confidence"] == 0.95 and pr["target"] == 0.25
    lo, hi = pr["median_ci"]
    assert p["min"] <= lo <= p["median"] <= hi <= p["max"]
    assert pr["reached"] == pytest.approx((hi - lo) / 2 / p["median"])
    # The rule looked at rank 0's round trips, the record at the same samples halved: same figure.
    assert pr["met"] is True and pr["reached"] <= 0.25


def test_an_unreachable_precision_is_given_up_and_marked(engine, validator):
    # 1e-9 of the median needs about 10^14 times the samples a 1 % interval does: once half
    # the budget is spent the rule sees that the budget cannot hold them and stops,
    # never before --min-iterations (8 samples if 30 would not fit, a loaded machine's pace);
    # a point whose ceiling came first says so.
    run = run_engine(engine, 2, ["bw", "--sizes", "1K:2K", "--window", "4", "--time-budget", "1",
                                 "--precision", "1e-9"])
    points = check_complete_run(run, validator, 2, "bw")
    for p in points:
        d = p["detail"]
        assert d["stop"] in ("unreachable", "budget", "guard")  # never "precision"
        assert d["precision"]["target"] == 1e-9 and d["precision"]["met"] is False
        assert p["iterations"] >= 8
        if d["stop"] == "unreachable":
            assert p["n"] >= 8 and "stopped_early" not in d  # the rule gave up, not the guard
    assert any(p["detail"]["stop"] == "unreachable" for p in points)


def test_a_plan_that_was_too_short_goes_on_until_the_precision(engine, validator):
    # The hook makes the warm-up look a million times slower (a preempted rank): the plan is
    # --min-iterations, far short of the target; the rule goes on past it while the budget lasts.
    run = run_engine(engine, 2, ["latency", "--sizes", "8:8", "--time-budget", "5", "--precision", "0.25",
                                 "--test-overestimate", "1e6"])
    (p,) = check_complete_run(run, validator, 2, "latency")
    d = p["detail"]
    assert run.records[0]["options"]["test_overestimate"] == 1e6
    assert d["stop"] == "precision" and d["precision"]["met"] is True
    assert d["iterations_planned"] == 10 < p["iterations"] and p["n"] >= 30
    assert p["n"] == p["iterations"] // d["batch"]  # whole samples, every one reported


def test_precision_zero_fills_the_budget_and_fixed_counts_have_no_target(engine, validator):
    off = check_complete_run(run_engine(engine, 2, ["latency", "--sizes", "0:0", "--time-budget", "0.01",
                                                    "--precision", "0"]), validator, 2, "latency")
    assert off[0]["detail"]["stop"] in ("budget", "guard")
    assert off[0]["detail"]["precision"]["target"] is None and "met" not in off[0]["detail"]["precision"]
    fixed = run_engine(engine, 2, ["latency", "--sizes", "0:0", "--iterations", "40"])
    p = check_complete_run(fixed, validator, 2, "latency")[0]
    assert fixed.records[0]["options"]["precision"] is None
    assert p["detail"]["stop"] == "iterations" and p["detail"]["precision"]["target"] is None
    assert p["n"] == -(-40 // p["detail"]["batch"])
    assert p["detail"]["precision"]["reached"] is None or p["detail"]["precision"]["reached"] >= 0


def test_every_adaptive_point_records_its_precision_by_default(engine, validator):
    run = run_engine(engine, 4, ["alltoall", "--sizes", "1:4", "--time-budget", "0.02"])
    points = check_complete_run(run, validator, 4, "alltoall")
    assert run.records[0]["options"]["precision"] == 0.01  # the default rule
    for p in points:
        pr = p["detail"]["precision"]
        assert pr["target"] == 0.01 and isinstance(pr["met"], bool)
        assert p["detail"]["stop"] in ("precision", "budget", "guard", "unreachable")
        if pr["met"]:
            assert pr["reached"] <= 0.01


@pytest.mark.parametrize("benchmark", ["allreduce", "bcast", "barrier"])
def test_collectives_carry_a_per_call_distribution(engine, validator, benchmark):
    args = [benchmark, "--iterations", "60"] + ([] if benchmark == "barrier" else ["--sizes", "8:64"])
    points = check_complete_run(run_engine(engine, 4, args), validator, 4, benchmark)
    for p in points:
        d = p["detail"]
        assert p["n"] == p["iterations"] == 60  # one sample per call, not one per rank
        assert 0 < p["min"] <= p["median"] <= p["p99"] <= p["max"]
        assert p["min"] <= p["mean"] <= p["max"]
        q = d["sketch"]["q"]
        assert q[50] == pytest.approx(p["median"]) and q[99] == pytest.approx(p["p99"])
        lo, hi = d["precision"]["median_ci"]
        assert lo <= p["median"] <= hi
        # OSU's column is still there: the mean over ranks of each rank's average call time,
        # which no rank's average exceeds and which cannot exceed the mean of per-call maxima.
        assert len(d["per_rank"]) == 4
        assert p["value"] == pytest.approx(sum(d["per_rank"]) / 4)
        assert d["rank_average_min"] <= p["value"] <= d["rank_average_max"] <= p["mean"] * (1 + 1e-9)


def test_a_collective_stopped_by_its_precision_met_it_in_its_record(engine, validator):
    # The rule judges the per-call maxima over ranks, the very values of the record.
    points = check_complete_run(run_engine(engine, 4, ["allreduce", "--sizes", "8:8", "--time-budget", "5",
                                                       "--precision", "0.3"]), validator, 4, "allreduce")
    d = points[0]["detail"]
    assert d["stop"] == "precision" and points[0]["n"] >= 30
    assert d["precision"]["met"] is True and d["precision"]["reached"] <= 0.3


@pytest.mark.parametrize("args", [["bw", "--sizes", "1K:4K", "--window", "8"],
                                  ["loggp", "--sizes", "8:8"]])
def test_a_point_stopped_by_its_precision_meets_it_in_its_record(engine, validator, args):
    # The rule judges what the record reports: bandwidths (the reciprocals of the times it
    # measured), loggp's overheads timed inside an iteration and its gap (a difference of
    # two trains), not the iteration times.
    run = run_engine(engine, 2, args + ["--time-budget", "2", "--precision", "0.1"])
    points = check_complete_run(run, validator, 2, args[0])
    stopped = [p for p in points if p["detail"]["stop"] == "precision"]
    assert stopped
    for p in stopped:
        assert p["detail"]["precision"]["met"] is True, (p["metric"], p["detail"]["precision"])
