"""Baselines on PostgreSQL: set, replace, list, removed with their run, and the migration to schema 3."""
import sqlalchemy as sa
from test_postgres import pg_url  # noqa: F401,F811 - the private server fixture

from fabricbench.store.schema import SCHEMA_VERSION
from fabricbench.store import Measurement, StoreError, open_db


def test_baselines_on_postgresql(pg_url):  # noqa: F811
    db = open_db(pg_url)
    runs = [db.save_run([Measurement("bw", {"size": 8}, "bandwidth", "MB/s", value=v)], label=f"r{v}") for v in (1.0, 2.0)]
    db.set_baseline("edr", runs[0].id, note="first")
    db.set_baseline("edr", runs[1].id)
    assert [(b.name, b.run_ids, b.note) for b in db.baselines()] == [("edr", [runs[1].id], None)]
    db.set_baseline("both", [runs[1].id, runs[0].id])
    assert db.baseline("both").run_ids == [runs[1].id, runs[0].id]
    db.delete_run(runs[0].id)
    assert db.baseline("both").run_ids == [runs[1].id]
    db.delete_run(runs[1].id)
    assert db.baselines() == []
    runs[0] = db.save_run([Measurement("bw", {"size": 8}, "bandwidth", "MB/s", value=1.0)], label="r3")
    try:
        db.baseline("edr")
    except StoreError as exc:
        assert "no baseline 'edr'" in str(exc)
    else:
        raise AssertionError("an unknown baseline must raise")
    with db._writer.begin() as conn:
        conn.execute(sa.text("DROP TABLE baselines"))
        conn.execute(sa.text("UPDATE schema_version SET version = 2"))
    migrated = open_db(pg_url, migrate=True)
    assert migrated.schema_version() == SCHEMA_VERSION
    assert migrated.set_baseline("again", runs[0].id).run_ids == [runs[0].id]
