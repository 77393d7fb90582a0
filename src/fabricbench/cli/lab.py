"""`fabricbench lab ...`: bring an emulated cluster up, look at it, launch into it, tear it down."""
from __future__ import annotations

import difflib
import os
import re
import sys
from typing import Optional, Tuple

import click
from rich.table import Table

from fabricbench.cli.app import console, json_option, main, print_json
from fabricbench.errors import UsageError
from fabricbench.lab import LabError, LabSpec, current_lab, lab_name, parse_degrade, parse_rate, tcp_goodput
from fabricbench.lab import core as lab_core
from fabricbench.lab.spec import DEFAULT_LINK, default_subnet
from fabricbench import numbers

name_option = click.option(
    "--name",
    "name",
    envvar="FABRICBENCH_LAB",
    metavar="NAME",
    help="Lab name (default fbl; also FABRICBENCH_LAB): it prefixes every namespace and interface the lab makes.",
)


_DECIMAL_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(|bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)\s*$", re.I)
RATE_UNITS = "bit, kbit, mbit, gbit, tbit (bits/s) or bps, kbps, mbps, gbps, tbps (bytes/s)"


def check_rate(option: str, text: str) -> None:
    """A lab link rate in tc's decimal units; a binary unit (1gibit) or a typo is a usage error (exit 2)."""
    m = _DECIMAL_RATE.match(text)
    if m is None:
        unit = re.sub(r"^[\s0-9.]*", "", text).strip().lower()
        near = difflib.get_close_matches(unit.replace("i", "", 1) if unit.endswith(("ibit", "ibps")) else unit,
                                         [u.strip() for u in "bit kbit mbit gbit tbit bps kbps mbps gbps tbps".split()], n=1)
        number = text[: len(text) - len(text.lstrip("0123456789. "))].strip() or "1"
        hint = f"; did you mean {number}{near[0]}?" if near else ""
        raise UsageError(f"{option} {text}: not a lab link rate; use a number and one of {RATE_UNITS}{hint}")
    try:
        parse_rate(text)
    except LabError as exc:
        raise UsageError(f"{option} {text}: {exc}") from None


def _name_flag(name: str) -> str:
    return "" if name == "fbl" else f" --name {name}"


@main.group()
def lab() -> None:
    """An emulated cluster on this machine: network namespaces joined by shaped links (needs root).

    \b
      fabricbench lab up --nodes 4 --link 1gbit
      fabricbench run quick --launcher lab
      fabricbench lab down
    """


@lab.command()
@click.option("--nodes", type=click.IntRange(min=1), required=True, help="Number of nodes (network namespaces).")
@click.option("--link", default=DEFAULT_LINK, show_default=True, metavar="RATE", help="Rate of every node's link in tc's decimal units: 1gbit, 200mbit, 10gbit (bit units: bits/s; bps units: bytes/s).")
@click.option("--switches", type=click.Choice(["1", "2"]), default="1", show_default=True, help="Switches; with 2 the nodes are split between them.")
@click.option("--uplink", metavar="RATE", help="Rate of the link between two switches (default: --link).")
@click.option("--degrade", multiple=True, metavar="NODE=RATE", help="Give one node's link a lower rate, e.g. n3=100mbit (repeatable).")
@click.option("--subnet", default=None, metavar="CIDR", help="Private IPv4 subnet used only inside the lab (default 10.213.0.0/24; also FABRICBENCH_LAB_SUBNET).")
@click.option("--mtu", type=click.IntRange(min=576, max=65535), default=1500, show_default=True, help="MTU of the lab links.")
@click.option("--slurm", is_flag=True, help="Also run a Slurm cluster on it: munge, slurmctld on n1, one slurmd per node (partition 'lab').")
@name_option
@json_option
def up(nodes: int, link: str, switches: str, uplink: Optional[str], degrade: Tuple[str, ...], subnet: Optional[str], mtu: int,
       slurm: bool, name: Optional[str], as_json: bool) -> None:
    """Bring a lab up (a no-op if the same lab is already up)."""
    check_rate("--link", link)
    if uplink:
        check_rate("--uplink", uplink)
    for item in degrade:
        check_rate("--degrade", item.partition("=")[2] or item)
    name = lab_name(name)
    spec = LabSpec(
        nodes=nodes,
        link=link,
        switches=int(switches),
        uplink=uplink,
        degrade=parse_degrade(list(degrade)),
        subnet=subnet or default_subnet(),
        mtu=mtu,
        slurm=slurm,
    )
    before = current_lab(name)
    the_lab = lab_core.Lab.up(spec, name)
    if as_json:
        print_json(the_lab.status())
        return
    if before is not None:
        console.print(f"lab '{name}' is already up: {the_lab.describe()}")
    else:
        console.print(f"lab '{name}' is up: {the_lab.describe()}")
    _print_nodes(the_lab.status())
    console.print(f"hostfile: {the_lab.hostfile_path}")
    _print_slurm(the_lab.status(), name)
    console.print(
        f"TCP goodput of a {the_lab.shape['link']} link: {numbers.fixed(tcp_goodput(spec.link_bps(), spec.mtu) / 1e6, 2)} MB/s; "
        f"measure with: {'FABRICBENCH_LAB=' + name + ' ' if name != 'fbl' else ''}fabricbench run quick --launcher lab"
    )


@lab.command()
@name_option
@json_option
def status(name: Optional[str], as_json: bool) -> None:
    """Show the lab: nodes, addresses, switches and the shaping actually in place."""
    name = lab_name(name)
    info = lab_core.status(name)
    if as_json:
        print_json(info)
        return
    if not info["up"]:
        console.print(f"lab '{name}' is down")
        if info["leftovers"]:
            console.print(f"leftovers of a lab that did not finish: {', '.join(info['leftovers'])}")
            console.print(f"remove them with: fabricbench lab down{_name_flag(name)}")
        return
    console.print(f"lab '{name}' is up: {info['description']} (since {info['created']})")
    _print_nodes(info)
    if info["uplink"]:
        console.print("uplink: " + ", ".join(f"{sw} sends at {rate or 'unshaped'}" for sw, rate in info["uplink"].items()))
    console.print(f"hostfile: {info['hostfile']}")
    _print_slurm(info, name)
    if not info["shaping_checked"]:
        console.print("shaping not checked: reading the qdiscs needs root")
    elif info["healthy"]:
        console.print("[green]healthy[/]: every namespace is there and every link is shaped as asked")
    else:
        console.print("[red]not healthy[/]: " + "; ".join(info["problems"]))
        console.print(f"rebuild with: fabricbench lab down{_name_flag(name)} && fabricbench lab up{_name_flag(name)} ...")


@lab.command()
@name_option
@click.option("--print", "show", is_flag=True, help="Print the hostfile's contents instead of its path.")
def hostfile(name: Optional[str], show: bool) -> None:
    """Print the path of the lab's hostfile (node names that resolve inside the lab)."""
    name = lab_name(name)
    the_lab = current_lab(name)
    if the_lab is None:
        raise LabError(f"lab '{name}' is not up (fabricbench lab up{_name_flag(name)} --nodes N)")
    if show:
        sys.stdout.write(the_lab.hostfile_path.read_text())
    else:
        click.echo(str(the_lab.hostfile_path))


@lab.command()
@name_option
def down(name: Optional[str]) -> None:
    """Remove the lab: every namespace, link, bridge, qdisc and file it made (also after a crash)."""
    name = lab_name(name)
    removed = lab_core.down(name)
    daemons = [r for r in removed if r.startswith("daemon ")]
    namespaces = [r for r in removed if not r.startswith(("/", "daemon "))]
    files = len(removed) - len(namespaces) - len(daemons)
    if not removed:
        console.print(f"lab '{name}' was not up; nothing to remove")
    else:
        stopped = f", stopped {len(daemons)} Slurm daemons" if daemons else ""
        console.print(f"lab '{name}' is down: removed {len(namespaces)} namespaces and {files} files{stopped}")


@lab.command(name="exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@name_option
@click.argument("node")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(name: Optional[str], node: str, command: Tuple[str, ...]) -> None:
    """Run COMMAND inside NODE (n1, n2, ...) with the node's host name, e.g. lab exec n2 -- ip addr."""
    name = lab_name(name)
    the_lab = current_lab(name)
    if the_lab is None:
        raise LabError(f"lab '{name}' is not up (fabricbench lab up{_name_flag(name)} --nodes N)")
    if os.geteuid() != 0:
        raise LabError("lab exec needs root (it enters the node's network namespace)")
    argv = list(command[1:] if command and command[0] == "--" else command)
    if not argv:
        raise LabError("lab exec: give a command to run, e.g. fabricbench lab exec n1 -- hostname")
    from fabricbench.launch.procs import run_attached

    sys.exit(run_attached(the_lab.exec_argv(node, argv)))


@lab.command(name="slurm", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@name_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def slurm_(name: Optional[str], command: Tuple[str, ...]) -> None:
    """Run a Slurm client command (sinfo, squeue, scontrol, srun, ...) on the lab's login node, e.g. lab slurm sinfo."""
    from fabricbench.launch.slurm import lab_cluster

    name = lab_name(name)
    os.environ["FABRICBENCH_LAB"] = name
    argv = list(command[1:] if command and command[0] == "--" else command)
    cluster = lab_cluster()
    if cluster is None:
        raise LabError(f"lab '{name}' has no Slurm (fabricbench lab up{_name_flag(name)} --nodes N --slurm)")
    from fabricbench.launch.procs import run_attached

    sys.exit(run_attached(cluster.argv(argv), env=cluster.env()))


@lab.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@name_option
@click.option("--np", "np", type=click.IntRange(min=1), help="Number of ranks (default: one per node, or --ppn per node).")
@click.option("--hosts", help="Comma-separated nodes (n1,n3 or full names; default: all).")
@click.option("--ppn", type=click.IntRange(min=1), help="Ranks per node.")
@click.option("--dry-run", is_flag=True, help="Print the command line instead of running it.")
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
def mpirun(name: Optional[str], np: Optional[int], hosts: Optional[str], ppn: Optional[int], dry_run: bool, program: Tuple[str, ...]) -> None:
    """Run any MPI program across the lab, as --launcher lab starts the engine.

    \b
      fabricbench lab mpirun -- ./osu_latency
      fabricbench lab mpirun --hosts n1,n3 --dry-run -- hostname
    """
    import shlex

    from fabricbench.launch.base import Layout
    from fabricbench.launch.lab import LabLauncher

    name = lab_name(name)
    os.environ["FABRICBENCH_LAB"] = name
    argv = list(program[1:] if program and program[0] == "--" else program)
    if not argv:
        raise LabError("lab mpirun: give a program to run, e.g. fabricbench lab mpirun -- hostname")
    layout = Layout(np=np, hosts=[h.strip() for h in hosts.split(",") if h.strip()] if hosts else [], ppn=ppn)
    launcher = LabLauncher(layout)
    command = launcher.command(argv)
    if dry_run:
        click.echo(shlex.join(command))
        return
    if os.geteuid() != 0:
        raise LabError("lab mpirun needs root (it enters the lab's network namespaces)")
    from fabricbench.launch.procs import run_attached

    sys.exit(run_attached(command, env=launcher.environment()))


def _print_slurm(info, name: str) -> None:
    s = info.get("slurm")
    if not s:
        return
    env = "" if name == "fbl" else f"FABRICBENCH_LAB={name} "
    console.print(f"Slurm: partition '{s['partition']}', controller and login node {s['controller']}, "
                  f"{len(s['running'])} daemons running; config {s['config']}")
    console.print(f"  {env}fabricbench run quick --launcher srun --np {len(info['nodes'])}   |   "
                  f"{env}fabricbench lab slurm sinfo")


def _print_nodes(info) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("node", "address", "switch", "link", "shaped out", "shaped in"):
        table.add_column(col)
    for n in info["nodes"]:
        shaped = n.get("shaped", {})
        table.add_row(n["name"], n["address"], n["switch"], n["rate"], shaped.get("out") or "-", shaped.get("in") or "-")
    console.print(table)
