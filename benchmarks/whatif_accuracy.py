"""How right is `fabricbench predict`? Profile real applications on the lab at one link rate,
predict them at other rates from engine runs, measure them there, print the error per case.

    sudo PYTHONPATH=src python benchmarks/whatif_accuracy.py --db /tmp/whatif.db            # collect + analyse
    PYTHONPATH=src python benchmarks/whatif_accuracy.py --db /tmp/whatif.db --analyse-only  # again, from the stored runs

Collection (needs root and a free lab name): for each rate (the profile rate first, then the
targets) the lab is brought up with 4 nodes, the engine measures what the models need
(`fabricbench run latency loggp exchange <collectives> --launcher lab --sizes 1:1M
--time-budget 0.1 --repeat 3`, --engine-repeat: the launches are interleaved, and the
exchange's core time per message is each size's median over them; the sizes reach past
the token bucket's burst, 64 KiB at 100mbit, so the fitted bandwidth is the link's steady
rate; the engine's floor of 10 iterations per point per launch keeps the 100mbit run to
about 10 minutes; `exchange`, every rank swapping
halos at once, gives what a message costs the cores when the lab's ranks share them),
and every application of the catalogue runs at the profile rate --profile-repeats times (5)
and at each target --repeats times (5; the median is the measurement), in rounds that visit
every rate and run each application once there (the engine runs in the first), so that the
host's minute-long slow states fall on profiles and measurements alike, with
`fabricbench app run NAME --np N --size S --launcher lab --profile`, one rank per node
(--nodes, 4). The median run at the profile rate is the profile that is predicted from (the
host switches between states that change MPI times several-fold for a minute; one profile
caught in a slow one would set every prediction of its application); the runs at the targets are
the measurements (their time is the profile's application time, MPI_Init to MPI_Finalize,
so both sides time the same thing). Everything goes into the database given with --db; the
ids are kept next to it (<db>.whatif.json), so a rerun only measures what is missing.

Analysis: `predict` for every application x target, from the engine run at the profile rate
to the engine run at the target; predicted vs measured time, error, whether the direction
(faster or slower than at the profile rate) is right; median and worst absolute error, with
the load average recorded while each run was measured.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

ENGINE_BENCHMARKS = ["latency", "loggp", "exchange", "barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"]
APPS = ["lammps-lj", "lammps-eam", "qe-si"]  # hpcc is optional: it is not in the catalogue
NODES = 4  # the lab; --nodes 2 keeps one rank per core on a 2-core machine


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def fb(db: str, *args: str, env: Optional[Dict[str, str]] = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "fabricbench", "--db", db, *args]
    print("$", " ".join(shlex.quote(a) for a in argv[2:]), flush=True)
    done = subprocess.run(argv, env=env, text=True, capture_output=True)
    if check and done.returncode != 0:
        raise SystemExit(f"failed (exit {done.returncode}): {' '.join(argv[2:])}\n{done.stderr[-3000:]}")
    return done


def lab_env(name: str) -> Dict[str, str]:
    return {**os.environ, "FABRICBENCH_LAB": name}


def lab_up(args, db: str, name: str, subnet: str, rate: str) -> None:
    fb(db, "lab", "down", "--name", name, check=False)
    fb(db, "lab", "up", "--name", name, "--nodes", str(args.nodes), "--link", rate, "--subnet", subnet)


def last_run(db: str) -> int:
    out = fb(db, "runs", "--json")
    return max(int(r["id"]) for r in json.loads(out.stdout))


def engine_run(args, rate: str) -> Dict:
    before = loadavg()
    count = ["--iterations", str(args.iterations)] if args.iterations else ["--time-budget", str(args.time_budget)]
    fb(args.db, "run", *args.benchmarks, "--launcher", "lab", "--sizes", args.sizes, *count,
       "--repeat", str(args.engine_repeat),
       "--label", f"whatif engine {rate}", "--tag", f"lab_rate={rate}", env=lab_env(args.lab))
    return {"run": last_run(args.db), "load": [before, loadavg()]}


def app_run(args, app: str, rate: str, role: str) -> Dict:
    """One profiled application run across the lab; its run id, time and the load around it."""
    before = loadavg()
    out = fb(args.db, "app", "run", app, "--np", str(args.nodes), "--size", str(args.size), "--launcher", "lab", "--profile",
             "--json", "--label", f"whatif {role} {app} {rate}", "--tag", f"lab_rate={rate}", "--tag", f"whatif={role}",
             "--timeout", str(args.timeout), env=lab_env(args.lab))
    data = json.loads(out.stdout)
    if not data.get("profile"):
        raise SystemExit(f"{app} at {rate}: no profile ({data.get('profile_note')})")
    rec = {"run": int(data["run"]), "load": [before, loadavg()]}
    print(f"  {app} at {rate}: own time {data['time_s']} s (run {rec['run']}, load {rec['load'][0]:.1f}..{rec['load'][1]:.1f})",
          flush=True)
    return rec


def collect(args) -> Dict:
    plan_path = Path(args.db).with_suffix(".whatif.json")
    state = json.loads(plan_path.read_text()) if plan_path.exists() else {}
    for key in ("engine", "profile", "measured"):
        state.setdefault(key, {})

    def save() -> None:
        plan_path.write_text(json.dumps(state, indent=1))

    def runs_of(app: str, rate: str) -> List:
        if rate == args.profile_rate:
            profiles = state["profile"].setdefault(app, [])
            if isinstance(profiles, dict):  # one profile, from before --profile-repeats
                profiles = state["profile"][app] = [profiles]
            return profiles
        return state["measured"].setdefault(f"{app}@{rate}", [])

    def wanted(rate: str) -> int:
        return args.profile_repeats if rate == args.profile_rate else args.repeats

    # Rounds: each visits every rate and runs each application once there, so the profiles
    # and the measurements are spread over the whole collection alike; the host's slow
    # states last about a minute, and one caught on one side only would pass for the fabric.
    rates = [args.profile_rate, *args.targets]
    for _round in range(max(wanted(r) for r in rates)):
        for rate in rates:
            apps = [app for app in args.apps if len(runs_of(app, rate)) < wanted(rate)]
            if rate in state["engine"] and not apps:
                continue
            lab_up(args, args.db, args.lab, args.subnet, rate)
            try:
                if rate not in state["engine"]:
                    state["engine"][rate] = engine_run(args, rate)
                    save()
                for app in apps:
                    role = "profile" if rate == args.profile_rate else "measured"
                    runs_of(app, rate).append(app_run(args, app, rate, role))
                    save()
            finally:
                fb(args.db, "lab", "down", "--name", args.lab, check=False)
    return state


def _run_id(rec) -> int:
    return int(rec["run"]) if isinstance(rec, dict) else int(rec)


def _load(rec) -> List[float]:
    return rec.get("load", []) if isinstance(rec, dict) else []


def profile_time(store, run_id: int) -> float:
    return max(r["app_time"] for r in store.artifact(run_id, "profile")["rank_info"])


def analyse(args, state: Dict) -> List[Dict]:
    from fabricbench.models.predict import predict_from_store
    from fabricbench.store import open_db

    store = open_db(args.db)
    rows = []
    for app, profs in state["profile"].items():
        if app not in args.apps:
            continue
        profs = profs if isinstance(profs, list) else [profs]
        # The profile predicted from is the median run by time: one run caught in a slow state of
        # the host would otherwise set every prediction of the application.
        ranked = sorted(profs, key=lambda r: profile_time(store, _run_id(r)))
        prof = ranked[(len(ranked) - 1) // 2]
        profile_times = [profile_time(store, _run_id(r)) for r in ranked]
        for rate in args.targets:
            measured_recs = state["measured"].get(f"{app}@{rate}", [])
            if not measured_recs or rate not in state["engine"]:
                continue
            times = [profile_time(store, _run_id(r)) for r in measured_recs]
            measured = statistics.median(times)
            p = predict_from_store(store, str(_run_id(prof)), on=str(_run_id(state["engine"][rate])),
                                   source=str(_run_id(state["engine"][args.profile_rate])), level=args.level)
            base = p.measured_s
            err = (p.predicted_s - measured) / measured
            right = (p.predicted_s < base) == (measured < base)
            # A change no larger than the spread of the measured runs has no direction to get right.
            noise = max(max(times) - min(times) if len(times) > 1 else 0.0,
                        max(profile_times) - min(profile_times) if len(profile_times) > 1 else 0.0)
            judged = abs(measured - base) > noise
            loads = [x for r in profs for x in _load(r)] + [x for r in measured_recs for x in _load(r)]
            rows.append({"app": app, "from": args.profile_rate, "to": rate, "at_profile_rate_s": base,
                         "predicted_s": p.predicted_s, "low_s": p.low_s, "high_s": p.high_s,
                         "measured_s": measured, "measured_runs": times, "profile_runs": profile_times, "error": err,
                         "in_band": p.low_s <= measured <= p.high_s, "direction_right": right,
                         "runs_in_band": sum(p.low_s <= t <= p.high_s for t in times), "profiles": p.band.get("profiles"),
                         "profile_predictions_s": p.band.get("profiles_predicted_s"),
                         "interval": p.band.get("interval"),
                         "direction_judged": judged,
                         "cpu_floor_s": p.cpu_floor["floor_s"] if p.cpu_floor else None,
                         "cpu_floor_applies": p.floor_applies,
                         "load": [min(loads), max(loads)] if loads else None})
    return rows


def print_table(rows: List[Dict], state: Dict) -> None:
    print(f"load average now: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for rate, rec in state.get("engine", {}).items():
        if _load(rec):
            print(f"engine run {_run_id(rec)} at {rate}: load {_load(rec)[0]:.1f}..{_load(rec)[1]:.1f}")
    print("| application | from | to | at 'from' s | predicted s [low, high] | measured s | error | direction "
          "| runs in band | load |")
    print("|" + "|".join("---" for _ in range(10)) + "|")
    for r in rows:
        load = f"{r['load'][0]:.1f}-{r['load'][1]:.1f}" if r["load"] else "-"
        print(f"| {r['app']} | {r['from']} | {r['to']} | {r['at_profile_rate_s']:.2f} | "
              f"{r['predicted_s']:.2f}{'*' if r.get('cpu_floor_applies') else ''} [{r['low_s']:.2f}, "
              f"{r['high_s']:.2f}] | {r['measured_s']:.2f} | "
              f"{100 * r['error']:+.1f}% | {_direction(r)} | {r.get('runs_in_band', '-')}/{len(r['measured_runs'])} "
              f"| {load} |")
    if rows:
        errs = [abs(r["error"]) for r in rows]
        judged = [r for r in rows if r.get("direction_judged", True)]
        print(f"\n{len(rows)} cases: median |error| {100 * statistics.median(errs):.1f}%, worst {100 * max(errs):.1f}%, "
              f"direction right in {sum(r['direction_right'] for r in rows)}/{len(rows)} "
              f"({sum(r['direction_right'] for r in judged)}/{len(judged)} where the measured change exceeds the "
              f"measured runs' spread), "
              f"measured inside the band in {sum(r['in_band'] for r in rows)}/{len(rows)}")
        if any(r.get("cpu_floor_applies") for r in rows):
            print("* ranks shared cores at 'from': their CPU-bound floor set the prediction")
        print_band_table(rows)


def print_band_table(rows: List[Dict]) -> None:
    """Does the band hold single runs? Each measured run against the band (a prediction interval for
    one run when there are several profiles), with what the band was made from."""
    print("\n| app | to | predicted [band] | per-profile predictions | measured runs | in band | load |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        iv = r.get("interval")
        level = f" ({100 * iv['level']:.0f}%, x{iv['factor']:.2f})" if iv else ""
        preds = ", ".join(f"{x:.2f}" for x in sorted(r.get("profile_predictions_s") or []))
        runs = ", ".join(f"{x:.2f}" for x in sorted(r["measured_runs"]))
        load = f"{r['load'][0]:.1f}-{r['load'][1]:.1f}" if r["load"] else "-"
        print(f"| {r['app']} | {r['to']} | {r['predicted_s']:.2f} s [{r['low_s']:.2f}, {r['high_s']:.2f}]{level} | "
              f"{preds} | {runs} s | {r['runs_in_band']}/{len(r['measured_runs'])} | {load} |")


def _direction(r: Dict) -> str:
    word = "right" if r["direction_right"] else "WRONG"
    return word if r.get("direction_judged", True) else f"{word.lower()} (within noise)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="results database (SQLite file) for the runs")
    ap.add_argument("--lab", default="fbwi", help="lab name (default fbwi), so another lab can stay up")
    ap.add_argument("--subnet", default="10.219.0.0/24")
    ap.add_argument("--nodes", type=int, default=NODES,
                    help=f"lab nodes, one rank each (default {NODES}); more ranks than cores make the lab CPU-bound")
    ap.add_argument("--profile-rate", default="1gbit")
    ap.add_argument("--targets", default="100mbit,10gbit", type=lambda s: s.split(","))
    ap.add_argument("--apps", default=",".join(APPS), type=lambda s: s.split(","),
                    help="catalogue applications (fabricbench app list)")
    ap.add_argument("--size", type=int, default=1, help="problem size of every application (app run --size)")
    ap.add_argument("--repeats", type=int, default=5, help="measured runs per application and target (median)")
    ap.add_argument("--profile-repeats", type=int, default=5,
                    help="profiled runs per application at the profile rate; the median one by time is predicted from")
    ap.add_argument("--timeout", type=float, default=900, help="stop one application run after this long, s")
    ap.add_argument("--iterations", type=int, default=0, help="engine iterations per point (default: adaptive)")
    ap.add_argument("--time-budget", type=float, default=0.1, help="engine time budget per point, s (adaptive count)")
    ap.add_argument("--benchmarks", default=",".join(ENGINE_BENCHMARKS), type=lambda s: s.split(","),
                    help="engine benchmarks the models are fitted to")
    ap.add_argument("--engine-repeat", type=int, default=3,
                    help="launches of each engine benchmark (run --repeat; default 3): one launch of exchange can be "
                         "caught 2-4x off by a descheduled rank")
    ap.add_argument("--sizes", default="1:1M", help="engine message sizes: past the lab's 64 KiB burst to the link's rate")
    ap.add_argument("--level", type=float, default=0.9, help="the band's level (predict --level)")
    ap.add_argument("--analyse-only", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()
    plan_path = Path(args.db).with_suffix(".whatif.json")
    state = json.loads(plan_path.read_text()) if args.analyse_only else collect(args)
    rows = analyse(args, state)
    print_table(rows, state)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
