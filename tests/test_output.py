"""Terminal output people can read: tables never cut a number or a header word, at 80 and 200
columns and piped; control characters escaped; progress on a pipe; whole help lines."""
from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.table import Table

import fabricbench
from conftest import cli_env
from fabricbench.cli.output import FitTable, Output, printable
from fabricbench import numbers as fmt
from fabricbench.store import Host, Measurement
from test_report import make_demo_store

DATA = Path(__file__).parent / "data"
SEED004 = DATA / "scaling" / "seed004_lsdyna.csv"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
HOSTILE = "x\x1b[2J\x1b]0;pwned\x07\u202eevil"


def run_at(db: Path, width, *args: str):
    """The CLI with stdout and stderr on a pseudo-terminal `width` columns wide; (exit status, text)."""
    master, slave = pty.openpty()
    env = dict(cli_env(), COLUMNS=str(width), LINES="60", TERM="xterm-256color")
    proc = subprocess.Popen([sys.executable, "-m", "fabricbench", "--db", str(db), *args], stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    rc = proc.wait(timeout=120)
    return rc, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Demo runs 1-3 (EDR, FDR, imported OSU), seed 004 scaling runs 4-7, an HPCC import (run 8)."""
    d = tmp_path_factory.mktemp("output")
    db = d / "results.db"
    store, edr, fdr, imported = make_demo_store(db)
    env = cli_env()
    for args in (["import-scaling", str(SEED004)], ["import", str(DATA / "import" / "hpccoutf_2ranks.txt")]):
        subprocess.run([sys.executable, "-m", "fabricbench", "--db", str(db), *args], check=True, env=env,
                       capture_output=True, text=True)
    return db, store


def piped(db: Path, *args: str):
    proc = subprocess.run([sys.executable, "-m", "fabricbench", "--db", str(db), *args], capture_output=True, text=True,
                          env=cli_env(), timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


COMMANDS = {
    "show-bw": ("show", "1", "--benchmark", "bw"),
    "show-hpcc": ("show", "8"),
    "runs": ("runs",),
    "fabrics": ("fabrics",),
    "scaling-report": ("scaling-report", "4", "5", "6", "7", "--baseline", "8"),
    "compare": ("compare", "1", "2", "--benchmark", "latency"),
}


def expected_figures(store, name):
    """The stored values each command must show whole."""
    if name == "show-bw":
        return [fmt.number(getattr(m, s)) for m in store.measurements(1, benchmark="bw") for s in ("value", "min", "p99", "stdev")]
    if name == "show-hpcc":
        ms = store.measurements(8)
        return [fmt.number(m.value) for m in ms] + [m.params["test"] for m in ms]
    if name == "runs":
        return [r.created.replace("T", " ")[:19] for r in store.list_runs()] + ["complete", "imported OSU", "three-car gige"]
    if name == "fabrics":
        from fabricbench.analysis.peaks import load_catalog

        cat = load_catalog().values()
        return [fmt.number(f.data_rate_MBps) for f in cat] + [fmt.exact(f.signalling_gbps) for f in cat] + ["12,500.0"]
    if name == "scaling-report":
        # seed 004: the efficiencies the README quotes and the published times
        return ["0.38", "0.84", "0.12", "0.70", "14,273.0", "10,732.0", "1.69x", "3.80x", "2.29x", "12.83x"]
    if name == "compare":
        return [fmt.number(m.value) for m in store.measurements(1, benchmark="latency")] + ["Comparability"]
    raise KeyError(name)


@pytest.mark.parametrize("width", [80, 200, None], ids=["80-columns", "200-columns", "piped"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_number_or_header_word_is_cut(study, name, width):
    db, store = study
    rc, text = run_at(db, width, *COMMANDS[name]) if width else piped(db, *COMMANDS[name])
    assert rc == 0, text
    assert "\u2026" not in text and "..." not in text.replace("... and", ""), text
    for figure in expected_figures(store, name):
        assert figure in text, f"{figure!r} not shown whole by {name} at {width or 'a pipe'}:\n{text}"
    if width:
        too_wide = [line for line in text.splitlines() if len(line) > width]
        assert not too_wide, too_wide
    else:
        assert not re.search("[\u2500-\u257f]", text), "piped output is plain text, no box drawing"


def test_headers_wrap_at_word_boundaries_and_secondary_columns_move_out():
    t = Table(title="three-car gige (run 1)")
    for h in ("Nodes", "Ranks", "n", "Mean time (s)", "+- 95% CI (s)", "Stdev (s)", "Min (s)", "Max (s)", "Speedup",
              "Ideal", "Efficiency", "Failed"):
        t.add_column(h, justify="right")
    t.add_row("16", "64", "3", "14,273.0", "-", "-", "14,273.0", "14,273.0", "0.75", "2.00", "0.38", "0")
    t.secondary = {4, 5, 6, 7, 9, 11}
    buf = io.StringIO()
    Output(file=buf, force_terminal=True, width=80, color_system=None).print(t)
    text = buf.getvalue()
    first, second = text.split("(continued)")
    assert "Efficiency" in first and "0.38" in first and "Speedup" in first  # the primary columns stay together
    assert "Max (s)" in second and "Ideal" in second and "16" in second and "Max" not in first  # key column repeated
    words = {w for h in ("Mean time (s)", "+- 95% CI (s)", "Efficiency") for w in h.split()}
    cells = {c.strip() for line in text.splitlines() for c in re.split("[\u2502\u2503]", line)}
    assert all(any(w in c.split() for c in cells) for w in words)  # every header word whole on some line
    assert max(len(line) for line in text.splitlines()) <= 80


def test_too_narrow_for_two_columns_becomes_key_value_lines():
    t = Table(title="t")
    t.add_column("size (B)", justify="right")
    t.add_column("value (us)", justify="right")
    t.add_column("p99 (us)", justify="right")
    t.add_row("1,048,576", "123,456.7", "234,567.8")
    buf = io.StringIO()
    Output(file=buf, force_terminal=True, width=24, color_system=None).print(t)
    text = buf.getvalue()
    assert "size (B): 1,048,576" in text and "value (us): 123,456.7" in text and "p99 (us): 234,567.8" in text


def test_piped_tables_are_plain_text_with_every_digit():
    t = Table(title="bw")
    t.add_column("size (B)", justify="right")
    t.add_column("value (MB/s)", justify="right")
    t.add_row("4,194,304", "11,013.4")
    buf = io.StringIO()
    Output(file=buf, force_terminal=False, width=10).print(t)
    assert buf.getvalue().splitlines() == ["bw", " size (B)  value (MB/s)", "---------  ------------",
                                           "4,194,304      11,013.4"]


def test_control_characters_are_shown_escaped():
    assert printable(HOSTILE) == "x\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil"
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    buf = io.StringIO()
    Output(file=buf, force_terminal=True, width=80).print(HOSTILE, markup=False)
    t = Table()
    t.add_column("label")
    t.add_row(HOSTILE)
    Output(file=buf, force_terminal=False).print(t)
    assert "\x07" not in buf.getvalue() and "\u202e" not in buf.getvalue() and "pwned" in buf.getvalue()
    assert not re.search("\x1b\\[2J|\x1b\\]", buf.getvalue())


def test_hostile_labels_and_arguments_reach_the_terminal_escaped(tmp_path, cli):
    store = fabricbench.open_db(str(cli.db))
    store.save_run([Measurement("bw", {"size": 8, "host": "=cmd|' /C calc'!A0"}, "bandwidth", "MB/s", value=1.0)],
                   label=HOSTILE, hosts=[Host(hostname="n\x1b[31m1", digest="d", facts={})])
    for args in (("runs",), ("show", "1"), ("show", HOSTILE), ("export", "1", "--format", "json"), ("show", "1", "--benchmark", HOSTILE),
                 ("runs", "--tag", HOSTILE)):
        out = cli(*args, check=False)
        both = out.stdout + out.stderr
        assert "\x1b" not in both.replace("\\u001b", "") and "\x07" not in both, (args, both)
        assert "Traceback" not in both
    shown = cli("show", "1").stdout
    assert "\\x1b[2J" in shown and "n\\x1b[31m1" in shown
    bad = cli("show", "1", "--benchmark", "\x1b[2J", check=False)
    assert bad.returncode == 2 and "\\x1b[2J" in bad.stderr
    click_error = cli("export", "1", "--format", "\x1b[2Jx", check=False)
    assert click_error.returncode == 2 and "\x1b" not in click_error.stderr and "\\x1b[2J" in click_error.stderr


def test_csv_export_neutralises_formulas(cli):
    store = fabricbench.open_db(str(cli.db))
    store.save_run([Measurement("allpairs", {"size": 8, "src": "=cmd|' /C calc'!A0", "dst": "+1", "note": "@SUM(A1)",
                                                          "peer": "-2+3", "ok": "node01"}, "bandwidth", "MB/s", value=-1.5)])
    import csv

    rows = list(csv.DictReader(io.StringIO(cli("export", "1").stdout)))
    assert rows[0]["src"] == "'=cmd|' /C calc'!A0" and rows[0]["dst"] == "'+1" and rows[0]["note"] == "'@SUM(A1)"
    assert rows[0]["peer"] == "'-2+3" and rows[0]["ok"] == "node01"
    assert rows[0]["value"] == "-1.5"  # numbers stay numbers


def _cut_lines(text: str):
    """Lines that end the way click ends a description it cut short ('...'), usage lines aside."""
    return [line for line in text.splitlines() if line.rstrip().endswith(("...", "\u2026")) and "Usage:" not in line]


def test_help_lines_are_whole(tmp_path):
    env = dict(cli_env(), COLUMNS="80")
    out = subprocess.run([sys.executable, "-m", "fabricbench", "--help"], capture_output=True, text=True, env=env).stdout
    assert not _cut_lines(out), out
    assert "Run COMMAND (e.g. -- mpirun -np 4 ./app args) with the MPI" in out  # profile's line, not cut at "e.g."
    assert all(len(line) <= 80 for line in out.splitlines())
    for sub in ("lab", "db", "run", "report"):
        text = subprocess.run([sys.executable, "-m", "fabricbench", sub, "--help"], capture_output=True, text=True, env=env).stdout
        assert not _cut_lines(text), text


def test_progress_on_a_pipe_is_a_line_now_and_then():
    from fabricbench.cli.progress import LineProgress

    now = [0.0]
    buf = io.StringIO()
    p = LineProgress(Output(file=io.StringIO()), every=15.0, clock=lambda: now[0], out=Output(file=buf))
    task = p.add_task("[1/3] latency", total=10, size="")
    for i in range(10):
        now[0] += 2.0
        p.update(task, completed=i + 1, size=f"{2 ** i} B")
    lines = buf.getvalue().splitlines()
    assert lines == ["[16s] [1/3] latency 128 B 8/10"]  # nothing for the first 15 s, then one line per 15 s


@pytest.mark.mpi
def test_run_ends_with_the_headline_figures(cli):
    started = time.monotonic()
    out = cli("run", "latency", "bw", "allreduce", "--np", "2", "--sizes", "8:1K", "--time-budget", "0.01", "--repeat", "1")
    took = time.monotonic() - started
    store = fabricbench.open_db(str(cli.db))
    run = store.get_run("last")
    ms = store.measurements(run.id)
    # The figure of record: the median for latency, the rate over all iterations for bandwidth, and
    # for a collective without a per-call distribution its mean, labelled as such.
    lat = min((m for m in ms if m.benchmark == "latency"), key=lambda m: m.median)
    bw = max((m for m in ms if m.benchmark == "bw"), key=lambda m: m.value)
    ar = next(m for m in ms if m.benchmark == "allreduce" and m.params["size"] == 8)
    text = " ".join(out.stdout.split())  # wrapped at 80 columns
    assert f"lowest latency {fmt.number(lat.median)} us at {fmt.binary_size(lat.params['size'])} (median" in text, text
    assert f"peak bandwidth {fmt.number(bw.value)} MB/s at {fmt.binary_size(bw.params['size'])} (rate over all iterations" in text, text
    if (ar.detail or {}).get("stats_over", "").startswith("per-rank"):
        assert f"allreduce {fmt.number(ar.value)} us at 8 B (mean: no per-call distribution)" in text, text
    else:
        assert f"allreduce {fmt.number(ar.median)} us at 8 B (median" in text, text
    assert all(len(line) <= 80 for line in out.stdout.splitlines() if line.startswith("  ")), out.stdout
    assert f"more: fabricbench show {run.id}" in text
    # A pipe gets a progress line every LINE_EVERY seconds, not a redraw per point (24 points here).
    from fabricbench.cli.progress import LINE_EVERY

    assert len(out.stderr.splitlines()) <= 2 + took / LINE_EVERY, out.stderr
