"""No raw control byte from imported text reaches any output (issue 37): export, HTML, Markdown,
CSV, plots and the terminal show ESC as the four characters \\x1b (fabricbench.text)."""
from __future__ import annotations

import re
from pathlib import Path


from fabricbench.text import has_control, printable, printable_line

DATA = Path(__file__).parent / "data" / "import"

ESC = "\x1b"
CLEAR = ESC + "[2J" + ESC + "[31mRED"            # clear the screen, turn red
OSC52 = ESC + "]52;c;ZXZpbA==" + "\x07"          # set the clipboard
OSC0 = ESC + "]0;owned" + "\x07"                 # retitle the window
C1 = "\x9b2J\x9d0;x\x9c"                         # CSI, OSC and ST as C1 controls
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_printable_escapes_every_control_and_keeps_text():
    assert printable(CLEAR) == "\\x1b[2J\\x1b[31mRED"
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable_line("a\tb\nc") == "a\\x09b\\x0ac"
    assert printable(C1) == "\\x9b2J\\x9d0;x\\x9c"
    assert printable("abc\u202edef") == "abc\\u202edef"
    assert printable(None) == "" and printable(12) == "12"
    assert has_control(OSC52) and not has_control("node01 µs ≤")


def test_html_and_markdown_filters_escape_controls():
    from markupsafe import Markup

    from fabricbench.report.render import _finalize, md_escape

    assert RAW.search(md_escape(OSC52)) is None
    assert "\\\\x1b\\]52" in md_escape(OSC52)  # Markdown shows \\x1b]52
    assert _finalize(OSC0) == "\\x1b]0;owned\\x07"
    assert _finalize(Markup("<b>ok</b>")) == Markup("<b>ok</b>")


def test_plot_labels_and_library_warnings_escaped():
    import warnings

    from matplotlib.figure import Figure

    from fabricbench.report.plots import save_figure

    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2], [1, 2], label="host" + CLEAR)
    ax.set_title(OSC0)
    ax.set_xticks([1, 2], ["x" + ESC + "[2J", "y\x9b"])
    ax.legend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svg = save_figure(fig, "svg").decode()
    assert RAW.search(svg) is None
    assert "\\x1b[2J" in svg
    for w in caught:
        assert RAW.search(str(w.message)) is None


def _payload_files(tmp_path: Path):
    text = (DATA / "mpigraph_6nodes.txt").read_text()
    mpigraph = tmp_path / "mpigraph.txt"
    mpigraph.write_text(text.replace("node01", "x" + CLEAR).replace("node02", "y" + C1), encoding="utf-8")
    osu = tmp_path / "osu.txt"
    lines = (DATA / "osu_latency_7.4_all_datatypes.txt").read_text().splitlines(keepends=True)
    osu.write_text("".join(l.replace("MPI_CHAR", "MPI_CHAR" + OSC52 + OSC0) for l in lines), encoding="utf-8")
    return mpigraph, osu


def _no_raw(where: str, text: str) -> None:
    m = RAW.search(text)
    assert m is None, f"raw control {m.group(0)!r} in {where}: ...{text[max(0, m.start() - 40):m.end() + 40]!r}"


def test_payloads_never_reach_outputs_raw(cli, tmp_path):
    mpigraph, osu = _payload_files(tmp_path)
    out = cli("import", str(mpigraph), "--label", "lbl" + CLEAR, "--tag", "site=t" + OSC0)
    _no_raw("import output", out.stdout + out.stderr)
    out = cli("import", str(osu), "--label", "osu" + C1, "--tag", "note=" + OSC52)
    _no_raw("import output", out.stdout + out.stderr)

    for run in ("1", "2"):
        for fmt in ("csv", "json"):
            out = cli("export", run, "--format", fmt)
            _no_raw(f"export {fmt} of run {run}", out.stdout + out.stderr)
        csv_file = tmp_path / f"run{run}.csv"
        cli("export", run, "-o", str(csv_file))
        _no_raw("exported CSV file", csv_file.read_text())
        out = cli("show", run)
        _no_raw("show", out.stdout + out.stderr)
    csv_text = cli("export", "1").stdout
    assert "\\x1b[2J" in csv_text  # shown escaped, not dropped

    html = tmp_path / "r.html"
    out = cli("report", "1", "2", "-o", str(html))
    _no_raw("report output", out.stdout + out.stderr)
    assert "Glyph" not in out.stderr or "\\x1b" in out.stderr
    _no_raw("HTML", html.read_text())
    assert "\\x1b[2J" in html.read_text()

    md = tmp_path / "r.md"
    out = cli("report", "1", "2", "--format", "markdown", "-o", str(md))
    _no_raw("markdown output", out.stdout + out.stderr)
    _no_raw("Markdown", md.read_text())
    for plot in (tmp_path / "r_plots").glob("*"):
        _no_raw(f"plot {plot.name}", plot.read_text(errors="replace"))

    out = cli("runs")
    _no_raw("runs", out.stdout + out.stderr)
