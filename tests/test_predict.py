"""`fabricbench predict`: a profile measured on A re-costed for B.

Real programs (built here with mpicc, profiled with the real profiler on 2 ranks): one that
only computes gets its own run time on every fabric; one that only sends messages scales by
the models' cost ratio. Then seed 004's question from the catalogue.
"""
import json
import shutil
import subprocess

import pytest

from fabricbench.analysis.peaks import get_fabric
from fabricbench.importers.fbprofile import store_profile
from fabricbench.models.fabric import catalogue_models
from fabricbench.models.predict import predict
from fabricbench.store import open_db
from fabricbench.report.words.models import assumption_lines

MPIRUN = [shutil.which("mpirun") or "mpirun", "-np", "2", "--oversubscribe"]
WITH_FIGURES = ("edr", "opa100", "eth10g", "eth1g", "ddr", "sdr")

COMPUTE_ONLY = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    volatile double x = 0.0;
    for (long i = 0; i < 20000000L; i++) x += 1e-9 * (double)(i & 7);
    MPI_Finalize();
    return x < 0;
}
"""

COMM_ONLY = r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, n = 1 << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(n, 1);
    for (int i = 0; i < 200; i++) {
        if (rank == 0) MPI_Send(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(autouse=True)
def root_mpirun(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


def _profile(tmp_path, source: str, name: str):
    from fabricbench.workflows.profile import run_profiled

    c = tmp_path / f"{name}.c"
    c.write_text(source)
    exe = tmp_path / name
    subprocess.run(["mpicc", "-O1", "-o", str(exe), str(c)], check=True)
    rc, data, reason = run_profiled([*MPIRUN, str(exe)], tmp_path / f"{name}.json")
    assert rc == 0 and data is not None, reason
    return data


def model(key: str):
    return catalogue_models(get_fabric(key))


@pytest.mark.mpi
def test_a_program_that_only_computes_takes_its_own_time_on_every_fabric(tmp_path):
    prof = _profile(tmp_path, COMPUTE_ONLY, "compute")
    measured = max(r["app_time"] for r in prof["rank_info"])
    for a in WITH_FIGURES:
        for b in WITH_FIGURES:
            p = predict(prof, model(a)[0], model(b))
            assert p.measured_s == measured
            assert p.predicted_s == pytest.approx(measured, rel=1e-3), (a, b)
            assert p.low_s <= p.predicted_s <= p.high_s


@pytest.mark.mpi
def test_a_program_that_only_communicates_scales_as_the_models_say(tmp_path):
    prof = _profile(tmp_path, COMM_ONLY, "comm")
    # The models' rule for each rank's 200 calls of 1 MiB: B's cost, plus what took longer than
    # A's model: up to A's cost again a per-message overhead scaled by the latency ratio, the rest
    # (scheduling on a shared machine) kept; a transfer quicker than A's model (shared memory)
    # scales by cost_B / cost_A, less what the rank's computation (here start-up alone) could have hidden.
    a, b = model("eth10g"), model("eth1g")
    ca, cb = 200 * a[0].p2p.time_us(1 << 20) * 1e-6, 200 * b[0].p2p.time_us(1 << 20) * 1e-6
    lat = b[0].small_latency_us / a[0].small_latency_us
    p = predict(prof, a[0], b)
    expected = []
    for info in prof["rank_info"]:
        t = sum(row[5] for row in prof["calls"] if row[0] == info["rank"] and row[1] in ("MPI_Send", "MPI_Recv"))
        assert t > 0.5 * info["mpi_time"]
        if t >= ca:
            overhead = min(t - ca, ca)
            new = cb + overhead * lat + (t - ca - overhead)
        else:  # quicker than A's model: what computation could have hidden stays hidden, the rest scales
            hidden = min(ca - t, info["app_time"] - info["mpi_time"])
            new = max(cb * (t + hidden) / ca - hidden, 0.0)
        expected.append(info["app_time"] + new - t)
    assert p.predicted_s == pytest.approx(max(expected), rel=0.02)
    # B's 200 transfers cost at least their share of B's model: all of it, or (shared memory faster
    # than A's model) the measured time scaled by cost_B / cost_A.
    assert p.predicted_s - p.compute_s >= 0.95 * min(cb, min(expected) - p.compute_s)
    assert p.predicted_s > p.measured_s and p.speedup < 1
    assert p.calls[0].call in ("MPI_Send", "MPI_Recv") and p.calls[0].how == "point-to-point"
    back = predict(prof, b[0], a)  # and the other way round
    assert back.predicted_s < p.measured_s


def _stored_profile(db, data, tags=None):
    return store_profile(db, data, label="app", tags=tags or {})


def synthetic_profile(ranks=4, comm_s=2.0, compute_s=8.0, size=65536, count=1000):
    calls, info = [], []
    for r in range(ranks):
        wait = 0.1 * r  # rank 3 waits most: imbalance
        calls.append([r, "MPI_Allreduce", 4, count, count * 8, comm_s / 4 + wait, 1e-4, 1e-2])
        calls.append([r, "MPI_Sendrecv", 17, count, count * size, comm_s * 3 / 4, 1e-4, 1e-2])
        calls.append([r, "MPI_Comm_split", 0, 1, 0, 0.01, 0.01, 0.01])
        mpi = comm_s + wait + 0.01
        info.append({"rank": r, "host": f"n{r}", "pid": 1, "app_time": compute_s + mpi, "mpi_time": mpi})
    return {"format": "fabricbench-mpi-profile", "version": 1, "ranks": ranks, "hosts": [f"n{r}" for r in range(ranks)],
            "mpi": {"library": "test"}, "rank_info": info, "calls": calls, "matrix": {"p2p": [], "rma": [], "coll": []}}


def test_seed_004_question_from_the_catalogue(cli, db_path):
    """A profile taken on GigE, asked for IB DDR 4x: faster, by how much, with assumptions."""
    db = open_db(str(db_path))
    run = _stored_profile(db, synthetic_profile(), tags={"fabric": "1gbe"})
    out = cli("predict", str(run.id), "--on", "ddr").stdout
    assert "predicted on InfiniBand DDR 4x (catalogue)" in out and "faster on InfiniBand DDR 4x" in out
    assert "MPI_Sendrecv" in out and "assumptions:" in out and "compute time" in out
    data = json.loads(cli("predict", str(run.id), "--on", "IB DDR 4x" if get_fabric("IB DDR 4x") else "ddr", "--json").stdout)
    assert data["faster"] and 1.1 < data["speedup"] < 1.3  # 10.3 s -> a little over 8 s of compute
    assert data["low_s"] <= data["predicted_s"] <= data["high_s"] and data["predicted_s"] > 8.0
    # Imbalance is kept: rank 3's 0.3 s of waiting stays, so the slowest rank is still above 8.3 s.
    assert data["predicted_s"] > 8.3
    same = json.loads(cli("predict", str(run.id), "--on", "1gbe", "--json").stdout)
    assert same["predicted_s"] == pytest.approx(same["measured_s"], rel=1e-9)
    calls = {c["call"]: c for c in data["calls"]}
    assert calls["MPI_Comm_split"]["how"] == "kept" and calls["MPI_Comm_split"]["change_s"] == 0


def test_predict_needs_a_source_and_a_profile(cli, db_path):
    db = open_db(str(db_path))
    run = _stored_profile(db, synthetic_profile())
    bad = cli("predict", str(run.id), "--on", "edr", check=False)
    assert bad.returncode == 2 and "--from" in bad.stderr and "Traceback" not in bad.stderr
    ok = cli("predict", str(run.id), "--on", "edr", "--from", "10gbe").stdout
    assert "faster on InfiniBand EDR 4x" in ok
    bad = cli("predict", str(run.id), "--on", "nosuchfabric", "--from", "10gbe", check=False)
    assert bad.returncode == 2 and "nosuchfabric" in bad.stderr and "Traceback" not in bad.stderr
    plain = db.create_run(label="engine")
    db.finish_run(plain.id, "complete")
    bad = cli("predict", str(plain.id), "--on", "edr", "--from", "1gbe", check=False)
    assert bad.returncode == 2 and "not a profile" in bad.stderr


def _engine(db, label, alpha, beta):
    """An engine run of a fabric with point-to-point alpha + n / beta and an allreduce."""
    from fabricbench.store import Measurement

    run = db.create_run(label=label, ranks=4)
    sizes = [2 ** k for k in range(0, 21)]
    pts = [Measurement("latency", {"size": n}, "latency", "us", value=alpha + n / beta, median=alpha + n / beta,
                       min=alpha + n / beta) for n in sizes]
    pts += [Measurement("allreduce", {"size": n}, "latency", "us", value=3 * alpha + 1.5 * n / beta,
                        median=3 * alpha + 1.5 * n / beta, min=3 * alpha + 1.5 * n / beta) for n in sizes[2:]]
    for n in (1, 1024, 65536):  # LogGP: a run measured for the models (its report shows them)
        for metric, v in (("latency", alpha + n / beta), ("overhead_send", 2.0), ("overhead_recv", 1.0), ("gap", 5 + n / beta)):
            pts.append(Measurement("loggp", {"size": n}, metric, "us", value=v, median=v, min=v))
    db.add_measurements(run.id, pts)
    db.finish_run(run.id, "complete")
    return db.get_run(run.id)


def test_a_prediction_and_the_models_in_a_report(cli, db_path, tmp_path):
    db = open_db(str(db_path))
    a, b = _engine(db, "gige", 50.0, 110.0), _engine(db, "slow", 60.0, 11.0)
    prof = _stored_profile(db, synthetic_profile())
    out = cli("predict", str(prof.id), "--on", str(b.id), "--from", str(a.id), "--report", str(tmp_path / "p.html")).stdout
    assert "slower on run 2 (slow)" in out and f"wrote {tmp_path / 'p.html'}" in out
    html = (tmp_path / "p.html").read_text()
    assert "Prediction: run 2 (slow)" in html and "Band on B (s)" in html and "MPI_Sendrecv" in html
    assert "Communication model: run 1 (gige)" in html and "Communication model: run 2 (slow)" in html
    assert html.count("<svg") >= 3 or html.count("data:image/svg+xml") >= 3  # call bars, two model fits
    assert "Assumptions:" in html and "compute time" in html
    # Markdown: the same sections with the plots as files; a catalogue fabric has no fit to plot.
    md = tmp_path / "p.md"
    cli("predict", str(prof.id), "--on", "edr", "--from", str(a.id), "--report", str(md))
    text = md.read_text()
    assert "Prediction: InfiniBand EDR 4x (catalogue)" in text
    assert "Regimes of InfiniBand EDR 4x (catalogue)" in text and len(list((tmp_path / "p_plots").iterdir())) == 2
    bad = cli("predict", str(prof.id), "--on", "edr", "--from", str(a.id), "--report", str(tmp_path / "no" / "p.html"),
              check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    # An engine run's report has its model section: measured points against the fit, the regimes.
    cli("report", str(a.id), "-o", str(tmp_path / "r.html"))
    rep = (tmp_path / "r.html").read_text()
    assert "Communication model: run 1 (gige)" in rep and "Regimes of run 1 (gige)" in rep
    assert 'data-slug="model-1-fit"' in rep and "50.00" in rep and "110.0" in rep


@pytest.mark.mpi
def test_a_real_application_profiled_here_and_asked_about_the_catalogue(cli, db_path):
    """LAMMPS (the catalogue's lammps-lj) under the profiler, declared as measured on 1 GbE."""
    from fabricbench.apps import get_recipe

    recipe = get_recipe("lammps-lj")
    if not recipe.installed():
        pytest.skip(f"lammps-lj needs the Debian package {recipe.package} (scripts/install-test-deps.sh apps)")
    run = json.loads(cli("app", "run", "lammps-lj", "--np", "2", "--size", "1", "--profile", "--tag", "fabric=1gbe",
                         "--json", timeout=600).stdout)
    assert run["profile"], run["profile_note"]
    same = json.loads(cli("predict", str(run["run"]), "--on", "1gbe", "--json").stdout)
    assert same["predicted_s"] == pytest.approx(same["measured_s"], rel=1e-9)
    ddr = json.loads(cli("predict", str(run["run"]), "--on", "ddr", "--json").stdout)
    assert ddr["faster"] and ddr["compute_s"] <= ddr["predicted_s"] < ddr["measured_s"]
    assert {c["call"] for c in ddr["calls"] if c["change_s"] < 0} & {"MPI_Send", "MPI_Wait", "MPI_Sendrecv", "MPI_Allreduce"}


def halo_profile(wait_s: float, compute_s: float = 1.0, count: int = 1000, size: int = 65536):
    """Two ranks exchanging `count` messages each way with Isend/Irecv, completed by MPI_Wait."""
    calls, info = [], []
    for r in range(2):
        calls += [[r, "MPI_Isend", 17, count, count * size, 0.004, 1e-6, 1e-4],
                  [r, "MPI_Irecv", 17, count, count * size, 0.002, 1e-6, 1e-4],
                  [r, "MPI_Wait", 0, 2 * count, 0, wait_s, 1e-6, 1e-2]]
        mpi = 0.006 + wait_s
        info.append({"rank": r, "host": f"n{r}", "pid": 1, "app_time": compute_s + mpi, "mpi_time": mpi})
    return {"format": "fabricbench-mpi-profile", "version": 1, "ranks": 2, "hosts": ["n0", "n1"],
            "mpi": {"library": "test"}, "rank_info": info, "calls": calls, "matrix": {"p2p": [], "rma": [], "coll": []}}


def test_a_transfer_hidden_behind_computation_surfaces_only_when_the_link_is_slow_enough():
    fast, slow = model("eth10g"), model("eth1g")
    demand = {k: 1000 * m[0].message_us(65536) * 1e-6 for k, m in (("fast", fast), ("slow", slow))}
    # On the fast link the exchange took 0.01 s of waiting: the rest of its demand was hidden
    # behind the 1 s of computation. On the slow one the demand is 10x: what was hidden stays
    # hidden, the remainder is exposed.
    prof = halo_profile(wait_s=0.01)
    assert demand["fast"] > 0.01
    p = predict(prof, fast[0], slow)
    hidden = demand["fast"] - 0.01
    assert p.predicted_s == pytest.approx(1.0 + 0.006 + demand["slow"] - hidden, rel=1e-3)
    assert p.calls[0].call == "MPI_Wait" and p.calls[0].how == "completion of non-blocking transfers"
    # A faster link cannot speed up a transfer that was already hidden.
    assert predict(prof, fast[0], fast).predicted_s == pytest.approx(p.measured_s, rel=1e-6)
    # From the slow link, where the exchange was exposed (waiting = its demand + 0.02 s of a late
    # partner), to the fast one: the transfer shrinks to the fast demand, the late partner stays.
    exposed = halo_profile(wait_s=demand["slow"] + 0.02)
    back = predict(exposed, slow[0], fast)
    lat = fast[0].small_latency_us / slow[0].small_latency_us
    from fabricbench.models.predict import LATENCY_NOISE
    lat = 1.0 if 1 / LATENCY_NOISE <= lat <= LATENCY_NOISE else lat
    assert back.predicted_s == pytest.approx(1.0 + 0.006 + 0.02 * lat + demand["fast"], rel=1e-3)
    assert back.low_s <= back.predicted_s <= back.high_s


def test_collectives_in_a_stream_cost_at_least_the_links_steady_rate():
    import dataclasses

    from fabricbench.models.p2p import fit_loggp

    # 1,000 alltoalls of 21.4 KiB per rank took 0.04 s on A: they rode the token bucket's burst,
    # refilled by the computation between them. B's link drains at 11.9 MB/s (its LogGP gap).
    calls, info = [], []
    for r in range(2):
        calls.append([r, "MPI_Alltoall", 15, 1000, 1000 * 21_900, 0.04, 2e-5, 1e-3])
        info.append({"rank": r, "host": f"n{r}", "pid": 1, "app_time": 0.3, "mpi_time": 0.04})
    prof = {"format": "fabricbench-mpi-profile", "version": 1, "ranks": 2, "hosts": ["n0", "n1"],
            "mpi": {"library": "test"}, "rank_info": info, "calls": calls, "matrix": {"p2p": [], "rma": [], "coll": []}}
    a = model("eth1g")[0]
    recs = [{"size": s, "metric": m, "value": v} for s in (1, 1024, 65536)
            for m, v in (("latency", 30 + s / 100), ("overhead_send", 2.0), ("overhead_recv", 1.0), ("gap", 3 + (s - 1) * 0.0837))]
    slow = dataclasses.replace(a, loggp=fit_loggp(recs))
    floor = 1000 * (3 + 21_899 * 0.0837) * 1e-6
    p = predict(prof, a, [slow])
    assert p.calls[0].call == "MPI_Alltoall" and p.calls[0].time_b_s == pytest.approx(floor, rel=1e-2)
    assert p.predicted_s == pytest.approx(0.26 + floor, rel=1e-2)
    # Without a measured gap there is no floor: the ratio of the models alone (here 1).
    assert predict(prof, a, [a]).predicted_s == pytest.approx(0.3, rel=1e-6)


# ---- ranks that share cores -----------------------------------------------------------

COMPUTE_CPU = r"""
#include <mpi.h>
#include <time.h>
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    volatile double x = 0.0;
    double t0 = cpu();
    while (cpu() - t0 < 0.2)
        for (int i = 0; i < 10000; i++) x += 1e-9 * (double)(i & 7);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return x < 0;
}
"""


@pytest.mark.mpi
def test_the_profiler_records_each_ranks_cpu_and_whether_ranks_shared_cores(tmp_path):
    """4 ranks that each compute for 0.2 s of CPU: their CPU time, their wait for a core, the
    CPUs and the machine; on this 2-core machine they share cores and set a floor."""
    import os
    from pathlib import Path

    from fabricbench.analysis.profile_cpu import cpu_floor, machines, rank_demand
    from fabricbench.analysis.profile_data import validate_profile
    from fabricbench.workflows.profile import run_profiled

    (tmp_path / "cpu.c").write_text(COMPUTE_CPU)
    exe = tmp_path / "cpu"
    subprocess.run(["mpicc", "-O1", "-o", str(exe), str(tmp_path / "cpu.c")], check=True)
    rc, prof, reason = run_profiled([MPIRUN[0], "-np", "4", "--oversubscribe", str(exe)], tmp_path / "cpu.json")
    assert rc == 0 and prof is not None, reason
    validate_profile(prof)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    for r in prof["rank_info"]:
        assert r["cpus_online"] == os.cpu_count()
        assert 1 <= r["cpus_allowed"] <= os.cpu_count()
        assert r["machine"] == boot
        # At least the 0.2 s its loop ran for, and no more than a single thread's share of the run.
        assert 0.2 <= r["cpu_time"] <= 1.5 * r["app_time"] + 0.05
        if Path("/proc/self/schedstat").exists():
            assert r["run_delay"] is not None and 0 <= r["run_delay"] <= r["app_time"]
            assert rank_demand(r) <= r["cpu_time"]
            if r["run_delay"] < 0.5 * r["app_time"]:  # on a host so busy a rank waited half the run, the split is rough
                assert rank_demand(r) >= 0.1
    (m,) = machines(prof)
    assert m.ranks == [0, 1, 2, 3] and m.cpus == os.cpu_count()
    assert m.demand_s == pytest.approx(sum(rank_demand(r) for r in prof["rank_info"]))
    if os.cpu_count() < 4 and m.run_delay_s is not None:
        # 0.8 s of computation on fewer than 4 cores: each rank waited for one.
        floor = cpu_floor(prof)
        assert floor is not None and floor.shared and floor.floor_s == pytest.approx(m.demand_s / os.cpu_count())
        p = predict(prof, model("eth1g")[0], model("edr"))
        assert p.predicted_s >= floor.floor_s and p.cpu_floor["cpus"] == os.cpu_count()


def cpu_profile(ranks=4, cpus=2, cpu_s=0.5, wait_s=0.7, run_delay_s=0.6, machines=1, fields=True):
    """Ranks that each compute for cpu_s of CPU and wait wait_s in MPI_Wait for 1,000 halo
    messages of 64 KiB (A's model explains little of it: they waited for a core)."""
    calls, info = [], []
    for r in range(ranks):
        calls += [[r, "MPI_Isend", 17, 1000, 1000 * 65536, 0.004, 1e-6, 1e-4],
                  [r, "MPI_Irecv", 17, 1000, 1000 * 65536, 0.002, 1e-6, 1e-4],
                  [r, "MPI_Wait", 0, 2000, 0, wait_s, 1e-6, 1e-2]]
        mpi = 0.006 + wait_s
        row = {"rank": r, "host": f"n{r}", "pid": 1, "app_time": cpu_s + mpi, "mpi_time": mpi}
        if fields:  # polling while waiting adds a little CPU time; the lab's nodes share one boot id
            row.update(cpu_time=cpu_s + 0.05, run_delay=run_delay_s, cpus_online=cpus, cpus_allowed=cpus,
                       machine=f"boot-{r % machines}")
        info.append(row)
    return {"format": "fabricbench-mpi-profile", "version": 1, "ranks": ranks, "hosts": [f"n{r}" for r in range(ranks)],
            "mpi": {"library": "test"}, "rank_info": info, "calls": calls, "matrix": {"p2p": [], "rma": [], "coll": []}}


def test_ranks_sharing_cores_cannot_finish_before_their_computation_does():
    from fabricbench.analysis.profile_data import ProfileError, validate_profile

    a, b = model("eth1g")[0], model("edr")
    shared = cpu_profile()  # 4 ranks x 0.5 s of CPU on 2 CPUs: at least 1 s on any fabric
    validate_profile(shared)
    p = predict(shared, a, b)
    assert p.cpu_floor["floor_s"] == pytest.approx(1.0) and p.cpu_floor["demand_s"] == pytest.approx(2.0)
    assert p.cpu_floor["network_s"] < 0.6 and p.floor_applies  # the network alone: compute + a fast halo
    assert p.predicted_s == pytest.approx(1.0) and p.high_s >= 1.0
    # The band's low end: ranks that polled without yielding waited for a core outside MPI as
    # often as inside (0.6 s of the 1.206 s run, 0.5 s of it outside MPI).
    even = 4 * (0.5 - 0.6 * 0.5 / 1.206) / 2
    assert p.cpu_floor["floor_low_s"] == pytest.approx(even) and even <= p.low_s < p.predicted_s
    assert any("ranks shared cores on A: 4 ranks on 2 CPUs (n0, n1, n2, n3); a CPU-bound floor of 1.00 s applies"
               in x for x in assumption_lines(p))
    assert p.to_dict()["cpu_floor"]["applies"] is True
    # Not oversubscribed, or no measurable wait for a core, or one rank per machine, or an older
    # profile: no floor, and the prediction is exactly what it was without the fields.
    old = predict(cpu_profile(fields=False), a, b).to_dict()
    assert old["cpu_floor"] is None and old["predicted_s"] < 0.6
    for prof in (cpu_profile(cpus=4), cpu_profile(ranks=2), cpu_profile(run_delay_s=0.0), cpu_profile(machines=4)):
        same = predict(prof, a, b).to_dict()
        assert same["cpu_floor"] is None
        if prof["ranks"] == 4:
            assert same == old
    # Without schedstats the wait is unknown: CPU time filling the cores over the run is the sign.
    busy = cpu_profile(cpu_s=0.5)
    for r in busy["rank_info"]:
        r["run_delay"], r["cpu_time"] = None, 0.62
    assert predict(busy, a, b).cpu_floor["floor_s"] == pytest.approx(2 * 0.5)  # min(CPU, time outside MPI)
    idle = cpu_profile()  # ranks that slept while they waited: 2.0 s of CPU of the 2.4 s the CPUs had
    for r in idle["rank_info"]:
        r["run_delay"], r["cpu_time"] = None, 0.5
    assert predict(idle, a, b).cpu_floor is None
    # A wait longer than the MPI time fell partly outside MPI: that part was not computation.
    long_wait = cpu_profile(run_delay_s=0.906)
    assert predict(long_wait, a, b).cpu_floor["demand_s"] == pytest.approx(4 * 0.3)
    # Slower fabrics are above the floor: it is said, and the network's prediction stands.
    slow = predict(shared, model("edr")[0], model("eth1g"))
    assert not slow.floor_applies and slow.predicted_s == slow.cpu_floor["network_s"] > 1.0
    bad = cpu_profile()
    bad["rank_info"][1]["run_delay"] = -1
    with pytest.raises(ProfileError, match="run_delay"):
        validate_profile(bad)


def test_the_cpu_floor_in_the_cli_and_the_report(cli, db_path, tmp_path):
    db = open_db(str(db_path))
    run = _stored_profile(db, cpu_profile(), tags={"fabric": "1gbe"})
    out = cli("predict", str(run.id), "--on", "edr").stdout
    assert "CPU-bound floor: 1.00 s (4 ranks on 2 CPUs on A; network alone" in out
    assert "a CPU-bound floor of 1.00 s applies" in out
    data = json.loads(cli("predict", str(run.id), "--on", "edr", "--json").stdout)
    assert data["predicted_s"] == pytest.approx(1.0) and data["cpu_floor"]["cpus"] == 2
    cli("predict", str(run.id), "--on", "edr", "--report", str(tmp_path / "p.md"))
    assert "Ranks shared cores on A: 4 ranks on 2 CPUs" in (tmp_path / "p.md").read_text()
    assert "Ranks shared cores: 4 ranks on 2 CPUs" in cli("show-profile", str(run.id)).stdout
