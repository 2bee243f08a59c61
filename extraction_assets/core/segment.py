"""Find the blocks of a sheet: tables with their header rows, titles, headings and text.

Rules (deterministic, no model), each checked against human-labelled real spreadsheets
(:mod:`tools.labelled`) as well as generated layouts:

* Non-empty cells (display text not blank) are grouped into connected regions with
  8-neighbourhood; regions whose bounding boxes overlap are joined, so a sparse table with holes
  stays one table and several tables separated by empty rows or columns come out separately.
* **Gap tolerance**: two regions separated by exactly one empty row (as the sheet is shown) are
  joined when the lower one lies within the upper one's columns and does not start with a new
  header row (a row of text cells above numeric/date values, or a bold or filled row above
  plain rows), numbers or dates, or cell borders, continue across the gap and the lower rows
  keep the column schema of the data above (:func:`_schema_conflict`); a repeat of the upper
  header is joined too. Two regions separated by exactly one empty column are joined when they
  start on the same row and end on the same row (or the narrow one, a single column, ends
  earlier and covers half the rows; rows below that hold a total may differ), share no header
  label and do not both have a header row of their own.
* **Tables across empty rows** (:func:`_join_tables`): a header band — text rows, possibly split
  into several regions by empty header cells, or styled rows (bold or filled) that may hold
  dates and column numbers — one or two empty rows above a region with no header of its own
  heads it (with the single-cell group labels between them); a header row glued under a total
  row is split off to head the rows below. Rows below a table that has a header, at most
  :data:`MAX_CONTINUATION_GAP` empty rows down, inside its columns, with no header of their own,
  no note or larger heading first, and the table's column schema (types, columns, width),
  continue it: one table under one header, its group labels rows of their own.
* **Side by side**: a header row whose labels repeat in groups (``E-rating | Call Credit |
  E-rating | Call Credit``) splits its region into one table per group (:func:`_header_period`).
* Leading rows of a region that hold a single cell (or one merged range) are peeled off as
  ``title`` blocks while at least two rows of the region hold several cells: a merged title row
  spanning the table or a merged section label above a header is a title, never a header row.
  Label/value lines (``Facility: | Conover``) above a header row are a ``key_value`` block.
* A region of at least two rows and two columns with a row of several cells is a ``table``;
  inside it, a single-cell row followed by a new header row starts another table (the single
  cell is its title), and so does the header repeated under a total row (a stack of tables).
  Trailing single-cell rows that read as notes (``※``, ``Note:``, ``*``, a long line in the
  first column or a merged long line) become a ``text`` block, and so does a last column with
  no header and text on few rows (notes beside the rows).
* Other regions are split into heading lines (``title`` blocks with a ``level``) and ``text``
  blocks; a lone cell is a ``title``. A lone non-heading cell just under a table that no table
  takes as its title, or any lone cell that reads as a note, is ``text``.
* A single text cell directly above a table (at most two rows up, overlapping its columns) is
  that table's title.
* **Headings** (see :mod:`.headings`): bold text cells outside tables get the heading level of
  their font size (H2..H6, the sheet name is H1). Every block's ``heading_path`` is the sheet
  name, then the nearest headings above it (outermost first, each level replacing deeper ones),
  then, for a table, its own title when not already in the path.
* **Excel tables** (ListObjects, ``xl/tables/tableN.xml``) and **pivot tables**
  (``xl/pivotTables/pivotTableN.xml``, ECMA-376 Part 1 §18.10) are authoritative: each is a
  table block with exactly its range and header rows, a ListObject's column names and totals
  row, a pivot table's subtotal and grand total rows, its outer row labels filled down and the
  columns written right beside its rows; the rules run on the cells outside them.
* **Forms**: a region whose rows are label/value pairs (labels ending with a colon, or bold
  labels over plain values, or unique labels whose values mix types or start with a number,
  which no header row would hold) is a ``key_value`` block, one pair per :class:`Column` (see
  :func:`_key_value_block`).
* A table's header is its first row, extended downwards while a merged range anchored in the
  header spans more rows or groups text cells over a sub-header row, by rows styled like the
  header (bold or filled) above plain data, by rows of text over the columns of numbers below
  when the header rows leave cells empty, by a row numbering the columns (``(1) (2) (3)``), or
  down to the sheet's frozen pane when that gives more rows (at most :data:`MAX_HEADER_ROWS` = 4
  rows). A first row holding numbers like the rows below, in their style, is data: the table
  then has no header row. Each column's header is the path of its non-empty, non-repeated
  header levels (line breaks and space runs collapsed) joined by ``" > "``; a column with no
  header is named by its letter; repeated labels get `` (2)``, `` (3)``... Columns covered by a
  horizontal merge in the leaf header row with no values of their own, and fully empty
  columns, are not columns of the table.
* Inside a table's data: total rows (by evidence, see :mod:`.totals`) stay rows of the table
  and are listed in ``total_rows``; rows repeating the header texts are listed in
  ``skip_rows``; rows holding only a group label in the first columns, styled unlike the rows
  under them, are listed in ``group_rows``; a leftmost column whose labels sit only on the
  first row of each group (or only on the group label rows) is recorded in ``row_group_cols``
  (to be filled down).

Every decision appends a human-readable reason to ``Block.reasons``.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from extraction_assets.core.a1 import cell_ref, column_letter, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.headings import HeadingMap, detect_heading_levels
from extraction_assets.core.normalize import StyledGrid, cell_keys, cells_in_range, find_cell, stripped_text
from extraction_assets.core.totals import TOTAL_HINT_RE, TOTAL_LABEL_RE, ColumnSums, aggregates_above

NOTE_RE = re.compile(
    r"^\s*(※|\*|＊|†|‡|注\s*[\d０-９]*\s*[:：.．)）]|注記|備考\s*[:：]|[(（]注[\d０-９]*[)）]|"
    r"出典\s*[:：]|出所\s*[:：]|notes?\s*\d*\s*[:：.]|source\s*[:：]|remarks?\s*[:：])",
    re.IGNORECASE,
)
UNIT_RE = re.compile(
    r"^\s*[(（\[［【]?\s*(単位\s*[:：]|units?\s*[:：]|in\s+(thousands|millions|billions|hundreds)\b|"
    r"(usd|jpy|eur|gbp|us\$|\$|¥|円)\s*(thousands?|millions?|billions?|k|m|bn)\b|"
    r"(千|百万|十億|万|億)?円\s*[)）\]］】]?\s*$)",
    re.IGNORECASE,
)
#: Types that show a row is data, not a header.
_DATA_TYPES = ("number", "date", "bool")
#: A first-column line at least this long (and much longer than the column's values) is a note.
_LONG_NOTE = 30


def reads_as_sentence(text: str) -> bool:
    """Whether ``text`` reads as a sentence: five or more words ending in ``.``, ``!`` or ``?``,
    or any text ending in a CJK full stop, exclamation or question mark (trailing blanks aside).
    A lone cell like this that no table takes as its title is ``text`` (titles are labels, not
    sentences). Linear in the text: only its end and its first five words are looked at."""
    tail = text.rstrip()
    return tail.endswith(("。", "！", "？")) or (
        tail.endswith((".", "!", "?")) and len(tail.split(maxsplit=4)) == 5)


#: Most regions the pairwise joins are tried on (sheets with more scattered cells keep 8-neighbourhood).
_MAX_REGIONS = 2000


#: A label of a form ends with a colon (``Name:``, ``氏名：``).
_LABEL_COLON = (":", "：")
#: Most header rows a table has (ECMA-376 does not bound them; real sheets stop at about four).
MAX_HEADER_ROWS = 4


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
    subtotal and grand total rows)."""

    name: str
    ref: str
    first_data_row: int = 1
    first_data_col: int = 1
    row_items: tuple[str, ...] = ()


#: Pivot row item types that are not totals (§18.10.1.44 ``ST_ItemType``).
_PIVOT_BODY_ITEMS = ("data", "blank")


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
    ``unit`` is the unit line of a table (``(単位：千円)``, ``Unit: USD``), else ``None``.
    """

    sheet_index: int
    sheet_name: str
    kind: str
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
    unit: str | None = None
    markup: dict[str, str] = field(default_factory=dict)

    @property
    def a1_range(self) -> str:
        """The block's A1 range."""
        return range_ref(self.min_row, self.min_col, self.max_row, self.max_col)

    @property
    def block_id(self) -> str:
        """Deterministic id: sha256 of sheet name, A1 range and kind (first 16 hex digits)."""
        key = f"{self.sheet_name}\x1f{self.a1_range}\x1f{self.kind}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]




class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
            return True
        return False


def _np(values) -> np.ndarray:
    """A numpy copy of an Arrow array or chunked array without nulls."""
    return values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else \
        values.to_numpy()


class _Ctx:
    """The sheet's occupied cells (display text not blank, row and column shown) as arrays
    indexed by *position* 0..n-1 in (row, col) order, and the lookups the rules share.

    A region, a row or any set of cells is an ascending numpy array of positions; ``row``,
    ``col`` (1-based) and ``key`` (:func:`~.normalize.cell_keys`) are int64 arrays; text,
    merges and styles are read per position. Work is one pass of Arrow kernels over the
    StyledGrid; nothing here is a Python object per cell.
    """

    def __init__(self, grid: StyledGrid, headings: HeadingMap | None):
        table = grid.table
        texts = stripped_text(table.column("display_text"))
        hidden = pc.fill_null(table.column("hidden"), False).combine_chunks()
        index = np.flatnonzero(_np(pc.and_(pc.not_equal(texts, ""), pc.invert(hidden))))
        take = pa.array(index, pa.int64())
        self.grid = grid
        self.headings = headings
        self.n = len(index)
        self.row = _np(table.column("row")).astype(np.int64)[index]
        self.col = _np(table.column("col")).astype(np.int64)[index]
        self.key = cell_keys(self.row, self.col)
        self.hidden_rows = list(grid.hidden_rows)
        self.hidden_columns = list(grid.hidden_columns)
        self.srow = self.row - np.searchsorted(np.asarray(self.hidden_rows, np.int64), self.row)
        self.scol = self.col - np.searchsorted(np.asarray(self.hidden_columns, np.int64), self.col)
        self.texts = texts.take(take)
        vtype = table.column("value_type").take(take)
        self.is_str = _np(pc.fill_null(pc.equal(vtype, "string"), False))
        self.typed = _np(pc.fill_null(pc.is_in(vtype, value_set=pa.array(_DATA_TYPES)), False))
        self.is_error = _np(pc.fill_null(pc.equal(vtype, "error"), False))
        self.is_date = _np(pc.fill_null(pc.equal(vtype, "date"), False))
        self.bold = _np(pc.fill_null(table.column("bold").take(take), False))
        self.size = _np(pc.fill_null(pc.cast(table.column("font_size").take(take), pa.float64()),
                                     np.nan))
        fills = pc.dictionary_encode(table.column("fill_rgb").take(take)).combine_chunks()
        self.fill_code = _np(pc.fill_null(fills.indices, -1)).astype(np.int32)
        self.fill_values = fills.dictionary.to_pylist()
        self.border = _np(pc.fill_null(table.column("has_border").take(take), False))
        #: the cell's number (``nan`` for none) and formula (Arrow, null for none)
        self.number = _np(pc.fill_null(table.column("number_value").take(take), np.nan))
        self.formula = table.column("formula").take(take).combine_chunks()
        self.has_formula = _np(pc.is_valid(self.formula))
        self._merged_from = table.column("merged_from").take(take).combine_chunks()
        self._merge_range = table.column("merge_range").take(take).combine_chunks()
        #: whether a cell carries its own value (cells covered by a merge do not)
        self.owns = _np(pc.is_null(self._merged_from))
        #: whether a cell is the top-left cell of a merged range
        self.anchors = self.owns & _np(pc.is_valid(self._merge_range))
        self._text: dict[int, str] = {}

    # -- lookups ----------------------------------------------------------------------------
    def find(self, r: int, c: int) -> int | None:
        """Position of the occupied cell (r, c), else ``None``."""
        return find_cell(self.key, r, c)

    def has(self, keys: np.ndarray) -> np.ndarray:
        """Whether each cell key of ``keys`` is occupied (bool array)."""
        if not self.n:
            return np.zeros(len(keys), dtype=bool)
        return self.key[np.minimum(np.searchsorted(self.key, keys), self.n - 1)] == keys

    def cells_in(self, r1: int, c1: int, r2: int, c2: int) -> np.ndarray:
        """Positions of the occupied cells of rows ``r1..r2`` and columns ``c1..c2``."""
        return cells_in_range(self.key, self.col, r1, c1, r2, c2)

    def rc(self, p) -> tuple[int, int]:
        return int(self.row[p]), int(self.col[p])

    def is_hidden_row(self, r: int) -> bool:
        """Whether sheet row ``r`` is hidden."""
        i = bisect_left(self.hidden_rows, r)
        return i < len(self.hidden_rows) and self.hidden_rows[i] == r

    def shown_row(self, r: int) -> int:
        return r - bisect_left(self.hidden_rows, r)

    def shown_col(self, c: int) -> int:
        return c - bisect_left(self.hidden_columns, c)

    def text(self, p) -> str:
        """The stripped display text of the cell at position ``p``."""
        p = int(p)
        text = self._text.get(p)
        if text is None:
            text = self._text[p] = self.texts[p].as_py()
        return text

    def texts_of(self, cells: np.ndarray) -> list[str]:
        return self.texts.take(pa.array(cells, pa.int64())).to_pylist()

    def logical(self, cells: np.ndarray) -> np.ndarray:
        """Cells that carry their own value (covered cells of a merge are not counted)."""
        return cells[self.owns[cells]]

    def is_string(self, p) -> bool:
        return bool(self.is_str[p])

    def fill(self, p) -> str | None:
        code = self.fill_code[p]
        return None if code < 0 else self.fill_values[code]

    def font_size(self, p) -> float | None:
        size = self.size[p]
        return None if np.isnan(size) else float(size)

    def merge_range(self, p) -> str | None:
        return self._merge_range[int(p)].as_py()

    def merged_from(self, p) -> str | None:
        return self._merged_from[int(p)].as_py()

    def level(self, p) -> int | None:
        """Heading level of cell ``p`` (bold text of a heading size), else ``None``."""
        if not self.is_str[p]:
            return None
        return self.headings.level(bool(self.bold[p]), self.font_size(p))

    def merge_width(self, p) -> int:
        rng = None if self.owns[p] and not self.anchors[p] else self.merge_range(p)
        if not rng:
            return 1
        _, c1, _, c2 = parse_range(rng)
        return c2 - c1 + 1

    def bbox(self, cells: np.ndarray) -> tuple[int, int, int, int]:
        rows, cols = self.row[cells], self.col[cells]
        return int(rows.min()), int(cols.min()), int(rows.max()), int(cols.max())


class _Rows:
    """A region's cells row by row: ``order`` is the ascending list of its rows, ``rows[r]``
    the positions of row ``r`` (by column) and ``n_logical`` the count of value-carrying cells
    of each row of ``order``. A row may be replaced by fewer cells (``rows[r] = cells``)."""

    def __init__(self, ctx: _Ctx, cells: np.ndarray):
        self.ctx = ctx
        self.cells = cells
        rows = ctx.row[cells]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(cells) else \
            np.zeros(0, np.int64)
        self.starts = starts
        self.ends = np.r_[starts[1:], len(cells)].astype(np.int64)
        self.order: list[int] = rows[starts].tolist()
        self.n_logical = (np.add.reduceat(ctx.owns[cells].astype(np.int64), starts)
                          if len(cells) else np.zeros(0, np.int64))
        self._replaced: dict[int, np.ndarray] = {}

    def index(self, r: int) -> int:
        i = bisect_left(self.order, r)
        if i == len(self.order) or self.order[i] != r:
            raise KeyError(r)
        return i

    def __contains__(self, r: int) -> bool:
        i = bisect_left(self.order, r)
        return i < len(self.order) and self.order[i] == r

    def __getitem__(self, r: int) -> np.ndarray:
        cells = self._replaced.get(r)
        if cells is None:
            i = self.index(r)
            cells = self.cells[self.starts[i]:self.ends[i]]
        return cells

    def __setitem__(self, r: int, cells: np.ndarray) -> None:
        self.index(r)
        self._replaced[r] = cells

    def get(self, r: int, default=None):
        return self[r] if r in self else default

    def cells_of(self, order: list[int]) -> np.ndarray:
        """Positions of the rows ``order`` (a run of consecutive rows of this index)."""
        if not order:
            return self.cells[:0]
        i, j = self.index(order[0]), self.index(order[-1])
        replaced = [r for r in self._replaced if order[0] <= r <= order[-1]]
        if not replaced:
            return self.cells[self.starts[i]:self.ends[j]]
        return np.concatenate([self[r] for r in order])

    def col_span(self, order: list[int]) -> tuple[int, int]:
        """Smallest and largest column of the rows ``order`` (see :meth:`cells_of`)."""
        cols = self.ctx.col[self.cells_of(order)]
        return int(cols.min()), int(cols.max())


class _Both:
    """The rows of two regions with no row in common, looked up in either."""

    def __init__(self, upper: _Rows, lower: _Rows):
        self.upper, self.lower = upper, lower

    def __getitem__(self, r: int) -> np.ndarray:
        return self.upper[r] if r in self.upper else self.lower[r]


@dataclass
class _Region:
    cells: np.ndarray
    reasons: list[str] = field(default_factory=list)


# -- regions ------------------------------------------------------------------------------------
def _regions(ctx: _Ctx, cells: np.ndarray) -> list[np.ndarray]:
    """Connected regions (8-neighbourhood) of the cells at positions ``cells`` (ascending),
    bounding boxes joined; each region ascending, regions in the order of their first cell.

    Adjacency is judged as the sheet is shown: hidden rows and columns are skipped, so a
    hidden row inside a table does not split it. See :func:`_component_labels`.
    """
    if not len(cells):
        return []
    labels = _component_labels(ctx.srow[cells], ctx.scol[cells])
    # number the regions in the order of their first cell
    _, first, label = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    region = rank[label]
    order = np.argsort(region, kind="stable")
    bounds = np.flatnonzero(np.diff(region[order])) + 1
    groups = np.split(cells[order], bounds)
    return [np.sort(g) for g in _join_overlapping(ctx, groups)]


#: Largest bounding box (cells) labelled on a dense bitmap (~5 bytes a cell while it is
#: labelled); a sparser sheet is a graph.
_DENSE_AREA = 1 << 23


def _component_labels(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Connected-component label (8-neighbourhood) of each cell of the ascending (row, col)
    arrays: SciPy's ``ndimage.label`` on a bitmap of their bounding box when it holds at most
    :data:`_DENSE_AREA` cells, else ``csgraph.connected_components`` over the neighbours found
    by binary search over the cell keys (memory proportional to the cells, not the box)."""
    r0, c0 = int(rows.min()), int(cols.min())
    height, width = int(rows.max()) - r0 + 1, int(cols.max()) - c0 + 1
    if height * width <= _DENSE_AREA:
        bitmap = np.zeros((height, width), dtype=bool)
        bitmap[rows - r0, cols - c0] = True
        labelled, _ = ndimage.label(bitmap, structure=np.ones((3, 3), dtype=bool))
        return labelled[rows - r0, cols - c0]
    n = len(rows)
    keys = cell_keys(rows, cols)
    sources, targets = [], []
    for dr, dc in ((-1, -1), (-1, 0), (-1, 1), (0, -1)):
        j = np.searchsorted(keys, keys + int(cell_keys(dr, dc))).astype(np.int32)
        np.minimum(j, n - 1, out=j)
        hit = keys[j] == keys + int(cell_keys(dr, dc))
        sources.append(np.flatnonzero(hit).astype(np.int32))
        targets.append(j[hit])
    sources, targets = np.concatenate(sources), np.concatenate(targets)
    graph = coo_matrix((np.ones(len(sources), np.int8), (sources, targets)), shape=(n, n))
    del sources, targets
    return connected_components(graph, directed=False)[1]


def _join_overlapping(ctx: _Ctx, regions: list[np.ndarray]) -> list[np.ndarray]:
    """Join regions whose bounding boxes overlap (sparse tables with holes); a joined region
    is its cells in joining order."""
    regions = list(regions)
    boxes = [ctx.bbox(g) for g in regions]
    changed = len(regions) <= _MAX_REGIONS
    while changed:
        changed = False
        for a in range(len(regions)):
            for b in range(a + 1, len(regions)):
                if _overlap(boxes[a], boxes[b]):
                    regions[a] = np.concatenate([regions[a], regions[b]])
                    boxes[a] = (min(boxes[a][0], boxes[b][0]), min(boxes[a][1], boxes[b][1]),
                                max(boxes[a][2], boxes[b][2]), max(boxes[a][3], boxes[b][3]))
                    del regions[b], boxes[b]
                    changed = True
                    break
            if changed:
                break
    return regions


def _overlap(a, b) -> bool:
    return not (a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])


@dataclass
class _Info:
    """What the join rules need to know about one region."""

    rows: _Rows
    order: list[int]
    box: tuple[int, int, int, int]
    shown: tuple[int, int, int, int]
    n_logical: int

    @property
    def width(self) -> int:
        return self.shown[3] - self.shown[1] + 1


def _info(ctx: _Ctx, cells: np.ndarray) -> _Info:
    rows = _Rows(ctx, cells)
    box = ctx.bbox(cells)
    shown = (ctx.shown_row(box[0]), ctx.shown_col(box[1]), ctx.shown_row(box[2]), ctx.shown_col(box[3]))
    return _Info(rows, rows.order, box, shown, int(rows.n_logical.sum()))


def _row_texts(ctx: _Ctx, cells: np.ndarray) -> dict[int, str]:
    return {int(ctx.col[p]): ctx.text(p) for p in ctx.logical(cells)}


def _header_like(ctx: _Ctx, rows, order: list[int], idx: int) -> str | None:
    """Why row ``order[idx]`` reads as a header row of the rows below it (``None`` if it does not):
    several text cells above numeric/date values in their columns, or a bold or filled row
    above plain rows. A styled row (every cell bold or filled) of text and year labels
    (``Calendar year | 2002 | 2003``) counts as text."""
    r = order[idx]
    cells = ctx.logical(rows[r])
    below = order[idx + 1:idx + 6]
    if len(cells) < 2 or not below or not ctx.is_str[cells].any():
        return None
    if not ctx.is_str[cells].all() and not (_styled(ctx, cells).all() and all(
            _year_label(ctx, p) for p in cells[~ctx.is_str[cells]].tolist())):
        return None
    under = ctx.logical(np.concatenate([rows[b] for b in below]))
    if (np.isin(ctx.col[under], ctx.col[rows[r]]) & ctx.typed[under]).any():
        return f"row {r} holds text cells above numeric/date values"
    nxt = ctx.logical(rows[below[0]])
    if ctx.bold[cells].all() and not ctx.bold[nxt].all():
        return f"row {r} is bold above plain rows"
    fills = set(ctx.fill_code[cells].tolist())
    if len(fills) == 1:
        (code,) = fills
        if (code >= 0 and ctx.fill_values[code] != "FFFFFF"
                and (ctx.fill_code[nxt] != code).any()):
            return f"row {r} is filled above unfilled rows"
    return None


def _join_vertical(ctx: _Ctx, upper: _Info, lower: _Info) -> str | None:
    """Why two regions one empty row apart are one table (``None``: they are not)."""
    if upper.n_logical < 2 or lower.n_logical < 2:
        return None
    if not (upper.shown[1] <= lower.shown[1] and lower.shown[3] <= upper.shown[3]):
        return None
    first = lower.rows[lower.order[0]]
    logical = ctx.logical(first)
    if len(logical) == 1 and (ctx.level(logical[0]) is not None or NOTE_RE.match(ctx.text(logical[0]))):
        return None
    upper_head = _row_texts(ctx, upper.rows[upper.order[0]])
    if len(upper_head) >= 2 and _row_texts(ctx, first) == upper_head:
        return f"rows {upper.box[0]}-{lower.box[2]}: header repeated after a single empty row"
    for idx in (0, 1):
        if idx < len(lower.order) and _header_like(ctx, lower.rows, lower.order, idx):
            return None
    # positive evidence that the rows continue the table above (the header rule reads at
    # most nine rows from the top of both)
    both = _Both(upper.rows, lower.rows)
    both_order = (upper.order[:9] + lower.order[:9])[:9]
    head = next((why for idx in range(min(4, len(upper.order)))
                 for why in [_header_like(ctx, both, both_order, idx)] if why), None)
    if head is None:
        if np.intersect1d(_typed_columns(ctx, upper.rows.cells),
                          _typed_columns(ctx, lower.rows.cells)).size:
            head = "numeric/date values continue in the same columns"
        elif _bordered(ctx, upper.rows[upper.order[-1]]) and _bordered(ctx, first):
            head = "cell borders continue on both sides of the empty row"
        else:
            return None  # plain text on both sides: no sign that they are one table
    data = ctx.logical(_data_cells(ctx, upper))
    if len(np.unique(ctx.row[data[ctx.typed[data]]])) >= 2:
        conflict = _schema_conflict(_profile(ctx, data), _profile(ctx, lower.rows.cells),
                                    set(ctx.col[upper.rows.cells].tolist()))
        if conflict:
            return None
    return (f"rows {upper.box[0]}-{lower.box[2]}: a single empty row above row {lower.box[0]} "
            f"inside the table (no new header row below it; {head})")


def _typed_columns(ctx: _Ctx, cells: np.ndarray) -> np.ndarray:
    """Columns holding a number, date or boolean among the value-carrying ``cells``."""
    logical = ctx.logical(cells)
    return np.unique(ctx.col[logical[ctx.typed[logical]]])


def _bordered(ctx: _Ctx, cells) -> bool:
    """Whether every cell of ``cells`` that carries a value has a border."""
    logical = ctx.logical(cells)
    return bool(len(logical)) and bool(ctx.border[logical].all())


def _all_strings(ctx: _Ctx, cells) -> bool:
    return bool(ctx.is_str[ctx.logical(cells)].all())


def _all_bold(ctx: _Ctx, cells) -> bool:
    logical = ctx.logical(cells)
    return bool(len(logical)) and bool(ctx.bold[logical].all())


def _is_unit(text: str) -> bool:
    return len(text) <= 40 and bool(UNIT_RE.match(text))


def _body_top(ctx: _Ctx, side: _Info) -> int:
    """First row of a region holding several cells (its first row when it is one column wide)."""
    if side.width > 1:
        wide = np.flatnonzero(side.rows.n_logical >= 2)
        if len(wide):
            return side.order[int(wide[0])]
    return side.order[0]


def _style(ctx: _Ctx, p) -> tuple:
    return bool(ctx.bold[p]), ctx.fill(p), ctx.font_size(p)


def _styled_like_row_below(ctx: _Ctx, p, side: _Info) -> bool:
    """Whether the lone cell ``p`` is merged across columns and styled exactly like the cells
    under it in the next row (a parent header, not a title)."""
    if ctx.merge_width(p) < 2:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range(p))
    i = bisect_right(side.order, int(ctx.row[p]))
    if i == len(side.order):
        return False
    below = [q for q in ctx.logical(side.rows[side.order[i]]) if c1 <= ctx.col[q] <= c2]
    return len(below) >= 2 and all(_style(ctx, q) == _style(ctx, p) for q in below)


def _starts_total(ctx: _Ctx, cells) -> bool:
    """Whether a row reads as a total: its first cell a total word, or a cell holding an
    aggregate formula over the rows above (see :mod:`.totals`)."""
    logical = ctx.logical(cells)
    if not len(logical):
        return False
    if is_total_row(ctx.text(logical[0])):
        return True
    with_formula = logical[ctx.has_formula[logical]]
    return any(aggregates_above(f, int(ctx.row[p])) for p, f in zip(
        with_formula.tolist(), ctx.formula.take(pa.array(with_formula, pa.int64())).to_pylist()))


def _head_row(ctx: _Ctx, side: _Info) -> int:
    """First header-ish row of a region: several cells, or a cell merged across columns (a
    parent header); its first row when it is one column wide."""
    if side.width > 1:
        rows = side.rows
        for i in np.flatnonzero((rows.n_logical >= 2) | (rows.n_logical == 1)).tolist():
            r = side.order[i]
            logical = ctx.logical(rows[r])
            if len(logical) >= 2 or (ctx.anchors[logical[0]] and ctx.merge_width(logical[0]) >= 2
                                     and not _is_unit(ctx.text(logical[0]))):
                return r
    return side.order[0]


def _join_horizontal(ctx: _Ctx, left: _Info, right: _Info, lone: list[tuple[int, int]]) -> str | None:
    """Why two regions one empty column apart are one table (``None``: they are not).

    Their bodies (from the first row of several cells) must start within three rows of each
    other, the rows above the later start being text or styled as a header (titles, unit
    lines, parent header rows),
    and end on the same row, except up to two trailing single-cell rows (notes); a single column
    may also end earlier (blank cells at its end). They share no label in their first common
    row. When both are at least two columns wide, their first common rows are alike (both bold
    or both plain) and the right part has no title of its own (a lone text line above it, none
    on the left in that row): otherwise they are side-by-side tables.
    ``lone`` lists the (row, col) of one-cell text regions of the sheet.
    """
    if left.n_logical < 2 or right.n_logical < 2:
        return None
    top = max(_body_top(ctx, left), _body_top(ctx, right))
    bottom = min(left.box[2], right.box[2])
    if bottom - top < 1:
        return None
    for side, other in ((left, right), (right, left)):
        extra = side.order[:bisect_left(side.order, top)]
        if len(extra) > 3 or not all(_all_strings(ctx, side.rows[r])
                                     or _styled(ctx, ctx.logical(side.rows[r])).all()
                                     for r in extra):
            return None
        extra = side.order[bisect_right(side.order, bottom):]
        if extra and other.width == 1 and side.width >= 2 and \
                len(other.order) * 2 < len(side.order):
            return None  # a short column beside a long table is no column of it
        if extra and other.width != 1 and (len(extra) > 2 or any(
                len(ctx.logical(side.rows[r])) != 1 and not _starts_total(ctx, side.rows[r])
                for r in extra)):
            return None
    left_head, right_head = _head_row(ctx, left), _head_row(ctx, right)
    if left_head == right_head:
        lt, rt = _row_texts(ctx, left.rows[left_head]), _row_texts(ctx, right.rows[right_head])
        if set(lt.values()) & set(rt.values()):
            return None  # the same labels on both sides: side-by-side tables
    if left.width >= 2 and right.width >= 2:
        if _all_bold(ctx, left.rows[left_head]) != _all_bold(ctx, right.rows[right_head]):
            return None

        def header_on_left(r: int) -> bool:
            logical = ctx.logical(left.rows.get(r, left.rows.cells[:0]))
            return len(logical) >= 2 or (len(logical) == 1 and (
                _styled_like_row_below(ctx, logical[0], left) or _is_unit(ctx.text(logical[0]))))

        own = []
        for r in right.order[:bisect_left(right.order, top)]:
            logical = ctx.logical(right.rows[r])
            if (len(logical) == 1 and not header_on_left(r) and not _is_unit(ctx.text(logical[0]))
                    and not _styled_like_row_below(ctx, logical[0], right)):
                own.append(ctx.rc(logical[0]))
        own += [(r, c) for r, c in lone if right.box[0] - 3 <= r < right.box[0]
                and right.box[1] <= c <= right.box[3] and not header_on_left(r)]
        if own:
            return None  # the right part has a title of its own: a side-by-side table
    gap = column_letter(left.box[3] + 1)
    return (f"single empty column {gap} inside the table (rows {top}-{bottom} on both sides, "
            "no title or repeated labels of its own on the right)")


def _join_gaps(ctx: _Ctx, regions: list[_Region]) -> list[_Region]:
    """Join regions one empty row or column apart when :func:`_join_vertical` /
    :func:`_join_horizontal` say they form one table; repeated until stable."""
    for _ in range(10):
        if len(regions) < 2 or len(regions) > _MAX_REGIONS:
            break
        infos = [_info(ctx, g.cells) for g in regions]
        by_top: dict[int, list[int]] = defaultdict(list)
        by_left: dict[int, list[int]] = defaultdict(list)
        for i, info in enumerate(infos):
            by_top[info.shown[0]].append(i)
            by_left[info.shown[1]].append(i)
        lone = [ctx.rc(g.cells[0]) for g, info in zip(regions, infos)
                if info.n_logical == 1 and len(info.order) == 1 and ctx.is_string(g.cells[0])
                and not _is_unit(ctx.text(g.cells[0]))]
        uf = _UnionFind(len(regions))
        reasons: dict[int, list[str]] = defaultdict(list)
        joined = False
        for a, A in enumerate(infos):
            for b in by_top.get(A.shown[2] + 2, ()):
                B = infos[b]
                if B.shown[1] <= A.shown[3] and A.shown[1] <= B.shown[3]:
                    why = _join_vertical(ctx, A, B)
                    if why and uf.union(a, b):
                        reasons[a].append(why)
                        joined = True
            for b in by_left.get(A.shown[3] + 2, ()):
                B = infos[b]
                if B.shown[0] <= A.shown[2] and A.shown[0] <= B.shown[2]:
                    why = _join_horizontal(ctx, A, B, lone)
                    if why and uf.union(a, b):
                        reasons[a].append(why)
                        joined = True
        if not joined:
            break
        groups: dict[int, tuple[list[np.ndarray], list[str]]] = {}
        for i, region in enumerate(regions):
            cells, why = groups.setdefault(uf.find(i), ([], []))
            cells.append(region.cells)
            why.extend(region.reasons + reasons.get(i, []))
        merged = [(np.concatenate(cells), why) for cells, why in groups.values()]
        joined_cells = _join_overlapping(ctx, [cells for cells, _ in merged])
        if len(joined_cells) == len(merged):
            regions = [_Region(np.sort(cells), why) for cells, why in merged]
        else:  # a joined box overlapped another region: reattach reasons by cell
            owner = np.empty(ctx.n, np.int64)
            for j, (cells, _) in enumerate(merged):
                owner[cells] = j
            regions = []
            for group in joined_cells:
                owners = owner[group]
                _, first = np.unique(owners, return_index=True)
                why = [w for j in owners[np.sort(first)].tolist() for w in merged[j][1]]
                regions.append(_Region(np.sort(group), why))
    return regions


# -- tables across gaps -----------------------------------------------------------------------
#: Most empty rows (as shown) between a table and rows below it that continue it.
MAX_CONTINUATION_GAP = 8
#: Most empty rows (as shown) between a table's header rows and its first data row.
MAX_HEADER_GAP = 2


@dataclass
class _Profile:
    """The column schema of a set of rows: per sheet column the number of value-carrying cells
    and of numbers/dates among them; the median and the largest number of cells in a row."""

    counts: dict[int, int]
    typed: dict[int, int]
    width: float
    widest: int

    def typed_share(self, c: int) -> float:
        return self.typed.get(c, 0) / self.counts[c]


def _profile(ctx: _Ctx, cells: np.ndarray) -> _Profile:
    logical = ctx.logical(cells)
    cols, n = np.unique(ctx.col[logical], return_counts=True)
    typed_cols, n_typed = np.unique(ctx.col[logical[ctx.typed[logical]]], return_counts=True)
    _, per_row = np.unique(ctx.row[logical], return_counts=True)
    return _Profile(dict(zip(cols.tolist(), n.tolist())),
                    dict(zip(typed_cols.tolist(), n_typed.tolist())),
                    float(np.median(per_row)) if len(per_row) else 0.0,
                    int(per_row.max()) if len(per_row) else 0)


def _schema_conflict(upper: _Profile, lower: _Profile, columns: set[int]) -> str | None:
    """Why rows with profile ``lower`` do not continue a table whose data rows have profile
    ``upper`` (``None``: they may): a value in a column outside the table's ``columns`` (the
    columns its header or data use), a column of numbers/dates above that holds text
    below or the converse, or rows less than half as wide."""
    for c in lower.counts:
        if c not in columns:
            return f"a value in column {column_letter(c)}, which the table above does not use"
        if upper.counts.get(c, 0) >= 2:
            up, low = upper.typed_share(c), lower.typed_share(c)
            if (up >= 0.8 and low <= 0.2) or (up <= 0.2 and low >= 0.8):
                return f"column {column_letter(c)} holds {'text' if up >= 0.8 else 'numbers'} " \
                       f"below {'numbers' if up >= 0.8 else 'text'}"
    if lower.widest < 2 or lower.widest * 2 <= upper.width:
        return "the rows are at most half as wide as the table's"
    return None


def _data_cells(ctx: _Ctx, info: _Info) -> np.ndarray:
    """A region's cells below its header: from its first row of several cells, the rows of
    text only (at most :data:`MAX_HEADER_ROWS`) are left out when a row below holds a number
    or date (all of its cells when none does)."""
    start = info.order.index(_body_top(ctx, info))
    end = start
    while end < min(len(info.order), start + MAX_HEADER_ROWS) and bool(
            ctx.is_str[ctx.logical(info.rows[info.order[end]])].all()):
        end += 1
    rest = info.rows.cells_of(info.order[end:]) if end < len(info.order) else info.rows.cells[:0]
    return rest if ctx.typed[ctx.logical(rest)].any() else info.rows.cells_of(info.order[start:])


def _has_own_header(ctx: _Ctx, info: _Info) -> bool:
    """Whether a region starts (after single-cell lines) with a header-like row."""
    top = info.order.index(_body_top(ctx, info))
    return top < len(info.order) - 1 and bool(_header_like(ctx, info.rows, info.order, top))


def _header_fragment(ctx: _Ctx, info: _Info) -> bool:
    """Whether a region could be (part of) a header band on its own: at most
    :data:`MAX_HEADER_ROWS` rows with two or more cells on its last row, all text (an error
    value aside), or all styled as a header (bold or filled) under a first row of two or more
    text cells (dates and column numbers may label columns too)."""
    if len(info.order) > MAX_HEADER_ROWS:
        return False
    logical = ctx.logical(info.rows.cells)
    first = ctx.logical(info.rows[info.order[0]])
    last = ctx.logical(info.rows[info.order[-1]])
    if len(last) < 2:
        return False
    if (ctx.is_str[logical] | ctx.is_error[logical]).all():
        return int(ctx.is_str[last].sum()) >= 2
    return bool(_styled(ctx, logical).all() and len(first) >= 2 and ctx.is_str[first].all())


def _overlaps_columns(ctx: _Ctx, part: _Info, table: _Info) -> bool:
    """Whether ``part`` starts inside the columns of ``table`` (a header may label columns
    to the right that hold no values)."""
    return table.shown[1] <= part.shown[1] <= table.shown[3]


def _header_tail(ctx: _Ctx, info: _Info) -> bool:
    """Whether a region of data rows ends with a header-like row of its own: two or more text
    cells, styled (bold, filled or bordered), under a row holding numbers or dates."""
    if len(info.order) < 3:
        return False
    last = ctx.logical(info.rows[info.order[-1]])
    above = ctx.logical(info.rows[info.order[-2]])
    return (len(last) >= 2 and bool(ctx.is_str[last].all()) and bool(ctx.typed[above].any())
            and bool((ctx.bold[last] | (ctx.fill_code[last] >= 0) | ctx.border[last]).all())
            and _band_styles(ctx, last) != _band_styles(ctx, above))


def _split_last_row(ctx: _Ctx, regions: list[_Region], i: int) -> list[_Region]:
    """``regions`` with the last row of region ``i`` made a region of its own."""
    cells = regions[i].cells
    last = ctx.row[cells] == ctx.row[cells].max()
    out = list(regions)
    out[i] = _Region(cells[~last], regions[i].reasons)
    out.insert(i + 1, _Region(cells[last], [f"row {int(ctx.row[cells].max())} reads as the header "
                                            "of the rows below, not as a row of the table above"]))
    return out


def _join_tables(ctx: _Ctx, regions: list[_Region]) -> list[_Region]:
    """Join what people read as one table across empty rows (see the module docstring): header
    rows glued under a table are split off (:func:`_split_header_tails`), header bands join
    the data below them (:func:`_join_header_bands`), then rows below a table continue it
    (:func:`_join_continuations`). Each step looks up neighbours by row, so the work grows
    with the number of regions, not its square."""
    if len(regions) < 2 or len(regions) > _MAX_REGIONS:
        return regions
    cache: dict[int, tuple[_Region, _Info, bool]] = {}

    def infos_of(regions: list[_Region]) -> tuple[list[_Info], list[bool]]:
        """Each region's :class:`_Info` and whether it has a header of its own, kept for the
        regions the steps leave unchanged."""
        for g in regions:
            if id(g) not in cache:
                info = _info(ctx, g.cells)
                cache[id(g)] = (g, info, _has_own_header(ctx, info))
        return [cache[id(g)][1] for g in regions], [cache[id(g)][2] for g in regions]

    regions = _split_header_tails(ctx, regions, infos_of)
    regions = _join_header_bands(ctx, regions, infos_of)
    return _join_continuations(ctx, regions, infos_of)


def _by_shown_row(infos: list[_Info], edge: int) -> dict[int, list[int]]:
    """Region indices by their first (``edge`` 0) or last (``edge`` 2) shown row."""
    out: dict[int, list[int]] = defaultdict(list)
    for i, info in enumerate(infos):
        out[info.shown[edge]].append(i)
    return out


def _near_above(infos: list[_Info], by_bottom: dict[int, list[int]], d: int) -> list[int]:
    """Regions ending at most :data:`MAX_HEADER_GAP` empty rows above region ``d`` (or right
    above it, not connected) and starting inside its columns."""
    top, (c1, c2) = infos[d].shown[0], (infos[d].shown[1], infos[d].shown[3])
    return [h for gap in range(1, MAX_HEADER_GAP + 2) for h in by_bottom.get(top - gap, ())
            if h != d and c1 <= infos[h].shown[1] <= c2]


def _split_header_tails(ctx: _Ctx, regions: list[_Region], infos_of) -> list[_Region]:
    """A header row glued under the rows above (a total row, then the next table's header) of
    a region that is no header band itself, over a region with no header of its own: split
    off, to head that region (:func:`_header_tail`). ``infos_of`` gives the regions'
    :class:`_Info` and own-header flags (see :func:`_join_tables`)."""
    infos, own = infos_of(regions)
    by_bottom = _by_shown_row(infos, 2)
    split: set[int] = set()
    for d, D in enumerate(infos):
        if len(D.order) < 2 or own[d]:
            continue
        near = _near_above(infos, by_bottom, d)
        if any(_header_fragment(ctx, infos[h]) for h in near):
            continue
        tails = [h for h in near if _header_tail(ctx, infos[h])]
        if tails:
            split.add(tails[0])
    for i in sorted(split, reverse=True):
        regions = _split_last_row(ctx, regions, i)
    return regions


def _join_header_bands(ctx: _Ctx, regions: list[_Region], infos_of) -> list[_Region]:
    """A header band and its data: header fragments (:func:`_header_fragment`, possibly
    several split by empty header cells) ending one or two empty rows above a region with no
    header of its own (or right above it, not connected), starting inside its columns, two or
    more of their last row's cells labelling its columns (over text-only data, styled unlike
    it), joined with it and with the single cells between them (labels between empty header
    cells, group labels over the data)."""
    infos, own = infos_of(regions)
    by_bottom, by_top = _by_shown_row(infos, 2), _by_shown_row(infos, 0)
    order = sorted(range(len(regions)), key=lambda i: (infos[i].shown[0], infos[i].shown[1]))
    taken: set[int] = set()
    groups: list[tuple[list[int], str]] = []
    for d in order:
        D = infos[d]
        if d in taken or len(D.order) < 2 or own[d]:
            continue
        heads = [h for h in _near_above(infos, by_bottom, d)
                 if h not in taken and _header_fragment(ctx, infos[h])]
        if not heads:
            continue
        below = ctx.logical(D.rows.cells)
        data_cols = set(ctx.col[below].tolist())
        labelled = {int(c) for h in heads for c in ctx.col[ctx.logical(
            infos[h].rows[infos[h].order[-1]])].tolist() if int(c) in data_cols}
        if len(labelled) < 2:
            continue
        # over rows of text only, a header must look like one (styled unlike the data)
        head_cells = np.concatenate([ctx.logical(infos[h].rows.cells) for h in heads])
        if not (ctx.typed[below] & np.isin(ctx.col[below], list(labelled))).any() and (
                not _styled(ctx, head_cells).all() and not ctx.border[head_cells].all()
                or _band_styles(ctx, head_cells) == _band_styles(ctx, below)):
            continue
        head_top = min(infos[h].shown[0] for h in heads)
        between = [g for r in range(head_top, D.shown[0]) for g in by_top.get(r, ())
                   if g != d and g not in heads and g not in taken and infos[g].n_logical == 1
                   and infos[g].shown[2] < D.shown[0]
                   and D.shown[1] - 1 <= infos[g].shown[1] <= D.shown[3]]
        members = [d, *heads, *between]
        taken.update(members)
        groups.append((members, f"header rows {min(infos[h].box[0] for h in heads)}-"
                                f"{max(infos[h].box[2] for h in heads)} over the data from row "
                                f"{D.box[0]} (empty rows between them)"))
    if not groups:
        return regions
    out: list[_Region] = []
    lead = {min(members): (members, why) for members, why in groups}
    for i, region in enumerate(regions):
        if i in lead:
            members, why = lead[i]
            keep = sorted(members)
            out.append(_Region(np.sort(np.concatenate([regions[m].cells for m in keep])),
                               [w for m in keep for w in regions[m].reasons] + [why]))
        elif i not in taken:
            out.append(region)
    return out


def _join_continuations(ctx: _Ctx, regions: list[_Region], infos_of) -> list[_Region]:
    """Rows below a table that has a header row continue it: the regions starting at most
    :data:`MAX_CONTINUATION_GAP` empty rows below it, inside its columns (with the regions
    starting within their rows' span), with nothing else in between, no header of their own,
    no note or larger heading first (a group label styled like the table's is none), and the
    table's column schema (:func:`_schema_conflict`). Repeated while rows continue it."""
    infos, own = infos_of(regions)
    by_top = _by_shown_row(infos, 0)
    order = sorted(range(len(regions)), key=lambda i: (infos[i].shown[0], infos[i].shown[1]))
    alive = [True] * len(regions)
    grown: dict[int, _Region] = {}
    for t in order:
        T = infos[t]
        if not alive[t] or len(T.order) < 2 or not own[t]:
            continue
        c1, c2 = T.shown[1], T.shown[3]
        inside = (lambda i: alive[i] and i != t and c1 <= infos[i].shown[1]
                  and infos[i].shown[3] <= c2)
        overlaps = (lambda i: alive[i] and i != t and infos[i].shown[1] <= c2
                    and infos[i].shown[3] >= c1)
        upper: _Profile | None = None
        columns = set(ctx.col[T.rows.cells].tolist())
        bottom = T.shown[2]
        while True:
            window = range(bottom + 2, bottom + MAX_CONTINUATION_GAP + 2)
            below = [i for r in window for i in by_top.get(r, ()) if inside(i)]
            if not below:
                break
            first = min(infos[i].shown[0] for i in below)
            band = [i for i in below if infos[i].shown[0] == first]
            span_end = max(infos[i].shown[2] for i in band)
            band += [i for r in range(first + 1, span_end + 2) for i in by_top.get(r, ())
                     if inside(i) and i not in band]
            if any(overlaps(i) and i not in band
                   for r in range(bottom + 1, first) for i in by_top.get(r, ())):
                break  # something in the way: a region between them reaching outside
            lower = _info(ctx, np.sort(np.concatenate([regions[i].cells for i in band])))
            if _has_own_header(ctx, lower) or any(own[i] for i in band):
                break
            lead = ctx.logical(lower.rows[lower.order[0]])
            if len(lead) == 1 and ((_larger_heading(ctx, lead[0])
                                    and not _styled_like_column(ctx, lead[0], T))
                                   or NOTE_RE.match(ctx.text(lead[0]))):
                break
            if upper is None:
                upper = _profile(ctx, _data_cells(ctx, T))
            if not upper.counts or _schema_conflict(upper, _profile(ctx, lower.rows.cells),
                                                    columns):
                break
            table = grown.get(t, regions[t])
            grown[t] = _Region(np.concatenate([table.cells, lower.rows.cells]), table.reasons + [
                f"rows {lower.box[0]}-{lower.box[2]} continue the table above after "
                f"{first - bottom - 1} empty rows (no header of their own, the same columns "
                "and types)"] + [w for i in band for w in regions[i].reasons])
            for i in band:
                alive[i] = False
            bottom = max(bottom, lower.shown[2])
    return [_Region(np.sort(grown[i].cells), grown[i].reasons) if i in grown else region
            for i, region in enumerate(regions) if alive[i]]


def _header_period(labels: list[str]) -> int | None:
    """The width of the repeating groups of a header row's labels (one per column, ``""`` for
    an empty cell), or ``None``: two or more groups of ``p >= 2`` columns, the first of
    ``p`` distinct labels, each starting with the first label and repeating at least half of
    the first group's labels in place (``E-rating | Call Credit | E-rating | Call Credit``:
    lists side by side; one label over every column is a parent, not groups)."""
    width = len(labels)
    for p in range(2, width // 2 + 1):
        if width % p or not labels[0] or len(set(labels[:p])) < p:
            continue
        groups = [labels[k:k + p] for k in range(0, width, p)]
        if all(g[0] == labels[0] for g in groups) and all(
                2 * sum(a == b for a, b in zip(g, groups[0])) >= p for g in groups[1:]):
            return p
    return None


def _split_repeated_headers(ctx: _Ctx, regions: list[_Region]) -> list[_Region]:
    """Regions whose first row of several cells is a header repeating in groups of columns
    (:func:`_header_period`), with no merged cell in it, split into one region per group (a
    cell left or right of the header goes with the nearest group): tables side by side with
    no empty column between them."""
    out: list[_Region] = []
    for region in regions:
        info = _info(ctx, region.cells)
        top = _body_top(ctx, info)
        head = info.rows[top]
        logical = ctx.logical(head)
        if len(logical) < 4 or len(info.order) < 3 or (~ctx.owns[head]).any() or \
                ctx.anchors[logical].any():
            out.append(region)
            continue
        c0, c1 = int(ctx.col[logical].min()), int(ctx.col[logical].max())
        texts = dict(zip(ctx.col[logical].tolist(), ctx.texts_of(logical)))
        p = _header_period([texts.get(c, "") for c in range(c0, c1 + 1)])
        if p is None:
            out.append(region)
            continue
        group = np.clip((ctx.col[region.cells] - c0) // p, 0, (c1 - c0 + 1) // p - 1)
        for g in np.unique(group).tolist():
            out.append(_Region(region.cells[group == g], region.reasons + [
                f"header row {top} repeats its labels every {p} columns: tables side by side "
                f"(columns {column_letter(c0 + g * p)}-{column_letter(c0 + g * p + p - 1)})"]))
    return out


def _styled_like_column(ctx: _Ctx, p, table: _Info) -> bool:
    """Whether cell ``p`` has the bold and font size of most of the table's cells in its
    column (a group label written like the table's row labels, not a section heading)."""
    column = ctx.logical(table.rows.cells)
    column = column[ctx.col[column] == ctx.col[p]]
    if not len(column):
        return False
    same = (ctx.bold[column] == ctx.bold[p]) & (
        np.nan_to_num(ctx.size[column], nan=-1.0) == (ctx.size[p] if ctx.size[p] == ctx.size[p]
                                                       else -1.0))
    return 2 * int(same.sum()) > len(column)


def _larger_heading(ctx: _Ctx, p) -> bool:
    """Whether cell ``p`` is a heading in a font larger than the body's (a bold label of the
    body size may head a group of a table's rows; a larger one starts a new section)."""
    size = ctx.font_size(p)
    return ctx.level(p) is not None and (size or ctx.headings.body_size) > ctx.headings.body_size


def segment_sheet(grid: StyledGrid, headings: HeadingMap | None = None,
                  list_objects: list[ListObject] = (),
                  pivot_tables: list[PivotTable] = ()) -> list[Block]:
    """Split one sheet's StyledGrid into blocks, ordered by top-left cell (row, then column).

    ``headings`` is the workbook's :class:`~.headings.HeadingMap` (body font size and heading
    level of each bold size); when ``None`` it is computed from this sheet alone.
    ``list_objects`` are the sheet's Excel tables: each is a ``table`` block with exactly its
    range, header row and totals row (authoritative; the rules run on the cells outside them).
    A ListObject whose range is not valid A1 or overlaps an earlier one is ignored.
    ``pivot_tables`` are the sheet's pivot tables: each is a ``table`` block with exactly its
    location, header rows, row label columns and subtotal / grand total rows (authoritative too,
    see :func:`_pivot_blocks`).

    Cells in hidden rows or columns belong to no block (they are flagged ``hidden`` in the
    StyledGrid); hidden sheets are segmented too and callers decide what to render.
    Work is column-wise over the cells (connected regions, header and data-row rules) plus
    Python per region and per row the rules look at, never per cell of a large table.
    """
    ctx = _Ctx(grid, headings)
    if not ctx.n and not list_objects and not pivot_tables:
        return []
    if headings is None:
        ctx.headings = detect_heading_levels([replace(grid, visibility="visible")])
    blocks, ignored = _list_object_blocks(ctx, list_objects)
    pivots = _pivot_blocks(ctx, pivot_tables, blocks)
    blocks += pivots
    free = np.arange(ctx.n)
    if blocks:
        owner = np.full(ctx.n, -1, np.int64)
        for j, block in enumerate(blocks):
            inside = ((ctx.row >= block.min_row) & (ctx.row <= block.max_row)
                      & (ctx.col >= block.min_col) & (ctx.col <= block.max_col) & (owner < 0))
            owner[inside] = j
            block.n_cells += int(inside.sum())
        free = np.flatnonzero(owner < 0)
    regions = [_Region(cells) for cells in _regions(ctx, free)]
    regions = _beside_pivots(ctx, pivots, regions)
    regions = _join_gaps(ctx, regions)
    regions = _split_repeated_headers(ctx, _join_tables(ctx, regions))
    for region in regions:
        blocks.extend(_classify(ctx, region.cells, region.reasons))
    blocks.sort(key=lambda b: (b.min_row, b.min_col))
    for (r1, c1, r2, c2), why in ignored:
        for block in blocks:
            if not (r2 < block.min_row or block.max_row < r1 or c2 < block.min_col
                    or block.max_col < c1):
                block.reasons.append(why)
    titles = _attach_titles(blocks)
    _heading_paths(blocks, titles)
    beside: list[Block] = []
    for block in blocks:
        if block.kind == "table" and not block.columns:
            _header(ctx, block)
            beside += _trim_columns(ctx, block)
            _data_rows(ctx, block)
    if beside:
        blocks = sorted(blocks + beside, key=lambda b: (b.min_row, b.min_col))
    return blocks


def _list_object_blocks(ctx: _Ctx, list_objects: list[ListObject]
                        ) -> tuple[list[Block], list[tuple[tuple[int, int, int, int], str]]]:
    """``table`` blocks of the sheet's ListObjects: range, header row, column names and totals
    row as Excel declares them (a ListObject with no header row takes its ``tableColumn``
    names; ``n_cells`` is left for the caller to count). Returns the blocks and the ListObjects
    left to the rules, as (bounds, reason): one whose range is stale, values sitting beside it
    on most of its rows or filling the row under it (Excel grows a table over such cells; a file
    written by other software may not)."""
    out: list[Block] = []
    ignored: list[tuple[tuple[int, int, int, int], str]] = []
    for lo in list_objects:
        try:
            r1, c1, r2, c2 = parse_range(lo.ref)
        except ValueError:
            continue
        if any(not (r2 < b.min_row or b.max_row < r1 or c2 < b.min_col or b.max_col < c1)
               for b in out):
            continue
        n_rows, width = r2 - r1 + 1, c2 - c1 + 1
        rows = np.arange(r1, r2 + 1, dtype=np.int64)
        beside = int((ctx.has(cell_keys(rows, c1 - 1)) | ctx.has(cell_keys(rows, c2 + 1))).sum())
        under = len(ctx.logical(ctx.cells_in(r2 + 1, c1, r2 + 1, c2)))
        if beside * 2 > n_rows or (width >= 2 and under * 2 >= width and under >= 2):
            ignored.append(((r1, c1, r2, c2), f"Excel table (ListObject) {lo.name} {lo.ref} "
                            "covers only part of the cells around it: its range is not used"))
            continue
        header_rows = min(max(lo.header_row_count, 0), r2 - r1 + 1)
        block = Block(ctx.grid.sheet_index, ctx.grid.sheet_name, "table", r1, c1, r2, c2, 0,
                      header_row_count=header_rows,
                      reasons=[f"Excel table (ListObject) {lo.name} {lo.ref}: its range, header "
                               "row and totals row are authoritative"])
        labels = _Labels()
        for c in range(c1, c2 + 1):
            name = lo.columns[c - c1] if c - c1 < len(lo.columns) else None
            p = ctx.find(r1, c) if header_rows else None
            text = header_text(ctx.text(p)) if p is not None else ""
            label = labels.unique(text or header_text(name or "") or f"Column {column_letter(c)}")
            block.columns.append(Column(c, label, [label]))
        _data_rows(ctx, block)
        if lo.totals_row_count > 0 and r2 - lo.totals_row_count >= r1 + header_rows:
            totals = range(r2 - lo.totals_row_count + 1, r2 + 1)
            block.total_rows = sorted(set(block.total_rows) | set(totals))
            block.reasons.append(f"totals row of the Excel table: {', '.join(map(str, totals))}")
        out.append(block)
    return out, ignored


def _pivot_blocks(ctx: _Ctx, pivots: list[PivotTable], taken: list[Block]) -> list[Block]:
    """``table`` blocks of the sheet's pivot tables, as Excel laid them out (§18.10.1.49
    ``location``): the location's range; its rows above ``first_data_row`` are the header rows
    (in the rows of column items above the last header row, a label stands for the columns to
    its right up to the next label, as Excel shows outer column items once); the row items
    that are no body rows (subtotals, grand total) are total rows; with two or more row label
    columns, the outer ones show each label once per group and are filled down. A pivot table
    whose range is not valid A1, holds no cell or overlaps a block already made is left to the
    rules."""
    out: list[Block] = []
    for pt in pivots:
        try:
            r1, c1, r2, c2 = parse_range(pt.ref)
        except ValueError:
            continue
        if not len(ctx.cells_in(r1, c1, r2, c2)) or any(
                not (r2 < b.min_row or b.max_row < r1 or c2 < b.min_col or b.max_col < c1)
                for b in taken + out):
            continue
        header_rows = min(max(pt.first_data_row, 1), r2 - r1)
        block = Block(ctx.grid.sheet_index, ctx.grid.sheet_name, "table", r1, c1, r2, c2, 0,
                      header_row_count=header_rows,
                      reasons=[f"pivot table {pt.name} {pt.ref}: its location, header rows and "
                               "total rows are authoritative"])
        leaf = r1 + header_rows - 1
        first_value = c1 + max(pt.first_data_col, 0)
        present = set(np.unique(ctx.col[ctx.cells_in(r1, c1, r2, c2)]).tolist())
        labels = _Labels()
        carried: dict[int, str] = {}
        levels_of: dict[int, list[str]] = {c: [] for c in range(c1, c2 + 1)}
        for r in range(r1, leaf + 1):
            carried.clear()
            for c in range(c1, c2 + 1):
                p = ctx.find(r, c)
                text = ctx.text(p) if p is not None else ""
                if not text and r < leaf and c > first_value and r >= r1 + 1:
                    text = carried.get(c - 1, "")
                carried[c] = text
                if text and (not levels_of[c] or levels_of[c][-1] != text):
                    levels_of[c].append(text)
        for c in range(c1, c2 + 1):
            if c not in present:
                continue
            levels = levels_of[c]
            label = labels.unique(" > ".join(levels) if levels else f"Column {column_letter(c)}")
            block.columns.append(Column(c, label, levels or [label]))
        body = r1 + pt.first_data_row
        block.total_rows = [body + i for i, t in enumerate(pt.row_items)
                            if t not in _PIVOT_BODY_ITEMS and body + i <= r2]
        if block.total_rows:
            block.reasons.append("subtotal and grand total rows of the pivot table: "
                                 + ", ".join(map(str, block.total_rows)))
        if pt.first_data_col >= 2:
            block.row_group_cols = list(range(c1, first_value - 1))
            block.reasons.append("outer row label columns filled down: " + ", ".join(
                column_letter(c) for c in block.row_group_cols))
        out.append(block)
    return out


def _beside_pivots(ctx: _Ctx, pivots: list[Block], regions: list[_Region]) -> list[_Region]:
    """Attach to each pivot table block the regions right beside it (starting in the column
    after its last one) when all of them lie between its header's last row and its last row:
    columns a user wrote next to the pivot's rows (a pivot table cannot hold them). A region
    there reaching above or below the pivot is a table of its own, and nothing is attached.
    The regions left are returned."""
    out = list(regions)
    for block in pivots:
        leaf = block.min_row + block.header_row_count - 1
        while True:
            touching = [g for g in out if ctx.bbox(g.cells)[1] == block.max_col + 1
                        and ctx.bbox(g.cells)[0] <= block.max_row
                        and ctx.bbox(g.cells)[2] >= block.min_row]
            beside = [g for g in touching if leaf <= ctx.bbox(g.cells)[0]
                      and ctx.bbox(g.cells)[2] <= block.max_row]
            if not beside or len(beside) < len(touching):
                break  # nothing beside, or a table of its own reaching above or below
            cells = np.concatenate([g.cells for g in beside])
            out = [g for g in out if not any(g is b for b in beside)]
            first = block.max_col + 1
            block.max_col = int(ctx.col[cells].max())
            block.n_cells += len(cells)
            labels = _Labels()
            for column in block.columns:
                labels.unique(column.header)
            for c in sorted(set(ctx.col[cells].tolist())):
                p = ctx.find(leaf, c)
                text = header_text(ctx.text(p)) if p is not None else ""
                label = labels.unique(text or f"Column {column_letter(c)}")
                block.columns.append(Column(c, label, [label]))
            block.reasons.append(f"columns {column_letter(first)}-{column_letter(block.max_col)} "
                                 "beside the pivot table's rows are columns of it")
    return out


def _classify(ctx: _Ctx, cells: np.ndarray, join_reasons: list[str]) -> list[Block]:
    rows = _Rows(ctx, cells)
    order = list(rows.order)
    out: list[Block] = []
    wide = rows.n_logical >= 2  # by index in rows.order; order stays a run of it
    if not wide.any():
        return _text_blocks(ctx, rows, order)

    def peelable() -> bool:
        base = rows.index(order[0])
        if len(order) >= 3 and int(wide[base:base + len(order)].sum()) >= 2:
            return True
        first = ctx.logical(rows[order[0]])
        return (len(order) >= 2 and len(first) == 1 and not _is_label(ctx.text(first[0]))
                and _key_value_block(ctx, rows, order[1:], []) is not None)

    # peel single-cell leading rows off a wider region (or off a form) as titles / headings
    while peelable():
        first = ctx.logical(rows[order[0]])
        units = [p for p in first.tolist() if _is_unit(ctx.text(p))]
        if units and len(first) - len(units) == 1:
            # a title line with a unit line on the same row
            refs = {cell_ref(*ctx.rc(u)) for u in units}
            line = rows[order[0]]
            in_unit = np.array([p in units or ctx.merged_from(p) in refs for p in line.tolist()])
            out.append(_make_block(ctx, line[in_unit], "text", ["unit line above the table"]))
            rows[order[0]] = line[~in_unit]
            first = ctx.logical(rows[order[0]])
        if len(first) != 1:
            break
        if _is_group_header(ctx, rows, order, first[0]):
            break
        level = ctx.level(first[0])
        text = ctx.text(first[0])
        if UNIT_RE.match(text) and len(text) <= 40:
            out.append(_make_block(ctx, rows[order[0]], "text", ["unit line above the table"]))
            order.pop(0)
            continue
        why = ("single cell above a wider row" if ctx.merge_width(first[0]) == 1
               else "merged single cell above a wider row (title, not a header row)")
        block = _make_block(ctx, rows[order[0]], "title", [why])
        if level is not None:
            block.level = level
            block.reasons.append(f"heading H{level}: bold {_size(ctx, first[0])} pt")
        out.append(block)
        order.pop(0)
    # label/value lines above a header row: a form of their own, then the table
    pairs = 0
    while pairs < len(order) - 2:
        line = ctx.logical(rows[order[pairs]])
        if len(line) != 2 or not ctx.is_string(line[0]) or not _is_label(ctx.text(line[0])):
            break
        pairs += 1
    if pairs and _header_like(ctx, rows, order, pairs) and \
            _key_value_block(ctx, rows, order, []) is None:
        form = _key_value_block(ctx, rows, order[:pairs], [])
        if form is not None:
            form.reasons.append(f"label/value lines above the header row {order[pairs]}")
            out.append(form)
            del order[:pairs]
    # a single-cell row followed by a new header row starts another table
    base = rows.index(order[0])
    for idx in (np.flatnonzero(rows.n_logical[base + 2:base + len(order) - 2] == 1) + 2).tolist():
        (p,) = ctx.logical(rows[order[idx]])
        text = ctx.text(p)
        if not is_total_row(text) and not _is_label(text):
            why = _header_like(ctx, rows, order, idx + 1)
            if why:
                out.extend(_classify(ctx, rows.cells_of(order[:idx]), join_reasons))
                below = _classify(ctx, rows.cells_of(order[idx:]), [])
                for block in below:
                    if block.kind == "table":
                        block.reasons.append(f"split from the table above: {why}")
                out.extend(below)
                return out
    # the header repeated after a total row starts the next table of a stack
    split = _repeated_header_after_total(ctx, rows, order)
    if split:
        idx, why = split
        out.extend(_classify(ctx, rows.cells_of(order[:idx]), join_reasons))
        below = _classify(ctx, rows.cells_of(order[idx:]), [])
        for block in below:
            if block.kind == "table":
                block.reasons.append(why)
        return out + below
    if len(order) < 2 or not wide[base:base + len(order)].any():
        form = _key_value_block(ctx, rows, order, join_reasons) if order else None
        return out + ([form] if form else _text_blocks(ctx, rows, order))
    # trailing notes
    notes: list[int] = []
    while len(order) > 2:
        why = _note_row(ctx, rows, order)
        if not why:
            break
        notes.insert(0, order.pop())
        note_why = why
    rest = rows.cells_of(order)
    r0, c0, r1, c1 = ctx.bbox(rest)
    form = _key_value_block(ctx, rows, order, join_reasons)
    if form:
        out.append(form)
    elif r1 > r0 and c1 > c0 and len(ctx.logical(rest)) >= 2:
        out.append(_make_block(ctx, rest, "table", [
            "connected region of non-empty cells", f"{r1 - r0 + 1} rows x {c1 - c0 + 1} columns",
            *join_reasons]))
    else:
        out.extend(_text_blocks(ctx, rows, order))
    if notes:
        out.append(_make_block(ctx, rows.cells_of(notes), "text",
                               [f"note under the table: {note_why}"]))
    return out


def _repeated_header_after_total(ctx: _Ctx, rows: _Rows, order: list[int]
                                 ) -> tuple[int, str] | None:
    """Where a region's first row of several cells (its header) comes again, at least 80 % of
    its labels (two or more) in the same columns, within two rows under a row holding an
    aggregate formula over the rows above (a total row): ``(index in order, reason)`` of the
    first such row, else ``None``. A header repeated without a total above it (a page break's
    repetition) stays inside the table."""
    first = next((i for i, r in enumerate(order) if len(ctx.logical(rows[r])) >= 2), None)
    if first is None:
        return None
    head = _row_texts(ctx, rows[order[first]])
    if len(head) < 2:
        return None
    need = max(2, -(-4 * len(head) // 5))
    # candidates, column-wise: rows holding one of the header's first labels in its column
    labels = sorted(head.items())[:len(head) - need + 1]
    cells = ctx.logical(rows.cells_of(order[first + 2:len(order) - 1])) if \
        first + 2 < len(order) - 1 else rows.cells[:0]
    hit = np.zeros(len(cells), dtype=bool)
    for c, text in labels:
        at = ctx.col[cells] == c
        hit[at] = _np(pc.fill_null(pc.equal(ctx.texts.take(pa.array(cells[at], pa.int64())),
                                            text), False))
    candidates = sorted(set(ctx.row[cells[hit]].tolist()))
    for idx in [bisect_left(order, r) for r in candidates]:
        texts = _row_texts(ctx, rows[order[idx]])
        if sum(texts.get(c) == t for c, t in head.items()) < need:
            continue
        for above in order[max(first + 1, idx - 2):idx]:
            cells = ctx.logical(rows[above])
            formulas = ctx.formula.take(pa.array(cells[ctx.has_formula[cells]], pa.int64()))
            if any(aggregates_above(f, above) for f in formulas.to_pylist()):
                return idx, (f"row {order[idx]} repeats the header of the table above under its "
                             f"total row {above}: the next table of a stack")
    return None


def _is_label(text: str) -> bool:
    return text.endswith(_LABEL_COLON) and len(text) > 1


def _key_value_block(ctx: _Ctx, rows: _Rows, order: list[int],
                     join_reasons: list[str]) -> Block | None:
    """A ``key_value`` block when the rows read as a form's label/value pairs, else ``None``.

    Each row holds, left to right, a text label and the value after it (or a label alone that
    ends with a colon: a blank field). The
    rows are a form when, among the labels:

    * at least half end with a colon (``Name:``, ``氏名：``) — several pairs per row allowed,
      every label then ending with a colon; or, with one pair per row, the labels in one column
      and the values in one column:
    * every label is bold and no value is; or
    * there are three or more pairs, the labels are unique, the first row is not a header row
      and the values below it mix types (text with numbers or dates): a table's column keeps
      one type.
    """
    if not order:
        return None
    if _not_a_form(ctx, rows, order):
        return None
    pairs: list[tuple[int, int | None]] = []
    single = True
    for r in order:
        cells = ctx.logical(rows[r]).tolist()
        if not cells or not ctx.is_string(cells[0]):
            return None
        if len(cells) <= 2:
            pairs.append((cells[0], cells[1] if len(cells) == 2 else None))
            continue
        single = False
        i = 0
        while i < len(cells):
            label = cells[i]
            if not (ctx.is_string(label) and _is_label(ctx.text(label))):
                return None
            value = cells[i + 1] if i + 1 < len(cells) and not (
                ctx.is_string(cells[i + 1]) and _is_label(ctx.text(cells[i + 1]))) else None
            pairs.append((label, value))
            i += 2 if value is not None else 1
    labels = [ctx.text(k) for k, _ in pairs]
    values = [v for _, v in pairs if v is not None]
    if not values or any(v is None and not _is_label(ctx.text(k)) for k, v in pairs):
        return None  # a lone line that is no blank field (a title, a note) is not a pair
    colons = sum(_is_label(t) for t in labels)
    why = None
    if colons * 2 >= len(labels) and (single or colons == len(labels)):
        why = f"{colons} of {len(labels)} labels end with a colon"
    elif (single and len(pairs) >= 2 and len({int(ctx.col[k]) for k, _ in pairs}) == 1
          and len({int(ctx.col[v]) for v in values}) == 1):
        if (all(ctx.bold[k] for k, _ in pairs) and not any(ctx.bold[v] for v in values)):
            why = "bold labels in one column, each followed by a plain value"
        elif (len(pairs) >= 3 and len(set(labels)) == len(labels)
              and not _header_like(ctx, rows, order, 0)):
            types = {bool(ctx.is_str[v]) for v in values[1:]}
            typed = any(ctx.typed[v] for v in values[1:])
            if True in types and typed:
                why = ("unique labels in one column; the values mix text with numbers or dates "
                       "(a table column keeps one type)")
        if (why is None and len(set(labels)) == len(labels) and pairs[0][1] is not None
                and ctx.typed[pairs[0][1]] and not _year_label(ctx, pairs[0][1])):
            why = ("unique labels in one column, the first followed by a number or date: no "
                   "header row, label/value pairs")
    if why is None:
        return None
    cells = rows.cells_of(order)
    block = _make_block(ctx, cells, "key_value", [f"form of {len(pairs)} label/value pairs: {why}",
                                                  *join_reasons])
    labels = _Labels()
    lines = []
    for label, value in pairs:
        text = ctx.text(label)
        name = text.rstrip(":：").strip() if _is_label(text) else text
        key = labels.unique(name)
        where = ctx.rc(value) if value is not None else (
            int(ctx.row[label]), int(ctx.col[label]) + ctx.merge_width(label))
        block.columns.append(Column(where[1], key, [name], row=where[0]))
        lines.append(f"{name}: {ctx.text(value) if value is not None else ''}".rstrip())
    block.text = "\n".join(lines)
    return block


def _year_label(ctx: _Ctx, p) -> bool:
    """Whether the number in cell ``p`` reads as a year label (a whole number 1900..2100
    shown without separators), as header rows often hold."""
    v = ctx.number[p]
    return bool(v == v and v == int(v) and 1900 <= v <= 2100 and ctx.text(p) == str(int(v)))


def _not_a_form(ctx: _Ctx, rows: _Rows, order: list[int]) -> bool:
    """Whether some row of ``order`` already rules out a form, checked column-wise: a row with
    no value-carrying cell, or whose first one is no text, or with three or more whose first
    is no label ending with a colon (what :func:`_key_value_block` would stop at)."""
    cells = ctx.logical(rows.cells_of(order))
    if not len(cells):
        return True
    row = ctx.row[cells]
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    if len(starts) < len(order):
        return True
    first = cells[starts]
    if not ctx.is_str[first].all():
        return True
    counts = np.diff(np.r_[starts, len(cells)])
    many = first[counts >= 3]
    return len(many) > 0 and not all(_is_label(t) for t in ctx.texts_of(many[:64]))


def _is_group_header(ctx: _Ctx, rows: _Rows, order: list[int], p) -> bool:
    """Whether the lone cell ``p`` of the first row is a parent header: merged across columns,
    starting right of the region's first column, over the next row (:func:`_groups_below`)."""
    if ctx.merge_width(p) < 2:
        return False
    min_col, max_col = rows.col_span(order)
    if ctx.col[p] <= min_col:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range(p))
    return _groups_below(ctx, order[1], c1, c2, (min_col, max_col))


def _size(ctx: _Ctx, p) -> str:
    size = ctx.font_size(p)
    size = ctx.headings.body_size if size is None else size
    return f"{size:g}"


def _note_row(ctx: _Ctx, rows: _Rows, order: list[int]) -> str | None:
    """Why the last row of ``order`` is a note under the table (``None``: it is a table row)."""
    last = order[-1]
    logical = ctx.logical(rows[last])
    if len(logical) != 1 or not ctx.is_string(logical[0]):
        return None
    p = logical[0]
    text = ctx.text(p)
    if is_total_row(text):
        return None
    if NOTE_RE.match(text):
        return f"row {last} starts with a note marker"
    min_col, max_col = rows.col_span(order)
    width = max_col - min_col + 1
    if ctx.merge_width(p) >= max(2, width // 2 + 1) and len(text) >= 15:
        return f"row {last} is one long merged text line"
    if ctx.col[p] == min_col and len(text) >= _LONG_NOTE:
        inner = ctx.logical(rows.cells_of(order[1:-1]))
        first_column = inner[ctx.col[inner] == min_col]
        longest = pc.max(pc.utf8_length(ctx.texts.take(pa.array(first_column, pa.int64())))).as_py()
        if len(text) > 2 * (longest or 0):
            return f"row {last} is a long text line in the first column, other columns empty"
    return None


def _is_heading_row(ctx: _Ctx, cells) -> bool:
    logical = ctx.logical(cells)
    return len(logical) == 1 and ctx.level(logical[0]) is not None


def _text_blocks(ctx: _Ctx, rows: _Rows, order: list[int]) -> list[Block]:
    """Blocks of a region that is not a table: heading lines and runs of text lines; a lone cell
    is a ``title``."""
    cells = rows.cells_of(order)
    logical_all = ctx.logical(cells)
    if len(logical_all) == 1:
        p = logical_all[0]
        block = _make_block(ctx, cells, "title", ["single cell"])
        level = ctx.level(p)
        if level is not None:
            block.level = level
            block.reasons.append(f"heading H{level}: bold {_size(ctx, p)} pt")
        return [block]
    # heading lines: rows of one value-carrying cell (a replaced row is checked as it is now)
    base = rows.index(order[0])
    candidates = set((np.flatnonzero(rows.n_logical[base:base + len(order)] == 1)).tolist())
    candidates |= {i for i, r in enumerate(order) if r in rows._replaced}
    headings = [i for i in sorted(candidates) if _is_heading_row(ctx, rows[order[i]])]
    out: list[Block] = []
    start = 0
    for i in headings + [len(order)]:
        if i > start:
            out.append(_make_block(ctx, rows.cells_of(order[start:i]), "text",
                                   ["region too small for a table"]))
        if i == len(order):
            break
        (p,) = ctx.logical(rows[order[i]])
        level = ctx.level(p)
        block = _make_block(ctx, rows[order[i]], "title",
                            [f"heading H{level}: bold {_size(ctx, p)} pt"])
        block.level = level
        out.append(block)
        start = i + 1
    return out


def _make_block(ctx: _Ctx, cells: np.ndarray, kind: str, reasons: list[str]) -> Block:
    """A block over ``cells`` (their bounding box: a merged cell counts with all it covers)."""
    r0, c0, r1, c1 = ctx.bbox(cells)
    grid = ctx.grid
    block = Block(grid.sheet_index, grid.sheet_name, kind, r0, c0, r1, c1, len(cells),
                  reasons=list(reasons))
    if kind != "table":
        logical = np.sort(ctx.logical(cells))
        lines: dict[int, list[str]] = {}
        for r, text in zip(ctx.row[logical].tolist(), ctx.texts_of(logical)):
            lines.setdefault(r, []).append(text)
        block.text = "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))
    return block


# -- titles and headings ------------------------------------------------------------------------
def _attach_titles(blocks: list[Block]) -> dict[int, Block]:
    """Make a title line just above a table or form (<= 2 rows up, columns overlapping) its
    title, and a unit line there its unit; make a lone cell that reads as a note or a unit line,
    or, without being a table's title, sits just under a table or reads as a sentence
    (:func:`reads_as_sentence`), ``text``. Returns {id(title block): its table}."""
    for block in blocks:
        if block.kind != "title" or block.level is not None:
            continue
        if NOTE_RE.match(block.text):
            block.kind = "text"
            block.reasons.append("note marker: text, not a title")
        elif UNIT_RE.match(block.text) and len(block.text) <= 40:
            block.kind = "text"
            block.reasons.append("unit line: text, not a title")
    tables = [b for b in blocks if b.kind in ("table", "key_value")]
    used: dict[int, Block] = {}

    def near_above(b: Block, table: Block) -> bool:
        return (b.max_row < table.min_row and table.min_row - b.max_row <= 2
                and not (b.max_col < table.min_col or b.min_col > table.max_col))

    for block in tables:
        candidates = [b for b in blocks if b.kind == "title" and near_above(b, block)]
        if candidates:
            title = max(candidates, key=lambda b: (b.max_row, -b.min_col))
            block.title = title.text
            used[id(title)] = block
            block.reasons.append(f"title from {title.a1_range}")
        units = [b for b in blocks if b.kind == "text" and near_above(b, block)
                 and UNIT_RE.match(b.text) and len(b.text) <= 40]
        if units:
            block.unit = units[-1].text
            block.reasons.append(f"unit line {units[-1].a1_range}: {block.unit}")
    for block in blocks:
        if block.kind != "title" or block.level is not None or id(block) in used:
            continue
        above = [t for t in tables if t.max_row < block.min_row and block.min_row - t.max_row <= 2
                 and not (block.max_col < t.min_col or block.min_col > t.max_col)]
        if above:
            block.kind = "text"
            block.reasons.append(f"note under the table {above[-1].a1_range}")
        elif reads_as_sentence(block.text):
            block.kind = "text"
            block.reasons.append("a sentence: text, not a title")
    return used


def _heading_paths(blocks: list[Block], titles: dict[int, Block]) -> None:
    """``heading_path`` of every block: sheet name, the nearest headings above (a heading
    replaces those of its level and deeper), then a table's own title if not in the path.

    A heading applies to blocks below it that reach its first column or further right; a
    heading that is a table's title applies only to blocks overlapping that table's columns
    (the title of a table on the left does not head a table on the right)."""
    headings = sorted((b for b in blocks if b.level is not None), key=lambda b: (b.min_row, b.min_col))
    scope: dict[int, tuple[int, float]] = {}
    for h in headings:
        table = titles.get(id(h))
        if table is None:
            scope[id(h)] = (h.min_col, float("inf"))
        else:
            scope[id(h)] = (min(h.min_col, table.min_col), max(h.max_col, table.max_col))
    for block in blocks:
        stack: list[Block] = []
        for h in headings:
            lo, hi = scope[id(h)]
            if h is block or h.max_row >= block.min_row or block.max_col < lo or block.min_col > hi:
                continue
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
        if block.level is not None:
            while stack and stack[-1].level >= block.level:
                stack.pop()
            stack.append(block)
        path = [block.sheet_name] + [h.text for h in stack]
        if block.kind in ("table", "key_value") and block.title and block.title not in path[1:]:
            path.append(block.title)
        block.heading_path = path
        if block.kind in ("table", "key_value") and len(path) > 1:
            block.reasons.append("heading path " + " / ".join(path))



# -- header and data rows -----------------------------------------------------------------------
def _header(ctx: _Ctx, block: Block) -> None:
    """Header rows and columns of a table block (see the module docstring)."""
    depth = _merged_header_depth(ctx, block)
    depth = _styled_header_depth(ctx, block, depth)
    depth = _text_header_depth(ctx, block, depth)
    frozen = _frozen_header_depth(ctx, block)
    if frozen > depth:
        depth = frozen
        block.reasons.append(f"frozen pane at {ctx.grid.frozen_pane}: rows {block.min_row}-"
                             f"{block.min_row + depth - 1} stay on screen above the data")
    if depth < MAX_HEADER_ROWS and _numbering_row(ctx, block, block.min_row + depth):
        block.reasons.append(f"row {block.min_row + depth} numbers the columns: a header row")
        depth += 1
    depth = min(depth, MAX_HEADER_ROWS, block.max_row - block.min_row)
    if depth <= 1 and _first_row_is_data(ctx, block):
        depth = 0
        block.reasons.append(f"row {block.min_row} holds numbers or dates like the rows below "
                             "and no header style: no header row, columns named by letter")
    else:
        depth = max(depth, 1)
        block.reasons.append(f"header rows {block.min_row}-{block.min_row + depth - 1}")
    block.header_row_count = depth
    header_rows = range(block.min_row, block.min_row + depth)
    leaf = block.min_row + depth - 1
    head = {ctx.rc(p): p for p in ctx.cells_in(block.min_row, block.min_col, leaf,
                                                block.max_col).tolist()}
    present = set(np.unique(ctx.col[ctx.cells_in(block.min_row, block.min_col, block.max_row,
                                                 block.max_col)]).tolist())
    labels = _Labels()
    below = ctx.logical(ctx.cells_in(leaf + 1, block.min_col, block.max_row, block.max_col))
    with_data = set(np.unique(ctx.col[below]).tolist())
    for c in range(block.min_col, block.max_col + 1):
        leaf_p = head.get((leaf, c))
        if leaf_p is not None and not ctx.owns[leaf_p] and c not in with_data:
            if parse_cell_ref(ctx.merged_from(leaf_p))[0] == leaf:
                block.reasons.append(f"column {column_letter(c)} dropped: under a merged header "
                                     "cell, no values of its own")
                continue  # covered by a horizontal merge in the leaf header row
        if c not in present:
            block.reasons.append(f"column {column_letter(c)} dropped: fully empty")
            continue
        levels: list[str] = []
        for r in header_rows:
            p = head.get((r, c))
            text = header_text(ctx.text(p)) if p is not None else ""
            if text and (not levels or levels[-1] != text):
                levels.append(text)
        label = labels.unique(" > ".join(levels) if levels else f"Column {column_letter(c)}")
        block.columns.append(Column(c, label, levels or [label]))


def _trim_columns(ctx: _Ctx, block: Block) -> list[Block]:
    """Take a last column off a table when it is no column of it, and return the ``text``
    block its cells become: a column with no header, right of a column with one, whose few
    cells (text, in at most half of the data rows, none merged) are notes beside the rows.
    Columns whose header has no values below it stay (laid out for values not entered yet)."""
    leaf = block.min_row + block.header_row_count - 1
    data = ctx.logical(ctx.cells_in(leaf + 1, block.min_col, block.max_row, block.max_col))
    if len(block.columns) < 3 or not len(data) or not block.header_row_count:
        return []
    notes, before = block.columns[-1], block.columns[-2]
    if (not notes.header.startswith("Column ") or notes.col != block.max_col
            or before.header == f"Column {column_letter(before.col)}"):
        return []
    cells = ctx.cells_in(block.min_row, notes.col, block.max_row, notes.col)
    logical = ctx.logical(cells)
    if not (ctx.is_str[logical].all() and 2 * len(logical) <= len(np.unique(ctx.row[data]))
            and ctx.owns[cells].all()):
        return []
    block.columns.pop()
    block.max_col = block.columns[-1].col
    block.reasons.append(f"column {column_letter(notes.col)} has no header and text on few "
                         "rows: notes beside the table, not a column of it")
    notes_block = _make_block(ctx, cells, "text", [f"notes beside the table {block.a1_range}"])
    notes_block.heading_path = list(block.heading_path)
    return [notes_block]


def header_text(text: str) -> str:
    """A header cell's text as a label: line breaks and runs of white space become one space
    (a header wrapped over two lines in its cell is one label)."""
    return " ".join(text.split())


_NUMBERING_RE = re.compile(r"^\s*[(（\[]?\s*(\d{1,3})\s*[)）\]]?\s*$")


def _numbering_row(ctx: _Ctx, block: Block, r: int) -> bool:
    """Whether row ``r`` of a table numbers its columns: three or more cells reading ``1 2 3``
    or ``(1) (2) (3)``, consecutive from left to right, under the header; numbers (not text)
    only when styled like a styled header row above (a first data row may read ``1 2 3``)."""
    if r >= block.max_row:
        return False
    cells = _row_cells(ctx, block, r)
    if len(cells) < 3:
        return False
    above = _row_cells(ctx, block, block.min_row, r - 1)
    if not ctx.is_str[cells].all() and not (
            len(above) and _styled(ctx, above).all()
            and _band_styles(ctx, cells) == _band_styles(ctx, above)):
        return False
    numbers = []
    for text in ctx.texts_of(cells):
        m = _NUMBERING_RE.match(text)
        if m is None:
            return False
        numbers.append(int(m.group(1)))
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _first_row_is_data(ctx: _Ctx, block: Block) -> bool:
    """Whether a table's first row is a data row, not a header: it holds a number or date
    (not a year label) in a column holding one in the next row too, and it is styled like
    that row (bold and fill)."""
    first = _row_cells(ctx, block, block.min_row)
    after = _next_row_cells(ctx, block, block.min_row + 1)
    if not len(first) or not len(after):
        return False
    typed = [p for p in first[ctx.typed[first]].tolist() if not _year_label(ctx, p)]
    below = set(ctx.col[after[ctx.typed[after]]].tolist())
    return (any(int(ctx.col[p]) in below for p in typed)
            and _band_styles(ctx, first) == _band_styles(ctx, after))


class _Labels:
    """Column labels of one block, kept unique: the second column labelled ``Q1`` is
    ``Q1 (2)``, the third ``Q1 (3)``...; a suffixed label that another column already carries
    takes the next number, so no two columns (and no two keys of a record) share a label."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.taken: set[str] = set()

    def unique(self, label: str) -> str:
        n = self.count[label] = self.count.get(label, 0) + 1
        out = label if n == 1 else f"{label} ({n})"
        while out in self.taken:
            n = self.count[label] = n + 1
            out = f"{label} ({n})"
        self.taken.add(out)
        return out


def _groups_below(ctx: _Ctx, below_row: int, c1: int, c2: int, span: tuple[int, int],
                  depth: int = MAX_HEADER_ROWS - 1) -> bool:
    """Whether a merged range over columns ``c1..c2`` is a parent header of ``below_row``, a
    row with no numbers or dates between columns ``span``: two or more text cells under it, or
    one merged text cell of exactly its columns that is itself the parent of the row below it
    (parents stacked over one another, at most ``depth`` rows down). A list whose rows are all
    merged across the same columns (``A2:B2``, ``A3:B3``...) is data, not a stack of parents:
    a merge groups columns only where some row below holds distinct cells under it."""
    below = ctx.logical(ctx.cells_in(below_row, c1, below_row, c2))
    if len(below) >= 2:
        return bool(ctx.is_str[below].all()) and not bool(
            ctx.typed[ctx.cells_in(below_row, span[0], below_row, span[1])].any())
    if len(below) != 1 or not ctx.is_string(below[0]) or depth <= 1:
        return False
    rng = ctx.merge_range(below[0])
    return (bool(rng) and parse_range(rng)[1::2] == (c1, c2) and not bool(
        ctx.typed[ctx.cells_in(below_row, span[0], below_row, span[1])].any())
        and _groups_below(ctx, below_row + 1, c1, c2, span, depth - 1))


def _merged_header_depth(ctx: _Ctx, block: Block) -> int:
    """Header rows implied by merges: a merged range anchored in the header that spans more
    rows (when the rows it spans hold no numbers or dates beside it: a row-group label merged
    down the data is no header), or groups columns over the row below (a parent header, see
    :func:`_groups_below`)."""
    depth = 1
    r = block.min_row
    while r < block.min_row + depth and r - block.min_row < MAX_HEADER_ROWS:
        row = ctx.cells_in(r, block.min_col, r, block.max_col)
        for p in row[ctx.anchors[row]].tolist():
            rng = ctx.merge_range(p)
            r1, c1, r2, c2 = parse_range(rng)
            span_rows = min(r2, block.max_row) - r1 + 1
            if span_rows > 1:
                spanned = ctx.logical(ctx.cells_in(r1, block.min_col, r1 + span_rows - 1,
                                                   block.max_col))
                if ctx.typed[spanned].any():
                    continue
                if r - block.min_row + span_rows > depth:
                    depth = r - block.min_row + span_rows
                    block.reasons.append(f"header merge {rng} spans {span_rows} rows")
            elif c2 > c1 and r1 + 1 <= block.max_row and _groups_below(
                    ctx, r1 + 1, c1, c2, (block.min_col, block.max_col)):
                if r - block.min_row + 2 > depth:
                    depth = r - block.min_row + 2
                    block.reasons.append(f"header merge {rng} groups the columns below it")
        r += 1
    return depth


def _row_cells(ctx: _Ctx, block: Block, r1: int, r2: int | None = None) -> np.ndarray:
    """Value-carrying cells of rows ``r1..r2`` (default just ``r1``) inside the block's columns."""
    return ctx.logical(ctx.cells_in(r1, block.min_col, r1 if r2 is None else r2, block.max_col))


def _band_styles(ctx: _Ctx, cells: np.ndarray) -> set[tuple[bool, str | None]]:
    """The (bold, fill) pairs of ``cells``: what makes a row look like part of a header band."""
    return {(bool(b), None if f < 0 else ctx.fill_values[f])
            for b, f in set(zip(ctx.bold[cells].tolist(), ctx.fill_code[cells].tolist()))}


def _styled(ctx: _Ctx, cells: np.ndarray) -> np.ndarray:
    """Whether each cell is styled as a header may be: bold, or filled with a colour other
    than white."""
    white = ctx.fill_values.index("FFFFFF") if "FFFFFF" in ctx.fill_values else -2
    return ctx.bold[cells] | ((ctx.fill_code[cells] >= 0) & (ctx.fill_code[cells] != white))


def _styled_header_depth(ctx: _Ctx, block: Block, depth: int) -> int:
    """``depth`` extended by rows styled like header rows (every cell bold or filled) under
    styled header rows, when the first row below them holding numbers or dates shows them
    plain (a header band without merges). A band row may hold dates, year labels or column
    numbers (``1 2 3``) besides text, as report headers do."""
    first = _row_cells(ctx, block, block.min_row, block.min_row + depth - 1)
    if not len(first) or not _styled(ctx, first).all():
        return depth
    extra = 0
    while depth + extra < MAX_HEADER_ROWS:
        r = block.min_row + depth + extra
        if ctx.is_hidden_row(r) and r < block.max_row:
            extra += 1
            continue
        cells = _row_cells(ctx, block, r)
        if len(cells) < 2 or not _styled(ctx, cells).all():
            break
        numbers = cells[ctx.typed[cells] & ~ctx.is_date[cells]]
        if len(numbers) and not _numbering_row(ctx, block, r) and not all(
                _year_label(ctx, p) for p in numbers.tolist()):
            break
        extra += 1
    if not extra:
        return depth
    after = _row_cells(ctx, block, block.min_row + depth + extra, block.max_row)
    after = after[ctx.typed[after]]
    if not len(after):
        return depth
    after = after[ctx.row[after] == ctx.row[after[0]]]
    if _styled(ctx, after).all():
        return depth
    block.reasons.append(f"rows {block.min_row + depth}-{block.min_row + depth + extra - 1} "
                         "are styled like the header rows above plain data")
    return depth + extra


def _next_row_cells(ctx: _Ctx, block: Block, r: int) -> np.ndarray:
    """Value-carrying cells (inside the block's columns) of the first row from ``r`` down to
    the block's last row that holds any (empty when there is none)."""
    cells = _row_cells(ctx, block, r, block.max_row)
    return cells[ctx.row[cells] == ctx.row[cells[0]]] if len(cells) else cells


def _text_header_depth(ctx: _Ctx, block: Block, depth: int) -> int:
    """``depth`` extended by rows of text only under the header rows, when the first row
    holding a number or date below them has one in a column each such row labels: a header of
    several plain rows (``Maximum | Annual`` over ``(lb/hr) | (tpy)``, a unit row under the
    labels), up to :data:`MAX_HEADER_ROWS` rows. A row of text whose columns hold text below
    (a group label over row labels) is data, and so are rows of text when they and the header
    row above fill every column the data uses (a header of several rows leaves cells empty)."""
    extra = 0
    while depth + extra < MAX_HEADER_ROWS:
        cells = _row_cells(ctx, block, block.min_row + depth + extra)
        if not len(cells) or not ctx.is_str[cells].all() or _is_label(ctx.text(cells[0])):
            break
        extra += 1
    if not extra:
        return depth
    after = _next_row_cells(ctx, block, block.min_row + depth + extra)
    typed = set(ctx.col[after[ctx.typed[after]]].tolist())
    if not typed:
        return depth
    for r in range(block.min_row + depth, block.min_row + depth + extra):
        cols = set(ctx.col[_row_cells(ctx, block, r)].tolist())
        if not cols & typed:
            extra = r - block.min_row - depth
            break
    if not extra:
        return depth
    # rows of a multi-row header leave cells empty (a parent over several columns, a
    # sub-label only where needed); rows of text filling every column are data
    columns = set(ctx.col[_row_cells(ctx, block, block.min_row + depth + extra,
                                     block.max_row)].tolist())
    rows = range(block.min_row, block.min_row + depth + extra)
    if all(columns <= set(ctx.col[_row_cells(ctx, block, r)].tolist()) for r in rows):
        return depth
    block.reasons.append(f"rows {block.min_row + depth}-{block.min_row + depth + extra - 1} "
                         "hold text over the columns of numbers or dates below: header rows")
    return depth + extra


def _frozen_header_depth(ctx: _Ctx, block: Block) -> int:
    """Header rows implied by the sheet's frozen pane (0: no hint): the frozen rows' last one
    inside the table's first :data:`MAX_HEADER_ROWS` rows, every table cell down to it text of
    one style (bold and fill alike; a neighbour table whose data rows the pane cuts is not
    misread)."""
    pane = ctx.grid.frozen_pane
    if not pane:
        return 0
    try:
        last_frozen = parse_cell_ref(pane)[0] - 1
    except ValueError:
        return 0
    depth = last_frozen - block.min_row + 1
    if not 1 <= depth <= MAX_HEADER_ROWS or last_frozen >= block.max_row:
        return 0
    cells = _row_cells(ctx, block, block.min_row, last_frozen)
    if not ctx.is_str[cells].all() or len(_band_styles(ctx, cells)) > 1:
        return 0
    return depth


def _data_rows(ctx: _Ctx, block: Block) -> None:
    """Summary rows, repeated header rows and row-group labels of a table's data rows, judged
    column-wise over the rows below the header."""
    cols = [c.col for c in block.columns]
    if not cols:
        return
    leaf = block.min_row + block.header_row_count - 1
    header: dict[int, str] = {}
    if block.header_row_count:
        for c in cols:
            p = ctx.find(leaf, c)
            if p is not None:
                header[c] = ctx.text(p)
    cells = ctx.cells_in(leaf + 1, block.min_col, block.max_row, block.max_col)
    cells = cells[np.isin(ctx.col[cells], cols)]
    if not len(cells):
        return
    col = ctx.col[cells]
    row = ctx.row[cells]
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    numbers = row[starts]
    per_row = np.diff(np.r_[starts, len(cells)])
    repeat = np.zeros(len(starts), dtype=bool)
    if len(header) >= 2:
        header_cols = np.array(sorted(header), np.int64)
        j = np.minimum(np.searchsorted(header_cols, col), len(header_cols) - 1)
        same = header_cols[j] == col
        where = np.flatnonzero(same)
        header_texts = pa.array([header[c] for c in header_cols.tolist()], pa.string())
        same[where] = _np(pc.equal(ctx.texts.take(pa.array(cells[where], pa.int64())),
                                   header_texts.take(pa.array(j[where], pa.int64()))))
        repeat = (per_row == len(header)) & (np.add.reduceat(same, starts) == per_row)
    total = _total_rows(ctx, block, cells, starts, ~repeat)
    data = ~repeat & ~total
    block.skip_rows.extend(numbers[repeat].tolist())
    block.total_rows = sorted(set(block.total_rows) | set(numbers[total].tolist()))
    if block.skip_rows:
        block.reasons.append("rows repeating the header (not data): "
                             + ", ".join(map(str, block.skip_rows)))
    group = _group_rows(ctx, block, cells, starts, data)
    if group.any():
        block.group_rows = numbers[group].tolist()
        data &= ~group
        group_cols = sorted(set(ctx.col[cells[starts[group]]].tolist()))
        others = np.isin(np.arange(len(starts)), np.flatnonzero(data))
        own = np.isin(col, group_cols) & others[np.repeat(np.arange(len(starts)),
                                                          np.diff(np.r_[starts, len(cells)]))]
        free = [c for c in group_cols if not (own & (col == c)).any()]
        block.row_group_cols = free
        shared = [c for c in group_cols if c not in free]
        if shared:  # the labels sit in a column of row labels: a column of their own
            labels = _Labels()
            for column in block.columns:
                labels.unique(column.header)
            name = labels.unique("Group")
            block.columns.insert(0, Column(shared[0], name, [name], group=True))
            block.reasons.append(f"group labels of column {column_letter(shared[0])} carried "
                                 f"down as a column of their own, {name!r}")
        block.reasons.append("group label rows (a label heading the rows under it): "
                             + ", ".join(map(str, block.group_rows[:20]))
                             + (f" and {len(block.group_rows) - 20} more"
                                if len(block.group_rows) > 20 else "")
                             + ("; their labels filled down in column "
                                + ", ".join(column_letter(c) for c in free) if free else ""))
        return
    # row-group labels: leftmost column labelled only on the first row of each group
    c0 = cols[0]
    at_c0 = col == c0
    labelled = np.add.reduceat(at_c0, starts) > 0
    if len(cols) < 2 or int(data.sum()) < 2 or not labelled[np.argmax(data)]:
        return
    label_is_text = np.add.reduceat(at_c0 & ctx.is_str[cells], starts) > 0
    blank = data & ~labelled
    if not blank.any() or not label_is_text[data & labelled].all():
        return
    if (np.add.reduceat(~at_c0, starts) > 0)[data].all():
        block.row_group_cols = [c0]
        block.reasons.append(
            f"column {column_letter(c0)} holds row-group labels only on the first row of each "
            f"group ({int((data & labelled).sum())} groups over {int(data.sum())} rows): fill down")


#: Most single-cell rows of a table looked at as group labels (a sparse table has more).
_MAX_GROUP_CANDIDATES = 10_000


def _group_rows(ctx: _Ctx, block: Block, cells: np.ndarray, starts: np.ndarray,
                data: np.ndarray) -> np.ndarray:
    """Which data rows of a table are group labels (bool array over the rows ``starts``
    indexes): rows whose only value is a text in one of the table's first two columns,
    followed by a data row of two or more cells, the label styled unlike that row's cell in
    its column (bold or filled where it is not) or that row leaving its column empty (DECO's
    ``GroupHead``: a label row heading the rows under it)."""
    out = np.zeros(len(starts), dtype=bool)
    logical = ctx.owns[cells]
    per_row = np.add.reduceat(logical.astype(np.int64), starts) if len(starts) else starts
    first_cols = [c.col for c in block.columns[:2]]
    firsts = cells[starts]
    candidates = np.flatnonzero(data & (per_row == 1) & ctx.is_str[firsts]
                                & np.isin(ctx.col[firsts], first_cols) & ctx.owns[firsts])
    if len(block.columns) < 2 or len(candidates) > _MAX_GROUP_CANDIDATES:
        return out
    ends = np.r_[starts[1:], len(cells)]
    for i in candidates.tolist():
        nxt = i + 1
        if nxt >= len(starts) or not data[nxt] or per_row[nxt] < 2:
            continue
        p = firsts[i]
        row = cells[starts[nxt]:ends[nxt]]
        same = row[ctx.col[row] == ctx.col[p]]
        label = np.array([p])
        if not len(same) or (_styled(ctx, label)[0]
                             and _band_styles(ctx, label) != _band_styles(ctx, same[:1])):
            out[i] = True
    return out


def _total_rows(ctx: _Ctx, block: Block, cells: np.ndarray, starts: np.ndarray,
                candidates: np.ndarray) -> np.ndarray:
    """Which data rows of ``block`` are total rows (bool array over the rows that ``starts``
    indexes in ``cells``, the block's cells below its header), among ``candidates``, by the
    rules of :mod:`.totals`: an aggregate formula over the rows above, a total word in the
    first cell with a number equal to the sum above, or a bare total label with a number.
    Appends the reason of each to ``block.reasons``."""
    n_rows = len(starts)
    out = np.zeros(n_rows, dtype=bool)
    logical = ctx.owns[cells]
    first = cells[starts]
    texts = ctx.texts.take(pa.array(first, pa.int64()))
    found = np.flatnonzero(_np(pc.fill_null(pc.match_substring_regex(texts, _TOTAL_WORDS), False)))
    if not len(found) and not ctx.has_formula[cells].any():
        return out
    row_of = np.repeat(np.arange(n_rows), np.diff(np.r_[starts, len(cells)]))
    hinted = np.zeros(n_rows, dtype=bool)
    labels = np.zeros(n_rows, dtype=bool)
    for i, text in zip(found.tolist(), texts.take(pa.array(found, pa.int64())).to_pylist()):
        hinted[i] = bool(TOTAL_HINT_RE.search(text))
        labels[i] = bool(TOTAL_LABEL_RE.match(text))
    numeric = logical & (ctx.number[cells] == ctx.number[cells])
    has_number = np.zeros(n_rows, dtype=bool)
    has_number[row_of[numeric]] = True
    # aggregate formulas (calculated or not): a column whose rows mostly hold one is computed,
    # not summed
    formula_rows = np.zeros(n_rows, dtype=bool)
    with_formula = np.flatnonzero((numeric | ~ctx.is_str[cells]) & logical
                                  & ctx.has_formula[cells])
    if len(with_formula):
        formulas = ctx.formula.take(pa.array(cells[with_formula], pa.int64()))
        agg = np.flatnonzero(_np(pc.fill_null(pc.match_substring_regex(
            formulas, _AGGREGATE_HINT), False)))
        cols = ctx.col[cells[with_formula[agg]]]
        for c in np.unique(cols).tolist():
            mine = agg[cols == c]
            if len(mine) * 2 >= n_rows and n_rows > 2:
                continue
            texts_of = formulas.take(pa.array(mine, pa.int64())).to_pylist()
            for k, text in zip(mine.tolist(), texts_of):
                p = cells[with_formula[k]]
                if aggregates_above(text, int(ctx.row[p])):
                    formula_rows[row_of[with_formula[k]]] = True
    check = np.flatnonzero(candidates & (formula_rows | (hinted & has_number)))
    sums: dict[int, ColumnSums] = {}
    if (hinted & ~formula_rows & candidates).any():
        data_cols = np.unique(ctx.col[cells[numeric]])
        for c in data_cols.tolist():
            at = numeric & (ctx.col[cells] == c)
            values = np.full(n_rows, np.nan)
            values[row_of[at]] = ctx.number[cells[at]]
            sums[c] = ColumnSums(values)
    why: list[str] = []
    for i in check.tolist():
        if formula_rows[i]:
            reason = "aggregate formula over the rows above"
        elif labels[i]:
            reason = "total label"
        elif any(col_sums.is_sum(i) for col_sums in sums.values()):
            reason = "total word, a value equal to the sum above"
        else:
            continue
        out[i] = True
        for col_sums in sums.values():
            col_sums.add_total(i)
        why.append(f"{int(ctx.row[first[i]])} ({reason})")
    if why:
        block.reasons.append("total rows kept in the table: " + ", ".join(why[:20])
                             + (f" and {len(why) - 20} more" if len(why) > 20 else ""))
    return out


def is_total_row(first_text: str | None) -> bool:
    """Whether a row whose first non-empty cell reads ``first_text`` may be a total row
    (Total, Subtotal, Grand total, 合計, 小計, 総計...): a hint only, see :mod:`.totals`."""
    return bool(first_text and TOTAL_HINT_RE.search(first_text))


#: What every match of :data:`~.totals.TOTAL_HINT_RE` contains (an Arrow filter run first).
_TOTAL_WORDS = "(?i)total|合計|小計|総計|累計"
#: What every aggregate formula of :func:`~.totals.aggregates_above` contains.
_AGGREGATE_HINT = "(?i)sum|subtotal|aggregate|average|count|min|max|product|[+]"
