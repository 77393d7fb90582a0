"""Report sections: one small module each, found automatically - the report's extension point.

How to add a section (an MPI profile, a health heatmap, a scaling study, ...)
----------------------------------------------------------------------------
Create ``report/sections/<name>.py`` with:

    ORDER = 55                      # where it goes: lower numbers first (see the table below)
    BENCHMARKS = {"mybench"}        # optional: benchmarks this section presents; the
                                    # "other benchmarks" section leaves them out
    def build(ctx):                 # ctx: report.context.ReportContext
        if not ctx.series("mybench"):
            return None             # nothing to show for these runs: no section
        section = Section("mybench", "My benchmark")
        section.add(Paragraph("..."), blocks.curves_figure(ctx, ...), *blocks.series_tables(ctx, ...))
        return section

That is all: no other file changes. ``discover()`` imports every module of this package
whose name does not start with ``_``, and ``build_sections(ctx)`` calls each ``build`` in
``ORDER``; a section that raises (or a module that fails to import) is replaced by a
notice naming it: one broken section never loses a report. A module may instead define ``build_all(ctx) -> [Section]`` to add
several sections.

What ``ctx`` offers: ``ctx.runs`` (``store.RunData``: ``.run``, ``.name``, ``.index``,
``.measurements``, ``.hosts``, ``.series``, ``.fabric``, ``.ceiling``), ``ctx.artifact_of(run, name)``,
``ctx.series(benchmark, metric)``, ``ctx.benchmarks()``, ``ctx.baseline``, ``ctx.models``
(fitted before rendering), ``ctx.given`` (what the caller loaded and fitted: ``context.Given``),
``ctx.options`` and ``ctx.plot_format``. A section renders what it is given: it never queries
the store, launches or fits (a new need is loaded in ``cli.report.given_for``).
Build blocks from ``report.model`` (``Section``, ``Paragraph``, ``Notice``, ``Table``,
``Column``, ``Cell``, ``Figure``, ``BulletList``) and ``report.blocks`` /
``report.plots`` helpers. Blocks hold plain text only; the templates escape everything.
Put units in ``Column(title, unit)`` so every header carries one.

Current order: 10 overview, 20 configuration, 25 host differences, 28 comparison with the
baseline, 30 latency, 40 bandwidth, 45 message rate, 47 one-sided, 50 collectives, 52 non-blocking
collectives, 60 HPCC network,
65 HPCC summary, 88 rigour check, 90 other benchmarks.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Callable, List, Optional, Set

from fabricbench.registry import Registry
from fabricbench.report.model import Notice, Section


@dataclass
class SectionModule:
    name: str
    order: float
    benchmarks: Set[str]
    module: ModuleType

    def build(self, ctx) -> List[Section]:
        if hasattr(self.module, "build_all"):
            return [s for s in (self.module.build_all(ctx) or []) if s is not None]
        section = self.module.build(ctx)
        return [section] if section is not None else []


_CACHE: Optional[List[SectionModule]] = None


def _section(name: str, module: ModuleType) -> List[SectionModule]:
    if not (hasattr(module, "build") or hasattr(module, "build_all")):
        return []
    return [SectionModule(name, float(getattr(module, "ORDER", 50)), set(getattr(module, "BENCHMARKS", ())), module)]


# Every module of this package whose name does not start with "_"; one that fails to import (one
# broken module must not break every report) stands as a section whose build raises its error.
SECTIONS: Registry[SectionModule] = Registry(
    "report section", __name__, collect=lambda module: _section(module.__name__.rpartition(".")[2], module),
    broken=lambda name, exc: _section(name, _broken(name, exc)))


def discover() -> List[SectionModule]:
    """Every section module of this package, sorted by ORDER (then name)."""
    global _CACHE
    if _CACHE is None:
        _CACHE = sorted(SECTIONS.items(), key=lambda m: (m.order, m.name))
    return list(_CACHE)


def _broken(name: str, exc: Exception) -> ModuleType:
    """A stand-in for a section module that failed to import: its build raises the import error."""
    module = ModuleType(f"{__name__}.{name}")
    module.ORDER = 99

    def build(ctx):
        raise ImportError(f"cannot import section module '{name}': {type(exc).__name__}: {exc}")

    module.build = build
    return module


def claimed_benchmarks() -> Set[str]:
    """Benchmarks some section presents (the fallback section shows the rest)."""
    out: Set[str] = set()
    for m in discover():
        out |= m.benchmarks
    return out


def build_sections(ctx, only: Optional[Callable[[str], bool]] = None) -> List[Section]:
    """Run every section builder in order; a failing one becomes a notice, not a lost report."""
    sections: List[Section] = []
    for m in discover():
        if only is not None and not only(m.name):
            continue
        try:
            sections.extend(m.build(ctx))
        except Exception as exc:  # noqa: BLE001 - a report must survive one bad section
            last = traceback.extract_tb(exc.__traceback__)[-1]
            sections.append(
                Section(f"error-{m.name}", f"{m.name} (failed)").add(
                    Notice(f"section '{m.name}' could not be built: {type(exc).__name__}: {exc} "
                           f"({last.filename.rsplit('/', 1)[-1]}:{last.lineno})", "warning")
                )
            )
    used = set()
    for s in sections:  # anchors must be unique
        base, n = s.id, 2
        while s.id in used:
            s.id = f"{base}-{n}"
            n += 1
        used.add(s.id)
    return sections
