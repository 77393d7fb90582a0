"""The store's error, apart from the database code: catching it must not import SQLAlchemy."""
from fabricbench.errors import FabricbenchError


class StoreError(FabricbenchError):
    """The database cannot be opened, is too new, is corrupt, or a run does not exist."""
