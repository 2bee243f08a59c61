"""How a document becomes sheets: :class:`SheetBuilder` lays a section, slide or page out top to
bottom on a sheet of its own, one item after another, and :class:`DocumentWorkbook` holds the
sheets so every stage after ``parsed_sheets`` reads a document as it reads a workbook.

The layout (a *reading-order grid*, the same for every document format):

* a heading, a paragraph, a caption or speaker notes is one cell in column A of the next row;
* a list is one cell per item, one row each, in column A;
* a table takes as many rows and columns as it has, from column A, its spanning cells written
  as merged ranges (so header paths and records follow the worksheet rules);
* a picture or a chart takes one empty row (it floats over the sheet, as on a worksheet); a
  chart's data table follows it as a table of its own.

Each item is declared as a :class:`~extraction_assets.core.model.SheetObject` of kind
``document_item``: ``ref`` is its A1 range on the grid, ``name`` the item's reference in the
source (Docling's ``#/texts/3``, ``#/tables/0``; ``page 2 paragraph 4`` on a PDF's text layer),
``text`` its text, ``details`` the block it becomes (``block``: ``title``, ``text``, ``table``,
``image`` or ``chart``; ``label``: what the source calls it; ``level``: a heading's level, 1 for
the heading that names the sheet; ``header_rows``: the header rows the source declares;
``caption``: a table's caption). :func:`~extraction_assets.core.segment.documents.document_blocks`
turns them into blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterator

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import (
    DOCUMENT_ITEM,
    CellStyle,
    Issue,
    ParsedSheet,
    SheetInfo,
    SheetObject,
    Workbook,
)
from extraction_assets.core.ocr import OcrSession
from extraction_assets.core.readers.common import CellColumns

#: Most characters of a sheet name made from a heading.
MAX_NAME_CHARS = 100
#: A table cell's text that is a plain number (no leading zero, no thousands separator, no
#: trailing zero after the point) is typed as a number: its display text is the same text.
NUMBER_RE = re.compile(r"^-?(?:0|[1-9]\d{0,14})(?:\.\d*[1-9])?$")
#: A table cell's text that is a number as a report prints it -- thousands separators
#: (``2,104``), decimals kept to a fixed count (``85.00``; at most two when there is no
#: separator: ``1.200`` may be a thousand), a percentage (``12.5%``, ``12.5 %``), a currency
#: sign before it (``$12,450``, ``€ 1.04``), a minus (``-`` or ``−``), a negative in
#: parentheses (``(7,310)``, ``$(1,200)``) with a separator,
#: decimals or a currency sign, or in a column of numbers (``(12)`` alone may be a footnote
#: mark) -- is
#: typed as the number with the number format that prints it so (``#,##0``, ``0.00``,
#: ``0.0%``, ``"$"#,##0``, ``#,##0;(#,##0)``).
FORMATTED_RE = re.compile(
    r"^(?:(?P<before>[$€£¥] ?)(?=\())?(?P<open>\()?(?P<sign>[-\u2212])?(?P<currency>[$€£¥] ?)?"
    r"(?P<whole>(?:[1-9]\d{0,2}(?:,\d{3}){1,4})|0|[1-9]\d{0,14})(?:\.(?P<decimals>\d{1,6}))?"
    r"(?P<percent> ?%)?(?P<close>\))?$")


@dataclass
class TableCell:
    """One cell of a source table: 0-based row and column offsets, spans (>= 1) and text."""

    row: int
    col: int
    text: str
    row_span: int = 1
    col_span: int = 1


def number_formatted(text: str, accounting: bool = False) -> tuple[str, str] | None:
    """The value text and number format of a number as a report prints it
    (:data:`FORMATTED_RE`: ``"1,200.50"`` -> ``("1200.5", "#,##0.00")``, ``"12.5%"`` ->
    ``("0.125", "0.0%")``, ``"($7,310)"`` -> ``("-7310", '"$"#,##0;("$"#,##0)')``), or
    ``None`` for any other text (a plain number is :data:`NUMBER_RE`'s). ``accounting``: the
    text is in a column of numbers, where ``(405)`` is -405 too."""
    match = FORMATTED_RE.match(text)
    if match is None or bool(match["open"]) != bool(match["close"]) or (
            match["open"] and match["sign"]) or (match["before"] and match["currency"]):
        return None
    whole, decimals, percent = match["whole"], match["decimals"] or "", match["percent"] or ""
    currency = match["currency"] or match["before"] or ""
    grouped = "," in whole
    if match["open"] and (not (accounting or grouped or decimals or currency)
                          or not whole.strip("0,")):
        return None  # "(12)" is a footnote mark as often as -12; "(0)" prints as 0
    if decimals and not grouped and len(decimals) > 2 and decimals.endswith("0"):
        return None  # "1.200": a thousand written the European way, or 1.2
    if not (grouped or percent or currency or match["open"] or decimals.endswith("0")):
        return None  # plain numbers are NUMBER_RE's
    number = Decimal(f"{whole.replace(',', '')}.{decimals or '0'}")
    if percent:
        number /= 100
    if match["sign"] or match["open"]:
        number = -number
    value = format(number.normalize(), "f")
    value = value.rstrip("0").rstrip(".") if "." in value else value
    sign = f'"{currency}"' if currency else ""
    digits = (("#,##0" if grouped else "0") + (f".{'0' * len(decimals)}" if decimals else "")
              + ('" "%' if percent == " %" else percent))
    if match["before"]:  # "$(1,200)": the sign outside the parentheses
        return value, f"{sign}{digits};{sign}({digits})"
    if match["open"]:
        return value, f"{sign}{digits};({sign}{digits})"
    if match["sign"] == "\u2212":  # a true minus sign, printed as such
        return value, f'{sign}{digits};"\u2212"{sign}{digits}'
    return value, sign + digits


class NumberStyles:
    """The cell styles of a document: the default, and one per number format
    :func:`number_formatted` gives (custom number format ids from 164, as Excel numbers
    them)."""

    def __init__(self) -> None:
        self.styles = [CellStyle()]
        self._index: dict[str, int] = {}

    def index(self, number_format: str) -> int:
        """The style index of ``number_format`` (made on first use)."""
        if number_format not in self._index:
            self._index[number_format] = len(self.styles)
            self.styles.append(CellStyle(number_format_id=163 + len(self.styles),
                                         number_format=number_format))
        return self._index[number_format]


class SheetBuilder:
    """The cells, merged ranges and declared items of one document sheet, laid out top to
    bottom (see the module docstring). Headings given to :meth:`heading` are remembered so
    :attr:`path` is the heading path of what comes next.

    Raises (from every ``add``):
        LimitExceededError: the document passes ``limits`` (cells, cell text bytes, merged
            ranges; a cell text longer than ``max_cell_chars`` is cut there, with a warning).
    """

    def __init__(self, info: SheetInfo, limits: Limits, budget: Budget, issues: list[Issue],
                 styles: "NumberStyles"):
        self.info = info
        self.styles = styles
        self.limits = limits
        self.budget = budget
        self.issues = issues
        self.cells = CellColumns(limits.max_cells)
        self.merged: list[str] = []
        self.objects: list[SheetObject] = []
        self.row = 1

    def _cell(self, row: int, col: int, text: str, typed: bool = False,
              accounting: bool = False) -> None:
        if len(text) > self.limits.max_cell_chars:
            self.issues.append(Issue(
                "parsed_sheets", self.info.name, range_ref(row, col, row, col), "warning",
                "cell_text_truncated", f"a text of {len(text)} characters cut at "
                f"{self.limits.max_cell_chars} characters"))
            text = text[:self.limits.max_cell_chars]
        self.budget.add(1, len(text.encode("utf-8")))
        if typed and NUMBER_RE.match(text):
            self.cells.add(row, col, "n", text)
        elif typed and (formatted := number_formatted(text, accounting)) is not None:
            value, number_format = formatted
            self.cells.add(row, col, "n", value, self.styles.index(number_format))
        else:
            self.cells.add(row, col, "s", text)

    def _declare(self, block: str, r1: int, c1: int, r2: int, c2: int, ref: str | None,
                 text: str, label: str, **details) -> None:
        self.objects.append(SheetObject(
            DOCUMENT_ITEM, self.info.name, range_ref(r1, c1, r2, c2), ref, text,
            {"block": block, "label": label, **{k: v for k, v in details.items()
                                                 if v is not None}}))

    def heading(self, text: str, level: int, ref: str | None, label: str = "heading") -> None:
        """A heading line; ``level`` 1 is the heading the sheet is named after, 2..6 below it
        (deeper levels are kept at 6)."""
        text = " ".join(text.split())
        if not text:
            return
        self._cell(self.row, 1, text)
        self._declare("title", self.row, 1, self.row, 1, ref, text, label,
                      level=max(1, min(level, 6)))
        self.row += 1

    def text(self, text: str, ref: str | None, label: str = "text", **details) -> None:
        """A paragraph (or caption, notes, code...): one cell, one ``text`` block; ``details``
        are kept in its item's details (an OCR paragraph's box and confidence)."""
        text = text.strip()
        if not text:
            return
        self._cell(self.row, 1, text)
        self._declare("text", self.row, 1, self.row, 1, ref, text, label, **details)
        self.row += 1

    def lines(self, items: list[tuple[str, str]], ref: str | None, label: str = "list") -> None:
        """A list: one cell per ``(marker, text)`` item, one ``text`` block whose text is the
        items one a line, each after its marker (``-``, ``1.``; indented for nested items)."""
        items = [(marker, text.strip()) for marker, text in items if text.strip()]
        if not items:
            return
        first = self.row
        for _, text in items:
            self._cell(self.row, 1, text)
            self.row += 1
        joined = "\n".join(f"{marker} {text}" for marker, text in items)
        self._declare("text", first, 1, self.row - 1, 1, ref, joined, label)

    def table(self, cells: list[TableCell], ref: str | None, header_rows: int = 0,
              caption: str | None = None, label: str = "table") -> None:
        """A table: each cell at its offset from column A of the next row, a spanning cell as a
        merged range; ``header_rows`` are the rows the source marks as column headers (at
        least that many header rows are taken). Cells printed as numbers are typed
        (:func:`number_formatted`; ``(405)`` only in a column with other numbers). Empty
        tables are skipped."""
        cells = [c for c in cells if c.row >= 0 and c.col >= 0]
        if not any(c.text.strip() for c in cells):
            return
        top = self.row
        n_rows = max(c.row + max(c.row_span, 1) for c in cells)
        n_cols = max(c.col + max(c.col_span, 1) for c in cells)
        numbers = {c.col for c in cells if NUMBER_RE.match(" ".join(c.text.split()))
                   or number_formatted(" ".join(c.text.split()))}  # columns of numbers
        seen: set[tuple[int, int]] = set()
        for c in sorted(cells, key=lambda c: (c.row, c.col)):
            if (c.row, c.col) in seen:
                continue
            r, k = top + c.row, 1 + c.col
            r2, k2 = r + max(c.row_span, 1) - 1, k + max(c.col_span, 1) - 1
            seen.update((rr - top, kk - 1) for rr in range(r, r2 + 1) for kk in range(k, k2 + 1))
            text = " ".join(c.text.split())
            if text:
                self._cell(r, k, text, typed=True, accounting=c.col in numbers)
            if (r2, k2) != (r, k):
                self.merged.append(range_ref(r, k, r2, k2))
                if len(self.merged) > self.limits.max_merged_ranges:
                    raise LimitExceededError(f"sheet {self.info.name!r} has more than "
                                             f"{self.limits.max_merged_ranges} merged ranges")
        if caption:
            caption = " ".join(caption.split())
        self._declare("table", top, 1, top + n_rows - 1, n_cols, ref, caption or "", label,
                      header_rows=header_rows, caption=caption or None)
        self.row = top + n_rows

    def floating(self, block: str, text: str, ref: str | None, title: str | None,
                 label: str, **details) -> None:
        """A picture (``image``) or chart (``chart``): one empty row, the block's text being
        its caption or alt text (a chart's: its title and data), then a picture's OCR text;
        ``details`` are kept in its item's details."""
        self._declare(block, self.row, 1, self.row, 1, ref, text.strip(), label,
                      title=title or None, **details)
        self.row += 1

    def sheet(self) -> ParsedSheet:
        """The sheet as the reader's model has it."""
        return ParsedSheet(self.info, cells=self.cells.table(), merged_ranges=self.merged,
                           objects=self.objects)


@dataclass(kw_only=True)
class DocumentWorkbook(Workbook):
    """A document read as a :class:`~extraction_assets.core.model.Workbook`: its sections,
    slides or pages as sheets (``kind`` ``section``, ``slide`` or ``page``), already laid out
    (the whole document is converted at once)."""

    parsed: list[ParsedSheet] = field(default_factory=list)

    def iter_sheets(self) -> Iterator[ParsedSheet]:
        yield from self.parsed

    def close(self) -> None:
        self.parsed = []


class Sheets:
    """The sheets of one document, made one at a time (:meth:`new`), with unique names, and
    the OCR of its pictures and scanned pages (:attr:`ocr`)."""

    def __init__(self, limits: Limits, issues: list[Issue]):
        self.limits = limits
        self.issues = issues
        self.budget = Budget(limits)
        self.builders: list[SheetBuilder] = []
        self.styles = NumberStyles()
        self.ocr = OcrSession(limits)
        self._names: set[str] = set()

    def new(self, name: str, kind: str, visibility: str = "visible") -> SheetBuilder:
        """A new sheet named ``name`` (spaces collapsed, cut at :data:`MAX_NAME_CHARS`, `` (2)``
        added when taken).

        Raises:
            LimitExceededError: more sheets than ``limits.max_sheets``.
        """
        if len(self.builders) >= self.limits.max_sheets:
            raise LimitExceededError(f"document has more than {self.limits.max_sheets} "
                                     "sections, slides or pages (max_sheets)")
        base = " ".join(name.split())[:MAX_NAME_CHARS] or f"Section {len(self.builders) + 1}"
        unique, n = base, 1
        while unique.lower() in self._names:
            n += 1
            unique = f"{base} ({n})"
        self._names.add(unique.lower())
        info = SheetInfo(len(self.builders) + 1, unique, visibility, kind, None)
        builder = SheetBuilder(info, self.limits, self.budget, self.issues, self.styles)
        self.builders.append(builder)
        return builder

    def workbook(self, limits: Limits, *, has_macros: bool = False) -> DocumentWorkbook:
        """The :class:`DocumentWorkbook` of the sheets made so far."""
        parsed = [b.sheet() for b in self.builders]
        return DocumentWorkbook(
            sheets=[p.info for p in parsed], styles=self.styles.styles, date1904=False, theme_colors=[], indexed_colors=None,
            has_macros=has_macros, has_external_links=False, issues=self.issues, limits=limits,
            parsed=parsed)
