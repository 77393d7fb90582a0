"""Findings -> words for file transfers (analysis.transfer): why a reader's copy failed.

The workflow stores the sentence with the failed copy (detail.reason) and the terminal and the
report show it as stored. Numbers by ``fabricbench.numbers``.
"""
from __future__ import annotations

from typing import Optional

from fabricbench.analysis.transfer import ReaderResult, ShortCopy
from fabricbench.numbers import count


def short_copy(s: ShortCopy) -> str:
    """'killed by signal 9 after 1,000 of 4,194,304 bytes', 'got 9 of 10 bytes'."""
    got = f"{count(s.got)} of {count(s.expected)} bytes"
    if s.kind == "signal":
        return f"killed by signal {s.code} after {got}"
    if s.kind == "status":
        return f"exited with status {s.code} after {got}"
    return f"got {got}"


def reader_reason(r: ReaderResult) -> Optional[str]:
    """Why the reader's copy failed (None when it got the whole file)."""
    if r.reason is not None:
        return r.reason
    return short_copy(r.short) if r.short is not None else None
