"""The data rows of a table: repeated headers, total rows (see :mod:`..totals`), group label rows
and row-group columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.blocks import Block, Column
from extraction_assets.core.segment.context import SheetContext, as_numpy, band_styles, styled_cells
from extraction_assets.core.segment.rules import AGGREGATE_HINT, TOTAL_WORDS
from extraction_assets.core.segment.signals import UniqueLabels
from extraction_assets.core.totals import (
    TOTAL_HINT_RE,
    TOTAL_LABEL_RE,
    ColumnSums,
    aggregates_above,
)


def mark_data_rows(ctx: SheetContext, block: Block) -> None:
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
        same[where] = as_numpy(pc.equal(ctx.texts.take(pa.array(cells[where], pa.int64())),
                                   header_texts.take(pa.array(j[where], pa.int64()))))
        repeat = (per_row == len(header)) & (np.add.reduceat(same, starts) == per_row)
    total = find_total_rows(ctx, block, cells, starts, ~repeat)
    data = ~repeat & ~total
    block.skip_rows.extend(numbers[repeat].tolist())
    block.total_rows = sorted(set(block.total_rows) | set(numbers[total].tolist()))
    if block.skip_rows:
        block.reasons.append("rows repeating the header (not data): "
                             + ", ".join(map(str, block.skip_rows)))
    group = group_rows_of(ctx, block, cells, starts, data)
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
            labels = UniqueLabels()
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
    # row-group labels: leftmost column labelled only on the first row of each group, and at
    # least half the groups over two or more rows
    c0 = cols[0]
    at_c0 = col == c0
    labelled = np.add.reduceat(at_c0, starts) > 0
    if len(cols) < 2 or int(data.sum()) < 2 or not labelled[np.argmax(data)]:
        return
    label_is_text = np.add.reduceat(at_c0 & ctx.is_str[cells], starts) > 0
    blank = data & ~labelled
    if not blank.any() or not label_is_text[data & labelled].all():
        return
    # most groups run over several rows: one unlabelled row among labelled ones is a value
    # missing from that row, not a group to fill
    shown = labelled[data]
    if 2 * int((shown[:-1] & ~shown[1:]).sum()) < int(shown.sum()):
        return
    if (np.add.reduceat(~at_c0, starts) > 0)[data].all():
        block.row_group_cols = [c0]
        block.reasons.append(
            f"column {column_letter(c0)} holds row-group labels only on the first row of each "
            f"group ({int((data & labelled).sum())} groups over {int(data.sum())} rows): fill down")


#: Most single-cell rows of a table looked at as group labels (a sparse table has more).
_MAX_GROUP_CANDIDATES = 10_000


def group_rows_of(ctx: SheetContext, block: Block, cells: np.ndarray, starts: np.ndarray,
                data: np.ndarray) -> np.ndarray:
    """Which data rows of a table are group labels (bool array over the rows ``starts``
    indexes): rows whose only value is a text in one of the table's first two columns (no
    number or date shown blank by its format beside it: a row of hidden zeros is data),
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
        if ctx.has_blank_values(int(ctx.row[p]), block.min_col, block.max_col):
            continue
        row = cells[starts[nxt]:ends[nxt]]
        same = row[ctx.col[row] == ctx.col[p]]
        label = np.array([p])
        if not len(same) or (styled_cells(ctx, label)[0]
                             and band_styles(ctx, label) != band_styles(ctx, same[:1])):
            out[i] = True
    return out


def find_total_rows(ctx: SheetContext, block: Block, cells: np.ndarray, starts: np.ndarray,
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
    found = np.flatnonzero(as_numpy(pc.fill_null(pc.match_substring_regex(texts, TOTAL_WORDS), False)))
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
        agg = np.flatnonzero(as_numpy(pc.fill_null(pc.match_substring_regex(
            formulas, AGGREGATE_HINT), False)))
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
