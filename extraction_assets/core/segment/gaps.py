"""Regions joined across exactly one empty row or column when header, type, style and schema
signals agree."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict

import numpy as np

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.segment.context import (
    BothRows,
    Region,
    RegionInfo,
    SheetContext,
    UnionFind,
    all_bold,
    all_bordered,
    all_strings,
    band_styles,
    body_top,
    head_row,
    region_info,
    row_texts,
    starts_total,
    styled_cells,
    typed_columns,
)
from extraction_assets.core.segment.joins import column_profile, data_cells, schema_conflict
from extraction_assets.core.segment.regions import join_overlapping
from extraction_assets.core.segment.rules import MAX_REGIONS, NOTE_RE, is_unit
from extraction_assets.core.segment.signals import header_like, styled_like_row_below


def _join_vertical(ctx: SheetContext, upper: RegionInfo, lower: RegionInfo) -> str | None:
    """Why two regions one empty row apart are one table (``None``: they are not)."""
    if upper.n_logical < 2 or lower.n_logical < 2:
        return None
    if not (upper.shown[1] <= lower.shown[1] and lower.shown[3] <= upper.shown[3]):
        return None
    first = lower.rows[lower.order[0]]
    logical = ctx.logical(first)
    if len(logical) == 1 and (ctx.level(logical[0]) is not None or NOTE_RE.match(ctx.text(logical[0]))):
        return None
    upper_head = row_texts(ctx, upper.rows[upper.order[0]])
    if len(upper_head) >= 2 and row_texts(ctx, first) == upper_head:
        return f"rows {upper.box[0]}-{lower.box[2]}: header repeated after a single empty row"
    for idx in (0, 1):
        if idx < len(lower.order) and header_like(ctx, lower.rows, lower.order, idx):
            return None
    # positive evidence that the rows continue the table above (the header rule reads at
    # most nine rows from the top of both)
    both = BothRows(upper.rows, lower.rows)
    both_order = (upper.order[:9] + lower.order[:9])[:9]
    head = next((why for idx in range(min(4, len(upper.order)))
                 for why in [header_like(ctx, both, both_order, idx)] if why), None)
    if head is None:
        if np.intersect1d(typed_columns(ctx, upper.rows.cells),
                          typed_columns(ctx, lower.rows.cells)).size:
            head = "numeric/date values continue in the same columns"
        elif all_bordered(ctx, upper.rows[upper.order[-1]]) and all_bordered(ctx, first):
            head = "cell borders continue on both sides of the empty row"
        else:
            return None  # plain text on both sides: no sign that they are one table
    data = ctx.logical(data_cells(ctx, upper))
    if len(np.unique(ctx.row[data[ctx.typed[data]]])) >= 2:
        conflict = schema_conflict(column_profile(ctx, data), column_profile(ctx, lower.rows.cells),
                                    set(ctx.col[upper.rows.cells].tolist()))
        if conflict:
            return None
    return (f"rows {upper.box[0]}-{lower.box[2]}: a single empty row above row {lower.box[0]} "
            f"inside the table (no new header row below it; {head})")


def _join_horizontal(ctx: SheetContext, left: RegionInfo, right: RegionInfo, lone: list[tuple[int, int]]) -> str | None:
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
    top = max(body_top(ctx, left), body_top(ctx, right))
    bottom = min(left.box[2], right.box[2])
    if bottom - top < 1:
        return None
    for side, other in ((left, right), (right, left)):
        extra = side.order[:bisect_left(side.order, top)]
        if len(extra) > 3 or not all(all_strings(ctx, side.rows[r])
                                     or styled_cells(ctx, ctx.logical(side.rows[r])).all()
                                     for r in extra):
            return None
        extra = side.order[bisect_right(side.order, bottom):]
        if extra and other.width == 1 and side.width >= 2 and \
                len(other.order) * 2 < len(side.order):
            return None  # a short column beside a long table is no column of it
        if extra and other.width != 1 and (len(extra) > 2 or any(
                len(ctx.logical(side.rows[r])) != 1 and not starts_total(ctx, side.rows[r])
                for r in extra)):
            return None
    left_head, right_head = head_row(ctx, left), head_row(ctx, right)
    if left_head == right_head:
        lt, rt = row_texts(ctx, left.rows[left_head]), row_texts(ctx, right.rows[right_head])
        if set(lt.values()) & set(rt.values()):
            return None  # the same labels on both sides: side-by-side tables
    if left.width >= 2 and right.width >= 2:
        if all_bold(ctx, left.rows[left_head]) != all_bold(ctx, right.rows[right_head]):
            return None

        def header_on_left(r: int) -> bool:
            logical = ctx.logical(left.rows.get(r, left.rows.cells[:0]))
            return len(logical) >= 2 or (len(logical) == 1 and (
                styled_like_row_below(ctx, logical[0], left) or is_unit(ctx.text(logical[0]))))

        own = []
        for r in right.order[:bisect_left(right.order, top)]:
            logical = ctx.logical(right.rows[r])
            if (len(logical) == 1 and not header_on_left(r) and not is_unit(ctx.text(logical[0]))
                    and not styled_like_row_below(ctx, logical[0], right)):
                own.append(ctx.rc(logical[0]))
        own += [(r, c) for r, c in lone if right.box[0] - 3 <= r < right.box[0]
                and right.box[1] <= c <= right.box[3] and not header_on_left(r)]
        if own:
            return None  # the right part has a title of its own: a side-by-side table
    gap = column_letter(left.box[3] + 1)
    return (f"single empty column {gap} inside the table (rows {top}-{bottom} on both sides, "
            "no title or repeated labels of its own on the right)")


#: Most empty columns between a table and a lone column of it (:func:`_join_lone_column`).
MAX_LONE_COLUMN_GAP = 3


def _join_lone_column(ctx: SheetContext, table: RegionInfo, lone: RegionInfo,
                      infos: list[RegionInfo]) -> str | None:
    """Why a one-column region two to :data:`MAX_LONE_COLUMN_GAP` empty columns right of a
    table is a column of it (``None``: it is not): a header and two or more values on exactly
    the table's rows from its header row down (a title above it aside), the header in that
    row styled as the table's header cells are (bold or filled alike), and nothing else
    between them. A ``Page`` column set apart from a table of contents is one; a one-column
    list with a header of its own style is not."""
    if table.width < 2 or lone.width != 1 or len(lone.order) < 3:
        return None
    top, bottom = head_row(ctx, table), table.box[2]
    if lone.order != table.order[table.order.index(top):]:
        return None
    head = ctx.logical(table.rows[top])
    label = ctx.logical(lone.rows[top])
    if (len(head) < 2 or len(label) != 1 or not ctx.is_str[label[0]]
            or not styled_cells(ctx, head).all()
            or band_styles(ctx, label) != band_styles(ctx, head)):
        return None
    c1, c2 = table.box[3] + 1, lone.box[1] - 1
    if any(other is not table and other is not lone and other.box[0] <= bottom
           and top <= other.box[2] and other.box[1] <= c2 and c1 <= other.box[3]
           for other in infos):
        return None
    return (f"column {column_letter(lone.box[1])} joins the table across {c2 - c1 + 1} empty "
            f"columns: its header in the table's header row {top}, styled alike, and values "
            "on the same rows")


def join_gaps(ctx: SheetContext, regions: list[Region]) -> list[Region]:
    """Join regions one empty row or column apart when :func:`_join_vertical` /
    :func:`_join_horizontal` say they form one table, and a table with a lone column a few
    empty columns right of it (:func:`_join_lone_column`); repeated until stable."""
    for _ in range(10):
        if len(regions) < 2 or len(regions) > MAX_REGIONS:
            break
        infos = [region_info(ctx, g.cells) for g in regions]
        by_top: dict[int, list[int]] = defaultdict(list)
        by_left: dict[int, list[int]] = defaultdict(list)
        for i, info in enumerate(infos):
            by_top[info.shown[0]].append(i)
            by_left[info.shown[1]].append(i)
        lone = [ctx.rc(g.cells[0]) for g, info in zip(regions, infos)
                if info.n_logical == 1 and len(info.order) == 1 and ctx.is_string(g.cells[0])
                and not is_unit(ctx.text(g.cells[0]))]
        uf = UnionFind(len(regions))
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
            for gap in range(2, MAX_LONE_COLUMN_GAP + 1):
                for b in by_left.get(A.shown[3] + gap + 1, ()):
                    why = _join_lone_column(ctx, A, infos[b], infos)
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
        joined_cells = join_overlapping(ctx, [cells for cells, _ in merged])
        if len(joined_cells) == len(merged):
            regions = [Region(np.sort(cells), why) for cells, why in merged]
        else:  # a joined box overlapped another region: reattach reasons by cell
            owner = np.empty(ctx.n, np.int64)
            for j, (cells, _) in enumerate(merged):
                owner[cells] = j
            regions = []
            for group in joined_cells:
                owners = owner[group]
                _, first = np.unique(owners, return_index=True)
                why = [w for j in owners[np.sort(first)].tolist() for w in merged[j][1]]
                regions.append(Region(np.sort(group), why))
    return regions
