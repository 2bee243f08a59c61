"""Blocks: what the segmentation finds on a sheet and the renderers read.

A block is a rectangle of a sheet of one :class:`BlockKind`; a ``table`` or ``key_value`` block
has :class:`Column` s. :data:`KIND_FACTS` holds what each kind is drawn and rendered as, one
row per kind (a new block kind starts here, then :mod:`.segment` finds it and :mod:`.render`
renders it). ListObjects and pivot tables are the tables a workbook declares itself."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

from extraction_assets.core.a1 import range_ref


class BlockKind(StrEnum):
    """The kinds of block (a closed set; each member is its own string, so ``Block.kind ==
    "table"`` and ``Block.kind is BlockKind.TABLE`` agree, and Arrow stores the string)."""

    TABLE = "table"
    KEY_VALUE = "key_value"
    TITLE = "title"
    TEXT = "text"
    CHART = "chart"
    IMAGE = "image"


@dataclass(frozen=True)
class KindFacts:
    """What a block kind is: ``colour`` of its rectangle in the segmentation pictures (RGB hex),
    ``has_records`` whether it gives records (rows of a table, the pairs of a form),
    ``has_cells`` whether its range holds cells of the sheet (a chart or picture floats over
    them), ``description`` in the words of the ``blocks`` view."""

    colour: str
    has_records: bool
    has_cells: bool
    description: str


#: One row per block kind.
KIND_FACTS: dict[BlockKind, KindFacts] = {
    BlockKind.TABLE: KindFacts("#1f6feb", True, True, "a table: header rows, columns, records"),
    BlockKind.KEY_VALUE: KindFacts("#8250df", True, True, "a form of label/value pairs, one record"),
    BlockKind.TITLE: KindFacts("#bf8700", False, True, "a title or heading line"),
    BlockKind.TEXT: KindFacts("#6e7781", False, True, "notes, unit lines and other text"),
    BlockKind.CHART: KindFacts("#cf222e", False, False, "a chart's title, series and values"),
    BlockKind.IMAGE: KindFacts("#1a7f37", False, False, "a picture's name and alt text"),
}
#: The kinds that give records (tables and forms).
RECORD_KINDS = frozenset(k for k, facts in KIND_FACTS.items() if facts.has_records)
#: The kinds drawn over the sheet rather than made of its cells (charts, pictures).
FLOATING_KINDS = frozenset(k for k, facts in KIND_FACTS.items() if not facts.has_cells)


@dataclass
class Column:
    """One column of a table block: 1-based sheet column, flattened header and its levels.

    In a ``key_value`` block a column is one label/value pair: ``header`` is the label (without
    its trailing colon), ``col`` and ``row`` the 1-based column and row of the value cell.

    A ``group`` column holds no cells of its own: each record's value is the label of the group
    label row above it (``Block.group_rows``), whose cells sit in sheet column ``col``."""

    col: int
    header: str
    header_levels: list[str]
    row: int | None = None
    group: bool = False


@dataclass(frozen=True)
class ListObject:
    """An Excel table (ListObject, ECMA-376 Part 1 §18.5.1.2 ``table``) of one sheet.

    ``ref`` is its A1 range, header and totals rows included; ``header_row_count`` is 0 or 1
    (``headerRowCount``), ``totals_row_count`` 0 or 1 (``totalsRowCount``); ``columns`` are the
    ``tableColumn`` names in order (Excel keeps them equal to the header cells' text)."""

    name: str
    ref: str
    header_row_count: int = 1
    totals_row_count: int = 0
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class PivotTable:
    """A pivot table (ECMA-376 Part 1 §18.10.1.73) as Excel drew it on one sheet.

    ``ref`` is the A1 range of its ``location`` (§18.10.1.49: the body, page fields
    excluded); ``first_data_row`` and ``first_data_col`` are 0-based offsets from its top-left
    cell to the first row and column of values (the rows above are its header rows, the
    columns left of it its row labels); ``row_items`` gives the type of each body row from
    ``first_data_row`` on (``data``, or §18.10.1.44's ``default``, ``sum``, ``grand``...:
    subtotal and grand total rows); ``first_header_row`` is the 0-based offset of the first
    row of column items (the rows above it show the column fields' captions, ``Column
    Labels``, ``Values``)."""

    name: str
    ref: str
    first_data_row: int = 1
    first_data_col: int = 1
    row_items: tuple[str, ...] = ()
    first_header_row: int = 0


@dataclass
class Block:
    """A detected block. Bounds are 1-based and inclusive; ``heading_path`` starts with the sheet
    name; ``reasons`` lists the signals that decided the block's kind and extent.

    ``level`` is the heading level (2..6) of a heading ``title`` block, else ``None``;
    ``skip_rows`` are the sheet rows of a table that repeat its header (not data);
    ``total_rows`` are the sheet rows of a table that are total rows (kept as rows, see
    :mod:`.totals`);
    ``row_group_cols`` are the sheet columns of a table whose labels sit only on the first row
    of each group (a renderer fills them down);
    ``group_rows`` are the sheet rows of a table that hold only a group label (a label row
    heading the rows under it; a record of role ``group``);
    ``group_levels`` gives the nesting level of each of ``group_rows`` (0 the outermost);
    ``row_label_cols`` are the sheet columns whose values name each row (its row header after
    its group labels, outermost first): a record's row path is its group labels, then these;
    ``unit_rows`` are the sheet rows of a table that state the unit of its columns for the rows
    below them (no record; see :func:`~.segment.rows.unit_rows_of`);
    ``unit`` is the unit line of a table (``(単位：千円)``, ``Unit: USD``), else ``None``;
    ``source_ref`` is where a document's block comes from in its source (Docling's item
    reference ``#/tables/0``, ``page 2 paragraph 3`` on a PDF's text layer), ``None`` on a
    worksheet, where the A1 range says it.
    """

    sheet_index: int
    sheet_name: str
    kind: BlockKind | str
    min_row: int
    min_col: int
    max_row: int
    max_col: int
    n_cells: int
    header_row_count: int = 0
    title: str | None = None
    heading_path: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    text: str = ""
    level: int | None = None
    skip_rows: list[int] = field(default_factory=list)
    total_rows: list[int] = field(default_factory=list)
    row_group_cols: list[int] = field(default_factory=list)
    group_rows: list[int] = field(default_factory=list)
    group_levels: list[int] = field(default_factory=list)
    row_label_cols: list[int] = field(default_factory=list)
    unit_rows: list[int] = field(default_factory=list)
    unit: str | None = None
    markup: dict[str, str] = field(default_factory=dict)
    source_ref: str | None = None

    @property
    def a1_range(self) -> str:
        """The block's A1 range."""
        return range_ref(self.min_row, self.min_col, self.max_row, self.max_col)

    @property
    def block_id(self) -> str:
        """Deterministic id: sha256 of sheet name, A1 range and kind (first 16 hex digits)."""
        key = f"{self.sheet_name}\x1f{self.a1_range}\x1f{self.kind}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]
