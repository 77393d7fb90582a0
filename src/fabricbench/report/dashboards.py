"""A run's points for dashboards and CI: OpenMetrics text (Prometheus, Grafana), ReFrame-style
perflog lines (Grafana/Elastic log pipelines), and JUnit XML of a check (CI test reports).

    from fabricbench.report.dashboards import to_openmetrics, to_perflog, to_junit

OpenMetrics: one gauge family per metric and unit, named ``fabricbench_<metric>_<unit>``
(``fabricbench_latency_microseconds``, ``fabricbench_bandwidth_megabytes_per_second``: MB/s is
decimal, 10^6 bytes/s), with ``# TYPE``, ``# UNIT`` and ``# HELP`` lines; one sample per point,
the point's figure of record (``analysis.series.headline``), labelled with the run (id, label,
tags as ``tag_<key>``), the benchmark and every scalar parameter (size, ranks, window, win,
sync, ...); timestamped with the run's start; ended by ``# EOF``.

Perflog: ReFrame 3's default file-log line, one per point, fields separated by ``|``::

    <completion time>|fabricbench <version>|<benchmark> %size=8 %ranks=2 @<hosts>|jobid=run<id>|<metric>=<value>|ref=0 (l=null, u=null)|<unit>

which ReFrame's perflog parsers and Grafana/Elastic pipelines built for them read as they are.

JUnit: one ``testcase`` per compared point of ``fabricbench check`` (classname
``fabricbench.<benchmark>.<metric>``, name = the series and size), a ``failure`` for each point
significantly worse than the baseline, ``skipped`` for a point that could not be judged.
"""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple
from xml.etree import ElementTree as ET

from fabricbench.numbers import machine
from fabricbench import numbers

UNIT_WORDS = {"us": "microseconds", "ms": "milliseconds", "s": "seconds", "ns": "nanoseconds",
              "MB/s": "megabytes_per_second", "msg/s": "messages_per_second", "%": "percent",
              "Gflop/s": "gigaflops", "GUP/s": "giga_updates_per_second", "B": "bytes"}
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(metric: str, unit: str) -> Tuple[str, str]:
    """(family name, OpenMetrics unit) of a metric and unit: ('fabricbench_latency_microseconds', 'microseconds')."""
    word = UNIT_WORDS.get(unit) or _NAME_BAD.sub("_", unit.replace("/", "_per_")).strip("_").lower() or "value"
    base = _NAME_BAD.sub("_", metric).lower()
    return f"fabricbench_{base}_{word}", word


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _label_value(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return machine(value) if isinstance(value, float) else str(value)
    if isinstance(value, list) and all(isinstance(v, (int, float, str)) for v in value):
        return ",".join(str(v) for v in value)
    return None  # nested structures are not labels


def _timestamp(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def _run_labels(run: Any) -> Dict[str, str]:
    labels = {"run": str(run.id)}
    if run.label:
        labels["run_label"] = run.label
    for key, value in sorted((run.tags or {}).items()):
        labels["tag_" + _NAME_BAD.sub("_", key)] = str(value)
    return labels


def to_openmetrics(run: Any, measurements: Sequence[Any]) -> str:
    """The run's points as OpenMetrics text exposition (ends with '# EOF')."""
    from fabricbench.analysis.series import headline

    families: Dict[str, Dict[str, Any]] = {}
    base = _run_labels(run)
    stamp = _timestamp(run.created)
    for m in measurements:
        value = headline(m)
        if value is None or not math.isfinite(value):
            continue
        name, unit = metric_name(m.metric, m.unit)
        fam = families.setdefault(name, {"unit": unit, "metric": m.metric, "unit_text": m.unit, "samples": {}})
        labels = dict(base, benchmark=m.benchmark)
        for key, raw in sorted((m.params or {}).items()):
            text = _label_value(raw)
            label = _NAME_BAD.sub("_", key)
            if text is not None and label not in labels and not label.startswith("__"):
                labels[label] = text
        key = tuple(sorted(labels.items()))
        fam["samples"][key] = value  # a point measured again (a later launch) replaces the earlier one
    lines: List[str] = []
    for name, fam in families.items():
        lines.append(f"# TYPE {name} gauge")
        lines.append(f"# UNIT {name} {fam['unit']}")
        lines.append(f"# HELP {name} fabricbench {fam['metric']} of each point ({fam['unit_text']}; "
                     "the point's figure of record)")
        for key, value in fam["samples"].items():
            body = ",".join(f'{k}="{_escape(v)}"' for k, v in key)
            ts = f" {machine(stamp)}" if stamp is not None else ""
            lines.append(f"{name}{{{body}}} {repr(float(value))}{ts}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _perf_field(text: str) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def to_perflog(run: Any, measurements: Sequence[Any], hosts: Iterable[str] = ()) -> str:
    """The run's points as ReFrame-3-style perflog lines (one per point)."""
    from fabricbench.analysis.series import headline

    when = _perf_field(run.finished or run.created or "")
    where = ",".join(hosts) or "unknown"
    out = []
    for m in measurements:
        value = headline(m)
        if value is None or not math.isfinite(value):
            continue
        params = " ".join(f"%{k}={_label_value(v)}" for k, v in sorted((m.params or {}).items())
                          if _label_value(v) is not None and " " not in _label_value(v))
        info = _perf_field(f"{m.benchmark} {params} @{where}".replace("  ", " "))
        out.append(f"{when}|fabricbench {_perf_field(run.tool_version)}|{info}|jobid=run{run.id}|"
                   f"{_perf_field(m.metric)}={machine(value)}|ref=0 (l=null, u=null)|{_perf_field(m.unit)}")
    return "\n".join(out) + ("\n" if out else "")


def to_junit(result: Any, baseline: str, min_effect: float) -> str:
    """A check's verdicts as JUnit XML (one testsuite; a testcase per compared point)."""
    from fabricbench.numbers import exact_binary_size as size_label
    from fabricbench.report.words.compare import describe_point, summary

    cases = []
    failures = skipped = 0
    for s, p in result.points:
        case = ET.Element("testcase", classname=f"fabricbench.{s.benchmark}.{s.metric}",
                          name=f"{s.title} {size_label(p.size)}" if p.size is not None else s.title, time="0")
        text = describe_point(s, p)
        if p.verdict == "worse":
            failures += 1
            fail = ET.SubElement(case, "failure", message=f"worse than baseline '{baseline}' by {numbers.short(min_effect)}% "
                                                          "or more", type="regression")
            fail.text = text
        elif p.verdict == "not judged":
            skipped += 1
            ET.SubElement(case, "skipped", message=text)
        else:
            ET.SubElement(case, "system-out").text = text
        cases.append(case)
    suite = ET.Element("testsuite", name=f"fabricbench check against {baseline}", tests=str(len(cases)),
                       failures=str(failures), errors="0", skipped=str(skipped), time="0",
                       timestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
    props = ET.SubElement(suite, "properties")
    runs = ",".join(str(r.id) for r in result.b_runs)
    for name, value in (("baseline", baseline), ("runs", runs), ("min_effect_percent", numbers.short(min_effect))):
        ET.SubElement(props, "property", name=name, value=value)
    suite.extend(cases)
    ET.SubElement(suite, "system-out").text = summary(result)
    root = ET.Element("testsuites", name="fabricbench", tests=str(len(cases)), failures=str(failures),
                      errors="0", skipped=str(skipped), time="0")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
