"""The engine's `exchange` benchmark and what `predict` makes of it (models.exchange).

Every rank swaps halos with its ring neighbours at once; per size the engine records the
time per message and the core time a message takes from a rank that also computes. When a
profile's ranks shared cores, that core time joins the CPU-bound floor on the fabric the
prediction is for. One test runs the engine (4 ranks, more than this machine's cores when
it has 2); the others build the model directly.
"""
from __future__ import annotations

import dataclasses
import json
import os

import pytest
from conftest import skip_unless
from test_predict import _stored_profile, cpu_profile, model

from fabricbench.models.exchange import ExchangeCost
from fabricbench.models.predict import predict
from fabricbench.store import open_db
from fabricbench.report.words.models import assumption_lines


def with_exchange(m, cpu_us=40.0, latency_us=60.0, share=2.0):
    sizes = (1024.0, 16384.0, 65536.0)
    return dataclasses.replace(m, exchange=ExchangeCost(sizes=sizes, latency_us=(latency_us,) * 3,
                                                        cpu_us=(cpu_us,) * 3, core_share=share))


def test_shared_cores_pay_for_their_messages_on_b():
    """4 ranks x 0.5 s of computation on 2 CPUs, each with 1,000 sends and 1,000 receives of
    64 KiB: on a fabric whose swaps take 40 us of a core per message (a send and a receive),
    the floor is (4 x 0.5 + 4 x 2,000 x 20 us) / 2 = 1.08 s."""
    a, b = model("eth1g")[0], model("edr")[0]
    shared = cpu_profile()
    bare = predict(shared, a, [b])
    p = predict(shared, a, [with_exchange(b)])
    assert bare.cpu_floor["floor_s"] == pytest.approx(1.0) and bare.cpu_floor["messaging_s"] == 0.0
    assert p.cpu_floor["messaging_s"] == pytest.approx(4 * 2000 * 20e-6)
    assert p.cpu_floor["floor_s"] == pytest.approx(1.08) and p.predicted_s == pytest.approx(1.08)
    # the low end takes the bare exchange's time over the core share: 60 / 2 = 30 us a message
    assert p.cpu_floor["messaging_low_s"] == pytest.approx(4 * 2000 * 15e-6)
    assert p.low_s <= p.predicted_s <= p.high_s
    assert any("their messages 0.160 s on" in x and "exchange benchmark" in x for x in assumption_lines(p)), assumption_lines(p)
    assert any("has no exchange benchmark" in x for x in assumption_lines(bare))
    # an exchange measured with a core per rank timed messages, not core time: not counted
    one = predict(shared, a, [with_exchange(b, share=1.0)])
    assert one.cpu_floor["messaging_s"] == 0.0 and any("ran with a core per rank" in x for x in assumption_lines(one))
    # ranks with a core each: no floor, the exchange changes nothing
    own = cpu_profile(cpus=4)
    assert predict(own, a, [with_exchange(b)]).to_dict() == predict(own, a, [b]).to_dict()
    # a blocking Sendrecv is a send and a receive: a whole swap
    sr = cpu_profile()
    for c in sr["calls"]:
        if c[1] == "MPI_Isend":
            c[1] = "MPI_Sendrecv"
        elif c[1] == "MPI_Irecv":
            c[3], c[4] = 0, 0
    sr["calls"] = [c for c in sr["calls"] if c[3]]
    assert predict(sr, a, [with_exchange(b)]).cpu_floor["messaging_s"] == pytest.approx(4 * 1000 * 40e-6)


def test_the_cost_between_and_beyond_the_measured_sizes():
    x = ExchangeCost(sizes=(1024.0, 4096.0, 16384.0), latency_us=(20.0, 30.0, 60.0), cpu_us=(10.0, 16.0, 40.0),
                     core_share=2.0)
    assert x.cpu_per_message_us(1.0) == 10.0 and x.cpu_per_message_us(2560.0) == pytest.approx(13.0)
    assert x.cpu_per_message_us(16384.0 + 12288.0) == pytest.approx(40.0 + 24.0)  # the last slope, carried on
    assert x.cpu_per_message_low_us(4096.0) == pytest.approx(15.0)  # 30 / 2
    assert x.cpu_per_message_low_us(1024.0) == pytest.approx(10.0)  # never above the busy figure


@pytest.mark.mpi
def test_the_engine_measures_the_exchange_and_predict_uses_it(cli, db_path):
    skip_unless("mpi", "engine")
    out = cli("run", "latency", "exchange", "--np", "4", "--sizes", "1K:4K", "--time-budget", "0.02", "--repeat", "1").stdout
    rid = int(out.split("run ")[1].split()[0])
    db = open_db(str(db_path))
    rows = db.measurements(rid, benchmark="exchange")
    assert sorted({(m.metric, m.size) for m in rows}) == [(k, n) for k in ("cpu_per_message", "latency")
                                                          for n in (1024, 2048, 4096)]
    cpus = len(os.sched_getaffinity(0))
    for m in rows:
        assert m.value is not None and m.value >= 0 and m.unit == "us"
        assert m.params["machine_ranks"] == 4 and m.params["core_share"] == pytest.approx(max(1.0, 4 / cpus))
        assert (m.params["compute_us"] > 0) == (m.metric == "cpu_per_message")
    assert all(m.value > 0 for m in rows if m.metric == "latency")
    shown = cli("model", "show", str(rid)).stdout
    assert "exchange on shared cores (core share" in shown and "core time per message" in shown
    # a profile of 4 ranks that shared 2 CPUs, predicted on this run: its messages join the floor
    prof = _stored_profile(db, cpu_profile(), tags={"fabric": "1gbe"})
    data = json.loads(cli("predict", str(prof.id), "--on", str(rid), "--json").stdout)
    if 4 > cpus:  # the engine's ranks shared cores as the profile's did: their messages join the floor
        assert data["cpu_floor"]["messaging_s"] > 0 and data["cpu_floor"]["floor_s"] > 1.0
        text = cli("predict", str(prof.id), "--on", str(rid)).stdout
        assert "s of core time on B; network alone" in text and "(its exchange benchmark: the core time" in text
    else:
        assert data["cpu_floor"]["messaging_s"] == 0 and "ran with a core per rank" in " ".join(data["assumptions"])
