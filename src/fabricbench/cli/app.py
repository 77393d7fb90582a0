"""The `fabricbench` command group and what every command shares: the database, output, errors."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import click

from fabricbench import __version__
from fabricbench.cli.output import console, err_console, printable, safe_markup  # noqa: F401 - the consoles every command prints through
from fabricbench.errors import FabricbenchError, UsageError



class NoDatabase(FabricbenchError):
    """A command that only reads was pointed at a database that does not exist (nothing is created)."""


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

    def sqlite_file(self) -> Optional[Path]:
        """The SQLite file the URL names (None for a server database or memory)."""
        import sqlalchemy as sa

        from fabricbench.store.db import StoreError, shown_url

        try:
            url = sa.engine.make_url(self.url)
        except (sa.exc.ArgumentError, ValueError) as exc:
            raise StoreError(f"database URL {shown_url(self.url)} cannot be used: {exc}") from None
        if not url.drivername.startswith("sqlite") or not url.database or url.database == ":memory:":
            return None
        return Path(url.database)

    @property
    def reader(self):
        """The database for a command that only reads: never created, nor its folder."""
        return self.read()

    def read(self, ref: Any = None):
        """The database for a command that only reads (about run `ref`): never created, nor its folder."""
        path = self.sqlite_file()
        if path is not None and not path.exists():  # a directory or a device there: the store says so
            what = f"no run '{ref}': " if ref is not None else ""
            raise NoDatabase(
                f"{what}no results database at {path}: nothing has been measured or imported there "
                "(choose one with --db or FABRICBENCH_DB; 'fabricbench db path' shows the default)"
            )
        return self.store


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.(?=\s|$)")


def summary_line(cmd: click.Command) -> str:
    """A command's line in the command list: its short help, else the whole first sentence."""
    if cmd.short_help:
        return cmd.short_help
    text = (cmd.help or "").split("\n\n")[0].replace("\b\n", " ")
    text = " ".join(text.split())
    m = _SENTENCE_END.search(text)
    return text[: m.start()] if m else text


def error_line(message: Any) -> None:
    """One line on stderr: 'error: ...', controls escaped; nothing when the terminal went away (SIGHUP)."""
    try:
        err_console.print(f"[bold red]error:[/] {safe_markup(message)}", highlight=False, soft_wrap=True)
    except OSError:
        pass


def warning_line(message, category=None, filename=None, lineno=None, file=None, line=None) -> None:
    """A library's warning (matplotlib, numpy, ...) as one line on stderr, controls escaped:
    'warning: ...' rather than Python's two lines with the file name and the raw text."""
    try:
        err_console.print(f"[yellow]warning:[/] {safe_markup(str(message))}", highlight=False, soft_wrap=True)
    except OSError:
        pass


class FabricbenchGroup(click.Group):
    """Turns a FabricbenchError anywhere below into one line on stderr and its exit status.

    SIGINT, SIGTERM (scancel, timeout) and SIGHUP (a closed terminal) stop a command the
    same way: the job is stopped, the run marked interrupted with its points, and the exit
    status is 128 + the signal (130, 143, 129).
    Lists commands with their whole first sentence; shows user input in click's own errors escaped.
    """

    group_class = type  # subgroups (lab, db) behave the same
    _package: Optional[str] = None  # with lazy_commands: the package of the command modules
    _modules: Tuple[str, ...] = ()
    _homes: Dict[str, str] = {}

    def lazy_commands(self, package: str, modules: Tuple[str, ...], homes: Dict[str, str]) -> None:
        """Import the modules defining the commands (each attaches its commands on import) only
        when a command is looked up: the one module `homes` names for it, else all of them."""
        self._package, self._modules, self._homes = package, tuple(modules), dict(homes)

    def _import_module(self, name: str) -> None:
        import importlib

        try:
            importlib.import_module(f"{self._package}.{name}")
        except ModuleNotFoundError as exc:  # a family not built yet
            if exc.name != f"{self._package}.{name}":
                raise

    def _import_all(self) -> None:
        for name in self._modules:
            self._import_module(name)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in self.commands and self._package is not None:
            home = self._homes.get(cmd_name)
            if home is not None:
                self._import_module(home)
            if cmd_name not in self.commands:
                self._import_all()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> List[str]:
        if self._package is not None:
            self._import_all()
        return super().list_commands(ctx)

    def invoke(self, ctx):
        import warnings

        from fabricbench.launch.procs import stop_cause, stop_signals

        warnings.showwarning = warning_line
        try:
            with stop_signals():
                return super().invoke(ctx)
        except FabricbenchError as exc:
            error_line(exc)
            ctx.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.message = printable(exc.message)
            raise
        except KeyboardInterrupt as exc:  # before any run was created
            cause = stop_cause(exc)
            error_line(f"interrupted by {cause.name}")
            ctx.exit(cause.exit_code)
        except BrokenPipeError:  # `fabricbench runs --json | head`: the reader is gone; exit 1 quietly, as rich does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(1)
        except OSError as exc:  # the machine said no (a full disk, a read-only folder): one line, not a traceback
            where = f": {exc.filename}" if exc.filename else ""
            error_line(f"{exc.strerror or exc}{where}")
            ctx.exit(1)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as exc:
            exc.message = printable(exc.message)
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, summary_line(cmd)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=FabricbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    "db_url",
    envvar="FABRICBENCH_DB",
    metavar="URL",
    help="Results database: a SQLite file path or a SQLAlchemy URL (postgresql://...). "
    "Default: results.db in the user data directory (see 'fabricbench db path'); also FABRICBENCH_DB.",
)
@click.version_option(__version__, prog_name="fabricbench")
@click.pass_context
def main(ctx: click.Context, db_url: Optional[str]) -> None:
    """Measure, profile, model and compare HPC interconnects."""
    ctx.obj = State(db_url)


pass_state = click.make_pass_decorator(State)


def parse_tags(values: Tuple[str, ...]) -> Dict[str, str]:
    """key=value pairs from repeated --tag options; a fabric= value must be one the peak catalog knows."""
    tags: Dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise UsageError(f"bad tag '{item}': tags are key=value, e.g. --tag fabric=edr --tag site=lab")
        tags[key] = value.strip()
    from fabricbench.analysis.peaks import check_fabric_tags

    check_fabric_tags(tags)
    return tags


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


label_option = click.option("--label", help="A short name for this run, used in listings and legends.")
tag_option = click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run (repeatable), e.g. fabric=edr.")
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
