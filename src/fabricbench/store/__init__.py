"""The results database: runs with their measurements, hosts and artifacts."""
from fabricbench.store.db import RUN_STATUSES, Store, StoreError, as_url, default_url, open_db
from fabricbench.store.records import HOST_PROBE, Baseline, Host, Measurement, Run, RunData, SlurmJob, to_dataframe

__all__ = ["open_db", "Store", "StoreError", "default_url", "as_url", "RUN_STATUSES", "Run", "RunData", "HOST_PROBE", "Baseline", "SlurmJob", "Measurement", "Host", "to_dataframe"]
