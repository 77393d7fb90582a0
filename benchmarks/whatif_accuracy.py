"""How right is `fabricbench predict`? Profile real applications on the lab at one link rate,
predict them at other rates from engine runs, measure them there, print the error per case.

    sudo PYTHONPATH=src python benchmarks/whatif_accuracy.py --db /tmp/whatif.db            # collect + analyse
    PYTHONPATH=src python benchmarks/whatif_accuracy.py --db /tmp/whatif.db --analyse-only  # again, from the stored runs

Collection (needs root and a free lab name): for each rate (the profile rate first, then the
targets) the lab is brought up with 4 nodes, the engine measures what the models need
(`fabricbench run latency bw loggp <collectives> --launcher lab`), and every application runs
under the profiler with one rank per node. The run at the profile rate is the profile that is
predicted from; the runs at the targets are the measurements (their wall time is the
profile's application time, MPI_Init to MPI_Finalize, so both sides time the same thing).
Everything goes into the database given with --db (runs labelled ``whatif ...``).

Analysis: `predict` for every application x target, from the engine run at the profile rate
to the engine run at the target; predicted vs measured time, error, whether the direction
(faster or slower than at the profile rate) is right; median and worst absolute error.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ENGINE_BENCHMARKS = ["latency", "loggp", "barrier", "bcast", "reduce", "allreduce", "allgather",
                     "alltoall", "reduce_scatter"]
NODES = 4

LJ = """\
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 {n} 0 {n} 0 {n}
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 100
run {steps}
"""

EAM = """\
units metal
atom_style atomic
lattice fcc 3.615
region box block 0 {n} 0 {n} 0 {n}
create_box 1 box
create_atoms 1 box
pair_style eam
pair_coeff 1 1 /usr/share/lammps/potentials/Cu_u3.eam
velocity all create 1600.0 376847 loop geom
neighbor 1.0 bin
neigh_modify every 1 delay 5 check yes
fix 1 all nve
timestep 0.005
thermo 50
run {steps}
"""

PPPM = """\
units lj
atom_style charge
lattice fcc 0.8442
region box block 0 {n} 0 {n} 0 {n}
create_box 2 box
create_atoms 1 box
mass * 1.0
set group all type/fraction 2 0.5 4321
set type 1 charge 1.0
set type 2 charge -1.0
velocity all create 1.5 87287 loop geom
pair_style lj/cut/coul/long 2.5
pair_coeff * * 1.0 1.0
kspace_style pppm 1.0e-4
neighbor 0.3 bin
fix 1 all nve
thermo 50
run {steps}
"""

APPS = {
    # name: (input template, parameters, what it is)
    "lammps-lj": (LJ, {"n": 16, "steps": 300}, "LAMMPS, Lennard-Jones melt, 16k atoms"),
    "lammps-eam": (EAM, {"n": 12, "steps": 200}, "LAMMPS, copper EAM, 6.9k atoms"),
    "lammps-pppm": (PPPM, {"n": 10, "steps": 80}, "LAMMPS, charged LJ with PPPM long-range, 4k atoms"),
    "hpcc": (None, {"n": 2400}, "HPC Challenge (HPL, PTRANS, RandomAccess, FFT, b_eff), N = 2400"),
}


def fb(db: str, *args: str, env: Optional[Dict[str, str]] = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "fabricbench", "--db", db, *args]
    print("$", " ".join(shlex.quote(a) for a in argv[2:]), flush=True)
    return subprocess.run(argv, env=env, check=check, text=True, capture_output=True)


def lab_env(name: str) -> Dict[str, str]:
    return {**os.environ, "FABRICBENCH_LAB": name}


def lab_up(db: str, name: str, subnet: str, rate: str) -> None:
    fb(db, "lab", "down", "--name", name, check=False)
    fb(db, "lab", "up", "--name", name, "--nodes", str(NODES), "--link", rate, "--subnet", subnet)


def engine_run(db: str, name: str, rate: str, time_budget: float, benchmarks: List[str], sizes: str) -> int:
    fb(db, "run", *benchmarks, "--launcher", "lab", "--sizes", sizes, "--time-budget", str(time_budget),
             "--label", f"whatif engine {rate}", "--tag", f"lab_rate={rate}", env=lab_env(name))
    return last_run(db)


def last_run(db: str) -> int:
    out = fb(db, "runs", "--json")
    return max(int(r["id"]) for r in json.loads(out.stdout))


def app_command(app: str, workdir: Path) -> List[str]:
    template, params, _ = APPS[app]
    if app == "hpcc":
        from fabricbench.workflows.hpcc_input import plan, render_hpccinf

        (workdir / "hpccinf.txt").write_text(render_hpccinf(plan(NODES, nodes=NODES, n=params["n"])))
        return ["sh", "-c", f"cd {shlex.quote(str(workdir))} && exec hpcc"]
    path = workdir / f"in.{app}"
    path.write_text(template.format(**params))
    return ["lmp", "-in", str(path), "-log", str(workdir / "log.lammps"), "-screen", "none"]


def profiled_run(db: str, name: str, app: str, rate: str, role: str) -> int:
    """The application under the profiler across the lab; the stored profile run's id."""
    from fabricbench.importers.fbprofile import store_profile
    from fabricbench.launch import Layout, get_launcher
    from fabricbench.launch.procs import INHERIT, Job
    from fabricbench.native import profiler_library
    from fabricbench.analysis.profile_data import load_profile
    from fabricbench.store import open_db

    os.environ["FABRICBENCH_LAB"] = name
    with tempfile.TemporaryDirectory(prefix="whatif-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        prof = work / "profile.json"
        layout = Layout(np=NODES, extra_args=["-x", f"LD_PRELOAD={profiler_library()}", "-x", f"FABRICBENCH_PROFILE={prof}"])
        launcher = get_launcher("lab", layout)
        inner = app_command(app, work)
        argv = launcher.command(inner)
        print("$", " ".join(shlex.quote(a) for a in argv[-len(inner):]), f"({role} at {rate})", flush=True)
        t0 = time.monotonic()
        job = Job(argv, env=launcher.environment(), stdout=subprocess.DEVNULL, stderr_limit=50)
        job.wait(timeout=3600)
        job.stop()
        if job.returncode != 0 or not prof.exists():
            raise SystemExit(f"{app} at {rate} failed (exit {job.returncode}): {job.stderr[-2000:]}")
        data = load_profile(prof)
    store = open_db(db)
    run = store_profile(store, data, label=f"whatif {role} {app} {rate}",
                        tags={"app": app, "lab_rate": rate, "whatif": role}, command=" ".join(inner))
    wall = max(r["app_time"] for r in data["rank_info"])
    print(f"  {app} at {rate}: {wall:.2f} s (run {run.id}, mpirun {time.monotonic() - t0:.1f} s)", flush=True)
    return run.id


def collect(args) -> Dict:
    plan_path = Path(args.db).with_suffix(".whatif.json")
    state = json.loads(plan_path.read_text()) if plan_path.exists() else {"engine": {}, "profile": {}, "measured": {}}
    rates = [args.profile_rate, *args.targets]
    for rate in rates:
        lab_up(args.db, args.lab, args.subnet, rate)
        try:
            if rate not in state["engine"]:
                state["engine"][rate] = engine_run(args.db, args.lab, rate, args.time_budget, args.benchmarks, args.sizes)
                plan_path.write_text(json.dumps(state, indent=1))
            for app in args.apps:
                key = f"{app}@{rate}"
                if rate == args.profile_rate:
                    if app not in state["profile"]:
                        state["profile"][app] = profiled_run(args.db, args.lab, app, rate, "profile")
                else:
                    done = state["measured"].setdefault(key, [])
                    while len(done) < args.repeats:
                        done.append(profiled_run(args.db, args.lab, app, rate, "measured"))
                plan_path.write_text(json.dumps(state, indent=1))
        finally:
            fb(args.db, "lab", "down", "--name", args.lab, check=False)
    return state


def analyse(args, state: Dict) -> List[Dict]:
    from fabricbench.models.predict import predict_from_store
    from fabricbench.store import open_db

    store = open_db(args.db)
    rows = []
    for app, prof_id in state["profile"].items():
        if app not in args.apps:
            continue
        for rate in args.targets:
            measured_ids = state["measured"].get(f"{app}@{rate}", [])
            if not measured_ids or rate not in state["engine"]:
                continue
            times = [max(store.artifact(i, "profile")["rank_info"], key=lambda r: r["app_time"])["app_time"]
                     for i in measured_ids]
            measured = statistics.median(times)
            p = predict_from_store(store, str(prof_id), on=str(state["engine"][rate]),
                                   source=str(state["engine"][args.profile_rate]))
            base = p.measured_s
            err = (p.predicted_s - measured) / measured
            right = (p.predicted_s < base) == (measured < base)
            rows.append({"app": app, "from": args.profile_rate, "to": rate, "at_profile_rate_s": base,
                         "predicted_s": p.predicted_s, "low_s": p.low_s, "high_s": p.high_s,
                         "measured_s": measured, "measured_runs": times, "error": err,
                         "in_band": p.low_s <= measured <= p.high_s, "direction_right": right})
    return rows


def print_table(rows: List[Dict]) -> None:
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}")
    head = f"| application | {'from':>7} | {'to':>7} | at 'from' s | predicted s [low, high] | measured s | error | direction |"
    print(head)
    print("|" + "|".join("---" for _ in range(8)) + "|")
    for r in rows:
        print(f"| {r['app']} | {r['from']:>7} | {r['to']:>7} | {r['at_profile_rate_s']:.2f} | "
              f"{r['predicted_s']:.2f} [{r['low_s']:.2f}, {r['high_s']:.2f}] | {r['measured_s']:.2f} | "
              f"{100 * r['error']:+.1f}% | {'right' if r['direction_right'] else 'WRONG'} |")
    if rows:
        errs = [abs(r["error"]) for r in rows]
        print(f"\n{len(rows)} cases: median |error| {100 * statistics.median(errs):.1f}%, worst {100 * max(errs):.1f}%, "
              f"direction right in {sum(r['direction_right'] for r in rows)}/{len(rows)}, "
              f"measured inside the band in {sum(r['in_band'] for r in rows)}/{len(rows)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="results database (SQLite file) for the runs")
    ap.add_argument("--lab", default="fbwi", help="lab name (default fbwi), so another lab can stay up")
    ap.add_argument("--subnet", default="10.219.0.0/24")
    ap.add_argument("--profile-rate", default="1gbit")
    ap.add_argument("--targets", default="100mbit,10gbit", type=lambda s: s.split(","))
    ap.add_argument("--apps", default=",".join(APPS), type=lambda s: s.split(","))
    ap.add_argument("--repeats", type=int, default=1, help="measured runs per application and target (median)")
    ap.add_argument("--time-budget", type=float, default=0.2, help="engine time budget per point, s")
    ap.add_argument("--benchmarks", default=",".join(ENGINE_BENCHMARKS), type=lambda s: s.split(","),
                    help="engine benchmarks the models are fitted to")
    ap.add_argument("--sizes", default="1:256K", help="engine message sizes (4M at 100mbit takes an hour)")
    ap.add_argument("--analyse-only", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()
    for app in args.apps:
        if app not in APPS:
            raise SystemExit(f"unknown application {app!r}; choose from {', '.join(APPS)}")
    plan_path = Path(args.db).with_suffix(".whatif.json")
    state = json.loads(plan_path.read_text()) if args.analyse_only else collect(args)
    rows = analyse(args, state)
    print_table(rows)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
