"""Find the blocks of a sheet: tables with their header rows, titles, headings and text.

Rules (deterministic, no model), each checked against human-labelled real spreadsheets
(:mod:`tools.labelled`) as well as generated layouts:

* Non-empty cells (display text not blank) are grouped into connected regions with
  8-neighbourhood; regions whose bounding boxes overlap are joined, so a sparse table with holes
  stays one table and several tables separated by empty rows or columns come out separately.
* **Gap tolerance**: two regions separated by exactly one empty row (as the sheet is shown) are
  joined when the lower one lies within the upper one's columns and does not start with a new
  header row (a row of text cells above numeric/date values, or a bold or filled row above
  plain rows), numbers or dates, or cell borders, continue across the gap and the lower rows
  keep the column schema of the data above (:func:`~.joins.schema_conflict`); a repeat of the upper
  header is joined too. Two regions separated by exactly one empty column are joined when they
  start on the same row and end on the same row (or the narrow one, a single column, ends
  earlier and covers half the rows; rows below that hold a total may differ), share no header
  label and do not both have a header row of their own.
* **Tables across empty rows** (:func:`join_tables`): a header band — text rows, possibly split
  into several regions by empty header cells, or styled rows (bold or filled) that may hold
  dates and column numbers — one or two empty rows above a region with no header of its own
  heads it (with the single-cell group labels between them); a header row glued under a total
  row is split off to head the rows below. Rows below a table that has a header, at most
  :data:`~.joins.MAX_CONTINUATION_GAP` empty rows down, inside its columns, with no header of their own,
  no note or larger heading first, and the table's column schema (types, columns, width),
  continue it: one table under one header, its group labels rows of their own.
* **Side by side**: a header row whose labels repeat in groups (``E-rating | Call Credit |
  E-rating | Call Credit``) splits its region into one table per group (:func:`~.sides.header_period`).
* Leading rows of a region that hold a single cell (or one merged range) are peeled off as
  ``title`` blocks while at least two rows of the region hold several cells: a merged title row
  spanning the table or a merged section label above a header is a title, never a header row.
  Label/value lines (``Facility: | Conover``) above a header row are a ``key_value`` block.
  A **caption** row of two or three text cells from the first column (``Volumes | MMBtu``)
  directly above a row spanning the table that names more columns over numbers is a ``title``
  (its last cell, when it names a unit, a ``text`` block whose ``unit`` becomes the table's),
  and the row under it is the header (:func:`~.classify.caption_above_header`).
* A region of at least two rows and two columns with a row of several cells is a ``table``;
  inside it, a single-cell row followed by a new header row starts another table (the single
  cell is its title), and so does the header repeated under a total row (a stack of tables),
  and so does a second **border box**: every cell bordered, the rows falling into two boxes of
  different columns, the lower starting with a header-like row under data rows
  (:func:`~.classify.stacked_border_boxes`), and a second header row styled as the first,
  with other labels, under data rows (:func:`~.classify.second_header_row`).
  Trailing single-cell rows that read as notes (``※``, ``Note:``, ``*``, a long line in the
  first column or a merged long line) become a ``text`` block, and so does a last column with
  no header and text on few rows (notes beside the rows).
* **Prose is no header**: a text-only region whose first row holds prose
  (:func:`~.rules.reads_as_prose`) over a column of prose is ``text``, not a table; label /
  prose pairs are a ``key_value`` form (see below).
* Other regions are split into heading lines (``title`` blocks with a ``level``) and ``text``
  blocks; a lone cell is a ``title``. A lone non-heading cell just under a table that no table
  takes as its title, or any lone cell that reads as a note, is ``text``.
* A single text cell directly above a table (at most two rows up, overlapping its columns) is
  that table's title.
* **Headings** (see :mod:`.headings`): bold text cells outside tables get the heading level of
  their font size (H2..H6, the sheet name is H1). Every block's ``heading_path`` is the sheet
  name, then the nearest headings above it (outermost first, each level replacing deeper ones),
  then, for a table, its own title when not already in the path.
* **Excel tables** (ListObjects, ``xl/tables/tableN.xml``) and **pivot tables**
  (``xl/pivotTables/pivotTableN.xml``, ECMA-376 Part 1 §18.10) are authoritative: each is a
  table block with exactly its range and header rows, a ListObject's column names and totals
  row, a pivot table's subtotal and grand total rows, its outer row labels filled down and the
  columns written right beside its rows; the rules run on the cells outside them.
* **Forms**: a region whose rows are label/value pairs (labels ending with a colon, or bold
  labels over plain values, or unique labels whose values mix types or start with a number,
  which no header row would hold, or short labels each followed by prose) is a ``key_value``
  block, one pair per :class:`~extraction_assets.core.blocks.Column` (see
  :func:`~.forms.key_value_block`).
* A table's header is its first row, extended downwards while a merged range anchored in the
  header spans more rows or groups text cells over a sub-header row, by rows styled like the
  header (bold or filled) above plain data, by rows of text over the columns of numbers below
  when the header rows leave cells empty, by a row numbering the columns (``(1) (2) (3)``), or
  down to the sheet's frozen pane when that gives more rows (at most :data:`~.rules.MAX_HEADER_ROWS` = 4
  rows). A first row holding numbers like the rows below, in their style, is data: the table
  then has no header row. Each column's header is the path of its non-empty, non-repeated
  header levels (line breaks and space runs collapsed) joined by ``" > "``; a column with no
  header is named by its letter; repeated labels get `` (2)``, `` (3)``... Columns covered by a
  horizontal merge in the leaf header row with no values of their own, and fully empty
  columns, are not columns of the table.
* **Numbers stored as text** (``'35.3'``, ``'1,091.0'``, :data:`~.rules.NUMBER_TEXT`) are
  numbers for every rule (the record keeps the text), so a table reads alike however its
  numbers are stored.
* **Units rows** (:func:`~.rows.unit_rows_of`): a data row of short texts only (``%``,
  ``grams``), none in the first column, over columns of numbers is no record; where the units
  rows agree, each column's unit ends its header path, else the records of each section get
  keys with their unit.
* **Row paths**: group label rows nest (a run of label-only rows above a data row, the outer
  ones first; by indent where labels are indented unlike one another), their labels and the
  row label columns (``row_label_cols``) give each record its ``row_path``.
* Inside a table's data: total rows (by evidence, see :mod:`.totals`) stay rows of the table
  and are listed in ``total_rows``; rows repeating the header texts are listed in
  ``skip_rows``; rows holding only a group label in the first columns, styled unlike the rows
  under them, are listed in ``group_rows``; a leftmost column whose labels sit only on the
  first row of each group (or only on the group label rows) is recorded in ``row_group_cols``
  (to be filled down).

Every decision appends a human-readable reason to ``Block.reasons``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from extraction_assets.core.blocks import Block, BlockKind, ListObject, PivotTable
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.segment.classify import classify_region
from extraction_assets.core.segment.context import Region, SheetContext
from extraction_assets.core.segment.declared import beside_pivots, list_object_blocks, pivot_blocks
from extraction_assets.core.segment.gaps import join_gaps
from extraction_assets.core.segment.header import find_header, trim_columns
from extraction_assets.core.segment.headings import HeadingMap, detect_heading_levels
from extraction_assets.core.segment.joins import join_tables
from extraction_assets.core.segment.regions import find_regions
from extraction_assets.core.segment.rows import mark_data_rows
from extraction_assets.core.segment.sides import split_repeated_headers
from extraction_assets.core.segment.titles import attach_titles, heading_paths


def segment_sheet(grid: StyledGrid, headings: HeadingMap | None = None,
                  list_objects: list[ListObject] = (),
                  pivot_tables: list[PivotTable] = ()) -> list[Block]:
    """Split one sheet's StyledGrid into blocks, ordered by top-left cell (row, then column).

    ``headings`` is the workbook's :class:`~.headings.HeadingMap` (body font size and heading
    level of each bold size); when ``None`` it is computed from this sheet alone.
    ``list_objects`` are the sheet's Excel tables: each is a ``table`` block with exactly its
    range, header row and totals row (authoritative; the rules run on the cells outside them).
    A ListObject whose range is not valid A1 or overlaps an earlier one is ignored.
    ``pivot_tables`` are the sheet's pivot tables: each is a ``table`` block with exactly its
    location, header rows, row label columns and subtotal / grand total rows (authoritative too,
    see :func:`pivot_blocks`).

    Cells in hidden rows or columns belong to no block (they are flagged ``hidden`` in the
    StyledGrid); hidden sheets are segmented too and callers decide what to render.
    Work is column-wise over the cells (connected regions, header and data-row rules) plus
    Python per region and per row the rules look at, never per cell of a large table.
    """
    ctx = SheetContext(grid, headings)
    if not ctx.n and not list_objects and not pivot_tables:
        return []
    if headings is None:
        ctx.headings = detect_heading_levels([replace(grid, visibility="visible")])
    blocks, ignored = list_object_blocks(ctx, list_objects)
    pivots = pivot_blocks(ctx, pivot_tables, blocks)
    blocks += pivots
    free = np.arange(ctx.n)
    if blocks:
        owner = np.full(ctx.n, -1, np.int64)
        for j, block in enumerate(blocks):
            inside = ((ctx.row >= block.min_row) & (ctx.row <= block.max_row)
                      & (ctx.col >= block.min_col) & (ctx.col <= block.max_col) & (owner < 0))
            owner[inside] = j
            block.n_cells += int(inside.sum())
        free = np.flatnonzero(owner < 0)
    regions = [Region(cells) for cells in find_regions(ctx, free)]
    regions = beside_pivots(ctx, pivots, regions)
    regions = join_gaps(ctx, regions)
    regions = split_repeated_headers(ctx, join_tables(ctx, regions))
    for region in regions:
        blocks.extend(classify_region(ctx, region.cells, region.reasons))
    blocks.sort(key=lambda b: (b.min_row, b.min_col))
    for (r1, c1, r2, c2), why in ignored:
        for block in blocks:
            if not (r2 < block.min_row or block.max_row < r1 or c2 < block.min_col
                    or block.max_col < c1):
                block.reasons.append(why)
    titles = attach_titles(blocks)
    heading_paths(blocks, titles)
    beside: list[Block] = []
    for block in blocks:
        if block.kind == BlockKind.TABLE and not block.columns:
            find_header(ctx, block)
            beside += trim_columns(ctx, block)
            mark_data_rows(ctx, block)
    if beside:
        blocks = sorted(blocks + beside, key=lambda b: (b.min_row, b.min_col))
    return blocks
