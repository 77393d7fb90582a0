"""Damaged copies of real sample files: an import either succeeds or fails with one
ImportFormatError naming the file, never a traceback, and never leaves part of a run.

Hypothesis mutates each sample: truncates it anywhere, deletes, duplicates or swaps
lines, flips bytes, inserts garbage. Each mutated file goes through the same path as
``fabricbench import``: parse, then store in one transaction; the database's row
counts must not change when the import fails.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricbench.importers import ImportFormatError, parse_source, store_parsed
from fabricbench.importers.base import Source
from fabricbench.store import open_db

DATA = Path(__file__).parent / "data" / "import"

SAMPLES = {
    "osu": ["osu_latency.txt", "osu_collectives_full.txt", "osu_mbw_mr.txt"],
    "imb": ["imb_mpi1.txt"],
    "hpcc": ["hpccoutf_2ranks.txt"],
    "perftest": ["perftest_ib_write_bw.txt", "perftest_ib_write_lat.txt", "perftest_ib_write_bw.json"],
    "mpigraph": ["mpigraph_6nodes.txt"],
    "nccl": ["nccl_all_reduce_perf.txt", "nccl_all_gather.json"],
    "iperf3": ["iperf3_tcp_loopback.json"],
}

GARBAGE = st.one_of(
    st.binary(min_size=1, max_size=40),
    st.text(min_size=1, max_size=40).map(lambda s: s.encode("utf-8")),
    st.sampled_from([b"\x00", b"\xff\xfe", b"nan", b"-1", b"1e999", b"# OSU MPI Latency Test v1", b"\t\t",
                     b"}", b"{", b"END mpiGraph", b"Begin of Summary section.", b"#bytes #repetitions"]),
)


@st.composite
def mutated(draw, data: bytes) -> bytes:
    lines = data.split(b"\n")
    kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "flip", "garbage", "several"]))
    steps = [kind] if kind != "several" else draw(
        st.lists(st.sampled_from(["delete", "duplicate", "swap", "flip", "garbage"]), min_size=2, max_size=4))
    out = data
    for step in steps:
        lines = out.split(b"\n")
        if step == "truncate":
            out = out[: draw(st.integers(0, max(0, len(out) - 1)))]
        elif step == "delete":
            i = draw(st.integers(0, len(lines) - 1))
            out = b"\n".join(lines[:i] + lines[i + 1:])
        elif step == "duplicate":
            i = draw(st.integers(0, len(lines) - 1))
            out = b"\n".join(lines[: i + 1] + [lines[i]] + lines[i + 1:])
        elif step == "swap":
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            out = b"\n".join(lines)
        elif step == "flip":
            buf = bytearray(out)
            if buf:
                pos = draw(st.integers(0, len(buf) - 1))
                buf[pos] ^= 1 << draw(st.integers(0, 7))
            out = bytes(buf)
        elif step == "garbage":
            pos = draw(st.integers(0, len(out)))
            out = out[:pos] + draw(GARBAGE) + out[pos:]
    return out


def counts(store) -> dict:
    with store._reader.connect() as conn:
        return {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in ("runs", "measurements", "artifacts")}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = open_db(str(tmp_path_factory.mktemp("fuzz") / "fuzz.db"))
    yield s
    s.close()


def check(store, name: str, fmt: str, data: bytes, detect: bool) -> None:
    before = counts(store)
    try:
        source = Source.from_bytes(name, data)
        parsed = parse_source(source, format=None if detect else fmt)
    except ImportFormatError as exc:
        assert not exc.internal, f"importer bug surfaced as an error: {exc}"
        assert str(exc).startswith(name), f"error does not name the file: {exc}"
        assert "\n" not in str(exc)
        assert counts(store) == before
        return
    run = store_parsed(store, parsed)
    after = counts(store)
    assert after["runs"] == before["runs"] + 1
    assert after["measurements"] == before["measurements"] + len(parsed.measurements)
    assert store.count_measurements(run.id) == len(parsed.measurements) > 0
    for m in parsed.measurements:
        assert m.value is not None and m.value == m.value  # not NaN
        assert m.unit in ("us", "MB/s", "msg/s", "Gflop/s", "GUP/s", "s")


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_damaged_files_fail_cleanly_or_import_whole(store, fmt):
    samples = [(n, (DATA / n).read_bytes()) for n in SAMPLES[fmt]]

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def run(data):
        name, raw = data.draw(st.sampled_from(samples))
        damaged = data.draw(mutated(raw))
        detect = data.draw(st.booleans())
        check(store, name, fmt, damaged, detect)

    run()


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_every_truncation_point_of_a_sample(store, fmt):
    """Cut at every line boundary (and mid-line): an import fails cleanly or holds only whole lines."""
    name = SAMPLES[fmt][0]
    raw = (DATA / name).read_bytes()
    cuts = sorted({i for i, b in enumerate(raw) if b == ord("\n")} | set(range(0, len(raw), max(1, len(raw) // 40))))
    for cut in cuts[:: max(1, len(cuts) // 80)]:
        check(store, name, fmt, raw[:cut], detect=False)
