"""Opening the results database and reading and writing runs.

Every write is its own transaction, so a run killed at any moment leaves the points it
measured and a consistent database. SQLite (the default) runs in WAL mode; writers take
the write lock when their transaction begins (BEGIN IMMEDIATE) and wait for each other
instead of failing, so several `fabricbench run` processes can share one file.

A SQLite file that cannot be written (a read-only file, folder or file system) is opened
for reading only (``mode=ro``, else ``immutable=1``, which reads the main file as it is):
listing, showing and exporting work, and a write says in one line that the database is
read-only. A URL whose database kind or driver is missing is one line that says what to
install; so is every driver error (a full disk, a lost server).
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import os
import re
import shlex
import sqlite3
import uuid as _uuid
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from fabricbench import __version__
from fabricbench.store import migrations, schema
from fabricbench.store.errors import StoreError  # defined apart: catching it needs no SQLAlchemy
from fabricbench.store.records import HOST_PROBE, STAT_FIELDS, Baseline, Host, Measurement, Run, RunData, SlurmJob, unique_names

RUN_STATUSES = ("running", "complete", "failed", "interrupted")
BUSY_TIMEOUT_MS = 60_000


def default_url() -> str:
    """FABRICBENCH_DB (a URL or a file path), else results.db in the user data directory."""
    configured = os.environ.get("FABRICBENCH_DB")
    if configured:
        return as_url(configured)
    import platformdirs

    return as_url(str(Path(platformdirs.user_data_dir("fabricbench")) / "results.db"))


def as_url(text: str) -> str:
    return text if "://" in text else f"sqlite:///{Path(text).expanduser().resolve()}"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# What to pip install for a SQLAlchemy driver module that is missing.
DRIVER_PACKAGES = {"psycopg2": "psycopg2-binary (or: pip install 'fabricbench[postgres]')", "psycopg": "psycopg[binary]",
                   "pg8000": "pg8000", "asyncpg": "asyncpg", "MySQLdb": "mysqlclient", "pymysql": "pymysql",
                   "cx_Oracle": "cx_Oracle", "oracledb": "oracledb", "pyodbc": "pyodbc"}


def shown_url(url: str) -> str:
    """A URL as messages show it: without its password, also when SQLAlchemy cannot parse it."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def _with_driver(url: str) -> str:
    """postgresql://... with the driver that is installed: SQLAlchemy's default (psycopg 3) or the
    psycopg2 that fabricbench[postgres] installs; psycopg2 is named when neither is."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme == "postgresql" and importlib.util.find_spec("psycopg") is None:
        return f"postgresql+psycopg2://{rest}"
    return url


def _create_engine(url: str, **kwargs) -> Engine:
    """sa.create_engine, with a missing dialect or driver turned into one line that says what to install."""
    try:
        return sa.create_engine(_with_driver(url), **kwargs)
    except sa.exc.NoSuchModuleError:
        scheme = url.split("://", 1)[0]
        raise StoreError(f"database URL {shown_url(url)}: unknown database kind '{scheme}'; give a SQLite file path, "
                         "a sqlite:///PATH URL or a postgresql://USER@HOST/DB URL") from None
    except ImportError as exc:
        module = (exc.name or str(exc)).split(".")[0]
        package = DRIVER_PACKAGES.get(module, module)
        raise StoreError(f"database URL {shown_url(url)} needs the Python driver '{module}', which is not installed: "
                         f"pip install {package}") from None
    except (sa.exc.ArgumentError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"database URL {shown_url(url)} cannot be used: {detail}") from None


def _read_only_connection(path: Path) -> "sqlite3.Connection":
    """A connection that never writes: mode=ro, else immutable=1 (a read-only file system holds no -shm file)."""
    last: Optional[Exception] = None
    for flags in ("mode=ro", "immutable=1"):
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            last = exc
    assert last is not None
    raise last


def _sqlite_engine(url: str, immediate: bool, read_only_path: Optional[Path] = None) -> Engine:
    if read_only_path is not None:
        engine = _create_engine("sqlite://", creator=lambda: _read_only_connection(read_only_path))
    else:
        engine = _create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # transactions are begun below, not by pysqlite
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if read_only_path is None:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Store:
    """A results database. Use open_db() to get one."""

    def __init__(self, url: str):
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.read_only: Optional[str] = None  # why this database can only be read, when it can only be read
        self._checked = False  # integrity checked before the first write (SQLite)
        if self.is_sqlite:
            path = self.path
            if path is None:
                raise StoreError(f"{shown_url(url)} is an in-memory database, which keeps nothing: give a file "
                                 "(e.g. --db results.db or sqlite:///PATH/results.db)")
            _check_is_file(path)
            if path is not None:
                self.read_only = _why_read_only(path)
                if self.read_only is None:
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise StoreError(f"cannot create the folder of database {path}: "
                                         f"{exc.strerror or exc}") from None
            if self.read_only is not None:
                self._writer = self._reader = _sqlite_engine(url, immediate=False, read_only_path=path)
            else:
                self._writer = _sqlite_engine(url, immediate=True)
                self._reader = _sqlite_engine(url, immediate=False)
        else:
            self._writer = self._reader = _create_engine(url, pool_pre_ping=True)

    # -- opening, versions, migrations -------------------------------------------------

    @property
    def path(self) -> Optional[Path]:
        if not self.is_sqlite:
            return None
        name = sa.engine.make_url(self.url).database
        return Path(name) if name and name != ":memory:" else None

    @property
    def where(self) -> str:
        """The database as named in messages: its file for SQLite, its URL otherwise."""
        path = self.path
        return str(path) if path else sa.engine.make_url(self.url).render_as_string(hide_password=True)

    def schema_version(self) -> Optional[int]:
        """The stored schema version, or None for an empty database."""
        with self._guard():
            with self._reader.connect() as conn:
                names = sa.inspect(conn).get_table_names()
                if "schema_version" not in names:
                    return 1 if "runs" in names else None
                row = conn.execute(sa.select(schema.schema_version.c.version)).first()
                return row[0] if row else None

    def prepare(self, migrate: bool = False) -> None:
        """Create the schema in an empty database; check (or migrate) an existing one."""
        version = self.schema_version()
        if version is None:
            with self._write() as conn:
                schema.metadata.create_all(conn)
                conn.execute(schema.schema_version.insert().values(version=schema.SCHEMA_VERSION))
            return
        if version > schema.SCHEMA_VERSION:
            raise StoreError(
                f"{self.where} has schema version {version}, newer than this fabricbench "
                f"{__version__} understands ({schema.SCHEMA_VERSION}); upgrade fabricbench. "
                "Nothing was changed."
            )
        if version < schema.SCHEMA_VERSION:
            if not migrate:
                raise StoreError(
                    f"{self.where} has schema version {version}; this fabricbench uses "
                    f"{schema.SCHEMA_VERSION}. Run 'fabricbench db migrate' to upgrade it."
                )
            with self._write() as conn:
                migrations.migrate(conn, version)

    def _write(self):
        if self.read_only is not None:
            raise StoreError(f"database {self.where} is read-only ({self.read_only}): it can be read, not written")
        if not self._checked:
            self.check_integrity()
        return _Guarded(self, self._writer.begin())

    def check_integrity(self) -> None:
        """Refuse to write into a damaged SQLite file: ``pragma quick_check`` once, before the first write.

        Cheap where it runs: files up to QUICK_CHECK_MAX_BYTES (FABRICBENCH_QUICK_CHECK_MAX_MB) are
        checked (about a second per few hundred MB); larger ones, and server databases, are not.
        """
        self._checked = True
        path = self.path
        if not self.is_sqlite or path is None:
            return
        try:
            size = path.stat().st_size
        except OSError:
            return  # not made yet: nothing to damage
        if size == 0 or size > quick_check_max_bytes():
            return
        problems = _quick_check(self, path)
        if problems:
            shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
            raise StoreError(
                f"database {path} is damaged, so nothing was written to it (sqlite quick_check: {shown}). "
                f"Recover what it holds into a new file: sqlite3 {shlex.quote(str(path))} .recover > dump.sql && "
                "sqlite3 recovered.db < dump.sql, then use --db recovered.db")

    def _read(self):
        return _Guarded(self, self._reader.connect())

    def _guard(self):
        return _ErrorTranslation(self)

    def close(self) -> None:
        self._writer.dispose()
        if self._reader is not self._writer:
            self._reader.dispose()

    # -- writing -----------------------------------------------------------------------

    def create_run(
        self,
        kind: str = "benchmark",
        label: Optional[str] = None,
        tags: Optional[Dict[str, str]] = None,
        command: Optional[str] = None,
        provenance: Optional[Dict[str, Any]] = None,
        ranks: Optional[int] = None,
        status: str = "running",
    ) -> Run:
        values = _new_run_values(kind, label, tags, command, provenance, ranks, status)
        with self._write() as conn:
            run_id = conn.execute(schema.runs.insert().values(**values)).inserted_primary_key[0]
        return Run(id=run_id, **values)

    def add_measurements(self, run_id: int, items: Iterable[Measurement]) -> int:
        """Append measurements to a run in one transaction; returns how many."""
        items = list(items)
        if not items:
            return 0
        with self._write() as conn:
            self._insert_measurements(conn, run_id, items)
        return len(items)

    def replace_measurements(self, run_id: int, items: Iterable[Measurement]) -> int:
        """Store new figures for points already stored (each item's seq names its row), in one transaction."""
        items = list(items)
        m = schema.measurements
        with self._write() as conn:
            for item in items:
                if item.seq is None:
                    raise ValueError("replace_measurements: a measurement without its seq")
                values = {k: getattr(item, k) for k in STAT_FIELDS}
                conn.execute(m.update().where(m.c.run_id == run_id, m.c.seq == item.seq).values(detail=item.detail, **values))
        return len(items)

    def add_measurement(self, run_id: int, item: Measurement) -> None:
        self.add_measurements(run_id, [item])

    def add_hosts(self, run_id: int, items: Sequence[Host]) -> None:
        if items:
            with self._write() as conn:
                self._insert_hosts(conn, run_id, items)

    def add_artifact(self, run_id: int, name: str, data: Any) -> None:
        with self._write() as conn:
            conn.execute(schema.artifacts.insert().values(run_id=run_id, name=name, data=data))

    def update_run(self, run_id: int, **fields: Any) -> None:
        """Change a run's label, tags, provenance, ranks or message."""
        allowed = {"label", "tags", "provenance", "ranks", "message", "command"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update {sorted(unknown)}")
        with self._write() as conn:
            conn.execute(schema.runs.update().where(schema.runs.c.id == run_id).values(**fields))

    def finish_run(self, run_id: int, status: str, message: Optional[str] = None, only_if_running: bool = False) -> bool:
        """Record a run's end; with only_if_running, only if it is still `running`. Whether it was changed."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}")
        r = schema.runs
        stmt = r.update().where(r.c.id == run_id)
        if only_if_running:
            stmt = stmt.where(r.c.status == "running")
        with self._write() as conn:
            return conn.execute(stmt.values(status=status, message=message, finished=now())).rowcount > 0

    def save_run(
        self,
        measurements: Sequence[Measurement],
        kind: str = "import",
        label: Optional[str] = None,
        tags: Optional[Dict[str, str]] = None,
        command: Optional[str] = None,
        provenance: Optional[Dict[str, Any]] = None,
        ranks: Optional[int] = None,
        hosts: Sequence[Host] = (),
        artifacts: Optional[Dict[str, Any]] = None,
        status: str = "complete",
        message: Optional[str] = None,
    ) -> Run:
        """Store a whole run at once (importers): all of it or, on any error, nothing."""
        values = _new_run_values(kind, label, tags, command, provenance, ranks, status, message=message)
        values["finished"] = values["created"]
        with self._write() as conn:
            run_id = conn.execute(schema.runs.insert().values(**values)).inserted_primary_key[0]
            self._insert_measurements(conn, run_id, list(measurements))
            self._insert_hosts(conn, run_id, hosts)
            for name, data in (artifacts or {}).items():
                conn.execute(schema.artifacts.insert().values(run_id=run_id, name=name, data=data))
        return Run(id=run_id, **values)

    def delete_run(self, run_id: int) -> None:
        with self._write() as conn:
            for table in (schema.measurements, schema.hosts, schema.artifacts, schema.baselines):
                conn.execute(table.delete().where(table.c.run_id == run_id))
            conn.execute(schema.runs.delete().where(schema.runs.c.id == run_id))

    @staticmethod
    def _insert_measurements(conn: Connection, run_id: int, items: List[Measurement]) -> None:
        if not items:
            return
        m = schema.measurements
        last = conn.execute(sa.select(sa.func.max(m.c.seq)).where(m.c.run_id == run_id)).scalar()
        seq = (last or 0) + 1
        rows = []
        for offset, item in enumerate(items):
            row = {k: getattr(item, k) for k in STAT_FIELDS}
            size = item.params.get("size")
            row.update(
                run_id=run_id,
                seq=seq + offset,
                benchmark=item.benchmark,
                size=int(size) if isinstance(size, (int, float)) else None,
                params=item.params,
                metric=item.metric,
                unit=item.unit,
                detail=item.detail,
            )
            rows.append(row)
            item.seq = seq + offset
        conn.execute(m.insert(), rows)

    @staticmethod
    def _insert_hosts(conn: Connection, run_id: int, items: Sequence[Host]) -> None:
        if items:
            conn.execute(
                schema.hosts.insert(),
                [dict(run_id=run_id, hostname=h.hostname, digest=h.digest, facts=h.facts) for h in items],
            )

    # -- reading -----------------------------------------------------------------------

    def get_run(self, ref: Union[int, str]) -> Run:
        """A run by id, by uuid (or a unique prefix of at least 4 characters), or 'last'."""
        r = schema.runs
        text_ref = str(ref).strip()
        with self._read() as conn:
            if text_ref in ("last", "latest"):
                row = conn.execute(sa.select(r).order_by(r.c.id.desc()).limit(1)).first()
            else:
                row = None
                if text_ref.isdigit():
                    row = conn.execute(sa.select(r).where(r.c.id == int(text_ref))).first()
            if row is None and len(text_ref) >= 4 and text_ref not in ("last", "latest"):
                rows = conn.execute(sa.select(r).where(r.c.uuid.like(f"{text_ref}%")).limit(2)).fetchall()
                if len(rows) > 1:
                    raise StoreError(f"run '{text_ref}' is ambiguous in {self.where}; give more of its uuid")
                row = rows[0] if rows else None
        if row is None:
            raise StoreError(f"no run '{text_ref}' in {self.where} (see 'fabricbench runs')")
        return _run_from_row(row)

    def get_runs(self, refs: Iterable[Union[int, str]]) -> List[Run]:
        """Runs by id, uuid or 'last', in the order given; a run named twice is returned once."""
        runs: Dict[int, Run] = {}
        for ref in refs:
            run = self.get_run(ref)
            runs.setdefault(run.id, run)
        return list(runs.values())

    def list_runs(
        self, kind: Optional[str] = None, tags: Optional[Dict[str, str]] = None, limit: Optional[int] = None,
        status: Optional[str] = None,
    ) -> List[Run]:
        r = schema.runs
        stmt = sa.select(r).order_by(r.c.id)
        if kind:
            stmt = stmt.where(r.c.kind == kind)
        if status:
            stmt = stmt.where(r.c.status == status)
        with self._read() as conn:
            found = [_run_from_row(row) for row in conn.execute(stmt)]
        if tags:
            found = [run for run in found if all(run.tags.get(k) == v for k, v in tags.items())]
        return found[-limit:] if limit else found

    def measurements(
        self, run_id: int, benchmark: Optional[str] = None, metric: Optional[str] = None
    ) -> List[Measurement]:
        return self.measurements_by_run([run_id], benchmark=benchmark, metric=metric)[run_id]

    def measurements_by_run(
        self, run_ids: Sequence[int], benchmark: Optional[str] = None, metric: Optional[str] = None
    ) -> Dict[int, List[Measurement]]:
        """Measurements of several runs in one query: {run_id: [Measurement in seq order]}.

        The JSON columns are read as text (where the driver does not decode them itself) and
        each distinct params text parsed once:
        runs repeat the same sizes, and a 50-run report reads 100,000 rows.
        """
        ids = list(dict.fromkeys(int(r) for r in run_ids))
        out: Dict[int, List[Measurement]] = {rid: [] for rid in ids}
        if not ids:
            return out
        m = schema.measurements
        cols = [m.c.run_id, m.c.seq, m.c.benchmark, sa.type_coerce(m.c.params, sa.Text), m.c.metric, m.c.unit,
                sa.type_coerce(m.c.detail, sa.Text)] + [m.c[k] for k in STAT_FIELDS]
        stmt = sa.select(*cols).where(m.c.run_id.in_(ids)).order_by(m.c.run_id, m.c.seq)
        if benchmark:
            stmt = stmt.where(m.c.benchmark == benchmark)
        if metric:
            stmt = stmt.where(m.c.metric == metric)
        with self._read() as conn:
            rows = conn.execute(stmt).fetchall()
        parsed: Dict[str, Dict[str, Any]] = {}
        for row in rows:
            run_id, seq, bench, params_text, metric_name, unit, detail_text = row[:7]
            if isinstance(params_text, str):
                params = parsed.get(params_text)
                if params is None:
                    params = parsed[params_text] = _json_value(params_text) or {}
            else:  # drivers such as psycopg2 decode JSON columns themselves
                params = params_text or {}
            out[run_id].append(
                Measurement(
                    benchmark=bench,
                    params=dict(params),
                    metric=metric_name,
                    unit=unit,
                    detail=_json_value(detail_text),
                    run_id=run_id,
                    seq=seq,
                    **dict(zip(STAT_FIELDS, row[7:])),
                )
            )
        return out

    def load(self, ref: Union[int, str], benchmark: Optional[str] = None) -> RunData:
        """A run with its measurements and hosts: what analysis functions take."""
        run = self.get_run(ref)
        return RunData(run, self.measurements(run.id, benchmark=benchmark), self.hosts(run.id),
                       self.artifacts(run.id, HOST_PROBE), name=run.name, store=self)

    def load_runs(self, refs: Iterable[Union[int, str]]) -> List[RunData]:
        """Runs by id/uuid/'last' loaded together (a report's runs): measurements in one query,
        each with its place (``index``) and a name unique among them; a run named twice is loaded once."""
        return self.loaded(self.get_runs(refs))

    def loaded(self, runs: Sequence[Run], hosts: bool = True) -> List[RunData]:
        """Already found runs loaded together (see ``load_runs``); without their hosts and host
        probes (one query in all, for a history over many runs) when `hosts` is False."""
        measurements = self.measurements_by_run([r.id for r in runs])
        return [RunData(run, measurements.get(run.id, []), self.hosts(run.id) if hosts else [],
                        self.artifacts(run.id, HOST_PROBE) if hosts else [], index=index, name=name, store=self)
                for index, (run, name) in enumerate(zip(runs, unique_names(runs)))]

    def count_measurements(self, run_id: int) -> int:
        m = schema.measurements
        with self._read() as conn:
            return conn.execute(sa.select(sa.func.count()).where(m.c.run_id == run_id)).scalar() or 0

    def hosts(self, run_id: int) -> List[Host]:
        h = schema.hosts
        with self._read() as conn:
            rows = conn.execute(sa.select(h).where(h.c.run_id == run_id).order_by(h.c.hostname)).fetchall()
        return [Host(hostname=r._mapping["hostname"], digest=r._mapping["digest"], facts=r._mapping["facts"]) for r in rows]

    # -- baselines ---------------------------------------------------------------------

    def set_baseline(self, name: str, refs: Union[int, str, Sequence[Union[int, str]]], note: Optional[str] = None) -> Baseline:
        """Name run(s) `refs` as baseline `name` (replacing what the name stood for before)."""
        name = str(name).strip()
        if not name:
            raise StoreError("a baseline needs a name")
        refs = [refs] if isinstance(refs, (int, str)) else list(refs)
        run_ids = list(dict.fromkeys(self.get_run(ref).id for ref in refs))
        if not run_ids:
            raise StoreError(f"baseline '{name}' needs at least one run")
        b = schema.baselines
        created = now()
        with self._write() as conn:
            conn.execute(b.delete().where(b.c.name == name))
            conn.execute(b.insert(), [dict(name=name, run_id=rid, position=i, created=created, note=note)
                                      for i, rid in enumerate(run_ids)])
        return Baseline(name=name, run_ids=run_ids, created=created, note=note)

    def baselines(self) -> List[Baseline]:
        b = schema.baselines
        with self._read() as conn:
            rows = conn.execute(sa.select(b).order_by(b.c.name, b.c.position)).fetchall()
        out: Dict[str, Baseline] = {}
        for r in rows:
            m = r._mapping
            found = out.setdefault(m["name"], Baseline(m["name"], [], m["created"], m["note"]))
            found.run_ids.append(m["run_id"])
        return list(out.values())

    def baseline(self, name: str) -> Baseline:
        """A baseline by name; StoreError naming the known ones otherwise."""
        found = {b.name: b for b in self.baselines()}
        if name in found:
            return found[name]
        known = ", ".join(found) or "none yet"
        raise StoreError(f"no baseline '{name}' in {self.where} (baselines: {known}; set one with "
                         "'fabricbench baseline set NAME RUN')")

    # -- Slurm jobs --------------------------------------------------------------------

    def add_slurm_job(self, job_id: str, cluster: Optional[str], command: str, script: Optional[str],
                      output: Optional[str], options: Dict[str, Any], state: Optional[str] = "PENDING") -> SlurmJob:
        values = dict(job_id=str(job_id), cluster=cluster, submitted=now(), command=command, script=script,
                      output=output, options=dict(options), state=state, run_id=None)
        with self._write() as conn:
            row_id = conn.execute(schema.slurm_jobs.insert().values(**values)).inserted_primary_key[0]
        return SlurmJob(id=row_id, **values)

    def link_slurm_job(self, job_id: str, cluster: Optional[str], run_id: int) -> bool:
        """Note that Slurm job `job_id` produced run `run_id` (its latest run); False if it was not submitted here."""
        j = schema.slurm_jobs
        stmt = j.update().where(j.c.job_id == str(job_id))
        if cluster:
            stmt = stmt.where(sa.or_(j.c.cluster == cluster, j.c.cluster.is_(None)))
        with self._write() as conn:
            return conn.execute(stmt.values(run_id=run_id, state="RUNNING")).rowcount > 0

    def set_slurm_job_states(self, states: Dict[int, str]) -> None:
        """The state Slurm last reported, by row id."""
        if not states:
            return
        j = schema.slurm_jobs
        with self._write() as conn:
            for row_id, state in states.items():
                conn.execute(j.update().where(j.c.id == row_id).values(state=state))

    def slurm_jobs(self, limit: Optional[int] = None) -> List[SlurmJob]:
        """Submitted jobs, newest first."""
        j = schema.slurm_jobs
        query = sa.select(j).order_by(j.c.id.desc())
        if limit:
            query = query.limit(limit)
        with self._read() as conn:
            rows = conn.execute(query).fetchall()
        return [SlurmJob(**{k: v for k, v in r._mapping.items()}) for r in rows]

    def artifacts(self, run_id: int, name: str) -> List[Any]:
        """Every artifact `name` of the run, oldest first (a name a run adds more than once)."""
        a = schema.artifacts
        with self._read() as conn:
            rows = conn.execute(
                sa.select(a.c.data).where(a.c.run_id == run_id, a.c.name == name).order_by(a.c.id)
            ).fetchall()
        return [r[0] for r in rows]

    def artifact(self, run_id: int, name: str) -> Any:
        a = schema.artifacts
        with self._read() as conn:
            row = conn.execute(
                sa.select(a.c.data).where(a.c.run_id == run_id, a.c.name == name).order_by(a.c.id.desc())
            ).first()
        return row[0] if row else None


def _new_run_values(kind, label, tags, command, provenance, ranks, status, message=None) -> Dict[str, Any]:
    return dict(
        uuid=str(_uuid.uuid4()),
        created=now(),
        label=label,
        tags=dict(tags or {}),
        kind=kind,
        command=command,
        tool_version=__version__,
        status=status,
        message=message,
        ranks=ranks,
        provenance=dict(provenance or {}),
    )


def _json_value(text: Any) -> Any:
    if text is None or isinstance(text, (dict, list)):
        return text
    return json.loads(text)


def _run_from_row(row) -> Run:
    d = dict(row._mapping)
    return Run(
        id=d["id"],
        uuid=d["uuid"],
        created=d["created"],
        label=d["label"],
        tags=d["tags"] or {},
        kind=d["kind"],
        command=d["command"],
        tool_version=d["tool_version"],
        status=d["status"],
        message=d["message"],
        finished=d["finished"],
        ranks=d["ranks"],
        provenance=d["provenance"] or {},
    )


class _ErrorTranslation:
    """Turns driver errors (a corrupt file, a locked or unreachable server) into StoreError."""

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, sa.exc.DBAPIError):
            lines = str(getattr(exc, "orig", exc)).strip().splitlines()
            detail = lines[0] if lines else type(exc).__name__
            where = self.store.where
            if "not a database" in detail or "malformed" in detail:
                raise StoreError(f"{where} is not a readable fabricbench database ({detail})") from None
            if "disk is full" in detail or "No space left" in detail:
                raise StoreError(f"cannot write to database {where}: the disk is full") from None
            if "readonly database" in detail or "read-only" in detail:
                raise StoreError(f"cannot write to database {where}: it is read-only") from None
            raise StoreError(f"database {where}: {detail}") from None
        return False


class _Guarded:
    """A connection or transaction context whose driver errors become StoreError."""

    def __init__(self, store: Store, ctx):
        self.translation = _ErrorTranslation(store)
        self.ctx = ctx

    def __enter__(self):
        try:
            return self.ctx.__enter__()
        except BaseException as exc:
            self.translation.__exit__(type(exc), exc, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            suppressed = self.ctx.__exit__(exc_type, exc, tb)
        except BaseException as inner:
            self.translation.__exit__(type(inner), inner, None)
            raise
        self.translation.__exit__(exc_type, exc, tb)
        return suppressed


QUICK_CHECK_MAX_BYTES = 1 << 30


def quick_check_max_bytes() -> int:
    """Largest SQLite file checked before writing (FABRICBENCH_QUICK_CHECK_MAX_MB, default 1024 MB)."""
    text = os.environ.get("FABRICBENCH_QUICK_CHECK_MAX_MB")
    try:
        return int(float(text) * 1e6) if text else QUICK_CHECK_MAX_BYTES
    except ValueError:
        return QUICK_CHECK_MAX_BYTES


def _quick_check(store: "Store", path: Path) -> List[str]:
    """What ``pragma quick_check`` finds wrong in `path` (empty when it is sound)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return []  # cannot open read-only here: the write itself says why
    try:
        rows = conn.execute("pragma quick_check(20)").fetchall()
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return []  # another writer holds it; its own checks apply
        return [text]
    finally:
        conn.close()
    found = [str(r[0]) for r in rows]
    return [] if found == ["ok"] else found


def _check_is_file(path: Path) -> None:
    """A database path that exists must be a regular file (or a link to one)."""
    if path.is_dir():
        raise StoreError(f"database {path} is a directory, not a database file: give a file path "
                         f"(e.g. --db {path / 'results.db'})")
    if path.exists() and not path.is_file():
        raise StoreError(f"database {path} is not a regular file (a device, FIFO or socket): give a file path")


def _why_read_only(path: Path) -> Optional[str]:
    """Why the SQLite file `path` (or its folder, where SQLite keeps -wal and -shm files) cannot be written;
    None if it can, or if it does not exist yet (StoreError when it cannot be made there)."""
    folder = path.parent
    why = None
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            why = "read-only file system"
    except OSError:
        return None  # no folder yet: Store makes it
    if why is None and path.exists() and not os.access(path, os.W_OK):
        why = "the file is not writable"
    if why is None and not os.access(folder, os.W_OK | os.X_OK):
        why = f"its folder {folder} is not writable"
    if why is not None and not path.exists():
        raise StoreError(f"no database at {path}, and none can be made there ({why})")
    return why


def open_db(url: Optional[str] = None, migrate: bool = False) -> Store:
    """Open (creating if needed) the results database at `url` (a URL or a SQLite file path)."""
    store = Store(as_url(url) if url else default_url())
    store.prepare(migrate=migrate)
    return store
