"""iperf3 ``-J`` JSON: TCP or UDP throughput between two hosts.

The report has ``start`` (version, connection, ``test_start`` with protocol, streams,
block size, duration, reverse), ``intervals`` (per-second sums) and ``end``
(``sum_sent``/``sum_received`` for TCP; ``sum`` with jitter and loss for UDP). Each
end sum becomes one measurement of benchmark ``iperf3``, metric ``bandwidth`` in
decimal MB/s (``bits_per_second`` / 8e6, recorded as converted from bit/s), with params
``{"size": block size, "protocol", "streams", "direction": "sent"|"received", "reverse"}``.
The measurement of the side that produced the intervals also carries their
distribution (n, min, median, max, stdev over the non-omitted intervals).
"""
from __future__ import annotations

import re
import statistics
from typing import Any, Dict, List

from fabricbench.importers import Importer
from fabricbench.importers import base as b


TEXT_MARKS = re.compile(r"^(Connecting to host |Server listening on |Accepted connection from |iperf Done\.|"
                        r"\[ ?ID\] Interval\s+Transfer\s+(Bitrate|Bandwidth)|\[\s*\d+\]\s+local \S+ port \d+ connected)")


def detect(source: b.Source) -> int:
    head = source.head_text
    if head.lstrip().startswith("{") and '"start"' in head and ('"intervals"' in head or '"connecting_to"' in head):
        return 90
    if sum(1 for t in source.head[:60] if TEXT_MARKS.match(t.strip())) >= 2:
        return 80  # iperf's screen output: refused in parse() with what to do instead
    return 0


def _obj(source: b.Source, parent: Dict[str, Any], key: str, where: str) -> Dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise source.error(None, f"{where}{key}: expected an object, found {type(value).__name__}")
    return value


def parse(source: b.Source, allow_truncated: bool = False) -> b.ParsedRun:
    if not source.head_text.lstrip().startswith("{"):
        raise source.error(None, "iperf3 text output is not supported: run iperf3 with -J (JSON output) "
                                 "and import that file")
    doc = b.load_json(source, "JSON report")
    if not isinstance(doc, dict):
        raise source.error(None, "an iperf3 report is a JSON object")
    if doc.get("error"):
        raise source.error(None, f"iperf3 reported an error: {str(doc['error'])[:200]}")
    parsed = b.ParsedRun(format="iperf3", source=source, tool="iperf3")
    point = b.PointFactory(parsed)
    start = _obj(source, doc, "start", "")
    end = _obj(source, doc, "end", "")
    test = _obj(source, start, "test_start", "start.")
    version = start.get("version")
    parsed.tool_version = str(version).replace("iperf", "").strip() if version else None
    protocol = str(test.get("protocol", "TCP")).upper()
    if protocol not in ("TCP", "UDP", "SCTP"):
        raise source.error(None, f"start.test_start.protocol: unknown protocol {protocol!r}")
    params: Dict[str, Any] = {"protocol": protocol}
    for key, name in (("blksize", "size"), ("num_streams", "streams")):
        if key in test:
            value = b.json_number(source, None, test[key], f"start.test_start.{key}")
            if value != int(value):
                raise source.error(None, f"start.test_start.{key}: expected a whole number")
            params[name] = int(value)
    reverse = bool(test.get("reverse", 0))
    params["reverse"] = reverse
    bidir = bool(test.get("bidir", 0))

    intervals = doc.get("intervals", [])
    if not isinstance(intervals, list):
        raise source.error(None, "intervals: expected a list")
    series, interval_sender = _interval_series(source, intervals)

    sums = []
    for key, direction in (("sum_sent", "sent"), ("sum_received", "received"), ("sum_sent_bidir_reverse", "sent_reverse"),
                           ("sum_received_bidir_reverse", "received_reverse")):
        if isinstance(end.get(key), dict):
            sums.append((key, direction, end[key]))
    if not sums and isinstance(end.get("sum"), dict):
        sums.append(("sum", "sent" if end["sum"].get("sender", True) else "received", end["sum"]))
    skipped = [f"end.{key}" for key, _d, s in sums if not _measured(s)]
    sums = [(key, d, s) for key, d, s in sums if _measured(s)]
    if skipped:  # a server's report: it did not measure what it sent (0 bytes), so nothing is stored for it
        parsed.facts["not_stored"] = [f"{k}: no bytes counted on this side" for k in skipped]
    if not sums:
        if not series:
            raise source.truncated(None, "the report has no end sums with figures and no intervals (the test did "
                                         "not run or the file was cut)")
        parsed.mark_incomplete("the report has no end sums (the test did not finish); the mean of its intervals "
                               "is kept")
        sums.append(("intervals", "sent" if interval_sender else "received", None))

    udp_sum = end.get("sum") if protocol == "UDP" and isinstance(end.get("sum"), dict) else None
    for key, direction, s in sums:
        p = dict(params, direction=direction)
        detail: Dict[str, Any] = {}
        if s is None:
            mbps = statistics.fmean(series)
        else:
            bps = b.json_number(source, None, s.get("bits_per_second"), f"end.{key}.bits_per_second")
            mbps = b.scale(bps, b.BIT_PER_S)
            for extra in ("bytes", "seconds", "retransmits", "jitter_ms", "lost_packets", "packets", "lost_percent"):
                if isinstance(s.get(extra), (int, float)) and not isinstance(s.get(extra), bool):
                    detail[extra] = s[extra]
            if udp_sum is not None and key != "sum" and direction == "received":
                for extra in ("jitter_ms", "lost_packets", "packets", "lost_percent"):
                    if extra in udp_sum and extra not in detail:
                        detail[extra] = udp_sum[extra]
        stats: Dict[str, Any] = {"mean": mbps}
        own = (direction in ("sent", "sent_reverse")) == interval_sender and not direction.endswith("reverse")
        if series and own:
            stats.update(n=len(series), min=min(series), max=max(series), median=statistics.median(series),
                         stdev=statistics.pstdev(series) if len(series) > 1 else 0.0)
            detail["intervals_MBps"] = [round(x, 6) for x in series]
        point("iperf3", p, "bandwidth", "MB/s", mbps, None, converted_from="bit/s", detail=detail, **stats)
    parsed.conversions["bit/s"] = "bits_per_second / 8e6 to MB/s"
    conn = start.get("connected")
    if isinstance(conn, list) and conn and isinstance(conn[0], dict):
        parsed.hosts = sorted({str(conn[0].get(k)) for k in ("local_host", "remote_host") if conn[0].get(k)})
    parsed.facts.update({
        "test_start": test,
        "connecting_to": start.get("connecting_to"),
        "system_info": start.get("system_info"),
        "cpu_utilization_percent": end.get("cpu_utilization_percent"),
        "sender_tcp_congestion": end.get("sender_tcp_congestion"),
        "bidir": bidir,
    })
    ts = start.get("timestamp")
    if isinstance(ts, dict):
        parsed.facts["timestamp"] = ts.get("time")
    return parsed


def _measured(s: Any) -> bool:
    """Whether an end sum holds a figure: iperf3 writes 0 bytes and 0 bit/s for what a side did not measure."""
    if not isinstance(s, dict):
        return False
    if s.get("bits_per_second") is None:
        return False
    nbytes = s.get("bytes")
    return not (nbytes == 0 or (s.get("bits_per_second") == 0 and nbytes is None))


def _interval_series(source: b.Source, intervals: List[Any]):
    """MB/s of each non-omitted interval sum, and whether the intervals are the sender's."""
    series: List[float] = []
    sender = True
    for i, item in enumerate(intervals):
        if not isinstance(item, dict) or not isinstance(item.get("sum"), dict):
            raise source.error(None, f"intervals[{i}]: expected an object with a 'sum'")
        s = item["sum"]
        if s.get("omitted"):
            continue
        bps = b.json_number(source, None, s.get("bits_per_second"), f"intervals[{i}].sum.bits_per_second")
        series.append(b.scale(bps, b.BIT_PER_S))
        if "sender" in s:
            sender = bool(s["sender"])
    return series, sender


FORMAT = Importer(name="iperf3", title="iperf3 JSON report", detect=detect, parse=parse)
