"""Reading the neighbours of OOXML: ``.xls`` (BIFF2–8), ``.xlsb``, ``.ods``, ``.fods``, ``.csv``.

Two routes lead to the same :class:`~.ooxml.ParsedWorkbook` / :class:`~.ooxml.ParsedSheet`
shapes, so everything downstream (normalizer, segmenter, renderer) is unchanged:

* **LibreOffice** (``soffice``) on the machine: the file is converted to ``.xlsx`` headless —
  one throw-away user profile per conversion (``-env:UserInstallation``), a file lock so
  conversions never run concurrently, a timeout (the process group is killed), macros disabled
  in the profile (security level "very high", macro execution off), update checks and untrusted
  links off — and the converted bytes go through the full style-aware OOXML reader. The
  conversion (tool, version, seconds) is recorded as an ``info`` issue ``converted``.
* **Without LibreOffice** (or when the conversion fails): values are read by value.
  ``.xls`` through ``xlrd`` with ``formatting_info=True`` (cell types, number formats, merges,
  fonts, fills, borders, alignment, hidden rows/columns, frozen panes; BIFF2–BIFF8, with
  ``python-calamine`` as fallback when ``xlrd`` refuses a file); ``.xlsb``/``.ods``/``.fods``
  through ``python-calamine`` (values and types; ODS merges and hidden rows/columns from
  ``content.xml``); ``.csv``/``.tsv`` with the sniffed encoding and delimiter. An ``info`` issue
  ``styles_unavailable`` says which style features were not read.

Cells are typed like the OOXML reader's: numbers ``n`` with the value text, strings ``s``,
booleans ``b`` (``1``/``0``), errors ``e`` (``#DIV/0!``), and dates as ``n`` serials (1900
system) with a date number format, so display text and ISO typing work downstream. Formulas are
not available on the by-value route (cached values only).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.container import Limits, PackageReader, Sniffed, decode_text
from extraction_assets.core.errors import (
    CorruptWorkbookError,
    EncryptedWorkbookError,
    ExtractionError,
    HostileContentError,
    LimitExceededError,
    UnsupportedFormatError,
)
from extraction_assets.core.model import CellStyle, ParsedSheet, SheetInfo
from extraction_assets.core.model import Issue
from extraction_assets.core.model import CELL_SCHEMA
from extraction_assets.core.ooxml.workbook import ParsedWorkbook
from extraction_assets.core.ooxml.xml import syntax_error_message

#: Seconds a LibreOffice conversion may take before its process group is killed.
SOFFICE_TIMEOUT = float(os.environ.get("EXTRACTION_ASSETS_SOFFICE_TIMEOUT", "120"))
_SUFFIX = {"xls": ".xls", "xlsb": ".xlsb", "ods": ".ods", "fods": ".fods"}
_EPOCH = dt.datetime(1899, 12, 30)
_DATE_FORMATS = {"date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm:ss", "time": "hh:mm:ss",
                 "duration": "[h]:mm:ss"}


class _DateStyles:
    """Adds one ``CellStyle`` per date/time kind to a style list on first use; calling it with a
    kind (a key of ``_DATE_FORMATS``) returns that style's index."""

    def __init__(self, styles: list[CellStyle]):
        self.styles = styles
        self.index: dict[str, int] = {}

    def __call__(self, kind: str) -> int:
        if kind not in self.index:
            self.styles.append(CellStyle(number_format_id=164 + len(self.index),
                                         number_format=_DATE_FORMATS[kind]))
            self.index[kind] = len(self.styles) - 1
        return self.index[kind]


# -- the workbook -----------------------------------------------------------------------------
@dataclass
class LegacyWorkbook(ParsedWorkbook):
    """A :class:`ParsedWorkbook` whose sheets come from a by-value reader, not a zip package
    (``reader`` is ``None``). ``load_sheet(i)`` builds the i-th (0-based) sheet on demand."""

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


def _workbook(sheets: list[SheetInfo], styles: list[CellStyle], load, limits: Limits,
              issues: list[Issue], *, date1904: bool = False, has_macros: bool = False,
              closer=None) -> LegacyWorkbook:
    if len(sheets) > limits.max_sheets:
        raise LimitExceededError(f"workbook has more than {limits.max_sheets} sheets")
    return LegacyWorkbook(
        reader=None, sheets=sheets, styles=styles or [CellStyle()], shared_strings_part=None,
        date1904=date1904, theme_colors=[], indexed_colors=None, has_macros=has_macros,
        has_external_links=False, issues=issues, limits=limits, load_sheet=load, closer=closer)


class _Cells:
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
        days = (value - _EPOCH).total_seconds() / 86400
        kind = "date" if value.time() == dt.time() else "datetime"
        cut = dt.datetime(1900, 3, 1)
    elif isinstance(value, dt.date):
        days, kind, cut = float((value - _EPOCH.date()).days), "date", dt.date(1900, 3, 1)
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


# -- dispatch ---------------------------------------------------------------------------------
def open_legacy(data: bytes, sniffed: Sniffed, limits: Limits | None = None, *,
                filename: str | None = None, use_soffice: bool | None = None) -> ParsedWorkbook:
    """Open a non-OOXML workbook (``sniffed.format`` in ``xls``, ``xlsb``, ``ods``, ``fods``,
    ``csv``) as a :class:`ParsedWorkbook`.

    Args:
        data: the file's bytes.
        sniffed: what :func:`~.container.sniff` said about them.
        limits: safety limits (cells, sheets, merged ranges; package limits after conversion).
        filename: the file name, used only to name the single sheet of a CSV (its stem).
        use_soffice: force (``True``) or forbid (``False``) the LibreOffice route; ``None``
            uses it when ``soffice`` is found (see :func:`find_soffice`).

    Raises:
        EncryptedWorkbookError: an encrypted ``xls`` or ODS (password required).
        CorruptWorkbookError: the readers cannot make sense of the file.
        HostileContentError: a flat ODS declaring a DTD.
        LimitExceededError: more cells, sheets or merged ranges than ``limits`` allow, or an
            ``xlsb``/``ods`` package beyond its package limits (parts, sizes, compression;
            see :class:`~.container.PackageReader`, which also refuses duplicate part names).
    """
    limits = limits or Limits()
    if sniffed.encrypted:
        raise EncryptedWorkbookError(
            f"the {sniffed.format} workbook ({sniffed.label}) is encrypted: password required")
    if sniffed.container == "zip":  # xlsb, ods: the package limits before any reader sees it
        PackageReader(data, limits).close()
    if sniffed.format == "csv":
        return _open_csv(data, sniffed, limits, filename)
    if sniffed.format == "ods" and _ods_encrypted(data):
        raise EncryptedWorkbookError("the ods workbook is encrypted: password required")
    if sniffed.format == "fods":
        _check_xml_prolog(data)
    fallback_issue = None
    soffice = find_soffice() if use_soffice is not False else None
    if use_soffice and soffice is None:
        raise UnsupportedFormatError("LibreOffice (soffice) is not installed")
    if soffice and sniffed.format in _SUFFIX:
        try:
            converted, version, seconds = convert_to_xlsx(data, sniffed.format, soffice)
        except ExtractionError as exc:
            fallback_issue = Issue("parsed_sheets", None, None, "warning", "conversion_failed",
                                   f"LibreOffice could not convert the {sniffed.format} file "
                                   f"({exc.message}); read by value instead")
        else:
            from extraction_assets.core.open import open_workbook

            wb = open_workbook(converted, limits)
            wb.has_macros = wb.has_macros or sniffed.has_macros
            wb.conversion = {"tool": "LibreOffice", "version": version,
                             "seconds": round(seconds, 3)}
            wb.issues.insert(0, Issue(
                "parsed_sheets", None, None, "info", "converted",
                f"{sniffed.format} ({sniffed.label}) converted to xlsx by LibreOffice {version} "
                f"in {seconds:.2f} s; read with the full OOXML reader"))
            return wb
    if sniffed.format == "xls":
        wb = _open_xls(data, sniffed, limits)
    elif sniffed.format in ("xlsb", "ods", "fods"):
        wb = _open_calamine(data, sniffed, limits)
    else:
        raise UnsupportedFormatError(f"{sniffed.format} workbooks are not read")
    if fallback_issue:
        wb.issues.insert(0, fallback_issue)
    return wb


def _unavailable(wb_issues: list[Issue], reader: str, features: str) -> None:
    wb_issues.append(Issue(
        "parsed_sheets", None, None, "info", "styles_unavailable",
        f"read by value with {reader} (LibreOffice not used): {features} are not available"))


# -- .xls through xlrd ------------------------------------------------------------------------
_BORDER_STYLES = {1: "thin", 2: "medium", 3: "dashed", 4: "dotted", 5: "thick", 6: "double",
                  7: "hair", 8: "mediumDashed", 9: "dashDot", 10: "mediumDashDot",
                  11: "dashDotDot", 12: "mediumDashDotDot", 13: "slantDashDot"}
_HORIZONTAL = {1: "left", 2: "center", 3: "right", 4: "fill", 5: "justify",
               6: "centerContinuous", 7: "distributed"}
_VERTICAL = {0: "top", 1: "center", 2: "bottom", 3: "justify", 4: "distributed"}


def _open_xls(data: bytes, sniffed: Sniffed, limits: Limits) -> ParsedWorkbook:
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
                                f"xlrd could not read the formatting records ({_one_line(exc)})"))
        except Exception:
            wb = _open_calamine(data, sniffed, limits)
            wb.issues.insert(0, Issue("parsed_sheets", None, None, "warning", "xlrd_failed",
                                      f"xlrd could not read the file ({_one_line(exc)}); "
                                      "read with calamine"))
            return wb
    formatting = bool(getattr(book, "formatting_info", False)) and bool(book.xf_list)
    styles, xf_to_style = _xlrd_styles(book) if formatting else ([CellStyle()], {})
    if formatting:
        _unavailable(issues, f"xlrd ({sniffed.label})",
                     "formulas (cached values only), theme colours, rich-text runs, comments, "
                     "hyperlinks, data validations and conditional formats")
    else:
        _unavailable(issues, f"xlrd ({sniffed.label})",
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
    style_for_date = _DateStyles(styles)

    def load(i: int) -> ParsedSheet:
        info = sheets[i]
        try:
            sh = book.sheet_by_index(i)
        except Exception as exc:
            issues.append(Issue("parsed_sheets", info.name, None, "error", "corrupt_workbook",
                                f"sheet {info.name!r} cannot be read: {_one_line(exc)}"))
            return ParsedSheet(info)
        cells = _Cells(limits.max_cells)
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

    return _workbook(sheets, styles, load, limits, issues, date1904=book.datemode == 1,
                     has_macros=sniffed.has_macros, closer=book.release_resources)


def _xlrd_styles(book) -> tuple[list[CellStyle], dict[int, int]]:
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


# -- .xlsb / .ods / .fods through calamine ----------------------------------------------------
def _open_calamine(data: bytes, sniffed: Sniffed, limits: Limits) -> ParsedWorkbook:
    import python_calamine as cal

    payload = data
    ods_xml = None
    if sniffed.format == "fods":
        payload, ods_xml = fods_to_ods(data)
    elif sniffed.format == "ods":
        ods_xml = _zip_member(data, "content.xml", limits)
    try:
        book = cal.CalamineWorkbook.from_filelike(io.BytesIO(payload))
        metadata = book.sheets_metadata
    except cal.PasswordError:
        raise EncryptedWorkbookError(
            f"the {sniffed.format} workbook is encrypted: password required") from None
    except Exception as exc:  # CalamineError, XmlError, ZipError, panics surfaced as errors
        if ods_xml:
            return _open_ods_content(ods_xml, sniffed, limits, _one_line(exc))
        raise CorruptWorkbookError(
            f"the {sniffed.format} workbook cannot be read: {_one_line(exc)}") from None
    issues: list[Issue] = []
    merges_from = "merges and hidden rows/columns from content.xml" if ods_xml else ""
    _unavailable(issues, f"python-calamine ({sniffed.format})",
                 "number formats (dates get yyyy-mm-dd, other numbers General), fonts, fills, "
                 "borders, alignment, formulas (cached values only), rich text, comments"
                 + ("" if ods_xml else ", merged ranges, hidden rows and columns")
                 + (f" ({merges_from} are read)" if merges_from else ""))
    ods_facts = _ods_sheet_facts(ods_xml, limits) if ods_xml else {}
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

    style_for = _DateStyles(styles)

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
                                f"sheet {info.name!r} cannot be read: {_one_line(exc)}"))
            return ParsedSheet(info)
        cells = _Cells(limits.max_cells)
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
                    if _ERROR_RE.match(text) and sniffed.format == "xlsb":
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

    return _workbook(sheets, styles, load, limits, issues, has_macros=sniffed.has_macros,
                     closer=book.close)


def _open_ods_content(content_xml: bytes, sniffed: Sniffed, limits: Limits,
                      why: str) -> ParsedWorkbook:
    """Read an ODS ``content.xml`` ourselves (calamine refused the file)."""
    styles = [CellStyle()]
    style_for = _DateStyles(styles)

    facts = _ods_sheet_facts(content_xml, limits, values=True, date_style=style_for)
    issues = [Issue("parsed_sheets", None, None, "info", "calamine_failed",
                    f"python-calamine could not read the {sniffed.format} file ({why}); "
                    "content.xml read directly")]
    _unavailable(issues, f"the ODS content reader ({sniffed.format})",
                 "number formats (dates get yyyy-mm-dd, other numbers General), fonts, fills, "
                 "borders, alignment, sheet visibility, formulas (cached values only), rich text "
                 "and comments")
    sheets = [SheetInfo(index=i + 1, name=name, visibility="visible", kind="worksheet",
                        part=None) for i, name in enumerate(facts)]

    def load(i: int) -> ParsedSheet:
        f = facts[sheets[i].name]
        return ParsedSheet(sheets[i], cells=f["cells"].table(), merged_ranges=f["merged"],
                           hidden_rows=f["hidden_rows"], hidden_columns=f["hidden_columns"])

    return _workbook(sheets, styles, load, limits, issues, has_macros=sniffed.has_macros)


_ERROR_RE = re.compile(r"^#(NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|GETTING_DATA)$")


def _zip_member(data: bytes, name: str, limits: Limits) -> bytes | None:
    try:
        with PackageReader(data, limits) as reader:
            return reader.read(name) if reader.has(name) else None
    except (CorruptWorkbookError, HostileContentError):
        return None


def _ods_encrypted(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            manifest = zf.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in \
                zf.namelist() else b""
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return False
    return b"encryption-data" in manifest[:1_000_000]


def _check_xml_prolog(data: bytes) -> None:
    head = data[:65_536]
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise HostileContentError("the flat ODS file declares a DTD; refused")


_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def fods_to_ods(data: bytes) -> tuple[bytes, bytes]:
    """Repackage a flat ODS (one ``office:document`` XML) as an ODS zip (``mimetype``,
    ``content.xml``, ``styles.xml``, manifest) so calamine can read it; returns the zip and its
    ``content.xml``."""
    from lxml import etree

    _check_xml_prolog(data)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise CorruptWorkbookError(
            f"the flat ODS XML is malformed: {_one_line(syntax_error_message(exc))}") from None
    o = "{%s}" % _OFFICE
    content = etree.Element(o + "document-content", nsmap=root.nsmap)
    styles = etree.Element(o + "document-styles", nsmap=root.nsmap)
    for key, value in root.attrib.items():
        if not key.endswith("mimetype"):
            content.set(key, value)
            styles.set(key, value)
    for child in root:
        if not isinstance(child.tag, str):
            continue
        local = child.tag.rsplit("}", 1)[-1]
        if local in ("scripts", "font-face-decls", "automatic-styles", "body"):
            content.append(child)
        elif local in ("styles", "master-styles"):
            styles.append(child)
    content_xml = etree.tostring(content, xml_declaration=True, encoding="UTF-8")
    manifest = (b'<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest='
                b'"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                b'<manifest:file-entry manifest:full-path="/" manifest:media-type='
                b'"application/vnd.oasis.opendocument.spreadsheet"/>'
                b'<manifest:file-entry manifest:full-path="content.xml" '
                b'manifest:media-type="text/xml"/><manifest:file-entry manifest:full-path='
                b'"styles.xml" manifest:media-type="text/xml"/></manifest:manifest>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"),
                    b"application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", content_xml, zipfile.ZIP_DEFLATED)
        zf.writestr("styles.xml", etree.tostring(styles, xml_declaration=True, encoding="UTF-8"),
                    zipfile.ZIP_DEFLATED)
        zf.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
    return buf.getvalue(), content_xml


def _ods_sheet_facts(content_xml: bytes, limits: Limits, values: bool = False,
                     date_style=None) -> dict[str, dict]:
    """Merged ranges (``number-columns-spanned``/``number-rows-spanned``) and hidden rows and
    columns (``table:visibility="collapsed"``) of each table of an ODS ``content.xml``
    (OpenDocument 1.2 Part 1, §9.1), in table order. Repeated rows/columns are counted, not
    expanded. With ``values``, also the cells (``cells``: a :class:`_Cells`) read from
    ``office:value-type`` and friends (§19.385); ``date_style(kind)`` gives the style index of
    a date kind."""
    from lxml import etree

    t, o, x = "{%s}" % _TABLE, "{%s}" % _OFFICE, "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
    facts: dict[str, dict] = {}
    current = None
    row = col = colpos = 0
    budget = limits.max_cells
    try:
        for event, el in etree.iterparse(io.BytesIO(content_xml), events=("start", "end"),
                                         resolve_entities=False, no_network=True,
                                         load_dtd=False, huge_tree=False):
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag == t + "table":
                    current = {"merged": [], "hidden_rows": [], "hidden_columns": [],
                               "cells": _Cells(budget) if values else None}
                    facts[el.get(t + "name") or f"Sheet{len(facts) + 1}"] = current
                    row = col = colpos = 0
                elif current is None:
                    continue
                elif tag == t + "table-column":
                    n = min(int(el.get(t + "number-columns-repeated") or 1), 16_384)
                    if el.get(t + "visibility") == "collapsed" and colpos + n <= 16_384:
                        current["hidden_columns"].extend(range(colpos + 1, colpos + n + 1))
                    colpos += n
                elif tag == t + "table-row":
                    col = 0
                    reps = int(el.get(t + "number-rows-repeated") or 1)
                    if el.get(t + "visibility") == "collapsed" and reps < 10_000:
                        current["hidden_rows"].extend(range(row + 1, row + reps + 1))
                    el.set("_reps", str(reps))
                elif tag in (t + "table-cell", t + "covered-table-cell"):
                    span_c = int(el.get(t + "number-columns-spanned") or 1)
                    span_r = int(el.get(t + "number-rows-spanned") or 1)
                    if tag == t + "table-cell" and (span_c > 1 or span_r > 1):
                        current["merged"].append(range_ref(row + 1, col + 1, row + span_r,
                                                           col + span_c))
                        if len(current["merged"]) > limits.max_merged_ranges:
                            raise LimitExceededError("an ODS table has more than "
                                                     f"{limits.max_merged_ranges} merged ranges")
                    el.set("_col", str(col))
                    el.set("_row", str(row))
                    col += int(el.get(t + "number-columns-repeated") or 1)
            elif current is not None and tag in (t + "table-cell", t + "covered-table-cell"):
                if values and (el.get(o + "value-type") or len(el)):
                    _ods_cell(el, current["cells"], o, t, x, date_style)
                el.clear()
            elif tag == t + "table-row":
                row += int(el.get("_reps") or 1)
                el.clear()
            elif tag == t + "table":
                if current is not None and current["cells"] is not None:
                    budget -= len(current["cells"].cols["row"])
                current = None
                el.clear()
    except (etree.XMLSyntaxError, ValueError):
        if values:
            raise CorruptWorkbookError("the ODS content.xml is malformed") from None
    return facts


_DURATION_RE = re.compile(r"^(-)?P(?:(\d+)D)?T?(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$")


def _ods_cell(el, cells: "_Cells", o: str, t: str, x: str, date_style) -> None:
    """Add one ODS cell (repeated ``number-columns-repeated`` times, at most 1,024 for a
    non-empty value) to ``cells``."""
    row = int(el.get("_row")) + 1
    col = int(el.get("_col")) + 1
    kind = el.get(o + "value-type")
    style = 0
    if kind in ("float", "percentage", "currency"):
        dtype, value = "n", el.get(o + "value")
        try:
            value = number_text(float(value))
        except (TypeError, ValueError):
            dtype, value = "s", _ods_text(el, x)
    elif kind == "boolean":
        dtype, value = "b", "1" if el.get(o + "boolean-value") == "true" else "0"
    elif kind == "date":
        text = el.get(o + "date-value") or ""
        try:
            number, dkind = serial(dt.datetime.fromisoformat(text[:26]))
            dtype, value, style = "n", number_text(number), date_style(dkind)
        except ValueError:
            dtype, value = "s", _ods_text(el, x) or text
    elif kind == "time":
        m = _DURATION_RE.match(el.get(o + "time-value") or "")
        if m:
            days = (int(m.group(2) or 0) + int(m.group(3) or 0) / 24 + int(m.group(4) or 0)
                    / 1440 + float(m.group(5) or 0) / 86400)
            days = -days if m.group(1) else days
            dtype, value = "n", number_text(days)
            style = date_style("time" if 0 <= days < 1 else "duration")
        else:
            dtype, value = "s", _ods_text(el, x)
    else:
        dtype, value = "s", _ods_text(el, x)
    if value in (None, ""):
        return
    reps = min(int(el.get(t + "number-columns-repeated") or 1), 1024)
    for i in range(reps):
        cells.add(row, col + i, dtype, value, style)


def _ods_text(el, x: str) -> str:
    """Text of an ODS cell: its ``text:p`` paragraphs joined by newlines (``text:s`` spaces,
    ``text:tab``, ``text:line-break`` honoured; cell annotations are not cell text)."""
    return "\n".join(_para_text(p, x) for p in el
                     if isinstance(p.tag, str) and p.tag in (x + "p", x + "h"))


def _para_text(node, x: str) -> str:
    out = [node.text or ""]
    for child in node:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == x + "s":
            try:
                out.append(" " * min(int(child.get(x + "c") or 1), 1024))
            except ValueError:
                out.append(" ")
        elif tag == x + "tab":
            out.append("\t")
        elif tag == x + "line-break":
            out.append("\n")
        elif tag and not tag.endswith("}annotation"):
            out.append(_para_text(child, x))
        out.append(child.tail or "")
    return "".join(out)


# -- .csv / .tsv ------------------------------------------------------------------------------
_NUMBER_RE = re.compile(r"^-?(?:0|[1-9]\d{0,14})(?:\.\d*[1-9])?$")
_ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?$")


def _open_csv(data: bytes, sniffed: Sniffed, limits: Limits, filename: str | None):
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
        cells = _Cells(limits.max_cells)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        try:
            for r, fields in enumerate(reader, start=1):
                for c, value in enumerate(fields, start=1):
                    if value == "":
                        continue
                    if _NUMBER_RE.match(value):
                        cells.add(r, c, "n", value)
                    elif _ISO_DATE_RE.match(value):
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
                                f"delimited text stops parsing: {_one_line(exc)}"))
        return ParsedSheet(info, cells=cells.table())

    return _workbook([info], styles, load, limits, issues)


# -- LibreOffice ------------------------------------------------------------------------------
def find_soffice() -> str | None:
    """The LibreOffice executable, or ``None``. ``EXTRACTION_ASSETS_SOFFICE`` overrides the
    search (a path, or ``0``/``off`` to never convert)."""
    override = os.environ.get("EXTRACTION_ASSETS_SOFFICE")
    if override is not None:
        if override.strip().lower() in ("", "0", "off", "false", "no"):
            return None
        return override if Path(override).exists() or shutil.which(override) else None
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    mac = "/Applications/LibreOffice.app/Contents/MacOS/soffice"
    return mac if Path(mac).exists() else None


_PROFILE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" \
xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Jobs/Jobs/org.openoffice.Office.Jobs:Job['UpdateCheck']/Arguments">\
<prop oor:name="AutoCheckEnabled" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc">\
<prop oor:name="UseLocking" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


def _profile(root: Path) -> str:
    """A fresh LibreOffice user profile under ``root`` with macros and update checks off."""
    user = root / "profile" / "user"
    user.mkdir(parents=True)
    (user / "registrymodifications.xcu").write_text(_PROFILE_XCU, encoding="utf-8")
    return (root / "profile").as_uri()


def _run(cmd: list[str], timeout: float, cwd: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(SAL_USE_VCLPLUGIN="svp", HOME=cwd, no_proxy="*", NO_PROXY="*")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env, start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.communicate()
        raise CorruptWorkbookError(f"LibreOffice took more than {timeout:.0f} s") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@lru_cache(maxsize=4)
def soffice_version(soffice: str) -> str:
    """``LibreOffice 24.2.1.2 ...`` -> ``24.2.1.2`` (``unknown`` when it cannot be asked)."""
    with tempfile.TemporaryDirectory(prefix="ea-soffice-") as tmp:
        try:
            done = _run([soffice, f"-env:UserInstallation={_profile(Path(tmp))}", "--headless",
                         "--version"], 60, tmp)
        except (OSError, ExtractionError):
            return "unknown"
    match = re.search(rb"(\d+(?:\.\d+)+)", done.stdout or b"")
    return match.group(1).decode() if match else "unknown"


def _lock_path() -> str:
    return os.path.join(tempfile.gettempdir(), "extraction-assets-soffice.lock")


def convert_to_xlsx(data: bytes, fmt: str, soffice: str | None = None,
                    timeout: float | None = None) -> tuple[bytes, str, float]:
    """Convert ``data`` (format ``fmt``: ``xls``, ``xlsb``, ``ods``, ``fods``) to ``.xlsx``
    with headless LibreOffice; returns ``(xlsx bytes, LibreOffice version, seconds)``.

    One conversion at a time on the machine (a ``filelock`` in the temp dir), each with its
    own throw-away user profile (macros disabled, no update check), a timeout after which the
    process group is killed.

    Raises:
        UnsupportedFormatError: no ``soffice`` found.
        CorruptWorkbookError: LibreOffice failed, timed out or wrote no ``.xlsx``.
    """
    from filelock import FileLock, Timeout

    soffice = soffice or find_soffice()
    if soffice is None:
        raise UnsupportedFormatError("LibreOffice (soffice) is not installed")
    timeout = SOFFICE_TIMEOUT if timeout is None else timeout
    version = soffice_version(soffice)
    with tempfile.TemporaryDirectory(prefix="ea-soffice-") as tmp:
        root = Path(tmp)
        src = root / ("input" + _SUFFIX[fmt])
        src.write_bytes(data)
        out = root / "out"
        out.mkdir()
        cmd = [soffice, f"-env:UserInstallation={_profile(root)}", "--headless", "--invisible",
               "--nologo", "--nodefault", "--norestore", "--nolockcheck",
               "--convert-to", "xlsx:Calc MS Excel 2007 XML", "--outdir", str(out), str(src)]
        try:
            with FileLock(_lock_path(), timeout=timeout * 4):
                start = time.perf_counter()
                done = _run(cmd, timeout, tmp)
                seconds = time.perf_counter() - start
        except Timeout:
            raise CorruptWorkbookError("waited too long for another LibreOffice conversion") \
                from None
        except OSError as exc:
            raise CorruptWorkbookError(f"LibreOffice could not be started: {exc}") from None
        result = out / "input.xlsx"
        if done.returncode != 0 or not result.exists() or result.stat().st_size == 0:
            message = _one_line((done.stderr or b"").decode("utf-8", "replace")) or "no output"
            raise CorruptWorkbookError(
                f"LibreOffice did not convert the file (exit {done.returncode}: {message})")
        return result.read_bytes(), version, seconds


def _one_line(value) -> str:
    return " ".join(str(value).split())[:300]
