"""MkDocs hooks: the reference pages generated from the code at build time.

Every command's --help (from the click tree), the engine's benchmark table (the one
`fabricbench-mpi list` exports at install), the record schema, the peak catalog and
benchmarks/RESULTS.md become pages, so the reference cannot drift from the code.
"""
from __future__ import annotations

import json
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def on_files(files, config):
    for uri, make in (
        ("reference/cli.md", cli_page),
        ("reference/benchmarks.md", benchmarks_page),
        ("reference/schema.md", schema_page),
        ("reference/peaks.md", peaks_page),
        ("results.md", results_page),
    ):
        files.append(File.generated(config, uri, content=make()))
    return files


# ---- every command's --help -----------------------------------------------------------

def _walk(command, ctx, path):
    """(path, help text) of `command` and of every subcommand below it, depth first."""
    import click

    yield path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            sub_ctx = click.Context(sub, info_name=name, parent=ctx, terminal_width=88, max_content_width=88)
            yield from _walk(sub, sub_ctx, f"{path} {name}")


def cli_page() -> str:
    import click

    from fabricbench.cli import main

    ctx = click.Context(main, info_name="fabricbench", terminal_width=88, max_content_width=88)
    out = [
        "# Command reference",
        "",
        "Generated from the command line itself when the documentation is built: each",
        "section is what `fabricbench ... --help` prints.",
        "",
    ]
    for path, text in _walk(main, ctx, "fabricbench"):
        out += [f"## `{path}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(out)


# ---- the engine's benchmark table ---------------------------------------------------------

def benchmarks_page() -> str:
    from fabricbench.suite import load_benchmarks

    table = load_benchmarks()  # NativeMissing (a clear message) when the engine is not built
    out = [
        "# Engine benchmarks",
        "",
        "Generated from the engine's own table (`fabricbench-mpi list`) when the documentation is",
        "built. Each benchmark's definition is in [the engine reference](engine.md); every one",
        "takes the options listed, and any other is refused with a usage message (exit 2).",
        "",
        "| benchmark | family | what it measures | metrics | default sizes | ranks |",
        "|---|---|---|---|---|---|",
    ]
    for spec in table.values():
        sizes = spec.sizes or (", ".join(str(n) for n in spec.fixed_sizes) if spec.fixed_sizes else "-")
        ranks = f"{spec.min_ranks}+" + (", even" if spec.even_ranks else "")
        out.append(
            f"| `{spec.name}` | {spec.family} | {spec.summary} | {', '.join(spec.metrics) or '-'} | {sizes} | {ranks} |"
        )
    out += ["", "## Options per benchmark", ""]
    for spec in table.values():
        out.append(f"- `{spec.name}`: " + " ".join(f"`{o}`" for o in spec.options))
    return "\n".join(out) + "\n"


# ---- the record schema --------------------------------------------------------------------

def _type_of(prop: dict) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind:
        return kind
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    return "any"


def schema_page() -> str:
    path = ROOT / "src" / "fabricbench" / "data" / "record.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    out = [
        "# Engine record schema",
        "",
        "Generated from `src/fabricbench/data/record.schema.json` when the documentation is built.",
        "The engine writes JSON Lines on stdout, rank 0 only: a `run` record, one `point` record",
        "per measured point (flushed as it is measured), and an `end` record.",
        "",
        schema.get("description", ""),
        "",
    ]
    for name, part in schema.get("$defs", {}).items():
        out += [f"## `{name}`", "", part.get("description", ""), ""]
        props = part.get("properties", {})
        if not props:
            continue
        required = set(part.get("required", ()))
        out += ["| field | type | required | meaning |", "|---|---|---|---|"]
        for field, prop in props.items():
            meaning = " ".join(str(prop.get("description", "")).split()).replace("|", "\\|")
            out.append(f"| `{field}` | {_type_of(prop)} | {'yes' if field in required else ''} | {meaning} |")
        out.append("")
    return "\n".join(out)


# ---- the peak catalog -------------------------------------------------------------------

def peaks_page() -> str:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib

    path = ROOT / "src" / "fabricbench" / "data" / "fabrics.toml"
    catalog = tomllib.loads(path.read_text(encoding="utf-8"))["fabric"]
    out = [
        "# Peak catalog",
        "",
        "Generated from `src/fabricbench/data/fabrics.toml` when the documentation is built.",
        "Data rate per direction = lanes x signalling rate x encoding efficiency; bandwidth in",
        "decimal MB/s (10^6 B/s), as OSU, IMB and HPCC report it. `--tag fabric=KEY` ties a run",
        "to an entry; `fabricbench fabrics` prints the same table.",
        "",
        "| key | link | lanes | Gb/s per lane | encoding | data rate (Gb/s) | MB/s | MPI latency (us) | MPI bandwidth (MB/s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def span(value):
        return "-" if not value else f"{value[0]:g} to {value[1]:g}"

    for key, entry in catalog.items():
        out.append(
            f"| `{key}` | {entry.get('name', key)} | {entry.get('lanes', '-')} | {entry.get('signalling_gbps', '-')} "
            f"| {entry.get('encoding', '-')} | {entry.get('data_rate_gbps', '-')} | {entry.get('data_rate_MBps', '-')} "
            f"| {span(entry.get('mpi_latency_us'))} | {span(entry.get('mpi_bandwidth_MBps'))} |"
        )
    out += ["", "## Sources", ""]
    for key, entry in catalog.items():
        line = f"- `{key}`: {entry.get('source', 'no source given')}"
        if entry.get("perf_source"):
            line += f"; MPI figures: {entry['perf_source']}"
        out.append(line)
    return "\n".join(out) + "\n"


def results_page() -> str:
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    # Links in RESULTS.md are relative to benchmarks/; on the site the page sits at the top.
    return text.replace("](../docs/", "](")
