"""Forms: regions of label/value pairs become ``key_value`` blocks."""

from __future__ import annotations

import numpy as np

from extraction_assets.core.blocks import Block, BlockKind, Column
from extraction_assets.core.segment.context import (
    RegionRows,
    SheetContext,
    is_year_label,
    make_block,
)
from extraction_assets.core.segment.rules import is_label, reads_as_prose
from extraction_assets.core.segment.signals import UniqueLabels, header_like


def key_value_block(ctx: SheetContext, rows: RegionRows, order: list[int],
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
      one type; or
    * there are three or more pairs, each a label and prose (:func:`prose_pairs`): annotation
      text, label / sentence lines.
    """
    if not order:
        return None
    if not_a_form(ctx, rows, order):
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
            if not (ctx.is_string(label) and is_label(ctx.text(label))):
                return None
            value = cells[i + 1] if i + 1 < len(cells) and not (
                ctx.is_string(cells[i + 1]) and is_label(ctx.text(cells[i + 1]))) else None
            pairs.append((label, value))
            i += 2 if value is not None else 1
    labels = [ctx.text(k) for k, _ in pairs]
    values = [v for _, v in pairs if v is not None]
    if not values or any(v is None and not is_label(ctx.text(k)) for k, v in pairs):
        return None  # a lone line that is no blank field (a title, a note) is not a pair
    colons = sum(is_label(t) for t in labels)
    why = None
    if colons * 2 >= len(labels) and (single or colons == len(labels)):
        why = f"{colons} of {len(labels)} labels end with a colon"
    elif (single and len(pairs) >= 2 and len({int(ctx.col[k]) for k, _ in pairs}) == 1
          and len({int(ctx.col[v]) for v in values}) == 1):
        if (all(ctx.bold[k] for k, _ in pairs) and not any(ctx.bold[v] for v in values)):
            why = "bold labels in one column, each followed by a plain value"
        elif (len(pairs) >= 3 and len(set(labels)) == len(labels)
              and not header_like(ctx, rows, order, 0)):
            types = {bool(ctx.is_str[v]) for v in values[1:]}
            typed = any(ctx.typed[v] for v in values[1:])
            if True in types and typed:
                why = ("unique labels in one column; the values mix text with numbers or dates "
                       "(a table column keeps one type)")
        if (why is None and len(set(labels)) == len(labels) and pairs[0][1] is not None
                and ctx.typed[pairs[0][1]] and not is_year_label(ctx, pairs[0][1])):
            why = ("unique labels in one column, the first followed by a number or date: no "
                   "header row, label/value pairs")
        if why is None and len(pairs) >= 3 and prose_pairs(ctx, pairs):
            why = ("short labels in one column, each followed by prose (the first too: no "
                   "header row, column headers are labels, not sentences)")
    if why is None:
        return None
    cells = rows.cells_of(order)
    block = make_block(ctx, cells, BlockKind.KEY_VALUE, [f"form of {len(pairs)} label/value pairs: {why}",
                                                  *join_reasons])
    labels = UniqueLabels()
    lines = []
    for label, value in pairs:
        text = ctx.text(label)
        name = text.rstrip(":：").strip() if is_label(text) else text
        key = labels.unique(name)
        where = ctx.rc(value) if value is not None else (
            int(ctx.row[label]), int(ctx.col[label]) + ctx.merge_width(label))
        block.columns.append(Column(where[1], key, [name], row=where[0]))
        lines.append(f"{name}: {ctx.text(value) if value is not None else ''}".rstrip())
    block.text = "\n".join(lines)
    return block


def prose_pairs(ctx: SheetContext, pairs: list[tuple[int, int | None]]) -> bool:
    """Whether label/value ``pairs`` are annotation text: every value a text, the first and at
    least four in five reading as prose (:func:`~.rules.reads_as_prose`), no label reading as
    prose. The first value being prose rules out a header row above label/description rows."""
    if any(v is None or not ctx.is_string(v) or reads_as_prose(ctx.text(k)) for k, v in pairs):
        return False
    prose = [reads_as_prose(ctx.text(v)) for _, v in pairs]
    return prose[0] and 5 * sum(prose) >= 4 * len(prose)


def not_a_form(ctx: SheetContext, rows: RegionRows, order: list[int]) -> bool:
    """Whether some row of ``order`` already rules out a form, checked column-wise: a row with
    no value-carrying cell, or whose first one is no text, or with three or more whose first
    is no label ending with a colon (what :func:`key_value_block` would stop at)."""
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
    return len(many) > 0 and not all(is_label(t) for t in ctx.texts_of(many[:64]))
