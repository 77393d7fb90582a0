"""The layers hold (issue 34): greps over the source tree, no run needed.

Each check is its own function so that checks of other parts of the layout can be added
beside them without touching these.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "fabricbench"

# -- numbers and words -------------------------------------------------------------------------

# The one module that writes a number as text, and the deprecated re-export of its old home.
FORMATTER = {"numbers.py", "report/format.py"}
# Modules that cannot import it, and why.
OUTSIDE = {
    "launch/transfer_peer.py": "runs on every node with the standard library only (like the engine)",
}

# A format spec that writes a number: f"{x:.2f}", "{:,}".format(x), format(x, ".3g"), "%.1f" % x.
# Alignment alone ({name:<12}) and character codes ({ord(c):02x}) are not number formatting.
_SPEC = r"[<>^=]?[+-]?#?0?\d*(?:[,_](?:\.\d+)?[deEfFgG%]?|(?:\.\d+)?[deEfFgG%])"
NUMBER_SPEC = re.compile(r"\{[^{}\n]*:" + _SPEC + r"\}"           # f-string or str.format field
                         r"|\bformat\([^()\n]*,\s*[rf]?['\"]" + _SPEC + r"['\"]\)"  # format(x, "spec")
                         r"|%[-+ #0]*\d*(?:\.\d+)?[deEfFgG][^'\"\n]*['\"]\s*%\s")    # "%.2f" % x

# Layers that return numbers and findings; the words are chosen in report/ and cli/.
PURE = ("analysis", "models")

# Modules of analysis/ and models/ that still write sentences with numbers in them (through
# fabricbench.numbers) instead of returning findings that report/ or cli/ word. The list may
# only shrink: a module that no longer needs the formatter must be taken off it.
STILL_WORDING = {
    "analysis/peaks.py",  # names that are data, stored with a run: "lab link shaped to 1 Gb/s", "PCIe Gen3 x16"
}


def _sources(*under: str):
    roots = [SRC / u for u in under] if under else [SRC]
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield path.relative_to(SRC).as_posix(), path.read_text(encoding="utf-8")


def _imports(text: str):
    """Every module name imported by `text` (top level or inside a function)."""
    for m in re.finditer(r"^\s*(?:from\s+(\S+)\s+import\s+([\w, ]+)|import\s+([\w., ]+))", text, re.M):
        if m.group(1):
            base = m.group(1)
            yield base
            for name in m.group(2).split(","):
                yield f"{base}.{name.strip().split(' ')[0]}"
        else:
            for name in m.group(3).split(","):
                yield name.strip().split(" ")[0]


def _absolute(module: str, rel: str) -> str:
    """A relative import ('..report') as the absolute name it means from the file `rel`."""
    if not module.startswith("."):
        return module
    dots = len(module) - len(module.lstrip("."))
    package = ["fabricbench", *rel.split("/")[:-1]]
    base = package[: len(package) - dots + 1]
    rest = module[dots:]
    return ".".join(base + ([rest] if rest else []))


def test_the_number_spec_grammar_is_caught():
    """The grep finds each way Python writes a number spec, and leaves alignment and codes alone."""
    caught = ['f"{x:.2f}"', 'f"{v:,.0f} MB/s"', 'f"{r:.0%}"', 'f"{i:02d}"', 'f"{v:g}"', '"{:,}".format(n)',
              'format(x, ".3g")', '"%.1f s" % t', 'f"{d:+.3g}"', 'f"{x:.3e}"']
    left = ['f"{name:<12}"', 'f"\\\\x{ord(c):02x}"', 'f"{name}"', 'strftime("%Y%m%d-%H%M%S")', '"{a}:{b}"']
    assert [s for s in caught if not NUMBER_SPEC.search(s)] == []
    assert [s for s in left if NUMBER_SPEC.search(s)] == []


def test_no_number_spec_outside_the_formatter():
    """Every number is written by fabricbench.numbers (its named styles), never by a spec inline."""
    found = [f"{rel}:{no}: {line.strip()}" for rel, text in _sources() if rel not in FORMATTER and rel not in OUTSIDE
             for no, line in enumerate(text.splitlines(), 1)
             if NUMBER_SPEC.search(line) and not line.lstrip().startswith("#")]
    assert found == [], "format a number with fabricbench.numbers, not inline:\n" + "\n".join(found)


def test_nothing_imports_the_old_formatter():
    """report/format.py is a deprecated re-export for code merged from before the move."""
    found = [rel for rel, text in _sources() if rel not in FORMATTER
             and any(_absolute(m, rel).startswith("fabricbench.report.format") for m in _imports(text))]
    assert found == []


def test_analysis_and_models_import_nothing_from_report_or_cli():
    """analysis/ and models/ return numbers and findings; they never reach up for words or output."""
    found = [f"{rel}: {m}" for rel, text in _sources(*PURE) for m in _imports(text)
             if _absolute(m, rel).startswith(("fabricbench.report", "fabricbench.cli"))]
    assert found == []


def test_analysis_and_models_word_fewer_numbers():
    """Only the listed modules of analysis/ and models/ still format numbers into sentences; the
    list only shrinks (a module taken off it must not come back)."""
    wording = {rel for rel, text in _sources(*PURE)
               if any(_absolute(m, rel).startswith("fabricbench.numbers") for m in _imports(text))}
    assert sorted(wording - STILL_WORDING) == [], "return a finding and word it in report/ or cli/"
    assert sorted(STILL_WORDING - wording) == [], "no longer formats numbers: take it off STILL_WORDING"


# Upward reaches of report/ into workflows/ that the store/report work of issue 34 removes (the
# replicates query and the stored fabric judgement move below the report). Only shrinks.
REPORT_REACHES_INTO_WORKFLOWS: dict = {}  # none left: the report renders loaded runs (store.RunData)


def test_report_imports_nothing_from_workflows():
    """The report renders what it is given: it never launches, records or queries through workflows/."""
    found = {}
    for rel, text in _sources("report"):
        names = {_absolute(m, rel) for m in _imports(text)}
        up = {n for n in names if n == "fabricbench.workflows" or n.startswith("fabricbench.workflows.")}
        up = {n for n in up if not any(n.startswith(o + ".") for o in up)}  # the module, not its names
        if up:
            found[rel] = up
    assert found == {k: v for k, v in REPORT_REACHES_INTO_WORKFLOWS.items() if k in found}, \
        f"report/ must not import from workflows/: {found}"
    assert set(found) == set(REPORT_REACHES_INTO_WORKFLOWS), "a reach is gone: take it off the list"


# -- one loaded run, processes in launch/, families from the engine's table, one registry -----------

def _ast_imports(path: Path):
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
             for line, module, _ in _ast_imports(p)
             if module.split(".")[0] == "subprocess" and "launch" not in p.relative_to(SRC).parts[:1]
             and p not in allowed]
    assert not found, f"subprocess imported outside launch/ and lab/system.py: {found}"


def test_report_imports_nothing_from_workflows_or_store_beyond_the_loaded_run():
    found = []
    for p in _modules("report"):
        for line, module, names in _ast_imports(p):
            where = f"{p.relative_to(SRC)}:{line}"
            if module.startswith("fabricbench.workflows"):
                found.append(f"{where} imports {module}")
            elif module.startswith("fabricbench.store"):
                extra = [n for n in names if n != "RunData"] if module == "fabricbench.store" else [module]
                if extra or not names:
                    found.append(f"{where} imports {module} {', '.join(extra)}".rstrip())
    assert not found, "report/ renders what it is given (a loaded run, store.RunData): " + "; ".join(found)


def test_report_sections_never_fit():
    """report/ imports no fit_* of models/: the caller fits (cli.report.given_for) and hands the models in."""
    found = [f"{p.relative_to(SRC)}:{line} imports {', '.join(names)}"
             for p in _modules("report")
             for line, module, names in _ast_imports(p)
             if module.startswith("fabricbench.models") and any(n.startswith("fit_") for n in names)]
    assert not found, "; ".join(found)


def test_launch_and_native_do_not_import_each_other_in_a_circle():
    native = [m for _, m, _ in _ast_imports(SRC / "native.py")]
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


# -- the report renders what it is given -----------------------------------------------------------

def _module_name(path: Path) -> str:
    return ".".join(("fabricbench",) + path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


def _called(node, module: str, bound: dict) -> set:
    """(module, function) of what `node` calls: f(...) (imported or of `module`) and m.f(...) (m a module)."""
    out = set()
    for c in ast.walk(node):
        if not isinstance(c, ast.Call):
            continue
        if isinstance(c.func, ast.Name):
            out.add(bound.get(c.func.id, (module, c.func.id)))
        elif isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name):
            target = bound.get(c.func.value.id)
            if target and target[1] is None:
                out.add((target[0], c.func.attr))
    return out


def _fitters() -> set:
    """(module, function) of every top-level function of models/ and analysis/ that fits: named
    fit_*, or calling such a function (to a fixed point)."""
    calls = {}
    for p in _modules("models", "analysis"):
        module, bound = _module_name(p), _bound_names(p)
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                calls[(module, node.name)] = _called(node, module, bound)
    fits = {k for k in calls if k[1].startswith("fit_")}
    while True:
        more = {k for k, called in calls.items() if k not in fits and called & fits}
        if not more:
            return fits
        fits |= more


def _bound_names(path: Path) -> dict:
    """name in `path` -> what it was imported as: (module, name) for 'from M import name [as x]',
    (module, None) for a module ('import M as x', 'from P import module as x')."""
    out = {}
    for _, module, names in _ast_imports(path):
        if not names:
            out[module.split(".")[-1]] = (module, None)
        for name in names:
            out[name] = (module, name)
            if (SRC.parent / (module + "." + name).replace(".", "/")).with_suffix(".py").exists():
                out[name] = (f"{module}.{name}", None)
    return out


def test_the_fitters_are_found():
    fits = _fitters()
    assert ("fabricbench.models.fabric", "fit_runs") in fits and ("fabricbench.analysis.scaling", "analyse") in fits
    assert ("fabricbench.models.fabric", "fitted_points") not in fits  # the points, not a fit


def test_report_never_queries_the_store_or_fits():
    """report/ calls no store query (Store's methods, a loaded run's artifact/replicates/earlier),
    reads no run's store handle and calls no function of models/ or analysis/ that fits: the
    caller loads and fits (cli.report.given_for) and hands both over."""
    from fabricbench.store.db import Store

    queries = {n for n in dir(Store) if not n.startswith("_") and callable(getattr(Store, n))} - {"close"}
    queries |= {"artifact", "replicates", "earlier"}
    fits = _fitters()
    found = []
    for p in _modules("report"):
        module, bound = _module_name(p), _bound_names(p)
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            where = f"{p.relative_to(SRC)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr == "store":
                found.append(f"{where} reads .store")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in queries:
                found.append(f"{where} calls .{node.func.attr}() (a store query)")
            if isinstance(node, ast.Call):
                found += [f"{where} calls {'.'.join(f)} (fits)" for f in _called(node, module, bound) & fits]
    assert not found, "report/ renders what it is given: " + "; ".join(found)
