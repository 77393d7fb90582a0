"""``fabricbench import``'s work: files into the results database, all of them or none.

Every file is checked (regular file, size limit, text) and digested, parsed while its
measurements are written in batches, and completed with what the user adds on the command
line (``--ranks``, ``--hosts``, ``--ppn``, tags). All files share one transaction: a file
that fails stops the import with one message naming it, and nothing of the other files is
stored. A file whose content digest matches an imported run (or another file of the same
import) is reported and skipped unless ``again`` is set.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fabricbench.importers import get_importer, parse_source, run_status, source_artifact
from fabricbench.importers.base import DEFAULT_MAX_BYTES, ImportFormatError, Source
from fabricbench.store.records import Measurement

BATCH = 5000


@dataclass
class ImportOptions:
    format: Optional[str] = None
    allow_truncated: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    again: bool = False
    label: Optional[str] = None
    tags: Dict[str, str] = field(default_factory=dict)
    ranks: Optional[int] = None  # what the files do not say, given by the user
    hosts: List[str] = field(default_factory=list)
    ppn: Optional[int] = None
    max_message_size: Optional[int] = None  # OSU's -m: tables that reach it are complete

    def given(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if self.ranks is not None:
            out["ranks"] = self.ranks
        if self.hosts:
            out["hosts"] = list(self.hosts)
        if self.ppn is not None:
            out["ppn"] = self.ppn
        return out

    def job_ranks(self) -> Optional[int]:
        """The rank count the user gave, or hosts x ppn when both are given (never guessed)."""
        if self.ranks is not None:
            return self.ranks
        if self.hosts and self.ppn:
            return len(self.hosts) * self.ppn
        return None


class _Batcher:
    """The sink a parse writes into: batches of measurements appended to one run."""

    def __init__(self, bulk, run_id: int, ranks: Optional[int]):
        self.bulk = bulk
        self.run_id = run_id
        self.ranks = ranks
        self.items: List[Measurement] = []
        self.filled = 0  # points that got the given rank count

    def __call__(self, m: Measurement) -> None:
        if self.ranks is not None and m.params.get("ranks") is None:
            m.params["ranks"] = self.ranks
            self.filled += 1
        self.items.append(m)
        if len(self.items) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.items:
            self.bulk.add(self.run_id, self.items)
            self.items = []

    def series(self, benchmark: str, base: Dict[str, Any], metric: str, unit: str, source: str,
               extra: Optional[Dict[str, Any]], rows: List[Tuple[int, float, int]]) -> None:
        """Rows of one table that differ only in size, value and line: stored without a Measurement
        each (the fast loop of a multi-million-row file). ``rows`` are (size, value, line number)."""
        if not rows:
            return
        self.flush()  # keep the file's order
        if self.ranks is not None and base.get("ranks") is None:
            base = {**base, "ranks": self.ranks}
            self.filled += len(rows)
        self.bulk.add_series(self.run_id, benchmark, base, metric, unit, source, extra, rows)


def import_files(store, paths: Sequence[str], options: Optional[ImportOptions] = None) -> List[Dict[str, Any]]:
    """Import files into ``store`` in one transaction; one result dict per file (see the CLI)."""
    from fabricbench.store.bulk import BulkWriter

    opts = options or ImportOptions()
    if opts.format is not None:
        get_importer(opts.format)  # an unknown format is a usage error before any file is read
    results: List[Dict[str, Any]] = []
    seen: Dict[str, str] = {}  # digest -> the file of this import that had it
    with BulkWriter(store) as bulk:
        for path in paths:
            source = Source.open(path, opts.max_bytes)
            earlier = bulk.runs_with_digest(source.sha256)
            twin = seen.get(source.sha256)
            if (earlier or twin) and not opts.again:
                where = f"{twin} in this import" if twin else f"run {', '.join(map(str, earlier))}"
                results.append({"file": path, "status": "duplicate", "run": earlier[-1] if earlier else None,
                                "message": f"same content as {where}; not stored again (use --again to store it anyway)"})
                continue
            seen[source.sha256] = path
            results.append(_import_one(bulk, source, opts))
    return results


def _import_one(bulk, source: Source, opts: ImportOptions) -> Dict[str, Any]:
    run = bulk.create_run(kind="import", label=opts.label, tags=opts.tags)
    batcher = _Batcher(bulk, run.id, opts.job_ranks())
    hints = {"max_message_size": opts.max_message_size} if opts.max_message_size is not None else None
    parsed = parse_source(source, format=opts.format, allow_truncated=opts.allow_truncated, sink=batcher, hints=hints)
    batcher.flush()
    status, message = run_status(parsed)
    ranks = parsed.ranks if parsed.ranks is not None else parsed.max_ranks
    if ranks is None:
        ranks = opts.job_ranks()
    provenance = parsed.provenance()
    given = opts.given()
    if given:
        provenance["import"]["given"] = given
        if opts.hosts and "hosts" not in provenance:
            provenance["hosts"] = list(opts.hosts)
        if opts.ppn is not None:
            provenance.setdefault("ppn", opts.ppn)
    bulk.set_outcome(run.id, status=status, message=message, ranks=ranks, command=parsed.command,
                    provenance=provenance, kind=parsed.kind)
    bulk.add_artifact(run.id, "source", source_artifact(parsed))
    for name, data in parsed.artifacts.items():
        bulk.add_artifact(run.id, name, data)
    return {
        "file": source.path,
        "format": parsed.format,
        "tool": parsed.tool,
        "tool_version": parsed.tool_version,
        "kind": parsed.kind,
        "run": run.id,
        "uuid": run.uuid,
        "status": status,
        "message": message,
        "measurements": parsed.count,
        "ranks": ranks,
        "benchmarks": parsed.benchmarks(),
        "unit_conversions": parsed.conversions,
        "warnings": parsed.warnings,
    }


__all__ = ["ImportOptions", "import_files", "ImportFormatError"]
