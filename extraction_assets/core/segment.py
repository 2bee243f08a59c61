"""Find the blocks of a sheet: tables with their header rows, titles and text.

First-level rules (deterministic, no model):

* Non-empty cells (display text not blank) are grouped into connected regions with
  8-neighbourhood; regions whose bounding boxes overlap are joined, so a sparse table with holes
  stays one table and several tables separated by empty rows or columns come out separately.
* Leading rows of a region that hold a single cell (or one merged range) are peeled off as
  ``title`` blocks while at least two rows of the region hold several cells.
* A region of at least two rows and two columns is a ``table``; a single text cell directly above
  a table (at most two rows up, overlapping its columns) is that table's title; anything else is
  ``text``.
* A table's header is its first row, extended downwards while a merged range anchored in the
  header spans more rows or groups columns over a sub-header row (at most three rows). Each
  column's header is the path of its non-empty, non-repeated header levels joined by
  ``" > "``; a column with no header is named by its letter; repeated labels get `` (2)``,
  `` (3)``... Columns covered by a horizontal merge in the leaf header row, and fully empty
  columns, are not columns of the table.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from dataclasses import dataclass, field

from .a1 import column_letter, parse_cell_ref, parse_range, range_ref
from .normalize import StyledGrid

TOTAL_RE = re.compile(r"^\s*((grand|sub)[\s-]*)?totals?\b|^\s*(合計|小計|総計|累計)", re.IGNORECASE)


@dataclass
class Column:
    """One column of a table block: 1-based sheet column, flattened header and its levels."""

    col: int
    header: str
    header_levels: list[str]


@dataclass
class Block:
    """A detected block. Bounds are 1-based and inclusive; ``heading_path`` starts with the sheet
    name; ``reasons`` lists the signals that decided the block's kind and extent."""

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

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


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
    regions = list(groups.values())
    # join regions whose bounding boxes overlap (sparse tables with holes)
    boxes = [_bbox(g) for g in regions]
    changed = len(regions) <= 2000
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
    return [sorted(g) for g in regions]


def _bbox(cells: list[tuple[int, int]]) -> tuple[int, int, int, int]:
    rows = [r for r, _ in cells]
    cols = [c for _, c in cells]
    return min(rows), min(cols), max(rows), max(cols)


def _overlap(a, b) -> bool:
    return not (a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])


def segment_sheet(grid: StyledGrid) -> list[Block]:
    """Split one sheet's StyledGrid into blocks, ordered by top-left cell (row, then column).

    Cells in hidden rows or columns belong to no block (they are flagged ``hidden`` in the
    StyledGrid); hidden sheets are segmented too and callers decide what to render.
    """
    cols = grid.columns
    occupied: dict[tuple[int, int], int] = {}
    hidden = cols["hidden"]
    for i, text in enumerate(cols["display_text"]):
        if text is not None and text.strip() and not hidden[i]:
            occupied[(cols["row"][i], cols["col"][i])] = i
    if not occupied:
        return []
    blocks: list[Block] = []
    for region in _regions(occupied, grid.hidden_rows, grid.hidden_columns):
        blocks.extend(_classify(grid, occupied, region))
    blocks.sort(key=lambda b: (b.min_row, b.min_col))
    _attach_titles(blocks)
    for block in blocks:
        if block.kind == "table":
            _header(grid, occupied, block)
    return blocks


def _logical_cells(grid: StyledGrid, occupied, cells) -> list[tuple[int, int]]:
    """Cells that carry their own value (covered cells of a merge are not counted)."""
    merged_from = grid.columns["merged_from"]
    return [k for k in cells if merged_from[occupied[k]] is None]


def _classify(grid: StyledGrid, occupied, region) -> list[Block]:
    out: list[Block] = []
    rows: dict[int, list[tuple[int, int]]] = {}
    for r, c in region:
        rows.setdefault(r, []).append((r, c))
    ordered = sorted(rows)
    # peel single-cell leading rows off a wider region as titles
    wide = {r for r in ordered if len(_logical_cells(grid, occupied, rows[r])) >= 2}
    while len(ordered) >= 3:
        first = _logical_cells(grid, occupied, rows[ordered[0]])
        if len(first) == 1 and len(wide) >= 2:
            out.append(_make_block(grid, occupied, rows[ordered[0]], "title",
                                   ["single cell above a wider row"]))
            ordered.pop(0)
        else:
            break
    rest = [k for r in ordered for k in rows[r]]
    logical = _logical_cells(grid, occupied, rest)
    r0, c0, r1, c1 = _bbox(rest)
    if r1 > r0 and c1 > c0 and len(logical) >= 2:
        out.append(_make_block(grid, occupied, rest, "table",
                               ["connected region of non-empty cells", f"{r1 - r0 + 1} rows x {c1 - c0 + 1} columns"]))
    elif len(logical) == 1 and r0 == r1:
        out.append(_make_block(grid, occupied, rest, "title", ["single cell"]))
    else:
        out.append(_make_block(grid, occupied, rest, "text", ["region too small for a table"]))
    return out


def _make_block(grid: StyledGrid, occupied, cells, kind: str, reasons: list[str]) -> Block:
    r0, c0, r1, c1 = _bbox(cells)
    texts = grid.columns["display_text"]
    logical = sorted(_logical_cells(grid, occupied, cells))
    block = Block(grid.sheet_index, grid.sheet_name, kind, r0, c0, r1, c1, len(cells),
                  reasons=list(reasons))
    if kind != "table":
        lines: dict[int, list[str]] = {}
        for r, c in logical:
            lines.setdefault(r, []).append(texts[occupied[(r, c)]].strip())
        block.text = "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))
    return block


def _attach_titles(blocks: list[Block]) -> None:
    """Make a title or text line just above a table (<= 2 rows up, columns overlapping) its title."""
    for block in blocks:
        if block.kind != "table":
            continue
        candidates = [
            b for b in blocks
            if b.kind == "title" and b.max_row < block.min_row and block.min_row - b.max_row <= 2
            and not (b.max_col < block.min_col or b.min_col > block.max_col)
        ]
        if candidates:
            title = max(candidates, key=lambda b: (b.max_row, -b.min_col))
            block.title = title.text
            block.reasons.append(f"title from {title.a1_range}")
        block.heading_path = [block.sheet_name] + ([block.title] if block.title else [])
    for block in blocks:
        if block.kind != "table":
            block.heading_path = [block.sheet_name]


def _header(grid: StyledGrid, occupied, block: Block) -> None:
    cols = grid.columns
    texts, merged_from, merge_range = cols["display_text"], cols["merged_from"], cols["merge_range"]
    depth = 1
    for c in range(block.min_col, block.max_col + 1):
        i = occupied.get((block.min_row, c))
        if i is None or merge_range[i] is None:
            continue
        r1, c1, r2, c2 = parse_range(merge_range[i])
        span_rows = min(r2, block.max_row) - r1 + 1
        if span_rows > 1:
            depth = max(depth, span_rows)
            block.reasons.append(f"header merge {merge_range[i]} spans {span_rows} rows")
        elif c2 > c1 and r1 + 1 <= block.max_row and len(_logical_cells(
            grid, occupied, [(r1 + 1, cc) for cc in range(c1, c2 + 1) if (r1 + 1, cc) in occupied]
        )) >= 2:
            depth = max(depth, 2)
            block.reasons.append(f"header merge {merge_range[i]} groups the columns below it")
    depth = min(depth, 3, block.max_row - block.min_row)
    block.header_row_count = max(depth, 1)
    header_rows = range(block.min_row, block.min_row + block.header_row_count)
    leaf = header_rows[-1]
    seen: dict[str, int] = {}
    for c in range(block.min_col, block.max_col + 1):
        leaf_i = occupied.get((leaf, c))
        if leaf_i is not None and merged_from[leaf_i] is not None:
            if parse_cell_ref(merged_from[leaf_i])[0] == leaf:
                continue  # covered by a horizontal merge in the leaf header row
        if not any((r, c) in occupied for r in range(block.min_row, block.max_row + 1)):
            continue  # fully empty spacer column
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


def is_total_row(first_text: str | None) -> bool:
    """Whether a row whose first non-empty cell reads ``first_text`` is a summary row
    (Total, Subtotal, Grand total, 合計, 小計, 総計...)."""
    return bool(first_text and TOTAL_RE.search(first_text))
