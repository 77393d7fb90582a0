"""The layers hold: each check reads the source tree (docs/architecture.md names the homes)."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "fabricbench"


def _imports(path: Path):
    """(line, module, names) of every import in a file, top level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                package = path.relative_to(SRC.parent).parent.parts
                base = ".".join(package[:len(package) - node.level + 1] + ((base,) if base else ()))
            yield node.lineno, base, [a.name for a in node.names]


def _modules(*parts: str):
    for part in parts:
        yield from sorted((SRC / part).rglob("*.py")) if (SRC / part).is_dir() else [SRC / part]


def test_subprocess_is_imported_only_where_processes_start():
    allowed = {SRC / "lab" / "system.py"}
    found = [f"{p.relative_to(SRC)}:{line}" for p in _modules(".")
             for line, module, _ in _imports(p)
             if module.split(".")[0] == "subprocess" and "launch" not in p.relative_to(SRC).parts[:1]
             and p not in allowed]
    assert not found, f"subprocess imported outside launch/ and lab/system.py: {found}"


def test_report_imports_nothing_from_workflows_or_store_beyond_the_loaded_run():
    found = []
    for p in _modules("report"):
        for line, module, names in _imports(p):
            where = f"{p.relative_to(SRC)}:{line}"
            if module.startswith("fabricbench.workflows"):
                found.append(f"{where} imports {module}")
            elif module.startswith("fabricbench.store"):
                extra = [n for n in names if n != "RunData"] if module == "fabricbench.store" else [module]
                if extra or not names:
                    found.append(f"{where} imports {module} {', '.join(extra)}".rstrip())
    assert not found, "report/ renders what it is given (a loaded run, store.RunData): " + "; ".join(found)


def test_report_sections_never_fit():
    """Sections get fitted models (ctx.models, fitted by the builder before any section renders)."""
    found = [f"{p.relative_to(SRC)}:{line} imports {', '.join(names)}"
             for p in _modules("report/sections", "report/plots", "report/context.py", "report/blocks.py")
             for line, module, names in _imports(p)
             if module.startswith("fabricbench.models") and any(n.startswith("fit_") for n in names)]
    assert not found, "; ".join(found)


def test_launch_and_native_do_not_import_each_other_in_a_circle():
    native = [m for _, m, _ in _imports(SRC / "native.py")]
    assert not [m for m in native if m.startswith("fabricbench.launch")], native


def test_report_sections_take_their_benchmarks_from_the_engines_table():
    from fabricbench.report.sections import discover
    from fabricbench.suite import BENCHMARKS, family

    claimed = {m.name: m.benchmarks for m in discover()}
    assert claimed["collectives"] == {n for n, s in BENCHMARKS.items() if s.family == "collective"}
    assert claimed["hpcc_network"] == set(family("hpcc")) and claimed["message_rate"] == {"mbw_mr"}
    assert claimed["latency"] == {"latency", "multi_lat"} and claimed["bandwidth"] == {"bw", "bibw"}
    assert family("pt2pt", metric=("bandwidth", "bibandwidth")) == ("bw", "bibw", "mbw_mr")


def test_one_registry_for_launchers_importers_apps_and_sections():
    import pytest

    from fabricbench.apps import RECIPES
    from fabricbench.errors import UsageError
    from fabricbench.importers import IMPORTERS
    from fabricbench.launch.base import LAUNCHERS, LaunchError
    from fabricbench.registry import Registry
    from fabricbench.report.sections import SECTIONS

    assert all(isinstance(r, Registry) for r in (RECIPES, IMPORTERS, LAUNCHERS, SECTIONS))
    assert {"mpirun", "srun", "lab"} <= set(LAUNCHERS.names()) and "osu" in IMPORTERS.names()
    assert "lammps-lj" in RECIPES.names() and "bandwidth" in SECTIONS.names()
    with pytest.raises(LaunchError, match="unknown launcher 'nope'; choose one of: lab, mpirun, srun"):
        LAUNCHERS.get("nope")
    with pytest.raises(UsageError, match="unknown import format 'nope'; choose one of: osu, "):
        IMPORTERS.get("nope")


def test_launch_turns_a_timeout_into_the_projects_own_error():
    import pytest

    from fabricbench.launch.procs import PROCESS_ERRORS, ProcessTimeout, run_short

    with pytest.raises(ProcessTimeout) as caught:
        run_short(["sleep", "5"], timeout=0.1)
    assert isinstance(caught.value, PROCESS_ERRORS) and caught.value.timeout == 0.1
