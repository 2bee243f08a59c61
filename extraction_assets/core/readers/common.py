"""What the by-value readers share: the :class:`ByValueWorkbook` they build, columnar cells
(:class:`CellColumns`), numbers as the OOXML reader writes them, date serials and their number
formats."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa

from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import (
    CELL_SCHEMA,
    CellStyle,
    Issue,
    ParsedSheet,
    SheetInfo,
    Workbook,
)

EPOCH = dt.datetime(1899, 12, 30)
DATE_FORMATS = {"date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm:ss", "time": "hh:mm:ss",
                 "duration": "[h]:mm:ss"}


class DateStyles:
    """Adds one ``CellStyle`` per date/time kind to a style list on first use; calling it with a
    kind (a key of ``DATE_FORMATS``) returns that style's index."""

    def __init__(self, styles: list[CellStyle]):
        self.styles = styles
        self.index: dict[str, int] = {}

    def __call__(self, kind: str) -> int:
        if kind not in self.index:
            self.styles.append(CellStyle(number_format_id=164 + len(self.index),
                                         number_format=DATE_FORMATS[kind]))
            self.index[kind] = len(self.styles) - 1
        return self.index[kind]


@dataclass(kw_only=True)
class ByValueWorkbook(Workbook):
    """A :class:`~extraction_assets.core.model.Workbook` whose sheets come from a by-value
    reader (xlrd, python-calamine, the ODS or CSV reader), not an OOXML package.
    ``load_sheet(i)`` builds the i-th (0-based) sheet on demand; ``closer`` releases what the
    reader holds."""

    load_sheet: Callable[[int], ParsedSheet] | None = None
    closer: Callable[[], None] | None = None

    def iter_sheets(self) -> Iterator[ParsedSheet]:
        total = 0
        for i, info in enumerate(self.sheets):
            if info.kind != "worksheet" or self.load_sheet is None:
                yield ParsedSheet(info)
                continue
            sheet = self.load_sheet(i)
            total += len(sheet)
            if total > self.limits.max_cells:
                raise LimitExceededError(
                    f"workbook has more than {self.limits.max_cells} non-empty cells")
            if len(sheet.merged_ranges) > self.limits.max_merged_ranges:
                raise LimitExceededError(f"sheet {info.name!r} has more than "
                                         f"{self.limits.max_merged_ranges} merged ranges")
            yield sheet

    def close(self) -> None:
        if self.closer is not None:
            self.closer()
            self.closer = None


def by_value_workbook(sheets: list[SheetInfo], styles: list[CellStyle], load, limits: Limits,
                      issues: list[Issue], *, date1904: bool = False, has_macros: bool = False,
                      closer=None) -> ByValueWorkbook:
    """The :class:`ByValueWorkbook` of a by-value reader: its sheets, styles (one default
    style when none), ``load(i)`` building the i-th sheet and ``closer`` releasing the reader.

    Raises:
        LimitExceededError: more sheets than ``limits.max_sheets``.
    """
    if len(sheets) > limits.max_sheets:
        raise LimitExceededError(f"workbook has more than {limits.max_sheets} sheets")
    return ByValueWorkbook(
        sheets=sheets, styles=styles or [CellStyle()], date1904=date1904, theme_colors=[],
        indexed_colors=None, has_macros=has_macros, has_external_links=False, issues=issues,
        limits=limits, load_sheet=load, closer=closer)


class CellColumns:
    """Column builders of one sheet's cells (:data:`~.worksheet.CELL_SCHEMA`)."""

    def __init__(self, budget: int):
        self.cols: dict[str, list] = {name: [] for name in CELL_SCHEMA.names}
        self.budget = budget

    def add(self, row: int, col: int, data_type: str, value: str | None, style: int = 0) -> None:
        c = self.cols
        c["row"].append(row)
        c["col"].append(col)
        c["data_type"].append(data_type)
        c["value"].append(value)
        c["formula"].append(None)
        c["formula_kind"].append(None)
        c["style_index"].append(style)
        c["string_index"].append(None)
        if len(c["row"]) > self.budget:
            raise LimitExceededError(f"workbook has more than {self.budget} non-empty cells")

    def table(self) -> pa.Table:
        return pa.table(self.cols, schema=CELL_SCHEMA)


def number_text(value: float | int) -> str:
    """The value text of a number as the OOXML reader keeps it (``99``, ``1234.5``, ``1e-05``)."""
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return "#NUM!"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def serial(value) -> tuple[float, str]:
    """Excel 1900-system serial and kind (``date``/``datetime``/``time``/``duration``) of a
    Python date, datetime, time or timedelta (serials before 1900-03-01 keep Excel's phantom
    29 February 1900 out)."""
    if isinstance(value, dt.datetime):
        days = (value - EPOCH).total_seconds() / 86400
        kind = "date" if value.time() == dt.time() else "datetime"
        cut = dt.datetime(1900, 3, 1)
    elif isinstance(value, dt.date):
        days, kind, cut = float((value - EPOCH.date()).days), "date", dt.date(1900, 3, 1)
    elif isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second
                + value.microsecond / 1e6) / 86400, "time"
    elif isinstance(value, dt.timedelta):
        return value.total_seconds() / 86400, "duration"
    else:
        raise TypeError(type(value))
    if value < cut:
        days -= 1
    return days, kind


def styles_unavailable(wb_issues: list[Issue], reader: str, features: str) -> None:
    wb_issues.append(Issue(
        "parsed_sheets", None, None, "info", "styles_unavailable",
        f"read by value with {reader} (LibreOffice not used): {features} are not available"))
