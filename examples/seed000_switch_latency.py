"""Reproduce seed 000's Figure 10 (OSU latency, Omni-Path back-to-back vs through a switch) with fabricbench.

    PYTHONPATH=src python examples/seed000_switch_latency.py [--db FILE] [--out DIR]

Loads ``seed000_switch_latency.json`` into a results database through the Python API
(``fabricbench.open_db()`` + ``Store.save_run``), compares the two runs with
``analysis.compare`` (the switch should add about 0.13 us at every size, as the study says:
0.77 us back-to-back vs 0.9 us through the switch) and writes an HTML and a Markdown report.
It ends with the paper's sentence computed from the figures ("Switch is 14.7% slower than B2B
on average, 12.6% to 16.9% over 11 sizes"); the paper publishes one figure per size and no
spread, so the difference is stated and never called significant ("not judged").
The same comparison from the shell: ``fabricbench --db FILE compare 1 2``.

The JSON format ("fabricbench-results/1") - published or hand-entered results as runs:

    {
      "format": "fabricbench-results/1",
      "description": "...", "source": "where the numbers come from",
      "runs": [
        {
          "label": "B2B",                       # legend name
          "tags": {"fabric": "opa100"},         # key=value strings; fabric= selects the peak
          "kind": "import", "ranks": 2, "command": "...",
          "provenance": {...},                  # as fabricbench records it (nodes, ppn, fabric, mpi_library, env, ...)
          "hosts": [{"hostname": "node1", "facts": {...}}],      # optional; digest computed if absent
          "measurements": [
            {
              "benchmark": "latency", "metric": "latency", "unit": "us",
              "params": {"ranks": 2},           # shared by every point; "size" comes from the point
              "points": [[0, 0.78], [1, 0.78]]  # [size_bytes, value] ...
              # or full points: [{"size": 0, "value": 0.78, "min": 0.75, "max": 0.9, "n": 1000, "stdev": 0.02}, ...]
            }
          ]
        }
      ]
    }

Units follow fabricbench's: latency/time in us, bandwidth in decimal MB/s, message rate in msg/s.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import fabricbench
from fabricbench.errors import FabricbenchError
from fabricbench.store import Host, Measurement

HERE = Path(__file__).resolve().parent
DATA = HERE / "seed000_switch_latency.json"
FORMAT = "fabricbench-results/1"
STATS = ("value", "n", "iterations", "min", "median", "mean", "p99", "max", "stdev")


def read_results(path: Path) -> Dict[str, Any]:
    """Parse and check a fabricbench-results/1 file; errors name the file and the entry."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FabricbenchError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise FabricbenchError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FabricbenchError(f"{path}: not a {FORMAT} file (missing \"format\": \"{FORMAT}\")")
    if not isinstance(doc.get("runs"), list) or not doc["runs"]:
        raise FabricbenchError(f"{path}: \"runs\" must be a non-empty list")
    for i, run in enumerate(doc["runs"]):
        for j, series in enumerate(run.get("measurements") or []):
            for key in ("benchmark", "metric", "unit", "points"):
                if key not in series:
                    raise FabricbenchError(f"{path}: runs[{i}].measurements[{j}] lacks \"{key}\"")
    return doc


def _measurement(series: Dict[str, Any], point: Any) -> Measurement:
    params = dict(series.get("params") or {})
    if isinstance(point, (list, tuple)) and len(point) == 2:
        params["size"] = int(point[0])
        stats = {"value": float(point[1])}
    elif isinstance(point, dict):
        if "size" in point:
            params["size"] = int(point["size"])
        stats = {k: point[k] for k in STATS if k in point}
    else:
        raise FabricbenchError(f"bad point {point!r} in {series['benchmark']}: use [size, value] or an object")
    if "value" not in stats:
        stats["value"] = stats.get("mean", stats.get("median"))
    return Measurement(benchmark=series["benchmark"], params=params, metric=series["metric"], unit=series["unit"], **stats)


def _host(entry: Dict[str, Any]) -> Host:
    facts = dict(entry.get("facts") or {})
    facts.setdefault("hostname", entry["hostname"])
    digest = entry.get("digest") or hashlib.sha256(
        json.dumps({k: v for k, v in facts.items() if k != "hostname"}, sort_keys=True).encode()
    ).hexdigest()
    return Host(hostname=entry["hostname"], digest=digest, facts=facts)


def save_runs(store, doc: Dict[str, Any], source: Optional[str] = None) -> List[Any]:
    """Store every run of a parsed results document (each atomically); returns the Runs."""
    saved = []
    for entry in doc["runs"]:
        measurements = [_measurement(s, p) for s in entry.get("measurements") or [] for p in s["points"]]
        saved.append(store.save_run(
            measurements,
            kind=entry.get("kind", "import"),
            label=entry.get("label"),
            tags={str(k): str(v) for k, v in (entry.get("tags") or {}).items()},
            command=entry.get("command"),
            provenance=dict(entry.get("provenance") or {}, source=doc.get("source") or source),
            ranks=entry.get("ranks"),
            hosts=[_host(h) for h in entry.get("hosts") or []],
        ))
    return saved


def run_example(db: str, out_dir: Path, data: Path = DATA) -> Dict[str, Any]:
    """Load the seed's numbers, compare and report; returns the comparison and the files written."""
    from fabricbench.analysis.compare import compare
    from fabricbench.cli.report import report_of
    from fabricbench.report import ReportOptions, write_report

    store = fabricbench.open_db(db)
    b2b, switch = save_runs(store, read_results(data))
    comparison = compare(store.load(b2b.id), store.load(switch.id), benchmark="latency")
    options = ReportOptions(title="Seed 000, Figure 10: OSU latency, Omni-Path back-to-back vs switch")
    report = report_of(store, [b2b.id, switch.id], options)
    out_dir.mkdir(parents=True, exist_ok=True)
    html = write_report(report, out_dir / "seed000_switch_latency.html")
    md = write_report(report, out_dir / "seed000_switch_latency.md", fmt="markdown")
    return {"store": store, "runs": (b2b, switch), "comparison": comparison, "html": html, "markdown": md}


def paper_sentence(series, a_name: str, b_name: str) -> str:
    """The paper's claim from the published figures: how much slower B is than A, on average and
    over the sizes, and why it is not judged (one published figure per size, no spread)."""
    from fabricbench.report import format as fmt

    slower = [100.0 * (p.ratio - 1.0) for p in series.points if p.ratio is not None]
    if not slower:
        return f"{b_name} and {a_name}: no size measured on both"
    mean = sum(slower) / len(slower)
    word = "slower" if mean > 0 else "faster"
    judged = [p for p in series.points if p.verdict != "not judged"]
    why = ("not judged: the paper publishes one figure per size and no spread" if not judged
           else f"{len(judged)} of {len(series.points)} sizes judged")
    return (f"{b_name} is {fmt.percent(abs(mean))} {word} than {a_name} on average "
            f"({fmt.percent(min(slower))} to {fmt.percent(max(slower))} over {len(slower)} sizes); {why}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="fabricbench-results/seed000.db", help="results database (SQLite file or URL)")
    parser.add_argument("--out", default="fabricbench-results/seed000", help="directory for the reports")
    args = parser.parse_args(argv)
    try:
        result = run_example(args.db, Path(args.out))
    except FabricbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    b2b, switch = result["runs"]
    for s in result["comparison"].series:
        print(f"{s.title} ({s.unit}): A = {b2b.name} (run {b2b.id}), B = {switch.name} (run {switch.id})")
        for p in s.points:
            print(f"  {p.size:>4} B  A {p.a:.2f}  B {p.b:.2f}  B-A {p.diff:+.2f} {s.unit}  B/A {p.ratio:.3f}  {p.text()}")
        print("  " + s.summary(b2b.name, switch.name))
        print("  " + paper_sentence(s, b2b.name, switch.name))
    print(f"reports: {result['html']}, {result['markdown']}")
    print(f"shell: fabricbench --db {args.db} compare {b2b.id} {switch.id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
