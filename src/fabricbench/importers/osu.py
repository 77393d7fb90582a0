"""OSU Micro-Benchmarks text output (OMB 5.x to 7.x): every table layout the programs print.

A file holds one or more tables, each opened by a title line (``# OSU MPI Latency Test
v7.3``). What follows depends on the program and version:

* a column header (``# Size  Latency (us)``, ``# Size  Bandwidth (MB/s)``, ``# Size  MB/s
  Messages/s``, collectives ``# Size  Avg Latency(us)`` and with ``-f`` min/max/iterations;
  osu_barrier and osu_ibarrier have no size column), then one line per message size;
* ``# Datatype: MPI_CHAR.`` lines (OMB 7): before or after the header depending on the
  version; with ``-T all`` one block per datatype, each after its own header again (the
  second one says ``Avg Latency(us)`` where the first said ``Latency (us)``). A datatype
  other than the program's default (MPI_FLOAT for reductions, MPI_CHAR otherwise, as the
  engine uses) becomes the ``datatype`` parameter;
* osu_mbw_mr 7.2 prints its title twice, then an empty header line;
* osu_mbw_mr ``-V``: a matrix of bandwidths per window size (``#  1  2  4 ...`` over the
  columns, one row per size) and a second one after ``# Message Rate Profile``;
* one-sided programs: ``# Window creation: MPI_Win_allocate`` and ``# Synchronization:
  MPI_Win_flush`` lines, kept as the ``win`` and ``sync`` parameters (OSU's -w and -s
  values);
* non-blocking collectives: ``Overall(us)``, ``Compute(us)``, ``Pure Comm.(us)``,
  ``Overlap(%)`` and with ``-f`` more columns, kept in each point's detail; Overall is the
  ``latency`` point, Pure Comm. and Overlap also become ``pure_comm`` (us) and ``overlap`` (%)
  points, as the engine's iallreduce, ibcast, ... record them;
* osu_init: one line ``nprocs: 4, min: 260 ms, max: 276 ms, avg: 270 ms``.

Benchmark names are the OSU program's name without ``osu_`` (``put_latency``, ``get_bw``,
``iallreduce``, ``ibarrier``, ``latency_persistent``), which equal the native engine's names
where the engine has the same benchmark (``latency``, ``bw``, ``bibw``, ``mbw_mr``,
``multi_lat``, ``allreduce``, ``bcast``, ...). OSU's MB/s is decimal, so nothing is converted.

OSU prints no end marker, so a run that was killed is recognised by a table that stops
below the program's default largest message size (4 MiB point-to-point, 1 MiB collectives
and multi_lat): the run is stored ``interrupted`` with a note. A run made with ``-m`` stops
there too; ``fabricbench import --max-message-size`` says what the run was asked for.
"""
from __future__ import annotations

import itertools
import math
import re
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.importers import Importer
from fabricbench.importers import base as b

TITLE = re.compile(r"^#\s*OSU\s+(?P<title>.*?)(?:\s+v(?P<version>\d[\w.\-]*))?\s*$")
PAIRS = re.compile(r"pairs:\s*(\d+)", re.I)
WINDOW = re.compile(r"window size:\s*(\d+|varied)", re.I)
DATATYPE = re.compile(r"^#\s*Datatype:\s*(\S+?)\.?\s*$")
# The one-sided tests' setting lines: (pattern, parameter, the MPI call named -> the parameter's value).
WINDOW_SETTINGS = (
    (re.compile(r"^#\s*Window creation:\s*(\S+)"), "win",
     {"MPI_Win_create": "create", "MPI_Win_allocate": "allocate", "MPI_Win_create_dynamic": "dynamic"}),
    (re.compile(r"^#\s*Synchronization:\s*(\S+)"), "sync",
     {"MPI_Win_lock/unlock": "lock", "MPI_Win_post/start/complete/wait": "pscw", "MPI_Win_fence": "fence",
      "MPI_Win_flush": "flush", "MPI_Win_flush_local": "flush_local", "MPI_Win_lock_all/unlock_all": "lock_all"}),
)
INIT = re.compile(r"^nprocs:\s*(?P<n>\d+),\s*min:\s*(?P<min>\S+)\s*ms,\s*max:\s*(?P<max>\S+)\s*ms,\s*avg:\s*(?P<avg>\S+)\s*ms\s*$")
HELLO = re.compile(r"^This is a test with (\d+) processes")
MATRIX_HEADER = re.compile(r"^#\s+\d+(\s+\d+)+\s*$")

ONE_SIDED = {"put": "put", "get": "get", "accumulate": "acc", "get_accumulate": "get_acc", "fetch_and_op": "fop",
             "compare_and_swap": "cas"}
# The measured operation of a title (lower case, "OSU MPI", "Test", "Non-blocking" and
# "Persistent" removed) -> the OSU program name without osu_.
CORE = {
    "latency": "latency", "bandwidth": "bw", "bi-directional bandwidth": "bibw",
    "multiple bandwidth / message rate": "mbw_mr", "multi latency": "multi_lat",
    "multi-threaded latency": "latency_mt", "multi-process latency": "latency_mp",
    "init": "init", "hello world": "hello",
    "barrier": "barrier", "broadcast": "bcast", "bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
    "allgather": "allgather", "allgatherv": "allgatherv", "gather": "gather", "gatherv": "gatherv",
    "scatter": "scatter", "scatterv": "scatterv", "all-to-all personalized exchange": "alltoall",
    "all-to-all": "alltoall", "alltoall": "alltoall", "all-to-allv personalized exchange": "alltoallv",
    "all-to-allv": "alltoallv", "alltoallv": "alltoallv", "all-to-allw": "alltoallw", "alltoallw": "alltoallw",
    "reduce_scatter": "reduce_scatter", "reduce-scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter_block", "reduce-scatter-block": "reduce_scatter_block",
    "scan": "scan", "exscan": "exscan",
}
for _coll in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"):
    CORE[f"neighbor {_coll}"] = f"neighbor_{_coll}"
TWO_RANKS = {"latency", "bw", "bibw", "latency_mt", "latency_mp"}  # these programs need exactly two processes
NO_SIZE_CHECK = {"fop_latency", "cas_latency", "init", "hello", "barrier", "ibarrier"}
MIB = 1 << 20


def benchmark_name(title: str) -> Tuple[str, Optional[str]]:
    """(benchmark, accelerator) from an OSU title such as ``MPI-CUDA Bi-Directional Bandwidth Test``."""
    accel = None
    op = None
    m = re.match(r"^MPI(?:_(?P<op>[A-Za-z_]+?))?(?:-(?P<accel>[A-Za-z]+(?: MANAGED)?))?\s+(?P<rest>.*)$", title)
    rest = title
    if m:
        accel, rest = m.group("accel"), m.group("rest")
        op = (m.group("op") or "").lower() or None
    key = re.sub(r"\s+", " ", rest.strip().lower())
    key = re.sub(r"\s*test$", "", key)
    blocking = True
    if key.startswith("non-blocking "):
        blocking, key = False, key[len("non-blocking "):]
    persistent = " persistent" in f" {key}"
    key = re.sub(r"\s*\bpersistent\b\s*", " ", key).strip()
    if op is not None:
        prefix = ONE_SIDED.get(op, op)
        kind = {"latency": "latency", "bandwidth": "bw", "bi-directional bandwidth": "bibw"}.get(key, b.slug(key))
        return f"{prefix}_{kind}", accel
    if key.endswith(" latency") and key[: -len(" latency")] in CORE:
        key = key[: -len(" latency")]
    name = CORE.get(key, b.slug(key))
    if not blocking:
        name = "i" + name
    if persistent:
        name += "_persistent"
    return name, accel


def default_max_size(benchmark: str) -> Optional[int]:
    """The largest message size an OSU program measures by default (the smallest across OMB 5-7)."""
    base = benchmark.replace("_persistent", "")
    if base in NO_SIZE_CHECK:
        return None
    if base == "multi_lat":
        return MIB
    if base in TWO_RANKS or base == "mbw_mr" or base.split("_")[-1] in ("latency", "bw", "bibw"):
        return 4 * MIB
    return MIB  # collectives, blocking and non-blocking


REDUCTIONS = {"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"}


def default_datatype(benchmark: str) -> str:
    """OSU's (and the engine's) datatype when none is chosen: MPI_FLOAT for reductions, else MPI_CHAR.
    Only another datatype (-T) becomes a parameter, so a default run matches a native one."""
    base = benchmark.replace("_persistent", "")
    return "MPI_FLOAT" if base in REDUCTIONS or (base[:1] == "i" and base[1:] in REDUCTIONS) else "MPI_CHAR"


# Column labels (spaces removed, lower case) -> roles.
ROLES = {
    "size": "size",
    "latency(us)": "avg",
    "avglatency(us)": "avg",
    "minlatency(us)": "min",
    "maxlatency(us)": "max",
    "iterations": "iterations",
    "bandwidth(mb/s)": "bw",
    "mb/s": "bw",
    "messages/s": "rate",
    "validation": "validation",
    "overall(us)": "avg",
    "compute(us)": "compute_us",
    "coll.init(us)": "init_us",
    "mpi_test(us)": "test_us",
    "mpi_wait(us)": "wait_us",
    "purecomm.(us)": "pure_comm_us",
    "mincomm.(us)": "min_comm_us",
    "maxcomm.(us)": "max_comm_us",
    "overlap(%)": "overlap_pct",
    "transmitsize": "transmit_size",
}
DETAIL_ROLES = ("compute_us", "init_us", "test_us", "wait_us", "pure_comm_us", "min_comm_us", "max_comm_us",
                "overlap_pct", "transmit_size")
TAIL = re.compile(r"^p(\d+(?:\.\d+)?)tail(lat\(us\)|bw\(mb/s\))$")
HEADER_FIRST = ("size", "avglatency(us)", "bandwidth(mb/s)", "mb/s", "overall(us)", "latency(us)")


def column_roles(source: b.Source, line: int, labels: List[str]) -> List[str]:
    roles = []
    for label in labels:
        key = label.replace(" ", "").lower()
        if key in ROLES:
            roles.append(ROLES[key])
            continue
        tail = TAIL.match(key)
        if tail:
            roles.append(f"p{tail.group(1)}")
            continue
        raise source.error(line, f"unknown OSU column {label!r} in the table header")
    if len(set(roles)) != len(roles):
        raise source.error(line, "a column appears twice in the table header")
    if not ({"avg", "bw", "rate"} & set(roles)):
        raise source.error(line, "the table header has no latency, bandwidth or message-rate column")
    return roles


def is_header(text: str) -> bool:
    body = text.lstrip("#").strip()
    if not body:
        return False
    return b.split_columns(body)[0].replace(" ", "").lower() in HEADER_FIRST


def detect(source: b.Source) -> int:
    for text in source.head[:200]:
        if TITLE.match(text.strip()) and ("Test" in text or "Benchmark" in text):
            return 90
    return 0


class Table:
    """One title's table: its parameters, and the block (datatype) being read."""

    def __init__(self, title: str, version: Optional[str], line: int):
        self.title = title
        self.version = version
        self.line = line
        self.benchmark, self.accel = benchmark_name(title)
        self.params: Dict[str, Any] = {}
        self.notes: List[str] = []
        self.points = 0
        self.blocks: List[Dict[str, Any]] = []
        self.varied = False
        self.matrix_windows: Optional[List[int]] = None
        self.matrix_metric = "bandwidth"
        self.datatype: Optional[str] = None
        self.new_block()

    def new_block(self) -> None:
        self._base: Optional[Dict[str, Any]] = None
        self.roles: Optional[List[str]] = None
        self.labels: List[str] = []
        self.rows = 0
        self.last_size: Optional[int] = None
        self.last_no: Optional[int] = None

    def end_block(self) -> None:
        if self.rows:
            sized = self.varied or bool(self.roles and "size" in self.roles)
            self.blocks.append({"datatype": self.datatype, "rows": self.rows, "last_size": self.last_size,
                                "line": self.last_no, "sized": sized})

    def base_params(self) -> Dict[str, Any]:
        """The parameters every point of the current block shares (a fresh copy)."""
        if self._base is None:
            self._base = self._compute_base()
        return dict(self._base)

    def changed(self) -> None:
        self._base = None

    def _compute_base(self) -> Dict[str, Any]:
        params = dict(self.params)
        if self.benchmark in TWO_RANKS or self.benchmark.replace("_persistent", "") in TWO_RANKS \
                or self.benchmark.split("_")[0] in ONE_SIDED.values():
            params.setdefault("ranks", 2)
        if self.accel:
            params["accel"] = self.accel.lower()
        if self.datatype and self.datatype != default_datatype(self.benchmark):
            params["datatype"] = self.datatype
        return params


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "osu", "OSU Micro-Benchmarks", allow_truncated)
    table: Optional[Table] = None
    tables: List[Dict[str, Any]] = []
    limit = b.HINTS.get().get("max_message_size")

    def close(t: Optional[Table]) -> None:
        if t is None:
            return
        t.end_block()
        if t.points == 0 and t.benchmark != "hello":
            if t.roles is None and not t.varied and t.benchmark != "init":
                raise source.error(t.line, f"the '{t.title}' table has no column header")
            raise source.truncated(t.line, f"the '{t.title}' table has no results (the run stopped or the file was cut)")
        _check_complete(parsed, t, limit)
        tables.append({"title": t.title, "benchmark": t.benchmark, "line": t.line, "points": t.points,
                       **({"notes": t.notes} if t.notes else {}),
                       **({k: v for k, v in t.params.items() if k in ("win", "sync")})})

    for line in reader:
        text = line.text.strip()
        if not text:
            continue
        if text[0].isdigit() and table is not None and table.roles is not None and not table.varied:
            tokens = text.split()
            if _is_simple_row(tokens) and SIMPLE.get(tuple(table.roles)):
                _simple_rows(source, reader, parsed, table, line)  # the common case: runs of two-column rows
            else:
                _row(source, point, table, line.no, tokens)
            continue
        if b.NOISE.match(text):
            continue
        title = TITLE.match(text)
        if title:
            name = title.group("title").strip()
            if table is not None and table.points == 0 and table.title == name and table.rows == 0:
                continue  # osu_mbw_mr 7.2 prints its title twice
            close(table)
            table = Table(name, title.group("version"), line.no)
            if table.version and not parsed.tool_version:
                parsed.tool_version = table.version
            continue
        if text.startswith("#"):
            if table is not None:
                _comment(source, table, line.no, text)
            continue
        if table is None:
            raise source.error(line.no, "a results line before any '# OSU ... Test' title")
        if table.benchmark == "init":
            _init_line(source, point, table, line.no, text)
        elif table.benchmark == "hello":
            hello = HELLO.match(text)
            if not hello:
                raise source.error(line.no, f"unexpected line in the '{table.title}' output: {text[:60]!r}")
            table.notes.append(text)
        elif table.varied and table.matrix_windows:
            _matrix_row(source, point, table, line.no, text.split())
        elif table.roles is None:
            raise source.error(line.no, f"a results line before the column header of the '{table.title}' table")
        else:
            _row(source, point, table, line.no, text.split())

    close(table)
    if not tables:
        raise source.error(None, "no '# OSU ... Test' table found")
    parsed.facts = {"tables": tables}
    if parsed.max_ranks:
        parsed.ranks = parsed.max_ranks
    return parsed


def _comment(source: b.Source, table: Table, no: int, text: str) -> None:
    """A '#' line inside a table: datatype, pairs/window, one-sided settings, a header, a note."""
    dt = DATATYPE.match(text)
    if dt:
        if table.rows:  # -T all: the next datatype's block
            table.end_block()
            table.new_block()
        table.datatype = dt.group(1)
        table.changed()
        return
    pairs = PAIRS.search(text)
    if pairs:
        n = b.integer(source, no, pairs.group(1), "pairs", minimum=1)
        table.changed()
        table.params["pairs"] = n
        table.params["ranks"] = 2 * n
        w = WINDOW.search(text)
        if w and w.group(1).lower() == "varied":
            table.varied = True
        elif w:
            table.params["window"] = b.integer(source, no, w.group(1), "window size", minimum=1)
        return
    row, m = b.first_match(WINDOW_SETTINGS, text)
    if m:
        _, key, values = row
        table.params[key] = values.get(m.group(1), m.group(1))
        table.changed()
        table.notes.append(text.lstrip("# "))
        return
    if table.varied:
        if "Message Rate Profile" in text:
            table.matrix_metric, table.matrix_windows = "message_rate", None
            return
        if MATRIX_HEADER.match(text):
            table.matrix_windows = [b.integer(source, no, tok, "window size", minimum=1) for tok in text.lstrip("#").split()]
            table.end_block()
            table.new_block()
            return
    if is_header(text):
        if table.roles is not None and table.rows:
            raise source.error(no, f"a second column header in the '{table.title}' table")
        table.labels = b.split_columns(text.lstrip("#"))
        table.roles = column_roles(source, no, table.labels)
        return
    table.notes.append(text.lstrip("# "))


def _init_line(source: b.Source, point: b.PointFactory, table: Table, no: int, text: str) -> None:
    m = INIT.match(text)
    if not m:
        raise source.error(no, f"expected 'nprocs: N, min: X ms, max: Y ms, avg: Z ms', found {text[:60]!r}")
    if table.points:
        raise source.error(no, f"a second result line in the '{table.title}' output")
    ranks = b.integer(source, no, m.group("n"), "nprocs", minimum=1)
    avg, lo, hi = (b.scale(b.finite(source, no, m.group(k), f"{k} time"), 1e-3) for k in ("avg", "min", "max"))
    point("init", {"ranks": ranks}, "time", "s", avg, no, converted_from="ms", mean=avg, min=lo, max=hi)
    table.points += 1
    table.rows += 1


def _number(source: b.Source, no: int, tok: str, label: str, minimum: Optional[float] = 0.0) -> float:
    try:
        value = float(tok)
    except ValueError:
        raise source.error(no, f"{label}: expected a number, found {tok!r}") from None
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        return b.finite(source, no, tok, label, minimum)  # raises with the right message
    return value


def _size(source: b.Source, no: int, tok: str, table: Table) -> int:
    if not (tok.isascii() and tok.isdigit()):
        return b.integer(source, no, tok, "Size")  # raises
    size = int(tok) if len(tok) < 19 else b.integer(source, no, tok, "Size")
    if table.last_size is not None and size <= table.last_size:
        b.require_increasing(source, no, table.last_size, size, f"the '{table.title}' table")
    table.last_size = size
    table.last_no = no
    return size


SIMPLE = {("size", "avg"): ("latency", "us"), ("size", "bw"): ("bandwidth", "MB/s")}


def _is_simple_row(tokens: List[str]) -> bool:
    return len(tokens) == 2 and tokens[0].isascii() and tokens[0].isdigit()


def _simple_rows(source: b.Source, reader: b.LineReader, parsed: b.ParsedRun, table: Table, line: b.Line) -> None:
    """Consecutive rows of a two-column table (size and one figure), read in one loop: a file of
    millions of rows spends its time here. ``line`` is such a row; the loop stops at, and gives
    back, the first line that is not one (which ``parse`` then reads the general way). A sink
    that takes whole series (the import's) gets (size, value, line) rows, not a Measurement each."""
    metric, unit = SIMPLE[tuple(table.roles or ())]
    if metric == "bandwidth" and table.benchmark.endswith("bibw"):
        metric = "bibandwidth"
    bench, label, name = table.benchmark, table.labels[1], source.name
    base = table.base_params()
    extra = {"datatype": table.datatype} if table.datatype else None
    series = getattr(parsed.sink, "series", None)
    rows: List[Tuple[int, float, int]] = []
    last, count = table.last_size, 0
    inf = math.inf
    last_no = table.last_no
    for no, text in itertools.chain(((line.no, line.text),), reader.texts()):
        tokens = text.split()
        if len(tokens) != 2 or not (tokens[0].isascii() and tokens[0].isdigit()):  # _is_simple_row, inlined
            reader.push(no, text)  # parse() reads it; never the first line (parse only calls this for a simple row)
            break
        size_text = tokens[0]
        size = int(size_text)
        if size > b.INT64_MAX:
            b.integer(source, no, size_text, "Size")  # raises: outside the database's range
        if last is not None and size <= last:
            b.require_increasing(source, no, last, size, f"the '{table.title}' table")
        try:
            value = float(tokens[1])
        except ValueError:
            value = -1.0  # _number below says why
        if not 0.0 <= value < inf:  # also NaN
            value = _number(source, no, tokens[1], label)  # raises with the right message
        rows.append((size, value, no))
        last, last_no, count = size, no, count + 1
        if len(rows) >= SERIES_BATCH:
            _send(parsed, series, bench, base, metric, unit, name, extra, rows)
            rows = []
    table.last_no = last_no
    _send(parsed, series, bench, base, metric, unit, name, extra, rows)
    table.last_size = last
    table.rows += count
    table.points += count
    parsed.note_points(bench, count, base.get("ranks"))


SERIES_BATCH = 5000


def _send(parsed: b.ParsedRun, series, bench: str, base: Dict[str, Any], metric: str, unit: str, name: str,
          extra: Optional[Dict[str, Any]], rows: List[Tuple[int, float, int]]) -> None:
    if series is not None:
        series(bench, base, metric, unit, name, extra, rows)
        return
    sink = parsed.sink if parsed.sink is not None else parsed.measurements.append
    for size, value, no in rows:
        params = base.copy()
        params["size"] = size
        info = {"source": f"{name}:{no}", **extra} if extra else {"source": f"{name}:{no}"}
        sink(b.Measurement(bench, params, metric, unit, value, None, None, None, None, value, None, None, None, info))


def _row(source: b.Source, point: b.PointFactory, table: Table, no: int, tokens: List[str]) -> None:
    roles = table.roles or []
    if len(tokens) != len(roles):
        raise source.error(no, f"expected {len(roles)} columns ({', '.join(table.labels)}), found {len(tokens)}")
    simple = SIMPLE.get(tuple(roles))
    if simple:  # the common two-column table, read without the general machinery (files of millions of rows)
        params = table.base_params()
        params["size"] = _size(source, no, tokens[0], table)
        value = _number(source, no, tokens[1], table.labels[1])
        table.rows += 1
        metric = "bibandwidth" if simple[0] == "bandwidth" and table.benchmark.endswith("bibw") else simple[0]
        point.checked(table.benchmark, params, metric, simple[1], value, no,
                      {"datatype": table.datatype} if table.datatype else None)
        table.points += 1
        return
    values: Dict[str, Any] = {}
    for role, label, tok in zip(roles, table.labels, tokens):
        if role == "size":
            values[role] = _size(source, no, tok, table)
        elif role == "validation":
            if tok.lower() not in ("pass", "fail", "passed", "failed"):
                raise source.error(no, f"Validation: expected Pass or Fail, found {tok!r}")
            values[role] = tok
        elif role in ("iterations", "transmit_size"):
            values[role] = b.integer(source, no, tok, label)
        else:
            values[role] = _number(source, no, tok, label, None if role == "overlap_pct" else 0.0)
    if "size" not in values and table.rows:
        raise source.error(no, f"the '{table.title}' table has no size column, so it has a single result line")
    table.rows += 1
    params = table.base_params()
    params["size"] = values.get("size", 0)
    detail: Dict[str, Any] = {"datatype": table.datatype} if table.datatype else {}
    if "validation" in values:
        detail["validation"] = values["validation"]
    for key in DETAIL_ROLES:
        if key in values:
            detail[key] = values[key]
    tails = {k: v for k, v in values.items() if k[0] == "p" and k[1:2].isdigit()}

    if "avg" in values:
        lat_tails = tails if "bw" not in values else {}
        stats: Dict[str, Any] = {"mean": values["avg"]}
        for key in ("min", "max", "iterations"):
            if key in values:
                stats[key] = values[key]
        if "p99" in lat_tails:
            stats["p99"] = lat_tails["p99"]
        if "p50" in lat_tails:
            stats["median"] = lat_tails["p50"]
        extra = dict(detail)
        extra.update({f"{k}_us": v for k, v in lat_tails.items() if k not in ("p99", "p50")})
        point(table.benchmark, dict(params), "latency", "us", values["avg"], no, detail=extra, **stats)
        table.points += 1
    # A non-blocking collective's pure communication time and overlap: the engine's pure_comm and
    # overlap metrics of the same benchmark, so compare matches them too.
    for role, metric, unit in (("pure_comm_us", "pure_comm", "us"), ("overlap_pct", "overlap", "%")):
        if role in values and "avg" in values:
            point(table.benchmark, dict(params), metric, unit, values[role], no, detail=dict(detail),
                  mean=values[role])
            table.points += 1
    if "bw" in values:
        metric = "bibandwidth" if table.benchmark.endswith("bibw") else "bandwidth"
        extra = dict(detail)
        extra.update({f"{k}_MBps": v for k, v in tails.items()})
        point(table.benchmark, dict(params), metric, "MB/s", values["bw"], no, detail=extra, mean=values["bw"],
              iterations=values.get("iterations"))
        table.points += 1
    if "rate" in values:
        point(table.benchmark, dict(params), "message_rate", "msg/s", values["rate"], no, detail=dict(detail),
              mean=values["rate"])
        table.points += 1


def _matrix_row(source: b.Source, point: b.PointFactory, table: Table, no: int, tokens: List[str]) -> None:
    """A row of osu_mbw_mr -V: a size, then one figure per window size of the matrix header."""
    windows = table.matrix_windows or []
    if len(tokens) != len(windows) + 1:
        raise source.error(no, f"expected a size and {len(windows)} values (window sizes {' '.join(map(str, windows))}), "
                               f"found {len(tokens)} columns")
    size = _size(source, no, tokens[0], table)
    table.rows += 1
    metric, unit = ("bandwidth", "MB/s") if table.matrix_metric == "bandwidth" else ("message_rate", "msg/s")
    detail = {"datatype": table.datatype, "window_varied": True} if table.datatype else {"window_varied": True}
    for window, tok in zip(windows, tokens[1:]):
        value = _number(source, no, tok, f"window {window}")
        params = table.base_params()
        params.update(size=size, window=window)
        point(table.benchmark, params, metric, unit, value, no, detail=dict(detail), mean=value)
        table.points += 1


def _check_complete(parsed: b.ParsedRun, table: Table, limit: Optional[int]) -> None:
    """A table that stops below the largest size the program measures means the run was stopped."""
    expected = limit if limit is not None else default_max_size(table.benchmark)
    if expected is None:
        return
    for block in table.blocks:
        if not block["sized"] or block["last_size"] is None or block["last_size"] >= expected:
            continue
        which = f" ({block['datatype']})" if block["datatype"] else ""
        how = "the size the import was told (--max-message-size)" if limit is not None else \
            f"osu_{table.benchmark}'s default largest size {expected}"
        parsed.mark_incomplete(
            f"the '{table.title}' table{which} stops at {block['last_size']} bytes (line {block['line']}), "
            f"short of {how}: the run stopped early (if it ran with -m, give --max-message-size)")


FORMAT = Importer(name="osu", title="OSU Micro-Benchmarks output", detect=detect, parse=parse)
