"""Why points of two runs found no partner, in words (``analysis.matching.Mismatch``)."""
from __future__ import annotations

from typing import Any, Dict, Sequence

from fabricbench.numbers import exact_binary_size as size_label

_NOUNS = {"ranks": "rank count", "pairs": "pair count"}


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _span(span: Dict[str, Any]) -> str:
    """'size 0 B', 'sizes 2 KiB to 4 MiB', or '3 points' for unsized benchmarks."""
    sizes = span["sizes"]
    if not sizes:
        return _plural(span["points"], "point")
    if len(sizes) == 1:
        return f"size {size_label(sizes[0])}"
    return f"sizes {size_label(sizes[0])} to {size_label(sizes[-1])}"


def reason(m: Any) -> str:
    """'only in A (22 sizes)', 'ranks 2 in A, 4 in B', 'rank count not recorded in A (...)'."""
    why = m.why
    kind = why["kind"]
    if kind == "only":
        return f"only in {why['side']} ({_plural(*why['count'])})"
    if kind == "not_recorded":
        how = "; ".join(h or f"record {n}" for n, h in zip(why["names"], why["how"]))
        return f"{' and '.join(_NOUNS.get(n, n) for n in why['names'])} not recorded in {why['side']} ({how})"
    if kind == "differ":
        return "; ".join(f"{name} {'/'.join(va)} in A, {'/'.join(vb)} in B" for name, va, vb in why["diffs"])
    return ", ".join(f"{_span(span)} only in {side}" for side, span in why["spans"])


def mismatch_dict(m: Any) -> Dict[str, Any]:
    return {"what": m.what, "reason": reason(m), "points_a": m.count_a, "points_b": m.count_b}


def mismatch_paragraph(mismatches: Sequence[Any]) -> str:
    """'Not compared: bw only in A (22 sizes); allreduce: ranks 2 in A, 4 in B.' ('' when none)."""
    if not mismatches:
        return ""
    parts = [f"{m.what} {reason(m)}" if m.why["kind"] == "only" else f"{m.what}: {reason(m)}" for m in mismatches]
    return "Not compared: " + "; ".join(parts) + "."
