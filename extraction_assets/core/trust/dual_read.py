"""Dual-channel verification of a workbook's values: our reader's cells against an independent
second read by ``python-calamine`` (its own Rust parser of the same bytes), cell by cell.

Values are compared as what they are, not as they are shown: numbers as floats (a date or
time calamine returns is turned back into its serial, in the workbook's date system, and
agrees within a millisecond; a time of day agrees with the fraction of any serial, as calamine
keeps only the time of a negative or large number under a time format), text without the
white space around it, booleans and error values by kind. calamine reads an error value
(``#DIV/0!``) as an empty cell: our error against its empty cell agrees. A cell whose two
reads agree passes. The others become review items:

* ``conflict`` (priority 1): both reads have a value for the cell and they differ (also when
  the file writes the same cell twice and the reads keep different copies);
* ``first_read_only`` / ``second_read_only`` (priority 2): one read has a value, the other
  none (e.g. a cell outside the range the second reader takes as the sheet's).

Cells of merged ranges are compared at their anchor only (the copies in the StyledGrid are
ours). A formula without a cached value has no value in either read.
"""

from __future__ import annotations

import datetime as dt
import io
import math
from dataclasses import dataclass

import pyarrow as pa

from extraction_assets.core.a1 import cell_ref
from extraction_assets.core.legacy.common import number_text, serial

#: Days between the 1900 and the 1904 date systems (ECMA-376 Part 1 §18.17.4.1).
DAYS_1904 = 1462
#: Tolerance, in days, when a date or time of the second read is compared as a serial.
SERIAL_TOLERANCE = 1 / 86_400_000
PRIORITY = {"conflict": 1, "first_read_only": 2, "second_read_only": 2}


@dataclass(frozen=True)
class ReviewItem:
    """A cell the two reads do not agree on: sheet, 1-based row and column, A1 ref, reason
    (``conflict``, ``first_read_only``, ``second_read_only``), priority (1 = first) and each
    read's value as text (``None`` where that read has none)."""

    sheet_name: str
    row: int
    col: int
    ref: str
    reason: str
    first_value: str | None
    second_value: str | None

    @property
    def priority(self) -> int:
        return PRIORITY[self.reason]


def _ours(data_type: str | None, value: str | None) -> tuple[str, object] | None:
    if value is None or value == "":
        return None
    if data_type == "b":
        return "bool", value in ("1", "true", "TRUE")
    if data_type == "e":
        return "error", value.strip()
    if data_type in (None, "n"):
        try:
            return "number", float(value)
        except ValueError:
            pass
    return ("text", value.strip()) if value.strip() else None


def _theirs(value, date1904: bool) -> tuple[str, object] | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, (int, float)):
        return "number", float(value)
    if isinstance(value, (dt.date, dt.time, dt.timedelta)):
        number, kind = serial(value)
        if date1904 and kind in ("date", "datetime"):
            number -= DAYS_1904
        return ("time" if kind == "time" else "date"), number
    text = str(value).strip()
    if not text:
        return None
    return ("error", text) if text.startswith("#") and text.isupper() else ("text", text)


def _agree(a: tuple[str, object], b: tuple[str, object]) -> bool:
    if b[0] == "time" and a[0] == "number":
        return abs(a[1] % 1 - b[1]) <= SERIAL_TOLERANCE or abs(a[1] - b[1]) <= SERIAL_TOLERANCE
    if b[0] in ("date", "time"):
        return a[0] == "number" and abs(a[1] - b[1]) <= SERIAL_TOLERANCE
    if a[0] == "number" and b[0] == "number":
        return a[1] == b[1] or math.isclose(a[1], b[1], rel_tol=1e-15)
    if a[0] == "error" or b[0] == "error":  # one reader may keep an error as its text
        return str(a[1]) == str(b[1])
    return a == b


def _text(value: tuple[str, object] | None) -> str | None:
    if value is None:
        return None
    kind, v = value
    if kind in ("number", "date", "time"):
        return str(int(v)) if v.is_integer() and abs(v) < 2 ** 53 else number_text(v)
    if kind == "bool":
        return "TRUE" if v else "FALSE"
    return str(v)


def second_read(data: bytes) -> dict[str, list[list]]:
    """Every worksheet's values as ``python-calamine`` reads them, by sheet name: rows of
    values from A1 (``""`` for an empty cell).

    Raises:
        Exception: calamine cannot read the file (its own error types).
    """
    import python_calamine as cal

    book = cal.CalamineWorkbook.from_filelike(io.BytesIO(data))
    try:
        return {name: book.get_sheet_by_name(name).to_python(skip_empty_area=False)
                for name in book.sheet_names}
    finally:
        book.close()


def compare_sheet(sheet_name: str, cells: pa.Table, theirs: list[list], date1904: bool
                  ) -> list[ReviewItem]:
    """Review items of one sheet: ``cells`` are our reader's parsed cells of it (columns
    ``row``, ``col``, ``data_type``, ``value``), ``theirs`` the second read's rows (see
    :func:`second_read`). Items are ordered by row, then column."""
    ours: dict[tuple[int, int], list[tuple[str, object]]] = {}
    for r, c, t, v in zip(*(cells.column(n).to_pylist() for n in ("row", "col", "data_type",
                                                                   "value"))):
        value = _ours(t, v)
        if value is not None:
            ours.setdefault((r, c), []).append(value)
    items: list[ReviewItem] = []
    for r, row in enumerate(theirs, start=1):
        for c, raw in enumerate(row, start=1):
            other = _theirs(raw, date1904)
            mine = ours.pop((r, c), None)
            if other is None:
                for value in mine or ():
                    if value[0] == "error":
                        continue  # calamine reads error values as empty cells
                    items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "first_read_only",
                                            _text(value), None))
            elif mine is None:
                items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "second_read_only",
                                        None, _text(other)))
            else:
                for value in mine:
                    if not _agree(value, other):
                        items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "conflict",
                                                _text(value), _text(other)))
    for (r, c), values in ours.items():  # outside the second read's range
        items.extend(ReviewItem(sheet_name, r, c, cell_ref(r, c), "first_read_only",
                                _text(value), None) for value in values)
    return sorted(items, key=lambda i: (i.row, i.col, i.reason, i.first_value or ""))
