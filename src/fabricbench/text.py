"""Text from outside (file contents, host names, labels, tags) made safe to show anywhere.

The one escape rule of every output -- terminal, CSV, HTML, Markdown, plot labels, export
stdout, warnings from libraries: each control character is replaced by a visible escape, so
an imported string cannot clear the screen (ESC [2J), set the clipboard (OSC 52), retitle the
window (OSC 0) or reorder what is shown. Characters escaped:

- C0 controls except newline and tab (``\\x00``-``\\x08``, ``\\x0b``-``\\x1f``), DEL (``\\x7f``)
  and the C1 controls (``\\x80``-``\\x9f``, among them CSI ``\\x9b`` and OSC ``\\x9d``): shown
  as ``\\xNN`` (ESC becomes the four characters ``\\x1b``);
- the Unicode direction marks and overrides (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069,
  "trojan source"): shown as ``\\uNNNN``.

An escape sequence thus becomes plain text: ``ESC [2J`` reads ``\\x1b[2J``. JSON output needs
nothing more: JSON writes these characters as ``\\u001b`` itself.
"""
from __future__ import annotations

import re
from typing import Any

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The same, and newline and tab too: for text that must stay on one line (a CSV cell, a label).
CONTROL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: "re.Match[str]") -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text: Any) -> str:
    """`text` with every control character shown escaped (\\x1b), newlines and tabs kept."""
    s = "" if text is None else str(text)
    return CONTROL.sub(_escape_char, s) if CONTROL.search(s) else s


def printable_line(text: Any) -> str:
    """`text` as one line: every control character escaped, newlines and tabs too (\\x0a, \\x09)."""
    s = "" if text is None else str(text)
    return CONTROL_ONE_LINE.sub(_escape_char, s) if CONTROL_ONE_LINE.search(s) else s


def has_control(text: Any) -> bool:
    """True if `text` holds a character that `printable` would escape."""
    return text is not None and CONTROL.search(str(text)) is not None
