"""The `fabricbench` command group and what every command shares: the database, output, errors."""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional, Tuple

import click
from rich.console import Console

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
        if self._store is None:
            from fabricbench.store import open_db

            self._store = open_db(self.url)
        return self._store


class FabricbenchGroup(click.Group):
    """Turns a FabricbenchError anywhere below into one line on stderr and its exit status."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FabricbenchError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True, soft_wrap=True)
            ctx.exit(exc.exit_code)


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
