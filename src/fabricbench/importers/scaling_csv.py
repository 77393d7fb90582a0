"""Importing published or hand-measured scaling numbers from a CSV file.

Columns (header names are case-insensitive; order does not matter):

    nodes        node count (needed unless ranks is given)
    ranks        rank / process / CPU count (optional; cpus, processes and np are accepted too)
    ppn          ranks per node (optional)
    time         seconds (time_s and seconds are accepted too) ... and/or
    fom          a figure of merit (unit from --fom-unit or a fom_unit column)
    repetition   which repetition a row is (optional; rows of the same point are repetitions)
    n, stdev     how many runs a published value averages, and their standard deviation (optional)
    label        the series' label (optional)
    anything else  a tag of the series (fabric, case, site, ...)

Lines starting with '#' are comments (a good place for the source of the numbers). Numbers
may carry thousands separators ("10,732" quoted). Every distinct (label, tags) becomes one
run of kind ``scaling`` in the same shape ``fabricbench scale`` stores. The whole file is read
and checked first: a malformed row stops the import with its file and line, and nothing
is stored.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

from fabricbench.errors import FabricbenchError
from fabricbench.store import Measurement, Run

if TYPE_CHECKING:  # the database (SQLAlchemy) is imported where it is opened, not at start-up
    from fabricbench.store import Store

BENCHMARK = "scale"
KIND = "scaling"

_ALIASES = {
    "nodes": "nodes", "node": "nodes", "node_count": "nodes",
    "ranks": "ranks", "np": "ranks", "cpus": "ranks", "processes": "ranks", "procs": "ranks", "cores": "ranks",
    "ppn": "ppn",
    "time": "time", "time_s": "time", "seconds": "time", "wall_s": "time",
    "fom": "fom",
    "fom_unit": "fom_unit",
    "repetition": "repetition", "rep": "repetition",
    "n": "n", "runs": "n",
    "stdev": "stdev", "std": "stdev", "sd": "stdev",
    "label": "label",
}
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


class ScalingImportError(FabricbenchError):
    """A scaling CSV cannot be read; the message names the file and line."""


@dataclass
class ImportedSeries:
    label: Optional[str]
    tags: Dict[str, str]
    measurements: List[Measurement] = field(default_factory=list)
    lines: List[int] = field(default_factory=list)


def _number(text: str, path: str, line: int, column: str, integer: bool = False, positive: bool = True) -> Optional[float]:
    raw = text.strip()
    if raw == "":
        return None
    cleaned = raw.replace("_", "")
    if _THOUSANDS.match(cleaned):
        cleaned = cleaned.replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        raise ScalingImportError(f"{path}:{line}: column '{column}': '{raw}' is not a number") from None
    if not math.isfinite(value):
        raise ScalingImportError(f"{path}:{line}: column '{column}': '{raw}' is not a finite number")
    if integer and not value.is_integer():
        raise ScalingImportError(f"{path}:{line}: column '{column}': '{raw}' is not a whole number")
    if positive and value <= 0:
        raise ScalingImportError(f"{path}:{line}: column '{column}': '{raw}' must be greater than 0")
    return int(value) if integer else value


def _numbered_lines(text: str, counter: List[int]) -> Iterator[str]:
    """Lines that are not comments or blank; counter[0] is the physical line number of the last one."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        counter[0] = number
        yield line


def read_scaling_csv(
    path: str,
    fom_unit: str = "",
    higher_is_better: bool = True,
    label: Optional[str] = None,
    tags: Optional[Dict[str, str]] = None,
) -> List[ImportedSeries]:
    """The series in a scaling CSV, checked row by row (raises ScalingImportError)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ScalingImportError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ScalingImportError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    counter = [0]
    lines = _numbered_lines(text, counter)
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    delimiter = "\t" if "\t" in first and "," not in first else (";" if ";" in first and "," not in first else ",")
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise ScalingImportError(f"{path}: empty file (expected a header such as nodes,time,fabric)") from None
    except csv.Error as exc:
        raise ScalingImportError(f"{path}:{counter[0]}: {exc}") from None
    header_line = counter[0]
    columns: List[Tuple[str, str]] = []  # (original name, role or 'tag')
    seen = set()
    for name in header:
        key = name.strip()
        if not key:
            raise ScalingImportError(f"{path}:{header_line}: the header has an empty column name")
        role = _ALIASES.get(key.lower().replace(" ", "_").replace("-", "_"), "tag")
        ident = role if role != "tag" else f"tag:{key}"
        if ident in seen:
            raise ScalingImportError(f"{path}:{header_line}: column '{key}' appears twice")
        seen.add(ident)
        columns.append((key, role))
    roles = {r for _, r in columns}
    if "nodes" not in roles and "ranks" not in roles:
        raise ScalingImportError(f"{path}:{header_line}: no 'nodes' or 'ranks' column (header: {', '.join(header)})")
    if "time" not in roles and "fom" not in roles:
        raise ScalingImportError(f"{path}:{header_line}: no 'time' or 'fom' column (header: {', '.join(header)})")
    extra_tags = dict(tags or {})
    groups: Dict[Tuple, ImportedSeries] = {}
    counts: Dict[Tuple, int] = {}
    rows = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise ScalingImportError(f"{path}:{counter[0]}: {exc}") from None
        line = counter[0]
        if len(row) != len(columns):
            raise ScalingImportError(f"{path}:{line}: {len(row)} fields, the header has {len(columns)}")
        rows += 1
        values: Dict[str, Any] = {}
        row_tags: Dict[str, str] = {}
        row_label = label
        for (name, role), cell in zip(columns, row):
            if role == "tag":
                if cell.strip():
                    row_tags[name] = cell.strip()
            elif role == "label":
                row_label = cell.strip() or label
            elif role == "fom_unit":
                values["fom_unit"] = cell.strip()
            elif role in ("nodes", "ranks", "ppn", "repetition", "n"):
                values[role] = _number(cell, path, line, name, integer=True)
            elif role == "stdev":
                values[role] = _number(cell, path, line, name, positive=False)
                if values[role] is not None and values[role] < 0:
                    raise ScalingImportError(f"{path}:{line}: column '{name}': a standard deviation cannot be negative")
            else:
                values[role] = _number(cell, path, line, name)
        if values.get("nodes") is None and values.get("ranks") is None:
            raise ScalingImportError(f"{path}:{line}: no node or rank count")
        if values.get("time") is None and values.get("fom") is None:
            raise ScalingImportError(f"{path}:{line}: no time or fom value")
        nodes, ranks, ppn = values.get("nodes"), values.get("ranks"), values.get("ppn")
        if ppn is None and nodes and ranks and ranks % nodes == 0:
            ppn = ranks // nodes
        if ranks is None and nodes and ppn:
            ranks = nodes * ppn
        all_tags = {**row_tags, **extra_tags}
        key = (row_label, tuple(sorted(all_tags.items())))
        series = groups.get(key)
        if series is None:
            series = groups[key] = ImportedSeries(row_label, all_tags)
        point_key = key + (nodes, ranks)
        rep = values.get("repetition")
        if rep is None:
            rep = counts.get(point_key, 0) + 1
        counts[point_key] = max(counts.get(point_key, 0), rep)
        params = {"nodes": nodes, "ranks": ranks, "ppn": ppn, "repetition": rep, "size": None}
        for metric in ("time", "fom"):
            value = values.get(metric)
            if value is None:
                continue
            detail: Dict[str, Any] = {"status": "ok", "source_line": line}
            unit = "s"
            if metric == "fom":
                unit = values.get("fom_unit") or fom_unit
                detail["higher_is_better"] = higher_is_better
            series.measurements.append(
                Measurement(
                    benchmark=BENCHMARK,
                    params=dict(params),
                    metric=metric,
                    unit=unit,
                    value=value,
                    n=values.get("n") or 1,
                    mean=value,
                    median=value if not values.get("n") or values.get("n") == 1 else None,
                    min=value if not values.get("n") or values.get("n") == 1 else None,
                    max=value if not values.get("n") or values.get("n") == 1 else None,
                    stdev=values.get("stdev"),
                    detail=detail,
                )
            )
        series.lines.append(line)
    if rows == 0:
        raise ScalingImportError(f"{path}: a header but no rows")
    return list(groups.values())


def series_label(series: ImportedSeries, label: Optional[str], many: bool, skip=()) -> Optional[str]:
    """A run label that tells the file's series apart: the label column, else --label plus the
    values of the file's tag columns (tags in `skip`, given on the command line, left out)."""
    if series.label and series.label != label:
        return series.label
    own = {k: v for k, v in series.tags.items() if k not in set(skip)}
    tag_text = " ".join(v for k, v in sorted(own.items(), key=lambda kv: (kv[0] == "fabric", kv[0])))
    if label:
        return f"{label} {tag_text}".strip() if many else label
    return tag_text or None


def import_scaling_csv(
    store: Store,
    path: str,
    label: Optional[str] = None,
    tags: Optional[Dict[str, str]] = None,
    fom_unit: str = "",
    higher_is_better: bool = True,
    weak: bool = False,
    command: Optional[str] = None,
) -> List[Run]:
    """Store every series of the file as a `scaling` run; all of them or (on any error) none."""
    found = read_scaling_csv(path, fom_unit=fom_unit, higher_is_better=higher_is_better, label=label, tags=tags)
    many = len(found) > 1
    stored: List[Run] = []
    source = str(Path(path).resolve())
    try:
        for series in found:
            metrics = list(dict.fromkeys(m.metric for m in series.measurements))
            ranks = [m.params.get("ranks") for m in series.measurements if m.params.get("ranks")]
            study = {
                "mode": "weak" if weak else "strong",
                "metrics": metrics,
                "primary_metric": "fom" if "fom" in metrics else "time",
                "imported_from": source,
                "lines": [min(series.lines), max(series.lines)],
            }
            stored.append(
                store.save_run(
                    series.measurements,
                    kind=KIND,
                    label=series_label(series, label, many, skip=(tags or {}).keys()),
                    tags=series.tags,
                    command=command,
                    provenance={"import": {"format": "scaling-csv", "file": source}, "study": study},
                    ranks=max(ranks) if ranks else None,
                )
            )
    except BaseException:
        for run in stored:
            store.delete_run(run.id)
        raise
    return stored


# ---- the registered importer: `fabricbench import FILE.csv` ------------------------------------

def detect(source: Any) -> int:
    """A CSV whose header names a scale column (nodes, ranks, ...) and a time or fom column."""
    first = next((t for t in source.head[:50] if t.strip() and not t.lstrip().startswith("#")), "")
    if "," not in first and ";" not in first and "\t" not in first:
        return 0
    roles = {_ALIASES.get(c.strip().lower().replace(" ", "_").replace("-", "_"), "tag")
             for c in re.split(r"[,;\t]", first)}
    return 70 if roles & {"nodes", "ranks"} and roles & {"time", "fom"} else 0


def parse(source: Any, allow_truncated: bool = False) -> Any:
    """A scaling CSV with one series as one run of kind ``scaling`` (several series: import-scaling)."""
    from fabricbench.importers.base import ImportFormatError, ParsedRun

    try:
        found = read_scaling_csv(source.path)
    except ScalingImportError as exc:
        raise ImportFormatError(source.path, None, str(exc).split(": ", 1)[-1]) from None
    if len(found) != 1:
        names = "; ".join(" ".join(f"{k}={v}" for k, v in s.tags.items()) or (s.label or "?") for s in found)
        raise ImportFormatError(source.path, None, f"holds {len(found)} scaling series ({names}); "
                                "'fabricbench import-scaling FILE' stores one run per series")
    series = found[0]
    metrics = list(dict.fromkeys(m.metric for m in series.measurements))
    parsed = ParsedRun(format=FORMAT.name, source=source, tool="scaling CSV", kind=KIND)
    parsed.extra_provenance = {"study": {"mode": "strong", "metrics": metrics,
                                         "primary_metric": "fom" if "fom" in metrics else "time",
                                         "imported_from": source.path,
                                         "lines": [min(series.lines), max(series.lines)]}}
    for m in series.measurements:
        parsed.emit(m)
    return parsed


def _format():
    from fabricbench.importers import Importer

    return Importer(name="scaling-csv", title="scaling CSV (nodes/ranks with time or fom)", detect=detect, parse=parse)


FORMAT = _format()
