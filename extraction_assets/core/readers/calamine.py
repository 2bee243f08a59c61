"""``.xlsb``, ``.ods`` and ``.xls`` by value through ``python-calamine`` (values and types)."""

from __future__ import annotations

import datetime as dt
import io
from typing import Sequence

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.errors import (
    CorruptWorkbookError,
    EncryptedWorkbookError,
    ExtractionError,
    LimitExceededError,
    one_line,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import CellStyle, Issue, ParsedSheet, SheetInfo, Workbook
from extraction_assets.core.readers.common import (
    CellColumns,
    DateStyles,
    by_value_workbook,
    number_text,
    serial,
    styles_unavailable,
)
from extraction_assets.core.readers.ods import (
    ERROR_RE,
    fods_to_ods,
    ods_sheet_facts,
    open_ods_content,
    zip_member,
)
from extraction_assets.core.sniff import Sniffed


def open_calamine(data: bytes, sniffed: Sniffed, limits: Limits, *,
                  filename: str | None = None, passwords: Sequence[str] = ()) -> Workbook:
    """Read an ``xlsb``, ``ods``, ``fods`` (or an ``xls`` ``xlrd`` refuses) by value with
    python-calamine: values and types, ODS merges and hidden rows/columns from
    ``content.xml`` (read by :func:`.ods.open_ods_content` alone when python-calamine fails on
    it). ``filename`` and ``passwords`` are not used (every reader of the format table,
    :mod:`~extraction_assets.core.formats`, takes them).

    Raises:
        EncryptedWorkbookError: python-calamine reports the file encrypted.
        CorruptWorkbookError: the file cannot be read.
        LimitExceededError: more sheets, cells or merged ranges than ``limits`` allow.
    """
    import python_calamine as cal

    payload = data
    ods_xml = None
    if sniffed.format == "fods":
        payload, ods_xml = fods_to_ods(data)
    elif sniffed.format == "ods":
        ods_xml = zip_member(data, "content.xml", limits)
    try:
        book = cal.CalamineWorkbook.from_filelike(io.BytesIO(payload))
        metadata = book.sheets_metadata
    except cal.PasswordError:
        raise EncryptedWorkbookError(
            f"the {sniffed.format} workbook is encrypted: password required") from None
    except Exception as exc:  # CalamineError, XmlError, ZipError, panics surfaced as errors
        if ods_xml:
            return open_ods_content(ods_xml, sniffed, limits, one_line(exc))
        raise CorruptWorkbookError(
            f"the {sniffed.format} workbook cannot be read: {one_line(exc)}") from None
    issues: list[Issue] = []
    merges_from = "merges and hidden rows/columns from content.xml" if ods_xml else ""
    styles_unavailable(issues, f"python-calamine ({sniffed.format})",
                 "number formats (dates get yyyy-mm-dd, other numbers General), fonts, fills, "
                 "borders, alignment, formulas (cached values only), rich text, comments"
                 + ("" if ods_xml else ", merged ranges, hidden rows and columns")
                 + (f" ({merges_from} are read)" if merges_from else ""))
    ods_facts = ods_sheet_facts(ods_xml, limits) if ods_xml else {}
    sheets, styles = [], [CellStyle()]
    for i, meta in enumerate(metadata):
        typ = str(meta.typ).rsplit(".", 1)[-1].lower()
        kind = {"worksheet": "worksheet", "chartsheet": "chartsheet", "dialogsheet":
                "dialogsheet", "macrosheet": "macrosheet"}.get(typ, "worksheet")
        vis = str(meta.visible).rsplit(".", 1)[-1].lower()
        vis = {"visible": "visible", "hidden": "hidden", "veryhidden": "veryHidden"}.get(
            vis, "visible")
        sheets.append(SheetInfo(index=i + 1, name=meta.name, visibility=vis, kind=kind,
                                part=None))

    style_for = DateStyles(styles)

    def load(i: int) -> ParsedSheet:
        info = sheets[i]
        try:
            sh = book.get_sheet_by_index(i)
            height, width = sh.total_height, sh.total_width
            if height * width > 4 * limits.max_cells:
                raise LimitExceededError(
                    f"sheet {info.name!r} spans {height} x {width} cells; over the cell limit")
            grid = sh.to_python(skip_empty_area=False)
            merged = sh.merged_cell_ranges
        except ExtractionError:
            raise
        except Exception as exc:
            issues.append(Issue("parsed_sheets", info.name, None, "error", "corrupt_workbook",
                                f"sheet {info.name!r} cannot be read: {one_line(exc)}"))
            return ParsedSheet(info)
        cells = CellColumns(limits.max_cells)
        for r, row in enumerate(grid, start=1):
            for c, value in enumerate(row, start=1):
                if value is None or value == "":
                    continue
                if isinstance(value, bool):
                    cells.add(r, c, "b", "1" if value else "0")
                elif isinstance(value, (int, float)):
                    cells.add(r, c, "n", number_text(value))
                elif isinstance(value, (dt.date, dt.time, dt.timedelta)):
                    number, kind = serial(value)
                    cells.add(r, c, "n", number_text(number), style_for(kind))
                else:
                    text = str(value)
                    if ERROR_RE.match(text) and sniffed.format == "xlsb":
                        cells.add(r, c, "e", text)
                    else:
                        cells.add(r, c, "s", text)
        del grid
        sheet = ParsedSheet(info, cells=cells.table())
        if merged:
            sheet.merged_ranges = [range_ref(r0 + 1, c0 + 1, r1 + 1, c1 + 1)
                                   for (r0, c0), (r1, c1) in merged if (r0, c0) != (r1, c1)]
        facts = ods_facts.get(info.name)
        if facts:
            sheet.merged_ranges = facts["merged"]
            sheet.hidden_rows = facts["hidden_rows"]
            sheet.hidden_columns = facts["hidden_columns"]
        return sheet

    return by_value_workbook(sheets, styles, load, limits, issues, has_macros=sniffed.has_macros,
                     closer=book.close)
