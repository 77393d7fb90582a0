"""``fabricbench import`` end to end: a real database, real files, the messages a user sees."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from fabricbench.cli import main
from fabricbench.importers import ImportFormatError, import_file
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
    stored = store.measurements(osu.id)
    assert [(m.params, m.value) for m in stored] == [(m.params, m.value) for m in import_file(files[0]).measurements]
    art = store.artifact(osu.id, "source")
    assert art["text"] == (DATA / "osu_latency.txt").read_text() and art["format"] == "osu"
    store.close()


def test_import_table_output_and_format_option(db):
    result = invoke(db, "import", str(DATA / "perftest_ib_write_bw.txt"), "--format", "perftest")
    assert result.exit_code == 0, result.output
    assert "ib_write_bw" in result.stdout and "MiB/s" in result.stdout
    wrong = invoke(db, "import", str(DATA / "perftest_ib_send_bw_gbits.txt"), "--format", "osu")
    assert wrong.exit_code == 1
    assert "perftest_ib_send_bw_gbits.txt" in wrong.stderr and "OSU" in wrong.stderr


def test_a_broken_file_names_file_and_line_and_nothing_is_stored(db, tmp_path):
    invoke(db, "import", str(DATA / "osu_bw.txt"))
    before = counts(db)
    lines = (DATA / "osu_bibw.txt").read_text().splitlines(keepends=True)
    lines[9] = lines[9].split()[0] + "\n"  # a column missing on line 10
    bad = tmp_path / "osu_bibw_bad.txt"
    bad.write_text("".join(lines))
    result = invoke(db, "import", str(DATA / "osu_latency.txt"), str(DATA / "netpipe_tcp_loopback.out"), str(bad))
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert message.count("\n") == 0, message
    assert f"{bad}:10: expected 2 columns" in message
    assert "Traceback" not in result.output
    assert counts(db) == before, "a failed import must leave the database as it was (no run for the good files either)"


@pytest.mark.parametrize("content, expected", [
    (b"", "the file is empty"),
    (b"hello world\nthis is not a benchmark\n", "cannot tell which tool wrote this file"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n0   1.2\n1\xff\xfe 1.3\n", ":4: not valid UTF-8"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n0   1.2\n1   1.3", ":4: the last line has no end"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n", "has no results"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n8   1.2\n4   1.3\n", ":4: the 'MPI Latency Test' table: message size 4 after 8"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n8   abc\n", ":3: Latency (us): expected a number"),
    (b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n99999999999999999999   1.2\n", ":3: Size: 99999999999999999999 is outside the range"),
    (b"\xff\xfe#\x00 \x00O\x00S\x00U\x00", ":1: UTF-16 text"),
    (b"START mpiGraph v1.5\nMsgSize\t16\nTimes\t1\nWindow\t1\nProcs\t2\n", "no Send and Recv matrix"),
    (b'{"start": {"version": "iperf 3.12", "test_start": {}}, "intervals": [], "end": {', "the JSON report ends early"),
    (b'{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server"}', "iperf3 reported an error"),
    (b"@ mpiP\n@ Command : ./a.out \n@ Version                  : 3.5.0\n", "no 'MPI Time (seconds)' section"),
])
def test_clear_errors(tmp_path, content, expected):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError) as info:
        import_file(str(path))
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)
    assert not info.value.internal


def test_special_files_are_refused_at_once(cli, tmp_path):
    fifo = tmp_path / "osu.fifo"
    os.mkfifo(fifo)
    for path, expected in ((fifo, "is a FIFO (named pipe), not a regular file"),
                           ("/dev/zero", "is a device, not a regular file"),
                           (tmp_path, "is a directory, not a results file")):
        proc = cli("import", str(path), check=False, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.strip().count("\n") == 0 and expected in proc.stderr and "Traceback" not in proc.stderr
    assert not cli.db.exists() or counts(str(cli.db))["runs"] == 0


def test_files_over_the_size_limit_are_refused_and_the_limit_can_be_raised(db):
    result = invoke(db, "import", str(DATA / "imb_mpi1.txt"), "--max-file-size", "4K")
    assert result.exit_code == 1
    assert "imb_mpi1.txt: is 18,394 bytes, over the import limit of 4,096 bytes (raise it with --max-file-size)" \
        in result.stderr
    assert invoke(db, "import", str(DATA / "imb_mpi1.txt"), "--max-file-size", "1M").exit_code == 0


def test_a_file_imported_twice_is_reported_and_stored_again_only_with_again(db, tmp_path):
    first = invoke(db, "import", str(DATA / "osu_latency.txt"), "--json")
    run_id = json.loads(first.stdout)[0]["run"]
    copy = tmp_path / "same_content.txt"
    shutil.copy(DATA / "osu_latency.txt", copy)
    again = invoke(db, "import", str(copy), str(DATA / "osu_bw.txt"), str(DATA / "osu_bw.txt"))
    assert again.exit_code == 0, again.output
    text = " ".join(again.stdout.split())
    assert f"same_content.txt: same content as run {run_id}; not stored again" in text
    assert "osu_bw.txt: same content as" in text and "in this import" in text
    assert counts(db)["runs"] == 2
    forced = invoke(db, "import", str(copy), "--again", "--json")
    assert json.loads(forced.stdout)[0]["status"] == "complete" and counts(db)["runs"] == 3


def test_import_adds_what_the_file_does_not_say(db):
    bare = invoke(db, "import", str(DATA / "osu_alltoall.txt"), "--json")
    bare_run = json.loads(bare.stdout)[0]["run"]
    given = invoke(db, "import", str(DATA / "osu_collectives_full.txt"), str(DATA / "osu_latency.txt"),
                   "--ranks", "4", "--hosts", "node01,node02", "--ppn", "2", "--tag", "fabric=edr", "--json")
    assert given.exit_code == 0, given.output
    coll, lat = json.loads(given.stdout)
    store = open_db(db)
    unknown = store.get_run(bare_run)
    assert unknown.ranks is None, "an unknown rank count stays unknown, not guessed"
    assert all("ranks" not in m.params for m in store.measurements(bare_run))
    run = store.get_run(coll["run"])
    assert run.ranks == 4 and run.tags == {"fabric": "edr"}
    assert run.provenance["hosts"] == ["node01", "node02"] and run.provenance["ppn"] == 2
    assert run.provenance["import"]["given"] == {"ranks": 4, "hosts": ["node01", "node02"], "ppn": 2}
    assert {m.params["ranks"] for m in store.measurements(run.id)} == {4}
    # what the file says wins: osu_latency runs on exactly two ranks
    assert {m.params["ranks"] for m in store.measurements(lat["run"])} == {2}
    store.close()
    hosts_ppn = invoke(db, "import", str(DATA / "osu_ialltoall_5.6.3.txt"), "--hosts", "a,b,c", "--ppn", "4", "--json")
    assert json.loads(hosts_ppn.stdout)[0]["ranks"] == 12


def test_a_run_that_stopped_early_is_stored_interrupted_with_a_note(db):
    result = invoke(db, "import", str(DATA / "osu_latency_killed_after_16k.txt"), str(DATA / "imb_2018_alltoall_killed.txt"))
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "interrupted:" in text and "stops at 16384 bytes" in text and "MPI_Finalize" in text
    store = open_db(db)
    osu, imb = store.list_runs()
    assert osu.status == imb.status == "interrupted"
    assert "16384" in osu.message and store.count_measurements(osu.id) == 16
    store.close()
    told = invoke(db, "import", str(DATA / "osu_latency_killed_after_16k.txt"), "--again", "--max-message-size", "16K",
                  "--json")
    assert json.loads(told.stdout)[0]["status"] == "complete"


def test_a_cut_off_last_line_is_refused_unless_allowed(db, tmp_path):
    text = (DATA / "imb_mpi1.txt").read_text()
    path = tmp_path / "imb_cut.txt"
    path.write_text(text[: text.index("# Benchmarking Barrier") - 30])
    before = counts(db)
    result = invoke(db, "import", str(path))
    assert result.exit_code == 1 and "--allow-truncated" in result.stderr and "the last line has no end" in result.stderr
    assert counts(db) == before
    result = invoke(db, "import", str(path), "--allow-truncated", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)[0]
    assert out["status"] == "interrupted" and "cut off" in out["message"]


def test_mpip_report_becomes_a_profile_run_that_show_profile_reads(db):
    result = invoke(db, "import", str(DATA / "mpip_known_calls_4ranks.mpiP"), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)[0]
    assert out["kind"] == "profile" and out["benchmarks"] == ["mpi_profile"]
    shown = invoke(db, "show-profile", str(out["run"]), "--json")
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)["summary"]
    assert summary["ranks"] == 4 and summary["hosts"] == ["vm"]
    assert summary["top_calls"][0]["call"] == "MPI_Barrier"
    text = invoke(db, "show-profile", str(out["run"]))
    assert "MPI profile: 4 ranks" in text.stdout


def test_every_sample_imports_through_the_cli(db):
    files = sorted(str(p) for p in DATA.iterdir() if p.is_file() and p.name not in ("README.md", "iperf3_client_text.txt"))
    result = invoke(db, "import", *files, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert len(out) == len(files) and all(r["status"] in ("complete", "interrupted") for r in out)
    assert counts(db)["runs"] == len(files)


def test_import_works_on_a_copy_with_another_name(db, tmp_path):
    copy = tmp_path / "results.log"
    shutil.copy(DATA / "nccl_all_reduce_perf.txt", copy)
    result = invoke(db, "import", str(copy), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["benchmarks"] == ["nccl.all_reduce"]
