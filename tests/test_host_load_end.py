"""A run the host became busy for mid-way is held as too busy to judge: the load recorded at the run's
end counts beside its start's (analysis.host_state.busiest, used by compare and check), and every
session records that end load."""
from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

import fabricbench
from fabricbench.analysis.host_state import busiest
from fabricbench.cli import main
from fabricbench.store import Measurement
from fabricbench.workflows.session import END_LOAD, Session

SIZES = (8, 64, 512)


def latency_points(rng, scale, n=200):
    out = []
    for size in SIZES:
        x = (5.0 + size / 100.0) * scale * rng.lognormal(0, 0.02, n)
        q = np.percentile(x, np.arange(101))
        out.append(Measurement("latency", {"size": size, "ranks": 2}, "latency", "us", value=float(np.median(x)), n=n,
                               min=float(x.min()), median=float(np.median(x)), mean=float(x.mean()), p99=float(q[99]),
                               max=float(x.max()), stdev=float(x.std(ddof=1)),
                               detail={"sketch": {"q": [float(v) for v in q]}}))
    return out


def store_pair(db, end_load):
    """Runs A and B on one idle host at their start; B 2.5x slower, and its host at `end_load` when it ended."""
    store = fabricbench.open_db(str(db))
    rng = np.random.default_rng(3)
    prov = {"nodes": 1, "ranks": 2, "ppn": 2, "hosts": ["h1"], "launcher": "mpirun",
            "host_load": {"loadavg_1m": 0.2, "runnable_others": 0.0, "cpus": 2}}
    prov_b = dict(prov, **({END_LOAD: {"loadavg_1m": end_load, "runnable_others": end_load, "cpus": 2}}
                           if end_load is not None else {}))
    try:
        return [store.save_run(latency_points(rng, scale), kind="benchmark", label=lab, provenance=p, ranks=2)
                for lab, scale, p in (("a", 1.0, prov), ("b", 2.5, prov_b))]
    finally:
        store.close()


def verdicts(db, a, b):
    res = CliRunner().invoke(main, ["--db", str(db), "compare", str(a.id), str(b.id), "--json"], catch_exceptions=False)
    data = json.loads(res.stdout)
    return {p["verdict"] for s in data["series"] for p in s["points"]}, data


def test_a_run_whose_end_load_is_high_is_too_busy_to_judge(tmp_path):
    a, b = store_pair(tmp_path / "quiet.db", None)
    assert busiest([a], [b]) is None
    assert verdicts(tmp_path / "quiet.db", a, b)[0] == {"worse"}  # both quiet: the change is called

    a, b = store_pair(tmp_path / "busy.db", 12.0)
    busy = busiest([a], [b])
    assert busy is not None and busy.side == "B" and busy.load == 12.0
    found, data = verdicts(tmp_path / "busy.db", a, b)
    assert found == {"host busy"}, data["summary"]


def test_a_session_records_the_load_when_its_run_ends(tmp_path):
    store = fabricbench.open_db(str(tmp_path / "s.db"))
    try:
        with Session(store, kind="benchmark", provenance={"host_load": {"loadavg_1m": 0.5, "cpus": 2}}) as s:
            s.add(latency_points(np.random.default_rng(1), 1.0)[0])
        end = store.get_run(s.run_id).provenance[END_LOAD]
        assert end["cpus"] and isinstance(end["loadavg_1m"], float)
        with Session(store, kind="import") as s:  # no load at the start: none is made up at the end
            pass
        assert END_LOAD not in (store.get_run(s.run_id).provenance or {})
    finally:
        store.close()
