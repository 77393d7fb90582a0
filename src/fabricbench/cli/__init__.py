"""The command line: thin; each module here parses one family of commands, calls, prints."""
from __future__ import annotations

import importlib

from fabricbench.cli.app import main

# One module per command family; each attaches its commands to `main` on import.
COMMAND_MODULES = (
    "measure",
    "results",
    "report",
    "lab",
    "imports",
    "profile",
    "health",
    "scaling",
    "apps",
    "hpcc",
    "fabric",
    "transfer",
    "compare",
    "baseline",
    "history",
    "lint",
    "model",
    "predict",
    "submit",
)

for _name in COMMAND_MODULES:
    try:
        importlib.import_module(f"fabricbench.cli.{_name}")
    except ModuleNotFoundError as _exc:  # a family not built yet
        if _exc.name != f"fabricbench.cli.{_name}":
            raise

__all__ = ["main"]
