"""Importers: other tools' output files (OSU, IMB, HPCC, perftest, mpiGraph, NCCL-tests, iperf3)
as runs in the results database, in the project's vocabulary and units.

    parsed = import_file("osu_latency.txt")            # format detected from content
    run = store_parsed(store, parsed, tags={"fabric": "edr"})

One module per format; each exposes ``FORMAT``, an ``Importer`` with a ``detect``
function (how sure it is, 0-100, that a file is its format) and a ``parse`` function
(``Source`` -> ``ParsedRun``). Parsing reads the whole file before anything is
written, and ``store_parsed`` writes a run in one transaction: a broken file gives
one ``ImportFormatError`` naming the file and line, and the database is unchanged.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from fabricbench.importers.base import ImportFormatError, LineReader, ParsedRun, Source, TruncatedError

MODULES = ("osu", "imb", "hpcc", "perftest", "mpigraph", "nccl", "iperf3")
MAX_ARTIFACT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Importer:
    name: str
    title: str
    detect: Callable[[Source], int]
    parse: Callable[[Source, bool], ParsedRun]  # (source, allow_truncated)


_REGISTRY: Dict[str, Importer] = {}


def _load() -> Dict[str, Importer]:
    if not _REGISTRY:
        for name in MODULES:
            module = importlib.import_module(f"fabricbench.importers.{name}")
            _REGISTRY[module.FORMAT.name] = module.FORMAT
    return _REGISTRY


def format_names() -> List[str]:
    return list(_load())


def get_importer(name: str) -> Importer:
    registry = _load()
    try:
        return registry[name]
    except KeyError:
        from fabricbench.errors import UsageError

        raise UsageError(f"unknown import format '{name}'; choose one of: {', '.join(registry)}") from None


def detect_format(source: Source) -> str:
    """The format whose detector is surest about this file's content."""
    scores = sorted(((imp.detect(source), imp.name) for imp in _load().values()), reverse=True)
    best, name = scores[0]
    if best <= 0:
        raise ImportFormatError(
            source.path, None,
            f"cannot tell which tool wrote this file; give --format ({', '.join(format_names())})",
        )
    return name


def parse_source(source: Source, format: Optional[str] = None, allow_truncated: bool = False) -> ParsedRun:
    name = format or detect_format(source)
    importer = get_importer(name)
    try:
        parsed = importer.parse(source, allow_truncated)
    except ImportFormatError:
        raise
    except Exception as exc:  # a bug in an importer: still one line, never a traceback
        raise ImportFormatError(
            source.path, None, f"could not be read as {name} output ({type(exc).__name__}: {exc}); "
            "this is a fabricbench bug, please report it with the file", internal=True,
        ) from exc
    if not parsed.measurements:
        raise ImportFormatError(source.path, None, f"no results found in this {importer.title}")
    return parsed


def import_file(path: str, format: Optional[str] = None, allow_truncated: bool = False) -> ParsedRun:
    """Read and parse one results file (format detected from its content unless given)."""
    if format is not None:
        get_importer(format)  # an unknown format is a usage error before the file is read
    return parse_source(Source.read(path), format=format, allow_truncated=allow_truncated)


def store_parsed(store, parsed: ParsedRun, label: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 kind: str = "import"):
    """Write a parsed file as one run (all of it or nothing); returns the stored ``Run``."""
    source = parsed.source
    if source.size <= MAX_ARTIFACT_BYTES:
        artifact = {"name": source.name, "format": parsed.format, "sha256": source.sha256, "text": source.text}
    else:
        artifact = {"name": source.name, "format": parsed.format, "sha256": source.sha256,
                    "text": None, "note": f"not kept: {source.size} bytes is over {MAX_ARTIFACT_BYTES}"}
    ranks = parsed.ranks
    if ranks is None:
        known = [m.params.get("ranks") for m in parsed.measurements if isinstance(m.params.get("ranks"), int)]
        ranks = max(known) if known else None
    return store.save_run(
        parsed.measurements,
        kind=kind,
        label=label,
        tags=tags,
        command=parsed.command,
        provenance=parsed.provenance(),
        ranks=ranks,
        artifacts={"source": artifact},
        status="complete" if parsed.complete else "interrupted",
        message=None if parsed.complete else f"imported from a file that ends early: {parsed.incomplete_reason}",
    )


__all__ = [
    "Importer", "ImportFormatError", "TruncatedError", "ParsedRun", "Source", "LineReader",
    "format_names", "get_importer", "detect_format", "parse_source", "import_file", "store_parsed",
]
