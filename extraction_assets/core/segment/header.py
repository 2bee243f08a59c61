"""Header rows of a table and the header path of each column."""

from __future__ import annotations

import numpy as np

from extraction_assets.core.a1 import column_letter, parse_cell_ref, parse_range
from extraction_assets.core.blocks import Block, BlockKind, Column
from extraction_assets.core.segment.context import (
    SheetContext,
    band_styles,
    is_year_label,
    make_block,
    styled_cells,
    year_labels,
)
from extraction_assets.core.segment.rules import MAX_HEADER_ROWS, NUMBERING_RE, is_label
from extraction_assets.core.segment.signals import (
    UniqueLabels,
    groups_below,
    header_text,
    placeholder_header,
)


def find_header(ctx: SheetContext, block: Block, declared: int = 0) -> None:
    """Header rows and columns of a table block (see the module docstring). ``declared`` is
    the number of header rows the source declares (a document's table); the block's own
    ``header_row_count`` those the segmentation already read (the header row under a caption,
    :func:`~.classify.caption_above_header`): the header has at least the larger number of
    rows."""
    declared = max(declared, block.header_row_count)
    set_header_rows(ctx, block, _header_depth(ctx, block, declared))


def _header_depth(ctx: SheetContext, block: Block, declared: int = 0) -> int:
    depth = _merged_header_depth(ctx, block)
    depth = _styled_header_depth(ctx, block, depth)
    depth = _text_header_depth(ctx, block, depth)
    frozen = _frozen_header_depth(ctx, block)
    if frozen > depth:
        depth = frozen
        block.reasons.append(f"frozen pane at {ctx.grid.frozen_pane}: rows {block.min_row}-"
                             f"{block.min_row + depth - 1} stay on screen above the data")
    if depth < MAX_HEADER_ROWS and numbering_row(ctx, block, block.min_row + depth):
        block.reasons.append(f"row {block.min_row + depth} numbers the columns: a header row")
        depth += 1
    if declared > depth:
        depth = declared
        block.reasons.append(f"{declared} header rows declared (by the source, or by a "
                             "caption row above the header)")
    depth = min(depth, MAX_HEADER_ROWS, block.max_row - block.min_row)
    if depth <= 1 and not declared and _first_row_is_data(ctx, block):
        depth = 0
        block.reasons.append(f"row {block.min_row} holds numbers or dates like the rows below "
                             "(styled alike, or no text at all): no header row, columns named "
                             "by letter")
    else:
        depth = max(depth, 1)
        block.reasons.append(f"header rows {block.min_row}-{block.min_row + depth - 1}")
    return depth


def set_header_rows(ctx: SheetContext, block: Block, depth: int) -> None:
    """Make the first ``depth`` rows of a table block its header rows (0 to
    :data:`~.rules.MAX_HEADER_ROWS`, fewer than the block's rows) and build its columns: each
    column's header path from those rows (see the module docstring)."""
    block.header_row_count = depth
    header_rows = range(block.min_row, block.min_row + depth)
    leaf = block.min_row + depth - 1
    head = {ctx.rc(p): p for p in ctx.cells_in(block.min_row, block.min_col, leaf,
                                                block.max_col).tolist()}
    present = set(np.unique(ctx.col[ctx.cells_in(block.min_row, block.min_col, block.max_row,
                                                 block.max_col)]).tolist())
    labels = UniqueLabels()
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
        label = labels.unique(" > ".join(levels) if levels else placeholder_header(c))
        block.columns.append(Column(c, label, levels or [label]))


def trim_columns(ctx: SheetContext, block: Block) -> list[Block]:
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
            or before.header == placeholder_header(before.col)):
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
    notes_block = make_block(ctx, cells, BlockKind.TEXT, [f"notes beside the table {block.a1_range}"])
    notes_block.heading_path = list(block.heading_path)
    return [notes_block]


def numbering_row(ctx: SheetContext, block: Block, r: int) -> bool:
    """Whether row ``r`` of a table numbers its columns: three or more cells reading ``1 2 3``
    or ``(1) (2) (3)``, consecutive from left to right, under the header; numbers (not text)
    only when styled like a styled header row above (a first data row may read ``1 2 3``)."""
    if r >= block.max_row:
        return False
    cells = row_cells(ctx, block, r)
    if len(cells) < 3:
        return False
    above = row_cells(ctx, block, block.min_row, r - 1)
    if not ctx.is_str[cells].all() and not (
            len(above) and styled_cells(ctx, above).all()
            and band_styles(ctx, cells) == band_styles(ctx, above)):
        return False
    numbers = []
    for text in ctx.texts_of(cells):
        m = NUMBERING_RE.match(text)
        if m is None:
            return False
        numbers.append(int(m.group(1)))
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _first_row_is_data(ctx: SheetContext, block: Block) -> bool:
    """Whether a table's first row is a data row, not a header: it holds a number or date
    (not a year label) in a column holding one in the next row too, and it is styled like
    that row (bold and fill); or, whatever its style (banded rows alternate fills), it holds
    no text at all (:func:`_typed_like_below`)."""
    first = row_cells(ctx, block, block.min_row)
    after = next_row_cells(ctx, block, block.min_row + 1)
    if not len(first) or not len(after):
        return False
    typed = [p for p in first[ctx.typed[first]].tolist() if not is_year_label(ctx, p)]
    below = set(ctx.col[after[ctx.typed[after]]].tolist())
    if not any(int(ctx.col[p]) in below for p in typed):
        return False
    return (band_styles(ctx, first) == band_styles(ctx, after)
            or _typed_like_below(ctx, first, after, typed))


def _typed_like_below(ctx: SheetContext, first: np.ndarray, after: np.ndarray,
                      typed: list[int]) -> bool:
    """Whether a first row reads as data by its values alone: two or more cells, every one a
    number or date (none a year label) over a cell of the same kind (number / date) in the
    next row, and not column numbers ``1 2 3``. A header names its columns in words; a row of
    values only is the first record."""
    if len(first) < 2 or len(typed) != len(first):
        return False
    kind_below = {int(ctx.col[p]): bool(ctx.is_date[p]) for p in after[ctx.typed[after]].tolist()}
    if any(kind_below.get(int(ctx.col[p])) != bool(ctx.is_date[p]) for p in typed):
        return False
    numbers = [ctx.number[p] for p in typed]
    return not all(v == v and v == int(v) for v in numbers) or numbers != list(
        range(int(numbers[0]), int(numbers[0]) + len(numbers)))


def _merged_header_depth(ctx: SheetContext, block: Block) -> int:
    """Header rows implied by merges: a merged range anchored in the header that spans more
    rows (when the rows it spans hold no numbers or dates beside it: a row-group label merged
    down the data is no header), or groups columns over the row below (a parent header, see
    :func:`groups_below`)."""
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
            elif c2 > c1 and r1 + 1 <= block.max_row and groups_below(
                    ctx, r1 + 1, c1, c2, (block.min_col, block.max_col)):
                if r - block.min_row + 2 > depth:
                    depth = r - block.min_row + 2
                    block.reasons.append(f"header merge {rng} groups the columns below it")
        r += 1
    return depth


def row_cells(ctx: SheetContext, block: Block, r1: int, r2: int | None = None) -> np.ndarray:
    """Value-carrying cells of rows ``r1..r2`` (default just ``r1``) inside the block's columns."""
    return ctx.logical(ctx.cells_in(r1, block.min_col, r1 if r2 is None else r2, block.max_col))


def _styled_header_depth(ctx: SheetContext, block: Block, depth: int) -> int:
    """``depth`` extended by rows styled like header rows (every cell bold or filled) under
    styled header rows, when the first row below them holding numbers or dates shows them
    plain (a header band without merges). A band row may hold dates, year labels or column
    numbers (``1 2 3``) besides text, as report headers do."""
    first = row_cells(ctx, block, block.min_row, block.min_row + depth - 1)
    if not len(first) or not styled_cells(ctx, first).all():
        return depth
    extra = 0
    while depth + extra < MAX_HEADER_ROWS:
        r = block.min_row + depth + extra
        if ctx.is_hidden_row(r) and r < block.max_row:
            extra += 1
            continue
        cells = row_cells(ctx, block, r)
        if len(cells) < 2 or not styled_cells(ctx, cells).all():
            break
        numbers = cells[ctx.typed[cells] & ~ctx.is_date[cells]]
        if len(numbers) and not numbering_row(ctx, block, r) and not all(
                is_year_label(ctx, p) for p in numbers.tolist()):
            break
        extra += 1
    if not extra:
        return depth
    after = row_cells(ctx, block, block.min_row + depth + extra, block.max_row)
    after = after[ctx.typed[after]]
    if not len(after):
        return depth
    after = after[ctx.row[after] == ctx.row[after[0]]]
    if styled_cells(ctx, after).all():
        return depth
    block.reasons.append(f"rows {block.min_row + depth}-{block.min_row + depth + extra - 1} "
                         "are styled like the header rows above plain data")
    return depth + extra


def next_row_cells(ctx: SheetContext, block: Block, r: int) -> np.ndarray:
    """Value-carrying cells (inside the block's columns) of the first row from ``r`` down to
    the block's last row that holds any (empty when there is none)."""
    cells = row_cells(ctx, block, r, block.max_row)
    return cells[ctx.row[cells] == ctx.row[cells[0]]] if len(cells) else cells


def _text_header_depth(ctx: SheetContext, block: Block, depth: int) -> int:
    """``depth`` extended by rows of text only (or year labels) under the header rows, when
    the first row holding a number or date below them has one in a column each such row
    labels: a header of
    several plain rows (``Maximum | Annual`` over ``(lb/hr) | (tpy)``, a unit row under the
    labels), up to :data:`MAX_HEADER_ROWS` rows. A row of text whose columns hold text below
    (a group label over row labels) is data, and so are rows of text when they and the header
    row above fill every column the data uses (a header of several rows leaves cells empty).
    A row whose only cell is in the table's first column labels the rows under it (a
    row-group label), not the columns: the header stops above it."""
    extra = 0
    while depth + extra < MAX_HEADER_ROWS:
        cells = row_cells(ctx, block, block.min_row + depth + extra)
        if not len(cells) or is_label(ctx.text(cells[0])) or not (
                ctx.is_str[cells] | year_labels(ctx, cells)).all():
            break
        if len(cells) == 1 and ctx.col[cells[0]] == block.min_col and ctx.merge_width(
                cells[0]) == 1:
            break
        extra += 1
    if not extra:
        return depth
    after = row_cells(ctx, block, block.min_row + depth + extra, block.max_row)
    after = after[ctx.typed[after]]
    if not len(after):
        return depth
    # the first row of numbers or dates (a group label row may come between)
    typed = set(ctx.col[after[ctx.row[after] == ctx.row[after[0]]]].tolist())
    for r in range(block.min_row + depth, block.min_row + depth + extra):
        cols = set(ctx.col[row_cells(ctx, block, r)].tolist())
        if not cols & typed:
            extra = r - block.min_row - depth
            break
    if not extra:
        return depth
    # rows of a multi-row header leave cells empty (a parent over several columns, a
    # sub-label only where needed); rows of text filling every column are data
    columns = set(ctx.col[row_cells(ctx, block, block.min_row + depth + extra,
                                     block.max_row)].tolist())
    rows = range(block.min_row, block.min_row + depth + extra)
    if all(columns <= set(ctx.col[row_cells(ctx, block, r)].tolist()) for r in rows):
        return depth
    block.reasons.append(f"rows {block.min_row + depth}-{block.min_row + depth + extra - 1} "
                         "hold text over the columns of numbers or dates below: header rows")
    return depth + extra


def _frozen_header_depth(ctx: SheetContext, block: Block) -> int:
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
    cells = row_cells(ctx, block, block.min_row, last_frozen)
    if not ctx.is_str[cells].all() or len(band_styles(ctx, cells)) > 1:
        return 0
    return depth
