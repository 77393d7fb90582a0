"""The documentation against the code: every `fabricbench ...` command line shown in a code
block of the README or docs/ names a real command and only options that command takes, and
the site builds in strict mode (a broken link fails it)."""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(\s*)(```|~~~)(.*)$")
PROMPT = re.compile(r"^\s*(?:\$|#)?\s*(?:sudo\s+)?(?:[A-Z_]+=\S+\s+)*")


def doc_files():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))


def code_lines(path: Path):
    """(line number, text) of every line inside a fenced code block, continuations joined."""
    inside, pending, start = False, "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        if pending:
            line = pending + " " + line.strip()
        else:
            start = number
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        pending = ""
        yield start, line


def fabricbench_commands(line: str):
    """The argument lists of each `fabricbench` command on a shell line (after `;`, `&&`, `|`)."""
    line = line.split(" #", 1)[0]
    for part in re.split(r"\s*(?:;|&&|\|\|| \| )\s*", line):
        part = PROMPT.sub("", part, count=1).strip()
        for prefix in (".venv/bin/", "$(FB) ", "$FB "):
            if part.startswith(prefix):
                part = "fabricbench " + part[len(prefix):] if prefix.startswith("$") else part[len(prefix):]
        if not re.match(r"fabricbench(\s|$)", part):
            continue
        part = part.replace("[", " ").replace("]", " ").replace("...", " ")
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        yield words[1:]


def option_names(command) -> set:
    names = {"--help"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def check(words) -> str:
    """'' when `fabricbench WORDS` names a command and options it takes, else why not."""
    import click

    from fabricbench.cli import main

    command, ctx, path = main, click.Context(main, info_name="fabricbench"), ["fabricbench"]
    rest = list(words)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            if command is main or not command.no_args_is_help:
                return f"'{' '.join(path)}' has no command '{rest[0]}'"
            break
        path.append(rest.pop(0))
        command, ctx = sub, click.Context(sub, info_name=path[-1], parent=ctx)
    known = option_names(command) | option_names(main)  # global options (--db, ...) may come first
    takes_value = {
        opt: param.nargs
        for param in (*command.params, *main.params)
        if isinstance(param, click.Option) and not param.is_flag and not param.count
        for opt in param.opts
    }
    skip = 0
    for word in rest:
        if skip:
            skip -= 1
            continue
        if word == "--":
            break
        if re.match(r"^--?[A-Za-z]", word):
            name = word.split("=", 1)[0]
            if name not in known:
                return f"'{' '.join(path)}' takes no option {name}"
            if "=" not in word:
                skip = max(takes_value.get(name, 0), 0)
    return ""


def documented_commands():
    for path in doc_files():
        for number, line in code_lines(path):
            for words in fabricbench_commands(line):
                yield f"{path.relative_to(ROOT)}:{number}", words


def test_docs_show_commands():
    found = list(documented_commands())
    assert len(found) > 100, "the docs should show the commands they document"


def test_every_documented_command_exists_with_its_options():
    problems = [f"{where}: fabricbench {' '.join(words)}: {why}" for where, words in documented_commands() if (why := check(words))]
    assert not problems, "\n".join(problems)


def test_the_checker_catches_drift():
    assert check(["run", "quick", "--np", "2"]) == ""
    assert "no option --nope" in check(["run", "quick", "--nope", "2"])
    assert "no command 'frobnicate'" in check(["frobnicate"])
    assert check(["profile", "--label", "x", "--", "mpirun", "--bogus"]) == ""


def _mkdocs() -> list:
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("mkdocs is not installed (make test installs it)")
    return [exe]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_mkdocs(), "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, timeout=600,
    )


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path):
    copy = tmp_path / "repo"
    copy.mkdir()
    for name in ("mkdocs.yml", "docs", "scripts", "benchmarks", "src"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, copy / name)
    ok = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "site" / "reference" / "cli.html").is_file()
    page = copy / "docs" / "howto" / "measure.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [a page that is not there](nowhere.md).\n", encoding="utf-8")
    broken = _build(copy / "mkdocs.yml", tmp_path / "site2")
    assert broken.returncode != 0
    assert "nowhere.md" in broken.stderr
