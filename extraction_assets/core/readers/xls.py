"""``.xls`` (BIFF2–8) through ``xlrd`` with its formatting: cell types, number formats, merges,
fonts, fills, borders, alignment, hidden rows and columns, frozen panes."""

from __future__ import annotations

import io
from typing import Sequence

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.errors import EncryptedWorkbookError, one_line
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import CellStyle, Issue, ParsedSheet, SheetInfo, Workbook
from extraction_assets.core.readers.calamine import open_calamine
from extraction_assets.core.readers.common import (
    CellColumns,
    DateStyles,
    by_value_workbook,
    number_text,
    styles_unavailable,
)
from extraction_assets.core.sniff import Sniffed

_BORDER_STYLES = {1: "thin", 2: "medium", 3: "dashed", 4: "dotted", 5: "thick", 6: "double",
                  7: "hair", 8: "mediumDashed", 9: "dashDot", 10: "mediumDashDot",
                  11: "dashDotDot", 12: "mediumDashDotDot", 13: "slantDashDot"}
_HORIZONTAL = {1: "left", 2: "center", 3: "right", 4: "fill", 5: "justify",
               6: "centerContinuous", 7: "distributed"}
_VERTICAL = {0: "top", 1: "center", 2: "bottom", 3: "justify", 4: "distributed"}


def open_xls(data: bytes, sniffed: Sniffed, limits: Limits, *, filename: str | None = None,
             passwords: Sequence[str] = ()) -> Workbook:
    """Read an ``xls`` (BIFF2–8, decrypted already) by value with ``xlrd``, its formatting
    records included; a file ``xlrd`` cannot read at all goes to :func:`.calamine.open_calamine`
    (a ``warning`` ``xlrd_failed``). ``filename`` and ``passwords`` are not used (every reader
    of the format table, :mod:`~extraction_assets.core.formats`, takes them).

    Raises:
        EncryptedWorkbookError: ``xlrd`` reports the file encrypted.
        CorruptWorkbookError: neither ``xlrd`` nor python-calamine reads it.
        LimitExceededError: more sheets, cells or merged ranges than ``limits`` allow.
    """
    import xlrd

    issues: list[Issue] = []
    try:
        book = xlrd.open_workbook(file_contents=data, formatting_info=True, on_demand=True,
                                  logfile=io.StringIO(), ragged_rows=True)
    except Exception as exc:  # xlrd raises XLRDError, struct.error, IndexError... on odd files
        if "encrypt" in str(exc).lower():
            raise EncryptedWorkbookError("the xls workbook is encrypted: password required")
        try:
            book = xlrd.open_workbook(file_contents=data, on_demand=True,
                                      logfile=io.StringIO(), ragged_rows=True)
            issues.append(Issue("parsed_sheets", None, None, "warning", "formatting_unreadable",
                                f"xlrd could not read the formatting records ({one_line(exc)})"))
        except Exception:
            wb = open_calamine(data, sniffed, limits)
            wb.issues.insert(0, Issue("parsed_sheets", None, None, "warning", "xlrd_failed",
                                      f"xlrd could not read the file ({one_line(exc)}); "
                                      "read with calamine"))
            return wb
    formatting = bool(getattr(book, "formatting_info", False)) and bool(book.xf_list)
    styles, xf_to_style = xlrd_styles(book) if formatting else ([CellStyle()], {})
    if formatting:
        styles_unavailable(issues, f"xlrd ({sniffed.label})",
                     "formulas (cached values only), theme colours, rich-text runs, comments, "
                     "hyperlinks, data validations and conditional formats")
    else:
        styles_unavailable(issues, f"xlrd ({sniffed.label})",
                     "number formats (dates get yyyy-mm-dd), fonts, fills, borders, alignment, "
                     "formulas (cached values only), rich text and comments")
    names = book.sheet_names()
    visibility = {0: "visible", 1: "hidden", 2: "veryHidden"}
    sheets = []
    for i, name in enumerate(names):
        kind = "worksheet"
        vis = "visible"
        try:
            vis = visibility.get(book._sheet_visibility[i], "visible")
        except (AttributeError, IndexError):
            pass
        sheets.append(SheetInfo(index=i + 1, name=name, visibility=vis, kind=kind, part=None))
    style_for_date = DateStyles(styles)

    def load(i: int) -> ParsedSheet:
        info = sheets[i]
        try:
            sh = book.sheet_by_index(i)
        except Exception as exc:
            issues.append(Issue("parsed_sheets", info.name, None, "error", "corrupt_workbook",
                                f"sheet {info.name!r} cannot be read: {one_line(exc)}"))
            return ParsedSheet(info)
        cells = CellColumns(limits.max_cells)
        for r in range(sh.nrows):
            types, values = sh.row_types(r), sh.row_values(r)
            for c, (ctype, value) in enumerate(zip(types, values)):
                if ctype in (0, 6):  # empty, blank
                    continue
                style = 0
                if formatting:
                    style = xf_to_style.get(sh.cell_xf_index(r, c), 0)
                if ctype == 1:
                    if value == "":
                        continue
                    cells.add(r + 1, c + 1, "s", value, style)
                elif ctype == 2:
                    cells.add(r + 1, c + 1, "n", number_text(value), style)
                elif ctype == 3:
                    if not formatting:
                        style = style_for_date("date" if float(value).is_integer() else "datetime")
                    cells.add(r + 1, c + 1, "n", number_text(value), style)
                elif ctype == 4:
                    cells.add(r + 1, c + 1, "b", "1" if value else "0", style)
                elif ctype == 5:
                    cells.add(r + 1, c + 1, "e", xlrd.error_text_from_code.get(value, "#N/A"),
                              style)
        sheet = ParsedSheet(info, cells=cells.table())
        sheet.merged_ranges = [range_ref(rlo + 1, clo + 1, rhi, chi)
                               for rlo, rhi, clo, chi in sh.merged_cells if rhi > rlo and chi > clo]
        if formatting:
            sheet.hidden_rows = sorted(r + 1 for r, ri in sh.rowinfo_map.items() if ri.hidden)
            sheet.hidden_columns = sorted(c + 1 for c, ci in sh.colinfo_map.items() if ci.hidden)
            sheet.column_widths = [(c + 1, c + 1, ci.width / 256)
                                   for c, ci in sorted(sh.colinfo_map.items()) if ci.width]
            if getattr(sh, "panes_are_frozen", 0) and (sh.horz_split_pos or sh.vert_split_pos):
                from extraction_assets.core.a1 import cell_ref

                sheet.frozen_pane = cell_ref(sh.horz_split_pos + 1, sh.vert_split_pos + 1)
        try:
            book.unload_sheet(i)
        except Exception:
            pass
        return sheet

    return by_value_workbook(sheets, styles, load, limits, issues, date1904=book.datemode == 1,
                     has_macros=sniffed.has_macros, closer=book.release_resources)


def xlrd_styles(book) -> tuple[list[CellStyle], dict[int, int]]:
    """One :class:`CellStyle` per distinct XF of the book; maps XF index -> style index."""
    colours = book.colour_map

    def rgb(index) -> str | None:
        value = colours.get(index)
        if value is None:
            return None
        return "rgb:FF%02X%02X%02X" % tuple(value)

    styles: list[CellStyle] = [CellStyle()]
    seen: dict[CellStyle, int] = {CellStyle(): 0}
    xf_to_style: dict[int, int] = {}
    for xf_index, xf in enumerate(book.xf_list):
        fmt = book.format_map.get(xf.format_key)
        font = book.font_list[xf.font_index] if xf.font_index < len(book.font_list) else None
        border = xf.border
        align = xf.alignment
        fill = None
        if xf.background is not None and xf.background.fill_pattern:
            fill = rgb(xf.background.pattern_colour_index)
        sides = {f"border_{side}": _BORDER_STYLES.get(getattr(border, f"{side}_line_style", 0))
                 for side in ("left", "right", "top", "bottom")} if border else {}
        font_colour = rgb(font.colour_index) if font is not None else None
        if font_colour == "rgb:FF000000":
            font_colour = None
        style = CellStyle(
            number_format_id=xf.format_key,
            number_format=(fmt.format_str if fmt is not None and fmt.format_str else "General"),
            bold=bool(font and (font.bold or font.weight >= 700)),
            italic=bool(font and font.italic), underline=bool(font and font.underline_type),
            strike=bool(font and font.struck_out),
            font_size=(font.height / 20 if font and font.height else None),
            font_color=font_colour, fill_color=fill,
            has_border=any(sides.values()),
            wrap_text=bool(align and align.text_wrapped),
            horizontal=_HORIZONTAL.get(align.hor_align) if align else None,
            vertical=(_VERTICAL.get(align.vert_align) if align and align.vert_align != 2
                      else None),
            font_name=font.name if font is not None else None,
            indent=int(align.indent_level) if align else 0,
            text_rotation=int(align.rotation) if align and align.rotation else None,
            **sides,
        )
        if style not in seen:
            seen[style] = len(styles)
            styles.append(style)
        xf_to_style[xf_index] = seen[style]
    return styles, xf_to_style
