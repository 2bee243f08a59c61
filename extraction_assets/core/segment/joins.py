"""Tables across empty rows: header bands over their data, header rows glued under a table, rows
continuing a table (see :func:`join_tables`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.segment.context import (
    Region,
    RegionInfo,
    SheetContext,
    band_styles,
    body_top,
    region_info,
    styled_cells,
)
from extraction_assets.core.segment.rules import (
    MAX_HEADER_ROWS,
    MAX_REGIONS,
    NOTE_RE,
)
from extraction_assets.core.segment.signals import header_like

#: Most empty rows (as shown) between a table and rows below it that continue it.
MAX_CONTINUATION_GAP = 8
#: Most empty rows (as shown) between a table's header rows and its first data row.
MAX_HEADER_GAP = 2


@dataclass
class ColumnProfile:
    """The column schema of a set of rows: per sheet column the number of value-carrying cells
    (a text standing for a missing value, :data:`~.rules.MISSING_VALUE_TEXTS`, is none: ``?``
    among dates says nothing of the column's type) and of numbers/dates among them; the median
    and the largest number of cells in a row."""

    counts: dict[int, int]
    typed: dict[int, int]
    width: float
    widest: int

    def typed_share(self, c: int) -> float:
        return self.typed.get(c, 0) / self.counts[c]


def column_profile(ctx: SheetContext, cells: np.ndarray) -> ColumnProfile:
    logical = ctx.logical(cells)
    missing = ctx.is_missing[logical]
    cols, n = np.unique(ctx.col[logical[~missing]], return_counts=True)
    typed_cols, n_typed = np.unique(ctx.col[logical[ctx.typed[logical]]], return_counts=True)
    _, per_row = np.unique(ctx.row[logical], return_counts=True)
    return ColumnProfile(dict(zip(cols.tolist(), n.tolist())),
                    dict(zip(typed_cols.tolist(), n_typed.tolist())),
                    float(np.median(per_row)) if len(per_row) else 0.0,
                    int(per_row.max()) if len(per_row) else 0)


def schema_conflict(upper: ColumnProfile, lower: ColumnProfile, columns: set[int]) -> str | None:
    """Why rows with profile ``lower`` do not continue a table whose data rows have profile
    ``upper`` (``None``: they may): a value in a column outside the table's ``columns`` (the
    columns its header or data use), a column of numbers/dates above that holds text
    below or the converse, or rows less than half as wide."""
    for c in lower.counts:
        if c not in columns:
            return f"a value in column {column_letter(c)}, which the table above does not use"
        if upper.counts.get(c, 0) >= 2:
            up, low = upper.typed_share(c), lower.typed_share(c)
            if (up >= 0.8 and low <= 0.2) or (up <= 0.2 and low >= 0.8):
                return f"column {column_letter(c)} holds {'text' if up >= 0.8 else 'numbers'} " \
                       f"below {'numbers' if up >= 0.8 else 'text'}"
    if lower.widest < 2 or lower.widest * 2 <= upper.width:
        return "the rows are at most half as wide as the table's"
    return None


def data_cells(ctx: SheetContext, info: RegionInfo) -> np.ndarray:
    """A region's cells below its header: from its first row of several cells, the rows of
    text only (at most :data:`MAX_HEADER_ROWS`) are left out when a row below holds a number
    or date (all of its cells when none does)."""
    start = info.order.index(body_top(ctx, info))
    end = start
    while end < min(len(info.order), start + MAX_HEADER_ROWS) and bool(
            ctx.is_str[ctx.logical(info.rows[info.order[end]])].all()):
        end += 1
    rest = info.rows.cells_of(info.order[end:]) if end < len(info.order) else info.rows.cells[:0]
    return rest if ctx.typed[ctx.logical(rest)].any() else info.rows.cells_of(info.order[start:])


def has_own_header(ctx: SheetContext, info: RegionInfo) -> bool:
    """Whether a region starts (after single-cell lines) with a header-like row."""
    top = info.order.index(body_top(ctx, info))
    return top < len(info.order) - 1 and bool(header_like(ctx, info.rows, info.order, top))


def _header_fragment(ctx: SheetContext, info: RegionInfo) -> bool:
    """Whether a region could be (part of) a header band on its own: at most
    :data:`MAX_HEADER_ROWS` rows with two or more cells on its last row, all text (an error
    value aside), or all styled as a header (bold or filled) under a first row of two or more
    text cells (dates and column numbers may label columns too)."""
    if len(info.order) > MAX_HEADER_ROWS:
        return False
    logical = ctx.logical(info.rows.cells)
    first = ctx.logical(info.rows[info.order[0]])
    last = ctx.logical(info.rows[info.order[-1]])
    if len(last) < 2:
        return False
    if (ctx.is_str[logical] | ctx.is_error[logical]).all():
        return int(ctx.is_str[last].sum()) >= 2
    return bool(styled_cells(ctx, logical).all() and len(first) >= 2 and ctx.is_str[first].all())


def _overlaps_columns(ctx: SheetContext, part: RegionInfo, table: RegionInfo) -> bool:
    """Whether ``part`` starts inside the columns of ``table`` (a header may label columns
    to the right that hold no values)."""
    return table.shown[1] <= part.shown[1] <= table.shown[3]


def _header_tail(ctx: SheetContext, info: RegionInfo) -> bool:
    """Whether a region of data rows ends with a header-like row of its own: two or more text
    cells, styled (bold, filled or bordered), under a row holding numbers or dates."""
    if len(info.order) < 3:
        return False
    last = ctx.logical(info.rows[info.order[-1]])
    above = ctx.logical(info.rows[info.order[-2]])
    return (len(last) >= 2 and bool(ctx.is_str[last].all()) and bool(ctx.typed[above].any())
            and bool((ctx.bold[last] | (ctx.fill_code[last] >= 0) | ctx.border[last]).all())
            and band_styles(ctx, last) != band_styles(ctx, above))


def _split_last_row(ctx: SheetContext, regions: list[Region], i: int) -> list[Region]:
    """``regions`` with the last row of region ``i`` made a region of its own."""
    cells = regions[i].cells
    last = ctx.row[cells] == ctx.row[cells].max()
    out = list(regions)
    out[i] = Region(cells[~last], regions[i].reasons)
    out.insert(i + 1, Region(cells[last], [f"row {int(ctx.row[cells].max())} reads as the header "
                                            "of the rows below, not as a row of the table above"]))
    return out


def join_tables(ctx: SheetContext, regions: list[Region]) -> list[Region]:
    """Join what people read as one table across empty rows (see the module docstring): header
    rows glued under a table are split off (:func:`_split_header_tails`), header bands join
    the data below them (:func:`_join_header_bands`), then rows below a table continue it
    (:func:`_join_continuations`). Each step looks up neighbours by row, so the work grows
    with the number of regions, not its square."""
    if len(regions) < 2 or len(regions) > MAX_REGIONS:
        return regions
    cache: dict[int, tuple[Region, RegionInfo, bool]] = {}

    def infos_of(regions: list[Region]) -> tuple[list[RegionInfo], list[bool]]:
        """Each region's :class:`RegionInfo` and whether it has a header of its own, kept for the
        regions the steps leave unchanged."""
        for g in regions:
            if id(g) not in cache:
                info = region_info(ctx, g.cells)
                cache[id(g)] = (g, info, has_own_header(ctx, info))
        return [cache[id(g)][1] for g in regions], [cache[id(g)][2] for g in regions]

    regions = _split_header_tails(ctx, regions, infos_of)
    regions = _join_header_bands(ctx, regions, infos_of)
    return _join_continuations(ctx, regions, infos_of)


def _by_shown_row(infos: list[RegionInfo], edge: int) -> dict[int, list[int]]:
    """Region indices by their first (``edge`` 0) or last (``edge`` 2) shown row."""
    out: dict[int, list[int]] = defaultdict(list)
    for i, info in enumerate(infos):
        out[info.shown[edge]].append(i)
    return out


def _near_above(infos: list[RegionInfo], by_bottom: dict[int, list[int]], d: int) -> list[int]:
    """Regions ending at most :data:`MAX_HEADER_GAP` empty rows above region ``d`` (or right
    above it, not connected) and starting inside its columns."""
    top, (c1, c2) = infos[d].shown[0], (infos[d].shown[1], infos[d].shown[3])
    return [h for gap in range(1, MAX_HEADER_GAP + 2) for h in by_bottom.get(top - gap, ())
            if h != d and c1 <= infos[h].shown[1] <= c2]


def _split_header_tails(ctx: SheetContext, regions: list[Region], infos_of) -> list[Region]:
    """A header row glued under the rows above (a total row, then the next table's header) of
    a region that is no header band itself, over a region with no header of its own: split
    off, to head that region (:func:`_header_tail`). ``infos_of`` gives the regions'
    :class:`RegionInfo` and own-header flags (see :func:`join_tables`)."""
    infos, own = infos_of(regions)
    by_bottom = _by_shown_row(infos, 2)
    split: set[int] = set()
    for d, D in enumerate(infos):
        if len(D.order) < 2 or own[d]:
            continue
        near = _near_above(infos, by_bottom, d)
        if any(_header_fragment(ctx, infos[h]) for h in near):
            continue
        tails = [h for h in near if _header_tail(ctx, infos[h])]
        if tails:
            split.add(tails[0])
    for i in sorted(split, reverse=True):
        regions = _split_last_row(ctx, regions, i)
    return regions


def _join_header_bands(ctx: SheetContext, regions: list[Region], infos_of) -> list[Region]:
    """A header band and its data: header fragments (:func:`_header_fragment`, possibly
    several split by empty header cells) ending one or two empty rows above a region with no
    header of its own (or right above it, not connected), starting inside its columns, two or
    more of their last row's cells labelling its columns (over text-only data, styled unlike
    it), joined with it and with the single cells between them (labels between empty header
    cells, group labels over the data)."""
    infos, own = infos_of(regions)
    by_bottom, by_top = _by_shown_row(infos, 2), _by_shown_row(infos, 0)
    order = sorted(range(len(regions)), key=lambda i: (infos[i].shown[0], infos[i].shown[1]))
    taken: set[int] = set()
    groups: list[tuple[list[int], str]] = []
    for d in order:
        D = infos[d]
        if d in taken or len(D.order) < 2 or own[d]:
            continue
        heads = [h for h in _near_above(infos, by_bottom, d)
                 if h not in taken and _header_fragment(ctx, infos[h])]
        if not heads:
            continue
        below = ctx.logical(D.rows.cells)
        data_cols = set(ctx.col[below].tolist())
        labelled = {int(c) for h in heads for c in ctx.col[ctx.logical(
            infos[h].rows[infos[h].order[-1]])].tolist() if int(c) in data_cols}
        if len(labelled) < 2:
            continue
        # over rows of text only, a header must look like one (styled unlike the data)
        head_cells = np.concatenate([ctx.logical(infos[h].rows.cells) for h in heads])
        if not (ctx.typed[below] & np.isin(ctx.col[below], list(labelled))).any() and (
                not styled_cells(ctx, head_cells).all() and not ctx.border[head_cells].all()
                or band_styles(ctx, head_cells) == band_styles(ctx, below)):
            continue
        head_top = min(infos[h].shown[0] for h in heads)
        between = [g for r in range(head_top, D.shown[0]) for g in by_top.get(r, ())
                   if g != d and g not in heads and g not in taken and infos[g].n_logical == 1
                   and infos[g].shown[2] < D.shown[0]
                   and D.shown[1] - 1 <= infos[g].shown[1] <= D.shown[3]]
        members = [d, *heads, *between]
        taken.update(members)
        groups.append((members, f"header rows {min(infos[h].box[0] for h in heads)}-"
                                f"{max(infos[h].box[2] for h in heads)} over the data from row "
                                f"{D.box[0]} (empty rows between them)"))
    if not groups:
        return regions
    out: list[Region] = []
    lead = {min(members): (members, why) for members, why in groups}
    for i, region in enumerate(regions):
        if i in lead:
            members, why = lead[i]
            keep = sorted(members)
            out.append(Region(np.sort(np.concatenate([regions[m].cells for m in keep])),
                               [w for m in keep for w in regions[m].reasons] + [why]))
        elif i not in taken:
            out.append(region)
    return out


def _join_continuations(ctx: SheetContext, regions: list[Region], infos_of) -> list[Region]:
    """Rows below a table that has a header row continue it: the regions starting at most
    :data:`MAX_CONTINUATION_GAP` empty rows below it, inside its columns (with the regions
    starting within their rows' span), with nothing else in between, no header of their own,
    no note or larger heading first (a group label styled like the table's is none), and the
    table's column schema (:func:`schema_conflict`). Repeated while rows continue it."""
    infos, own = infos_of(regions)
    by_top = _by_shown_row(infos, 0)
    order = sorted(range(len(regions)), key=lambda i: (infos[i].shown[0], infos[i].shown[1]))
    alive = [True] * len(regions)
    grown: dict[int, Region] = {}
    for t in order:
        T = infos[t]
        if not alive[t] or len(T.order) < 2 or not own[t]:
            continue
        c1, c2 = T.shown[1], T.shown[3]
        inside = (lambda i: alive[i] and i != t and c1 <= infos[i].shown[1]
                  and infos[i].shown[3] <= c2)
        overlaps = (lambda i: alive[i] and i != t and infos[i].shown[1] <= c2
                    and infos[i].shown[3] >= c1)
        upper: ColumnProfile | None = None
        columns = set(ctx.col[T.rows.cells].tolist())
        bottom = T.shown[2]
        while True:
            window = range(bottom + 2, bottom + MAX_CONTINUATION_GAP + 2)
            below = [i for r in window for i in by_top.get(r, ()) if inside(i)]
            if not below:
                break
            first = min(infos[i].shown[0] for i in below)
            band = [i for i in below if infos[i].shown[0] == first]
            span_end = max(infos[i].shown[2] for i in band)
            band += [i for r in range(first + 1, span_end + 2) for i in by_top.get(r, ())
                     if inside(i) and i not in band]
            if any(overlaps(i) and i not in band
                   for r in range(bottom + 1, first) for i in by_top.get(r, ())):
                break  # something in the way: a region between them reaching outside
            lower = region_info(ctx, np.sort(np.concatenate([regions[i].cells for i in band])))
            if has_own_header(ctx, lower) or any(own[i] for i in band):
                break
            lead = ctx.logical(lower.rows[lower.order[0]])
            if len(lead) == 1 and ((larger_heading(ctx, lead[0])
                                    and not styled_like_column(ctx, lead[0], T))
                                   or NOTE_RE.match(ctx.text(lead[0]))):
                break
            if upper is None:
                upper = column_profile(ctx, data_cells(ctx, T))
            if not upper.counts or schema_conflict(upper, column_profile(ctx, lower.rows.cells),
                                                    columns):
                break
            table = grown.get(t, regions[t])
            grown[t] = Region(np.concatenate([table.cells, lower.rows.cells]), table.reasons + [
                f"rows {lower.box[0]}-{lower.box[2]} continue the table above after "
                f"{first - bottom - 1} empty rows (no header of their own, the same columns "
                "and types)"] + [w for i in band for w in regions[i].reasons])
            for i in band:
                alive[i] = False
            bottom = max(bottom, lower.shown[2])
    return [Region(np.sort(grown[i].cells), grown[i].reasons) if i in grown else region
            for i, region in enumerate(regions) if alive[i]]


def styled_like_column(ctx: SheetContext, p, table: RegionInfo) -> bool:
    """Whether cell ``p`` has the bold and font size of most of the table's cells in its
    column (a group label written like the table's row labels, not a section heading)."""
    column = ctx.logical(table.rows.cells)
    column = column[ctx.col[column] == ctx.col[p]]
    if not len(column):
        return False
    same = (ctx.bold[column] == ctx.bold[p]) & (
        np.nan_to_num(ctx.size[column], nan=-1.0) == (ctx.size[p] if ctx.size[p] == ctx.size[p]
                                                       else -1.0))
    return 2 * int(same.sum()) > len(column)


def larger_heading(ctx: SheetContext, p) -> bool:
    """Whether cell ``p`` is a heading in a font larger than the body's (a bold label of the
    body size may head a group of a table's rows; a larger one starts a new section)."""
    size = ctx.font_size(p)
    return ctx.level(p) is not None and (size or ctx.headings.body_size) > ctx.headings.body_size
