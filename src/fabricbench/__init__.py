"""fabricbench: measure, profile, model and compare HPC interconnects."""
__version__ = "0.1.0"

__all__ = ["open_db", "to_dataframe", "__version__"]


def __getattr__(name: str):
    """The Python API (`fabricbench.open_db`, `fabricbench.to_dataframe`), imported on first use:
    the store pulls in SQLAlchemy, which `fabricbench --help` and `--version` never need."""
    if name in ("open_db", "to_dataframe"):
        from fabricbench import store

        return getattr(store, name)
    raise AttributeError(f"module 'fabricbench' has no attribute {name!r}")
