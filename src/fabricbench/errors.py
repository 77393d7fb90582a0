"""The one error type the command line turns into a single clear message and an exit status."""


class FabricbenchError(Exception):
    """An error the user can act on; str(error) is the whole message."""

    exit_code = 1


class UsageError(FabricbenchError):
    """Bad arguments: an unknown benchmark, suite, tag syntax, ..."""

    exit_code = 2
