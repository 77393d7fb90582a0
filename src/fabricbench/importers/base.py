"""What every importer shares: reading a file, tracking lines, errors, units, the parsed run.

An importer turns one tool's output file into a ``ParsedRun``: measurements in the
project's vocabulary (benchmark names of the native engine where the benchmark is the
same, metrics ``latency``/``bandwidth``/... in decimal units) plus what the file says
about the run. Nothing here touches the database; ``importers.store`` does.

Inputs are bounded and streamed. ``Source.open`` refuses what is not a regular file
(a FIFO, a device, a directory) and anything larger than ``DEFAULT_MAX_BYTES`` (1 GiB;
``fabricbench import --max-size`` raises it), checks the bytes once (UTF-8 text, no NUL)
while computing the content digest, then hands the importer its lines one at a time
(none longer than ``MAX_LINE_BYTES``): memory stays flat in the size of the file. Formats
that must be read whole (JSON reports, HPCC's summary) are limited to
``WHOLE_TEXT_LIMIT``.

Errors in the input are ``ImportFormatError``: one line that names the file and, where
there is one, the line (``osu_bw.txt:14: expected 2 columns ...``).
"""
from __future__ import annotations

import codecs
import contextvars
import hashlib
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from fabricbench.errors import FabricbenchError
from fabricbench.store.records import Measurement
from fabricbench import numbers

# Unit factors to the project's units (bandwidth: decimal MB/s = 1e6 B/s).
MIB_PER_S = 1048576 / 1e6  # MiB/s -> MB/s
GB_PER_S = 1000.0  # GB/s (1e9 B/s) -> MB/s
GBIT_PER_S = 125.0  # Gb/s (1e9 bit/s) -> MB/s
BIT_PER_S = 1 / 8e6  # bit/s -> MB/s
MIBIT_PER_S = 1048576 / 8e6  # Mibit/s (2^20 bit/s) -> MB/s

DEFAULT_MAX_BYTES = 1 << 30
MAX_LINE_BYTES = 1 << 20
WHOLE_TEXT_LIMIT = 64 << 20
HEAD_BYTES = 64 << 10
INT64_MAX = 2 ** 63 - 1


def scale(value: float, factor: float) -> float:
    """value x factor, rounded to 12 significant digits so conversions do not print as 75721.90000000001."""
    return float(numbers.short(value * factor, 12))


SINK: "contextvars.ContextVar[Optional[Callable[[Measurement], None]]]" = contextvars.ContextVar("sink", default=None)
"""Where the points of the file being parsed go (set by ``importers.parse_source``); None keeps them in a list."""

HINTS: "contextvars.ContextVar[Dict[str, Any]]" = contextvars.ContextVar("hints", default={})
"""What the user said about the files being parsed (``max_message_size``: OSU's -m)."""

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


class Line(NamedTuple):
    no: int  # 1-based
    text: str


def _kind_of(mode: int) -> Optional[str]:
    """Why a file mode is not importable, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a results file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file; save the tool's output to a file and import that"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


class Source:
    """One input file: its name, size and digest, its first lines, and its lines on demand.

    Build one with ``Source.open(path)`` (a file, streamed) or ``Source.from_bytes`` (data
    already in memory, as the HPCC driver and the tests have it). Either way the bytes are
    checked once when the Source is made, so iterating its lines raises no decoding error.
    """

    def __init__(self, path: str, size: int, sha256: str, ends_with_newline: bool, head: bytes,
                 opener: Callable[[], Any]):
        self.path = path
        self.name = os.path.basename(path)
        self.size = size
        self.sha256 = sha256
        self.ends_with_newline = ends_with_newline
        self._open = opener
        self._text: Optional[str] = None
        whole = len(head) >= size
        text = head.decode("utf-8", errors="ignore")  # a character cut at HEAD_BYTES is dropped
        if text.startswith("\ufeff"):
            text = text[1:]
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if whole and ends_with_newline:
            lines.pop()
        elif not whole:
            lines.pop()  # probably cut at HEAD_BYTES
        self.head: List[str] = lines
        self.head_text = "\n".join(lines)

    # -- making one --------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> "Source":
        """Check and digest a file on disk (a single streaming pass); refuse what cannot be imported."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise ImportFormatError(path, None, "no such file") from None
        except OSError as exc:
            raise ImportFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None
        problem = _kind_of(st.st_mode)
        if problem:
            raise ImportFormatError(path, None, problem)
        if st.st_size > max_bytes:
            raise ImportFormatError(path, None, f"is {numbers.count(st.st_size)} bytes, over the import limit of {numbers.count(max_bytes)} "
                                                "bytes (raise it with --max-file-size)")
        try:
            # O_NONBLOCK: should the path have become a FIFO since the stat, open() must not wait for a writer.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise ImportFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            problem = _kind_of(os.fstat(fh.fileno()).st_mode)
            if problem:
                raise ImportFormatError(path, None, problem)
            size, digest, last, head = _check_stream(path, fh, max_bytes)

        def opener():
            try:
                return open(path, "rb")
            except OSError as exc:
                raise ImportFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None

        return cls(path, size, digest, last == b"\n", head, opener)

    read = open  # the name the HPCC driver uses

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> "Source":
        size, digest, last, head = _check_stream(path, io.BytesIO(data), None)
        return cls(path, size, digest, last == b"\n", head, lambda: io.BytesIO(data))

    # -- reading it --------------------------------------------------------------------

    def iter_lines(self) -> Iterator[Tuple[int, str, bool]]:
        """(line number, text without its line break, whether a line break ended it), streamed.

        Reads 1 MiB at a time and splits it (a readline per line costs more than the parse);
        a line longer than MAX_LINE_BYTES is an error, so memory stays bounded."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        no = 0
        carry = ""
        with self._open() as fh:
            while True:
                chunk = fh.read(MAX_LINE_BYTES)
                text = carry + decoder.decode(chunk, final=not chunk)
                if no == 0 and text.startswith("\ufeff"):
                    text = text[1:]
                if not chunk:
                    break
                held_cr = text.endswith("\r")  # a CR LF may be split between two reads
                if held_cr:
                    text = text[:-1]
                if "\r" in text:
                    text = text.replace("\r\n", "\n").replace("\r", "\n")
                lines = text.split("\n")
                carry = lines.pop() + ("\r" if held_cr else "")
                if len(text) > MAX_LINE_BYTES and lines and max(map(len, lines)) > MAX_LINE_BYTES:
                    long = next(i for i, t in enumerate(lines) if len(t) > MAX_LINE_BYTES)
                    raise self.error(no + long + 1, f"a line longer than {numbers.count(MAX_LINE_BYTES)} bytes: not a text results file")
                if len(carry) > MAX_LINE_BYTES:
                    raise self.error(no + len(lines) + 1, f"a line longer than {numbers.count(MAX_LINE_BYTES)} bytes: "
                                                          "not a text results file")
                for line in lines:
                    no += 1
                    yield no, line, True
        if text.endswith("\r"):
            yield no + 1, text[:-1], True
        elif text:
            yield no + 1, text, False

    @property
    def text(self) -> str:
        """The whole text, for formats that must be read at once (bounded by WHOLE_TEXT_LIMIT)."""
        if self._text is None:
            if self.size > WHOLE_TEXT_LIMIT:
                raise self.error(None, f"{numbers.count(self.size)} bytes is too large for a report read as a whole "
                                       f"(limit {numbers.count(WHOLE_TEXT_LIMIT)} bytes)")
            with self._open() as fh:
                text = fh.read().decode("utf-8")
            if text.startswith("\ufeff"):
                text = text[1:]
            self._text = text.replace("\r\n", "\n").replace("\r", "\n")
        return self._text

    def all_lines(self) -> List[str]:
        """Every line as a list (formats read whole, bounded like ``text``)."""
        lines = self.text.split("\n")
        if self.ends_with_newline or lines[-1] == "":
            lines.pop()
        return lines

    def error(self, line: Optional[int], message: str) -> ImportFormatError:
        return ImportFormatError(self.path, line, message)

    def truncated(self, line: Optional[int], message: str) -> TruncatedError:
        return TruncatedError(self.path, line, message)


def _check_stream(path: str, fh, max_bytes: Optional[int]) -> Tuple[int, str, bytes, bytes]:
    """One pass over the bytes: (size, sha256, last byte, first HEAD_BYTES), or an ImportFormatError.

    Refuses UTF-16 text, NUL bytes and invalid UTF-8, each with its line.
    """
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    size = 0
    lines_before = 0  # newlines before the current chunk
    head = b""
    last = b""
    visible = False
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        if size == 0 and chunk[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise ImportFormatError(path, 1, "UTF-16 text; convert it to UTF-8 first "
                                             "(iconv -f UTF-16 -t UTF-8 FILE > FILE.txt)")
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise ImportFormatError(path, None, f"grows past the import limit of {numbers.count(max_bytes)} bytes while being read")
        digest.update(chunk)
        if len(head) < HEAD_BYTES:
            head += chunk[:HEAD_BYTES - len(head)]
        nul = chunk.find(b"\x00")
        if nul >= 0:
            raise ImportFormatError(path, lines_before + chunk.count(b"\n", 0, nul) + 1,
                                    "binary data (a NUL byte) in a text results file")
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            line = lines_before + chunk.count(b"\n", 0, max(0, exc.start)) + 1
            raise ImportFormatError(path, line, "not valid UTF-8 text; the file is damaged or not a results file") from None
        lines_before += chunk.count(b"\n")
        if not visible and chunk.strip():
            visible = True
        last = chunk[-1:]
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ImportFormatError(path, lines_before + 1, "not valid UTF-8 text (the file ends inside a character)") from None
    if not visible:
        raise ImportFormatError(path, None, "the file is empty")
    return size, digest.hexdigest(), last, head


class LineReader:
    """Walks a source's lines as they are read, keeping line numbers; can step back one line.

    A tool ends every line it writes, so a last line without its line break was cut: it is
    an error, or with ``allow_truncated`` it is dropped and noted in ``truncated_note``.
    """

    def __init__(self, source: Source, allow_truncated: bool = False):
        self.source = source
        self.allow_truncated = allow_truncated
        self.truncated_note: Optional[str] = None
        self._lines = source.iter_lines()
        self._pushed: List[Line] = []
        self._last: Optional[Line] = None
        self.last_no = 0  # the number of the last line read (at the end: the file's line count)

    def __iter__(self) -> Iterator[Line]:
        while True:
            line = self.next()
            if line is None:
                return
            yield line

    def next(self) -> Optional[Line]:
        if self._pushed:
            self._last = self._pushed.pop()
            return self._last
        for no, text, ended in self._lines:
            self.last_no = no
            if not ended and text.strip():
                return self._cut_off(no)
            self._last = Line(no, text)
            return self._last
        return None

    def _cut_off(self, no: int) -> None:
        if not self.allow_truncated:
            raise self.source.truncated(no, "the last line has no end (the file looks cut off); "
                                            "use --allow-truncated to import what is complete")
        self.truncated_note = f"line {no} was cut off and was dropped"
        return None

    def texts(self) -> Iterator[Tuple[int, str]]:
        """(number, text) of the next lines without a Line each, for loops over millions of rows; ends
        where ``next`` would return None. A loop that meets a line it does not take gives it back
        with ``push`` (``back`` does not apply here)."""
        self._last = None
        while self._pushed:
            line = self._pushed.pop()
            yield line.no, line.text
        for no, text, ended in self._lines:
            self.last_no = no
            if not ended and text.strip():
                self._cut_off(no)
                return
            yield no, text

    def push(self, no: int, text: str) -> None:
        """Make this line (from ``texts``) the next one ``next`` or ``texts`` reads."""
        self._pushed.append(Line(no, text))

    def back(self) -> None:
        """Make the line just read the next one again."""
        if self._last is not None:
            self._pushed.append(self._last)
            self._last = None

    def peek(self) -> Optional[Line]:
        line = self.next()
        if line is not None:
            self.back()
        return line

    def at_end(self) -> bool:
        return self.peek() is None

    def error(self, line: Optional[int], message: str) -> ImportFormatError:
        return self.source.error(line, message)


@dataclass
class ParsedRun:
    """One file's results in the project's vocabulary, ready for the store.

    Measurements go to ``sink`` as they are parsed when one is given (the streaming
    import), else they are kept in ``measurements``. ``count``, ``benchmarks()`` and
    ``max_ranks`` are kept either way.
    """

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
    kind: str = "import"  # the stored run's kind (mpiP reports are runs of kind "profile")
    artifacts: Dict[str, Any] = field(default_factory=dict)  # extra artifacts (an imported profile)
    extra_provenance: Dict[str, Any] = field(default_factory=dict)
    sink: Optional[Callable[[Measurement], None]] = field(default=None, repr=False)
    reader: Optional[LineReader] = field(default=None, repr=False)
    count: int = 0
    max_ranks: Optional[int] = None
    _benchmarks: Set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if self.sink is None:
            self.sink = SINK.get()

    @property
    def path(self) -> str:
        return self.source.path

    def emit(self, m: Measurement) -> None:
        self.count += 1
        self._benchmarks.add(m.benchmark)
        ranks = m.params.get("ranks")
        if isinstance(ranks, int) and (self.max_ranks is None or ranks > self.max_ranks):
            self.max_ranks = ranks
        if self.sink is not None:
            self.sink(m)
        else:
            self.measurements.append(m)

    def note_points(self, benchmark: str, count: int, ranks: Optional[int]) -> None:
        """What ``emit`` keeps, for points an importer handed to the sink itself (a fast loop)."""
        if count:
            self.count += count
            self._benchmarks.add(benchmark)
            if isinstance(ranks, int) and (self.max_ranks is None or ranks > self.max_ranks):
                self.max_ranks = ranks

    def benchmarks(self) -> List[str]:
        return sorted(self._benchmarks)

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
        prov.update(self.extra_provenance)
        return prov


class PointFactory:
    """Builds measurements that carry their source line and any unit conversion, and checks
    that every number fits the database (sizes and counts are 64-bit integers, values finite)."""

    def __init__(self, parsed: ParsedRun):
        self.parsed = parsed
        self.name = parsed.source.name
        self.source = parsed.source

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
        for key, v in params.items():
            if isinstance(v, int) and not isinstance(v, bool) and not -INT64_MAX <= v <= INT64_MAX:
                raise self.source.error(line, f"{key} {v} is outside the range the database can store "
                                              "(64-bit integers)")
        for key in ("n", "iterations"):
            v = stats.get(key)
            if v is not None and not 0 <= v <= INT64_MAX:
                raise self.source.error(line, f"{key} {v} is outside the range the database can store")
        if value is None or not math.isfinite(value):
            raise self.source.error(line, f"{benchmark} {metric}: {value!r} is not a finite number")
        info: Dict[str, Any] = {}
        if line:
            info["source"] = f"{self.name}:{line}"
        if converted_from:
            info["converted_from"] = converted_from
        if detail:
            info.update(detail)
        m = Measurement(benchmark=benchmark, params=params, metric=metric, unit=unit, value=value, detail=info or None, **stats)
        self.parsed.emit(m)
        return m


    def checked(self, benchmark: str, params: Dict[str, Any], metric: str, unit: str, value: float, line: int,
                detail: Optional[Dict[str, Any]]) -> None:
        """A point whose numbers the caller has already checked (a table row read on the fast path)."""
        info = {"source": f"{self.name}:{line}"}
        if detail:
            info.update(detail)
        self.parsed.emit(Measurement(benchmark, params, metric, unit, value, None, None, None, None, value, None,
                                     None, None, info))


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
    if len(tok) > 19 and int(tok) > INT64_MAX:
        raise source.error(line, f"{what}: {tok} is outside the range the database can store (64-bit integers)")
    value = int(tok)
    if value < minimum:
        raise source.error(line, f"{what}: {value} is below {minimum}")
    if value > INT64_MAX:
        raise source.error(line, f"{what}: {tok} is outside the range the database can store (64-bit integers)")
    return value


def json_number(source: Source, line: Optional[int], value: Any, what: str, minimum: Optional[float] = 0.0) -> float:
    """A finite number from a decoded JSON value (numbers only; strings like "nan" are errors)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise source.error(line, f"{what}: expected a number, found {value!r}")
    if isinstance(value, int) and abs(value) > 1e300:
        raise source.error(line, f"{what}: {value} is outside the range the database can store")
    return finite(source, line, repr(float(value)), what, minimum)


def load_json(source: Source, report: str) -> Any:
    """A JSON report decoded whole; a cut report is a TruncatedError, other damage an ImportFormatError."""
    import json

    text = source.text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) - 1:
            raise source.truncated(exc.lineno, f"the {report} ends early ({exc.msg}); the run did not finish "
                                               "or the file was cut") from None
        raise source.error(exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise source.error(None, "the JSON nests too deeply to be a results report") from None


def require_increasing(source: Source, line: int, previous: Optional[int], size: int, table: str) -> None:
    """Tools print message sizes in increasing order; a repeat or step back means a damaged table."""
    if previous is not None and size <= previous:
        raise source.error(line, f"{table}: message size {size} after {previous} (sizes must increase; "
                                 "a line is repeated, out of order or damaged)")


def first_match(table: Sequence[tuple], text: str) -> Tuple[Optional[tuple], Optional["re.Match"]]:
    """The first row of `table` (rows led by a compiled pattern) whose pattern matches the start of `text`,
    with its match; (None, None) when none does."""
    for row in table:
        m = row[0].match(text)
        if m:
            return row, m
    return None, None


def split_columns(text: str) -> List[str]:
    """Column labels of a header printed with padding: separated by two or more spaces or tabs."""
    return [c for c in re.split(r"\s{2,}|\t+", text.strip()) if c]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def begin_text_parse(source: "Source", fmt: str, tool: str, allow_truncated: bool = False):
    """A text importer's start: a line reader, the run being parsed and the factory for its points.

    A cut-off last line the reader drops (``allow_truncated``) marks the run incomplete when
    the parse ends (``importers.parse_source`` looks at ``parsed.reader``)."""
    reader = LineReader(source, allow_truncated)
    parsed = ParsedRun(format=fmt, source=source, tool=tool, reader=reader)
    return reader, parsed, PointFactory(parsed)
