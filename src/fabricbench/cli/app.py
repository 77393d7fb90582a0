"""The `fabricbench` command group and what every command shares: the database, output, errors."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Optional, Tuple

import click
from rich.console import Console
from rich.markup import escape

from fabricbench import __version__
from fabricbench.errors import FabricbenchError, UsageError

console = Console()
err_console = Console(stderr=True)


class State:
    """Per-invocation state: which database, opened on first use."""

    def __init__(self, db_url: Optional[str]):
        self.db_url = db_url
        self._store = None

    @property
    def url(self) -> str:
        from fabricbench.store import as_url, default_url

        return as_url(self.db_url) if self.db_url else default_url()

    @property
    def store(self):
        """The database, opened on first use; runs a dead fabricbench process left `running` are marked failed."""
        if self._store is None:
            from fabricbench.store import open_db
            from fabricbench.workflows.session import recover_abandoned

            self._store = open_db(self.url)
            for run_id in recover_abandoned(self._store):
                err_console.print(f"note: run {run_id} was left running by a fabricbench process that ended "
                                  "without finishing it; it is now marked failed", highlight=False, soft_wrap=True)
        return self._store


class FabricbenchGroup(click.Group):
    """Turns a FabricbenchError anywhere below into one line on stderr and its exit status.

    SIGINT, SIGTERM (scancel, timeout) and SIGHUP (a closed terminal) stop a command the
    same way: the job is stopped, the run marked interrupted with its points, and the exit
    status is 128 + the signal (130, 143, 129).
    """

    def invoke(self, ctx):
        from fabricbench.launch.procs import stop_cause, stop_signals

        try:
            with stop_signals():
                return super().invoke(ctx)
        except FabricbenchError as exc:
            _error(str(exc))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:  # before any run was created
            cause = stop_cause(exc)
            _error(f"interrupted by {cause.name}")
            ctx.exit(cause.exit_code)
        except BrokenPipeError:  # `fabricbench runs --json | head`: the reader is gone; exit 1 quietly, as rich does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(1)
        except OSError as exc:  # the machine said no (a full disk, a read-only folder): one line, not a traceback
            where = f": {exc.filename}" if exc.filename else ""
            _error(f"{exc.strerror or exc}{where}")
            ctx.exit(1)


def _error(message: str) -> None:
    try:
        err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    except OSError:  # the terminal went away (SIGHUP)
        pass


@click.group(cls=FabricbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    "db_url",
    envvar="FABRICBENCH_DB",
    metavar="URL",
    help="Results database: a SQLite file path or a SQLAlchemy URL (postgresql://...). "
    "Default: results.db in the user data directory; also FABRICBENCH_DB.",
)
@click.version_option(__version__, prog_name="fabricbench")
@click.pass_context
def main(ctx: click.Context, db_url: Optional[str]) -> None:
    """Measure, profile, model and compare HPC interconnects."""
    ctx.obj = State(db_url)


pass_state = click.make_pass_decorator(State)


def parse_tags(values: Tuple[str, ...]) -> Dict[str, str]:
    """key=value pairs from repeated --tag options."""
    tags: Dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise UsageError(f"bad tag '{item}': tags are key=value, e.g. --tag fabric=edr --tag site=lab")
        tags[key] = value.strip()
    return tags


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


label_option = click.option("--label", help="A short name for this run, used in listings and legends.")
tag_option = click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run (repeatable), e.g. fabric=edr.")
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
