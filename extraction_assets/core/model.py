"""The reader's model: what every reader (OOXML, xls, xlsb, ods, csv) gives the stages.

A :class:`Workbook` is a list of :class:`SheetInfo` and, sheet by sheet, :class:`ParsedSheet` (its cells
as an Arrow table of :data:`CELL_SCHEMA`, its merged ranges, hidden rows and columns, panes);
styles are :class:`CellStyle` rows of :class:`WorkbookStyles`; comments, hyperlinks, tables,
charts and the like are :class:`SheetObject`; every problem found on the way is an
:class:`Issue`. Nothing here reads a file."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator

import pyarrow as pa

from extraction_assets.core.limits import Limits

#: Arrow schema of the cells read from a worksheet (rows and columns 1-based).
CELL_SCHEMA = pa.schema([
    ("row", pa.int32()), ("col", pa.int32()), ("data_type", pa.string()),
    ("value", pa.string()), ("formula", pa.string()), ("formula_kind", pa.string()),
    ("style_index", pa.int32()), ("string_index", pa.int32()),
])


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
    ``array``, ``dataTable`` or null) and ``style_index`` (into :attr:`Workbook.styles`).
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
class Issue:
    """A warning or error found while extracting (rows of the ``extraction_issues`` view)."""

    stage: str
    sheet_name: str | None
    ref: str | None
    severity: str
    code: str
    message: str


CellValue = Callable[[str, str], object]

#: The ``kind`` of a :class:`SheetObject` declaring one block of a document's sheet (see
#: :mod:`extraction_assets.core.documents.layout`).
DOCUMENT_ITEM = "document_item"


@dataclass
class SheetObject:
    """One non-cell object of a workbook.

    Attributes:
        kind: ``comment``, ``hyperlink``, ``data_validation``, ``conditional_format``,
            ``table``, ``chart``, ``picture``, ``defined_name`` or ``external_link``; in a
            document, ``document_item`` (:data:`DOCUMENT_ITEM`) and ``pdf_page``.
        sheet_name: the sheet holding the object; ``None`` for workbook-level objects (a
            sheet-scoped defined name carries its scope sheet).
        ref: A1 cell or range: the cell of a comment/hyperlink, the ``sqref`` of a data
            validation or conditional format (may be a space-separated list), a table's range,
            the top-left ``from`` cell of a drawing anchor (``None`` for an absolute anchor).
        name: table name, chart title (or frame name), picture name, defined name, link target.
        text: readable text: comment (+ replies), hyperlink display/target, chart rendering
            (title and category/value pairs), picture alt text, defined name formula...
        details: JSON-serialisable kind-specific data; keys are listed in the module docstring.
    """

    kind: str
    sheet_name: str | None
    ref: str | None
    name: str | None
    text: str | None
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The object as a plain dict (JSON-serialisable)."""
        return asdict(self)


@dataclass(kw_only=True)
class Workbook:
    """What every reader returns for one file, whatever its format: the workbook-level facts
    and a lazy stream of its sheets (:meth:`iter_sheets`). The OOXML reader
    (:class:`~extraction_assets.core.ooxml.workbook.OoxmlWorkbook`) and the by-value readers of
    the other formats (:class:`~extraction_assets.core.readers.common.ByValueWorkbook`) implement
    it; the stages see only this.

    Attributes:
        sheets: every sheet in workbook order (worksheets, chartsheets...).
        styles: the cell formats (``cellXfs``), index 0 the default.
        date1904: the 1904 date system (ECMA-376 Part 1 §18.2.28 ``date1904``).
        theme_colors: the theme's colour scheme as RGB hex, in Excel's index order.
        indexed_colors: the workbook's own indexed palette (§18.8.27), ``None`` for the default.
        has_macros, has_external_links: what the file holds (never run, never followed).
        issues: problems found while reading, appended to as the sheets are read.
        limits: the safety limits the reader enforces.
        objects: workbook-level sheet objects (defined names, external links).
        conversion: ``{"tool", "version", "seconds"}`` when the file was converted to xlsx first.
    """

    sheets: list[SheetInfo]
    styles: list[CellStyle]
    date1904: bool
    theme_colors: list[str]
    indexed_colors: list[str] | None
    has_macros: bool
    has_external_links: bool
    issues: list[Issue]
    limits: Limits
    objects: list[SheetObject] = field(default_factory=list)
    conversion: dict | None = None

    def iter_sheets(self) -> Iterator[ParsedSheet]:
        """Yield one :class:`ParsedSheet` per sheet, in workbook order (only the current
        sheet's cells are held in memory)."""
        raise NotImplementedError

    @property
    def rich_strings(self) -> list:
        """The shared strings with rich-text or phonetic runs (none unless the format has
        them, see :attr:`~extraction_assets.core.ooxml.workbook.OoxmlWorkbook.rich_strings`)."""
        return []

    @property
    def style_context(self) -> WorkbookStyles:
        """The workbook's styles, theme colours, indexed palette and date system."""
        return WorkbookStyles(self.styles, self.theme_colors, self.indexed_colors, self.date1904)

    def close(self) -> None:
        """Release what the reader holds (nothing by default)."""
