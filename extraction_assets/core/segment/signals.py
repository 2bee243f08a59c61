"""Signals of header rows and parent headers (merges grouping the columns below), and unique column
labels."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from extraction_assets.core.a1 import column_letter, parse_range
from extraction_assets.core.segment.context import (
    RegionInfo,
    RegionRows,
    SheetContext,
    cell_style,
    is_year_label,
    styled_cells,
    year_labels,
)
from extraction_assets.core.segment.rules import MAX_HEADER_ROWS, UNIT_TEXT_CHARS, is_unit_word


def header_like(ctx: SheetContext, rows, order: list[int], idx: int) -> str | None:
    """Why row ``order[idx]`` reads as a header row of the rows below it (``None`` if it does not):
    several text cells above numeric/date values in their columns, or a bold or filled row
    above plain rows. A styled row (every cell bold or filled) of text and year labels
    (``Calendar year | 2002 | 2003``) counts as text."""
    r = order[idx]
    cells = ctx.logical(rows[r])
    below = order[idx + 1:idx + 6]
    if len(cells) < 2 or not below or not ctx.is_str[cells].any():
        return None
    if not ctx.is_str[cells].all() and not (styled_cells(ctx, cells).all() and all(
            is_year_label(ctx, p) for p in cells[~ctx.is_str[cells]].tolist())):
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


def is_units_row(ctx: SheetContext, cells: np.ndarray, first_col: int) -> bool:
    """Whether the value-carrying ``cells`` of one row read as a units row: short texts only,
    none in column ``first_col`` (where row labels sit), every one a unit word
    (:func:`~.rules.is_unit_word`: ``%``, ``grams``, ``$ thousands``) or all the same text
    (``% | % | %``, or one cell merged across the columns)."""
    logical = ctx.logical(cells)
    if not len(logical) or not ctx.is_str[logical].all() or (ctx.col[logical] == first_col).any():
        return False
    texts = ctx.texts_of(logical)
    return all(len(t) <= UNIT_TEXT_CHARS for t in texts) and (
        len(set(texts)) == 1 or all(is_unit_word(t) for t in texts))


def styled_like_row_below(ctx: SheetContext, p, side: RegionInfo) -> bool:
    """Whether the lone cell ``p`` is merged across columns and styled exactly like the cells
    under it in the next row (a parent header, not a title)."""
    if ctx.merge_width(p) < 2:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range(p))
    i = bisect_right(side.order, int(ctx.row[p]))
    if i == len(side.order):
        return False
    below = [q for q in ctx.logical(side.rows[side.order[i]]) if c1 <= ctx.col[q] <= c2]
    return len(below) >= 2 and all(cell_style(ctx, q) == cell_style(ctx, p) for q in below)


def is_group_header(ctx: SheetContext, rows: RegionRows, order: list[int], p) -> bool:
    """Whether the lone cell ``p`` of the first row is a parent header: merged across columns,
    starting right of the region's first column, over the next row (:func:`groups_below`)."""
    if ctx.merge_width(p) < 2:
        return False
    min_col, max_col = rows.col_span(order)
    if ctx.col[p] <= min_col:
        return False
    _, c1, _, c2 = parse_range(ctx.merge_range(p))
    return groups_below(ctx, order[1], c1, c2, (min_col, max_col))


def header_text(text: str) -> str:
    """A header cell's text as a label: line breaks and runs of white space become one space
    (a header wrapped over two lines in its cell is one label)."""
    return " ".join(text.split())


def placeholder_header(col: int) -> str:
    """The label of sheet column ``col`` (1-based) when its header rows name nothing:
    ``Column B``, its letter."""
    return f"Column {column_letter(col)}"


class UniqueLabels:
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


def groups_below(ctx: SheetContext, below_row: int, c1: int, c2: int, span: tuple[int, int],
                  depth: int = MAX_HEADER_ROWS - 1) -> bool:
    """Whether a merged range over columns ``c1..c2`` is a parent header of ``below_row``, a
    row with no numbers or dates between columns ``span``: two or more text cells (or year
    labels, ``2004 | 2015``) under it, or
    one merged text cell of exactly its columns that is itself the parent of the row below it
    (parents stacked over one another, at most ``depth`` rows down). A list whose rows are all
    merged across the same columns (``A2:B2``, ``A3:B3``...) is data, not a stack of parents:
    a merge groups columns only where some row below holds distinct cells under it."""
    below = ctx.logical(ctx.cells_in(below_row, c1, below_row, c2))
    if len(below) >= 2:
        row = ctx.cells_in(below_row, span[0], below_row, span[1])
        return bool((ctx.is_str[below] | year_labels(ctx, below)).all()) and not bool(
            (ctx.typed[row] & ~year_labels(ctx, row)).any())
    if len(below) != 1 or not ctx.is_string(below[0]) or depth <= 1:
        return False
    rng = ctx.merge_range(below[0])
    return (bool(rng) and parse_range(rng)[1::2] == (c1, c2) and not bool(
        ctx.typed[ctx.cells_in(below_row, span[0], below_row, span[1])].any())
        and groups_below(ctx, below_row + 1, c1, c2, span, depth - 1))
