"""perftest (ib_write_bw, ib_send_lat, ...) text output and its ``--out_json`` report.

Text: a banner with the test's name (``RDMA_Write BW Test``, ``Send Latency Test``),
a block of settings (``Number of qps : 1``, ``Connection type : RC``, ...), then a table
framed by dashed lines:

    #bytes  #iterations  BW peak[MB/sec]  BW average[MB/sec]  MsgRate[Mpps]
    #bytes #iterations  t_min[usec]  t_max[usec]  t_typical[usec]  t_avg[usec]
        t_stdev[usec]  99% percentile[usec]  99.9% percentile[usec]

perftest's MB/sec is 2^20 B/s (``format_factor = 0x100000``; its help says "Gbit/sec
(instead of MiB/sec)"), converted here to decimal MB/s; with ``--report_gbits`` the
columns say ``[Gb/sec]`` (1e9 bit/s), converted too. MsgRate is in millions of
messages per second. Benchmark names stay perftest's (``ib_write_bw``, ``ib_read_lat``).

``--out_json`` writes a JSON-like report (unquoted ``key: value,`` lines in
``test_info: {...}`` and ``results: {...}`` blocks); it is read leniently, and strict
JSON with the same keys is read too. The report does not say whether --report_gbits
was used, so its bandwidths are taken as MiB/s.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from fabricbench.importers import Importer
from fabricbench.importers import base as b

DASHES = re.compile(r"^-{20,}\s*$")
TITLE = re.compile(r"^(?P<verb>[A-Za-z][\w ]*?)\s+(?P<bidir>Bidirectional\s+)?(?P<kind>BW|Latency)\s+Test\s*$")
COLUMN = re.compile(r"#\w+|tps average|[^\s\[\]#][^\[\]#]*?\[[^\]]*\]")
JSON_TEST = re.compile(r"^(?P<verb>.+?)_(?P<bidir>Bidirectional_)?(?:Post_List_)?(?P<kind>BW|Latency)_Test$")

VERBS = {"rdma_write": "write", "write": "write", "rdma_read": "read", "read": "read", "send": "send",
         "atomic": "atomic"}


def benchmark_name(verb: str, kind: str) -> str:
    key = verb.strip().lower().replace(" ", "_")
    key = VERBS.get(key, VERBS.get(key.split("_")[0], re.sub(r"[^a-z0-9]+", "_", key).strip("_")))
    return f"ib_{key}_{'bw' if kind.upper() == 'BW' else 'lat'}"


def detect(source: b.Source) -> int:
    text = "\n".join(source.head[:300])
    if re.search(r"#bytes\s+#iterations\s+(BW peak|t_min|t_avg)", text):
        return 90
    if "test_info" in text and "MsgSize" in text and ("BW_average" in text or "t_typical" in text or "t_avg" in text):
        return 85
    return 0


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    head = source.head_text
    stripped = head.lstrip()
    if "test_info" in head and "MsgSize" in head and (stripped.startswith("{") or stripped.startswith("test_info")):
        return _parse_json(source, allow_truncated)
    return _parse_text(source, allow_truncated)


# -- text ------------------------------------------------------------------------------


class Table:
    def __init__(self, benchmark: str, bidir: bool, kind: str, line: int):
        self.benchmark = benchmark
        self.bidir = bidir
        self.kind = kind
        self.line = line
        self.settings: Dict[str, str] = {}
        self.labels: Optional[List[str]] = None
        self.rows = 0
        self.last_size: Optional[int] = None
        self.closed = False


def _parse_text(source: b.Source, allow_truncated: bool) -> b.ParsedRun:
    reader, parsed, point = b.begin_text_parse(source, "perftest", "perftest", allow_truncated)
    tables: List[Table] = []
    table: Optional[Table] = None
    for line in reader:
        text = line.text.strip()
        if not text or b.NOISE.match(text) or text.startswith("*"):
            continue
        title = TITLE.match(text)
        if title and (table is None or table.labels is None or table.closed):
            table = Table(benchmark_name(title.group("verb"), title.group("kind")), bool(title.group("bidir")),
                          title.group("kind").upper(), line.no)
            tables.append(table)
            continue
        if DASHES.match(text):
            if table is not None and table.labels is not None and not table.closed:
                if table.rows == 0:
                    raise source.error(line.no, f"the {table.benchmark} table has no results")
                table.closed = True
            continue
        if table is None:
            continue  # messages before the banner
        if text.startswith("#bytes"):
            if table.labels is not None and not table.closed:
                raise source.error(line.no, f"a second column header in the {table.benchmark} table")
            if table.closed:
                raise source.error(line.no, "a column header after the table was closed")
            table.labels = _header(source, line.no, text)
            continue
        if table.labels is None:
            if ":" in text and not text.startswith(("local address", "remote address")):
                for part in re.split(r"\t+", line.text):
                    key, sep, value = part.partition(":")
                    if sep and key.strip():
                        table.settings[key.strip()] = value.strip()
            continue
        if table.closed:
            continue  # text after the table (e.g. "Test ended", warnings)
        _row(source, parsed, point, table, line.no, text.split())
    if not tables or all(t.labels is None for t in tables):
        raise source.error(None, "no perftest results table ('#bytes #iterations ...') found")
    for t in tables:
        if t.labels is None:
            raise source.error(t.line, f"the {t.benchmark} test printed no results table")
        if not t.closed:
            note = f"the {t.benchmark} table is not closed by a dashed line"
            if t.rows == 0:
                raise source.truncated(reader.last_no, note + " and has no results (the run stopped or the file was cut)")
            parsed.mark_incomplete(f"{note}: the run stopped before the end (after {t.last_size} bytes); "
                                   "the sizes it measured are kept")
    first = tables[0]
    parsed.facts = {"tests": [{"benchmark": t.benchmark, "line": t.line, "settings": t.settings} for t in tables]}
    dev = first.settings.get("Device")
    if dev:
        parsed.facts["device"] = dev
    return parsed


def _header(source: b.Source, no: int, text: str) -> List[str]:
    labels = [c.strip() for c in COLUMN.findall(text)]
    rest = COLUMN.sub("", text).strip()
    if rest or len(labels) < 3 or labels[0] != "#bytes":
        raise source.error(no, f"cannot read the perftest column header {text[:80]!r}")
    known = {"#bytes", "#iterations", "#sl"}
    for label in labels:
        if label not in known and label != "tps average" and not re.fullmatch(r"[\w .%]+\[[^\]]+\]", label):
            raise source.error(no, f"unknown perftest column {label!r}")
    if len(set(labels)) != len(labels):
        raise source.error(no, "a column appears twice in the header")
    if not any(l.startswith(("BW average", "t_avg", "t_typical")) for l in labels):
        raise source.error(no, "the header has no BW average, t_typical or t_avg column")
    return labels


def _unit_factor(label: str) -> Tuple[float, Optional[str]]:
    unit = label[label.index("[") + 1:-1] if "[" in label else ""
    if unit == "MB/sec":
        return b.MIB_PER_S, "MiB/s"
    if unit == "Gb/sec":
        return b.GBIT_PER_S, "Gb/s"
    return 1.0, None


def _row(source: b.Source, parsed: b.ParsedRun, point: b.PointFactory, t: Table, no: int, tokens: List[str]) -> None:
    labels = t.labels or []
    if len(tokens) != len(labels):
        raise source.error(no, f"expected {len(labels)} columns ({', '.join(labels)}), found {len(tokens)}")
    v: Dict[str, float] = {}
    for label, tok in zip(labels, tokens):
        if label in ("#bytes", "#iterations", "#sl"):
            v[label] = b.integer(source, no, tok, label)
        else:
            v[label] = b.finite(source, no, tok, label)
    size = int(v["#bytes"])
    b.require_increasing(source, no, t.last_size, size, f"the {t.benchmark} table")
    t.last_size = size
    t.rows += 1
    params = _params(size, t.settings)
    if "#sl" in v:
        params["sl"] = int(v["#sl"])
    _points(parsed, point, t.benchmark, t.bidir, t.kind, params, v, no, iterations=int(v.get("#iterations") or 0) or None)


def _params(size: int, settings: Dict[str, Any]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"size": size}
    qps = settings.get("Number of qps", settings.get("Number_of_qps"))
    if qps is not None and re.fullmatch(r"\d+", str(qps).strip()):
        params["qps"] = int(str(qps).strip())
    conn = settings.get("Connection type", settings.get("Connection_type"))
    if conn:
        params["connection"] = str(conn).strip()
    return params


def _points(parsed: b.ParsedRun, point: b.PointFactory, bench: str, bidir: bool, kind: str, params: Dict[str, Any],
            v: Dict[str, float], no: int, iterations: Optional[int]) -> None:
    """Measurements from one row; ``v`` maps text column labels to numbers."""
    extra: Dict[str, Any] = {}
    if kind == "BW":
        avg_label = next(l for l in v if l.startswith("BW average"))
        factor, conv = _unit_factor(avg_label)
        peak_label = next((l for l in v if l.startswith("BW peak")), None)
        peak = b.scale(v[peak_label], _unit_factor(peak_label)[0]) if peak_label else None
        for label, value in v.items():
            if label.startswith("BW Port"):
                extra[label] = b.scale(value, _unit_factor(label)[0])
            elif label.startswith("MsgRate Port") or label.startswith("CPU_Util"):
                extra[label] = value
        if conv:
            parsed.conversions[conv] = {"MiB/s": f"perftest MB/sec is 2^20 B/s; x{b.MIB_PER_S} to MB/s",
                                        "Gb/s": "x125 to MB/s (1 Gb = 1e9 bit)"}[conv]
        value = b.scale(v[avg_label], factor)
        point(bench, dict(params), "bibandwidth" if bidir else "bandwidth", "MB/s", value, no, converted_from=conv,
              detail=extra or None, mean=value, max=peak, iterations=iterations)
        rate_label = next((l for l in v if l.startswith("MsgRate[")), None)
        if rate_label:
            parsed.conversions["Mpps"] = "x1e6 to msg/s"
            rate = b.scale(v[rate_label], 1e6)
            point(bench, dict(params), "message_rate", "msg/s", rate, no, converted_from="Mpps", mean=rate,
                  iterations=iterations)
        return
    get = lambda prefix: next((v[l] for l in v if l.startswith(prefix)), None)  # noqa: E731
    t_avg, t_typ = get("t_avg"), get("t_typical")
    value = t_avg if t_avg is not None else t_typ
    p999 = get("99.9%")
    if p999 is not None:
        extra["p99.9_us"] = p999
    for label, val in v.items():
        if label.startswith(("tps", "CPU_Util")):
            extra[label] = val
    point(bench, dict(params), "latency", "us", value, no, detail=extra or None, min=get("t_min"), max=get("t_max"),
          median=t_typ, mean=t_avg, stdev=get("t_stdev"), p99=get("99%"), iterations=iterations)


# -- --out_json ------------------------------------------------------------------------

JSON_KEYS = {  # --out_json key -> the text column it stands for
    "BW_peak": "BW peak[MB/sec]", "BW_average": "BW average[MB/sec]", "MsgRate": "MsgRate[Mpps]",
    "t_min": "t_min[usec]", "t_max": "t_max[usec]", "t_typical": "t_typical[usec]", "t_avg": "t_avg[usec]",
    "t_stdev": "t_stdev[usec]", "percentile_99": "99% percentile[usec]", "percentile_99.9": "99.9% percentile[usec]",
    "tps_average": "tps average[tps]",
}


def _parse_json(source: b.Source, allow_truncated: bool) -> b.ParsedRun:
    parsed = b.ParsedRun(format="perftest", source=source, tool="perftest")
    point = b.PointFactory(parsed)
    info, records = _read_report(source, allow_truncated, parsed)
    name = str(info.get("test", "")).strip().strip('"')
    m = JSON_TEST.match(name)
    if not m:
        raise source.error(None, f"test_info has no recognisable test name (found {name!r})")
    bench = benchmark_name(m.group("verb").replace("_", " "), m.group("kind"))
    kind = m.group("kind").upper()
    last: Optional[int] = None
    for no, rec in records:
        if "MsgSize" not in rec:
            raise source.error(no, "a results record without MsgSize")
        size = b.integer(source, no, str(rec["MsgSize"]), "MsgSize")
        b.require_increasing(source, no, last, size, "the results")
        last = size
        v: Dict[str, float] = {}
        for key, value in rec.items():
            if key in JSON_KEYS:
                v[JSON_KEYS[key]] = b.finite(source, no, str(value), key)
        if kind == "BW" and "BW average[MB/sec]" not in v:
            raise source.error(no, "a bandwidth record without BW_average")
        if kind != "BW" and not ({"t_avg[usec]", "t_typical[usec]"} & set(v)):
            raise source.error(no, "a latency record without t_typical or t_avg")
        iters = rec.get("n_iterations")
        iterations = b.integer(source, no, str(iters), "n_iterations") if iters is not None else None
        params = _params(size, info)
        _points(parsed, point, bench, bool(m.group("bidir")), kind, params, v, no, iterations=iterations or None)
    parsed.facts = {"test_info": info}
    if info.get("Device"):
        parsed.facts["device"] = str(info["Device"]).strip('"')
    parsed.warnings.append("--out_json does not say whether --report_gbits was used; bandwidths taken as MiB/s")
    return parsed


def _read_report(source: b.Source, allow_truncated: bool, parsed: b.ParsedRun):
    """(test_info, [(line, record), ...]) from strict JSON or perftest's unquoted form."""
    try:
        doc = json.loads(source.text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        info = doc.get("test_info")
        results = doc.get("results")
        if not isinstance(info, dict) or results is None:
            raise source.error(None, "a JSON report needs test_info and results objects")
        recs = results if isinstance(results, list) else [results]
        if not all(isinstance(r, dict) for r in recs):
            raise source.error(None, "results must be objects")
        return info, [(None, r) for r in recs]
    # perftest may end the report without a newline: unbalanced braces tell a cut file instead.
    stack: List[str] = []
    info: Dict[str, Any] = {}
    records: List[Tuple[int, Dict[str, Any]]] = []
    seen_root = False
    lines = source.all_lines()
    for i, raw in enumerate(lines):
        line = b.Line(i + 1, raw)
        text = line.text.strip().rstrip(",").strip()
        if not text:
            continue
        if text == "{" and not stack:
            if seen_root:
                raise source.error(line.no, "a second report in the file")
            stack.append("")
            seen_root = True
            continue
        if text.endswith("{"):
            name = text[:-1].strip().rstrip(":").strip().strip('"')
            if not stack:
                stack.append("")  # perftest may omit the outer brace
                seen_root = True
            stack.append(name)
            if name == "results":
                records.append((line.no, {}))
            continue
        if text in ("}", "},"):
            if not stack:
                raise source.error(line.no, "a closing brace without an opening one")
            stack.pop()
            continue
        key, sep, value = text.partition(":")
        key = key.strip().strip('"')
        if not sep or not key:
            raise source.error(line.no, f"expected 'key: value', found {text[:60]!r}")
        value = value.strip().strip('"')
        block = stack[-1] if stack else ""
        if block == "test_info":
            info[key] = value
        elif block == "results":
            rec = records[-1][1]
            if key == "MsgSize" and "MsgSize" in rec:
                records.append((line.no, {}))
                rec = records[-1][1]
            if key in rec:
                raise source.error(line.no, f"{key} appears twice in a results record")
            rec[key] = value
            if records[-1][0] is None or key == "MsgSize":
                records[-1] = (line.no, rec)
        else:
            raise source.error(line.no, f"'{key}' outside the test_info and results blocks")
    if stack:
        note = "the report's braces are not closed (the file was cut)"
        if not allow_truncated:
            raise source.truncated(len(lines), note)
        parsed.mark_incomplete(note)
    if not info:
        raise source.error(None, "no test_info block")
    records = [(no, rec) for no, rec in records if rec]
    if not records:
        raise source.error(None, "no results block")
    return info, records


FORMAT = Importer(name="perftest", title="perftest output", detect=detect, parse=parse)
