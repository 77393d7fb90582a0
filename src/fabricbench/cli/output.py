"""What the command line prints, and how: the consoles, tables that never cut a number, safe text.

Every command prints through ``console`` (stdout) or ``err_console`` (stderr), instances of
``Output``, a rich Console that

- shows control characters in any text escaped (``\\x1b``, ``\\u202e``), so a label or a host
  name cannot move the cursor, retitle the window or hide text (``printable``);
- lays every rich Table out so that no number and no header word is ever cut: at a terminal
  the columns get at least their widest number and their longest header word, headers wrap at
  word boundaries; a table that still does not fit moves columns into a second table (its
  secondary columns first, the key column repeated), and below that becomes ``key: value``
  lines. A table says which columns are keys and which are secondary with the attributes
  ``key_columns`` (default 1) and ``secondary`` (column indexes);
- when stdout is not a terminal (a pipe, a file), prints tables as plain aligned text with
  every cell whole and never wraps a line.
"""
from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from fabricbench.text import CONTROL, printable  # noqa: F401 - printable is part of this module's API

# The escape rule lives in fabricbench.text (one place for every output); re-exported here.
_CONTROL = CONTROL
_NUMBER_WORD = re.compile(r"^[-+(\[]?[-+]?[0-9][0-9.,:/eE+\-]*[%x)\]]?[,;]?$")
FOLD_WORDS_OVER = 24  # a text word longer than this (a path, a URL) may fold; numbers never do
HEADER_LINES = 3  # a second table is better than headers taller than this


def safe_markup(text: Any) -> str:
    """User text for a string that rich reads as markup: control characters and [ escaped."""
    return escape(printable(text))


def _printable_text(t: Text) -> Text:
    if not _CONTROL.search(t.plain):
        return t
    return Text(printable(t.plain), style=t.style, justify=t.justify, no_wrap=t.no_wrap, overflow=t.overflow)


def _as_text(cell: Any) -> Text:
    """A table cell (markup string, Text or None) as Text, controls escaped."""
    if cell is None:
        return Text("")
    if isinstance(cell, Text):
        return _printable_text(cell)
    if isinstance(cell, str):
        if "[" not in cell:
            return Text(printable(cell))
        try:
            return Text.from_markup(printable(cell))
        except Exception:  # noqa: BLE001 - text that is not valid markup is shown as it is
            return Text(printable(cell))
    return Text(printable(str(cell)))


def _words(text: str) -> List[str]:
    return [w for line in text.splitlines() for w in line.split()] or [""]


def _cell_min(text: str, fold: bool = True) -> int:
    """Narrowest a cell may be: its longest number or word (long text words may fold unless told)."""
    width = 0
    for w in _words(text):
        need = len(w) if not fold or _NUMBER_WORD.match(w) or len(w) <= FOLD_WORDS_OVER else FOLD_WORDS_OVER
        width = max(width, need)
    return width


def _wrapped_lines(text: str, width: int) -> int:
    """Lines `text` takes when wrapped at word boundaries into `width` columns."""
    lines, used = 1, 0
    for w in text.split():
        if used and used + 1 + len(w) > width:
            lines, used = lines + 1, len(w)
        else:
            used += len(w) + (1 if used else 0)
    return lines


def _line_len(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


class _Column:
    def __init__(self, source, header: Text, cells: List[Text], key: bool = False):
        self.source = source
        self.header = header
        self.cells = cells
        if source.no_wrap:  # a no_wrap column (a date and time) keeps each cell on one line
            cell_mins = [_line_len(c.plain) for c in cells]
        else:  # a key (a benchmark or test name) is never folded either
            cell_mins = [_cell_min(c.plain, fold=not key) for c in cells]
        self.min = max([max((len(w) for w in _words(header.plain)), default=0)] + cell_mins)
        self.body = max([_line_len(c.plain) for c in cells] + [1])  # widest cell: what it takes not to wrap a cell
        self.max = max(_line_len(header.plain), self.body)
        self.min = max(1, min(self.min, self.max))
        self.body = max(self.body, self.min)


def _share(lo: List[int], hi: List[int], avail: int) -> List[int]:
    """Widths from lo toward hi, the spare width shared in proportion to what each still wants."""
    spare, slack = avail - sum(lo), sum(hi) - sum(lo)
    widths = [a + (b - a) * spare // slack for a, b in zip(lo, hi)] if slack > 0 else list(lo)
    left = avail - sum(widths)
    for i in sorted(range(len(lo)), key=lambda i: hi[i] - widths[i], reverse=True):
        if left <= 0:
            break
        if widths[i] < hi[i]:
            widths[i] += 1
            left -= 1
    return widths


class FitTable:
    """A rich Table laid out for the width at hand without cutting a number or a header word."""

    def __init__(self, table: Table, key_columns: Optional[int] = None):
        self.table = table
        self.key_columns = key_columns if key_columns is not None else getattr(table, "key_columns", 1)
        self.secondary = set(getattr(table, "secondary", ()))  # column indexes that go to a second table first

    # -- what the table holds -------------------------------------------------------------

    def _columns(self) -> List[_Column]:
        out = []
        for i, col in enumerate(self.table.columns):
            cells = [_as_text(c) for c in col._cells]
            out.append(_Column(col, _as_text(col.header), cells, key=i < self.key_columns))
        return out

    def _title(self) -> Optional[Text]:
        return _as_text(self.table.title) if self.table.title else None

    def _caption(self) -> Optional[Text]:
        return _as_text(self.table.caption) if self.table.caption else None

    # -- plain text (not a terminal) ----------------------------------------------------

    def plain(self) -> List[Text]:
        cols = self._columns()
        lines: List[Text] = []
        title = self._title()
        if title is not None:
            lines.append(title)
        if not cols:
            return lines
        # A header of several lines is one line here: the column is as wide as that line.
        widths = [max(c.max, len(" ".join(c.header.plain.split())) if self.table.show_header else 0) for c in cols]
        right = [c.source.justify == "right" for c in cols]

        def row(cells: Sequence[str]) -> Text:
            parts = []
            for text, w, r in zip(cells, widths, right):
                one = " ".join(text.split()) if "\n" in text else text
                parts.append(one.rjust(w) if r else one.ljust(w))
            return Text("  ".join(parts).rstrip())

        if self.table.show_header:
            lines.append(row([c.header.plain for c in cols]))
            lines.append(Text("  ".join("-" * w for w in widths)))
        for i in range(len(cols[0].cells)):
            lines.append(row([c.cells[i].plain for c in cols]))
        caption = self._caption()
        if caption is not None:
            lines.append(caption)
        for line in lines:
            line.no_wrap = True
            line.overflow = "ignore"
        return lines

    # -- a terminal -------------------------------------------------------------------------

    def _copy(self, cols: List[_Column], widths: Optional[List[int]], title: Optional[Text], rows: bool = True) -> Table:
        t = self.table
        new = Table(title=title, caption=self._caption(), box=t.box, show_header=t.show_header, show_lines=t.show_lines,
                    show_edge=t.show_edge, pad_edge=t.pad_edge, padding=t.padding, title_justify=t.title_justify,
                    caption_justify=t.caption_justify, title_style=t.title_style, header_style=t.header_style,
                    border_style=t.border_style, style=t.style, row_styles=t.row_styles, safe_box=t.safe_box,
                    expand=False, collapse_padding=t.collapse_padding)
        for i, c in enumerate(cols):
            src = c.source
            new.add_column(c.header, justify=src.justify, style=src.style, header_style=src.header_style,
                           vertical=src.vertical, width=widths[i] if widths else 1, no_wrap=False, overflow="fold")
        for r in range(len(cols[0].cells) if cols and rows else 0):
            new.add_row(*[c.cells[r] for c in cols])
        return new

    def _overhead(self, console: Console, options: ConsoleOptions, cols: List[_Column]) -> int:
        """Borders and padding of a table of these columns: its measured width minus the columns'."""
        probe = self._copy(cols, None, None, rows=False)
        return Measurement.get(console, options.update_width(10**6), probe).maximum - len(cols)

    def _fit(self, console: Console, options: ConsoleOptions, cols: List[_Column], width: int) -> Optional[List[int]]:
        avail = width - self._overhead(console, options, cols)
        need_min = sum(c.min for c in cols)
        if need_min > avail:
            return None
        if sum(c.max for c in cols) <= avail:
            return [c.max for c in cols]
        # Cells unwrapped first, then whole headers: a header wrapping over two lines costs less than a row
        # of cells doing so.
        body = [c.body for c in cols]
        if sum(body) <= avail:
            return _share(body, [c.max for c in cols], avail)
        return _share([c.min for c in cols], body, avail)

    def _fits_low(self, console: Console, options: ConsoleOptions, cols: List[_Column], width: int) -> bool:
        """The columns fit and their headers wrap into at most HEADER_LINES lines."""
        widths = self._fit(console, options, cols, width)
        return widths is not None and all(_wrapped_lines(c.header.plain, w) <= HEADER_LINES for c, w in zip(cols, widths))

    def terminal(self, console: Console, options: ConsoleOptions) -> List[Any]:
        cols = self._columns()
        title = self._title()
        if not cols:
            return [title] if title is not None else []
        width = options.max_width
        widths = self._fit(console, options, cols, width)
        if widths is not None:
            return [self._copy(cols, widths, title)]
        keys = cols[: max(0, min(self.key_columns, len(cols) - 1))]
        rest = [c for i, c in enumerate(cols) if i >= len(keys) and i not in self.secondary]
        rest += [c for i, c in enumerate(cols) if i >= len(keys) and i in self.secondary]
        groups: List[List[_Column]] = []
        for c in rest:
            if groups and self._fits_low(console, options, keys + groups[-1] + [c], width):
                groups[-1].append(c)
            elif self._fit(console, options, keys + [c], width) is not None:
                groups.append([c])
            else:
                return self.key_values(cols, title)
        out: List[Any] = []
        for i, group in enumerate(groups):
            # a later table repeats the key column(s); its title says it continues the first
            part_title = title if i == 0 else Text("(continued)", style="dim")
            widths = self._fit(console, options, keys + group, width)
            out.append(self._copy(keys + group, widths, part_title))
        return out

    @staticmethod
    def key_values(cols: List[_Column], title: Optional[Text]) -> List[Any]:
        """One block per row: the key column's header and value, then '  header: value' lines."""
        out: List[Any] = [title] if title is not None else []
        for r in range(len(cols[0].cells)):
            first = cols[0]
            out.append(Text.assemble(Text(first.header.plain + ": ", style="bold"), first.cells[r]))
            for c in cols[1:]:
                out.append(Text.assemble("  ", Text(c.header.plain + ": ", style="dim"), c.cells[r]))
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if console.is_terminal:
            yield from self.terminal(console, options)
        else:
            yield from self.plain()


class Output(Console):
    """A rich Console whose print never cuts a number, never wraps a pipe, never passes a control character."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        if not self.is_terminal:
            kwargs.setdefault("soft_wrap", True)
        super().print(*[self.prepare(o) for o in objects], **kwargs)

    @staticmethod
    def prepare(obj: Any) -> Any:
        if isinstance(obj, str):
            return printable(obj)
        if isinstance(obj, Text):
            return _printable_text(obj)
        if isinstance(obj, Table):
            return FitTable(obj)
        if isinstance(obj, Group):
            return Group(*[Output.prepare(o) for o in obj.renderables])
        return obj


console = Output()
err_console = Output(stderr=True)


CELL_STYLES = {"better": "green", "worse": "red", "warn": "yellow", "muted": "dim"}


def model_table(table: Any, key_columns: int = 1) -> Table:
    """A report.model Table (the report's own tables) as a rich Table for the terminal."""
    rt = Table(title=Text(table.caption) if table.caption else None, title_justify="left", show_lines=False)
    rt.key_columns = key_columns
    rt.secondary = {i for i, c in enumerate(table.columns) if c.secondary}
    for c in table.columns:
        rt.add_column(Text(c.header), justify="left" if c.align == "left" else "right")
    for row in table.cells():
        rt.add_row(*[Text(c.text, style=CELL_STYLES.get(c.style, "")) for c in row])
    return rt


def print_model_table(table: Any, out: Optional[Console] = None) -> None:
    """A report.model Table on the terminal, its notes below it."""
    out = out or console
    out.print(model_table(table))
    for note in table.notes:
        out.print(Text(f"  {note}", style="dim"))
