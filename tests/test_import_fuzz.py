"""Damaged copies of the sample files, and files that are no results at all: an import
either succeeds or fails with one ImportFormatError naming the file, never a traceback,
and never leaves part of a run.

Hypothesis mutates each sample: truncates it anywhere, deletes, duplicates or swaps
lines, flips bytes, inserts garbage, re-encodes it as UTF-16. Each mutated file goes
through the same path as ``fabricbench import`` (``import_files``: checked, streamed into
the database in one transaction); the database's row counts must not change when the
import fails. Special files (a FIFO, /dev/zero, a directory) are refused at once.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import os
import signal
from contextlib import contextmanager

from fabricbench.importers import ImportFormatError
from fabricbench.importers.ingest import ImportOptions, import_files
from fabricbench.store import open_db

DATA = Path(__file__).parent / "data" / "import"

SAMPLES = {
    "osu": ["osu_latency.txt", "osu_collectives_full.txt", "osu_mbw_mr.txt", "osu_mbw_mr_7.4_window_varied.txt",
            "osu_latency_7.4_all_datatypes.txt", "osu_iallreduce_7.3_full.txt", "osu_put_latency_7.4.txt",
            "osu_init_7.4.txt"],
    "imb": ["imb_mpi1.txt", "imb_2018_alltoall_killed.txt"],
    "hpcc": ["hpccoutf_2ranks.txt"],
    "perftest": ["perftest_ib_write_bw.txt", "perftest_ib_write_lat.txt", "perftest_ib_write_bw.json"],
    "mpigraph": ["mpigraph_6nodes.txt"],
    "nccl": ["nccl_all_reduce_perf.txt", "nccl_all_gather.json", "nccl_all_reduce_perf_old_killed.txt"],
    "iperf3": ["iperf3_tcp_loopback.json", "iperf3_server_tcp_loopback.json", "iperf3_client_text.txt"],
    "netpipe": ["netpipe_tcp_loopback.out", "netpipe_openmpi_2ranks_screen.txt"],
    "mpip": ["mpip_known_calls_4ranks.mpiP"],
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
    kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "flip", "garbage", "several", "utf16"]))
    if kind == "utf16":
        return data.decode("utf-8").encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be"])))
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


@contextmanager
def time_limit(seconds: int):
    """An import that loops fails the test instead of hanging it."""
    def expired(_signum, _frame):
        raise TimeoutError(f"an import took over {seconds} s (an importer loops)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check(store, folder, name: str, fmt: str, data: bytes, detect: bool) -> None:
    before = counts(store)
    path = os.path.join(folder, name)
    with open(path, "wb") as fh:
        fh.write(data)
    try:
        with time_limit(60):
            (result,) = import_files(store, [path], ImportOptions(format=None if detect else fmt, again=True))
    except ImportFormatError as exc:
        assert not exc.internal, f"importer bug surfaced as an error: {exc}"
        assert str(exc).startswith(path), f"error does not name the file: {exc}"
        assert "\n" not in str(exc)
        assert counts(store) == before
        return
    after = counts(store)
    assert after["runs"] == before["runs"] + 1
    assert after["measurements"] == before["measurements"] + result["measurements"]
    assert store.count_measurements(result["run"]) == result["measurements"] > 0
    for m in store.measurements(result["run"]):
        assert m.value is not None and m.value == m.value  # not NaN
        assert m.unit in ("us", "MB/s", "msg/s", "Gflop/s", "GUP/s", "s", "%")


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_damaged_files_fail_cleanly_or_import_whole(store, tmp_path, fmt):
    samples = [(n, (DATA / n).read_bytes()) for n in SAMPLES[fmt]]

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def run(data):
        name, raw = data.draw(st.sampled_from(samples))
        damaged = data.draw(mutated(raw))
        detect = data.draw(st.booleans())
        check(store, str(tmp_path), name, fmt, damaged, detect)

    run()


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_every_truncation_point_of_a_sample(store, tmp_path, fmt):
    """Cut at every line boundary (and mid-line): an import fails cleanly or holds only whole lines."""
    name = SAMPLES[fmt][0]
    raw = (DATA / name).read_bytes()
    cuts = sorted({i for i, b in enumerate(raw) if b == ord("\n")} | set(range(0, len(raw), max(1, len(raw) // 40))))
    for cut in cuts[:: max(1, len(cuts) // 80)]:
        check(store, str(tmp_path), name, fmt, raw[:cut], detect=False)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "directory"])
def test_special_files_are_refused_and_nothing_is_stored(store, tmp_path, special):
    if special == "fifo":
        path = str(tmp_path / "results.fifo")
        os.mkfifo(path)  # nobody writes to it: reading would wait forever
    elif special == "directory":
        path = str(tmp_path)
    else:
        path = special
    before = counts(store)
    good = str(DATA / "osu_latency.txt")
    with pytest.raises(ImportFormatError) as info:
        import_files(store, [good, path], ImportOptions(again=True))
    assert str(info.value).startswith(path)
    assert ("is a directory" if special == "directory" else "not a regular file") in str(info.value)
    assert not info.value.internal
    assert counts(store) == before, "the good file before it is not stored either"


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.binary(max_size=2000), st.sampled_from(["utf-8", "utf-16", "latin-1"]))
def test_arbitrary_bytes_and_encodings(tmp_path_factory, data, encoding):
    store = open_db(str(tmp_path_factory.mktemp("any") / "any.db"))
    try:
        text = data.decode("latin-1").encode(encoding, errors="replace")
        check(store, str(tmp_path_factory.getbasetemp()), "input.txt", "osu", text, detect=True)
    finally:
        store.close()
