"""The engine's host probe and what `compare` makes of it (analysis.host_state).

A host that changes state between two runs (on a VM, where the hypervisor puts the virtual
CPUs: a cache line's round trip 0.09 or 0.32 us) moves every figure of a shared-memory run;
the probe at the start of each launch sees it. The stored runs here are built through the
Store as `run --repeat 3` stores them, with a probe per launch; one test runs the engine.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import skip_unless
from test_compare_cli import InProcess
from test_compare_history import SIZES, latency_point

import fabricbench
from fabricbench.analysis.host_state import allowance, host_shift, sensitivity
from fabricbench.report.words.host import probes_text as describe_probes
from fabricbench.report.words.host import shift_text
from fabricbench.store import HOST_PROBE, Host

PROV = {"nodes": 1, "ranks": 2, "ppn": 2, "hosts": ["vm"], "mpi_library": "Open MPI 4.1", "repeat": 3}
FAST, SLOW = 0.09, 0.32  # the two states of the round trip on this machine's VM


def probes(c2c, benchmark="latency", launches=3, rng=None, loop=142.0):
    rng = rng or np.random.default_rng(1)
    return [{"loop_us": [loop * rng.lognormal(0, 0.001)] * 2, "c2c_us": c2c * rng.lognormal(0, 0.035),
             "c2c_ranks": [0, 1], "benchmark": benchmark, "launch": k + 1} for k in range(launches)]


def save(store, rng, level, c2c, label, host="vm"):
    run = store.save_run([latency_point(s, rng, level) for s in SIZES], kind="benchmark", label=label,
                         provenance=dict(PROV, hosts=[host]), ranks=2, hosts=[Host(host, "d-" + host, {})])
    for p in probes(c2c, rng=rng):
        store.add_artifact(run.id, HOST_PROBE, p)
    return run.id


@pytest.fixture
def fb(db_path):
    return InProcess(db_path)


def verdicts(fb, a, b, *args):
    data = json.loads(fb("compare", str(a), str(b), "--json", "--no-history", *args).stdout)
    return data, [p["verdict"] for s in data["series"] for p in s["points"]]


def test_a_state_flip_is_seen_and_a_steady_host_is_not():
    rng = np.random.default_rng(3)
    flip = host_shift(probes(FAST, rng=rng), probes(SLOW, rng=rng), "latency", "latency")
    assert flip is not None and flip.figure == "c2c_us" and 3.0 < flip.factor < 4.3 and flip.p < 0.01
    assert "round trip between two cores took" in shift_text(flip) and "in B (" in shift_text(flip)
    assert host_shift(probes(SLOW, rng=rng), probes(SLOW, rng=rng), "latency", "latency") is None
    # the benchmark's own launches count: A's bw launches were slow like all of B's
    a = probes(FAST, "latency", rng=rng) + probes(SLOW, "bw", rng=rng)
    b = probes(SLOW, "latency", rng=rng) + probes(SLOW, "bw", rng=rng)
    assert host_shift(a, b, "latency", "latency") is not None and host_shift(a, b, "bw", "bw") is None
    # a clock that slowed by 8% shows in the integer chain
    slow_clock = host_shift(probes(SLOW, rng=rng), probes(SLOW, rng=rng, loop=153.4), "latency", "latency")
    assert slow_clock.figure == "loop_us" and slow_clock.factor == pytest.approx(1.08, abs=0.01)
    text = describe_probes(probes(FAST, rng=rng) + probes(SLOW, rng=rng))
    assert text.startswith("host probe over 6 launches: integer chain 14") and "core-to-core round trip 0.2" in text
    assert "(0.08" in text and " to 0.3" in text  # the two states show as a range


def test_compare_does_not_call_what_the_host_itself_changed(fb, db_path):
    rng = np.random.default_rng(11)
    store = fabricbench.open_db(str(db_path))
    a = save(store, rng, 1.0, FAST, "A")
    flipped = save(store, rng, 2.5, SLOW, "same fabric, host in its slow state")
    steady = save(store, rng, 2.5, FAST, "2.5x slower, host as in A")
    beyond = save(store, rng, 9.0, SLOW, "9x slower, more than the host moved")
    elsewhere = save(store, rng, 2.5, SLOW, "another machine", host="vm2")
    store.close()

    data, found = verdicts(fb, a, flipped)
    assert "worse" not in found and "better" not in found and found.count("host changed") >= 10, found
    assert data["host_note"].startswith("The host itself changed state between the runs: a cache line's round trip")
    assert data["series"][0]["host_shift"]["figure"] == "c2c_us"
    assert "changed no more than the host itself did" in data["summary"]
    out = fb("compare", str(a), str(flipped)).stdout
    assert "host changed" in out and "rerun both while the host is in one state" in out
    # the same change with the host as it was is the fabric's: called
    _data, found = verdicts(fb, a, steady)
    assert found.count("worse") == len(SIZES) and "host changed" not in found
    # a change beyond the host's own is called, host move or not
    _data, found = verdicts(fb, a, beyond)
    assert found.count("worse") == len(SIZES)
    # two machines: a different probe is a different machine, not a state; nothing is excused
    data, found = verdicts(fb, a, elsewhere)
    assert found.count("worse") == len(SIZES) and data["host_note"] == ""
    # check after maintenance names what the host explains, and does not fail on it
    fb("baseline", "set", "before", str(a))
    out = fb("check", str(flipped), "--against", "before", "--no-history", check=False)
    # Held, not passed: check cannot judge a point the host's own change explains (exit 3).
    assert out.returncode == 3 and "host changed: latency" in out.stdout and "CANNOT JUDGE" in out.stdout, out.stdout


@pytest.mark.both_mpis
def test_every_engine_launch_stores_its_probe(cli):
    skip_unless("mpi", "engine")
    run = cli("run", "latency", "--np", "2", "--sizes", "0:64", "--time-budget", "0.01", "--repeat", "2").stdout
    rid = int(run.split("run ")[1].split()[0])
    shown = json.loads(cli("show", str(rid), "--json").stdout)["host_probes"]
    assert [p["launch"] for p in shown] == [1, 2] and all(p["benchmark"] == "latency" for p in shown)
    for p in shown:
        assert len(p["loop_us"]) == 2 and all(x > 0 for x in p["loop_us"])
        if (os.cpu_count() or 1) >= 2:  # two ranks on two cores of one node: the round trip is measured,
            if p["c2c_us"] is None:  # unless a busy host kept the two from running at once: then it says so
                assert p["c2c_skipped"] == "the two ranks did not run at the same time", p
            else:
                assert p["c2c_us"] > 0 and p["c2c_ranks"] == [0, 1], p
    assert "host probe over 2 launches: integer chain" in cli("show", str(rid)).stdout
    crowded = cli("run", "latency", "--np", str((os.cpu_count() or 1) + 1), "--sizes", "0:8", "--time-budget", "0.01",
                  "--repeat", "1").stdout
    rid = int(crowded.split("run ")[1].split()[0])
    (probe,) = json.loads(cli("show", str(rid), "--json").stdout)["host_probes"]
    assert probe["c2c_us"] is None and probe["c2c_skipped"] == "ranks outnumber the cores of a node"


def test_lint_names_a_host_that_changed_state(fb, db_path):
    rng = np.random.default_rng(5)
    store = fabricbench.open_db(str(db_path))
    a, b, c = save(store, rng, 1.0, FAST, "A"), save(store, rng, 2.5, SLOW, "B"), save(store, rng, 1.0, FAST, "C")
    store.close()
    out = fb("lint", str(a), str(b), check=False).text
    assert f"the host itself was in another state than in run {a}: a cache line's round trip" in out, out
    assert "another state" not in fb("lint", str(a), str(c), check=False).text


def test_how_much_a_point_follows_the_host_is_learnt_when_states_mix_within_a_run():
    """A's launches all in the fast state, B's in the slow, slow, fast: the round trip moved 2.3x.
    A ping-pong that follows it is held; a transfer 1.8x slower at every launch, whatever the
    state, is the fabric's doing (a 4 MiB TCP bandwidth against shared memory)."""
    a_probes = [{"loop_us": [142.0], "c2c_us": c, "benchmark": "bw", "launch": k + 1}
                for k, c in enumerate([FAST, FAST, FAST])]
    b_probes = [{"loop_us": [142.0], "c2c_us": c, "benchmark": "bw", "launch": k + 1}
                for k, c in enumerate([SLOW, SLOW, FAST])]
    shift = host_shift(a_probes, b_probes, "bw", "bw")
    assert shift is not None and 2.2 < shift.factor < 2.4
    follows = sensitivity(shift, [1.0, 1.01, 0.99], [3.5, 3.6, 1.0])  # a latency that is the state
    assert follows == pytest.approx(1.0, abs=0.05)
    assert np.log((3.5 * 3.6 * 1.0) ** (1 / 3) / 1.0) <= allowance(shift, 0.03, follows)  # held: the host explains it
    steady = sensitivity(shift, [1000.0, 1010.0, 990.0], [550.0, 560.0, 555.0])  # bandwidth that is not
    assert steady is not None and steady < 0.05
    assert abs(np.log(555 / 1000)) > allowance(shift, 0.03, steady)  # called: the fabric's doing
    # no state changed within either run: nothing to learn from, the point is taken to follow fully
    flat = host_shift(a_probes, [dict(p, c2c_us=SLOW) for p in b_probes], "bw", "bw")
    assert sensitivity(flat, [1000.0, 1010.0, 990.0], [550.0, 560.0, 555.0]) is None
    assert allowance(flat, 0.03, None) == pytest.approx(np.log(SLOW / FAST) + np.log(1.03), rel=0.01)
