"""fabricbench: measure, profile, model and compare HPC interconnects."""
__version__ = "0.1.0"

from fabricbench.store import open_db, to_dataframe  # noqa: E402  (the Python API)

__all__ = ["open_db", "to_dataframe", "__version__"]
