"""The command line: thin; each module here parses one family of commands, calls, prints."""
from __future__ import annotations

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

# Where each command is defined: running one imports only its module, so that `fabricbench runs`
# does not pay for the modules of `fabric`, `transfer`, ... A command missing here still works
# (every module is imported to find it); `--help` imports them all to list them.
COMMAND_HOMES = {
    "run": "measure",
    "runs": "results", "show": "results", "export": "results", "db": "results",
    "report": "report", "fabrics": "report",
    "lab": "lab",
    "import": "imports",
    "profile": "profile", "show-profile": "profile",
    "health": "health",
    "scale": "scaling", "import-scaling": "scaling", "scaling-report": "scaling",
    "app": "apps", "study": "apps",
    "hpcc": "hpcc",
    "fabric": "fabric",
    "transfer": "transfer",
    "compare": "compare", "check": "compare",
    "baseline": "baseline",
    "history": "history",
    "lint": "lint",
    "model": "model",
    "predict": "predict",
    "submit": "submit", "jobs": "submit",
}

main.lazy_commands(__name__, COMMAND_MODULES, COMMAND_HOMES)

__all__ = ["main"]
