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
from itertools import chain
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, cell_ref
from extraction_assets.core.grid import cell_keys
from extraction_assets.core.readers.common import number_text, serial

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


def _ours(data_type: str | None, value: str | None,
          date1904: bool = False) -> tuple[str, object] | None:
    if value is None or value == "":
        return None
    if data_type == "d":  # an ISO 8601 date (ECMA-376 §18.18.11 ST_CellType "d"): its serial
        try:
            number, kind = serial(dt.datetime.fromisoformat(value.strip()))
        except ValueError:
            return "text", value.strip()
        return "number", number - (DAYS_1904 if date1904 and kind != "time" else 0)
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


def second_read(data: bytes, names: Iterable[str] | None = None) -> dict[str, list[list]]:
    """The values of the worksheets ``names`` (default: every sheet) as ``python-calamine``
    reads them, by sheet name: rows of values from A1 (``""`` for an empty cell). calamine
    reads a sheet's part once per sheet asked for, and holds its cells as a dense rectangle:
    the caller bounds both (see :func:`~extraction_assets.pipeline.trust.review_items`).

    Raises:
        Exception: calamine cannot read the file (its own error types).
    """
    import python_calamine as cal

    book = cal.CalamineWorkbook.from_filelike(io.BytesIO(data))
    try:
        wanted = set(book.sheet_names if names is None else names)
        return {name: book.get_sheet_by_name(name).to_python(skip_empty_area=False)
                for name in book.sheet_names if name in wanted}
    finally:
        book.close()


def _theirs_flat(theirs: list[list]) -> tuple[np.ndarray, list]:
    """Keys (:func:`~extraction_assets.core.grid.cell_keys`, ascending) and values of the
    second read's non-empty cells."""
    widths = np.array([len(row) for row in theirs], np.int64)
    flat = np.empty(int(widths.sum()), object)
    flat[:] = list(chain.from_iterable(theirs))
    rows = np.repeat(np.arange(1, len(theirs) + 1, dtype=np.int64), widths)
    cols = np.arange(len(flat), dtype=np.int64) - np.repeat(np.cumsum(widths) - widths, widths) + 1
    shown = np.array([v != "" and v is not None for v in flat], bool) if len(flat) else \
        np.zeros(0, bool)
    return cell_keys(rows[shown], cols[shown]), flat[shown].tolist()


def _number(value, date1904: bool) -> float:
    """A second-read value as a number (a date or time as its serial), else NaN."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if kind in (dt.datetime, dt.date, dt.time, dt.timedelta):
        return _theirs(value, date1904)[1]
    return np.nan


def _quick_agreement(cells: pa.Table, keys: np.ndarray, t_keys: np.ndarray, t_values: list,
                     date1904: bool) -> np.ndarray:
    """Which of our cells (rows of ``cells``, keys ``keys``) the second read agrees with at a
    glance, column-wise: the same number, or the same text (white space around it left out).
    The others are compared one by one."""
    if not len(t_keys) or not len(keys):
        return np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(t_keys, keys), len(t_keys) - 1)
    found = t_keys[at] == keys
    numbers = np.array([_number(v, date1904) for v in t_values], np.float64)
    texts = pa.array([v.strip() if type(v) is str else None for v in t_values], pa.string())
    values = cells.column("value").combine_chunks()
    numeric = pc.fill_null(pc.equal(cells.column("data_type").combine_chunks(), "n"), False)
    try:
        ours = pc.cast(pc.if_else(numeric, values, pa.scalar(None, pa.string())), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # text in a number cell
        ours = pa.nulls(len(values), pa.float64())
    ours = ours.to_numpy(zero_copy_only=False)
    same_number = found & (ours == numbers[at])
    same_text = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(values), texts.take(pa.array(at))),
                             False).to_numpy(zero_copy_only=False)
    return same_number | (found & same_text)


def compare_sheet(sheet_name: str, cells: pa.Table, theirs: list[list], date1904: bool
                  ) -> list[ReviewItem]:
    """Review items of one sheet: ``cells`` are our reader's parsed cells of it (columns
    ``row``, ``col``, ``data_type``, ``value``), ``theirs`` the second read's rows (see
    :func:`second_read`). Items are ordered by row, then column. Cells that agree at a glance
    (:func:`_quick_agreement`) are settled column-wise; the rest cell by cell."""
    cells = cells.filter(pc.is_valid(cells.column("value")))
    keys = cell_keys(cells.column("row").to_numpy(), cells.column("col").to_numpy())
    t_keys, t_values = _theirs_flat(theirs)
    agreed = _quick_agreement(cells, keys, t_keys, t_values, date1904)
    settled = set(keys[agreed].tolist())
    slow = np.union1d(keys[~agreed], np.setdiff1d(t_keys, keys))
    mine_rows = cells.filter(pa.array(np.isin(keys, slow)))
    ours: dict[int, list[tuple[str, object]]] = {}
    for r, c, t, v in zip(*(mine_rows.column(n).to_pylist() for n in ("row", "col",
                                                                       "data_type", "value"))):
        value = _ours(t, v, date1904)
        if value is not None:
            ours.setdefault(r * (MAX_COL + 1) + c, []).append(value)
    other_at = {k: t_values[i] for i, k in zip(np.searchsorted(t_keys, slow).tolist(),
                                                slow.tolist())
                if i < len(t_keys) and t_keys[i] == k}
    items: list[ReviewItem] = []
    for key in slow.tolist():
        r, c = divmod(key, MAX_COL + 1)
        other = _theirs(other_at.get(key), date1904)
        mine = ours.get(key)
        if other is None:
            for value in mine or ():
                if value[0] == "error":
                    continue  # calamine reads error values as empty cells
                items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "first_read_only",
                                        _text(value), None))
        elif mine is None:
            if key not in settled:
                items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "second_read_only",
                                        None, _text(other)))
        else:
            for value in mine:
                if not _agree(value, other):
                    items.append(ReviewItem(sheet_name, r, c, cell_ref(r, c), "conflict",
                                            _text(value), _text(other)))
    return sorted(items, key=lambda i: (i.row, i.col, i.reason, i.first_value or ""))
