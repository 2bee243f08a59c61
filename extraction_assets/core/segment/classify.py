"""What a region is: titles peeled off, tables, notes, headings and text (:func:`classify_region`)."""

from __future__ import annotations

from bisect import bisect_left

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import cell_ref
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.segment.context import (
    RegionRows,
    SheetContext,
    as_numpy,
    band_styles,
    make_block,
    row_texts,
    size_label,
    styled_cells,
    year_labels,
)
from extraction_assets.core.segment.forms import key_value_block
from extraction_assets.core.segment.rules import (
    LONG_NOTE,
    NOTE_RE,
    UNIT_RE,
    is_label,
    is_total_row,
    is_unit,
    is_unit_word,
    reads_as_prose,
)
from extraction_assets.core.segment.signals import header_like, is_group_header, is_units_row
from extraction_assets.core.segment.totals import aggregates_above


def classify_region(ctx: SheetContext, cells: np.ndarray, join_reasons: list[str]) -> list[Block]:
    rows = RegionRows(ctx, cells)
    order = list(rows.order)
    out: list[Block] = []
    wide = rows.n_logical >= 2  # by index in rows.order; order stays a run of it
    if not wide.any():
        return text_blocks(ctx, rows, order)

    def peelable() -> bool:
        base = rows.index(order[0])
        if len(order) >= 3 and int(wide[base:base + len(order)].sum()) >= 2:
            return True
        first = ctx.logical(rows[order[0]])
        return (len(order) >= 2 and len(first) == 1 and not is_label(ctx.text(first[0]))
                and key_value_block(ctx, rows, order[1:], []) is not None)

    # peel single-cell leading rows off a wider region (or off a form) as titles / headings
    captioned = None  # the header row under a caption (:func:`caption_above_header`)
    while peelable():
        first = ctx.logical(rows[order[0]])
        units = [p for p in first.tolist() if is_unit(ctx.text(p))]
        if units and len(first) - len(units) == 1:
            # a title line with a unit line on the same row
            refs = {cell_ref(*ctx.rc(u)) for u in units}
            line = rows[order[0]]
            in_unit = np.array([p in units or ctx.merged_from(p) in refs for p in line.tolist()])
            out.append(make_block(ctx, line[in_unit], BlockKind.TEXT, ["unit line above the table"]))
            rows[order[0]] = line[~in_unit]
            first = ctx.logical(rows[order[0]])
        if len(first) != 1:
            why = caption_above_header(ctx, rows, order)
            if why:
                out.extend(caption_blocks(ctx, first, why))
                order.pop(0)
                captioned = order[0]
                continue
            break
        if is_group_header(ctx, rows, order, first[0]):
            break
        level = ctx.level(first[0])
        text = ctx.text(first[0])
        if UNIT_RE.match(text) and len(text) <= 40:
            out.append(make_block(ctx, rows[order[0]], BlockKind.TEXT, ["unit line above the table"]))
            order.pop(0)
            continue
        why = ("single cell above a wider row" if ctx.merge_width(first[0]) == 1
               else "merged single cell above a wider row (title, not a header row)")
        block = make_block(ctx, rows[order[0]], BlockKind.TITLE, [why])
        if level is not None:
            block.level = level
            block.reasons.append(f"heading H{level}: bold {size_label(ctx, first[0])} pt")
        out.append(block)
        order.pop(0)
    # label/value lines above a header row: a form of their own, then the table
    pairs = 0
    while pairs < len(order) - 2:
        line = ctx.logical(rows[order[pairs]])
        if len(line) != 2 or not ctx.is_string(line[0]) or not is_label(ctx.text(line[0])):
            break
        pairs += 1
    if pairs and header_like(ctx, rows, order, pairs) and \
            key_value_block(ctx, rows, order, []) is None:
        form = key_value_block(ctx, rows, order[:pairs], [])
        if form is not None:
            form.reasons.append(f"label/value lines above the header row {order[pairs]}")
            out.append(form)
            del order[:pairs]
    # a single-cell row followed by a new header row starts another table (a section label
    # over a units row stays inside it)
    base = rows.index(order[0])
    singles = (np.flatnonzero(rows.n_logical[base + 2:base + len(order) - 2] == 1) + 2).tolist()
    first_col = rows.col_span(order)[0] if singles else 0
    for idx in singles:
        (p,) = ctx.logical(rows[order[idx]])
        text = ctx.text(p)
        if not is_total_row(text) and not is_label(text) and not is_units_row(
                ctx, rows[order[idx + 1]], first_col):
            why = header_like(ctx, rows, order, idx + 1)
            if why:
                out.extend(classify_region(ctx, rows.cells_of(order[:idx]), join_reasons))
                below = classify_region(ctx, rows.cells_of(order[idx:]), [])
                for block in below:
                    if block.kind == BlockKind.TABLE:
                        block.reasons.append(f"split from the table above: {why}")
                out.extend(below)
                return out
    # the header repeated after a total row, a second border box or a second header row
    # styled as the first starts the next table
    split = (repeated_header_after_total(ctx, rows, order)
             or stacked_border_boxes(ctx, rows, order) or second_header_row(ctx, rows, order))
    if split:
        idx, why = split
        out.extend(classify_region(ctx, rows.cells_of(order[:idx]), join_reasons))
        below = classify_region(ctx, rows.cells_of(order[idx:]), [])
        for block in below:
            if block.kind == BlockKind.TABLE:
                block.reasons.append(why)
        return out + below
    if len(order) < 2 or not wide[base:base + len(order)].any():
        form = key_value_block(ctx, rows, order, join_reasons) if order else None
        return out + ([form] if form else text_blocks(ctx, rows, order))
    # trailing notes (with the rows a note merged over several rows covers)
    notes: list[int] = []
    while len(order) > 2:
        covered = []
        while len(order) > 3 and not rows.n_logical[rows.index(order[-1])] \
                and not rows.is_replaced(order[-1]):
            covered.insert(0, order.pop())
        why = note_row(ctx, rows, order)
        if not why:
            order.extend(covered)
            break
        notes[:0] = [order.pop(), *covered]
        note_why = why
    rest = rows.cells_of(order)
    r0, c0, r1, c1 = ctx.bbox(rest)
    form = key_value_block(ctx, rows, order, join_reasons)
    prose = None if form else prose_header(ctx, rows, order)
    if form:
        out.append(form)
    elif prose:
        out.append(make_block(ctx, rest, BlockKind.TEXT, [prose, *join_reasons]))
    elif r1 > r0 and c1 > c0 and len(ctx.logical(rest)) >= 2:
        table = make_block(ctx, rest, BlockKind.TABLE, [
            "connected region of non-empty cells", f"{r1 - r0 + 1} rows x {c1 - c0 + 1} columns",
            *join_reasons])
        if r0 == captioned:
            table.header_row_count = 1  # at least: the caption rule read row r0 as the header
        out.append(table)
    else:
        out.extend(text_blocks(ctx, rows, order))
    if notes:
        out.append(make_block(ctx, rows.cells_of(notes), BlockKind.TEXT,
                               [f"note under the table: {note_why}"]))
    return out


#: Most rows under a prose header cell :func:`prose_header` reads.
PROSE_ROWS = 200


def prose_header(ctx: SheetContext, rows: RegionRows, order: list[int]) -> str | None:
    """Why a region of text is prose, not a table (``None`` if it may be a table): its first
    row of several cells holds a cell that reads as prose (:func:`~.rules.reads_as_prose`), no
    cell of the region holds a number or date, and the column of that cell holds prose in at
    least half of the (first :data:`PROSE_ROWS`) rows below that reach it. A column header is
    a label, not a sentence: annotation text (a label, then a sentence, row after row) is
    ``text``; a header row asking questions over short answers stays a table's."""
    head = next((r for r in order if len(ctx.logical(rows[r])) >= 2), None)
    if head is None or ctx.typed[ctx.logical(rows.cells_of(order))].any():
        return None
    first = ctx.logical(rows[head])
    cols = [int(ctx.col[p]) for p in first.tolist() if reads_as_prose(ctx.text(p))]
    if not cols:
        return None
    i = order.index(head)
    below = ctx.logical(rows.cells_of(order[i + 1:i + 1 + PROSE_ROWS]))
    below = below[ctx.col[below] == cols[0]]
    prose = sum(reads_as_prose(t) for t in ctx.texts_of(below))
    if not len(below) or 2 * prose < len(below):
        return None
    return (f"row {head} reads as prose, not column labels, over text rows holding prose in "
            f"its column ({prose} of {len(below)}): text, not a table")


def caption_above_header(ctx: SheetContext, rows: RegionRows, order: list[int]) -> str | None:
    """Why the first row of ``order`` is a caption above the table's header row (``None`` if it
    is not): two or three unmerged text cells side by side from the region's first column
    (``Volumes | MMBtu``), directly above a row spanning the table's columns (from that first
    column to the last column of the five rows below it) that starts with a text cell and
    holds text, dates or year labels (no other numbers) in at least two more columns beyond
    the caption, over numbers in those columns within the next five rows. A header row naming
    only the first columns of a table whose next row names them all is a caption (a title and
    its unit)."""
    if len(order) < 3 or order[1] != order[0] + 1:
        return None
    first, second = ctx.logical(rows[order[0]]), ctx.logical(rows[order[1]])
    cols = ctx.col[first]
    if not (2 <= len(first) <= 3 and len(second) >= 3 and bool(ctx.is_str[first].all())
            and np.array_equal(cols, np.arange(cols[0], cols[0] + len(first)))
            and all(ctx.merge_width(p) == 1 for p in first.tolist())
            and ctx.col[second[0]] == cols[0] and ctx.is_string(second[0])):
        return None
    beyond = second[ctx.col[second] > cols[-1]]
    numbers = ctx.typed[second] & ~ctx.is_date[second]
    if len(beyond) < 2 or not year_labels(ctx, second[numbers]).all():
        return None
    below = ctx.logical(rows.cells_of(order[2:7]))
    if (cols[0] != rows.col_span(order)[0]
            or ctx.col[second[-1]] < (ctx.col[below].max() if len(below) else 0)):
        return None  # the header row spans the table's columns, the caption starts with it
    below = below[ctx.typed[below] & ~ctx.is_date[below]]
    named = np.isin(ctx.col[beyond], ctx.col[below])
    if 2 * int(named.sum()) < len(beyond):
        return None
    return (f"row {order[0]} ({len(first)} cells) names only the first columns of the header "
            f"row {order[1]} below it, which names {len(second)} over numbers: a caption")


def caption_blocks(ctx: SheetContext, cells: np.ndarray, why: str) -> list[Block]:
    """The blocks of a caption row (:func:`caption_above_header`): a ``title`` of its cells,
    and when its last cell names a unit (:func:`is_unit_word`) that cell as a ``text`` block
    whose ``unit`` is its text (the unit of the table under it, see
    :func:`~.titles.attach_titles`)."""
    last = cells[-1:]
    if not is_unit_word(ctx.text(last[0])):
        return [make_block(ctx, cells, BlockKind.TITLE, [why])]
    unit = make_block(ctx, last, BlockKind.TEXT, [why, "unit beside the caption"])
    unit.unit = unit.text
    return [make_block(ctx, cells[:-1], BlockKind.TITLE, [why]), unit]


def repeated_header_after_total(ctx: SheetContext, rows: RegionRows, order: list[int]
                                 ) -> tuple[int, str] | None:
    """Where a region's first row of several cells (its header) comes again, at least 80 % of
    its labels (two or more) in the same columns, within two rows under a row holding an
    aggregate formula over the rows above (a total row): ``(index in order, reason)`` of the
    first such row, else ``None``. A header repeated without a total above it (a page break's
    repetition) stays inside the table."""
    first = next((i for i, r in enumerate(order) if len(ctx.logical(rows[r])) >= 2), None)
    if first is None:
        return None
    head = row_texts(ctx, rows[order[first]])
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
        hit[at] = as_numpy(pc.fill_null(pc.equal(ctx.texts.take(pa.array(cells[at], pa.int64())),
                                            text), False))
    candidates = sorted(set(ctx.row[cells[hit]].tolist()))
    for idx in [bisect_left(order, r) for r in candidates]:
        texts = row_texts(ctx, rows[order[idx]])
        if sum(texts.get(c) == t for c, t in head.items()) < need:
            continue
        for above in order[max(first + 1, idx - 2):idx]:
            cells = ctx.logical(rows[above])
            formulas = ctx.formula.take(pa.array(cells[ctx.has_formula[cells]], pa.int64()))
            if any(aggregates_above(f, above) for f in formulas.to_pylist()):
                return idx, (f"row {order[idx]} repeats the header of the table above under its "
                             f"total row {above}: the next table of a stack")
    return None


def second_header_row(ctx: SheetContext, rows: RegionRows, order: list[int]
                      ) -> tuple[int, str] | None:
    """Where a second header row starts the next table of a stack with no empty row between
    them: ``(index in order, reason)`` of the first such row, else ``None``. The region's
    first row of several cells (its header) is styled (bold or filled); the second is a row of
    text labels only across at least 80 % as many columns, styled as the first (same bold and
    fill), under a data row (numbers or dates, not styled so), heading rows of numbers or
    dates (:func:`~.signals.header_like`), and not a repeat of the first's labels (a header
    repeated at a page break stays inside its table). Column-wise over the region; only rows
    passing the per-row counts are looked at one by one."""
    cells = rows.cells_of(order)
    if len(order) < 5 or not len(cells):
        return None
    r = ctx.row[cells]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    if len(starts) != len(order):
        return None
    owns = ctx.owns[cells].astype(np.int64)
    n = np.add.reduceat(owns, starts)
    first = int(np.argmax(n >= 2))
    head = ctx.logical(rows[order[first]])
    if n[first] < 2 or not styled_cells(ctx, head).all():
        return None
    style, labels = band_styles(ctx, head), row_texts(ctx, head)
    text = np.add.reduceat(owns * ctx.is_str[cells], starts)
    styled = np.add.reduceat(owns * styled_cells(ctx, cells), starts)
    candidates = (n >= max(2, -(-4 * len(head) // 5))) & (text == n) & (styled == n)
    candidates[:first + 2] = False
    candidates[-1] = False
    for k in np.flatnonzero(candidates).tolist():
        row, above = ctx.logical(rows[order[k]]), ctx.logical(rows[order[k - 1]])
        if band_styles(ctx, row) != style or styled_cells(ctx, above).all() or not (
                ctx.typed[above] & ~year_labels(ctx, above)).any():
            continue
        texts = row_texts(ctx, row)
        if 5 * sum(texts.get(c) == t for c, t in labels.items()) >= 4 * len(labels):
            continue
        why = header_like(ctx, rows, order, k)
        if why:
            return k, (f"row {order[k]} is a second header row styled as the first under data "
                       f"rows: the next table of a stack ({why})")
    return None


def stacked_border_boxes(ctx: SheetContext, rows: RegionRows, order: list[int]
                         ) -> tuple[int, str] | None:
    """Where a region whose every value-carrying cell has a border falls into two border boxes
    stacked with no empty row between them: ``(index in order, reason)`` of the first row of
    the lower box, else ``None``. The lower box starts at a row whose columns (first to last
    cell) differ from the row's above and are exactly the columns of the rows from it down,
    unlike those of the rows above it (one box wider than the other), and that row reads as a
    header row (:func:`~.signals.header_like`: text over numbers or dates, or styled); each box
    has two rows or more, and the upper one holds numbers or dates (not year labels) under its
    first row (data rows: a header band whose row labels sit only in its last row is no box of
    its own). The normalized grid tells only whether a cell has a border (not which sides) and
    keeps no empty cell, so a box is the columns its bordered cells span."""
    cells = ctx.logical(rows.cells_of(order))
    if len(order) < 4 or not len(cells) or not ctx.border[cells].all():
        return None
    r = ctx.row[cells]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    if len(starts) != len(order):
        return None
    lo = np.minimum.reduceat(ctx.col[cells], starts)
    hi = np.maximum.reduceat(ctx.col[cells], starts)
    top_lo, top_hi = np.minimum.accumulate(lo), np.maximum.accumulate(hi)
    low_lo = np.minimum.accumulate(lo[::-1])[::-1]
    low_hi = np.maximum.accumulate(hi[::-1])[::-1]
    edge = ((lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])) & (lo[1:] == low_lo[1:]) \
        & (hi[1:] == low_hi[1:]) & ((top_lo[:-1] != low_lo[1:]) | (top_hi[:-1] != low_hi[1:]))
    values = ctx.typed[cells] & ~year_labels(ctx, cells)  # a year label heads columns
    typed_rows = np.flatnonzero(np.add.reduceat(values.astype(np.int64), starts))
    for k in (np.flatnonzero(edge) + 1).tolist():
        if 2 <= k <= len(order) - 2 and len(typed_rows) and 0 < typed_rows[0] < k:
            why = header_like(ctx, rows, order, k)
            if why:
                return k, (f"row {order[k]} starts a border box of columns {int(lo[k])}-"
                           f"{int(hi[k])} under one of columns {int(top_lo[k - 1])}-"
                           f"{int(top_hi[k - 1])}: the next table of a stack ({why})")
    return None


def note_row(ctx: SheetContext, rows: RegionRows, order: list[int]) -> str | None:
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
    if ctx.col[p] == min_col and len(text) >= LONG_NOTE:
        inner = ctx.logical(rows.cells_of(order[1:-1]))
        first_column = inner[ctx.col[inner] == min_col]
        longest = pc.max(pc.utf8_length(ctx.texts.take(pa.array(first_column, pa.int64())))).as_py()
        if len(text) > 2 * (longest or 0):
            return f"row {last} is a long text line in the first column, other columns empty"
    return None


def is_heading_row(ctx: SheetContext, cells) -> bool:
    logical = ctx.logical(cells)
    return len(logical) == 1 and ctx.level(logical[0]) is not None


def text_blocks(ctx: SheetContext, rows: RegionRows, order: list[int]) -> list[Block]:
    """Blocks of a region that is not a table: heading lines and runs of text lines; a lone cell
    is a ``title``."""
    cells = rows.cells_of(order)
    logical_all = ctx.logical(cells)
    if len(logical_all) == 1:
        p = logical_all[0]
        block = make_block(ctx, cells, BlockKind.TITLE, ["single cell"])
        level = ctx.level(p)
        if level is not None:
            block.level = level
            block.reasons.append(f"heading H{level}: bold {size_label(ctx, p)} pt")
        return [block]
    # heading lines: rows of one value-carrying cell (a replaced row is checked as it is now)
    base = rows.index(order[0])
    candidates = set((np.flatnonzero(rows.n_logical[base:base + len(order)] == 1)).tolist())
    candidates |= {i for i, r in enumerate(order) if rows.is_replaced(r)}
    headings = [i for i in sorted(candidates) if is_heading_row(ctx, rows[order[i]])]
    out: list[Block] = []
    start = 0
    for i in headings + [len(order)]:
        if i > start:
            out.append(make_block(ctx, rows.cells_of(order[start:i]), BlockKind.TEXT,
                                   ["region too small for a table"]))
        if i == len(order):
            break
        (p,) = ctx.logical(rows[order[i]])
        level = ctx.level(p)
        block = make_block(ctx, rows[order[i]], BlockKind.TITLE,
                            [f"heading H{level}: bold {size_label(ctx, p)} pt"])
        block.level = level
        out.append(block)
        start = i + 1
    return out
