"""Importers: other tools' output files (OSU, IMB, HPCC, perftest, mpiGraph, NCCL-tests,
iperf3, NetPIPE, mpiP), and the engine's own JSON Lines made outside ``fabricbench run`` (a
batch job), as runs in the results database, in the project's vocabulary and units.

    parsed = import_file("osu_latency.txt")            # format detected from content
    run = store_parsed(store, parsed, tags={"fabric": "edr"})
    results = import_files(store, paths, ImportOptions(tags={"fabric": "edr"}))  # the CLI's path

One module per format; each exposes ``FORMAT``, an ``Importer`` with a ``detect`` function
(how sure it is, 0-100, that a file is its format, from its first lines) and a ``parse``
function (``Source`` -> ``ParsedRun``). ``import_file`` keeps the measurements in a list
(the API and the tests); ``import_files`` (module ``ingest``) streams them into the
database in one transaction for all files, so a broken file leaves nothing stored.

Canonical benchmark names (what comparisons match on): the native engine's names where the
measurement is the same (``latency``, ``bw``, ``bibw``, ``mbw_mr``, ``multi_lat``,
``barrier``, ``bcast``, ``allreduce``, ...), else the short name of the tool's own program
or test in lower case: OSU's program names without ``osu_`` (``put_latency``, ``get_bw``,
``iallreduce``, ``ibarrier``, ``latency_mt``), IMB's benchmark names (``pingping``,
``sendrecv``, ``uniband``; PingPong is ``latency``, its collectives the engine's names),
perftest's programs (``ib_write_bw``), ``nccl.<collective>``, ``iperf3``, ``allpairs``
(mpiGraph), ``hpcc`` and ``mpi_profile`` (mpiP).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from fabricbench.importers.base import (
    DEFAULT_MAX_BYTES,
    HINTS,
    SINK,
    ImportFormatError,
    LineReader,
    ParsedRun,
    Source,
    TruncatedError,
)
from fabricbench.registry import Registry, one

MODULES = ("osu", "imb", "hpcc", "perftest", "mpigraph", "nccl", "iperf3", "netpipe", "mpip", "scaling_csv",
           "engine")
MAX_ARTIFACT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Importer:
    name: str
    title: str
    detect: Callable[[Source], int]
    parse: Callable[[Source, bool], ParsedRun]  # (source, allow_truncated)


IMPORTERS: Registry[Importer] = Registry("import format", "fabricbench.importers", modules=MODULES, collect=one("FORMAT"))


def _load() -> Dict[str, Importer]:
    return IMPORTERS.load()


def format_names() -> List[str]:
    return IMPORTERS.names()


def get_importer(name: str) -> Importer:
    return IMPORTERS.get(name)


def detect_format(source: Source) -> str:
    """The format whose detector is surest about this file's first lines."""
    scores = sorted(((imp.detect(source), imp.name) for imp in _load().values()), reverse=True)
    best, name = scores[0]
    if best <= 0:
        raise ImportFormatError(
            source.path, None,
            f"cannot tell which tool wrote this file; give --format ({', '.join(format_names())})",
        )
    return name


def parse_source(source: Source, format: Optional[str] = None, allow_truncated: bool = False,
                 sink: Optional[Callable] = None, hints: Optional[Dict[str, object]] = None) -> ParsedRun:
    """Parse a source with its (detected) importer; measurements go to ``sink`` or a list.

    ``hints`` are what the user knows that the file does not say (``max_message_size``)."""
    name = format or detect_format(source)
    importer = get_importer(name)
    token = HINTS.set(dict(hints or {}))
    try:
        parsed = _parse(importer, source, allow_truncated, sink)
    except ImportFormatError:
        raise
    except RecursionError:
        raise ImportFormatError(source.path, None, f"nests too deeply to be {importer.title}") from None
    except Exception as exc:  # a bug in an importer: still one line, never a traceback
        raise ImportFormatError(
            source.path, None, f"could not be read as {name} output ({type(exc).__name__}: {exc}); "
            "this is a fabricbench bug, please report it with the file", internal=True,
        ) from exc
    finally:
        HINTS.reset(token)
    if parsed.reader is not None and parsed.reader.truncated_note:
        parsed.mark_incomplete(parsed.reader.truncated_note)
    if parsed.count == 0:
        raise ImportFormatError(source.path, None, f"no results found in this {importer.title}")
    return parsed


def _parse(importer: Importer, source: Source, allow_truncated: bool, sink: Optional[Callable]) -> ParsedRun:
    token = SINK.set(sink)  # every ParsedRun made during this parse sends its points to the sink
    try:
        return importer.parse(source, allow_truncated)
    finally:
        SINK.reset(token)


def import_file(path: str, format: Optional[str] = None, allow_truncated: bool = False,
                max_bytes: int = DEFAULT_MAX_BYTES, hints: Optional[Dict[str, object]] = None) -> ParsedRun:
    """Read and parse one results file (format detected from its content unless given)."""
    if format is not None:
        get_importer(format)  # an unknown format is a usage error before the file is read
    return parse_source(Source.open(path, max_bytes), format=format, allow_truncated=allow_truncated, hints=hints)


def source_artifact(parsed: ParsedRun) -> Dict[str, object]:
    """The ``source`` artifact of an imported run: the file's text when it is small enough."""
    source = parsed.source
    artifact: Dict[str, object] = {"name": source.name, "format": parsed.format, "sha256": source.sha256}
    if source.size <= MAX_ARTIFACT_BYTES:
        artifact["text"] = source.text
    else:
        artifact.update(text=None, note=f"not kept: {source.size} bytes is over {MAX_ARTIFACT_BYTES}")
    return artifact


def run_status(parsed: ParsedRun):
    """(status, message) of the run a parsed file becomes."""
    if parsed.complete:
        return "complete", None
    return "interrupted", f"imported from a file that ends early: {parsed.incomplete_reason}"


def store_parsed(store, parsed: ParsedRun, label: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 kind: Optional[str] = None):
    """Write a parsed file (measurements in a list) as one run, all of it or nothing; returns the ``Run``."""
    from fabricbench.store.bulk import BulkWriter

    status, message = run_status(parsed)
    ranks = parsed.ranks if parsed.ranks is not None else parsed.max_ranks
    with BulkWriter(store) as bulk:
        run = bulk.create_run(kind=kind or parsed.kind, label=label, tags=tags, command=parsed.command,
                              provenance=parsed.provenance(), ranks=ranks)
        bulk.add(run.id, parsed.measurements)
        bulk.add_artifact(run.id, "source", source_artifact(parsed))
        for name, data in parsed.artifacts.items():
            bulk.add_artifact(run.id, name, data)
        bulk.set_outcome(run.id, status=status, message=message)
    return store.get_run(run.id)


def import_files(store, paths, options=None):
    """Import several files in one transaction (see ``importers.ingest``)."""
    from fabricbench.importers.ingest import import_files as _import_files

    return _import_files(store, paths, options)


__all__ = [
    "Importer", "ImportFormatError", "TruncatedError", "ParsedRun", "Source", "LineReader",
    "format_names", "get_importer", "detect_format", "parse_source", "import_file", "store_parsed",
    "import_files", "source_artifact", "run_status", "MODULES", "DEFAULT_MAX_BYTES",
]
