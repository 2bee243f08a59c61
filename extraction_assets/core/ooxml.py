"""Streaming reader of SpreadsheetML packages (``.xlsx`` / ``.xlsm``, Transitional and Strict).

The reader walks the package the way ECMA-376 Part 1 describes it: ``_rels/.rels`` names the
workbook part (§12.3.23), the workbook part lists the sheets and their relationships (§18.2.27),
the shared string table (§18.4.9) and the stylesheet (§18.8.39) are read once, and each worksheet
part (§18.3.1.99) is parsed with ``lxml.etree.iterparse``: elements are cleared as soon as they
are read, so memory grows with the non-empty cells of the sheet being read, never with the
declared ``<dimension>`` or with empty ``<row>`` elements.

Namespaces are matched by local name, so Strict OOXML (``purl.oclc.org``) and non-standard
prefixes read the same as Transitional. No DTD is loaded, no entity is resolved and no network
access is made by the XML parser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Sequence

import pyarrow as pa

from extraction_assets.core.a1 import MAX_COL, cell_ref, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.container import (
    LEGACY_FORMATS,
    Budget,
    Limits,
    PackageReader,
    require_spreadsheet,
    sniff,
)
from extraction_assets.core.errors import CorruptWorkbookError, LimitExceededError
from extraction_assets.core.objects import (
    SheetObject,
    read_chartsheet_objects,
    read_sheet_objects,
    read_workbook_objects,
)
from extraction_assets.core.parts import (
    Issue,
    RichString,
    color_code,
    parse_part,
    read_rels,
    read_shared_strings,
    rel_attr,
)
from extraction_assets.core.worksheet import CELL_SCHEMA, WorksheetReader, open_stream
from extraction_assets.core.worksheet import local as _local

#: Built-in number formats of ECMA-376 Part 1, §18.8.30 (en-US rendering of the locale ids).
BUILTIN_NUMBER_FORMATS: dict[int, str] = {
    0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00",
    5: '"$"#,##0_);("$"#,##0)', 6: '"$"#,##0_);[Red]("$"#,##0)',
    7: '"$"#,##0.00_);("$"#,##0.00)', 8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
    9: "0%", 10: "0.00%", 11: "0.00E+00", 12: "# ?/?", 13: "# ??/??",
    14: "m/d/yyyy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yyyy h:mm",
    37: "#,##0 ;(#,##0)", 38: "#,##0 ;[Red](#,##0)", 39: "#,##0.00;(#,##0.00)",
    40: "#,##0.00;[Red](#,##0.00)", 41: '_(* #,##0_);_(* (#,##0);_(* "-"_);_(@_)',
    42: '_("$"* #,##0_);_("$"* (#,##0);_("$"* "-"_);_(@_)',
    43: '_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)',
    44: '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)',
    45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0", 48: "##0.0E+0", 49: "@",
}

_REL_OFFICE_DOCUMENT = "officeDocument"


@dataclass(frozen=True)
class CellStyle:
    """The formatting of one ``cellXfs`` entry (ECMA-376 Part 1, §18.8.10), colours unresolved.

    Colours are kept as written: ``rgb:AARRGGBB``, ``theme:N`` or ``theme:N;tint:T``,
    ``indexed:N``, or ``None``; they are resolved to ``RRGGBB`` by the normalizer.

    Font (§18.8.22): ``bold``, ``italic``, ``underline``, ``strike``, ``font_size`` (points),
    ``font_color``, ``font_name``. Fill (§18.8.20/§18.8.32): ``fill_color`` (``fgColor`` of a
    non-``none`` pattern). Border (§18.8.4): ``border_left``/``border_right``/``border_top``/
    ``border_bottom`` hold the side's ``ST_BorderStyle`` (§18.18.3: ``thin``, ``medium``,
    ``dashed``, ``double``...) or ``None``; ``start``/``end`` stand for left/right when those are
    absent; ``has_border`` is true when any of the four sides has a style. Alignment (§18.8.1):
    ``wrap_text``, ``horizontal`` and ``vertical`` (``ST_HorizontalAlignment`` §18.18.40,
    ``ST_VerticalAlignment`` §18.18.88, ``None`` when not written), ``indent`` (levels, 0 by
    default) and ``text_rotation`` (degrees 0–180, 255 for vertical stacked text, ``None``
    when not written).

    Every field is a column of the ``styles`` table with the same name.
    """

    number_format_id: int = 0
    number_format: str = "General"
    bold: bool = False
    italic: bool = False
    underline: bool = False
    strike: bool = False
    font_size: float | None = None
    font_color: str | None = None
    fill_color: str | None = None
    has_border: bool = False
    wrap_text: bool = False
    horizontal: str | None = None
    font_name: str | None = None
    border_left: str | None = None
    border_right: str | None = None
    border_top: str | None = None
    border_bottom: str | None = None
    vertical: str | None = None
    indent: int = 0
    text_rotation: int | None = None


@dataclass
class SheetInfo:
    """One sheet of the workbook, in workbook order.

    Attributes:
        index: 1-based position in the workbook.
        name: the name shown on the tab.
        visibility: ``visible``, ``hidden`` or ``veryHidden`` (ECMA-376 §18.18.68).
        kind: ``worksheet``, ``chartsheet``, ``dialogsheet`` or ``macrosheet``.
        part: package part name of the sheet, or ``None`` when the relationship is missing.
        declared_dimension: the ``<dimension ref>`` as written (not trusted).
    """

    index: int
    name: str
    visibility: str
    kind: str
    part: str | None
    declared_dimension: str | None = None


@dataclass
class ParsedSheet:
    """The cells and sheet facts of one sheet.

    ``cells`` is an Arrow table (:data:`~.worksheet.CELL_SCHEMA`): ``row``/``col`` (1-based),
    ``data_type`` (the ``t`` attribute as written, default ``n``), ``value`` (the ``<v>`` or
    inline text; shared strings resolved; null when absent), ``formula`` (text without ``=``,
    shared formulas translated for dependents), ``formula_kind`` (``normal``, ``shared``,
    ``array``, ``dataTable`` or null) and ``style_index`` (into :attr:`ParsedWorkbook.styles`).
    Sheet facts: merged ranges (A1), hidden rows and columns (1-based, from ``<row hidden>`` and
    ``<col hidden>``, §18.3.1.73 and §18.3.1.13), the frozen pane's top-left scrolling cell
    (``<pane state="frozen">``, §18.3.1.66), custom row heights (points, by row) and column
    widths (``(first column, last column, width in characters)`` from ``<col>``).
    """

    info: SheetInfo
    cells: pa.Table = field(default_factory=CELL_SCHEMA.empty_table)
    merged_ranges: list[str] = field(default_factory=list)
    hidden_rows: list[int] = field(default_factory=list)
    hidden_columns: list[int] = field(default_factory=list)
    frozen_pane: str | None = None
    row_heights: dict[int, float] = field(default_factory=dict)
    column_widths: list[tuple[int, int, float]] = field(default_factory=list)
    objects: list[SheetObject] = field(default_factory=list)

    def __len__(self) -> int:
        return self.cells.num_rows

    @property
    def cf_ranges(self) -> list[str]:
        """A1 ranges covered by conditional formatting rules (space-separated sqref split)."""
        return [ref for obj in self.objects if obj.kind == "conditional_format" and obj.ref
                for ref in obj.ref.split()]

    def column(self, name: str) -> list:
        """One cell column as a Python list (for tests and small sheets)."""
        return self.cells.column(name).to_pylist()


@dataclass
class WorkbookStyles:
    """What the normalizer needs besides cells: the ``cellXfs`` styles, the theme's colour
    scheme (``RRGGBB``, clrScheme order), the workbook's own indexed palette (or ``None``) and
    the date system (``date1904``, ECMA-376 §18.2.28). ``cache`` is the normalizer's, shared by
    the sheets of the workbook (style arrays, display text per number format and value)."""

    styles: list[CellStyle]
    theme_colors: list[str]
    indexed_colors: list[str] | None
    date1904: bool
    cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)


@dataclass
class ParsedWorkbook:
    """Workbook-level facts plus a lazy, per-sheet cell stream.

    Use :meth:`iter_sheets` to read the sheets one at a time; only the current sheet's cells are
    held in memory. The shared string table is read on first use (:attr:`shared_strings`), so
    a caller that needs only the workbook-level facts (sheet list, date system, flags) does
    not parse it.
    """

    reader: PackageReader | None
    sheets: list[SheetInfo]
    styles: list[CellStyle]
    #: the shared string table's part (``xl/sharedStrings.xml`` as the workbook's
    #: relationships name it), ``None`` when the package has none
    shared_strings_part: str | None
    date1904: bool
    theme_colors: list[str]
    indexed_colors: list[str] | None
    has_macros: bool
    has_external_links: bool
    issues: list[Issue]
    limits: Limits
    objects: list[SheetObject] = field(default_factory=list)
    #: ``{"tool", "version", "seconds"}`` when the workbook was converted to xlsx first.
    conversion: dict | None = None

    def iter_sheets(self) -> Iterator[ParsedSheet]:
        """Yield one :class:`ParsedSheet` per sheet, in workbook order.

        Chartsheets, dialog sheets and sheets whose part is missing yield no cells. A worksheet
        whose XML is damaged yields the cells read so far and records an ``extraction_issues``
        row instead of failing the workbook. A sheet whose part an earlier sheet already read
        (two ``<sheet>`` entries sharing one part, which Excel never writes) yields no cells and
        a ``shared_sheet_part`` warning. Each sheet's objects (comments, hyperlinks,
        validations, conditional formats, tables, charts, pictures) are in ``sheet.objects``;
        a damaged optional part becomes an issue, never an exception.

        Raises:
            LimitExceededError: more cells than ``limits.max_cells`` or more bytes of cell text
                than ``limits.max_text_bytes`` in the workbook, more merged ranges than
                ``limits.max_merged_ranges`` or more than ``limits.max_tree_bytes`` of XML
                outside the cells on one sheet.
            CorruptWorkbookError, HostileContentError: the shared string table cannot be read
                (see :attr:`shared_strings`; it is read before the first sheet, since every
                worksheet depends on it).
        """
        self.shared_strings  # noqa: B018 - read (or refused) before the first sheet
        budget = Budget(self.limits)
        read_by: dict[str, str] = {}
        for info in self.sheets:
            sheet = ParsedSheet(info)
            if info.part and info.part.lower() in read_by:
                self.issues.append(Issue(
                    "parsed_sheets", info.name, None, "warning", "shared_sheet_part",
                    f"sheet {info.name!r} has the part of sheet {read_by[info.part.lower()]!r} "
                    f"({info.part}); it is read once, for that sheet"))
            elif info.kind == "worksheet" and info.part and self.reader.has(info.part):
                read_by[info.part.lower()] = info.name
                frame = None
                try:
                    frame = self._read_worksheet(sheet, budget)
                except CorruptWorkbookError as exc:
                    self.issues.append(
                        Issue("parsed_sheets", info.name, None, "error", exc.code, exc.message)
                    )
                sheet.objects = read_sheet_objects(self.reader, info.part, info.name, frame,
                                                   self.shared_strings, issues=self.issues)
            elif info.kind == "chartsheet" and info.part and self.reader.has(info.part):
                read_by[info.part.lower()] = info.name
                sheet.objects = read_chartsheet_objects(self.reader, info.part, info.name,
                                                        issues=self.issues,
                                                        shared_strings=self.shared_strings)
            elif info.kind == "worksheet":
                self.issues.append(
                    Issue("parsed_sheets", info.name, None, "warning", "missing_sheet_part",
                          f"sheet {info.name!r} has no readable worksheet part")
                )
            yield sheet

    @cached_property
    def shared_strings(self) -> list[str]:
        """The shared string table (ECMA-376 Part 1 §18.4.9, ``sst``), read on first use: a
        :class:`~.parts.SharedStrings`, empty when there is no such part or no package.

        A string longer than ``limits.max_cell_chars`` is cut there, with a
        ``cell_text_truncated`` warning.

        Raises:
            CorruptWorkbookError: the part is not well-formed XML.
            HostileContentError: the part declares a DTD.
        """
        if self.reader is None:
            return []
        strings = read_shared_strings(self.reader, self.shared_strings_part)
        if strings.truncated:
            self.issues.append(Issue(
                "parsed_sheets", None, None, "warning", "cell_text_truncated",
                f"{len(strings.truncated)} shared strings longer than "
                f"{self.limits.max_cell_chars} characters cut there (the first is string "
                f"{strings.truncated[0]})"))
        return strings

    @property
    def rich_strings(self) -> list[RichString]:
        """The shared strings that have rich-text runs (§18.4.4) or phonetic runs (§18.4.6),
        in index order (see :class:`~.parts.RichString`); empty when none."""
        return getattr(self.shared_strings, "rich", [])

    @cached_property
    def shared_strings_array(self) -> pa.Array:
        """The shared string table as an Arrow array (built once per workbook)."""
        return pa.array(self.shared_strings, pa.string())

    @property
    def style_context(self) -> WorkbookStyles:
        """The workbook's styles, theme colours, indexed palette and date system."""
        return WorkbookStyles(self.styles, self.theme_colors, self.indexed_colors, self.date1904)

    def close(self) -> None:
        """Release the package."""
        self.reader.close()

    def _read_worksheet(self, sheet: ParsedSheet, budget: Budget):
        """Read a worksheet's cells and facts into ``sheet``; returns its frame element."""
        name = sheet.info.name
        reader = WorksheetReader(open_stream(self.reader, sheet.info.part), self.shared_strings,
                                 budget, self.shared_strings_array)
        try:
            reader.read()
        finally:
            for ref, code, message in reader.issues.items:
                self.issues.append(Issue("parsed_sheets", name, ref, "warning", code, message))
            if reader.cells is not None:
                sheet.cells = reader.cells
            sheet.hidden_rows = sorted(set(reader.hidden_rows))
            sheet.row_heights = dict(sorted(reader.row_heights.items()))
        self._read_frame(sheet, reader.frame)
        return reader.frame

    def _read_frame(self, sheet: ParsedSheet, frame) -> None:
        """Sheet facts from the worksheet element without its cells."""
        name = sheet.info.name
        hidden_columns: set[int] = set()
        for el in frame.iter():
            if not isinstance(el.tag, str):
                continue
            tag = _local(el.tag)
            if tag == "mergeCell":
                ref = el.get("ref")
                try:
                    sheet.merged_ranges.append(range_ref(*parse_range(ref or "")))
                except ValueError:
                    self.issues.append(Issue("parsed_sheets", name, ref, "warning",
                                             "bad_merged_range", f"merged range {ref!r} is not valid"))
                if len(sheet.merged_ranges) > self.limits.max_merged_ranges:
                    raise LimitExceededError(
                        f"sheet {name!r} has more than {self.limits.max_merged_ranges} merged ranges")
            elif tag == "dimension":
                sheet.info.declared_dimension = el.get("ref")
            elif tag == "col":
                try:
                    first = max(int(el.get("min") or 1), 1)
                    last = min(int(el.get("max") or first), MAX_COL)
                    width = float(el.get("width")) if el.get("width") else None
                except ValueError:
                    continue
                if el.get("hidden") in ("1", "true"):
                    hidden_columns.update(range(first, last + 1))
                if width is not None and math.isfinite(width):
                    sheet.column_widths.append((first, last, width))
            elif tag == "pane" and el.get("state") in ("frozen", "frozenSplit"):
                try:
                    sheet.frozen_pane = _frozen_cell(el)
                except (ValueError, OverflowError):
                    self.issues.append(Issue(
                        "parsed_sheets", name, None, "warning", "bad_pane",
                        "the frozen pane names no cell of the sheet (topLeftCell "
                        f"{el.get('topLeftCell')!r}, xSplit {el.get('xSplit')!r}, ySplit "
                        f"{el.get('ySplit')!r}); not used"))
        sheet.hidden_columns = sorted(hidden_columns)


def _frozen_cell(pane) -> str:
    """The top-left scrolling cell of a frozen ``<pane>`` (§18.3.1.66): ``topLeftCell``, else
    the cell after the ``ySplit`` rows and ``xSplit`` columns frozen.

    Raises:
        ValueError, OverflowError: it is no cell of a sheet.
    """
    ref = pane.get("topLeftCell") or cell_ref(int(float(pane.get("ySplit") or 0)) + 1,
                                              int(float(pane.get("xSplit") or 0)) + 1)
    return cell_ref(*parse_cell_ref(ref))


def _color(el) -> str | None:
    """Encode a colour element (``<color>``, ``<fgColor>``, §18.8.3) as written; see
    :class:`CellStyle` and :func:`~.parts.color_code` (shared with rich-text runs)."""
    return color_code(el)


def _int_attr(el, name: str) -> int | None:
    """An integer attribute, ``None`` when absent or not an integer."""
    value = el.get(name) if el is not None else None
    if value is None:
        return None
    try:
        return int(float(value))
    except (ValueError, OverflowError):
        return None


def _border_sides(border) -> dict[str, str | None]:
    """``border_left`` ... ``border_bottom`` of one ``<border>`` (§18.8.4): the side's ``style``
    (``none`` and absent read as ``None``); ``start``/``end`` (§18.8.39, used by Strict and by
    some writers) fill left/right when those carry no style."""
    styles: dict[str, str] = {}
    for side in border:
        if not isinstance(side.tag, str):
            continue
        style = side.get("style")
        if style not in (None, "", "none"):
            styles[_local(side.tag)] = style
    return {"border_left": styles.get("left") or styles.get("start"),
            "border_right": styles.get("right") or styles.get("end"),
            "border_top": styles.get("top"), "border_bottom": styles.get("bottom")}


def _child(el, name: str):
    for child in el:
        if _local(child.tag) == name:
            return child
    return None


def _flag(el, name: str) -> bool:
    c = _child(el, name)
    return c is not None and c.get("val", "1") not in ("0", "false", "none")


#: The lists of a stylesheet (§18.8.39) whose entries :attr:`Limits.max_styles` bounds.
_STYLE_LISTS = ("numFmts", "fonts", "fills", "borders", "cellStyleXfs", "cellXfs", "cellStyles",
                "dxfs")
#: Largest id a style attribute (``numFmtId``, ``fontId``...) may have: stored as int32.
_MAX_STYLE_ID = 2**31 - 1


def _style_id(el, name: str, problems: list[str], where: str) -> int:
    """A style id attribute (``numFmtId``, ``fontId``, ``fillId``, ``borderId``: an unsigned
    int, ECMA-376 Part 1 §18.8.45): 0 when absent; 0 and a problem when it is not one."""
    value = el.get(name)
    if value is None:
        return 0
    if value.strip().isdigit() and int(value) <= _MAX_STYLE_ID:
        return int(value)
    problems.append(f"{where}: {name} {value!r} is not a style id; 0 is used")
    return 0


def _font_size(font, problems: list[str], where: str) -> float | None:
    """The ``<sz val>`` of a font in points; ``None`` when absent, and with a problem when it
    is not a finite positive number."""
    size = _child(font, "sz")
    if size is None or not size.get("val"):
        return None
    try:
        points = float(size.get("val"))
    except ValueError:
        points = math.nan
    if math.isfinite(points) and points > 0:
        return points
    problems.append(f"{where}: font size {size.get('val')!r} is not a size; not used")
    return None


def _read_styles(reader: PackageReader, part: str | None, issues: list[Issue]
                 ) -> tuple[list[CellStyle], list[str] | None]:
    """Read ``cellXfs`` (§18.8.10) with their fonts (§18.8.23), fills (§18.8.21), borders
    (§18.8.5), alignment (§18.8.1) and number formats (§18.8.31) from the stylesheet
    (§18.8.39); returns the styles and the workbook's indexed palette (§18.8.27) or ``None``.
    An id or font size that is not one is read as the default, with a ``bad_style`` warning
    in ``issues`` (one per stylesheet, naming the first and how many).

    Raises:
        LimitExceededError: a list of the stylesheet has more than ``max_styles`` entries.
    """
    if not part or not reader.has(part):
        return [CellStyle()], None
    root = parse_part(reader, part)
    for section in root:
        if _local(section.tag) in _STYLE_LISTS and len(section) > reader.limits.max_styles:
            raise LimitExceededError(
                f"the stylesheet has more than {reader.limits.max_styles} "
                f"{_local(section.tag)} entries")
    problems: list[str] = []
    num_fmts = dict(BUILTIN_NUMBER_FORMATS)
    fonts: list[dict] = []
    fills: list[str | None] = []
    borders: list[dict[str, str | None]] = []
    xfs_el = None
    indexed = None
    for section in root:
        name = _local(section.tag)
        if name == "numFmts":
            for nf in section:
                try:
                    num_fmts[int(nf.get("numFmtId"))] = nf.get("formatCode") or "General"
                except (TypeError, ValueError):
                    continue
        elif name == "fonts":
            for k, font in enumerate(section):
                underline = _child(font, "u")
                fonts.append(dict(
                    bold=_flag(font, "b"), italic=_flag(font, "i"),
                    underline=underline is not None and underline.get("val", "single") != "none",
                    strike=_flag(font, "strike"),
                    font_size=_font_size(font, problems, f"font {k}"),
                    font_color=_color(_child(font, "color")),
                    font_name=(_child(font, "name").get("val")
                               if _child(font, "name") is not None else None),
                ))
        elif name == "fills":
            for fill in section:
                pattern = _child(fill, "patternFill")
                color = None
                if pattern is not None and pattern.get("patternType") not in (None, "none"):
                    color = _color(_child(pattern, "fgColor"))
                fills.append(color)
        elif name == "borders":
            for border in section:
                borders.append(_border_sides(border))
        elif name == "cellXfs":
            xfs_el = section
        elif name == "colors":
            ic = _child(section, "indexedColors")
            if ic is not None:
                indexed = [(c.get("rgb") or "FF000000")[-6:].upper() for c in ic]
    styles = []
    for k, xf in enumerate(xfs_el if xfs_el is not None else []):
        where = f"cellXfs entry {k}"
        nf_id = _style_id(xf, "numFmtId", problems, where)
        font_id = _style_id(xf, "fontId", problems, where)
        fill_id = _style_id(xf, "fillId", problems, where)
        border_id = _style_id(xf, "borderId", problems, where)
        font = fonts[font_id] if font_id < len(fonts) else {}
        align = _child(xf, "alignment")
        sides = borders[border_id] if border_id < len(borders) else {}
        styles.append(CellStyle(
            number_format_id=nf_id,
            number_format=num_fmts.get(nf_id, "General"),
            fill_color=fills[fill_id] if fill_id < len(fills) else None,
            has_border=any(sides.values()),
            wrap_text=align is not None and align.get("wrapText") in ("1", "true"),
            horizontal=align.get("horizontal") if align is not None else None,
            vertical=align.get("vertical") if align is not None else None,
            indent=_int_attr(align, "indent") or 0,
            text_rotation=_int_attr(align, "textRotation"),
            **sides,
            **font,
        ))
    if problems:
        issues.append(Issue("parsed_sheets", None, None, "warning", "bad_style",
                            f"{problems[0]}" + (f" (and {len(problems) - 1} more)"
                                                if len(problems) > 1 else "")))
    return styles or [CellStyle()], indexed


def _read_theme_colors(reader: PackageReader, part: str | None) -> list[str]:
    """The 12 colours of the theme's ``clrScheme`` in document order (DrawingML §20.1.6.2)."""
    if not part or not reader.has(part):
        return []
    root = parse_part(reader, part)
    colors = []
    for scheme in root.iter("{*}clrScheme"):
        for slot in scheme:
            value = None
            for c in slot:
                if _local(c.tag) == "srgbClr":
                    value = (c.get("val") or "000000").upper()
                elif _local(c.tag) == "sysClr":
                    value = (c.get("lastClr") or "000000").upper()
            colors.append(value or "000000")
        break
    return colors


_SHEET_KINDS = {
    "worksheet": "worksheet", "chartsheet": "chartsheet", "dialogsheet": "dialogsheet",
    "xlMacrosheet": "macrosheet", "xlIntlMacrosheet": "macrosheet",
}


def open_workbook(data: bytes, limits: Limits | None = None, *,
                  filename: str | None = None, passwords: Sequence[str] = ()) -> ParsedWorkbook:
    """Open a workbook from its bytes and read its workbook-level parts.

    OOXML (``xlsx``/``xlsm``) is read here; ``xls``, ``xlsb``, ``ods``, ``fods`` and
    ``csv``/``tsv`` are dispatched to :func:`~extraction_assets.core.legacy.open_legacy`
    (converted to xlsx by LibreOffice when it is installed, else read by value), which returns
    the same shapes. ``filename`` only names the sheet of a CSV (its stem; ``Sheet1`` without).
    A password-protected file is decrypted first with the first of ``passwords`` that opens it.

    Cells are not read here: iterate :meth:`ParsedWorkbook.iter_sheets`. Close the result with
    :meth:`ParsedWorkbook.close` when done.

    Raises:
        NotASpreadsheetError, EncryptedWorkbookError: see
            :func:`~extraction_assets.core.container.require_spreadsheet` (encrypted: no
            password configured, or none opens the file).
        CorruptWorkbookError: missing ``xl/workbook.xml``, malformed workbook-level XML.
        HostileContentError: a part declares a DTD.
        LimitExceededError: the package or the sheet list exceeds ``limits``.
    """
    limits = limits or Limits()
    data = decrypted(data, passwords)
    sniffed = require_spreadsheet(data)
    if sniffed.format in LEGACY_FORMATS:
        from extraction_assets.core.legacy import open_legacy

        return open_legacy(data, sniffed, limits, filename=filename)
    reader = PackageReader(data, limits)
    try:
        return _open(reader, sniffed.has_macros, limits)
    except BaseException:
        reader.close()
        raise


def decrypted(data: bytes, passwords: Sequence[str]) -> bytes:
    """``data`` itself, or its decryption when it is an encrypted workbook and ``passwords``
    are configured (see :func:`~extraction_assets.core.crypto.decrypt`)."""
    if not passwords:
        return data
    sniffed = sniff(data)
    if sniffed.format == "encrypted-ooxml" or (sniffed.format == "xls" and sniffed.encrypted):
        from extraction_assets.core.crypto import decrypt

        return decrypt(data, passwords)
    return data


def _open(reader: PackageReader, has_macros: bool, limits: Limits) -> ParsedWorkbook:
    if not reader.has("[Content_Types].xml"):
        raise CorruptWorkbookError("the package has no [Content_Types].xml part")
    workbook_part = None
    for rtype, target in read_rels(reader, "").values() if reader.has("_rels/.rels") else []:
        if rtype == _REL_OFFICE_DOCUMENT and not target.startswith("external:"):
            workbook_part = target
    if workbook_part is None or not reader.has(workbook_part):
        workbook_part = "xl/workbook.xml"
    if not reader.has(workbook_part):
        raise CorruptWorkbookError("the package has no workbook part (xl/workbook.xml)")
    root = parse_part(reader, workbook_part)
    rels = read_rels(reader, workbook_part)
    by_type: dict[str, str] = {}
    for rtype, target in rels.values():
        by_type.setdefault(rtype, target)
    issues: list[Issue] = []
    date1904 = False
    sheets: list[SheetInfo] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = _local(el.tag)
        if tag == "workbookPr":
            date1904 = el.get("date1904") in ("1", "true")
        elif tag == "sheet":
            if len(sheets) >= limits.max_sheets:
                raise LimitExceededError(f"workbook has more than {limits.max_sheets} sheets")
            rid = rel_attr(el)
            rtype, target = rels.get(rid or "", ("", None))
            kind = _SHEET_KINDS.get(rtype, "worksheet" if target else "unknown")
            name = el.get("name") or f"Sheet{len(sheets) + 1}"
            if target is None:
                issues.append(Issue("parsed_sheets", name, None, "warning", "missing_sheet_part",
                                    f"sheet {name!r} has no relationship to a sheet part"))
            sheets.append(SheetInfo(
                index=len(sheets) + 1, name=name, visibility=el.get("state") or "visible",
                kind=kind, part=target if target and not target.startswith("external:") else None,
            ))
    styles, indexed = _read_styles(reader, by_type.get("styles"), issues)
    objects = read_workbook_objects(reader, workbook_part, root, issues=issues)
    return ParsedWorkbook(
        reader=reader, sheets=sheets, styles=styles, objects=objects,
        shared_strings_part=by_type.get("sharedStrings"),
        date1904=date1904, theme_colors=_read_theme_colors(reader, by_type.get("theme")),
        indexed_colors=indexed, has_macros=has_macros or "vbaProject" in by_type,
        has_external_links="externalLink" in by_type, issues=issues, limits=limits,
    )
