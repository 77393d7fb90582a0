"""The results database schema (SQLAlchemy Core), one definition for SQLite and PostgreSQL.

A run owns its measurements (long format: one row per benchmark point and metric), the
provenance of each of its hosts, and named artifacts (an MPI profile, a study's raw data).
A baseline is a name given to a run that later runs are checked against. A Slurm job
submitted by `fabricbench submit` is remembered with the run it produced.
"""
from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

SCHEMA_VERSION = 4

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, nullable=False),
)

def _of_a_run(name: str, *columns: Column) -> Table:
    """A table whose rows belong to one run each (numbered; deleted with the run)."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        *columns,
    )


runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("created", String(32), nullable=False),  # ISO 8601, UTC
    Column("finished", String(32)),
    Column("label", Text),
    Column("tags", JSON, nullable=False),
    Column("kind", String(32), nullable=False),  # benchmark, import, profile, scaling, hpcc, health
    Column("command", Text),
    Column("tool_version", String(32), nullable=False),
    Column("status", String(16), nullable=False),  # running, complete, failed, interrupted
    Column("message", Text),
    Column("ranks", Integer),
    Column("provenance", JSON, nullable=False),
)

measurements = _of_a_run(
    "measurements",
    Column("seq", Integer, nullable=False),
    Column("benchmark", String(64), nullable=False),
    Column("size", Integer),  # params["size"] when present, for ordering and filtering
    Column("params", JSON, nullable=False),
    Column("metric", String(32), nullable=False),
    Column("unit", String(16), nullable=False),
    Column("n", Integer),
    Column("iterations", Integer),
    Column("value", Float),
    Column("min", Float),
    Column("median", Float),
    Column("mean", Float),
    Column("p99", Float),
    Column("max", Float),
    Column("stdev", Float),
    Column("detail", JSON),
)
Index("ix_measurements_run", measurements.c.run_id, measurements.c.benchmark, measurements.c.seq)

hosts = _of_a_run(
    "hosts",
    Column("hostname", String(255), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("facts", JSON, nullable=False),
)
Index("ix_hosts_run", hosts.c.run_id)

artifacts = _of_a_run(
    "artifacts",
    Column("name", String(64), nullable=False),
    Column("data", JSON, nullable=False),
)
Index("ix_artifacts_run", artifacts.c.run_id, artifacts.c.name)

baselines = Table(  # one row per run of a baseline (several runs: replicates of one configuration)
    "baselines",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, nullable=False),  # the order the runs were given in
    Column("created", String(32), nullable=False),  # ISO 8601, UTC: when the name was (re)set
    Column("note", Text),
)

slurm_jobs = Table(  # jobs `fabricbench submit` handed to Slurm; the run is linked when the job starts it
    "slurm_jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(64), nullable=False),  # Slurm's job id ("1234")
    Column("cluster", String(128)),  # Slurm's cluster name, when known (job ids repeat across clusters)
    Column("submitted", String(32), nullable=False),  # ISO 8601, UTC
    Column("command", Text, nullable=False),  # the fabricbench command the job runs
    Column("script", Text),  # path of the sbatch script
    Column("output", Text),  # path of the job's stdout/stderr file
    Column("options", JSON, nullable=False),  # partition, time, nodes, ... as asked
    Column("state", String(32)),  # the last state Slurm reported (PENDING, RUNNING, COMPLETED, CANCELLED, ...)
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="SET NULL")),
)
Index("ix_slurm_jobs_job", slurm_jobs.c.job_id)
