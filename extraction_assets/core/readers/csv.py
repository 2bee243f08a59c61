"""``.csv`` and ``.tsv`` with the sniffed encoding and delimiter; numbers and ISO dates typed as
Excel would."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path
from typing import Sequence

from extraction_assets.core.errors import CorruptWorkbookError, one_line
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import CellStyle, Issue, ParsedSheet, SheetInfo
from extraction_assets.core.readers.common import (
    ByValueWorkbook,
    CellColumns,
    by_value_workbook,
    number_text,
    serial,
)
from extraction_assets.core.sniff import Sniffed, decode_text

NUMBER_RE = re.compile(r"^-?(?:0|[1-9]\d{0,14})(?:\.\d*[1-9])?$")
ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?$")


def open_csv(data: bytes, sniffed: Sniffed, limits: Limits, *, filename: str | None = None,
             passwords: Sequence[str] = ()) -> ByValueWorkbook:
    """Read delimited text (``csv``, TSV) with the sniffed encoding and delimiter as one sheet,
    named for the stem of ``filename`` (``Sheet1`` without); ``passwords`` is not used (every
    reader of the format table, :mod:`~extraction_assets.core.formats`, takes it).

    Raises:
        CorruptWorkbookError: the text cannot be decoded.
        LimitExceededError: more cells than ``limits`` allow.
    """
    decoded = decode_text(data)
    if decoded is None:
        raise CorruptWorkbookError("the delimited text file cannot be decoded")
    text, encoding = decoded
    name = (Path(filename).stem if filename else "") or "Sheet1"
    name = re.sub(r"[\[\]:*?/\\]", "_", name)[:31]
    info = SheetInfo(index=1, name=name, visibility="visible", kind="worksheet", part=None)
    styles = [CellStyle(), CellStyle(number_format_id=164, number_format="yyyy-mm-dd"),
              CellStyle(number_format_id=165, number_format="yyyy-mm-dd hh:mm:ss")]
    delimiter = sniffed.delimiter or ","
    issues = [Issue("parsed_sheets", name, None, "info", "csv_dialect",
                    f"delimited text: encoding {encoding}, delimiter {delimiter!r}"),
              Issue("parsed_sheets", name, None, "info", "styles_unavailable",
                    "delimited text has no styles, merges, formulas or number formats: numbers "
                    "without leading zeros are typed as numbers, ISO dates as dates, the rest "
                    "kept as text")]

    def load(_: int) -> ParsedSheet:
        cells = CellColumns(limits.max_cells)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        try:
            for r, fields in enumerate(reader, start=1):
                for c, value in enumerate(fields, start=1):
                    if value == "":
                        continue
                    if NUMBER_RE.match(value):
                        cells.add(r, c, "n", value)
                    elif ISO_DATE_RE.match(value):
                        try:
                            stamp = dt.datetime.fromisoformat(value)
                        except ValueError:
                            cells.add(r, c, "s", value)
                            continue
                        number, kind = serial(stamp)
                        cells.add(r, c, "n", number_text(number), 1 if kind == "date" else 2)
                    else:
                        cells.add(r, c, "s", value)
        except csv.Error as exc:
            issues.append(Issue("parsed_sheets", name, None, "warning", "csv_error",
                                f"delimited text stops parsing: {one_line(exc)}"))
        return ParsedSheet(info, cells=cells.table())

    return by_value_workbook([info], styles, load, limits, issues)
