"""``fabricbench fabric ...``: simulate a fabric, scan it, judge it, follow a route.

    fabric sim up --hcas 8 --switches 3 --degrade edge1:3=1x     ibsim + OpenSM daemons
    fabric sim inject errors edge1:2 57 / down edge2:4 / width edge1:3 1x / clear
    fabric scan [--sim] [--routes]        store a snapshot (run kind fabric)
    fabric check [--sim] [--snapshot RUN] [--against RUN]      verdict; exit 0/1/2
    fabric route HOST_A HOST_B [--live]    the switch ports between two hosts
    fabric sim down

Exit status of ``check``: 0 healthy, 1 problems found, 2 the check could not run, like
``health``.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import console, err_console, json_option, label_option, main, parse_tags, pass_state, print_json, tag_option
from fabricbench.errors import FabricbenchError, UsageError
from fabricbench import numbers

EXIT_CANNOT_RUN = 2
_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}

name_option = click.option("--name", "name", envvar="FABRICBENCH_SIM", metavar="NAME",
                           help="Simulation name (default fbf; also FABRICBENCH_SIM).")
sim_option = click.option("--sim", "use_sim", is_flag=True,
                          help="Talk to the simulated fabric (fabric sim up) through LD_PRELOAD of libumad2sim.so.")
timeout_option = click.option("--timeout", type=click.FloatRange(min=1), metavar="SECONDS",
                              help="Longest a diagnostic that walks the whole fabric may run (default 60; per-port queries 10).")
design_options = [
    click.option("--width", "width", metavar="WIDTH", help="Expected width of every link (4x): narrower links are findings."),
    click.option("--speed", "speed", metavar="SPEED", help="Expected speed of every link (EDR): slower links are findings."),
]


def _snapshot_options():
    """What every command that stores a snapshot takes: the design, a timeout, label, tags, --json."""
    return [*design_options, timeout_option, label_option, tag_option, json_option]


def _design(width: Optional[str], speed: Optional[str]) -> Dict[str, Any]:
    from fabricbench.analysis.fabric_model import normalise_speed
    from fabricbench.planning.fabric_topology import parse_width

    design: Dict[str, Any] = {}
    if width:
        design["width"] = parse_width(width)
    if speed:
        design["speed"] = normalise_speed(speed)
        if design["speed"] is None:
            raise UsageError(f"--speed {speed}: SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR")
    return design


def _with(options):
    def wrap(f):
        for option in reversed(options):
            f = option(f)
        return f
    return wrap


snapshot_options = _snapshot_options()


@main.group()
def fabric() -> None:
    """The InfiniBand fabric itself: topology, link state, error counters, routes (infiniband-diags).

    \b
      fabricbench fabric sim up --hcas 8 --switches 3     # a simulated fabric (ibsim + OpenSM)
      fabricbench fabric check --sim                      # scan it and judge it
      fabricbench fabric route n1 n6 --sim --live
      fabricbench fabric sim down
    """


# -- sim ----------------------------------------------------------------------------------------------

@fabric.group()
def sim() -> None:
    """A simulated fabric for trying and testing: ibsim and OpenSM daemons on a generated fat tree."""


@sim.command("up")
@click.option("--hcas", type=click.IntRange(min=1, max=1024), default=8, show_default=True, help="HCAs (hosts n1..nN).")
@click.option("--hosts", help="Comma-separated host names for the HCAs instead of n1..nN (e.g. a lab's nodes).")
@click.option("--hostfile", type=click.Path(exists=True, dir_okay=False), help="Host names from a hostfile (first word of each line).")
@click.option("--switches", type=click.IntRange(min=1, max=64), default=3, show_default=True, help="Switches in all.")
@click.option("--cores", type=click.IntRange(min=0), help="Core switches among them (default: none for 1-2 switches, else a third).")
@click.option("--uplinks", type=click.IntRange(min=1, max=8), default=1, show_default=True, help="Cables from each edge to each core.")
@click.option("--radix", type=click.IntRange(min=2, max=254), help="Ports per switch (default: as needed, at least 8).")
@click.option("--width", default="4x", show_default=True, help="Width of every link: 1x, 2x, 4x, 8x, 12x.")
@click.option("--speed", default="EDR", show_default=True, help="Speed of every link: SDR, DDR, QDR, FDR, EDR, HDR.")
@click.option("--degrade", multiple=True, metavar="PORT=LINK", help="A cable that trains lower, e.g. edge1:3=1x, n5=FDR, edge2:5=1xQDR (repeatable).")
@name_option
@json_option
def sim_up(hcas, hosts, hostfile, switches, cores, uplinks, radix, width, speed, degrade, name, as_json) -> None:
    """Start ibsim on a generated fat tree and OpenSM on it; wait until the subnet is up."""
    from fabricbench.workflows import fabric_sim
    from fabricbench.planning.fabric_topology import SimSpec

    names = _host_names(hcas, hosts, hostfile)
    spec = SimSpec(hosts=names, switches=switches, cores=cores, width=width, speed=speed, uplinks=uplinks, radix=radix,
                   degrade=dict(_split_degrade(item) for item in degrade))
    the_sim, started = fabric_sim.up(spec, name)
    info = fabric_sim.status(the_sim.name)
    if as_json:
        print_json(info)
        return
    verb = "is up" if started else "is already up"
    console.print(f"simulated fabric '{the_sim.name}' {verb}: {len(info['switches'])} switches ({', '.join(info['switches'])}), "
                  f"{len(info['hosts'])} HCAs, {info['cables']} cables, {info['design']}; OpenSM on {info['sm_host']}",
                  highlight=False, soft_wrap=True)
    if info["degraded"]:
        console.print("degraded: " + ", ".join(f"{k}={v}" for k, v in info["degraded"].items()), highlight=False)
    flag = "" if the_sim.name == "fbf" else f" --name {the_sim.name}"
    console.print(f"scan it with: fabricbench fabric check --sim{flag}", style="dim", highlight=False)


def _host_names(hcas: int, hosts: Optional[str], hostfile: Optional[str]) -> List[str]:
    if hosts and hostfile:
        raise UsageError("give --hosts or --hostfile, not both")
    if hostfile:
        from fabricbench.launch.mpirun import read_hostfile

        return list(dict.fromkeys(read_hostfile(hostfile)))
    if hosts:
        return [h.strip() for h in hosts.split(",") if h.strip()]
    return [f"n{i}" for i in range(1, hcas + 1)]


def _split_degrade(item: str) -> Tuple[str, str]:
    port, sep, link = item.rpartition("=")
    if not sep or not port.strip() or not link.strip():
        raise UsageError(f"--degrade {item}: write PORT=LINK, e.g. edge1:3=1x or n5=FDR")
    return port.strip(), link.strip()


@sim.command("down")
@name_option
def sim_down(name) -> None:
    """Stop OpenSM and ibsim and remove everything the simulation made (also after a crash)."""
    from fabricbench.workflows import fabric_sim

    chosen = fabric_sim.sim_name(name)
    stopped = fabric_sim.down(chosen)
    console.print(f"simulated fabric '{chosen}' is down" + (f": stopped {', '.join(stopped)}" if stopped else " (nothing was running)"),
                  highlight=False)


@sim.command("status")
@name_option
@json_option
def sim_status(name, as_json) -> None:
    """Show the simulation: daemons, switches, hosts, degraded cables and injected faults."""
    from fabricbench.workflows import fabric_sim

    info = fabric_sim.status(name)
    if as_json:
        print_json(info)
        return
    if not info["up"]:
        console.print(f"simulated fabric '{info['name']}' is " + ("not running (leftovers: run fabric sim down)"
                                                                 if info.get("leftovers") or info.get("daemons") else "down"))
        return
    console.print(f"simulated fabric '{info['name']}' is up since {info['created']}: {', '.join(info['switches'])}; "
                  f"{len(info['hosts'])} HCAs; {info['design']}; OpenSM on {info['sm_host']}", highlight=False, soft_wrap=True)
    for d, v in info["daemons"].items():
        console.print(f"  {d}: pid {v['pid']}", highlight=False)
    for k, v in info["degraded"].items():
        console.print(f"  degraded: {k}={v}", highlight=False)
    for f in info["faults"]:
        console.print(f"  fault: {f}", highlight=False)


@sim.command("inject")
@click.argument("fault", type=click.Choice(["errors", "traffic", "down", "up", "width", "speed", "clear"]))
@click.argument("port", required=False)
@click.argument("value", required=False)
@name_option
def sim_inject(fault, port, value, name) -> None:
    """Inject a fault through ibsim's console.

    \b
      errors PORT [COUNTER=]N   an error counter (default SymbolErrorCounter): errors edge1:2 57
      traffic PORT BYTES        the port's transmitted data: traffic edge1:5 200G
      down PORT / up PORT       unplug / plug back the cable at a port (edge2:4, or a host: n8)
      width PORT 1x             the cable retrains narrower (restarts the daemons, keeps the LIDs)
      speed PORT FDR            the cable retrains slower
      clear                     every cable healthy, every counter at zero
    """
    from fabricbench.workflows import fabric_sim

    console.print(fabric_sim.inject(name, fault, port, value), highlight=False, soft_wrap=True)


# -- scan and check ----------------------------------------------------------------------------------

@fabric.command("scan")
@sim_option
@name_option
@click.option("--routes", is_flag=True, help="Also store every switch's forwarding table (for fabric route and health).")
@_with(snapshot_options)
@pass_state
def scan_cmd(state, use_sim, name, routes, width, speed, timeout, label, tags, as_json) -> None:
    """Run the diagnostics (ibnetdiscover, iblinkinfo, smpquery, sminfo, ibqueryerrors) and store a snapshot.

    The snapshot is a run of kind fabric: nodes, switches, ports, links with their width and
    speed (active against enabled and supported), LIDs, the subnet managers, the counters and,
    with --routes, the forwarding tables. Prints what it found and the verdict against the
    previous snapshot of the same fabric (fabric check for an exit status that says it).
    """
    result = _scan_and_check(state, use_sim, name, routes, width, speed, timeout, label, tags, None, as_json)
    if as_json:
        print_json(result)
    sys.exit(0)


@fabric.command("check")
@sim_option
@name_option
@click.option("--snapshot", "snapshot_ref", metavar="RUN", help="Judge a stored snapshot instead of scanning now.")
@click.option("--against", "against", metavar="RUN", help="Compare with this snapshot (default: the previous one of the same fabric).")
@click.option("--routes", is_flag=True, help="Also store the forwarding tables with the new snapshot.")
@_with(snapshot_options)
@pass_state
def check_cmd(state, use_sim, name, snapshot_ref, against, routes, width, speed, timeout, label, tags, as_json) -> None:
    """Scan the fabric (or take a stored snapshot) and give the verdict: links below their width or
    speed, error counters above thresholds or growing, links that went down, no master SM; then the
    ten worst ports by errors and by utilisation.

    Exit status: 0 healthy, 1 problems found, 2 could not run.
    """
    if snapshot_ref and (use_sim or routes or timeout):
        raise UsageError("--snapshot judges a stored snapshot: give no --sim, --routes or --timeout with it")
    if snapshot_ref:
        result = _judge_stored(state, snapshot_ref, against, width, speed, as_json)
    else:
        result = _scan_and_check(state, use_sim, name, routes, width, speed, timeout, label, tags, against, as_json)
    if as_json:
        print_json(result)
    sys.exit(result["exit_status"])


def _cannot_run(message: str, as_json: bool) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    if as_json:
        print_json({"healthy": None, "verdict": f"COULD NOT RUN: {message}", "exit_status": EXIT_CANNOT_RUN, "error": message})
    sys.exit(EXIT_CANNOT_RUN)


def _thresholds(width, speed):
    from fabricbench.analysis.fabric import FabricThresholds

    design = _design(width, speed)
    return FabricThresholds(width=design.get("width"), speed=design.get("speed"))


def _scan_and_check(state, use_sim, name, routes, width, speed, timeout, label, tags, against, as_json) -> Dict[str, Any]:
    from fabricbench.workflows import fabric as wf

    try:
        thresholds = _thresholds(width, speed)
        store = state.store
        with console.status("scanning the fabric", spinner="dots") if not as_json else _nothing():
            run, snapshot = wf.scan(store, sim=name, use_sim=use_sim, routes=routes, design=_design(width, speed),
                                    label=label, tags=parse_tags(tags), timeout=timeout)
        run, snapshot = wf.load_snapshot(store, run.id)
        report, previous = wf.judge_stored(store, run, snapshot, against, thresholds)
    except FabricbenchError as exc:
        _cannot_run(str(exc), as_json)
    return _report(run, report, previous, as_json)


def _judge_stored(state, ref, against, width, speed, as_json) -> Dict[str, Any]:
    from fabricbench.workflows import fabric as wf

    try:
        thresholds = _thresholds(width, speed)
        run, snapshot = wf.load_snapshot(state.store, ref)
        report, previous = wf.judge_stored(state.store, run, snapshot, against, thresholds)
    except FabricbenchError as exc:
        _cannot_run(str(exc), as_json)
    return _report(run, report, previous, as_json)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _report(run, report, previous, as_json) -> Dict[str, Any]:
    from fabricbench.report.words.fabric import report_dict

    result = report_dict(report)
    result["run"] = {"id": run.id, "uuid": run.uuid, "kind": run.kind, "label": run.label, "created": run.created}
    result["previous"] = {"id": previous[0].id, "taken": previous[1].taken} if previous else None
    if not as_json:
        show(run, report, previous[0] if previous else None)
    return result


def show(run, report, previous_run=None) -> None:
    from fabricbench.report.words.fabric import evidence, port_detail, verdict

    colour = "bold green" if report.healthy else "bold red"
    console.print(f"[{colour}]{verdict(report)}[/]", highlight=False, soft_wrap=True)
    snap = report.snapshot
    how = [f"snapshot run {run.id} of {snap.taken} ({snap.source})"]
    if previous_run is not None:
        how.append(f"compared with run {previous_run.id}")
    if snap.design:
        how.append(f"design {snap.design.get('width', '?')}X {snap.design.get('speed', '?')}")
    console.print("; ".join(how), style="dim", highlight=False, soft_wrap=True)
    if report.findings:
        table = Table(title="Findings", title_justify="left")
        for col in ("severity", "kind", "ports"):
            table.add_column(col, no_wrap=col != "ports")
        table.add_column("evidence", overflow="fold")
        for f in report.findings:
            table.add_row(f"[{_STYLE.get(f.severity, '')}]{f.severity}[/]", f.kind, "\n".join(f.ports) or "-", evidence(f))
        console.print(table)
    if report.worst_errors:
        table = Table(title=f"Worst {len(report.worst_errors)} ports by errors", title_justify="left")
        table.add_column("port")
        table.add_column("cable to")
        table.add_column("errors", justify="right")
        table.add_column("largest counters", overflow="fold")
        for r in report.worst_errors:
            table.add_row(r.port, r.peer or "-", numbers.grouped(r.value), port_detail(r))
        console.print(table)
    if report.busiest:
        unit = report.utilisation_unit
        title = (f"Busiest {len(report.busiest)} ports since the previous snapshot" if unit == "%"
                 else f"Busiest {len(report.busiest)} ports (bytes since the counters were cleared)")
        table = Table(title=title, title_justify="left")
        table.add_column("port")
        table.add_column("cable to")
        table.add_column("utilisation (%)" if unit == "%" else "data (bytes)", justify="right")
        table.add_column("detail", overflow="fold")
        for r in report.busiest:
            table.add_row(r.port, r.peer or "-", numbers.number(r.value) if unit == "%" else numbers.grouped(r.value), port_detail(r))
        console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False, soft_wrap=True)


# -- route ---------------------------------------------------------------------------------------------

@fabric.command("route")
@click.argument("host_a")
@click.argument("host_b")
@click.option("--snapshot", "snapshot_ref", metavar="RUN", help="Follow this snapshot's forwarding tables (default: the newest with --routes).")
@click.option("--live", is_flag=True, help="Ask the fabric now (ibtracert) instead of a stored snapshot.")
@sim_option
@name_option
@json_option
@pass_state
def route_cmd(state, host_a, host_b, snapshot_ref, live, use_sim, name, as_json) -> None:
    """The switch ports the traffic from HOST_A to HOST_B crosses (and back, when it differs)."""
    from fabricbench.analysis.fabric_routes import NoRoute, route, switch_ports
    from fabricbench.workflows import fabric as wf

    if live or use_sim:
        if snapshot_ref:
            raise UsageError("--live asks the fabric now: give no --snapshot with it")
        out: Dict[str, Any] = {"source": "ibtracert", "routes": {}}
        for a, b in ((host_a, host_b), (host_b, host_a)):
            hops = wf.trace(a, b, use_sim=use_sim, sim=name)
            out["routes"][f"{a}->{b}"] = [{"from": f, "out": o, "to": t, "in": i} for f, o, t, i in hops]
        return _print_route(out, as_json)
    found = wf.load_snapshot(state.store, snapshot_ref) if snapshot_ref else wf.latest_snapshot(state.store, with_routes=True)
    if found is None:
        raise FabricbenchError("no fabric snapshot with forwarding tables: run fabricbench fabric scan --routes (or use --live)")
    run, snapshot = found
    out = {"source": f"snapshot run {run.id} of {snapshot.taken}", "routes": {}}
    for a, b in ((host_a, host_b), (host_b, host_a)):
        try:
            hops = route(snapshot, a, b)
        except NoRoute as exc:
            raise FabricbenchError(f"route {a} -> {b} in run {run.id}: {exc}") from None
        names = lambda key: snapshot.nodes[key[0]].name if key[0] in snapshot.nodes else key[0]  # noqa: E731
        out["routes"][f"{a}->{b}"] = [{"from": names(h.out), "out": h.out[1], "to": names(h.into), "in": h.into[1]} for h in hops]
        out.setdefault("switch_ports", {})[f"{a}->{b}"] = switch_ports(snapshot, hops)
    _print_route(out, as_json)


def _print_route(out: Dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(out)
        return
    console.print(f"from {out['source']}", style="dim", highlight=False)
    for pair, hops in out["routes"].items():
        table = Table(title=pair.replace("->", " -> "), title_justify="left")
        for col in ("from", "out port", "to", "in port"):
            table.add_column(col, justify="right" if "port" in col else "left")
        for h in hops:
            table.add_row(h["from"], str(h["out"]), h["to"], str(h["in"]))
        console.print(table)
