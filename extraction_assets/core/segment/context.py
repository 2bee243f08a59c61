"""The occupied cells of one sheet as arrays (:class:`SheetContext`), a region's rows
(:class:`RegionRows`) and the row-level lookups every rule shares."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import parse_range
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid, cell_keys, cells_in_range, find_cell
from extraction_assets.core.normalize import stripped_text
from extraction_assets.core.segment.headings import HeadingMap
from extraction_assets.core.segment.rules import (
    DATA_TYPES,
    MISSING_VALUE_TEXTS,
    NUMBER_TEXT,
    is_total_row,
    is_unit,
)
from extraction_assets.core.segment.totals import aggregates_above


class UnionFind:
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


def as_numpy(values) -> np.ndarray:
    """A numpy copy of an Arrow array or chunked array without nulls."""
    return values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else \
        values.to_numpy()


def text_numbers(texts: pa.Array) -> np.ndarray:
    """The numbers that texts matching :data:`~.rules.NUMBER_TEXT` read as (float64; a percent
    as its number, ``12%`` → 12.0; a comparison ``<.0001`` as its bound)."""
    bare = pc.replace_substring_regex(texts, r"[<>≤≥$€£¥,%]", "")
    return as_numpy(pc.cast(pc.replace_substring(bare, "−", "-"), pa.float64()))


class SheetContext:
    """The sheet's occupied cells (display text not blank, row and column shown) as arrays
    indexed by *position* 0..n-1 in (row, col) order, and the lookups the rules share.

    Cells holding a number or date that their number format shows blank are no positions;
    their keys are in ``blank_value_keys`` (:meth:`has_blank_values`).

    A region, a row or any set of cells is an ascending numpy array of positions; ``row``,
    ``col`` (1-based) and ``key`` (:func:`~extraction_assets.core.grid.cell_keys`) are int64 arrays; text,
    merges and styles are read per position. Work is one pass of Arrow kernels over the
    StyledGrid; nothing here is a Python object per cell.
    """

    def __init__(self, grid: StyledGrid, headings: HeadingMap | None):
        table = grid.table
        texts = stripped_text(table.column("display_text"))
        hidden = pc.fill_null(table.column("hidden"), False).combine_chunks()
        shown_text = as_numpy(pc.not_equal(texts, "")) & ~as_numpy(hidden)
        index = np.flatnonzero(shown_text)
        take = pa.array(index, pa.int64())
        rows = as_numpy(table.column("row")).astype(np.int64)
        cols = as_numpy(table.column("col")).astype(np.int64)
        typed = as_numpy(pc.fill_null(pc.is_in(table.column("value_type"),
                                               value_set=pa.array(DATA_TYPES)), False))
        # shown cells holding a number or date that their number format shows blank (zeros
        # hidden by ``0;-0;;@`` or ``#``): no text, yet a value of the row
        blank = np.flatnonzero(~shown_text & ~as_numpy(hidden) & typed)
        self.blank_value_keys = np.sort(cell_keys(rows[blank], cols[blank]))
        self.grid = grid
        self.headings = headings
        self.n = len(index)
        self.row = rows[index]
        self.col = cols[index]
        self.key = cell_keys(self.row, self.col)
        self.hidden_rows = list(grid.hidden_rows)
        self.hidden_columns = list(grid.hidden_columns)
        self.srow = self.row - np.searchsorted(np.asarray(self.hidden_rows, np.int64), self.row)
        self.scol = self.col - np.searchsorted(np.asarray(self.hidden_columns, np.int64), self.col)
        self.texts = texts.take(take)
        vtype = table.column("value_type").take(take)
        is_str = as_numpy(pc.fill_null(pc.equal(vtype, "string"), False))
        #: a text cell that reads as a number (:data:`~.rules.NUMBER_TEXT`): for the rules a
        #: number (``typed``, not ``is_str``, its value in ``number``); its record keeps the text
        self.text_number = np.zeros(self.n, dtype=bool)
        strings = np.flatnonzero(is_str)
        if len(strings):
            self.text_number[strings] = as_numpy(pc.fill_null(pc.match_substring_regex(
                self.texts.take(pa.array(strings, pa.int64())), NUMBER_TEXT), False))
        self.is_str = is_str & ~self.text_number
        self.typed = typed[index] | self.text_number
        #: a text standing for a missing value (:data:`~.rules.MISSING_VALUE_TEXTS`)
        self.is_missing = self.is_str & as_numpy(pc.fill_null(pc.is_in(
            pc.utf8_lower(pc.utf8_trim_whitespace(self.texts)),
            value_set=pa.array(sorted(MISSING_VALUE_TEXTS), pa.string())), False))
        self.is_error = as_numpy(pc.fill_null(pc.equal(vtype, "error"), False))
        self.is_date = as_numpy(pc.fill_null(pc.equal(vtype, "date"), False))
        self.bold = as_numpy(pc.fill_null(table.column("bold").take(take), False))
        self.size = as_numpy(pc.fill_null(pc.cast(table.column("font_size").take(take), pa.float64()),
                                     np.nan))
        fills = pc.dictionary_encode(table.column("fill_rgb").take(take)).combine_chunks()
        self.fill_code = as_numpy(pc.fill_null(fills.indices, -1)).astype(np.int32)
        self.fill_values = fills.dictionary.to_pylist()
        self.border = as_numpy(pc.fill_null(table.column("has_border").take(take), False))
        #: alignment indent in levels (how row labels show their hierarchy)
        self.indent = as_numpy(pc.fill_null(table.column("indent").take(take), 0)).astype(np.int32)
        #: the cell's number (``nan`` for none) and formula (Arrow, null for none)
        self.number = as_numpy(pc.fill_null(table.column("number_value").take(take), np.nan))
        if self.text_number.any():
            at = np.flatnonzero(self.text_number)
            self.number = self.number.copy()
            self.number[at] = text_numbers(self.texts.take(pa.array(at, pa.int64())))
        self.formula = table.column("formula").take(take).combine_chunks()
        self.has_formula = as_numpy(pc.is_valid(self.formula))
        self._merged_from = table.column("merged_from").take(take).combine_chunks()
        self._merge_range = table.column("merge_range").take(take).combine_chunks()
        #: whether a cell carries its own value (cells covered by a merge do not)
        self.owns = as_numpy(pc.is_null(self._merged_from))
        #: whether a cell is the top-left cell of a merged range
        self.anchors = self.owns & as_numpy(pc.is_valid(self._merge_range))
        self._text: dict[int, str] = {}
        self._blank_merges: list[tuple[int, int, int, int]] | None = None

    # -- lookups ----------------------------------------------------------------------------
    def find(self, r: int, c: int) -> int | None:
        """Position of the occupied cell (r, c), else ``None``."""
        return find_cell(self.key, r, c)

    def has(self, keys: np.ndarray) -> np.ndarray:
        """Whether each cell key of ``keys`` is occupied (bool array)."""
        if not self.n:
            return np.zeros(len(keys), dtype=bool)
        return self.key[np.minimum(np.searchsorted(self.key, keys), self.n - 1)] == keys

    def has_blank_values(self, r: int, c1: int, c2: int) -> bool:
        """Whether row ``r`` holds, in columns ``c1..c2``, a number or date its number format
        shows blank (see ``blank_value_keys``)."""
        keys = self.blank_value_keys
        i = np.searchsorted(keys, cell_keys(r, c1))
        return bool(i < len(keys) and keys[i] <= cell_keys(r, c2))

    def cells_in(self, r1: int, c1: int, r2: int, c2: int) -> np.ndarray:
        """Positions of the occupied cells of rows ``r1..r2`` and columns ``c1..c2``."""
        return cells_in_range(self.key, self.col, r1, c1, r2, c2)

    def rc(self, p) -> tuple[int, int]:
        return int(self.row[p]), int(self.col[p])

    def blank_merges(self) -> list[tuple[int, int, int, int]]:
        """Merged ranges whose anchor cell shows nothing, as ``(r1, c1, r2, c2)`` (1-based,
        inclusive), in sheet order; computed once per sheet."""
        if self._blank_merges is None:
            table = self.grid.table
            anchors = table.filter(pc.and_(pc.and_(
                pc.is_valid(table.column("merge_range")), pc.is_null(table.column("merged_from"))),
                pc.equal(pc.fill_null(pc.utf8_trim_whitespace(table.column("display_text")), ""),
                         "")))
            self._blank_merges = [parse_range(rng)
                                  for rng in anchors.column("merge_range").to_pylist()]
        return self._blank_merges

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


class RegionRows:
    """A region's cells row by row: ``order`` is the ascending list of its rows, ``rows[r]``
    the positions of row ``r`` (by column) and ``n_logical`` the count of value-carrying cells
    of each row of ``order``. A row may be replaced by fewer cells (``rows[r] = cells``)."""

    def __init__(self, ctx: SheetContext, cells: np.ndarray):
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

    def is_replaced(self, r: int) -> bool:
        """Whether row ``r``'s cells were replaced (``rows[r] = cells``: a row trimmed by a
        rule, not its cells as the region holds them)."""
        return r in self._replaced

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


class BothRows:
    """The rows of two regions with no row in common, looked up in either."""

    def __init__(self, upper: RegionRows, lower: RegionRows):
        self.upper, self.lower = upper, lower

    def __getitem__(self, r: int) -> np.ndarray:
        return self.upper[r] if r in self.upper else self.lower[r]


@dataclass
class Region:
    cells: np.ndarray
    reasons: list[str] = field(default_factory=list)


@dataclass
class RegionInfo:
    """What the join rules need to know about one region."""

    rows: RegionRows
    order: list[int]
    box: tuple[int, int, int, int]
    shown: tuple[int, int, int, int]
    n_logical: int

    @property
    def width(self) -> int:
        return self.shown[3] - self.shown[1] + 1


def region_info(ctx: SheetContext, cells: np.ndarray) -> RegionInfo:
    rows = RegionRows(ctx, cells)
    box = ctx.bbox(cells)
    shown = (ctx.shown_row(box[0]), ctx.shown_col(box[1]), ctx.shown_row(box[2]), ctx.shown_col(box[3]))
    return RegionInfo(rows, rows.order, box, shown, int(rows.n_logical.sum()))


def row_texts(ctx: SheetContext, cells: np.ndarray) -> dict[int, str]:
    return {int(ctx.col[p]): ctx.text(p) for p in ctx.logical(cells)}


def typed_columns(ctx: SheetContext, cells: np.ndarray) -> np.ndarray:
    """Columns holding a number, date or boolean among the value-carrying ``cells``."""
    logical = ctx.logical(cells)
    return np.unique(ctx.col[logical[ctx.typed[logical]]])


def all_bordered(ctx: SheetContext, cells) -> bool:
    """Whether every cell of ``cells`` that carries a value has a border."""
    logical = ctx.logical(cells)
    return bool(len(logical)) and bool(ctx.border[logical].all())


def all_strings(ctx: SheetContext, cells) -> bool:
    return bool(ctx.is_str[ctx.logical(cells)].all())


def all_bold(ctx: SheetContext, cells) -> bool:
    logical = ctx.logical(cells)
    return bool(len(logical)) and bool(ctx.bold[logical].all())


def body_top(ctx: SheetContext, side: RegionInfo) -> int:
    """First row of a region holding several cells (its first row when it is one column wide)."""
    if side.width > 1:
        wide = np.flatnonzero(side.rows.n_logical >= 2)
        if len(wide):
            return side.order[int(wide[0])]
    return side.order[0]


def cell_style(ctx: SheetContext, p) -> tuple:
    return bool(ctx.bold[p]), ctx.fill(p), ctx.font_size(p)


def starts_total(ctx: SheetContext, cells) -> bool:
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


def head_row(ctx: SheetContext, side: RegionInfo) -> int:
    """First header-ish row of a region: several cells, or a cell merged across columns (a
    parent header); its first row when it is one column wide."""
    if side.width > 1:
        rows = side.rows
        for i in np.flatnonzero((rows.n_logical >= 2) | (rows.n_logical == 1)).tolist():
            r = side.order[i]
            logical = ctx.logical(rows[r])
            if len(logical) >= 2 or (ctx.anchors[logical[0]] and ctx.merge_width(logical[0]) >= 2
                                     and not is_unit(ctx.text(logical[0]))):
                return r
    return side.order[0]


def is_year_label(ctx: SheetContext, p) -> bool:
    """Whether the number in cell ``p`` reads as a year label (a whole number 1900..2100
    shown without separators), as header rows often hold."""
    v = ctx.number[p]
    return bool(v == v and v == int(v) and 1900 <= v <= 2100 and ctx.text(p) == str(int(v)))


def year_labels(ctx: SheetContext, cells: np.ndarray) -> np.ndarray:
    """:func:`is_year_label` of each of ``cells`` (bool array), column-wise."""
    numbers = ctx.number[cells]
    whole = (numbers == np.floor(numbers)) & (numbers >= 1900) & (numbers <= 2100)
    return whole & as_numpy(pc.fill_null(pc.match_substring_regex(
        ctx.texts.take(pa.array(cells, pa.int64())), r"^\d{4}$"), False))


def size_label(ctx: SheetContext, p) -> str:
    size = ctx.font_size(p)
    size = ctx.headings.body_size if size is None else size
    return f"{size:g}"


def make_block(ctx: SheetContext, cells: np.ndarray, kind: str, reasons: list[str]) -> Block:
    """A block over ``cells`` (their bounding box: a merged cell counts with all it covers)."""
    r0, c0, r1, c1 = ctx.bbox(cells)
    grid = ctx.grid
    block = Block(grid.sheet_index, grid.sheet_name, kind, r0, c0, r1, c1, len(cells),
                  reasons=list(reasons))
    if kind != BlockKind.TABLE:
        logical = np.sort(ctx.logical(cells))
        lines: dict[int, list[str]] = {}
        for r, text in zip(ctx.row[logical].tolist(), ctx.texts_of(logical)):
            lines.setdefault(r, []).append(text)
        block.text = "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))
    return block


def band_styles(ctx: SheetContext, cells: np.ndarray) -> set[tuple[bool, str | None]]:
    """The (bold, fill) pairs of ``cells``: what makes a row look like part of a header band."""
    return {(bool(b), None if f < 0 else ctx.fill_values[f])
            for b, f in set(zip(ctx.bold[cells].tolist(), ctx.fill_code[cells].tolist()))}


def styled_cells(ctx: SheetContext, cells: np.ndarray) -> np.ndarray:
    """Whether each cell is styled as a header may be: bold, or filled with a colour other
    than white."""
    white = ctx.fill_values.index("FFFFFF") if "FFFFFF" in ctx.fill_values else -2
    return ctx.bold[cells] | ((ctx.fill_code[cells] >= 0) & (ctx.fill_code[cells] != white))
