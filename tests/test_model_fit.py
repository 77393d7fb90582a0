"""Communication models: Hockney regimes and breakpoints found from data, LogGP, collectives
scaled by their algorithm's form, catalogue fabrics; `fabricbench model fit/show`."""
import json
import math

import pytest

from fabricbench.analysis.peaks import get_fabric
from fabricbench.models.collective import CollectiveModel, collective_cost_us
from fabricbench.models.fabric import ModelUnavailable, catalogue_models, fit_run
from fabricbench.models.p2p import FitError, fit_hockney, fit_loggp
from fabricbench.store import Measurement, open_db
from fabricbench.report.words.models import model_notes

SIZES = [2 ** k for k in range(0, 23)]


def two_regimes(n):
    """Eager up to 8 KiB (2 us + n / 2000 MB/s), rendezvous above (12 us + n / 5000 MB/s)."""
    return 2.0 + n / 2000.0 if n <= 8192 else 12.0 + n / 5000.0


def test_breakpoint_is_found_where_the_protocol_changes():
    m = fit_hockney(SIZES, [two_regimes(n) for n in SIZES], source="synthetic")
    assert m.breakpoints == [16384]
    eager, rndv = m.regimes
    assert eager.alpha_us == pytest.approx(2.0, rel=1e-3) and eager.beta_MBps == pytest.approx(2000, rel=1e-3)
    assert rndv.alpha_us == pytest.approx(12.0, rel=1e-3) and rndv.beta_MBps == pytest.approx(5000, rel=1e-3)
    assert m.fit.max_rel < 1e-6 and m.valid_sizes == (1, 4 * 1024 * 1024)


def test_a_straight_line_gets_one_regime_even_with_noise():
    noise = [1.0 + 0.02 * math.sin(7 * i) for i in range(len(SIZES))]
    m = fit_hockney(SIZES, [(5 + n / 1000) * f for n, f in zip(SIZES, noise)])
    assert len(m.regimes) == 1 and m.fit.max_rel < 0.05
    assert m.alpha_us == pytest.approx(5, rel=0.05) and m.beta_MBps == pytest.approx(1000, rel=0.05)


def test_too_little_data_is_one_clear_error():
    with pytest.raises(FitError, match="no point"):
        fit_hockney([8, 16], [0, -1], source="run 3: latency")
    assert fit_hockney([0], [4.0]).time_us(123) == 4.0  # a barrier: one size, a constant


def test_loggp_from_overheads_and_gaps():
    recs = []
    for s in (1, 1024, 65536):
        recs += [{"size": s, "metric": "latency", "value": 5 + s / 1000},
                 {"size": s, "metric": "overhead_send", "value": 1 + s * 1e-4},
                 {"size": s, "metric": "overhead_recv", "value": 0.5},
                 {"size": s, "metric": "gap", "value": 2 + (s - 1) * 1e-3}]
    g = fit_loggp(recs)
    assert g.o_send_us == pytest.approx(1, rel=1e-6) and g.O_us_per_byte == pytest.approx(1e-4, rel=1e-6)
    assert g.g_us == pytest.approx(2, rel=1e-6) and g.G_us_per_byte == pytest.approx(1e-3, rel=1e-6)
    assert g.L_us == pytest.approx(5.001 - 1.0001 - 0.5, rel=1e-6)
    with pytest.raises(FitError, match="LogGP needs"):
        fit_loggp(recs[:1])


def test_collectives_scale_with_their_algorithm_form():
    fitted = CollectiveModel("alltoall", 4, fit_hockney(SIZES, [30 + 3 * n / 100 for n in SIZES]), derived=False)
    # pairwise exchange: (p-1) latencies and (p-1) blocks; from 4 to 8 ranks both terms grow 7/3.
    assert fitted.time_us(1000, 8) == pytest.approx((30 + 30) * 7 / 3, rel=1e-3)
    assert fitted.time_us(1000, 4) == pytest.approx(60, rel=1e-3)
    p2p = catalogue_models(get_fabric("edr"))[0].p2p
    # Not measured: derived from point-to-point, allreduce = log2(p) alpha + 2 (p-1)/p n / beta.
    cost = collective_cost_us({}, p2p, "MPI_Allreduce", 1e6, 16)
    assert cost == pytest.approx(4 * p2p.alpha_us + 2 * 15 / 16 * 1e6 / p2p.beta_MBps)
    assert collective_cost_us({}, p2p, "MPI_Send", 8, 16) is None


def test_catalogue_fabrics_with_figures_are_models_and_others_say_why():
    for key in ("edr", "opa100", "eth10g", "eth1g", "ddr"):
        mid, fast, slow = catalogue_models(get_fabric(key))
        assert fast.p2p.time_us(1 << 20) < mid.p2p.time_us(1 << 20) < slow.p2p.time_us(1 << 20)
        assert get_fabric(key).perf_source
    with pytest.raises(ModelUnavailable, match="no MPI latency and bandwidth figures"):
        catalogue_models(get_fabric("ndr"))
    # IB DDR beats 1 GbE on latency and bandwidth by the published figures.
    ddr, gige = catalogue_models(get_fabric("IB DDR 4x" if get_fabric("IB DDR 4x") else "ddr"))[0], catalogue_models(get_fabric("1gbe"))[0]
    assert ddr.p2p.time_us(8) < gige.p2p.time_us(8) / 5 and ddr.p2p.beta_MBps > 10 * gige.p2p.beta_MBps


def _engine_run(db):
    run = db.create_run(label="engine", ranks=4)
    pts = [Measurement("latency", {"size": n}, "latency", "us", value=two_regimes(n), median=two_regimes(n)) for n in SIZES]
    pts += [Measurement("allreduce", {"size": n}, "latency", "us", value=20 + n / 500, median=20 + n / 500) for n in SIZES[2:]]
    pts += [Measurement("barrier", {"size": 0}, "latency", "us", value=9.0, median=9.0)]
    # Every sample of this alltoall had a descheduled rank: 100x its algorithm over point-to-point.
    pts += [Measurement("alltoall", {"size": n}, "latency", "us", value=5000.0, median=5000.0) for n in SIZES[:6]]
    for s in (1, 64, 4096):
        for metric, v in (("latency", 2 + s / 2000), ("overhead_send", 0.4), ("overhead_recv", 0.3), ("gap", 0.8 + s / 4000)):
            pts.append(Measurement("loggp", {"size": s}, metric, "us", value=v, median=v))
    db.add_measurements(run.id, pts)
    db.finish_run(run.id, "complete")
    return db.get_run(run.id)


def test_fit_run_and_the_model_commands(cli, db_path):
    db = open_db(str(db_path))
    run = _engine_run(db)
    m = fit_run(run, db.measurements(run.id))
    assert m.p2p.breakpoints == [16384] and set(m.collectives) == {"allreduce", "barrier"} and m.loggp is not None
    assert any("alltoall: measured 5000 us" in n and "disturbed" in n for n in model_notes(m))
    assert m.collectives["allreduce"].time_us(1000, 4) == pytest.approx(22, rel=1e-3)

    out = cli("model", "fit", str(run.id)).stdout
    assert "protocol breakpoints found at 16 KiB" in out and "alpha 2.00 us, beta 2,000.0 MB/s" in out
    assert "LogGP: L" in out and "allreduce on 4 ranks" in out
    data = json.loads(cli("model", "show", str(run.id), "--json").stdout)
    assert data["model"]["p2p"]["regimes"][1]["size_min"] == 16384
    shown = cli("model", "show", "edr").stdout
    assert "InfiniBand EDR 4x (catalogue)" in shown and "band ends" in shown

    empty = db.create_run(label="no latency")
    db.finish_run(empty.id, "complete")
    bad = cli("model", "fit", str(empty.id), check=False)
    assert bad.returncode == 2 and "has no latency points" in bad.stderr and "Traceback" not in bad.stderr
    bad = cli("model", "show", "ndr", check=False)
    assert bad.returncode == 2 and "no MPI latency and bandwidth figures" in bad.stderr


@pytest.mark.mpi
def test_the_engine_measures_loggp_and_the_model_uses_it(cli, db_path, monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    cli("run", "latency", "loggp", "--np", "2", "--sizes", "1:256", "--iterations", "10", "--repeat", "1")
    db = open_db(str(db_path))
    ms = db.measurements(1, benchmark="loggp")
    assert {m.metric for m in ms} == {"latency", "overhead_send", "overhead_recv", "gap"}
    assert len(ms) == 4 * 9 and all(m.unit == "us" and m.value >= 0 for m in ms)
    out = cli("model", "fit", "1").stdout
    assert "LogGP: L" in out and "sizes 1 B .. 256 B" in out


def token_bucket(n, depth=65536, rate=12.0, alpha=12.0, burst=4000.0):
    """A ping-pong over a token bucket: a message within the bucket's depth passes at memory
    speed; beyond it, everything past the depth goes at the link's rate (MB/s = bytes/us)."""
    return alpha + n / burst if n <= depth else alpha + depth / burst + (n - depth) / rate


def test_a_burst_regime_is_fitted_as_one_and_not_extrapolated():
    sizes = [2 ** k for k in range(0, 21)]  # to 1 MiB
    m = fit_hockney(sizes, [token_bucket(n) for n in sizes], ceiling_MBps=12.0)
    steady = m.regimes[-1]
    assert steady.beta_MBps == pytest.approx(12.0, rel=0.05) and steady.alpha_us < 0  # the depth passes free
    assert m.fit.median_rel < 0.02
    # Fitted only to 64 KiB (all burst), the model must not cost 4 MiB at memory speed.
    burst_only = fit_hockney(sizes[:17], [token_bucket(n) for n in sizes[:17]], ceiling_MBps=12.0)
    assert burst_only.beta_MBps > 1000
    assert burst_only.time_us(4 << 20) >= ((4 << 20) - 65536) / 12.0  # past the fitted sizes: the link rate
    assert fit_hockney(sizes[:17], [token_bucket(n) for n in sizes[:17]]).time_us(4 << 20) < (4 << 20) / 100


def test_the_least_disturbed_points_are_what_is_fitted():
    from fabricbench.models.fabric import fitted_points, lower_envelope

    # A descheduled sample (size 8 at 160 us) is lowered to what a larger size achieved.
    assert lower_envelope({1: 12.0, 8: 160.0, 32: 11.9, 64: 13.0}) == ([1, 8, 32, 64], [11.9, 11.9, 11.9, 13.0])
    pts = [Measurement("latency", {"size": 8}, "latency", "us", value=160, median=160, min=15),
           Measurement("latency", {"size": 8}, "latency", "us", value=20, median=20, min=14),
           Measurement("bw", {"size": 8}, "bandwidth", "MB/s", value=1, median=1)]
    assert fitted_points(pts) == {"latency": ([8.0], [14])}


def test_a_stream_of_messages_costs_at_least_the_gap():
    db_model = catalogue_models(get_fabric("eth1g"))[0]
    recs = [{"size": s, "metric": m, "value": v} for s in (1, 1024, 65536)
            for m, v in (("latency", 20 + s / 1000), ("overhead_send", 2.0), ("overhead_recv", 1.0), ("gap", 5 + (s - 1) / 12.0))]
    import dataclasses
    with_gap = dataclasses.replace(db_model, loggp=fit_loggp(recs))
    # 16 KiB: ping-pong ~ 56 us on the catalogue figures, a stream 1,370 us at 12 MB/s per byte.
    assert db_model.message_us(16384) == db_model.p2p.time_us(16384)
    assert with_gap.message_us(16384) == pytest.approx(5 + 16383 / 12.0, rel=1e-6)
    assert with_gap.message_us(1) == pytest.approx(with_gap.p2p.time_us(1))  # small: latency dominates


def test_a_collective_is_fitted_to_its_mean_over_ranks():
    """A collective's samples are ranks: its minimum is the rank that waited least, not its cost."""
    from fabricbench.models.fabric import fitted_points

    def alltoall(size, per_rank):
        mean = sum(per_rank) / len(per_rank)
        return Measurement("alltoall", {"size": size, "ranks": 4}, "latency", "us", value=mean, median=mean,
                           min=min(per_rank), detail={"stats_over": "per-rank average call time", "per_rank": per_rank})

    # The 100mbit alltoall of the what-if lab at 4 and 8 KiB: one rank left early every time.
    pts = [alltoall(4096, [107.6, 1005.4, 617.4, 250.4]), alltoall(8192, [131.3, 2019.6, 1299.6, 559.1])]
    sizes, times = fitted_points(pts)["alltoall"]
    assert sizes == [4096.0, 8192.0]
    assert times == pytest.approx([495.2, 1002.4], rel=1e-3)
    # A point without per-rank samples (an import) keeps the least disturbed sample.
    imported = Measurement("alltoall", {"size": 4096, "ranks": 4}, "latency", "us", value=900.0, median=850.0, min=400.0)
    assert fitted_points([imported])["alltoall"] == ([4096.0], [400.0])


def test_a_stream_of_collectives_costs_at_least_its_busiest_links_gap():
    from fabricbench.models.collective import collective_stream_floor_us

    gap = lambda n: 3.0 + max(n - 1, 0) * 0.0837  # the 100mbit lab's LogGP: g 3 us, G 83.7 ns/B (11.9 MB/s)
    # QE's alltoall on 2 ranks, 21.4 KiB per destination: one message through each link per call.
    assert collective_stream_floor_us("MPI_Alltoall", 21_900, 2, gap) == pytest.approx(gap(21_900))
    # On 4 ranks, pairwise exchange: 3 blocks leave through each rank's link.
    assert collective_stream_floor_us("MPI_Alltoall", 6_300, 4, gap) == pytest.approx(3 * gap(6_300))
    # Alltoallv's profiled bytes are the whole send buffer: per peer is a (p - 1)th of it.
    assert collective_stream_floor_us("MPI_Alltoallv", 3 * 6_300, 4, gap) == pytest.approx(3 * gap(6_300))
    # A rooted one: the root leaves once its sends are buffered, the mean over ranks carries (p-1)/p.
    assert collective_stream_floor_us("MPI_Bcast", 6_700, 2, gap) == pytest.approx(0.5 * gap(6_700))
    assert collective_stream_floor_us("MPI_Barrier", 0, 4, gap) == 0.0
    assert collective_stream_floor_us("MPI_Send", 6_700, 2, gap) == 0.0
