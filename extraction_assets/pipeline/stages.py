"""One plain function per asset: Arrow tables in, Arrow tables out, no Dagster.

Each ``*_stage`` function takes the upstream tables of one partition (as read from Parquet) and
returns a :class:`StageOutput`: the tables it produces, keyed by table name (in the schemas of
:func:`~extraction_assets.pipeline.schemas.memory_schema`: the contract's, with the text columns that
repeat over rows dictionary-encoded), and the ``extraction_issues`` rows it found. The Dagster
assets only read, call, write and attach metadata; tests and the benchmark call these directly.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from html import escape as html_escape
from pathlib import PurePath
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import column_index, column_letter, parse_range
from extraction_assets.core.arrays import in_threads
from extraction_assets.core.blocks import (
    RECORD_KINDS,
    Block,
    BlockKind,
    Column,
    ListObject,
    PivotTable,
)
from extraction_assets.core.errors import ExtractionError
from extraction_assets.core.grid import GRID_COLUMNS, GRID_SCHEMA, StyledGrid
from extraction_assets.core.headings import detect_heading_levels
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import (
    CELL_SCHEMA,
    DOCUMENT_ITEM,
    CellStyle,
    Issue,
    ParsedSheet,
    SheetInfo,
    WorkbookStyles,
)
from extraction_assets.core.normalize import a1_refs, normalize_sheet
from extraction_assets.core.numfmt import is_valid_format
from extraction_assets.core.open import open_workbook
from extraction_assets.core.render.chunks import Chunk, chunk_sheet
from extraction_assets.core.render.coverage import unreached_cells
from extraction_assets.core.render.escape import md_text
from extraction_assets.core.render.html import form_html, table_html
from extraction_assets.core.render.markdown import joined, table_markdown
from extraction_assets.core.render.records import RecordSet, apply_markup
from extraction_assets.core.segment import segment_sheet
from extraction_assets.core.segment.documents import document_blocks
from extraction_assets.core.sniff import sniff
from extraction_assets.pipeline.schemas import constant_column, memory_schema, repeated_column


@dataclass
class StageOutput:
    """Tables produced by one stage for one partition, its issues, and facts worth showing in
    the materialization metadata (``facts``: JSON-compatible values by name)."""

    tables: dict[str, pa.Table]
    issues: list[Issue] = field(default_factory=list)
    facts: dict = field(default_factory=dict)


def _table(name: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=memory_schema(name))


def issue_rows(workbook_hash: str, issues: list[Issue]) -> list[dict]:
    """``extraction_issues`` rows for a list of issues."""
    return [dict(workbook_hash=workbook_hash, stage=i.stage, sheet_name=i.sheet_name, ref=i.ref,
                 severity=i.severity, code=i.code, message=i.message) for i in issues]


class StageError(Exception):
    """A stage failed on its input; ``output`` holds what it could still record (e.g. the
    ``workbooks`` row of a file that is not a spreadsheet) and ``error`` the typed cause."""

    def __init__(self, error: ExtractionError, output: StageOutput):
        super().__init__(f"{error.code}: {error.message}")
        self.error = error
        self.output = output


# -- workbook ---------------------------------------------------------------------------------
def workbook_stage(workbook_hash: str, data: bytes, source_path: str,
                   limits: Limits | None = None, passwords: Sequence[str] = ()) -> StageOutput:
    """File facts of one workbook: the ``workbooks`` row (format sniffed from magic bytes,
    sheet list with visibility, macro / external-link / encryption flags).

    ``container`` is the container with the format version when known (``zip``, ``ole2/biff8``,
    ``biff/biff4`` for a bare BIFF stream, ``xml`` for flat ODS, ``text`` for CSV); ``format``
    is ``xlsx``, ``xlsm``, ``xls``, ``xlsb``, ``ods``, ``fods``, ``csv``... When a non-OOXML
    file was converted by LibreOffice, an ``info`` issue ``converted`` names the tool, its
    version and the seconds it took; a file read by value gets ``styles_unavailable``. An
    encrypted file is opened with the first of ``passwords`` that works (``is_encrypted`` stays
    true).

    Raises:
        StageError: the file is not a readable workbook; its ``workbooks`` row is in
            ``output`` so the failure is still visible in the views.
    """
    sniffed = sniff(data)
    row = dict(
        workbook_hash=workbook_hash, source_path=source_path,
        filename=PurePath(source_path).name, size_bytes=len(data),
        container=sniffed.label, format=sniffed.format, sheet_count=0, sheet_names=[],
        sheet_visibility=[], has_macros=sniffed.has_macros, has_external_links=False,
        is_encrypted=sniffed.format == "encrypted-ooxml" or sniffed.encrypted, date_system=None,
    )
    try:
        wb = open_workbook(data, limits, passwords=passwords)
    except ExtractionError as exc:
        issue = Issue("workbook", None, None, "error", exc.code, exc.message)
        raise StageError(exc, StageOutput({"workbooks": _table("workbooks", [row])}, [issue]))
    try:
        row.update(
            sheet_count=len(wb.sheets), sheet_names=[s.name for s in wb.sheets],
            sheet_visibility=[s.visibility for s in wb.sheets], has_macros=wb.has_macros,
            has_external_links=wb.has_external_links, date_system=1904 if wb.date1904 else 1900,
        )
        # the workbook's other issues belong to parsed_sheets, which reports them once
        return StageOutput({"workbooks": _table("workbooks", [row])},
                           [i for i in wb.issues if i.stage == "workbook"],
                           {"conversion": wb.conversion} if wb.conversion else {})
    finally:
        wb.close()


# -- parsed_sheets ----------------------------------------------------------------------------
def parse_stage(workbook_hash: str, data: bytes, limits: Limits | None = None,
                passwords: Sequence[str] = ()) -> StageOutput:
    """Every cell of every worksheet as written, plus sheets, styles and workbook properties.

    Tables: ``parsed_cells``, ``parsed_sheets``, ``styles``, ``workbook_properties``,
    ``sheet_objects`` (comments, hyperlinks, validations, conditional formats, ListObjects,
    charts, pictures, defined names, external links; ``details`` is JSON) and ``rich_text``
    (one row per shared string with rich-text runs, ECMA-376 Part 1 §18.4.4/§18.4.7, or
    phonetic runs, §18.4.6: ``runs`` is compact JSON whose run properties equal to the default
    cell font are left out; ``phonetic`` is the joined reading, never part of cell values).
    Sheets are read one at a time (memory grows with the largest sheet's cells). An encrypted
    file is opened with the first of ``passwords`` that works.

    Raises:
        StageError: the package cannot be read at all.
    """
    try:
        wb = open_workbook(data, limits, passwords=passwords)
    except ExtractionError as exc:
        raise StageError(exc, StageOutput({}, [Issue("parsed_sheets", None, None, "error",
                                                     exc.code, exc.message)]))
    try:
        cell_tables, sheet_rows = [], []
        objects = list(wb.objects)
        styles = wb.styles
        style_ids = pa.array([s.number_format_id for s in styles], pa.int32())
        style_codes = pa.array([s.number_format for s in styles], pa.string())
        for sheet in wb.iter_sheets():
            cell_tables.append(_parsed_cells(workbook_hash, sheet, style_ids, style_codes))
            info = sheet.info
            sheet_rows.append(dict(
                workbook_hash=workbook_hash, sheet_index=info.index, sheet_name=info.name,
                visibility=info.visibility, kind=info.kind, part=info.part,
                declared_dimension=info.declared_dimension, n_cells=len(sheet),
                merged_ranges=sheet.merged_ranges, hidden_rows=sorted(set(sheet.hidden_rows)),
                hidden_columns=sorted(set(sheet.hidden_columns)), frozen_pane=sheet.frozen_pane,
                cf_ranges=sheet.cf_ranges,
                row_heights=json.dumps({str(r): h for r, h in sheet.row_heights.items()}),
                column_widths=json.dumps([{"min": a, "max": b, "width": w}
                                          for a, b, w in sheet.column_widths]),
            ))
            objects.extend(sheet.objects)
        cells = pa.concat_tables(cell_tables) if cell_tables else _table("parsed_cells", [])
        style_rows = [dict(workbook_hash=workbook_hash, style_index=i, **vars(s))
                      for i, s in enumerate(styles)]
        from extraction_assets.core.ooxml.strings import runs_without_defaults

        base = styles[0] if styles else CellStyle()
        base_font = {"size": base.font_size, "color": base.font_color, "font": base.font_name}
        rich_rows = [dict(workbook_hash=workbook_hash, string_index=r.index, text=r.text,
                          runs=json.dumps(runs_without_defaults(r.runs, base_font),
                                          ensure_ascii=False, separators=(",", ":")),
                          phonetic=r.phonetic)
                     for r in wb.rich_strings]
        props = [dict(workbook_hash=workbook_hash, date_system=1904 if wb.date1904 else 1900,
                      theme_colors=wb.theme_colors, indexed_colors=wb.indexed_colors,
                      has_macros=wb.has_macros, has_external_links=wb.has_external_links)]
        return StageOutput({
            "parsed_cells": cells,
            "parsed_sheets": _table("parsed_sheets", sheet_rows),
            "styles": _table("styles", style_rows),
            "workbook_properties": _table("workbook_properties", props),
            "sheet_objects": _table("sheet_objects", [
                dict(workbook_hash=workbook_hash, sheet_name=o.sheet_name, kind=o.kind, ref=o.ref,
                     name=o.name, text=o.text,
                     details=json.dumps(o.details, ensure_ascii=False, sort_keys=True))
                for o in objects]),
            "rich_text": _table("rich_text", rich_rows),
        }, list(wb.issues))
    except ExtractionError as exc:
        raise StageError(exc, StageOutput({}, [Issue("parsed_sheets", None, None, "error",
                                                     exc.code, exc.message)]))
    finally:
        wb.close()


# -- normalized_grids -------------------------------------------------------------------------
def _parsed_cells(workbook_hash: str, sheet: ParsedSheet, style_ids: pa.Array,
                  style_codes: pa.Array) -> pa.Table:
    """The ``parsed_cells`` rows of one sheet (Arrow, no per-cell Python)."""
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


def _sheet_cells(table: pa.Table, sheet_index: int) -> pa.Table:
    """The rows of one sheet: a zero-copy slice when the table holds the sheets one after the
    other (as the stages write them), else a filter."""
    index = table.column("sheet_index").to_numpy()
    if len(index) < 2 or bool(np.all(index[1:] >= index[:-1])):
        start, end = np.searchsorted(index, [sheet_index, sheet_index + 1])
        return table.slice(int(start), int(end - start))
    return table.filter(pc.equal(table.column("sheet_index"), sheet_index))


def normalize_stage(workbook_hash: str, parsed_cells: pa.Table, parsed_sheets: pa.Table,
                    styles: pa.Table, properties: pa.Table,
                    limits: Limits | None = None) -> StageOutput:
    """The StyledGrid of every sheet: tables ``cells`` and ``sheets`` (with the used range
    computed from the cells, never from the declared dimension). A number format Excel would not
    accept gives an ``invalid_number_format`` warning (its cells are shown as General).

    Raises:
        StageError: the grids, merged ranges filled, pass ``limits`` (``max_cells``,
            ``max_text_bytes``: a ``limit_exceeded`` error).
    """
    try:
        return _normalize(workbook_hash, parsed_cells, parsed_sheets, styles, properties,
                          Budget(limits or Limits()))
    except ExtractionError as exc:
        raise StageError(exc, StageOutput({}, [Issue("normalized_grids", None, None, "error",
                                                     exc.code, exc.message)]))


def _normalize(workbook_hash: str, parsed_cells: pa.Table, parsed_sheets: pa.Table,
               styles: pa.Table, properties: pa.Table, budget: Budget) -> StageOutput:
    props = properties.to_pylist()[0]
    style_list = [CellStyle(**{k: v for k, v in row.items() if k not in ("workbook_hash", "style_index")})
                  for row in sorted(styles.to_pylist(), key=lambda r: r["style_index"])]
    context = WorkbookStyles(style_list or [CellStyle()], props["theme_colors"] or [],
                             props["indexed_colors"], props["date_system"] == 1904)
    cell_tables, sheet_rows, issues = [], [], []
    cell_columns = list(CELL_SCHEMA.names)
    for info_row in parsed_sheets.to_pylist():
        info = SheetInfo(info_row["sheet_index"], info_row["sheet_name"], info_row["visibility"],
                         info_row["kind"], info_row["part"], info_row["declared_dimension"])
        sheet = ParsedSheet(
            info, cells=_sheet_cells(parsed_cells, info.index).select(cell_columns),
            merged_ranges=info_row["merged_ranges"] or [], hidden_rows=info_row["hidden_rows"] or [],
            hidden_columns=info_row["hidden_columns"] or [], frozen_pane=info_row["frozen_pane"],
        )
        cf_ranges = info_row["cf_ranges"] or []
        grid = normalize_sheet(sheet, context, cf_ranges, budget)
        issues.extend(_format_issues(grid))
        n = len(grid)
        cell_tables.append(pa.table(
            {"workbook_hash": constant_column(workbook_hash, n),
             "sheet_index": pa.array(np.full(n, info.index, dtype=np.int32)),
             "sheet_name": constant_column(info.name, n),
             **{name: grid.table.column(name) for name in GRID_COLUMNS}},
            schema=memory_schema("cells")))
        sheet_rows.append(dict(
            workbook_hash=workbook_hash, sheet_index=info.index, sheet_name=info.name,
            visibility=info.visibility, kind=info.kind,
            declared_dimension=info.declared_dimension, used_range=grid.used_range,
            n_cells=n, n_merged_ranges=len(sheet.merged_ranges),
            n_uncached_formulas=pc.sum(pc.equal(grid.table.column("value_status"),
                                                "uncached_formula")).as_py() or 0,
            hidden_rows=grid.hidden_rows,
            hidden_columns=[column_letter(c) for c in grid.hidden_columns],
            frozen_pane=grid.frozen_pane,
        ))
    cells = pa.concat_tables(cell_tables) if cell_tables else _table("cells", [])
    return StageOutput({"cells": cells, "sheets": _table("sheets", sheet_rows)}, issues)


def _format_issues(grid: StyledGrid) -> list[Issue]:
    """A warning per number format of the sheet's numeric cells that Excel would not accept
    (those cells were shown as General), naming the first cell that uses it."""
    table = grid.table
    numeric = table.filter(pc.is_valid(table.column("number_value")))
    issues = []
    for code in sorted(pc.unique(numeric.column("number_format")).to_pylist()):
        if not is_valid_format(code):
            first = numeric.filter(pc.equal(numeric.column("number_format"), code)).column("ref")[0]
            issues.append(Issue("normalized_grids", grid.sheet_name, first.as_py(), "warning",
                                "invalid_number_format",
                                f"number format {code!r} is not valid; shown as General"))
    return issues


def grids_from_tables(cells: pa.Table, sheets: pa.Table) -> list[StyledGrid]:
    """Rebuild the StyledGrid of every sheet from the ``cells`` and ``sheets`` tables."""
    grids = []
    for row in sheets.to_pylist():
        grids.append(StyledGrid(
            row["sheet_index"], row["sheet_name"], row["visibility"], row["kind"],
            row["declared_dimension"], [], row["hidden_rows"] or [],
            [column_index(c) for c in row["hidden_columns"] or []], row["frozen_pane"],
            _sheet_cells(cells, row["sheet_index"]).select(list(GRID_COLUMNS)).cast(GRID_SCHEMA),
        ))
    return grids


# -- segmented_blocks -------------------------------------------------------------------------
def drawing_blocks(sheet_index: int, sheet_name: str, objects: list[dict]) -> list[Block]:
    """``chart`` and ``image`` blocks of one sheet from its ``sheet_objects`` rows: the A1
    range of the drawing's anchor (from-cell to to-cell when known), the chart's text rendering
    (title, series, category/value pairs) or the picture's alt text, and its name as title."""
    out = []
    for obj in objects:
        if obj["kind"] not in ("chart", "picture"):
            continue
        details = json.loads(obj["details"] or "{}")
        anchor = obj["ref"] or "A1"
        to = details.get("anchor_to")
        try:
            r1, c1, _, _ = parse_range(anchor)
            r2, c2 = (parse_range(to)[2:] if to else (r1, c1))
        except ValueError:
            continue
        text = obj["text"] or obj["name"] or ""
        kind = BlockKind.CHART if obj["kind"] == "chart" else BlockKind.IMAGE
        block = Block(sheet_index, sheet_name, kind, r1, c1, max(r1, r2), max(c1, c2), 0,
                      title=obj["name"], heading_path=[sheet_name], text=text,
                      reasons=[f"{obj['kind']} anchored at {anchor}"])
        out.append(block)
    return out


def segment_stage(workbook_hash: str, cells: pa.Table, sheets: pa.Table,
                  objects: pa.Table | None = None) -> StageOutput:
    """Blocks of every visible sheet: tables ``blocks`` and ``block_columns``. Headings come
    from the workbook's font sizes (body size and bold size -> level, reported in ``facts``).
    Charts and pictures of ``objects`` (the ``sheet_objects`` table) become ``chart`` and
    ``image`` blocks; its Excel tables (ListObjects) and pivot tables are taken as declared,
    and so are the blocks a document declares (``document_item`` objects, see
    :func:`~extraction_assets.core.segment.documents.document_blocks`).
    Hidden sheets are not segmented; each gives an ``info`` issue so the skip is visible."""
    block_rows, column_rows, issues = [], [], []
    drawings: dict[str, list[dict]] = {}
    declared: dict[str, list[dict]] = {}
    list_objects: dict[str, list[ListObject]] = {}
    pivot_tables: dict[str, list[PivotTable]] = {}
    for obj in (objects.to_pylist() if objects is not None else []):
        drawings.setdefault(obj["sheet_name"], []).append(obj)
        if obj["kind"] == DOCUMENT_ITEM:
            declared.setdefault(obj["sheet_name"], []).append(obj)
        elif obj["kind"] == "table" and obj["ref"]:
            details = json.loads(obj["details"] or "{}")
            list_objects.setdefault(obj["sheet_name"], []).append(ListObject(
                obj["name"] or "", obj["ref"], details.get("header_row_count", 1),
                details.get("totals_row_count", 0), tuple(c or "" for c in details.get("columns", []))))
        elif obj["kind"] == "pivot_table" and obj["ref"]:
            details = json.loads(obj["details"] or "{}")
            pivot_tables.setdefault(obj["sheet_name"], []).append(PivotTable(
                obj["name"] or "", obj["ref"], details.get("first_data_row", 1),
                details.get("first_data_col", 1), tuple(details.get("row_items", []))))
    grids = grids_from_tables(cells, sheets)
    headings = detect_heading_levels([g for g in grids if g.visibility == "visible"])
    for grid in grids:
        if grid.visibility != "visible":
            if len(grid):
                issues.append(Issue("segmented_blocks", grid.sheet_name, grid.used_range, "info",
                                    "hidden_sheet_skipped",
                                    f"{grid.visibility} sheet {grid.sheet_name!r} with {len(grid)} "
                                    "cells is not segmented"))
            continue
        n_hidden = pc.sum(pc.and_(grid.table.column("hidden"),
                                  pc.not_equal(grid.table.column("display_text"), ""))).as_py() or 0
        if n_hidden:
            issues.append(Issue("segmented_blocks", grid.sheet_name, None, "info",
                                "hidden_cells_skipped",
                                f"{n_hidden} non-empty cells in hidden rows or columns are in no "
                                "block"))
        if grid.sheet_name in declared:
            blocks = document_blocks(grid, declared[grid.sheet_name])
        else:
            blocks = segment_sheet(grid, headings, list_objects.get(grid.sheet_name, []),
                                   pivot_tables.get(grid.sheet_name, [])) + drawing_blocks(
                grid.sheet_index, grid.sheet_name, drawings.get(grid.sheet_name, []))
        for block in sorted(blocks, key=lambda b: (b.min_row, b.min_col, b.kind)):
            block_rows.append(dict(
                workbook_hash=workbook_hash, sheet_index=block.sheet_index,
                sheet_name=block.sheet_name, block_id=block.block_id, kind=block.kind,
                a1_range=block.a1_range, min_row=block.min_row, min_col=block.min_col,
                max_row=block.max_row, max_col=block.max_col,
                header_row_count=block.header_row_count, title=block.title,
                heading_path=block.heading_path, n_cells=block.n_cells, reasons=block.reasons,
                text=block.text, level=block.level, skip_rows=block.skip_rows,
                total_rows=block.total_rows, row_group_cols=block.row_group_cols,
                group_rows=block.group_rows, unit=block.unit, source_ref=block.source_ref,
            ))
            for position, column in enumerate(block.columns, start=1):
                column_rows.append(dict(
                    workbook_hash=workbook_hash, block_id=block.block_id,
                    sheet_name=block.sheet_name, position=position, col=column.col,
                    column_letter=column_letter(column.col), header=column.header,
                    header_levels=column.header_levels, row=column.row,
                    group_label=column.group,
                ))
    return StageOutput({"blocks": _table("blocks", block_rows),
                        "block_columns": _table("block_columns", column_rows)}, issues,
                       {"body_font_size": headings.body_size,
                        "heading_levels": {str(size): level
                                           for size, level in sorted(headings.levels.items())}})


def blocks_from_tables(blocks: pa.Table, block_columns: pa.Table) -> list[Block]:
    """Rebuild :class:`Block` objects (with their columns) from the stored tables."""
    columns: dict[str, list[Column]] = {}
    for row in sorted(block_columns.to_pylist(), key=lambda r: (r["block_id"], r["position"])):
        columns.setdefault(row["block_id"], []).append(
            Column(row["col"], row["header"], row["header_levels"], row["row"],
                   bool(row["group_label"])))
    out = []
    for row in blocks.to_pylist():
        block = Block(row["sheet_index"], row["sheet_name"], row["kind"], row["min_row"],
                      row["min_col"], row["max_row"], row["max_col"], row["n_cells"],
                      row["header_row_count"], row["title"], row["heading_path"],
                      row["reasons"], columns.get(row["block_id"], []), row["text"] or "",
                      level=row["level"], skip_rows=row["skip_rows"] or [],
                      total_rows=row["total_rows"] or [],
                      row_group_cols=row["row_group_cols"] or [],
                      group_rows=row["group_rows"] or [],
                      unit=row["unit"], source_ref=row.get("source_ref"))
        out.append(block)
    return out


# -- rendered_chunks --------------------------------------------------------------------------
def render_stage(workbook_hash: str, filename: str, cells: pa.Table, sheets: pa.Table,
                 blocks: pa.Table, block_columns: pa.Table,
                 count_tokens: Callable[[str], int], max_tokens: int,
                 min_tokens: int = 0,
                 markup: dict[tuple[str, str], str] | None = None,
                 count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None
                 ) -> StageOutput:
    """Records, renderings and chunks: tables ``records`` (one per table data or total row, one
    per ``key_value`` block),
    ``renderings`` (per block: Markdown, HTML and ``Header: value`` text) and ``chunks``
    (Markdown within ``max_tokens`` tokens of ``count_tokens``, the embedder's own tokenizer;
    small neighbours under one heading merged below ``min_tokens``). ``markup`` (see
    :func:`rich_markup`) replaces the text of cells with superscripts or subscripts in Markdown,
    HTML and chunks (records keep the plain text). ``count_tokens_batch`` (the same counts for
    a list of texts, e.g. :meth:`~extraction_assets.search.embedding.LocalEmbedder.count_tokens_batch`)
    counts table rows and chunks in batches when given. A chunk still over the budget (a single
    cell that cannot be cut) gives a ``warning`` issue; a cell whose value reaches no record,
    header or block text an ``error`` issue (:func:`lost_value_issues`), counted in ``facts``
    as ``lost_values`` with up to ten of them in ``lost_values_sample``."""
    grids = {g.sheet_index: g for g in grids_from_tables(cells, sheets)}
    by_sheet: dict[int, list[Block]] = {}
    for block in blocks_from_tables(blocks, block_columns):
        by_sheet.setdefault(block.sheet_index, []).append(block)
    plain = {sheet_index: list(sheet_blocks) for sheet_index, sheet_blocks in by_sheet.items()}
    for sheet_index, sheet_blocks in by_sheet.items():
        grid = grids[sheet_index]
        marked = {ref: text for (sheet, ref), text in (markup or {}).items()
                  if sheet == grid.sheet_name}
        if marked:
            by_sheet[sheet_index] = [apply_markup(block, grid, marked) for block in sheet_blocks]
    # the records of every table and form of the workbook, built in one pass
    record_set = RecordSet([(grids[i], [b for b in by_sheet[i] if b.kind in RECORD_KINDS])
                            for i in sorted(by_sheet)])
    lost = unreached_cells([(grids[i], plain[i]) for i in sorted(by_sheet)], record_set)
    records = record_set.by_block()
    chunk_rows, issues = [], []
    rendered: list[tuple[Block, pa.Array, pa.Array, pa.Array]] = []
    for sheet_index in sorted(by_sheet):
        grid = grids[sheet_index]
        for block in by_sheet[sheet_index]:
            rows = records.get(block.block_id)
            if block.kind == BlockKind.TABLE:  # joined by Arrow: a large table's text is no Python str
                rendered.append((block, table_markdown(block, rows), table_html(block, rows, grid),
                                 joined([], rows.texts())))
                continue
            if block.kind == BlockKind.KEY_VALUE:
                markdown, html, text = (md_text(block.text), form_html(block, rows),
                                        rows.texts()[0].as_py())
            else:
                markdown, html, text = (md_text(block.text), f"<p>{html_escape(block.text)}</p>",
                                        block.text)
            rendered.append((block, *(pa.array([v], pa.string()) for v in (markdown, html, text))))
    renderings = _renderings_table(workbook_hash, rendered)
    del rendered
    record_set.forget("html", "texts")  # the chunks need only the lines

    def cut_chunks() -> None:
        for sheet_index in sorted(by_sheet):
            for chunk in chunk_sheet(by_sheet[sheet_index], records, count_tokens, max_tokens,
                                     min_tokens, count_tokens_batch):
                chunk_rows.append(_chunk_row(workbook_hash, len(chunk_rows), chunk))
                if chunk.n_tokens > max_tokens:
                    issues.append(Issue(
                        "rendered_chunks", chunk.sheet_name, chunk.a1_ranges[0], "warning",
                        "chunk_over_budget",
                        f"chunk has {chunk.n_tokens} tokens; the budget is {max_tokens}"))

    issues += lost_value_issues(lost)
    # the records' JSON is built by Arrow while the chunks are cut
    in_threads([cut_chunks, record_set.record_json, record_set.display_json,
                record_set.merged_json])
    return StageOutput({"records": _records_table(workbook_hash, filename, record_set),
                        "renderings": renderings,
                        "chunks": _table("chunks", chunk_rows)}, issues,
                       {"lost_values": len(lost),
                        "lost_values_sample": [f"{sheet}!{ref}" for sheet, ref, _, _ in lost[:10]]})


#: Most cells that reach no output listed one issue each (the rest are counted in one more).
MAX_LOST_ISSUES = 100


def lost_value_issues(lost: list[tuple[str, str, str, str]]) -> list[Issue]:
    """``error`` issues (code ``value_not_in_output``) for the cells of
    :func:`~extraction_assets.core.render.coverage.unreached_cells`: one per cell, at most
    :data:`MAX_LOST_ISSUES`, then one counting the others."""
    out = [Issue("rendered_chunks", sheet, ref, "error", "value_not_in_output",
                 f"{ref} {text[:60]!r}: {where}, so in no record, rendering or chunk")
           for sheet, ref, text, where in lost[:MAX_LOST_ISSUES]]
    if len(lost) > MAX_LOST_ISSUES:
        out.append(Issue("rendered_chunks", None, None, "error", "value_not_in_output",
                         f"{len(lost) - MAX_LOST_ISSUES} more cells reach no record, rendering "
                         "or chunk"))
    return out


def _renderings_table(workbook_hash: str,
                      rendered: list[tuple[Block, pa.Array, pa.Array, pa.Array]]) -> pa.Table:
    """The ``renderings`` rows: per block its Markdown, HTML and text (one-element arrays)."""
    if not rendered:
        return _table("renderings", [])
    blocks = [r[0] for r in rendered]
    return pa.table({
        "workbook_hash": pa.array([workbook_hash] * len(blocks), pa.string()),
        "block_id": pa.array([b.block_id for b in blocks], pa.string()),
        "sheet_name": pa.array([b.sheet_name for b in blocks], pa.string()),
        "kind": pa.array([b.kind for b in blocks], pa.string()),
        **{name: pa.chunked_array([r[k] for r in rendered], pa.string())  # no copy
           for k, name in ((1, "markdown"), (2, "html"), (3, "text"))},
    }, schema=memory_schema("renderings"))


def _records_table(workbook_hash: str, filename: str, records: RecordSet) -> pa.Table:
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
        "filename": constant_column(filename, n),
    }, schema=memory_schema("records"))


def rich_markup(parsed_cells: pa.Table, rich_text: pa.Table) -> dict[tuple[str, str], str]:
    """Markdown/HTML text of the cells whose shared string has superscript or subscript runs
    (``<sup>``/``<sub>``, other run text escaped for HTML), by (sheet name, A1 ref)."""
    marked = {}
    for row in rich_text.to_pylist():
        runs = json.loads(row["runs"] or "[]")
        if any(run.get("vert_align") in ("superscript", "subscript") for run in runs):
            marked[row["string_index"]] = "".join(
                f"<{TAG_OF[run['vert_align']]}>{html_escape(run['text'])}"
                f"</{TAG_OF[run['vert_align']]}>" if run.get("vert_align") in TAG_OF
                else html_escape(run["text"]) for run in runs)
    if not marked:
        return {}
    cells = parsed_cells.filter(pc.is_in(parsed_cells.column("string_index"),
                                         pa.array(sorted(marked), pa.int32())))
    return {(c["sheet_name"], c["ref"]): marked[c["string_index"]]
            for c in cells.select(["sheet_name", "ref", "string_index"]).to_pylist()}


TAG_OF = {"superscript": "sup", "subscript": "sub"}


def _chunk_row(workbook_hash: str, index: int, chunk: Chunk) -> dict:
    return dict(workbook_hash=workbook_hash, chunk_id=chunk.chunk_id, chunk_index=index,
                sheet_name=chunk.sheet_name, block_ids=chunk.block_ids,
                a1_ranges=chunk.a1_ranges, heading_path=chunk.heading_path, text=chunk.text,
                n_tokens=chunk.n_tokens, rows=chunk.rows, continuation=chunk.continuation)


#: The assets :func:`run_pipeline` can stop after, in graph order.
PIPELINE_ASSETS = ("parsed_sheets", "normalized_grids", "segmented_blocks", "rendered_chunks")


def run_pipeline(data: bytes, *, filename: str = "workbook.xlsx",
                 count_tokens: Callable[[str], int] | None = None, max_tokens: int = 512,
                 min_tokens: int = 0, limits: Limits | None = None,
                 count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None,
                 passwords: Sequence[str] = (),
                 until: str = "rendered_chunks") -> dict[str, pa.Table]:
    """Every stage but the embeddings, in one call and without Dagster: parse, normalize,
    segment and, when ``count_tokens`` is given, render (``count_tokens_batch``, the same counts
    for a list of texts, makes it faster). ``until`` names the last of them to
    run (one of :data:`PIPELINE_ASSETS`; default all). Returns every table by name (see
    :mod:`extraction_assets.pipeline.schemas`), the issues of all stages as ``extraction_issues``.

    Raises:
        StageError: the file cannot be read (typed cause in ``error``).
        ValueError: ``until`` is not one of :data:`PIPELINE_ASSETS`.
    """
    if until not in PIPELINE_ASSETS:
        raise ValueError(f"unknown stage {until!r}; choose one of {', '.join(PIPELINE_ASSETS)}")
    last = PIPELINE_ASSETS.index(until)
    workbook_hash = hashlib.sha256(data).hexdigest()
    parsed = parse_stage(workbook_hash, data, limits, passwords)
    t = parsed.tables
    outputs = [parsed]
    if last >= 1:
        normalized = normalize_stage(workbook_hash, t["parsed_cells"], t["parsed_sheets"],
                                     t["styles"], t["workbook_properties"], limits)
        cells, sheets = normalized.tables["cells"], normalized.tables["sheets"]
        outputs.append(normalized)
    if last >= 2:
        segmented = segment_stage(workbook_hash, cells, sheets, t["sheet_objects"])
        outputs.append(segmented)
    if last >= 3 and count_tokens is not None:
        outputs.append(render_stage(
            workbook_hash, filename, cells, sheets, segmented.tables["blocks"],
            segmented.tables["block_columns"], count_tokens, max_tokens, min_tokens,
            rich_markup(t["parsed_cells"], t["rich_text"]), count_tokens_batch))
    tables = {name: table for output in outputs for name, table in output.tables.items()}
    tables["extraction_issues"] = _table("extraction_issues", issue_rows(
        workbook_hash, [issue for output in outputs for issue in output.issues]))
    return tables
