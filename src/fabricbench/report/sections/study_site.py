"""The report of a site study in seed 002's form: MPI raw performance, HPCC, and file
transfer with many readers of one server, per fabric, on one page.

Given the study as ``workflows.study_site.load_site`` read it (nothing here queries or
launches). Each part has its table, a figure and the sentences of the paper ("best latency
with ib: 26.1 us"; "2 readers of one server reach 58.2 MB/s together, 93% of its link"),
each with its verdict: a difference between fabrics is called only when the figures'
95% confidence intervals (engine) or repeated runs (HPCC) say so.
"""
from __future__ import annotations

import datetime as _dt
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

from fabricbench.analysis.record import figure_of_record
from fabricbench.analysis.study_hpcc import figure_rows
from fabricbench import numbers as fmt
from fabricbench.report.model import BulletList, Column, Notice, Paragraph, Report, Section, Table
from fabricbench.report.sections.study_hpcc import figure_sentence, load_range, study_conditions, verdict_words

HPCC_SHOWN = ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops", "StarSTREAM_Triad",
              "RandomlyOrderedRingLatency_usec", "RandomlyOrderedRingBandwidth_GBytes")


def _point(curve: Dict[Any, Any], pick) -> Optional[Dict[str, Any]]:
    """{size, value, ci} of the point `pick` chooses among a curve's sizes."""
    sizes = sorted(s for s in curve if s is not None)
    if not sizes:
        return None
    size = pick(sizes, curve)
    fig = figure_of_record(curve[size])
    return None if fig is None else {"size": size, "value": fig.value, "ci": fig.ci}


def _smallest(sizes, _curve):
    return sizes[0]


def _best_bandwidth(sizes, curve):
    def value(s):
        fig = figure_of_record(curve[s])
        return fig.value if fig else -1.0
    return max(sizes, key=value)


def _apart(a: Optional[Dict[str, Any]], b: Optional[Dict[str, Any]]) -> Optional[bool]:
    """True when the two figures' 95% CIs do not overlap; None when a CI is missing."""
    if not a or not b or not a.get("ci") or not b.get("ci"):
        return None
    return a["ci"][1] < b["ci"][0] or b["ci"][1] < a["ci"][0]


def _goodput_MBps(shape: Dict[str, Any]) -> Optional[float]:
    """What a lab link carries as TCP payload, MB/s (the ceiling of a bandwidth on it)."""
    from fabricbench.lab.rates import parse_rate, tcp_goodput

    try:
        return tcp_goodput(parse_rate(shape["link"]), int(shape.get("mtu") or 1500)) / 1e6 if shape.get("link") else None
    except (ValueError, TypeError, KeyError):
        return None


def mpi_section(data: Dict[str, Any], plot_format: str) -> Section:
    fabrics = data["fabrics"]
    section = Section("site-mpi", "MPI raw performance",
                      intro="Blocking ping-pong latency (one-way, median) and windowed bandwidth (rate over all "
                            "iterations, decimal MB/s) between two nodes, measured by fabricbench's engine.")
    rows, lat, bw = [], {}, {}
    for name, f in fabrics.items():
        lat[name] = _point(f["latency"], _smallest)
        bw[name] = _point(f["bandwidth"], _best_bandwidth)
        ci = lambda p: "-" if not p or not p.get("ci") else f"{fmt.number(p['ci'][0])} to {fmt.number(p['ci'][1])}"  # noqa: E731
        rows.append([name, (f["shape"] or {}).get("link", "-"),
                     fmt.number(lat[name]["value"]) if lat[name] else "-", ci(lat[name]),
                     fmt.number(bw[name]["value"]) if bw[name] else "-",
                     fmt.size(bw[name]["size"]) if bw[name] else "-", ci(bw[name])])
    section.add(Table([Column("Fabric", align="left"), Column("Link", align="left"), Column("Latency, smallest size", "us"),
                       Column("95% CI", "us", align="left"), Column("Best bandwidth", "MB/s"), Column("at size", "bytes"),
                       Column("95% CI", "MB/s", align="left")], rows, caption="MPI latency and bandwidth per fabric"))
    items = []
    ceiling = {name: _goodput_MBps(f["shape"]) for name, f in fabrics.items()}
    best_lat = min((n for n in lat if lat[n]), key=lambda n: lat[n]["value"], default=None)
    best_bw = max((n for n in bw if bw[n]), key=lambda n: bw[n]["value"], default=None)
    for best, points, what, unit in ((best_lat, lat, "latency", "us"), (best_bw, bw, "throughput", "MB/s")):
        if best is None:
            continue
        others = [n for n in points if n != best and points[n]]
        p = points[best]
        text = f"best {what} with {best}: {fmt.number(p['value'])} {unit} at {fmt.size(p['size'])} bytes"
        if not others:
            items.append(f"{text} (one fabric: nothing to compare).")
            continue
        apart = [_apart(p, points[n]) for n in others]
        beyond = [what == "throughput" and (ceiling[n] or 0) > 0 and p["value"] > ceiling[n] for n in others]
        if all(beyond):
            verdict = ("above the link goodput of every other fabric ("
                       + ", ".join(f"{n} {fmt.number(ceiling[n])} MB/s" for n in others) + "): no noise explains it")
        elif all(a is True for a in apart):
            verdict = "its 95% CI is clear of every other fabric's"
        elif any(a is None for a in apart):
            verdict = "cannot judge: a figure has no confidence interval and is within the others' link goodput"
        else:
            verdict = "no significant difference: the 95% CIs overlap"
        items.append(f"{text} ({verdict}).")
    section.add(BulletList(items))
    try:
        from fabricbench.report.plots import Curve, line_plot, run_color

        for key, points_of, title, ylabel in (("latency", "latency", "MPI latency", "one-way latency (us)"),
                                              ("bandwidth", "bandwidth", "MPI bandwidth", "bandwidth (MB/s)")):
            curves = []
            for i, (name, f) in enumerate(fabrics.items()):
                sizes = sorted(s for s in f[points_of] if s is not None)
                figs = [figure_of_record(f[points_of][s]) for s in sizes]
                xs = [s for s, g in zip(sizes, figs) if g]
                ys = [g.value for g in figs if g]
                if xs:
                    curves.append(Curve(name, xs, ys, color=run_color(i)))
            if curves:
                res = line_plot(curves, title, ylabel=ylabel, fmt=plot_format, logy=key == "latency")
                section.add(res.figure(f"site-{key}", title, alt=f"{title} per fabric"))
    except ImportError:
        pass
    return section


def hpcc_section(data: Dict[str, Any]) -> Section:
    names = list(data["fabrics"])
    section = Section("site-hpcc", "HPCC", intro="HPC Challenge on the same nodes and parameters for every fabric "
                                                 "(the geometric mean of the runs).")
    values = {n: data["fabrics"][n]["hpcc"] for n in names}
    if not any(values.values()):
        section.add(Notice("No HPCC run of this study completed.", "warning"))
        return section
    rows = [r for r in figure_rows(values, names) if r["key"] in HPCC_SHOWN]
    cols = [Column("Figure", align="left"), Column("Unit", align="left")] + [Column(n) for n in names]
    section.add(Table(cols, [[r["display"], r["unit"]] + [fmt.number(r["fabrics"][n]["value"]) for n in names]
                             for r in rows], caption="HPCC per fabric"))
    items = []
    for r in rows:
        for n in names[1:]:
            text = figure_sentence(r, names[0], n)
            if text:
                items.append(f"{text}: {verdict_words(r['versus'][n])}.")
    if items:
        section.add(BulletList(items))
    return section


def transfer_section(data: Dict[str, Any], plot_format: str) -> Section:
    section = Section("site-transfer", "File transfer: many readers of one server",
                      intro="All readers copy the same file from one xrootd server at the same moment (xrdcp to "
                            "/dev/null); raw TCP streams the same bytes without the file layer (the "
                            "network+protocol-only line). Medians over the repetitions.")
    rows, items, groups = [], [], []
    for name, f in data["fabrics"].items():
        summary = f["transfer"]
        if summary is None:
            continue
        for r in summary.rows:
            rows.append([name, r.label, str(r.readers), fmt.number(r.per_reader.median), fmt.number(r.aggregate.median),
                         fmt.number(r.ceiling), fmt.percent(100 * r.of_ceiling) if r.of_ceiling is not None else "-",
                         str(r.failed)])
        for r in summary.rows:
            if r.protocol == "tcp" or r.aggregate.median is None:
                continue
            share = f", {fmt.percent(100 * r.of_ceiling, decimals=0)} of the server's link" if r.of_ceiling else ""
            verdict = ("cannot judge the spread: one repetition" if r.rounds < 2 else
                       f"{fmt.number(r.aggregate.low)} to {fmt.number(r.aggregate.high)} MB/s over {r.rounds} repetitions")
            items.append(f"{name}: {r.readers} reader{'s' if r.readers != 1 else ''} of one server "
                         f"reach{'es' if r.readers == 1 else ''} "
                         f"{fmt.number(r.aggregate.median)} MB/s{' together' if r.readers > 1 else ''}{share} "
                         f"({verdict}).")
        for c in summary.comparisons:
            items.append(f"{name}, {c.readers} reader(s): the file transfer reaches {fmt.percent(100 * c.ratio, decimals=0)} "
                         f"of raw TCP" + ("" if c.ok else " (above raw TCP: the raw line is not a ceiling here)") + ".")
        groups.append(name)
    if not rows:
        section.add(Notice("No transfer run of this study completed.", "warning"))
        return section
    section.add(Table([Column("Fabric", align="left"), Column("Protocol", align="left"), Column("Readers"),
                       Column("Per reader", "MB/s"), Column("Aggregate", "MB/s"), Column("Ceiling", "MB/s"),
                       Column("of ceiling"), Column("Failed")], rows, caption="Throughput per reader count"),
                BulletList(items))
    try:
        from fabricbench.report.plots import Curve, line_plot, run_color

        curves = []
        for i, name in enumerate(groups):
            summary = data["fabrics"][name]["transfer"]
            for proto in summary.protocols:
                rs = sorted((r for r in summary.rows if r.protocol == proto and r.aggregate.median is not None),
                            key=lambda r: r.readers)
                if rs:
                    curves.append(Curve(f"{name} {rs[0].label}", [r.readers for r in rs], [r.aggregate.median for r in rs],
                                        color=run_color(i), style="-" if proto != "tcp" else "--"))
        if curves:
            res = line_plot(curves, "Aggregate throughput of one server", xlabel="readers", ylabel="MB/s",
                            logx=False, logy=False, sizes=False, fmt=plot_format)
            section.add(res.figure("site-transfer", "Aggregate throughput of one server",
                                   alt="aggregate throughput against reader count"))
    except ImportError:
        pass
    return section


def conditions_section(data: Dict[str, Any], reproduce: str) -> Section:
    rows = []
    for name, f in data["fabrics"].items():
        loads = [r["load"] for r in f["runs"] if r["load"] is not None]
        cpus = next((r["cpus"] for r in f["runs"] if r["cpus"]), None)
        mpi = next((r["mpi"] for r in f["runs"] if r["mpi"]), "-")
        rows.append([name, (f["shape"] or {}).get("link", "-"), str((f["shape"] or {}).get("nodes", "-")),
                     ", ".join(f"{r['id']} ({r['kind']}, {r['status']})" for r in f["runs"]),
                     load_range(loads, cpus), mpi])
    cols = [Column("Fabric", align="left"), Column("Link", align="left"), Column("Nodes"), Column("Runs", align="left"),
            Column("Host load (1 min)", align="left"), Column("MPI", align="left")]
    return study_conditions("site-conditions", "On the lab: network namespaces on one machine joined by shaped links "
                            "(token bucket); the nodes share this machine's CPUs, memory and disk. ", data["study"],
                            Table(cols, rows, caption="Conditions per fabric"), reproduce, "fabricbench study site")


def site_report(data: Dict[str, Any], reproduce: str, plot_format: str = "svg") -> Report:
    from fabricbench import __version__

    names = list(data["fabrics"])
    return Report(
        title=f"Interconnect at this site: {' and '.join(names)}",
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        runs=[SimpleNamespace(name=n) for n in names],
        sections=[conditions_section(data, reproduce), mpi_section(data, plot_format), hpcc_section(data),
                  transfer_section(data, plot_format)],
    )


def summary_lines(report: Report) -> List[str]:
    """The report's sentences, for the terminal."""
    out: List[str] = []
    for section in report.sections[1:]:
        for block in section.blocks:
            if isinstance(block, BulletList):
                out += [f"- {item}" for item in block.items]
    return out
