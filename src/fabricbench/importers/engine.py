"""The engine's own JSON Lines output, made by hand or in a batch job (``mpirun -np 2
fabricbench-mpi latency > out.jsonl``), as a run in the results database.

A file holds one or more engine runs, each a ``run`` record (MPI library, ranks, hosts,
options), its ``point`` records and an ``end`` record; several runs may follow each other
(a batch script appending one benchmark after another to the same file). Points keep the
engine's benchmark names, parameters, units and statistics exactly, so ``compare`` matches
them with points measured by ``fabricbench run``. A run without its ``end`` record stopped
early (killed, out of time): what it measured is kept and the run is stored ``interrupted``.
``rank_info`` records (the ``info`` benchmark) become facts; other record kinds are noted
and skipped. Blank lines and launcher noise (``[host:pid] ...``, ``srun:``) are skipped.
"""
from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional

from fabricbench.importers import Importer
from fabricbench.importers import base as b
from fabricbench.store.records import STAT_FIELDS, Measurement

TOOL = "fabricbench-mpi"


def detect(source: b.Source) -> int:
    for text in source.head[:20]:
        text = text.strip()
        if not text or b.NOISE.match(text):
            continue
        if text.startswith("{") and '"record"' in text and f'"{TOOL}"' in text:
            return 95
        return 0
    return 0


def _record(source: b.Source, no: int, text: str) -> Dict[str, Any]:
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise source.error(no, f"not a JSON record ({exc.msg} at column {exc.colno}): {text[:60]!r}") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("record"), str):
        raise source.error(no, "a JSON Lines record of the engine is an object with a \"record\" kind")
    return rec


def _point(source: b.Source, no: int, rec: Dict[str, Any]) -> Measurement:
    for key in ("benchmark", "metric", "unit"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise source.error(no, f"point record without a {key}")
    if not isinstance(rec.get("params", {}), dict):
        raise source.error(no, "point record: params must be an object")
    for key in STAT_FIELDS:
        v = rec.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise source.error(no, f"point record: {key} {v!r} is not a finite number")
    m = Measurement.from_record(rec)
    if m.value is None:
        raise source.error(no, f"{m.benchmark} {m.metric}: the point has no value")
    detail = dict(m.detail or {})
    detail["source"] = f"{source.name}:{no}"
    m.detail = detail
    return m


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    reader, parsed, _point_factory = b.begin_text_parse(source, "engine", TOOL, allow_truncated)
    runs: List[Dict[str, Any]] = []
    current: Optional[Dict[str, Any]] = None
    skipped: Dict[str, int] = {}
    rank_info: List[Dict[str, Any]] = []
    for line in reader:
        text = line.text.strip()
        if not text or b.NOISE.match(text):
            continue
        rec = _record(source, line.no, text)
        kind = rec["record"]
        if kind == "run":
            if current is not None and not current["ended"]:
                parsed.mark_incomplete(f"the {current['benchmark']} run at line {current['line']} has no end record "
                                       "before the next run begins: it stopped early")
            current = {"benchmark": rec.get("benchmark"), "line": line.no, "points": 0, "ended": False,
                       **{k: rec.get(k) for k in ("version", "mpi_library", "mpi_version", "ranks", "hosts",
                                                  "options", "started")}}
            runs.append(current)
            _run_facts(source, line.no, parsed, rec)
        elif current is None:
            raise source.error(line.no, f"a '{kind}' record before the first run record: not the engine's "
                                        "output from its start")
        elif kind == "point":
            m = _point(source, line.no, rec)
            if m.benchmark != current["benchmark"]:
                raise source.error(line.no, f"a {m.benchmark} point inside the {current['benchmark']} run "
                                            f"of line {current['line']}")
            parsed.emit(m)
            current["points"] += 1
        elif kind == "end":
            current["ended"] = True
        elif kind == "rank_info":
            rank_info.append({k: v for k, v in rec.items() if k != "record"})
        else:
            skipped[kind] = skipped.get(kind, 0) + 1
    if not runs:
        raise source.error(None, "no run record: not fabricbench-mpi JSON Lines output")
    if current is not None and not current["ended"]:
        parsed.mark_incomplete(f"the {current['benchmark']} run at line {current['line']} has no end record: "
                               f"it stopped early after {current['points']} points")
    if skipped:
        parsed.warnings.append("skipped records: " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    parsed.facts = {"runs": runs, **({"rank_info": rank_info} if rank_info else {})}
    if parsed.count == 0 and rank_info:
        raise source.error(None, "only rank_info records: nothing to compare (the info benchmark measures nothing)")
    return parsed


def _run_facts(source: b.Source, no: int, parsed: b.ParsedRun, rec: Dict[str, Any]) -> None:
    """The run record's ranks, hosts and MPI library, as the run's provenance."""
    ranks = rec.get("ranks")
    if ranks is not None:
        if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
            raise source.error(no, f"run record: ranks {ranks!r} is not a positive integer")
        parsed.ranks = max(parsed.ranks or 0, ranks)
    hosts = rec.get("hosts")
    prov = parsed.extra_provenance
    if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts):
        for h in hosts:
            if h not in parsed.hosts:
                parsed.hosts.append(h)
        per_node: Dict[str, int] = {}
        for h in hosts:
            per_node[h] = per_node.get(h, 0) + 1
        prov.setdefault("rank_hosts", list(hosts))
        prov.setdefault("nodes", len(per_node))
        prov.setdefault("ppn", max(per_node.values()) if per_node else None)
    if rec.get("version") and not parsed.tool_version:
        parsed.tool_version = str(rec["version"])
    # The same provenance keys as a run the engine made under `fabricbench run` (workflows.hosts).
    for key, field in (("mpi_library", "mpi_library"), ("mpi_version", "mpi_version"),
                       ("timer_resolution_us", "timer_resolution_us"), ("engine_version", "version")):
        if rec.get(field) is not None:
            prov.setdefault(key, rec[field])


FORMAT = Importer(name="engine", title="fabricbench-mpi JSON Lines output", detect=detect, parse=parse)
