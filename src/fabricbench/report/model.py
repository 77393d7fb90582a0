"""What a report is made of: sections holding blocks (paragraphs, notices, tables, figures).

Sections build these plain objects; ``report.render`` turns them into HTML or Markdown.
Every string here is plain text (never markup): the templates escape all of it.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, List, Optional, Union


@dataclass
class Column:
    title: str
    unit: Optional[str] = None  # shown in the header: "Latency (us)"
    align: str = "right"  # "left" for text columns
    secondary: bool = False  # a narrow terminal moves it into a second table first

    @property
    def header(self) -> str:
        return f"{self.title} ({self.unit})" if self.unit else self.title


@dataclass
class Cell:
    """A table cell with a style hint: 'better', 'worse', 'muted', 'warn' or ''."""

    text: str
    style: str = ""
    title: str = ""  # tooltip (HTML) - e.g. why a difference is not significant

    def __str__(self) -> str:
        return self.text


CellLike = Union[str, Cell]


@dataclass
class Table:
    columns: List[Column]
    rows: List[List[CellLike]]
    caption: str = ""
    notes: List[str] = field(default_factory=list)
    kind: str = "table"

    def cells(self) -> List[List[Cell]]:
        return [[c if isinstance(c, Cell) else Cell("" if c is None else str(c)) for c in row] for row in self.rows]


@dataclass
class Figure:
    slug: str  # file name stem for --plots-dir
    title: str
    data: bytes
    fmt: str  # "svg" or "png"
    alt: str = ""
    caption: str = ""
    kind: str = "figure"
    path: Optional[str] = None  # set when written to a plots directory (relative to the report)

    @property
    def mime(self) -> str:
        return "image/svg+xml" if self.fmt == "svg" else "image/png"

    @property
    def data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


@dataclass
class Paragraph:
    text: str
    kind: str = "paragraph"


@dataclass
class Notice:
    text: str
    level: str = "note"  # "note", "warning"
    kind: str = "notice"


@dataclass
class BulletList:
    items: List[str]
    kind: str = "list"


Block = Union[Paragraph, Notice, Table, Figure, BulletList]


@dataclass
class Section:
    id: str  # anchor, unique in a report
    title: str
    blocks: List[Block] = field(default_factory=list)
    intro: str = ""
    subsections: List["Section"] = field(default_factory=list)

    def add(self, *blocks: Optional[Block]) -> "Section":
        self.blocks.extend(b for b in blocks if b is not None)
        return self

    def figures(self) -> List[Figure]:
        out = [b for b in self.blocks if isinstance(b, Figure)]
        for sub in self.subsections:
            out.extend(sub.figures())
        return out


@dataclass
class Report:
    title: str
    generated: str
    tool_version: str
    runs: List[Any]  # store.RunData
    sections: List[Section]

    def figures(self) -> List[Figure]:
        out: List[Figure] = []
        for s in self.sections:
            out.extend(s.figures())
        return out
