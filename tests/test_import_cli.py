"""``fabricbench import`` end to end: a real database, real files, the messages a user sees."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from fabricbench.cli import main
from fabricbench.importers import ImportFormatError, TruncatedError, import_file
from fabricbench.store import open_db

DATA = Path(__file__).parent / "data" / "import"


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "results.db")


def invoke(db, *args):
    return CliRunner().invoke(main, ["--db", db, *args], catch_exceptions=False)


def counts(db):
    store = open_db(db)
    with store._reader.connect() as conn:
        out = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in ("runs", "measurements", "artifacts")}
    store.close()
    return out


def test_import_stores_one_run_per_file_with_tags_and_provenance(db):
    files = [str(DATA / n) for n in ("osu_latency.txt", "imb_v3_pingpong_allreduce.txt", "mpigraph_6nodes.txt")]
    result = invoke(db, "import", *files, "--tag", "fabric=edr", "--label", "EDR", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [r["format"] for r in out] == ["osu", "imb", "mpigraph"]
    store = open_db(db)
    runs = store.list_runs(kind="import")
    assert [r.id for r in runs] == [r["run"] for r in out]
    osu, imb, graph = runs
    assert osu.tags == {"fabric": "edr"} and osu.label == "EDR" and osu.status == "complete" and osu.ranks == 2
    assert osu.provenance["import"]["format"] == "osu" and osu.provenance["import"]["tool_version"] == "7.3"
    assert osu.provenance["import"]["sha256"]
    assert imb.provenance["import"]["unit_conversions"]["MiB/s"].startswith("IMB 3.2.4")
    assert imb.command == "./IMB-MPI1 PingPong Allreduce"
    assert graph.ranks == 6 and graph.provenance["hosts"][0] == "node01"
    assert store.count_measurements(graph.id) == 60
    m = store.measurements(graph.id, benchmark="allpairs")[0]
    assert m.params["direction"] == "send" and m.detail["converted_from"] == "MiB/s"
    art = store.artifact(osu.id, "source")
    assert art["text"] == (DATA / "osu_latency.txt").read_text() and art["format"] == "osu"
    store.close()


def test_import_table_output_and_format_option(db):
    result = invoke(db, "import", str(DATA / "perftest_ib_write_bw.txt"), "--format", "perftest")
    assert result.exit_code == 0, result.output
    assert "ib_write_bw" in result.stdout and "MiB/s" in result.stdout
    wrong = invoke(db, "import", str(DATA / "perftest_ib_write_bw.txt"), "--format", "osu")
    assert wrong.exit_code == 1
    assert "perftest_ib_write_bw.txt" in wrong.stderr and "OSU" in wrong.stderr


def test_broken_file_names_file_and_line_and_writes_nothing(db, tmp_path):
    invoke(db, "import", str(DATA / "osu_bw.txt"))
    before = counts(db)
    lines = (DATA / "osu_bibw.txt").read_text().splitlines(keepends=True)
    lines[9] = lines[9].split()[0] + "\n"  # a column missing on line 10
    bad = tmp_path / "osu_bibw_bad.txt"
    bad.write_text("".join(lines))
    result = invoke(db, "import", str(DATA / "osu_latency.txt"), str(bad))
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert message.count("\n") == 0, message
    assert f"{bad}:10: expected 2 columns" in message
    assert "Traceback" not in result.output
    assert counts(db) == before, "a failed import must leave the database as it was (no run for the good file either)"


@pytest.mark.parametrize("content, expected", [
    (b"", "the file is empty"),
    (b"hello world\nthis is not a benchmark\n", "cannot tell which tool wrote this file"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n0   1.2\n1\xff\xfe 1.3\n", ":4: not valid UTF-8"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n0   1.2\n1   1.3", ":4: the last line has no end"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n", "has no results"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n8   1.2\n4   1.3\n", ":4: the 'MPI Latency Test' table: message size 4 after 8"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n8   abc\n", ":3: Latency (us): expected a number"),
    (b"START mpiGraph v1.5\nMsgSize\t16\nTimes\t1\nWindow\t1\nProcs\t2\n", "no Send and Recv matrix"),
    (b'{"start": {"version": "iperf 3.12", "test_start": {}}, "intervals": [], "end": {', "the JSON report ends early"),
    (b'{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server"}', "iperf3 reported an error"),
])
def test_clear_errors(tmp_path, content, expected):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError) as info:
        import_file(str(path))
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)
    assert not info.value.internal


def test_missing_file_and_unknown_format(db, tmp_path):
    result = invoke(db, "import", str(tmp_path / "nope.txt"))
    assert result.exit_code == 1 and "nope.txt: no such file" in result.stderr
    result = invoke(db, "import", str(DATA / "osu_bw.txt"), "--format", "nosuch")
    assert result.exit_code == 2


def test_truncated_file_is_refused_unless_allowed_then_marked_interrupted(db, tmp_path):
    text = (DATA / "imb_mpi1.txt").read_text()
    cut = text[: text.index("# Benchmarking Barrier")]
    path = tmp_path / "imb_cut.txt"
    path.write_text(cut)
    with pytest.raises(TruncatedError, match="MPI_Finalize"):
        import_file(str(path))
    before = counts(db)
    result = invoke(db, "import", str(path))
    assert result.exit_code == 1 and "--allow-truncated" in result.stderr
    assert counts(db) == before
    result = invoke(db, "import", str(path), "--allow-truncated", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)[0]
    assert out["status"] == "interrupted"
    store = open_db(db)
    run = store.get_run(out["run"])
    assert run.status == "interrupted" and "MPI_Finalize" in run.message
    assert "imb.Barrier" not in {m.benchmark for m in store.measurements(run.id)}
    assert store.count_measurements(run.id) == out["measurements"] > 0
    store.close()


def test_every_sample_imports_through_the_cli(db, tmp_path):
    files = sorted(str(p) for p in DATA.iterdir() if p.name != "README.md")
    result = invoke(db, "import", *files, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert len(out) == len(files) and all(r["status"] == "complete" for r in out)
    assert counts(db)["runs"] == len(files)


def test_import_works_on_a_copy_with_another_name(db, tmp_path):
    copy = tmp_path / "results.log"
    shutil.copy(DATA / "nccl_all_reduce_perf.txt", copy)
    result = invoke(db, "import", str(copy), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["benchmarks"] == ["nccl.all_reduce"]
