"""The data rows of a table: repeated headers, total rows (see :mod:`..totals`), group label rows
and row-group columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.blocks import Block, Column
from extraction_assets.core.segment.context import (
    SheetContext,
    as_numpy,
    band_styles,
    styled_cells,
    year_labels,
)
from extraction_assets.core.segment.rules import (
    AGGREGATE_HINT,
    TOTAL_WORDS,
    UNIT_TEXT_CHARS,
    reads_as_sentence,
)
from extraction_assets.core.segment.signals import (
    UniqueLabels,
    header_text,
    placeholder_header,
)
from extraction_assets.core.segment.totals import (
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
    units = unit_rows_of(ctx, block, cells, starts, data)
    if units.any():
        data &= ~units
        block.unit_rows = numbers[units].tolist()
        block.reasons.append("units rows (the unit of each column for the rows below, no "
                             "record): " + ", ".join(map(str, block.unit_rows[:20])))
        valued = np.add.reduceat((ctx.typed[cells] & ctx.owns[cells]).astype(np.int64),
                                 starts) > 0
        if not (data & valued & (numbers < block.unit_rows[0])).any():
            _consistent_units(ctx, block)
    group, levels = group_rows_of(ctx, block, cells, starts, data)
    _mark_groups(ctx, block, cells, starts, numbers, col, data, group, levels)
    block.row_label_cols = row_label_columns(ctx, block, cells, starts, data)


def _mark_groups(ctx: SheetContext, block: Block, cells: np.ndarray, starts: np.ndarray,
                 numbers: np.ndarray, col: np.ndarray, data: np.ndarray, group: np.ndarray,
                 levels: np.ndarray) -> None:
    """Group label rows (with their nesting levels) or, failing those, a row-group column of
    labels on the first row of each group: see :func:`mark_data_rows`."""
    cols = [c.col for c in block.columns]
    if group.any():
        block.group_rows = numbers[group].tolist()
        block.group_levels = levels[group].tolist()
        if max(block.group_levels) > 0:
            block.reasons.append(f"group labels nest {max(block.group_levels) + 1} levels deep")
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
                  data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which data rows of a table are group labels, and the nesting level of each (0 the
    outermost): ``(bool array, int array)`` over the rows ``starts`` indexes.

    A candidate is a row whose only value is a text in one of the table's first two columns
    (no number or date shown blank by its format beside it: a row of hidden zeros is data),
    not a sentence (:func:`~.rules.reads_as_sentence`: a paragraph is no label to fill down).
    A run of candidates (consecutive among the data rows) followed by a data row of two or
    more cells heads it when the run's last label is styled unlike that row's cell in its
    column (bold or filled where it is not), indented less than it, or that row leaves its
    column empty, or the label's row holds an empty band merged across the value columns
    (DECO's ``GroupHead``: a label row heading the rows under it); then every label of the
    run is a group label, the earlier ones the outer groups (``Aged 9 to 18 years`` over
    ``Food and beverages`` over the rows ``2004``, ``2015``). With none of these signals, a
    run of two or more labels is a group too where the table has two such runs or more (a
    hierarchy the sheet repeats), and so is a lone label there styled as one of their labels
    (bold, fill, size and indent alike).

    Levels: by the place of each label in its run, a run ending at the innermost level (the
    labels of a run nest; a lone label after data rows replaces the innermost group, a run of
    two its parent too); where the group labels are indented unlike one another, a run whose
    first label is indented as a label over the rows above starts at that label's level (its
    sibling: ``Region B`` after ``Region A`` > ``City 2``; of several such labels the one whose
    level is nearest the run's own), and one indented more than every
    such label starts under the innermost of them (``Sex`` under ``Including fruit juice``).
    The levels are shifted so that the outermost present is 0 (lone labels before the table's
    deepest run may all sit at level 1: ``Aged 2 to 8 years``, then ``Aged 19 years and
    older`` over ``Both sexes``); a level is compared with others, never a count of labels
    above (a lone label where the deepest run is longer may skip a level)."""
    out = np.zeros(len(starts), dtype=bool)
    level = np.zeros(len(starts), dtype=np.int64)
    logical = ctx.owns[cells]
    per_row = np.add.reduceat(logical.astype(np.int64), starts) if len(starts) else starts
    first_cols = [c.col for c in block.columns[:2]]
    firsts = cells[starts]
    candidates = np.flatnonzero(data & (per_row == 1) & ctx.is_str[firsts]
                                & np.isin(ctx.col[firsts], first_cols) & ctx.owns[firsts])
    if len(block.columns) < 2 or len(candidates) > _MAX_GROUP_CANDIDATES or not len(candidates):
        return out, level
    ends = np.r_[starts[1:], len(cells)]
    is_candidate = np.zeros(len(starts), dtype=bool)
    is_candidate[candidates] = True
    spanned = _blank_merged_rows(ctx, block)
    heading: list[tuple[list[int], bool]] = []  # runs above a data row, and their signal
    run: list[int] = []
    for i in np.flatnonzero(data).tolist():
        if is_candidate[i] and not ctx.has_blank_values(int(ctx.row[firsts[i]]), block.min_col,
                                                        block.max_col) and not reads_as_sentence(
                ctx.text(firsts[i])):
            run.append(i)
            continue
        if run and per_row[i] >= 2:
            heading.append((run, int(ctx.row[firsts[run[-1]]]) in spanned or _heads(
                ctx, firsts[run[-1]], cells[starts[i]:ends[i]])))
        run = []
    # with no style, indent or merged band to tell them, label rows nest where the sheet
    # repeats runs of two or more, and a lone label styled as one of those is a group too
    nested = sum(len(r) >= 2 for r, _ in heading) >= 2
    heads = [signal or (nested and len(r) >= 2) for r, signal in heading]
    keys = {_style_key(ctx, firsts[i]) for (r, _), ok in zip(heading, heads) if ok for i in r}
    runs = [r for (r, _), ok in zip(heading, heads) if ok or (
        nested and len(r) == 1 and _style_key(ctx, firsts[r[0]]) in keys)]
    if not runs:
        return out, level
    marked = [i for run in runs for i in run]
    out[marked] = True
    indents = ctx.indent[firsts].tolist()
    informative = len({indents[i] for i in marked}) > 1
    deepest = max(len(run) for run in runs)
    path: list[tuple[int, int]] = []  # (level, indent) of the labels over the current row
    for run in runs:
        base = deepest - len(run)
        if informative:
            siblings = [lv for lv, ind in path if ind == indents[run[0]]]
            outer = [lv for lv, ind in path if ind < indents[run[0]]]
            if siblings:  # indented as a label over the rows above: its sibling (the one
                # whose level is nearest the run's own, the deeper on a tie)
                base = min(siblings, key=lambda lv: (abs(lv - base), -lv))
            elif outer:  # indented more than the labels over the rows above: under them
                base = max(base, outer[-1] + 1)
        for j, i in enumerate(run):
            level[i] = base + j
            path = [entry for entry in path if entry[0] < base + j] + [(base + j, indents[i])]
    level[out] -= level[out].min()  # the outermost labels present are level 0
    return out, level


def _style_key(ctx: SheetContext, p: int) -> tuple:
    """What tells a label's level apart by its look: bold, fill, font size and indent."""
    return bool(ctx.bold[p]), int(ctx.fill_code[p]), ctx.font_size(p), int(ctx.indent[p])


def _blank_merged_rows(ctx: SheetContext, block: Block) -> set[int]:
    """Rows of ``block`` holding a blank merged range across two or more of its columns right
    of its first column (a label row whose value cells were merged into one empty band)."""
    out: set[int] = set()
    for r1, c1, r2, c2 in ctx.blank_merges():
        if r1 == r2 and block.min_row <= r1 <= block.max_row and \
                block.min_col < c1 < c2 <= block.max_col:
            out.add(r1)
    return out


def _heads(ctx: SheetContext, p: int, row: np.ndarray) -> bool:
    """Whether the label cell ``p`` heads the data row of cells ``row`` below it: that row
    leaves its column empty, or the label is styled unlike the row's cell there (bold or
    filled where it is not) or indented less."""
    same = row[ctx.col[row] == ctx.col[p]]
    if not len(same):
        return True
    if ctx.indent[p] < ctx.indent[same[0]]:
        return True
    label = np.array([p])
    return bool(styled_cells(ctx, label)[0]) and band_styles(ctx, label) != band_styles(
        ctx, same[:1])


def unit_rows_of(ctx: SheetContext, block: Block, cells: np.ndarray, starts: np.ndarray,
                 data: np.ndarray) -> np.ndarray:
    """Which data rows of a table are units rows (bool array over the rows ``starts``
    indexes): rows of short texts only (at most :data:`~.rules.UNIT_TEXT_CHARS` characters,
    no number), none in the table's first column (where row labels sit), over columns that
    hold numbers in the next data row holding numbers (group labels may come between) —
    ``%``, ``percent``, ``grams``, ``$ thousands`` under a section label (HiTab's StatCan
    tables). A units row states the unit of its columns for the rows below
    it: header material, never a record. Judged column-wise; only the candidate rows are
    looked at one by one."""
    out = np.zeros(len(starts), dtype=bool)
    if len(block.columns) < 2 or not len(starts):
        return out
    owns = ctx.owns[cells]
    bad = owns & (~ctx.is_str[cells] | (ctx.col[cells] == block.min_col))
    candidates = data & (np.add.reduceat(owns.astype(np.int64), starts) > 0) & (
        np.add.reduceat(bad.astype(np.int64), starts) == 0)
    if not candidates.any():
        return out
    ends = np.r_[starts[1:], len(cells)]
    # the data rows holding numbers: a units row states the unit of the next one
    valued = np.flatnonzero(data & (np.add.reduceat(
        (owns & ctx.typed[cells] & ~ctx.is_date[cells]).astype(np.int64), starts) > 0))
    for i in np.flatnonzero(candidates).tolist():
        k = int(np.searchsorted(valued, i))
        if k >= len(valued):
            continue
        row = ctx.logical(cells[starts[i]:ends[i]])
        if any(len(t) > UNIT_TEXT_CHARS for t in ctx.texts_of(row)):
            continue
        below = cells[starts[valued[k]]:ends[valued[k]]]
        numbers = set(ctx.col[below[ctx.typed[below] & ~ctx.is_date[below]]].tolist())
        spans = [range(int(ctx.col[p]), int(ctx.col[p]) + ctx.merge_width(p)) for p in row]
        if numbers and all(numbers & set(span) for span in spans):
            out[i] = True
    return out


def _consistent_units(ctx: SheetContext, block: Block) -> None:
    """Where every units row of ``block`` gives a column the same unit, that unit is the last
    level of the column's header path (the column's unit); units that differ between the
    sections of a table stay in the units rows (the records of each section carry theirs).
    Called only when no row of values lies above the first units row (those rows have no unit
    stated)."""
    units: dict[int, set[str]] = {}
    for r in block.unit_rows:
        for c in block.columns:
            p = ctx.find(r, c.col)
            units.setdefault(c.col, set()).add(header_text(ctx.text(p)) if p is not None else "")
    if any(len(texts) > 1 for texts in units.values()):
        return
    labels = UniqueLabels()
    for c in block.columns:
        (unit,) = units[c.col]
        if unit and not c.group and (not c.header_levels or c.header_levels[-1] != unit):
            c.header_levels = [*c.header_levels, unit] if c.header_levels != [
                placeholder_header(c.col)] else [unit]
            c.header = " > ".join(c.header_levels)
        c.header = labels.unique(c.header)
    block.reasons.append("the units rows agree: each column's unit ends its header path")


def row_label_columns(ctx: SheetContext, block: Block, cells: np.ndarray, starts: np.ndarray,
                      data: np.ndarray) -> list[int]:
    """The sheet columns whose values name each data row (its row header), outermost first:
    the row-group columns filled down (unless they hold the labels of group rows, which lead
    the row path already), then the first other column when it holds text (not numbers or
    dates; year labels count as text) in most of the data rows that have a value there, and a
    value in at least half of them (the stub: ``Water``, ``2004`` under ``Food and
    beverages``). Column-wise over the cells."""
    out = [] if block.group_rows else list(block.row_group_cols)
    columns = [c.col for c in block.columns if not c.group and c.col not in block.row_group_cols]
    n_rows = int(data.sum())
    if not n_rows or not columns or not len(cells):
        return out
    in_data = np.repeat(data, np.diff(np.r_[starts, len(cells)]))
    firsts = cells[in_data & (ctx.col[cells] == columns[0]) & ctx.owns[cells]]
    if 2 * len(firsts) < n_rows:
        return out
    if 2 * int(np.count_nonzero(ctx.is_str[firsts] | year_labels(ctx, firsts))) > len(firsts):
        out.append(columns[0])
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
