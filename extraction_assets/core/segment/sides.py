"""Tables side by side with no empty column between them: a header row repeating in groups."""

from __future__ import annotations

import numpy as np

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.segment.context import Region, SheetContext, body_top, region_info


def header_period(labels: list[str]) -> int | None:
    """The width of the repeating groups of a header row's labels (one per column, ``""`` for
    an empty cell), or ``None``: two or more groups of ``p >= 2`` columns, the first of
    ``p`` distinct labels, each starting with the first label and repeating at least half of
    the first group's labels in place (``E-rating | Call Credit | E-rating | Call Credit``:
    lists side by side; one label over every column is a parent, not groups)."""
    width = len(labels)
    for p in range(2, width // 2 + 1):
        if width % p or not labels[0] or len(set(labels[:p])) < p:
            continue
        groups = [labels[k:k + p] for k in range(0, width, p)]
        if all(g[0] == labels[0] for g in groups) and all(
                2 * sum(a == b for a, b in zip(g, groups[0])) >= p for g in groups[1:]):
            return p
    return None


def split_repeated_headers(ctx: SheetContext, regions: list[Region]) -> list[Region]:
    """Regions whose first row of several cells is a header repeating in groups of columns
    (:func:`header_period`), with no merged cell in it, split into one region per group (a
    cell left or right of the header goes with the nearest group): tables side by side with
    no empty column between them."""
    out: list[Region] = []
    for region in regions:
        info = region_info(ctx, region.cells)
        top = body_top(ctx, info)
        head = info.rows[top]
        logical = ctx.logical(head)
        if len(logical) < 4 or len(info.order) < 3 or (~ctx.owns[head]).any() or \
                ctx.anchors[logical].any():
            out.append(region)
            continue
        c0, c1 = int(ctx.col[logical].min()), int(ctx.col[logical].max())
        texts = dict(zip(ctx.col[logical].tolist(), ctx.texts_of(logical)))
        p = header_period([texts.get(c, "") for c in range(c0, c1 + 1)])
        if p is None:
            out.append(region)
            continue
        group = np.clip((ctx.col[region.cells] - c0) // p, 0, (c1 - c0 + 1) // p - 1)
        for g in np.unique(group).tolist():
            out.append(Region(region.cells[group == g], region.reasons + [
                f"header row {top} repeats its labels every {p} columns: tables side by side "
                f"(columns {column_letter(c0 + g * p)}-{column_letter(c0 + g * p + p - 1)})"]))
    return out
