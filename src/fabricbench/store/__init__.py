"""The results database: runs with their measurements, hosts and artifacts."""
from fabricbench.store.errors import StoreError
from fabricbench.store.records import HOST_PROBE, Baseline, Host, Measurement, Run, RunData, SlurmJob, to_dataframe

__all__ = ["open_db", "Store", "StoreError", "default_url", "as_url", "RUN_STATUSES", "Run", "RunData", "HOST_PROBE", "Baseline", "SlurmJob", "Measurement", "Host", "to_dataframe"]

# The database half (SQLAlchemy) is imported on first use of one of these names, so that a module
# needing only the record types (and every command's start-up) does not pay for SQLAlchemy.
_FROM_DB = ("RUN_STATUSES", "Store", "as_url", "default_url", "open_db")


def __getattr__(name: str):
    if name in _FROM_DB:
        from fabricbench.store import db

        return getattr(db, name)
    raise AttributeError(f"module 'fabricbench.store' has no attribute {name!r}")
