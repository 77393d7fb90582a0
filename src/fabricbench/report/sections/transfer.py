"""File transfer (runs from ``fabricbench transfer``): many readers, one server, raw TCP beside it.

Per transfer run: what ran (server, file, link, versions), a table per reader count
(per-reader and aggregate throughput against the server link's goodput, fairness, start
skew, time to last byte, failures), the findings as sentences, and seed 002's two charts:
throughput against the number of readers, and point-to-point raw against file transfer.
``findings(summary)`` gives the same sentences to the terminal.
"""
from __future__ import annotations

from typing import List

from fabricbench.analysis.transfer import BENCHMARK, TransferSummary, summarize
from fabricbench.report.model import BulletList, Cell, Column, Figure, Notice, Paragraph, Section, Table
from fabricbench.report.plots import transfer as plots
from fabricbench import numbers

ORDER = 68
BENCHMARKS = {BENCHMARK}


def _readers(n: int) -> str:
    return f"{n} reader{'s' if n != 1 else ''}"


def findings(summary: TransferSummary) -> List[str]:
    """Plain sentences: how close to the ceiling, fairness, raw against file, failures."""
    out = []
    for r in summary.rows:
        if r.of_ceiling is not None:
            fair = f", fairness {numbers.fixed(r.fairness.median, 3)}" if r.fairness.median is not None else ""
            out.append(f"{r.label}, {_readers(r.readers)}: aggregate {numbers.number(r.aggregate.median)} MB/s, "
                       f"{numbers.share(r.of_ceiling)} of the {numbers.number(r.ceiling)} MB/s ceiling; each reader "
                       f"{numbers.share(r.per_reader_of_share)} of an equal share{fair}")
    for c in summary.comparisons:
        verdict = "at or above" if c.ok else "BELOW"
        out.append(f"{_readers(c.readers)}, {c.cache} cache: raw TCP {numbers.number(c.raw)} MB/s is {verdict} "
                   f"{c.protocol} {numbers.number(c.file)} MB/s (file transfer at {numbers.share(c.ratio)} of raw)")
    if summary.failed:
        out.append(f"{summary.failed} reader transfer{'s' if summary.failed != 1 else ''} failed "
                   "(kept with the reason; left out of the per-reader figures)")
    return out


def _describe(lr, summary: TransferSummary) -> str:
    facts = (lr.run.provenance or {}).get("transfer") or {}
    versions = facts.get("versions") or {}
    parts = [f"Server {summary.server or '?'}"]
    if facts.get("server_address"):
        parts[0] += f" ({facts['server_address']})"
    if summary.file_size:
        parts.append(f"a {numbers.count(summary.file_size)}-byte file of random bytes"
                     + (f" on {facts['filesystem']}" if facts.get("filesystem") else ""))
    if summary.server_goodput:
        parts.append(f"server link goodput {numbers.number(summary.server_goodput)} MB/s (TCP payload through the shaped link)")
    if versions:
        parts.append(", ".join(f"{k} {v}" for k, v in versions.items()))
    if facts.get("where"):
        parts.append(str(facts["where"]))
    return ("; ".join(parts) + ". Each round, N readers on other nodes start at the same moment; file transfer is "
            "xrdcp from the server to the reader, its output read and discarded beside the reader (cache to "
            "/dev/null); raw TCP sends the same bytes from memory over a plain socket (network+protocol only). "
            "Per-reader throughput is bytes over the reader's own time from start to last byte; aggregate is "
            "every byte over the time from the first start to the last byte. Cold cache: the server's copy of "
            "the file was evicted from the page cache before the round; warm: read into it.")


def _table(summary: TransferSummary) -> Table:
    cols = [Column("Protocol", align="left"), Column("Cache", align="left"), Column("Readers"),
            Column("Per reader", "MB/s"), Column("Aggregate", "MB/s"), Column("Range", "MB/s"),
            Column("Ceiling", "MB/s"), Column("Of ceiling", "%"), Column("Fairness", "Jain"),
            Column("Start skew", "ms"), Column("Last byte", "s"), Column("Failed", "copies")]
    rows = []
    for r in summary.rows:
        skew = r.start_skew.median * 1e3 if r.start_skew.median is not None else None
        rng = f"{numbers.number(r.aggregate.low)} - {numbers.number(r.aggregate.high)}" if r.aggregate.n > 1 else "-"
        share = r.of_ceiling
        rows.append([
            r.protocol, r.cache, str(r.readers), numbers.number(r.per_reader.median), numbers.number(r.aggregate.median), rng,
            numbers.number(r.ceiling), Cell(numbers.fixed(share * 100, 0) if share is not None else "-", "warn" if share is not None and share < 0.9 else ""),
            numbers.fixed(r.fairness.median, 3) if r.fairness.median is not None else "-", numbers.number(skew),
            numbers.number(r.time_to_last_byte.median),
            Cell(f"{r.failed} of {r.transfers}", "warn") if r.failed else "0",
        ])
    return Table(cols, rows, caption="Medians over repetitions; range: lowest and highest aggregate")


def _figure(slug: str, title: str, data, fmt: str, caption: str):
    return Figure(slug, title, data, fmt, alt=title, caption=caption) if data else None


def run_section(lr, fmt: str):
    summary = summarize(lr.measurements, lr.run.provenance)
    if not summary.rows:
        return None
    section = Section(f"transfer-{lr.id}", f"File transfer: {lr.name}")
    section.add(Paragraph(_describe(lr, summary)), _table(summary), BulletList(findings(summary)))
    failures = [f"{r.label}, {_readers(r.readers)}, {f}" for r in summary.rows for f in r.failures]
    if failures:
        section.add(Notice("Failed reader copies (stored with the reason, left out of per-reader figures): "
                           + "; ".join(failures[:10]) + (f"; and {len(failures) - 10} more" if len(failures) > 10 else ""),
                           "warning"))
    section.add(
        _figure(f"transfer-{lr.id}-readers", "Throughput against readers", plots.throughput_vs_readers(summary, fmt), fmt,
                "Aggregate and per-reader throughput (medians; bars: range) as readers share the server's link; "
                "dotted: the server link's goodput and an equal share of it. Dashed: raw TCP."),
        _figure(f"transfer-{lr.id}-p2p", "Raw against file transfer", plots.raw_vs_file(summary, fmt), fmt,
                "Network+protocol only (raw TCP, hatched) beside file transfer cache to /dev/null (xrootd)"),
    )
    return section


def build_all(ctx):
    return [run_section(lr, ctx.plot_format) for lr in ctx.runs if lr.run.kind == "transfer"]
