"""Start-up: the CLI's import and `--help`/`--version` load none of the heavy libraries.

Each check runs in a fresh interpreter (a test process has imported everything already) and
looks at sys.modules; no wall-clock time is asserted (benchmarks/cli_startup.py measures it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

NEVER_AT_START = ("scipy", "matplotlib")
AVOIDED = ("numpy", "sqlalchemy", "jinja2", "pandas")

PROBE = """
import json, sys
from fabricbench.cli import main
args = sys.argv[1:]
if args:
    try:
        main(args, prog_name="fabricbench")
    except SystemExit:
        pass
sys.stderr.write("LOADED " + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})) + "\\n")
"""


def loaded_after(*args: str) -> set:
    """The heavy top-level packages imported by `import fabricbench.cli` and, with args, `fabricbench ARGS`."""
    heavy = set(NEVER_AT_START + AVOIDED)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=heavy), *args], capture_output=True,
                          text=True, env=dict(os.environ, COLUMNS="80"), timeout=300)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, proc.stderr
    return {m.split(".")[0] for m in json.loads(line[-1][len("LOADED "):])}


def test_importing_the_cli_loads_no_scipy_nor_matplotlib():
    loaded = loaded_after()
    assert not loaded & set(NEVER_AT_START), loaded
    assert not loaded & set(AVOIDED), loaded  # none of them is needed to import the command group


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["runs", "--help"], ["show", "--help"]])
def test_help_and_version_load_no_heavy_library(args):
    loaded = loaded_after(*args)
    assert not loaded & set(NEVER_AT_START + AVOIDED), loaded


def test_runs_loads_the_database_but_no_scipy_nor_matplotlib(tmp_path):
    loaded = loaded_after("--db", str(tmp_path / "none.db"), "runs")
    assert not loaded & set(NEVER_AT_START), loaded


def test_a_command_runs_when_its_home_is_not_listed():
    """COMMAND_HOMES only saves time: a command it does not name is still found (all modules imported)."""
    from fabricbench.cli import COMMAND_HOMES, main

    saved = dict(main._homes)
    try:
        main._homes = {}
        from click.testing import CliRunner

        result = CliRunner().invoke(main, ["fabrics", "--help"])
        assert result.exit_code == 0, result.output
        assert "fabrics" in result.output
    finally:
        main._homes = saved
    assert set(COMMAND_HOMES) <= set(main.list_commands(None))


def test_every_command_has_its_home_listed():
    """Each command of the CLI is in COMMAND_HOMES, under the module that defines it."""
    from fabricbench.cli import COMMAND_HOMES, main

    for name in main.list_commands(None):
        cmd = main.get_command(None, name)
        module = cmd.callback.__module__ if cmd.callback else None
        assert module == f"fabricbench.cli.{COMMAND_HOMES.get(name)}", (
            f"command '{name}' is defined in {module}: name its module in COMMAND_HOMES "
            "(src/fabricbench/cli/__init__.py) so that running it imports only that module")
