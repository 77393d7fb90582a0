"""What every importer shares: reading a file, tracking lines, errors, units, the parsed run.

An importer turns one tool's output file into a ``ParsedRun``: measurements in the
project's vocabulary (benchmark names of the native engine where the benchmark is the
same, metrics ``latency``/``bandwidth``/... in decimal units) plus what the file says
about the run. Nothing here touches the database; ``importers.store_parsed`` does.

Errors in the input are ``ImportFormatError``: one line that names the file and, where
there is one, the line (``osu_bw.txt:14: expected 2 columns ...``).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence

from fabricbench.errors import FabricbenchError
from fabricbench.store.records import Measurement

# Unit factors to the project's units (bandwidth: decimal MB/s = 1e6 B/s).
MIB_PER_S = 1048576 / 1e6  # MiB/s -> MB/s
GB_PER_S = 1000.0  # GB/s (1e9 B/s) -> MB/s
GBIT_PER_S = 125.0  # Gb/s (1e9 bit/s) -> MB/s
BIT_PER_S = 1 / 8e6  # bit/s -> MB/s

def scale(value: float, factor: float) -> float:
    """value x factor, rounded to 12 significant digits so conversions do not print as 75721.90000000001."""
    return float(f"{value * factor:.12g}")


NOISE = re.compile(r"^\s*(\[[^\]]*\]|srun:|slurmstepd:)")
"""Launcher chatter that may be interleaved with any tool's output (``[host:pid] ...``, ``srun: ...``)."""


class ImportFormatError(FabricbenchError):
    """A file is not what its format says: missing, unreadable, truncated, malformed.

    ``internal`` marks errors that come from a bug in an importer rather than from the
    input (an unexpected exception turned into a message so the user sees no traceback).
    """

    def __init__(self, path: str, line: Optional[int], message: str, internal: bool = False):
        self.path = path
        self.line = line
        self.internal = internal
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


class TruncatedError(ImportFormatError):
    """The file ends before the tool's output does (a killed run, a cut copy)."""


@dataclass
class Line:
    no: int  # 1-based
    text: str


class Source:
    """One input file: its text, split in lines, with the facts an importer needs."""

    def __init__(self, path: str, text: str, data: bytes):
        self.path = path
        self.name = os.path.basename(path)
        self.text = text
        self.size = len(data)
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.lines: List[str] = text.split("\n")
        self.ends_with_newline = text.endswith("\n")
        if self.ends_with_newline:
            self.lines.pop()  # the empty string after the final newline is not a line

    @classmethod
    def read(cls, path: str) -> "Source":
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise ImportFormatError(path, None, "no such file") from None
        except IsADirectoryError:
            raise ImportFormatError(path, None, "is a directory, not a results file") from None
        except OSError as exc:
            raise ImportFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None
        return cls.from_bytes(path, data)

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> "Source":
        if not data.strip():
            raise ImportFormatError(path, None, "the file is empty")
        nul = data.find(b"\x00")
        if nul >= 0:
            raise ImportFormatError(path, data.count(b"\n", 0, nul) + 1, "binary data (a NUL byte) in a text results file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ImportFormatError(
                path, line, f"not valid UTF-8 text (byte 0x{data[exc.start]:02x}); the file is damaged or not a results file"
            ) from None
        if text.startswith("\ufeff"):
            text = text[1:]
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        return cls(path, text, data)

    def error(self, line: Optional[int], message: str) -> ImportFormatError:
        return ImportFormatError(self.path, line, message)

    def truncated(self, line: Optional[int], message: str) -> TruncatedError:
        return TruncatedError(self.path, line, message)


class LineReader:
    """Walks a source's lines, keeping the line number for errors; can step back."""

    def __init__(self, source: Source, allow_truncated: bool = False):
        self.source = source
        self.lines = list(source.lines)
        self.truncated_note: Optional[str] = None
        self.pos = 0
        # A tool ends every line it writes; a last line without its newline was cut.
        if self.lines and not source.ends_with_newline and self.lines[-1].strip():
            n = len(self.lines)
            if not allow_truncated:
                raise source.truncated(n, "the last line has no end (the file looks cut off); "
                                          "use --allow-truncated to import what is complete")
            self.truncated_note = f"line {n} was cut off and was dropped"
            self.lines.pop()

    def __iter__(self) -> Iterator[Line]:
        while self.pos < len(self.lines):
            yield self.next()

    def at_end(self) -> bool:
        return self.pos >= len(self.lines)

    def next(self) -> Line:
        line = Line(self.pos + 1, self.lines[self.pos])
        self.pos += 1
        return line

    def peek(self) -> Optional[Line]:
        return None if self.at_end() else Line(self.pos + 1, self.lines[self.pos])

    def back(self) -> None:
        self.pos -= 1

    @property
    def last_no(self) -> int:
        return max(1, len(self.lines))

    def error(self, line: Optional[int], message: str) -> ImportFormatError:
        return self.source.error(line, message)


@dataclass
class ParsedRun:
    """One file's results in the project's vocabulary, ready for ``Store.save_run``."""

    format: str
    source: Source
    tool: str
    measurements: List[Measurement] = field(default_factory=list)
    tool_version: Optional[str] = None
    command: Optional[str] = None
    ranks: Optional[int] = None
    hosts: List[str] = field(default_factory=list)
    facts: Dict[str, Any] = field(default_factory=dict)  # what the file says about the run
    conversions: Dict[str, str] = field(default_factory=dict)  # unit -> how it was converted
    warnings: List[str] = field(default_factory=list)
    complete: bool = True
    incomplete_reason: Optional[str] = None

    @property
    def path(self) -> str:
        return self.source.path

    def benchmarks(self) -> List[str]:
        return sorted({m.benchmark for m in self.measurements})

    def mark_incomplete(self, reason: str) -> None:
        self.complete = False
        self.incomplete_reason = reason if not self.incomplete_reason else f"{self.incomplete_reason}; {reason}"

    def provenance(self) -> Dict[str, Any]:
        from fabricbench import __version__

        prov: Dict[str, Any] = {
            "import": {
                "format": self.format,
                "file": os.path.abspath(self.source.path),
                "name": self.source.name,
                "bytes": self.source.size,
                "sha256": self.source.sha256,
                "tool": self.tool,
                "tool_version": self.tool_version,
                "fabricbench": __version__,
                "unit_conversions": dict(self.conversions),
                "complete": self.complete,
            },
        }
        if self.incomplete_reason:
            prov["import"]["incomplete"] = self.incomplete_reason
        if self.warnings:
            prov["import"]["warnings"] = list(self.warnings)
        if self.hosts:
            prov["hosts"] = list(self.hosts)
        if self.facts:
            prov[self.format] = self.facts
        return prov


class PointFactory:
    """Builds measurements that carry their source line and any unit conversion."""

    def __init__(self, parsed: ParsedRun):
        self.parsed = parsed
        self.name = parsed.source.name

    def __call__(
        self,
        benchmark: str,
        params: Dict[str, Any],
        metric: str,
        unit: str,
        value: float,
        line: Optional[int],
        converted_from: Optional[str] = None,
        detail: Optional[Dict[str, Any]] = None,
        **stats: Any,
    ) -> Measurement:
        info: Dict[str, Any] = {}
        if line:
            info["source"] = f"{self.name}:{line}"
        if converted_from:
            info["converted_from"] = converted_from
        if detail:
            info.update(detail)
        m = Measurement(benchmark=benchmark, params=params, metric=metric, unit=unit, value=value, detail=info or None, **stats)
        self.parsed.measurements.append(m)
        return m


def finite(source: Source, line: Optional[int], token: str, what: str, minimum: Optional[float] = 0.0) -> float:
    """A finite number from a token, or an error naming the line and what was expected."""
    try:
        value = float(token)
    except (TypeError, ValueError):
        raise source.error(line, f"{what}: expected a number, found {token!r}") from None
    if not math.isfinite(value):
        raise source.error(line, f"{what}: {token!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise source.error(line, f"{what}: {token!r} is negative")
    return value


def integer(source: Source, line: Optional[int], token: str, what: str, minimum: int = 0) -> int:
    """A non-negative integer from a token (``1024``), or an error naming the line."""
    tok = str(token).strip()
    if not re.fullmatch(r"[+]?\d+", tok):
        raise source.error(line, f"{what}: expected a whole number, found {token!r}")
    value = int(tok)
    if value < minimum:
        raise source.error(line, f"{what}: {value} is below {minimum}")
    if value > 2**62:
        raise source.error(line, f"{what}: {value} is implausibly large")
    return value


def json_number(source: Source, line: Optional[int], value: Any, what: str, minimum: Optional[float] = 0.0) -> float:
    """A finite number from a decoded JSON value (numbers only; strings like "nan" are errors)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise source.error(line, f"{what}: expected a number, found {value!r}")
    return finite(source, line, repr(float(value)), what, minimum)


def require_increasing(source: Source, line: int, previous: Optional[int], size: int, table: str) -> None:
    """Tools print message sizes in increasing order; a repeat or step back means a damaged table."""
    if previous is not None and size <= previous:
        raise source.error(line, f"{table}: message size {size} after {previous} (sizes must increase; "
                                 "a line is repeated, out of order or damaged)")


def split_columns(text: str) -> List[str]:
    """Column labels of a header printed with padding: separated by two or more spaces or tabs."""
    return [c for c in re.split(r"\s{2,}|\t+", text.strip()) if c]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def first_match(lines: Sequence[str], pattern: "re.Pattern[str]", limit: int = 400) -> Optional["re.Match[str]"]:
    for text in lines[:limit]:
        m = pattern.search(text)
        if m:
            return m
    return None


def begin_text_parse(source: "Source", fmt: str, tool: str, allow_truncated: bool = False):
    """A text importer's start: a line reader, the run being parsed (marked incomplete when
    the file was cut off and that is allowed) and the factory for its points."""
    reader = LineReader(source, allow_truncated)
    parsed = ParsedRun(format=fmt, source=source, tool=tool)
    if reader.truncated_note:
        parsed.mark_incomplete(reader.truncated_note)
    return reader, parsed, PointFactory(parsed)
