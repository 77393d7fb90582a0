"""Schema migrations: each step takes a database from version N to N+1 inside one transaction.

Version 1 (fabricbench 0.0.x development builds) had runs and measurements only;
version 2 added per-host provenance, artifacts, and the run kind; version 3 named
baselines (``baseline set NAME RUN``); version 4 Slurm jobs submitted with ``fabricbench submit``.
"""
from __future__ import annotations

from typing import Callable, Dict

from sqlalchemy import text
from sqlalchemy.engine import Connection

from fabricbench.store import schema


def _v1_to_v2(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE runs ADD COLUMN kind VARCHAR(32) NOT NULL DEFAULT 'benchmark'"))
    schema.hosts.create(conn)
    schema.artifacts.create(conn)


def _v2_to_v3(conn: Connection) -> None:
    schema.baselines.create(conn)


def _v3_to_v4(conn: Connection) -> None:
    schema.slurm_jobs.create(conn, checkfirst=True)


STEPS: Dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def migrate(conn: Connection, current: int) -> int:
    """Apply every step from `current` to schema.SCHEMA_VERSION; returns the new version."""
    version = current
    while version < schema.SCHEMA_VERSION:
        STEPS[version](conn)
        version += 1
    schema.schema_version.create(conn, checkfirst=True)  # version 1 had no version table
    conn.execute(schema.schema_version.delete())
    conn.execute(schema.schema_version.insert().values(version=version))
    return version
