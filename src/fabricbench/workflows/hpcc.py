"""Run the real HPC Challenge binary through a launcher and store what it measured.

One call: size the problem, write hpccinf.txt in a fresh work directory, run ``hpcc``
(Debian's package puts it on PATH) with the chosen launcher, read its hpccoutf.txt with
the HPCC importer, and store a run of kind ``hpcc`` with the input file and the output
file as artifacts. The run is created before HPCC starts (status ``running``), so a
crash, a timeout or Ctrl-C leaves a run that says what happened and keeps every test
HPCC completed.
"""
from __future__ import annotations

import datetime as _dt
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from fabricbench.analysis.hpcc import hpcc_table, hpcc_values, percent_of_peak
from fabricbench.errors import FabricbenchError
from fabricbench.planning.hpcc_input import HpccPlan, memory_total_bytes, plan, render_hpccinf
from fabricbench.analysis.peaks import CpuPeak, detect_peak, given_peak
from fabricbench.importers import ImportFormatError, ParsedRun, Source
from fabricbench.importers import hpcc as hpcc_importer
from fabricbench.launch import Layout, get_launcher
from fabricbench.launch.procs import PROCESS_ERRORS, Job, ProcessTimeout, stop_cause
from fabricbench.store.records import Measurement, Run
from fabricbench.workflows.hosts import run_provenance
from fabricbench.workflows.hpcc_watch import SectionWatcher
from fabricbench.workflows.session import RunInterrupted, Session
from fabricbench import numbers

OUTPUT = "hpccoutf.txt"
PROFILE = "profile.json"
INPUT = "hpccinf.txt"


class HpccError(FabricbenchError):
    """HPCC could not be run, failed, or left no usable output."""


@dataclass
class HpccResult:
    run: Run
    status: str
    plan: HpccPlan
    workdir: Path
    measurements: List[Measurement]
    peak: Optional[CpuPeak]
    hpl_gflops: Optional[float]
    percent_of_peak: Optional[float]
    returncode: Optional[int]
    message: Optional[str]
    rows: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "run": self.run.id, "uuid": self.run.uuid, "status": self.status, "message": self.message,
            "workdir": str(self.workdir), "returncode": self.returncode, "plan": self.plan.to_dict(),
            "hpl_gflops": self.hpl_gflops, "peak": self.peak.to_dict() if self.peak else None,
            "percent_of_peak": self.percent_of_peak, "warnings": self.warnings,
            "results": [{"test": r["test"], "key": r["key"], "display": r["display"], "value": r["values"][0],
                         "unit": r["unit"], "headline": r["headline"]} for r in self.rows],
        }


def find_hpcc(binary: str = "hpcc") -> str:
    path = shutil.which(binary)
    if not path:
        raise HpccError(f"HPCC binary '{binary}' not found; install it (Debian: apt-get install hpcc) "
                        "or give its path with --hpcc")
    return path


def fresh_workdir(workdir: Optional[str]) -> Path:
    """An empty directory for one run: HPCC appends to an existing hpccoutf.txt."""
    if workdir:
        path = Path(workdir)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise HpccError(f"work directory {path} exists and is not empty; HPCC would append to old output")
        path.mkdir(parents=True, exist_ok=True)
        return path
    base = Path("fabricbench-results")
    base.mkdir(exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.mkdtemp(prefix=f"hpcc-{stamp}-", dir=base))


def run_hpcc(
    store,
    np: int,
    launcher: str = "mpirun",
    hostfile: Optional[str] = None,
    hosts: Sequence[str] = (),
    memory_fraction: float = 0.25,
    n: Optional[int] = None,
    nb: Optional[int] = None,
    grid: Optional[str] = None,
    peak_gflops: Optional[float] = None,
    label: Optional[str] = None,
    tags: Optional[Dict[str, str]] = None,
    workdir: Optional[str] = None,
    hpcc: str = "hpcc",
    timeout: Optional[float] = None,
    launcher_args: Sequence[str] = (),
    echo: Callable[[str], None] = lambda _msg: None,
    profile: bool = False,
) -> HpccResult:
    """Run HPCC on ``np`` processes and store the run; raises HpccError (after storing
    the run as failed, with what HPCC completed) when HPCC fails. With ``profile`` HPCC runs
    under the MPI profiler and the run also keeps the profile and when each HPCC section
    began and ended (artifacts ``profile`` and ``hpcc_sections``)."""
    binary = find_hpcc(hpcc)
    layout = Layout(np=np, hostfile=hostfile, hosts=list(hosts), extra_args=list(launcher_args))
    runner = get_launcher(launcher, layout)
    nodes = runner.node_count()
    memory = None
    memory_note = None
    if n is None:
        local = memory_total_bytes()
        # Lab "nodes" are namespaces on this machine: they share its memory.
        memory = local if runner.one_machine() else local * nodes
        memory_note = "MemTotal of this machine" + ("" if memory == local else f" x {nodes} nodes (assumed alike)")
    the_plan = plan(np, nodes=nodes, memory_bytes=memory, memory_fraction=memory_fraction, n=n, nb=nb, grid=grid)
    peak = given_peak(peak_gflops) if peak_gflops else detect_peak(np, nodes)
    work = fresh_workdir(workdir)
    inf_text = render_hpccinf(the_plan)
    (work / INPUT).write_text(inf_text, encoding="utf-8")
    argv = runner.command([binary])
    env = runner.environment()
    command = shlex.join(argv)
    profile_path = (work / PROFILE).resolve()
    if profile:
        from fabricbench.native import profiler_library
        from fabricbench.workflows.profile import prepare_command

        argv, env = prepare_command(argv, profiler_library(), profile_path, env)

    provenance: Dict[str, Any] = {
        "hpcc": {"binary": binary, "workdir": str(work.resolve()), "plan": the_plan.to_dict(),
                 "memory_source": memory_note, "launcher": launcher, "nodes": nodes},
        "peak": peak.to_dict() if peak else None,
    }
    session = Session(store, kind="hpcc", label=label, tags=tags, command=command, provenance=provenance, ranks=np,
                      unit="results")
    run = session.run
    with session:  # an unexpected error still ends the run failed
        session.artifact(INPUT, {"name": INPUT, "text": inf_text})
        _record_hosts(session, runner, argv, provenance)
        echo(f"run {run.id}: {command}  (in {work}; N={the_plan.n} NB={the_plan.nb} grid {the_plan.p}x{the_plan.q})")

        returncode: Optional[int] = None
        interrupted: Optional[KeyboardInterrupt] = None
        failure: Optional[str] = None
        out_path, err_path = work / "hpcc.stdout", work / "hpcc.stderr"
        watcher = SectionWatcher(work / OUTPUT).start() if profile else None
        with open(out_path, "wb") as out_fh, open(err_path, "wb") as err_fh:
            try:
                job: Optional[Job] = Job(argv, env=env, cwd=str(work), stdout=out_fh, stderr=err_fh)
            except OSError as exc:
                failure = f"could not start {argv[0]}: {exc.strerror or exc}"
                job = None
            if job is not None:
                try:
                    returncode = job.wait(timeout=timeout)
                except ProcessTimeout:
                    failure = f"HPCC did not finish within {numbers.short(timeout)} s and was stopped"
                except KeyboardInterrupt as exc:
                    interrupted = exc
                    failure = f"interrupted by {stop_cause(exc).name}"
                finally:
                    job.stop()
                    returncode = job.returncode if returncode is None else returncode
        if watcher is not None:
            watcher.stop()
        if failure is None and returncode != 0:
            failure = f"HPCC exited with status {returncode}" + _tail(err_path)

        parsed: Optional[ParsedRun] = None
        output = work / OUTPUT
        if output.is_file():
            try:
                parsed = hpcc_importer.parse(Source.read(str(output)), allow_truncated=True)
            except ImportFormatError as exc:
                failure = failure or f"HPCC's output could not be read: {exc}"
            if parsed is not None and not parsed.complete and failure is None:
                failure = f"HPCC's output is incomplete: {parsed.incomplete_reason}"
        elif failure is None:
            failure = f"HPCC wrote no {OUTPUT} in {work}" + _tail(err_path)

        measurements = parsed.measurements if parsed else []
        session.add_now(measurements)
        if output.is_file():
            session.artifact(OUTPUT, {"name": OUTPUT, "text": output.read_text(encoding="utf-8", errors="replace")})
        if parsed is not None:
            provenance["hpcc"].update(version=parsed.tool_version, summary=parsed.facts.get("summary"),
                                      hpl=parsed.facts.get("hpl"), message_sizes=parsed.facts.get("message_sizes"))
            if parsed.warnings:
                provenance["hpcc"]["warnings"] = parsed.warnings
            session.update(provenance=provenance)

        if watcher is not None:
            failure = _keep_profile(session, profile_path, watcher, failure, err_path)

        values = hpcc_values(measurements)
        hpl = values.get("HPL_Tflops")
        pct = percent_of_peak(hpl, peak.gflops if peak else None)
        status = "interrupted" if interrupted is not None else ("failed" if failure else "complete")
        message = None
        if failure:
            message = f"{failure}; kept {len(measurements)} results from {OUTPUT}" if measurements else failure
        session.finish(status, message)
    result = HpccResult(run=store.get_run(run.id), status=status, plan=the_plan, workdir=work, measurements=measurements,
                        peak=peak, hpl_gflops=hpl, percent_of_peak=pct, returncode=returncode, message=message,
                        rows=hpcc_table([(run.name, measurements)]) if measurements else [],
                        warnings=list(parsed.warnings) if parsed else [])
    if interrupted is not None:
        cause = stop_cause(interrupted)
        raise RunInterrupted(f"run {run.id} interrupted by {cause.name}; its {len(measurements)} results are kept "
                             f"(files in {work})", exit_code=cause.exit_code)
    if failure:
        raise HpccError(f"{message} (run {run.id} marked {status}; files in {work})")
    return result


def _keep_profile(session: Session, path: Path, watcher: SectionWatcher, failure: Optional[str],
                  err_path: Path) -> Optional[str]:
    """Store the profile and the section marks with the run; the run's failure (a missing or
    unusable profile fails a --profile run that otherwise succeeded)."""
    from fabricbench.analysis.profile_data import ProfileError, load_profile
    from fabricbench.workflows.profile import resolve_callsites

    session.artifact("hpcc_sections", watcher.result())
    if not path.is_file():
        return failure or f"HPCC ran but the profiler wrote no profile ({path.name})" + _tail(err_path)
    try:
        data = load_profile(path)
    except ProfileError as exc:
        return failure or f"the profile is unusable: {exc}"
    resolve_callsites(data)
    session.artifact("profile", data)
    return failure


def _record_hosts(session: Session, runner, argv: Sequence[str], provenance: Dict[str, Any]) -> None:
    """The run's provenance through the one collection every run kind uses (hosts, MPI library,
    launcher, launch command); a run without them still runs."""
    try:
        info = run_provenance(runner, timeout=120.0, launch=argv)
    except (FabricbenchError, *PROCESS_ERRORS) as exc:
        provenance["hpcc"]["host_facts"] = f"not collected: {exc}"
        session.update(provenance=provenance)
        return
    session.record_provenance(info)


def _tail(path: Path, limit: int = 200) -> str:
    """The first meaningful line of HPCC's stderr (the cause; launchers add boxes after it)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not re.fullmatch(r"[-=*#_\s]+", line)]
    if not lines:
        return ""
    return f": {lines[0][:limit]} (see {path.name})"
