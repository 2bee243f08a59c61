"""Find the blocks of a sheet: tables with their header rows, titles, headings and text.

First-level rules (deterministic, no model):

* Non-empty cells (display text not blank) are grouped into connected regions with
  8-neighbourhood; regions whose bounding boxes overlap are joined, so a sparse table with holes
  stays one table and several tables separated by empty rows or columns come out separately.
* **Gap tolerance**: two regions separated by exactly one empty row (as the sheet is shown) are
  joined when the lower one lies within the upper one's columns and does not start with a new
  header row (a row of text cells above numeric/date values, or a bold or filled row above
  plain rows) and numbers or dates, or cell borders, continue across the gap; a repeat of the
  upper header is joined too. Two regions separated by exactly one
  empty column are joined when they start on the same row and end on the same row (or the
  narrow one, a single column, ends earlier), share no header label and do not both have a
  header row of their own. Two or more empty rows or columns always separate blocks.
* Leading rows of a region that hold a single cell (or one merged range) are peeled off as
  ``title`` blocks while at least two rows of the region hold several cells: a merged title row
  spanning the table or a merged section label above a header is a title, never a header row.
* A region of at least two rows and two columns with a row of several cells is a ``table``;
  inside it, a single-cell row followed by a new header row starts another table (the single
  cell is its title). Trailing single-cell rows that read as notes (``※``, ``Note:``, ``*``,
  a long line in the first column or a merged long line) become a ``text`` block.
* Other regions are split into heading lines (``title`` blocks with a ``level``) and ``text``
  blocks; a lone cell is a ``title``. A lone non-heading cell just under a table that no table
  takes as its title, or any lone cell that reads as a note, is ``text``.
* A single text cell directly above a table (at most two rows up, overlapping its columns) is
  that table's title.
* **Headings** (see :mod:`.headings`): bold text cells outside tables get the heading level of
  their font size (H2..H6, the sheet name is H1). Every block's ``heading_path`` is the sheet
  name, then the nearest headings above it (outermost first, each level replacing deeper ones),
  then, for a table, its own title when not already in the path.
* **Excel tables** (ListObjects, ``xl/tables/tableN.xml``) are authoritative: each is a table
  block with exactly its range, header row, column names and totals row; the rules below run on
  the cells outside them.
* **Forms**: a region whose rows are label/value pairs (labels ending with a colon, or bold
  labels over plain values, or unique labels whose values mix types) is a ``key_value`` block,
  one pair per :class:`Column` (see :func:`_key_value_block`).
* A table's header is its first row, extended downwards while a merged range anchored in the
  header spans more rows or groups columns over a sub-header row, then by rows of text styled
  like the header (bold or filled) above plain data, or down to the sheet's frozen pane when
  that gives more rows (at most :data:`MAX_HEADER_ROWS` = 4 rows). Each
  column's header is the path of its non-empty, non-repeated header levels joined by
  ``" > "``; a column with no header is named by its letter; repeated labels get `` (2)``,
  `` (3)``... Columns covered by a horizontal merge in the leaf header row, and fully empty
  columns, are not columns of the table.
* Inside a table's data: summary rows (Total, Subtotal, Grand total, 合計, 小計...) stay rows of
  the table and are listed in ``total_rows``; rows repeating the header texts are listed in
  ``skip_rows``; a leftmost column whose labels sit only on the first row of each group is
  recorded as ``row_group_col`` (to be filled down).

Every decision appends a human-readable reason to ``Block.reasons``.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

from .a1 import column_letter, parse_cell_ref, parse_range, range_ref
from .headings import HeadingMap, detect_heading_levels
from .normalize import StyledGrid

TOTAL_RE = re.compile(r"^\s*((grand|sub)[\s-]*)?totals?\b|^\s*(合計|小計|総計|累計)", re.IGNORECASE)
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
    its trailing colon), ``col`` and ``row`` the 1-based column and row of the value cell."""

    col: int
    header: str
    header_levels: list[str]
    row: int | None = None


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


@dataclass
class Block:
    """A detected block. Bounds are 1-based and inclusive; ``heading_path`` starts with the sheet
    name; ``reasons`` lists the signals that decided the block's kind and extent.

    ``level`` is the heading level (2..6) of a heading ``title`` block, else ``None``;
    ``skip_rows`` are the sheet rows of a table that repeat its header (not data);
    ``total_rows`` are the sheet rows of a table that are summary rows (kept as rows);
    ``row_group_col`` is the sheet column of a table whose group labels sit only on the first row
    of each group (a renderer fills them down), else ``None``;
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
    row_group_col: int | None = None
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


@dataclass
class _Region:
    cells: list[tuple[int, int]]
    reasons: list[str] = field(default_factory=list)


class _Ctx:
    """Per-sheet lookups shared by the rules."""

    def __init__(self, grid: StyledGrid, occupied: dict[tuple[int, int], int], headings: HeadingMap):
        cols = grid.columns
        self.grid = grid
        self.occupied = occupied
        self.headings = headings
        self.texts = cols["display_text"]
        self.vtype = cols["value_type"]
        self.bold = cols["bold"]
        self.size = cols["font_size"]
        self.fill = cols["fill_rgb"]
        self.border = cols["has_border"]
        self.merged_from = cols["merged_from"]
        self.merge_range = cols["merge_range"]
        self.hidden_rows = list(grid.hidden_rows)
        self.hidden_columns = list(grid.hidden_columns)

    def shown_row(self, r: int) -> int:
        return r - bisect_left(self.hidden_rows, r)

    def shown_col(self, c: int) -> int:
        return c - bisect_left(self.hidden_columns, c)

    def text(self, k: tuple[int, int]) -> str:
        return self.texts[self.occupied[k]].strip()

    def logical(self, cells) -> list[tuple[int, int]]:
        """Cells that carry their own value (covered cells of a merge are not counted)."""
        merged_from, occupied = self.merged_from, self.occupied
        return [k for k in cells if merged_from[occupied[k]] is None]

    def is_string(self, k) -> bool:
        return self.vtype[self.occupied[k]] == "string"

    def level(self, k) -> int | None:
        """Heading level of cell ``k`` (bold text of a heading size), else ``None``."""
        i = self.occupied[k]
        if self.vtype[i] != "string":
            return None
        return self.headings.level(self.bold[i], self.size[i])

    def merge_width(self, k) -> int:
        rng = self.merge_range[self.occupied[k]]
        if not rng:
            return 1
        _, c1, _, c2 = parse_range(rng)
        return c2 - c1 + 1


# -- regions ------------------------------------------------------------------------------------
def _regions(cells: dict[tuple[int, int], int], hidden_rows: list[int] = (),
             hidden_columns: list[int] = ()) -> list[list[tuple[int, int]]]:
    """Connected regions (8-neighbourhood) of the occupied positions, bounding boxes joined.

    Adjacency is judged as the sheet is shown: hidden rows and columns (sorted 1-based indices)
    are skipped, so a hidden row inside a table does not split it.
    """
    keys = sorted(cells)
    shown = [(r - bisect_left(hidden_rows, r), c - bisect_left(hidden_columns, c)) for r, c in keys]
    index = {k: i for i, k in enumerate(shown)}
    uf = _UnionFind(len(keys))
    for i, (r, c) in enumerate(shown):
        for dr, dc in ((-1, -1), (-1, 0), (-1, 1), (0, -1)):
            j = index.get((r + dr, c + dc))
            if j is not None:
                uf.union(i, j)
    groups: dict[int, list[tuple[int, int]]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(uf.find(i), []).append(k)
    return [sorted(g) for g in _join_overlapping(list(groups.values()))]


def _join_overlapping(regions: list[list]) -> list[list]:
    """Join regions whose bounding boxes overlap (sparse tables with holes)."""
    boxes = [_bbox(g) for g in regions]
    changed = len(regions) <= _MAX_REGIONS
    while changed:
        changed = False
        for a in range(len(regions)):
            for b in range(a + 1, len(regions)):
                if _overlap(boxes[a], boxes[b]):
                    regions[a].extend(regions[b])
                    boxes[a] = _bbox(regions[a])
                    del regions[b], boxes[b]
                    changed = True
                    break
            if changed:
                break
    return regions


def _bbox(cells) -> tuple[int, int, int, int]:
    rows = [r for r, _ in cells]
    cols = [c for _, c in cells]
    return min(rows), min(cols), max(rows), max(cols)


def _overlap(a, b) -> bool:
    return not (a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])


def _rows_of(cells) -> dict[int, list[tuple[int, int]]]:
    rows: dict[int, list[tuple[int, int]]] = {}
    for k in sorted(cells):
        rows.setdefault(k[0], []).append(k)
    return rows


@dataclass
class _Info:
    """What the join rules need to know about one region."""

    rows: dict[int, list[tuple[int, int]]]
    order: list[int]
    box: tuple[int, int, int, int]
    shown: tuple[int, int, int, int]
    n_logical: int

    @property
    def width(self) -> int:
        return self.shown[3] - self.shown[1] + 1


def _info(ctx: _Ctx, cells) -> _Info:
    rows = _rows_of(cells)
    box = _bbox(cells)
    shown = (ctx.shown_row(box[0]), ctx.shown_col(box[1]), ctx.shown_row(box[2]), ctx.shown_col(box[3]))
    return _Info(rows, sorted(rows), box, shown, len(ctx.logical(cells)))


def _row_texts(ctx: _Ctx, cells) -> dict[int, str]:
    return {c: ctx.text((r, c)) for r, c in ctx.logical(cells)}


def _header_like(ctx: _Ctx, rows: dict, order: list[int], idx: int) -> str | None:
    """Why row ``order[idx]`` reads as a header row of the rows below it (``None`` if it does not):
    several text cells above numeric/date values in their columns, or a bold or filled row
    above plain rows."""
    r = order[idx]
    cells = ctx.logical(rows[r])
    below = order[idx + 1:idx + 6]
    if len(cells) < 2 or not below or not all(ctx.is_string(k) for k in cells):
        return None
    occ = ctx.occupied
    header_cols = {c for _, c in rows[r]}
    for b in below:
        for k in ctx.logical(rows[b]):
            if k[1] in header_cols and ctx.vtype[occ[k]] in _DATA_TYPES:
                return f"row {r} holds text cells above numeric/date values"
    nxt = ctx.logical(rows[below[0]])
    if all(ctx.bold[occ[k]] for k in cells) and not all(ctx.bold[occ[k]] for k in nxt):
        return f"row {r} is bold above plain rows"
    fills = {ctx.fill[occ[k]] for k in cells}
    if (len(fills) == 1 and None not in fills and fills != {"FFFFFF"}
            and any(ctx.fill[occ[k]] not in fills for k in nxt)):
        return f"row {r} is filled above unfilled rows"
    return None


def _is_heading_row(ctx: _Ctx, cells) -> bool:
    logical = ctx.logical(cells)
    return len(logical) == 1 and ctx.level(logical[0]) is not None


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
    # positive evidence that the rows continue the table above
    both = {**upper.rows, **lower.rows}
    both_order = upper.order + lower.order
    head = next((why for idx in range(min(4, len(upper.order)))
                 for why in [_header_like(ctx, both, both_order, idx)] if why), None)
    if head is None:
        typed_above = {c for r in upper.order for (_, c) in ctx.logical(upper.rows[r])
                       if ctx.vtype[ctx.occupied[(r, c)]] in _DATA_TYPES}
        typed_below = {c for r in lower.order for (_, c) in ctx.logical(lower.rows[r])
                       if ctx.vtype[ctx.occupied[(r, c)]] in _DATA_TYPES}
        if typed_above & typed_below:
            head = "numeric/date values continue in the same columns"
        elif _bordered(ctx, upper.rows[upper.order[-1]]) and _bordered(ctx, first):
            head = "cell borders continue on both sides of the empty row"
        else:
            return None  # plain text on both sides: no sign that they are one table
    return (f"rows {upper.box[0]}-{lower.box[2]}: a single empty row above row {lower.box[0]} "
            f"inside the table (no new header row below it; {head})")


def _bordered(ctx: _Ctx, cells) -> bool:
    """Whether every cell of ``cells`` that carries a value has a border."""
    logical = ctx.logical(cells)
    return bool(logical) and all(ctx.border[ctx.occupied[k]] for k in logical)


def _all_strings(ctx: _Ctx, cells) -> bool:
    return all(ctx.is_string(k) for k in ctx.logical(cells))


def _all_bold(ctx: _Ctx, cells) -> bool:
    logical = ctx.logical(cells)
    return bool(logical) and all(ctx.bold[ctx.occupied[k]] for k in logical)


def _is_unit(text: str) -> bool:
    return len(text) <= 40 and bool(UNIT_RE.match(text))


def _body_top(ctx: _Ctx, side: _Info) -> int:
    """First row of a region holding several cells (its first row when it is one column wide)."""
    if side.width > 1:
        for r in side.order:
            if len(ctx.logical(side.rows[r])) >= 2:
                return r
    return side.order[0]


def _style(ctx: _Ctx, k) -> tuple:
    i = ctx.occupied[k]
    return bool(ctx.bold[i]), ctx.fill[i], ctx.size[i]


def _styled_like_row_below(ctx: _Ctx, k, side: _Info) -> bool:
    """Whether the lone cell ``k`` is merged across columns and styled exactly like the cells
    under it in the next row (a parent header, not a title)."""
    if ctx.merge_width(k) < 2:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range[ctx.occupied[k]])
    nxt = [r for r in side.order if r > k[0]]
    if not nxt:
        return False
    below = [q for q in ctx.logical(side.rows[nxt[0]]) if c1 <= q[1] <= c2]
    return len(below) >= 2 and all(_style(ctx, q) == _style(ctx, k) for q in below)


def _starts_total(ctx: _Ctx, cells) -> bool:
    logical = ctx.logical(cells)
    return bool(logical) and is_total_row(ctx.text(min(logical, key=lambda k: k[1])))


def _head_row(ctx: _Ctx, side: _Info) -> int:
    """First header-ish row of a region: several cells, or a cell merged across columns (a
    parent header); its first row when it is one column wide."""
    if side.width > 1:
        for r in side.order:
            logical = ctx.logical(side.rows[r])
            if len(logical) >= 2 or (len(logical) == 1 and ctx.merge_width(logical[0]) >= 2
                                     and not _is_unit(ctx.text(logical[0]))):
                return r
    return side.order[0]


def _join_horizontal(ctx: _Ctx, left: _Info, right: _Info, lone: list[tuple[int, int]]) -> str | None:
    """Why two regions one empty column apart are one table (``None``: they are not).

    Their bodies (from the first row of several cells) must start within three rows of each
    other, the rows above the later start being text (titles, unit lines, parent header rows),
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
        extra = [r for r in side.order if r < top]
        if len(extra) > 3 or not all(_all_strings(ctx, side.rows[r]) for r in extra):
            return None
        extra = [r for r in side.order if r > bottom]
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
            logical = ctx.logical(left.rows.get(r, []))
            return len(logical) >= 2 or (len(logical) == 1 and (
                _styled_like_row_below(ctx, logical[0], left) or _is_unit(ctx.text(logical[0]))))

        own = [(r, c) for r in right.order if r < top and not header_on_left(r)
               for (_, c) in [ctx.logical(right.rows[r])[0]]
               if len(ctx.logical(right.rows[r])) == 1 and not _is_unit(ctx.text((r, c)))
               and not _styled_like_row_below(ctx, (r, c), right)]
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
        lone = [g.cells[0] for g, info in zip(regions, infos)
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
        groups: dict[int, _Region] = {}
        for i, region in enumerate(regions):
            root = uf.find(i)
            target = groups.setdefault(root, _Region([], []))
            target.cells.extend(region.cells)
            target.reasons.extend(region.reasons + reasons.get(i, []))
        merged = list(groups.values())
        cells = _join_overlapping([list(g.cells) for g in merged])
        if len(cells) == len(merged):
            regions = [_Region(sorted(g.cells), g.reasons) for g in merged]
        else:  # a joined box overlapped another region: reattach reasons by cell
            owner = {}
            for g in merged:
                for k in g.cells:
                    owner[k] = g
            regions = []
            for group in cells:
                seen, why = set(), []
                for k in group:
                    g = owner[k]
                    if id(g) not in seen:
                        seen.add(id(g))
                        why.extend(g.reasons)
                regions.append(_Region(sorted(group), why))
    return regions


# -- classification -----------------------------------------------------------------------------
def segment_sheet(grid: StyledGrid, headings: HeadingMap | None = None,
                  list_objects: list[ListObject] = ()) -> list[Block]:
    """Split one sheet's StyledGrid into blocks, ordered by top-left cell (row, then column).

    ``headings`` is the workbook's :class:`~.headings.HeadingMap` (body font size and heading
    level of each bold size); when ``None`` it is computed from this sheet alone.
    ``list_objects`` are the sheet's Excel tables: each is a ``table`` block with exactly its
    range, header row and totals row (authoritative; the rules run on the cells outside them).
    A ListObject whose range is not valid A1 or overlaps an earlier one is ignored.

    Cells in hidden rows or columns belong to no block (they are flagged ``hidden`` in the
    StyledGrid); hidden sheets are segmented too and callers decide what to render.
    """
    cols = grid.columns
    occupied: dict[tuple[int, int], int] = {}
    hidden = cols["hidden"]
    for i, text in enumerate(cols["display_text"]):
        if text is not None and text.strip() and not hidden[i]:
            occupied[(cols["row"][i], cols["col"][i])] = i
    if not occupied and not list_objects:
        return []
    if headings is None:
        headings = detect_heading_levels([_AsVisible(grid)])
    ctx = _Ctx(grid, occupied, headings)
    blocks, ignored = _list_object_blocks(ctx, list_objects)
    free = occupied
    if blocks:
        free = {}
        for k, i in occupied.items():
            owner = next((b for b in blocks if b.min_row <= k[0] <= b.max_row
                          and b.min_col <= k[1] <= b.max_col), None)
            if owner is None:
                free[k] = i
            else:
                owner.n_cells += 1
    regions = [_Region(cells) for cells in _regions(free, grid.hidden_rows, grid.hidden_columns)]
    regions = _join_gaps(ctx, regions)
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
    for block in blocks:
        if block.kind == "table" and not block.columns:
            _header(ctx, block)
            _data_rows(ctx, block)
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
    occupied = ctx.occupied
    for lo in list_objects:
        try:
            r1, c1, r2, c2 = parse_range(lo.ref)
        except ValueError:
            continue
        if any(not (r2 < b.min_row or b.max_row < r1 or c2 < b.min_col or b.max_col < c1)
               for b in out):
            continue
        n_rows, width = r2 - r1 + 1, c2 - c1 + 1
        beside = sum(1 for r in range(r1, r2 + 1)
                     if (r, c1 - 1) in occupied or (r, c2 + 1) in occupied)
        under = len(ctx.logical([(r2 + 1, c) for c in range(c1, c2 + 1) if (r2 + 1, c) in occupied]))
        if beside * 2 > n_rows or (width >= 2 and under * 2 >= width and under >= 2):
            ignored.append(((r1, c1, r2, c2), f"Excel table (ListObject) {lo.name} {lo.ref} "
                            "covers only part of the cells around it: its range is not used"))
            continue
        header_rows = min(max(lo.header_row_count, 0), r2 - r1 + 1)
        block = Block(ctx.grid.sheet_index, ctx.grid.sheet_name, "table", r1, c1, r2, c2, 0,
                      header_row_count=header_rows,
                      reasons=[f"Excel table (ListObject) {lo.name} {lo.ref}: its range, header "
                               "row and totals row are authoritative"])
        seen: dict[str, int] = {}
        for c in range(c1, c2 + 1):
            name = lo.columns[c - c1] if c - c1 < len(lo.columns) else None
            text = ctx.text((r1, c)) if header_rows and (r1, c) in ctx.occupied else ""
            label = text or name or f"Column {column_letter(c)}"
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:
                label = f"{label} ({seen[label]})"
            block.columns.append(Column(c, label, [label]))
        _data_rows(ctx, block)
        if lo.totals_row_count > 0 and r2 - lo.totals_row_count >= r1 + header_rows:
            totals = range(r2 - lo.totals_row_count + 1, r2 + 1)
            block.total_rows = sorted(set(block.total_rows) | set(totals))
            block.reasons.append(f"totals row of the Excel table: {', '.join(map(str, totals))}")
        out.append(block)
    return out, ignored


class _AsVisible:
    """A grid seen as visible (a hidden sheet segmented on its own still gets its headings)."""

    visibility = "visible"

    def __init__(self, grid: StyledGrid):
        self.columns = grid.columns


def _classify(ctx: _Ctx, cells, join_reasons: list[str]) -> list[Block]:
    rows = _rows_of(cells)
    order = sorted(rows)
    out: list[Block] = []
    wide = {r for r in order if len(ctx.logical(rows[r])) >= 2}
    if not wide:
        return _text_blocks(ctx, rows, order)

    def peelable() -> bool:
        if len(order) >= 3 and len(wide.intersection(order)) >= 2:
            return True
        first = ctx.logical(rows[order[0]])
        return (len(order) >= 2 and len(first) == 1 and not _is_label(ctx.text(first[0]))
                and _key_value_block(ctx, rows, order[1:], []) is not None)

    # peel single-cell leading rows off a wider region (or off a form) as titles / headings
    while peelable():
        first = ctx.logical(rows[order[0]])
        units = [k for k in first if _is_unit(ctx.text(k))]
        if units and len(first) - len(units) == 1:
            # a title line with a unit line on the same row
            refs = {ctx.grid.columns["ref"][ctx.occupied[u]] for u in units}
            unit_cells = [k for k in rows[order[0]]
                          if k in units or ctx.merged_from[ctx.occupied[k]] in refs]
            out.append(_make_block(ctx, unit_cells, "text", ["unit line above the table"]))
            rows[order[0]] = [k for k in rows[order[0]] if k not in unit_cells]
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
    # a single-cell row followed by a new header row starts another table
    for idx in range(2, len(order) - 2):
        logical = ctx.logical(rows[order[idx]])
        if (len(logical) == 1 and not is_total_row(ctx.text(logical[0]))
                and not NOTE_RE.match(ctx.text(logical[0])) and not _is_label(ctx.text(logical[0]))):
            why = _header_like(ctx, rows, order, idx + 1)
            if why:
                upper = [k for r in order[:idx] for k in rows[r]]
                lower = [k for r in order[idx:] for k in rows[r]]
                out.extend(_classify(ctx, upper, join_reasons))
                below = _classify(ctx, lower, [])
                for block in below:
                    if block.kind == "table":
                        block.reasons.append(f"split from the table above: {why}")
                out.extend(below)
                return out
    if len(order) < 2 or not any(r in wide for r in order):
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
    rest = [k for r in order for k in rows[r]]
    r0, c0, r1, c1 = _bbox(rest)
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
        out.append(_make_block(ctx, [k for r in notes for k in rows[r]], "text",
                               [f"note under the table: {note_why}"]))
    return out


def _is_label(text: str) -> bool:
    return text.endswith(_LABEL_COLON) and len(text) > 1


def _key_value_block(ctx: _Ctx, rows, order, join_reasons: list[str]) -> Block | None:
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
    pairs: list[tuple[tuple[int, int], tuple[int, int] | None]] = []
    single = True
    for r in order:
        cells = sorted(ctx.logical(rows[r]), key=lambda k: k[1])
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
            i += 2 if value else 1
    labels = [ctx.text(k) for k, _ in pairs]
    values = [v for _, v in pairs if v is not None]
    if not values or any(v is None and not _is_label(ctx.text(k)) for k, v in pairs):
        return None  # a lone line that is no blank field (a title, a note) is not a pair
    colons = sum(_is_label(t) for t in labels)
    why = None
    if colons * 2 >= len(labels) and (single or colons == len(labels)):
        why = f"{colons} of {len(labels)} labels end with a colon"
    elif (single and len(pairs) >= 2 and len({k[1] for k, _ in pairs}) == 1
          and len({v[1] for v in values}) == 1):
        bold = ctx.bold
        if (all(bold[ctx.occupied[k]] for k, _ in pairs)
                and not any(bold[ctx.occupied[v]] for v in values)):
            why = "bold labels in one column, each followed by a plain value"
        elif (len(pairs) >= 3 and len(set(labels)) == len(labels)
              and not _header_like(ctx, rows, order, 0)):
            types = {ctx.vtype[ctx.occupied[v]] for v in values[1:]}
            if "string" in types and types & set(_DATA_TYPES):
                why = ("unique labels in one column; the values mix text with numbers or dates "
                       "(a table column keeps one type)")
    if why is None:
        return None
    cells = [k for r in order for k in rows[r]]
    block = _make_block(ctx, cells, "key_value", [f"form of {len(pairs)} label/value pairs: {why}",
                                                  *join_reasons])
    seen: dict[str, int] = {}
    lines = []
    for label, value in pairs:
        text = ctx.text(label)
        name = text.rstrip(":：").strip() if _is_label(text) else text
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name} ({seen[name]})"
        where = value or (label[0], label[1] + ctx.merge_width(label))
        block.columns.append(Column(where[1], key, [name], row=where[0]))
        lines.append(f"{name}: {ctx.text(value) if value else ''}".rstrip())
    block.text = "\n".join(lines)
    return block


def _is_group_header(ctx: _Ctx, rows, order, k) -> bool:
    """Whether the lone cell ``k`` of the first row is a parent header: merged across columns,
    starting right of the region's first column, over the next row (:func:`_groups_below`)."""
    if ctx.merge_width(k) < 2:
        return False
    min_col = min(c for r in order for _, c in rows[r])
    if k[1] <= min_col:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range[ctx.occupied[k]])
    return _groups_below(ctx, order[1], c1, c2,
                         (min_col, max(c for r in order for _, c in rows[r])))


def _size(ctx: _Ctx, k) -> str:
    size = ctx.size[ctx.occupied[k]]
    size = ctx.headings.body_size if size is None else size
    return f"{size:g}"


def _note_row(ctx: _Ctx, rows, order) -> str | None:
    """Why the last row of ``order`` is a note under the table (``None``: it is a table row)."""
    last = order[-1]
    logical = ctx.logical(rows[last])
    if len(logical) != 1 or not ctx.is_string(logical[0]):
        return None
    k = logical[0]
    text = ctx.text(k)
    if is_total_row(text):
        return None
    if NOTE_RE.match(text):
        return f"row {last} starts with a note marker"
    min_col = min(c for r in order for _, c in rows[r])
    width = max(c for r in order for _, c in rows[r]) - min_col + 1
    if ctx.merge_width(k) >= max(2, width // 2 + 1) and len(text) >= 15:
        return f"row {last} is one long merged text line"
    if k[1] == min_col and len(text) >= _LONG_NOTE:
        others = [len(ctx.text(q)) for r in order[1:-1] for q in ctx.logical(rows[r]) if q[1] == min_col]
        if len(text) > 2 * max(others, default=0):
            return f"row {last} is a long text line in the first column, other columns empty"
    return None


def _text_blocks(ctx: _Ctx, rows, order) -> list[Block]:
    """Blocks of a region that is not a table: heading lines and runs of text lines; a lone cell
    is a ``title``."""
    logical_all = ctx.logical([k for r in order for k in rows[r]])
    if len(logical_all) == 1:
        k = logical_all[0]
        block = _make_block(ctx, [k2 for r in order for k2 in rows[r]], "title", ["single cell"])
        level = ctx.level(k)
        if level is not None:
            block.level = level
            block.reasons.append(f"heading H{level}: bold {_size(ctx, k)} pt")
        return [block]
    out: list[Block] = []
    run: list[int] = []

    def flush():
        if run:
            out.append(_make_block(ctx, [k for r in run for k in rows[r]], "text",
                                   ["region too small for a table"]))
            run.clear()

    for r in order:
        if _is_heading_row(ctx, rows[r]):
            flush()
            (k,) = ctx.logical(rows[r])
            level = ctx.level(k)
            block = _make_block(ctx, rows[r], "title", [f"heading H{level}: bold {_size(ctx, k)} pt"])
            block.level = level
            out.append(block)
        else:
            run.append(r)
    flush()
    return out


def _make_block(ctx: _Ctx, cells, kind: str, reasons: list[str]) -> Block:
    """A block over ``cells`` (their bounding box: a merged cell counts with all it covers)."""
    r0, c0, r1, c1 = _bbox(cells)
    grid = ctx.grid
    logical = sorted(ctx.logical(cells))
    block = Block(grid.sheet_index, grid.sheet_name, kind, r0, c0, r1, c1, len(cells),
                  reasons=list(reasons))
    if kind != "table":
        lines: dict[int, list[str]] = {}
        for k in logical:
            lines.setdefault(k[0], []).append(ctx.text(k))
        block.text = "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))
    return block


# -- titles and headings ------------------------------------------------------------------------
def _attach_titles(blocks: list[Block]) -> dict[int, Block]:
    """Make a title line just above a table or form (<= 2 rows up, columns overlapping) its
    title, and a unit line there its unit; make a lone cell that reads as a note or a unit line,
    or sits just under a table without being a title, ``text``. Returns {id(title block): its
    table}."""
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
    occupied = ctx.occupied
    texts, merged_from = ctx.texts, ctx.merged_from
    depth = _merged_header_depth(ctx, block)
    depth = _styled_header_depth(ctx, block, depth)
    frozen = _frozen_header_depth(ctx, block)
    if frozen > depth:
        depth = frozen
        block.reasons.append(f"frozen pane at {ctx.grid.frozen_pane}: rows {block.min_row}-"
                             f"{block.min_row + depth - 1} stay on screen above the data")
    depth = min(depth, MAX_HEADER_ROWS, block.max_row - block.min_row)
    block.header_row_count = max(depth, 1)
    block.reasons.append(f"header rows {block.min_row}-{block.min_row + block.header_row_count - 1}")
    header_rows = range(block.min_row, block.min_row + block.header_row_count)
    leaf = header_rows[-1]
    seen: dict[str, int] = {}
    for c in range(block.min_col, block.max_col + 1):
        leaf_i = occupied.get((leaf, c))
        if leaf_i is not None and merged_from[leaf_i] is not None:
            if parse_cell_ref(merged_from[leaf_i])[0] == leaf:
                continue  # covered by a horizontal merge in the leaf header row
        if not any((r, c) in occupied for r in range(block.min_row, block.max_row + 1)):
            block.reasons.append(f"column {column_letter(c)} dropped: fully empty")
            continue
        levels: list[str] = []
        for r in header_rows:
            i = occupied.get((r, c))
            text = texts[i].strip() if i is not None else ""
            if text and (not levels or levels[-1] != text):
                levels.append(text)
        label = " > ".join(levels) if levels else f"Column {column_letter(c)}"
        if label in seen:
            seen[label] += 1
            label = f"{label} ({seen[label]})"
        else:
            seen[label] = 1
        block.columns.append(Column(c, label, levels or [label]))


def _groups_below(ctx: _Ctx, below_row: int, c1: int, c2: int, span: tuple[int, int]) -> bool:
    """Whether a merged range over columns ``c1..c2`` is a parent header of ``below_row``: two
    or more cells under it, or one merged text cell of exactly its columns in a row with no
    numbers or dates between columns ``span`` (parents stacked over one another)."""
    occupied = ctx.occupied
    below = ctx.logical([(below_row, c) for c in range(c1, c2 + 1) if (below_row, c) in occupied])
    if len(below) >= 2:
        return True
    if len(below) != 1 or not ctx.is_string(below[0]):
        return False
    rng = ctx.merge_range[occupied[below[0]]]
    return bool(rng) and parse_range(rng)[1::2] == (c1, c2) and not any(
        ctx.vtype[occupied[(below_row, c)]] in _DATA_TYPES
        for c in range(span[0], span[1] + 1) if (below_row, c) in occupied)


def _merged_header_depth(ctx: _Ctx, block: Block) -> int:
    """Header rows implied by merges: a merged range anchored in the header that spans more
    rows (when the rows it spans hold no numbers or dates beside it: a row-group label merged
    down the data is no header), or groups columns over the row below (a parent header, see
    :func:`_groups_below`)."""
    occupied, merged_from, merge_range = ctx.occupied, ctx.merged_from, ctx.merge_range
    depth = 1
    r = block.min_row
    while r < block.min_row + depth and r - block.min_row < MAX_HEADER_ROWS:
        for c in range(block.min_col, block.max_col + 1):
            i = occupied.get((r, c))
            if i is None or merge_range[i] is None or merged_from[i] is not None:
                continue
            r1, c1, r2, c2 = parse_range(merge_range[i])
            span_rows = min(r2, block.max_row) - r1 + 1
            if span_rows > 1:
                spanned = [k for rr in range(r1, r1 + span_rows) for k in _row_cells(ctx, block, rr)]
                if any(ctx.vtype[occupied[k]] in _DATA_TYPES for k in spanned):
                    continue
                if r - block.min_row + span_rows > depth:
                    depth = r - block.min_row + span_rows
                    block.reasons.append(f"header merge {merge_range[i]} spans {span_rows} rows")
            elif c2 > c1 and r1 + 1 <= block.max_row and _groups_below(
                    ctx, r1 + 1, c1, c2, (block.min_col, block.max_col)):
                if r - block.min_row + 2 > depth:
                    depth = r - block.min_row + 2
                    block.reasons.append(f"header merge {merge_range[i]} groups the columns below it")
        r += 1
    return depth


def _row_cells(ctx: _Ctx, block: Block, r: int) -> list[tuple[int, int]]:
    return ctx.logical([(r, c) for c in range(block.min_col, block.max_col + 1)
                        if (r, c) in ctx.occupied])


def _band_style(ctx: _Ctx, k) -> tuple[bool, str | None]:
    """(bold, fill) of cell ``k``: what makes a row look like part of a header band."""
    i = ctx.occupied[k]
    return bool(ctx.bold[i]), ctx.fill[i]


def _styled_header_depth(ctx: _Ctx, block: Block, depth: int) -> int:
    """``depth`` extended by rows styled like the header rows (all bold, or one fill) that hold
    only text, when the row after them is plain and holds numbers or dates (a header band
    without merges)."""
    styles = {_band_style(ctx, k) for r in range(block.min_row, block.min_row + depth)
              for k in _row_cells(ctx, block, r)}
    if len(styles) != 1 or styles == {(False, None)}:
        return depth
    (header_style,) = styles
    extra = 0
    while depth + extra < MAX_HEADER_ROWS:
        cells = _row_cells(ctx, block, block.min_row + depth + extra)
        if (len(cells) < 2 or not all(ctx.is_string(k) for k in cells)
                or any(_band_style(ctx, k) != header_style for k in cells)):
            break
        extra += 1
    after = _row_cells(ctx, block, block.min_row + depth + extra)
    if (extra and block.min_row + depth + extra <= block.max_row and after
            and not all(_band_style(ctx, k) == header_style for k in after)
            and any(ctx.vtype[ctx.occupied[k]] in _DATA_TYPES for k in after)):
        block.reasons.append(f"rows {block.min_row + depth}-{block.min_row + depth + extra - 1} "
                             "are styled like the header rows above plain data")
        return depth + extra
    return depth


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
    cells = [k for r in range(block.min_row, last_frozen + 1) for k in _row_cells(ctx, block, r)]
    styles = {_band_style(ctx, k) for k in cells}
    if not all(ctx.is_string(k) for k in cells) or len(styles) > 1:
        return 0
    return depth


def _data_rows(ctx: _Ctx, block: Block) -> None:
    """Summary rows, repeated header rows and row-group labels of a table's data rows."""
    occupied = ctx.occupied
    cols = [c.col for c in block.columns]
    if not cols:
        return
    leaf = block.min_row + block.header_row_count - 1
    header = {c: ctx.text((leaf, c)) for c in cols
              if block.header_row_count and (leaf, c) in occupied}
    data: list[int] = []
    for r in range(leaf + 1, block.max_row + 1):
        cells = {c: ctx.text((r, c)) for c in cols if (r, c) in occupied}
        if not cells:
            continue
        if len(header) >= 2 and cells == header:
            block.skip_rows.append(r)
            continue
        first = cells[min(cells)]
        if is_total_row(first):
            block.total_rows.append(r)
            continue
        data.append(r)
    if block.skip_rows:
        block.reasons.append("rows repeating the header (not data): "
                             + ", ".join(map(str, block.skip_rows)))
    if block.total_rows:
        block.reasons.append("summary rows kept in the table: " + ", ".join(map(str, block.total_rows)))
    # row-group labels: leftmost column labelled only on the first row of each group
    c0 = cols[0]
    if len(cols) < 2 or len(data) < 2 or (data[0], c0) not in occupied:
        return
    labelled = [r for r in data if (r, c0) in occupied]
    blank = [r for r in data if (r, c0) not in occupied]
    if not blank or not all(ctx.is_string((r, c0)) for r in labelled):
        return
    if all(any((r, c) in occupied for c in cols[1:]) for r in data):
        block.row_group_col = c0
        block.reasons.append(
            f"column {column_letter(c0)} holds row-group labels only on the first row of each "
            f"group ({len(labelled)} groups over {len(data)} rows): fill down")


def is_total_row(first_text: str | None) -> bool:
    """Whether a row whose first non-empty cell reads ``first_text`` is a summary row
    (Total, Subtotal, Grand total, 合計, 小計, 総計...)."""
    return bool(first_text and TOTAL_RE.search(first_text))
