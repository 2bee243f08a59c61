"""Tables a workbook declares: Excel tables (ListObjects, ECMA-376 Part 1 §18.5) and pivot tables
(§18.10)."""

from __future__ import annotations

import numpy as np

from extraction_assets.core.a1 import column_letter, parse_range
from extraction_assets.core.blocks import Block, BlockKind, Column, ListObject, PivotTable
from extraction_assets.core.grid import cell_keys
from extraction_assets.core.model import SheetObject
from extraction_assets.core.segment.context import Region, SheetContext
from extraction_assets.core.segment.rows import mark_data_rows
from extraction_assets.core.segment.signals import (
    UniqueLabels,
    header_text,
    placeholder_header,
)

#: Pivot row item types that are not totals (§18.10.1.44 ``ST_ItemType``).
PIVOT_BODY_ITEMS = ("data", "blank")


def declared_tables(objects: list[SheetObject]
                    ) -> tuple[dict[str, list[ListObject]], dict[str, list[PivotTable]]]:
    """The ListObjects and pivot tables among a workbook's sheet objects (kinds ``table`` and
    ``pivot_table`` with a range), by sheet name, in the order given."""
    list_objects: dict[str, list[ListObject]] = {}
    pivot_tables: dict[str, list[PivotTable]] = {}
    for obj in objects:
        if not obj.ref:
            continue
        details = obj.details
        if obj.kind == "table":
            list_objects.setdefault(obj.sheet_name, []).append(ListObject(
                obj.name or "", obj.ref, details.get("header_row_count", 1),
                details.get("totals_row_count", 0),
                tuple(c or "" for c in details.get("columns", []))))
        elif obj.kind == "pivot_table":
            pivot_tables.setdefault(obj.sheet_name, []).append(PivotTable(
                obj.name or "", obj.ref, details.get("first_data_row", 1),
                details.get("first_data_col", 1), tuple(details.get("row_items", [])),
                details.get("first_header_row", 0)))
    return list_objects, pivot_tables


def list_object_blocks(ctx: SheetContext, list_objects: list[ListObject]
                        ) -> tuple[list[Block], list[tuple[tuple[int, int, int, int], str]]]:
    """``table`` blocks of the sheet's ListObjects: range, header row, column names and totals
    row as Excel declares them (a ListObject with no header row takes its ``tableColumn``
    names; ``n_cells`` is left for the caller to count). Returns the blocks and the ListObjects
    left to the rules, as (bounds, reason): one whose range is stale, values sitting beside it
    on most of its rows or filling the row under it (Excel grows a table over such cells; a file
    written by other software may not)."""
    out: list[Block] = []
    ignored: list[tuple[tuple[int, int, int, int], str]] = []
    for lo in list_objects:
        try:
            r1, c1, r2, c2 = parse_range(lo.ref)
        except ValueError:
            continue
        if any(not (r2 < b.min_row or b.max_row < r1 or c2 < b.min_col or b.max_col < c1)
               for b in out):
            continue
        n_rows, width = r2 - r1 + 1, c2 - c1 + 1
        rows = np.arange(r1, r2 + 1, dtype=np.int64)
        beside = int((ctx.has(cell_keys(rows, c1 - 1)) | ctx.has(cell_keys(rows, c2 + 1))).sum())
        under = len(ctx.logical(ctx.cells_in(r2 + 1, c1, r2 + 1, c2)))
        if beside * 2 > n_rows or (width >= 2 and under * 2 >= width and under >= 2):
            ignored.append(((r1, c1, r2, c2), f"Excel table (ListObject) {lo.name} {lo.ref} "
                            "covers only part of the cells around it: its range is not used"))
            continue
        header_rows = min(max(lo.header_row_count, 0), r2 - r1 + 1)
        block = Block(ctx.grid.sheet_index, ctx.grid.sheet_name, BlockKind.TABLE, r1, c1, r2, c2, 0,
                      header_row_count=header_rows,
                      reasons=[f"Excel table (ListObject) {lo.name} {lo.ref}: its range, header "
                               "row and totals row are authoritative"])
        labels = UniqueLabels()
        for c in range(c1, c2 + 1):
            name = lo.columns[c - c1] if c - c1 < len(lo.columns) else None
            p = ctx.find(r1, c) if header_rows else None
            text = header_text(ctx.text(p)) if p is not None else ""
            label = labels.unique(text or header_text(name or "") or placeholder_header(c))
            block.columns.append(Column(c, label, [label]))
        mark_data_rows(ctx, block)
        if lo.totals_row_count > 0 and r2 - lo.totals_row_count >= r1 + header_rows:
            totals = range(r2 - lo.totals_row_count + 1, r2 + 1)
            block.total_rows = sorted(set(block.total_rows) | set(totals))
            block.reasons.append(f"totals row of the Excel table: {', '.join(map(str, totals))}")
        out.append(block)
    return out, ignored


def pivot_blocks(ctx: SheetContext, pivots: list[PivotTable], taken: list[Block]) -> list[Block]:
    """``table`` blocks of the sheet's pivot tables, as Excel laid them out (§18.10.1.49
    ``location``): the location's range; its rows above ``first_data_row`` are the header rows
    (in the rows of column items above the last header row, a label stands for the columns to
    its right up to the next label, as Excel shows outer column items once; the captions of the
    column fields above the column items, ``Column Labels`` or ``Year`` and ``Values``, head
    every value column, as they name the whole column axis); the row items
    that are no body rows (subtotals, grand total) are total rows; with two or more row label
    columns, the outer ones show each label once per group and are filled down. A pivot table
    whose range is not valid A1, holds no cell or overlaps a block already made is left to the
    rules."""
    out: list[Block] = []
    for pt in pivots:
        try:
            r1, c1, r2, c2 = parse_range(pt.ref)
        except ValueError:
            continue
        if not len(ctx.cells_in(r1, c1, r2, c2)) or any(
                not (r2 < b.min_row or b.max_row < r1 or c2 < b.min_col or b.max_col < c1)
                for b in taken + out):
            continue
        header_rows = min(max(pt.first_data_row, 1), r2 - r1)
        block = Block(ctx.grid.sheet_index, ctx.grid.sheet_name, BlockKind.TABLE, r1, c1, r2, c2, 0,
                      header_row_count=header_rows,
                      reasons=[f"pivot table {pt.name} {pt.ref}: its location, header rows and "
                               "total rows are authoritative"])
        leaf = r1 + header_rows - 1
        first_value = c1 + max(pt.first_data_col, 0)
        present = set(np.unique(ctx.col[ctx.cells_in(r1, c1, r2, c2)]).tolist())
        labels = UniqueLabels()
        carried: dict[int, str] = {}
        levels_of: dict[int, list[str]] = {c: [] for c in range(c1, c2 + 1)}
        # rows of column field captions above the column items (when items rows follow): each
        # caption heads every value column, in their order
        items_row = r1 + pt.first_header_row if r1 + pt.first_header_row <= leaf else r1
        captions = list(dict.fromkeys(
            ctx.text(p) for p in ctx.cells_in(r1, first_value, items_row - 1, c2).tolist()))
        for c in range(first_value, c2 + 1):
            levels_of[c].extend(captions)
        for r in range(r1, leaf + 1):
            carried.clear()
            for c in range(c1, c2 + 1):
                if r < items_row and c >= first_value:
                    continue  # a caption, above
                p = ctx.find(r, c)
                text = ctx.text(p) if p is not None else ""
                if not text and r < leaf and c > first_value and r >= r1 + 1:
                    text = carried.get(c - 1, "")
                carried[c] = text
                if text and (not levels_of[c] or levels_of[c][-1] != text):
                    levels_of[c].append(text)
        for c in range(c1, c2 + 1):
            if c not in present:
                continue
            levels = levels_of[c]
            label = labels.unique(" > ".join(levels) if levels else placeholder_header(c))
            block.columns.append(Column(c, label, levels or [label]))
        body = r1 + pt.first_data_row
        block.total_rows = [body + i for i, t in enumerate(pt.row_items)
                            if t not in PIVOT_BODY_ITEMS and body + i <= r2]
        if block.total_rows:
            block.reasons.append("subtotal and grand total rows of the pivot table: "
                                 + ", ".join(map(str, block.total_rows)))
        if pt.first_data_col >= 2:
            block.row_group_cols = list(range(c1, first_value - 1))
            block.reasons.append("outer row label columns filled down: " + ", ".join(
                column_letter(c) for c in block.row_group_cols))
        out.append(block)
    return out


def beside_pivots(ctx: SheetContext, pivots: list[Block], regions: list[Region]) -> list[Region]:
    """Attach to each pivot table block the regions right beside it (starting in the column
    after its last one) when all of them lie between its header's last row and its last row:
    columns a user wrote next to the pivot's rows (a pivot table cannot hold them). A region
    there reaching above or below the pivot is a table of its own, and nothing is attached.
    The regions left are returned."""
    out = list(regions)
    for block in pivots:
        leaf = block.min_row + block.header_row_count - 1
        while True:
            touching = [g for g in out if ctx.bbox(g.cells)[1] == block.max_col + 1
                        and ctx.bbox(g.cells)[0] <= block.max_row
                        and ctx.bbox(g.cells)[2] >= block.min_row]
            beside = [g for g in touching if leaf <= ctx.bbox(g.cells)[0]
                      and ctx.bbox(g.cells)[2] <= block.max_row]
            if not beside or len(beside) < len(touching):
                break  # nothing beside, or a table of its own reaching above or below
            cells = np.concatenate([g.cells for g in beside])
            out = [g for g in out if not any(g is b for b in beside)]
            first = block.max_col + 1
            block.max_col = int(ctx.col[cells].max())
            block.n_cells += len(cells)
            labels = UniqueLabels()
            for column in block.columns:
                labels.unique(column.header)
            for c in sorted(set(ctx.col[cells].tolist())):
                p = ctx.find(leaf, c)
                text = header_text(ctx.text(p)) if p is not None else ""
                label = labels.unique(text or placeholder_header(c))
                block.columns.append(Column(c, label, [label]))
            block.reasons.append(f"columns {column_letter(first)}-{column_letter(block.max_col)} "
                                 "beside the pivot table's rows are columns of it")
    return out
