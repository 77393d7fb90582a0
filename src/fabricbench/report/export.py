"""A run's measurements as CSV (one row per point) or JSON (run, hosts and measurements), or for
dashboards as OpenMetrics text or ReFrame-style perflog lines (``report.dashboards``).

Part of the Python API::

    from fabricbench.report.export import export_run
    text = export_run(store.load("last"), fmt="csv")

CSV cells hold full-precision numbers (``numbers.machine``); a text cell that a
spreadsheet would run as a formula (starting with = + - @, a tab or a carriage return) is
prefixed with an apostrophe, so an imported host name cannot become a command; control
characters in text cells are shown escaped (``\\x1b``, ``fabricbench.text``), so ``export`` never
writes a terminal escape to stdout. JSON writes them as ``\\u001b`` itself.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Dict, List, Sequence

from fabricbench.errors import UsageError
from fabricbench.numbers import machine
from fabricbench.store import RunData
from fabricbench.text import printable

FORMATS = ("csv", "json", "openmetrics", "perflog")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def rows(measurements: Sequence[Any]) -> List[Dict[str, Any]]:
    """One dict per point: benchmark, every parameter any point has, metric, unit, statistics."""
    params: List[str] = []
    for m in measurements:
        for k in m.params:
            if k not in params:
                params.append(k)
    out = []
    for m in measurements:
        row = {"benchmark": m.benchmark, **{k: m.params.get(k) for k in params}, "metric": m.metric, "unit": m.unit}
        row.update({k: getattr(m, k) for k in RunData.STAT_FIELDS})
        out.append(row)
    return out


def csv_cell(value: Any) -> str:
    """A value as a CSV cell: numbers in full precision, lists and dicts as JSON, formulas defused."""
    if isinstance(value, (list, dict)):
        value = json.dumps(value, sort_keys=True)
    if isinstance(value, str):
        value = printable(value)
        return "'" + value if value.startswith(_FORMULA_START) else value
    return machine(value)


def to_csv(measurements: Sequence[Any]) -> str:
    table = rows(measurements)
    fields = list(table[0]) if table else ["benchmark"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(f) for f in fields])
    for row in table:
        writer.writerow([csv_cell(row[f]) for f in fields])
    return buf.getvalue()


def to_json(run: Any, hosts: Sequence[Any], measurements: Sequence[Any]) -> str:
    data = {"run": run.to_dict(), "hosts": [h.__dict__ for h in hosts], "measurements": [m.to_dict() for m in measurements]}
    return json.dumps(data, indent=2, default=str) + "\n"


def export_run(loaded: RunData, fmt: str = "csv") -> str:
    """A loaded run (``Store.load``) as CSV, JSON, OpenMetrics or perflog text."""
    if fmt not in FORMATS:
        raise UsageError(f"export format must be one of {', '.join(FORMATS)}, not '{fmt}'")
    run, items, hosts = loaded.run, loaded.measurements, loaded.hosts
    if fmt in ("openmetrics", "perflog"):  # for dashboards (report.dashboards)
        from fabricbench.report.dashboards import to_openmetrics, to_perflog

        if fmt == "openmetrics":
            return to_openmetrics(run, items)
        return to_perflog(run, items, [h.hostname for h in hosts])
    return to_csv(items) if fmt == "csv" else to_json(run, hosts, items)
