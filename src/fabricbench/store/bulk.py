"""Bulk writes for importers: several runs and millions of measurements in ONE transaction.

``Store.save_run`` takes a whole run as a list; an import of a multi-million-row file
cannot hold that list. ``BulkWriter`` opens one write transaction for a whole import
(several files: all of them or none), creates runs, appends measurements in batches as
they are parsed (memory stays flat), and fills in each run's status and provenance when
its file is done. Leaving the ``with`` block on an exception rolls everything back.

    with BulkWriter(store) as bulk:
        run_id = bulk.create_run(kind="import", provenance={...})
        bulk.add(run_id, batch_of_measurements)
        bulk.set_outcome(run_id, status="complete", ranks=2, provenance={...})
"""
from __future__ import annotations

import itertools
import json
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import sqlalchemy as sa

from fabricbench.store import schema
from fabricbench.store.db import Store, StoreError, _new_run_values
from fabricbench.store.records import STAT_FIELDS, Measurement, Run

CACHE_KIB = 64 * 1024
_BASE_COLUMNS = ("run_id", "seq", "benchmark", "size", "params", "metric", "unit", "detail")
_SERIES_COLUMNS = _BASE_COLUMNS + ("value", "mean")
SERIES_ROWS = 5000
_STATS = operator.attrgetter(*STAT_FIELDS)
_DUMPS = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_STRING = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


class _JsonCache:
    """JSON text of params and detail dicts, cached: a file's points repeat the same few params,
    and their detail differs only in its source line. One json.dumps per distinct value."""

    def __init__(self, limit: int = 100_000):
        self.limit = limit
        self.texts: Dict[Any, str] = {}

    def dumps(self, value: Optional[Dict[str, Any]]) -> Optional[str]:
        if value is None:
            return None
        try:
            key = tuple(value.items())
            text = self.texts.get(key)
        except TypeError:  # unhashable values (lists): encode each time
            return _DUMPS(value)
        if text is None:
            text = _DUMPS(value)
            if len(self.texts) < self.limit:
                self.texts[key] = text
        return text

    def detail(self, value: Optional[Dict[str, Any]]) -> Optional[str]:
        """A detail dict whose first key is a per-point "source": the rest comes from the cache."""
        if not value:
            return self.dumps(value)
        items = tuple(value.items())
        source = items[0]
        if source[0] != "source" or not isinstance(source[1], str):
            return self.dumps(value)
        head = '{"source":' + _STRING(source[1])
        if len(items) == 1:
            return head + "}"
        try:
            rest = self.texts.get(items[1:])
        except TypeError:
            return _DUMPS(value)
        if rest is None:
            rest = _DUMPS(dict(items[1:]))
            if len(self.texts) < self.limit:
                self.texts[items[1:]] = rest
        return head + "," + rest[1:]


class BulkWriter:
    """One write transaction on a store for a whole import (see the module docstring)."""

    def __init__(self, store: Store):
        self.store = store
        self._ctx = None
        self.conn = None
        self._seq: Dict[int, int] = {}
        self._json = _JsonCache()
        self._sql: Dict[Tuple[Tuple[str, ...], int], str] = {}
        self._series: List[tuple] = []  # rows of add_series not yet inserted (tables are often short)

    def __enter__(self) -> "BulkWriter":
        self._ctx = self.store._write()
        self.conn = self._ctx.__enter__()
        if self.store.is_sqlite:
            # A transaction of millions of rows: with SQLite's default 2 MB page cache, pages spill to the
            # WAL and are read back from it again and again. 64 MB keeps the pages being written in memory.
            self.conn.exec_driver_sql(f"PRAGMA cache_size=-{CACHE_KIB}")
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.flush()
            except BaseException as err:  # the held rows failed: roll everything back as for any error
                self._restore_cache()
                if not self._ctx.__exit__(type(err), err, err.__traceback__):
                    raise
                return False
        self._restore_cache()
        return self._ctx.__exit__(exc_type, exc, tb)

    def _restore_cache(self) -> None:
        if self.store.is_sqlite:
            try:
                self.conn.exec_driver_sql("PRAGMA cache_size=-2000")  # SQLite's default again, for the pool
            except Exception:  # the transaction's own outcome is what matters here
                pass

    def create_run(self, kind: str, label: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                   command: Optional[str] = None, provenance: Optional[Dict[str, Any]] = None,
                   ranks: Optional[int] = None) -> Run:
        values = _new_run_values(kind, label, tags, command, provenance, ranks, "running")
        values["finished"] = values["created"]
        run_id = self.conn.execute(schema.runs.insert().values(**values)).inserted_primary_key[0]
        self._seq[run_id] = 0
        return Run(id=run_id, **values)

    def add(self, run_id: int, items: Sequence[Measurement]) -> None:
        """Append measurements to a run created in this transaction (one executemany per call).

        Statistics that no measurement of the batch has are left out of the INSERT rather than
        bound as NULLs: binding is most of an insert's cost from Python."""
        if not items:
            return
        self.flush()
        every = [_STATS(item) for item in items]
        keep = [i for i, column in enumerate(zip(*every)) if column.count(None) != len(column)]
        stats = tuple(STAT_FIELDS[i] for i in keep)
        pick = operator.itemgetter(*keep) if len(keep) > 1 else (lambda v, _i=tuple(keep): tuple(v[i] for i in _i))
        seq = self._seq[run_id]
        dumps, detail = self._json.dumps, self._json.detail
        rows: List[tuple] = []
        for item, values in zip(items, every):
            seq += 1
            params = item.params
            size = params.get("size")
            if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float))):
                size = None
            rows.append((run_id, seq, item.benchmark, None if size is None else int(size), dumps(params), item.metric,
                         item.unit, detail(item.detail)) + pick(values))
        self._executemany(_BASE_COLUMNS + stats, rows)
        self._seq[run_id] = seq

    def add_series(self, run_id: int, benchmark: str, base: Dict[str, Any], metric: str, unit: str, source: str,
                   extra: Optional[Dict[str, Any]], rows: Sequence[Tuple[int, float, int]]) -> None:
        """Append points that share everything but size, value and source line, given as
        (size, value, line) rows: their params and detail JSON are built from two fixed fragments
        (the same text ``add`` would store; the value is also the mean: OSU and IMB print averages)."""
        if not rows:
            return
        head = _DUMPS(base)[:-1] + ("," if base else "") + '"size":'
        name = _STRING(source + ":")[:-1]  # the quoted file name without its closing quote
        tail = "}" if not extra else "," + _DUMPS(extra)[1:]
        seq = self._seq[run_id]
        out = []
        append = out.append
        for size, value, line in rows:
            seq += 1
            append((run_id, seq, benchmark, size, f"{head}{size}}}", metric, unit,
                    f'{{"source":{name}{line}"{tail}', value, value))
        self._seq[run_id] = seq
        self._series.extend(out)
        if len(self._series) >= SERIES_ROWS:
            self.flush()

    def flush(self) -> None:
        """Insert the rows ``add_series`` is holding (done before any other write of this writer)."""
        if self._series:
            rows, self._series = self._series, []
            self._executemany(_SERIES_COLUMNS, rows)

    def _executemany(self, columns: Tuple[str, ...], rows: List[tuple]) -> None:
        """The driver's own executemany (SQLAlchemy's per-row parameter processing costs more than
        the insert itself); its errors are reported as the store reports any database error."""
        dialect = self.conn.dialect
        mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(dialect.paramstyle)
        if mark is None:  # a driver with another parameter style: SQLAlchemy binds them
            self.conn.execute(sa.table("measurements", *map(sa.column, columns)).insert(),
                              [dict(zip(columns, r)) for r in rows])
            return
        # Several rows per INSERT (as many as 999 bound values allow, SQLite's oldest limit): each
        # statement executed costs more than the values it binds.
        per = max(1, min(100, 999 // len(columns)))
        whole = len(rows) - len(rows) % per
        cursor = self.conn.connection.dbapi_connection.cursor()
        try:
            if whole:
                flat = [tuple(itertools.chain.from_iterable(rows[i:i + per])) for i in range(0, whole, per)]
                cursor.executemany(self._statement(columns, per, mark), flat)
            if whole < len(rows):
                cursor.executemany(self._statement(columns, 1, mark), rows[whole:])
        except dialect.dbapi.Error as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"database {self.store.where}: {detail}") from None
        finally:
            cursor.close()

    def _statement(self, columns: Tuple[str, ...], rows: int, mark: str) -> str:
        sql = self._sql.get((columns, rows))
        if sql is None:
            one = f"({', '.join([mark] * len(columns))})"
            sql = self._sql[(columns, rows)] = f"INSERT INTO measurements ({', '.join(columns)}) VALUES {', '.join([one] * rows)}"
        return sql

    def add_artifact(self, run_id: int, name: str, data: Any) -> None:
        self.flush()
        self.conn.execute(schema.artifacts.insert().values(run_id=run_id, name=name, data=data))

    def set_outcome(self, run_id: int, **fields: Any) -> None:
        """Set what is known once a file is read: status, message, ranks, command, provenance, kind."""
        allowed = {"status", "message", "ranks", "command", "provenance", "label", "tags", "kind"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot set {sorted(unknown)}")
        self.flush()
        self.conn.execute(schema.runs.update().where(schema.runs.c.id == run_id).values(**fields))

    def runs_with_digest(self, sha256: str) -> List[int]:
        """Runs imported from a file with this content digest (provenance import.sha256)."""
        r = schema.runs
        digest = r.c.provenance["import"]["sha256"].as_string()
        rows = self.conn.execute(sa.select(r.c.id).where(digest == sha256).order_by(r.c.id)).fetchall()
        return [row[0] for row in rows]
