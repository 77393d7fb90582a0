"""The layers hold (issue 34): greps over the source tree, no run needed.

Each check is its own function so that checks of other parts of the layout can be added
beside them without touching these.
"""
from __future__ import annotations

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
    "analysis/comparability.py", "analysis/compare.py", "analysis/direction.py", "analysis/fabric.py",
    "analysis/health.py", "analysis/health_check.py", "analysis/host_state.py", "analysis/lint.py",
    "analysis/matching.py", "analysis/peaks.py", "analysis/profile.py",
    "analysis/profile_phases.py", "analysis/scaling.py", "analysis/transfer.py",
    "models/fabric.py", "models/predict.py", "models/scaling.py",
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
REPORT_REACHES_INTO_WORKFLOWS = {
    "report/context.py": {"fabricbench.workflows.replicates"},
    "report/sections/fabric.py": {"fabricbench.workflows.fabric"},
}


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
        "report/ must not import from workflows/"
    assert set(found) == set(REPORT_REACHES_INTO_WORKFLOWS), "a reach is gone: take it off the list"
