"""Codecs between the extraction model of :mod:`extraction_assets.core` and the Arrow tables of
:mod:`.schemas`: one encoder and, where a later stage reads the type back, one decoder per type.

Each table's columns are named once, in :data:`.schemas.SCHEMAS`; the encoders of the types
whose attributes carry the same names as the columns (blocks, chunks, issues) take the columns
from the schema, so a new column is a new schema field and a new attribute, nothing more. Rows
and columns are 1-based; tables come out in the in-memory schemas (:func:`.schemas.memory_schema`).
"""

from __future__ import annotations

import hashlib
import json
from html import escape as html_escape
from typing import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import column_index, column_letter
from extraction_assets.core.blocks import RECORD_KINDS, Block, BlockKind, Column
from extraction_assets.core.formula.refs import formula_references
from extraction_assets.core.grid import GRID_COLUMNS, GRID_SCHEMA, StyledGrid
from extraction_assets.core.model import Issue, ParsedSheet, SheetObject
from extraction_assets.core.normalize import a1_refs
from extraction_assets.core.render.chunks import Chunk
from extraction_assets.core.render.records import RecordSet
from extraction_assets.core.render.units import block_place, record_units
from extraction_assets.pipeline.schemas import (
    SCHEMAS,
    constant_column,
    memory_schema,
    repeated_column,
)


def table(name: str, rows: list[dict]) -> pa.Table:
    """Table ``name`` (:data:`.schemas.SCHEMAS`) from row dicts, in its in-memory schema.

    Raises:
        KeyError: unknown table name.
    """
    return pa.Table.from_pylist(rows, schema=memory_schema(name))


def _columns(name: str) -> list[str]:
    """The columns of table ``name`` but ``workbook_hash`` (which the encoders add)."""
    return [column for column in SCHEMAS[name].names if column != "workbook_hash"]


# -- issues -----------------------------------------------------------------------------------
def issue_rows(workbook_hash: str, issues: Iterable[Issue]) -> list[dict]:
    """``extraction_issues`` rows for a list of issues."""
    columns = _columns("extraction_issues")
    return [dict(workbook_hash=workbook_hash, **{c: getattr(i, c) for c in columns})
            for i in issues]


def issues_table(workbook_hash: str, issues: Iterable[Issue]) -> pa.Table:
    """The ``extraction_issues`` table of a list of issues."""
    return table("extraction_issues", issue_rows(workbook_hash, issues))


# -- cells and grids ---------------------------------------------------------------------------
def parsed_cells_table(workbook_hash: str, sheet: ParsedSheet, style_ids: pa.Array,
                       style_codes: pa.Array) -> pa.Table:
    """The ``parsed_cells`` rows of one sheet (Arrow, no per-cell Python): ``style_ids`` and
    ``style_codes`` are the number format id and code of each style index (an unknown index
    takes style 0's); a formula without a cached value is ``uncached_formula``."""
    cells = sheet.cells
    n = cells.num_rows
    style_index = cells.column("style_index").combine_chunks()
    known = pc.and_(pc.greater_equal(style_index, 0), pc.less(style_index, len(style_ids)))
    lookup = pc.if_else(known, style_index, 0)
    uncached = pc.and_(pc.is_null(cells.column("value")), pc.is_valid(cells.column("formula")))
    columns = {
        "workbook_hash": constant_column(workbook_hash, n),
        "sheet_index": pa.array(np.full(n, sheet.info.index, dtype=np.int32)),
        "sheet_name": constant_column(sheet.info.name, n),
        "row": cells.column("row"), "col": cells.column("col"),
        "ref": a1_refs(cells.column("row").combine_chunks(), cells.column("col").combine_chunks()),
        "data_type": cells.column("data_type"), "value": cells.column("value"),
        "formula": cells.column("formula"), "formula_kind": cells.column("formula_kind"),
        "value_status": pc.if_else(uncached, "uncached_formula", "ok"),
        "style_index": style_index, "number_format_id": style_ids.take(lookup),
        "number_format": style_codes.take(lookup), "string_index": cells.column("string_index"),
    }
    return pa.table(columns, schema=memory_schema("parsed_cells"))


def formula_refs_table(workbook_hash: str, sheets: Sequence[tuple[str, pa.Table]]) -> pa.Table:
    """The ``formula_refs`` rows: for each formula cell of ``sheets`` (``(sheet name, parsed
    cells)``), each reference its formula reads
    (:func:`~extraction_assets.core.formula.refs.formula_references`), ``position`` its
    1-based order in the formula, ``reads`` the operand as written, bounds 1-based."""
    found: list[tuple] = []
    for name, cells in sheets:
        if cells.num_rows == 0:
            continue
        has = pa.array(np.flatnonzero(pc.is_valid(cells.column("formula")).to_numpy(
            zero_copy_only=False)))
        for row, col, formula in zip(cells.column("row").take(has).to_pylist(),
                                     cells.column("col").take(has).to_pylist(),
                                     cells.column("formula").take(has).to_pylist()):
            found.extend((name, row, col, position, ref.text, ref.kind, ref.sheet, ref.a1_range,
                          ref.first_row, ref.first_col, ref.last_row, ref.last_col)
                         for position, ref in enumerate(formula_references(formula, name), 1))
    names = ("sheet_name", "row", "col", "position", "reads", "kind", "reads_sheet",
             "reads_range", "first_row", "first_col", "last_row", "last_col")
    columns = dict(zip(names, (list(c) for c in zip(*found)))) if found else {
        name: [] for name in names}
    n = len(found)
    columns["workbook_hash"] = constant_column(workbook_hash, n)
    columns["ref"] = a1_refs(pa.array(columns["row"], pa.int32()),
                             pa.array(columns["col"], pa.int32()))
    return pa.table(columns, schema=memory_schema("formula_refs"))


def sheet_rows(table: pa.Table, sheet_index: int) -> pa.Table:
    """The rows of ``table`` (a per-cell table) of one sheet: a zero-copy slice when the table
    holds the sheets one after the other (as the stages write them), else a filter."""
    index = table.column("sheet_index").to_numpy()
    if len(index) < 2 or bool(np.all(index[1:] >= index[:-1])):
        start, end = np.searchsorted(index, [sheet_index, sheet_index + 1])
        return table.slice(int(start), int(end - start))
    return table.filter(pc.equal(table.column("sheet_index"), sheet_index))


def grid_cells_table(workbook_hash: str, grid: StyledGrid) -> pa.Table:
    """The ``cells`` rows of one StyledGrid (its table with the partition and sheet added)."""
    n = len(grid)
    return pa.table({"workbook_hash": constant_column(workbook_hash, n),
                     "sheet_index": pa.array(np.full(n, grid.sheet_index, dtype=np.int32)),
                     "sheet_name": constant_column(grid.sheet_name, n),
                     **{name: grid.table.column(name) for name in GRID_COLUMNS}},
                    schema=memory_schema("cells"))


def grids_from_tables(cells: pa.Table, sheets: pa.Table) -> list[StyledGrid]:
    """Rebuild the StyledGrid of every sheet from the ``cells`` and ``sheets`` tables."""
    return [StyledGrid(
        row["sheet_index"], row["sheet_name"], row["visibility"], row["kind"],
        row["declared_dimension"], [], row["hidden_rows"] or [],
        [column_index(c) for c in row["hidden_columns"] or []], row["frozen_pane"],
        sheet_rows(cells, row["sheet_index"]).select(list(GRID_COLUMNS)).cast(GRID_SCHEMA),
    ) for row in sheets.to_pylist()]


# -- sheet objects -----------------------------------------------------------------------------
def sheet_objects_table(workbook_hash: str, objects: Iterable[SheetObject]) -> pa.Table:
    """The ``sheet_objects`` table (``details`` as JSON text, keys sorted)."""
    return table("sheet_objects", [
        dict(workbook_hash=workbook_hash, sheet_name=o.sheet_name, kind=o.kind, ref=o.ref,
             name=o.name, text=o.text,
             details=json.dumps(o.details, ensure_ascii=False, sort_keys=True))
        for o in objects])


def sheet_objects_from_table(objects: pa.Table | None) -> list[SheetObject]:
    """The :class:`SheetObject` s of a ``sheet_objects`` table (none for ``None``)."""
    if objects is None:
        return []
    return [SheetObject(o["kind"], o["sheet_name"], o["ref"], o["name"], o["text"],
                        json.loads(o["details"] or "{}")) for o in objects.to_pylist()]


# -- blocks ------------------------------------------------------------------------------------
def block_tables(workbook_hash: str, blocks: Iterable[Block]) -> dict[str, pa.Table]:
    """The ``blocks`` and ``block_columns`` tables of ``blocks`` (in the order given; a
    column's ``position`` is 1-based within its block)."""
    block_columns = _columns("blocks")
    block_rows, column_rows = [], []
    for block in blocks:
        block_rows.append(dict(workbook_hash=workbook_hash,
                               **{c: getattr(block, c) for c in block_columns}))
        for position, column in enumerate(block.columns, start=1):
            column_rows.append(dict(
                workbook_hash=workbook_hash, block_id=block.block_id,
                sheet_name=block.sheet_name, position=position, col=column.col,
                column_letter=column_letter(column.col), header=column.header,
                header_levels=column.header_levels, row=column.row, group_label=column.group,
            ))
    return {"blocks": table("blocks", block_rows),
            "block_columns": table("block_columns", column_rows)}


def blocks_from_tables(blocks: pa.Table, block_columns: pa.Table) -> list[Block]:
    """Rebuild :class:`Block` objects (with their columns) from the stored tables."""
    columns: dict[str, list[Column]] = {}
    for row in sorted(block_columns.to_pylist(), key=lambda r: (r["block_id"], r["position"])):
        columns.setdefault(row["block_id"], []).append(
            Column(row["col"], row["header"], row["header_levels"], row["row"],
                   bool(row["group_label"])))
    return [Block(row["sheet_index"], row["sheet_name"], row["kind"], row["min_row"],
                  row["min_col"], row["max_row"], row["max_col"], row["n_cells"],
                  row["header_row_count"], row["title"], row["heading_path"], row["reasons"],
                  columns.get(row["block_id"], []), row["text"] or "", level=row["level"],
                  skip_rows=row["skip_rows"] or [], total_rows=row["total_rows"] or [],
                  row_group_cols=row["row_group_cols"] or [], group_rows=row["group_rows"] or [],
                  group_levels=row["group_levels"] or [],
                  row_label_cols=row["row_label_cols"] or [], unit_rows=row["unit_rows"] or [],
                  unit=row["unit"], source_ref=row.get("source_ref"))
            for row in blocks.to_pylist()]


# -- records, renderings, chunks ---------------------------------------------------------------
def records_table(workbook_hash: str, filename: str, records: RecordSet) -> pa.Table:
    """The ``records`` rows of every block of ``records`` (JSON objects built column-wise)."""
    n = len(records.rows)
    blocks, of = records.blocks, records.block_of
    return pa.table({
        "workbook_hash": constant_column(workbook_hash, n),
        "block_id": repeated_column([b.block_id for b in blocks], of),
        "sheet_name": repeated_column([b.sheet_name for b in blocks], of),
        "row": pa.array(records.rows, pa.int32()), "a1_range": records.a1_ranges,
        "role": pa.array(records.roles, pa.string()), "record": records.record_json(),
        "display": records.display_json(), "merged_from": records.merged_json(),
        "computed": records.computed_json(),
        "row_path": pa.array(records.row_paths, pa.list_(pa.string())),
        "filename": constant_column(filename, n),
    }, schema=memory_schema("records"))


def record_units_table(workbook_hash: str, records: RecordSet, chunks: Sequence[Chunk]
                       ) -> pa.Table:
    """The ``record_units`` rows: the retrieval text and value cells of each record that is a
    unit (:func:`~extraction_assets.core.render.units.record_units`), and ``chunk_id``, the
    first of ``chunks`` holding its row (else the first holding its block; null when none)."""
    units = record_units(records, [block_place(block) for block in records.blocks])
    holder: dict = {}  # (block id, row) -> the first chunk holding it; block id -> its first
    for chunk in chunks:
        chunk_id = chunk.chunk_id
        for block_id in chunk.block_ids:
            holder.setdefault(block_id, chunk_id)
            for row in chunk.rows:
                holder.setdefault((block_id, row), chunk_id)
    of = records.block_of[units.index]
    block_ids = [b.block_id for b in records.blocks]
    rows = records.rows[units.index]
    return pa.table({
        "workbook_hash": constant_column(workbook_hash, len(units.index)),
        "block_id": repeated_column(block_ids, of),
        "sheet_name": repeated_column([b.sheet_name for b in records.blocks], of),
        "row": pa.array(rows, pa.int32()),
        "a1_range": records.a1_ranges.take(pa.array(units.index)),
        "chunk_id": pa.array([holder.get((block_ids[k], row), holder.get(block_ids[k]))
                              for k, row in zip(of.tolist(), rows.tolist())],
                             pa.string()).dictionary_encode(),
        "row_path": pa.array([records.row_paths[i] for i in units.index.tolist()],
                             pa.list_(pa.string())),
        "cells": units.cells, "text": units.text,
    }, schema=memory_schema("record_units"))


def renderings_table(workbook_hash: str,
                     rendered: list[tuple[Block, pa.Array, pa.Array, pa.Array]]) -> pa.Table:
    """The ``renderings`` rows: per block its Markdown, HTML and text (one-element arrays,
    joined without a copy)."""
    if not rendered:
        return table("renderings", [])
    blocks = [r[0] for r in rendered]
    return pa.table({
        "workbook_hash": pa.array([workbook_hash] * len(blocks), pa.string()),
        "block_id": pa.array([b.block_id for b in blocks], pa.string()),
        "sheet_name": pa.array([b.sheet_name for b in blocks], pa.string()),
        "kind": pa.array([b.kind for b in blocks], pa.string()),
        **{name: pa.chunked_array([r[k] for r in rendered], pa.string())
           for k, name in ((1, "markdown"), (2, "html"), (3, "text"))},
    }, schema=memory_schema("renderings"))


def chunks_table(workbook_hash: str, chunks: Iterable[Chunk]) -> pa.Table:
    """The ``chunks`` table; ``chunk_index`` is the 0-based position of each chunk."""
    columns = [c for c in _columns("chunks") if c != "chunk_index"]
    return table("chunks", [dict(workbook_hash=workbook_hash, chunk_index=index,
                                 **{c: getattr(chunk, c) for c in columns})
                            for index, chunk in enumerate(chunks)])


# -- rich text ---------------------------------------------------------------------------------
#: HTML element of each vertical alignment of a rich-text run (ECMA-376 §18.4.14 ``vertAlign``).
TAG_OF = {"superscript": "sup", "subscript": "sub"}


def marked_strings(rich_text: pa.Table) -> dict[int, str]:
    """Markdown/HTML text of the shared strings (by index) of the ``rich_text`` table that have
    superscript or subscript runs (``<sup>``/``<sub>``, other run text escaped for HTML)."""
    marked = {}
    for row in rich_text.to_pylist():
        runs = json.loads(row["runs"] or "[]")
        if any(run.get("vert_align") in TAG_OF for run in runs):
            marked[row["string_index"]] = "".join(
                f"<{TAG_OF[run['vert_align']]}>{html_escape(run['text'])}"
                f"</{TAG_OF[run['vert_align']]}>" if run.get("vert_align") in TAG_OF
                else html_escape(run["text"]) for run in runs)
    return marked


#: The columns of ``parsed_cells`` that :func:`cell_markup` reads.
MARKUP_COLUMNS = ["sheet_name", "ref", "string_index"]


def cell_markup(parsed_cells: pa.Table, marked: dict[int, str]) -> dict[tuple[str, str], str]:
    """The text of ``marked`` (see :func:`marked_strings`) of the cells of ``parsed_cells``
    (at least :data:`MARKUP_COLUMNS`) that hold those shared strings, by (sheet name, A1
    ref)."""
    if not marked:
        return {}
    cells = parsed_cells.filter(pc.is_in(parsed_cells.column("string_index"),
                                         pa.array(sorted(marked), pa.int32())))
    return {(c["sheet_name"], c["ref"]): marked[c["string_index"]]
            for c in cells.select(MARKUP_COLUMNS).to_pylist()}


# -- retrieval units ---------------------------------------------------------------------------
def record_unit_id(text: str, sheet_name: str, a1_range: str) -> str:
    """The unit id of a record: sha256 hex of ``record``, its retrieval text, sheet and A1
    range (never a chunk's id, which hashes the text, sheet and ranges alone)."""
    return hashlib.sha256("\x1f".join(["record", text, sheet_name, a1_range]).encode()).hexdigest()


#: The kinds of block a chunk may hold and still take its vector from its records': blocks
#: that give records, and titles (whose words lead the records' text as their place).
RECORD_VECTOR_KINDS = frozenset({*RECORD_KINDS, BlockKind.TITLE})


def retrieval_units(workbook_hash: str, filename: str, source_path: str, chunks: pa.Table,
                    record_units: pa.Table, blocks: pa.Table,
                    count_tokens_batch: Callable[[Sequence[str]], list[int]]) -> list[dict]:
    """The rows of the LanceDB ``units`` table for one partition (without vectors): its
    ``chunks`` as they are, then its ``record_units`` (the records' retrieval texts and value
    cells as ``rendered_chunks`` built them, :mod:`~extraction_assets.core.render.units`), each
    with its block's heading path and title (``blocks``). Tables of the partition;
    ``count_tokens_batch`` counts the record texts' tokens.

    A chunk unit is marked ``from_records`` (its vector is made of its record units' vectors,
    see :func:`~extraction_assets.search.retrieval.index_units`, instead of embedding its
    text) when some record unit points at it and every block it holds is of
    :data:`RECORD_VECTOR_KINDS`: its words are then all in those records' texts, which are
    embedded already. A rule chosen by measurement (docs/retrieval.md): embedding such chunks
    too gave the same retrieval figures for ~40 % more tokens to embed."""
    by_block = {b["block_id"]: b for b in blocks.select(
        ["block_id", "kind", "heading_path", "title"]).to_pylist()}
    rows = record_units.select(["block_id", "sheet_name", "a1_range", "chunk_id", "row_path",
                                "cells", "text"]).to_pylist()
    pointed = {r["chunk_id"] for r in rows}
    units = [dict(workbook_hash=workbook_hash, unit_id=c["chunk_id"],
                  kind="chunk", chunk_id=c["chunk_id"], filename=filename,
                  source_path=source_path, sheet_name=c["sheet_name"],
                  a1_ranges=list(c["a1_ranges"]), heading_path=list(c["heading_path"]),
                  block_id="", title="", row_path=[], cells=[], text=c["text"],
                  n_tokens=c["n_tokens"], from_records=c["chunk_id"] in pointed and all(
                      by_block[b]["kind"] in RECORD_VECTOR_KINDS for b in c["block_ids"]))
             for c in chunks.select(["chunk_id", "sheet_name", "a1_ranges", "heading_path",
                                     "block_ids", "text", "n_tokens"]).to_pylist()]
    counts = count_tokens_batch([r["text"] for r in rows]) if rows else []
    for r, n_tokens in zip(rows, counts):
        block = by_block[r["block_id"]]
        units.append(dict(
            workbook_hash=workbook_hash,
            unit_id=record_unit_id(r["text"], r["sheet_name"], r["a1_range"]), kind="record",
            chunk_id=r["chunk_id"], filename=filename, source_path=source_path,
            sheet_name=r["sheet_name"], a1_ranges=[r["a1_range"]],
            heading_path=list(block["heading_path"]), block_id=r["block_id"],
            title=block["title"] or "", row_path=r["row_path"], cells=r["cells"],
            text=r["text"], n_tokens=n_tokens, from_records=False))
    return units
