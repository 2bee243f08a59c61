"""One plain function per asset: Arrow tables in, Arrow tables out, no Dagster.

Each ``*_stage`` function takes the upstream tables of one partition (as read from Parquet) and
returns a :class:`StageOutput`: the tables it produces, keyed by table name (in the schemas of
:func:`~extraction_assets.pipeline.schemas.memory_schema`: the contract's, with the text columns
that repeat over rows dictionary-encoded), and the ``extraction_issues`` rows it found. The
model's objects become rows through :mod:`.codecs`; :mod:`.registry` says which tables each stage
reads and writes, and runs them in order (:func:`~.registry.run_pipeline`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import column_letter
from extraction_assets.core.arrays import in_threads
from extraction_assets.core.blocks import RECORD_KINDS, Block
from extraction_assets.core.errors import ExtractionError
from extraction_assets.core.formula.evaluate import compute_uncached
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import (
    CELL_SCHEMA,
    DOCUMENT_ITEM,
    CellStyle,
    Issue,
    ParsedSheet,
    SheetInfo,
    SheetObject,
    Workbook,
    WorkbookStyles,
)
from extraction_assets.core.normalize import normalize_sheet
from extraction_assets.core.numfmt import is_valid_format
from extraction_assets.core.ooxml.strings import runs_without_defaults
from extraction_assets.core.open import open_workbook
from extraction_assets.core.render.block import render_block
from extraction_assets.core.render.chunks import Chunk, chunk_sheet, text_line_rows
from extraction_assets.core.render.coverage import ChunkReach, unreached_cells
from extraction_assets.core.render.markup import apply_markup
from extraction_assets.core.render.records import RecordSet
from extraction_assets.core.segment import segment_sheet
from extraction_assets.core.segment.declared import declared_tables
from extraction_assets.core.segment.documents import document_blocks
from extraction_assets.core.segment.drawings import drawing_blocks
from extraction_assets.core.segment.headings import LAST_LEVEL, detect_heading_levels
from extraction_assets.core.sniff import sniff
from extraction_assets.pipeline.codecs import (
    block_tables,
    blocks_from_tables,
    chunks_table,
    formula_refs_table,
    grid_cells_table,
    grids_from_tables,
    parsed_cells_table,
    record_units_table,
    records_table,
    renderings_table,
    retrieval_units,
    sheet_objects_from_table,
    sheet_objects_table,
    sheet_rows,
    table,
)


@dataclass
class StageOutput:
    """Tables produced by one stage for one partition, its issues, and facts worth showing in
    the materialization metadata (``facts``: JSON-compatible values by name); ``opened``, the
    file as :func:`workbook_stage` opened it, for :func:`parse_stage` (which closes it)."""

    tables: dict[str, pa.Table]
    issues: list[Issue] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    opened: Workbook | None = None


class StageError(Exception):
    """A stage failed on its input; ``output`` holds what it could still record (e.g. the
    ``workbooks`` row of a file that is not a spreadsheet) and ``error`` the typed cause."""

    def __init__(self, error: ExtractionError, output: StageOutput):
        super().__init__(f"{error.code}: {error.message}")
        self.error = error
        self.output = output


# -- workbook ---------------------------------------------------------------------------------
def workbook_stage(workbook_hash: str, data: bytes, source_path: str,
                   limits: Limits | None = None, passwords: Sequence[str] = (),
                   conversions: Path | None = None) -> StageOutput:
    """File facts of one workbook: the ``workbooks`` row (format sniffed from magic bytes,
    sheet list with visibility, macro / external-link / encryption flags).

    ``container`` is the container with the format version when known (``zip``, ``ole2/biff8``,
    ``biff/biff4`` for a bare BIFF stream, ``xml`` for flat ODS, ``text`` for CSV); ``format``
    is ``xlsx``, ``xlsm``, ``xls``, ``xlsb``, ``ods``, ``fods``, ``csv``... A PDF's row has
    the ``creator`` and ``producer`` its document information names and ``pdf_route``, the
    route all its pages share (``digital``, ``low_text``, ``ocr_scan``, ``image_scan``;
    ``mixed``). When a non-OOXML
    file was converted by LibreOffice, an ``info`` issue ``converted`` names the tool, its
    version and the seconds it took; a file read by value gets ``styles_unavailable``. An
    encrypted file is opened with the first of ``passwords`` that works (``is_encrypted`` stays
    true). The opened workbook is ``output.opened``, for :func:`parse_stage`; the caller
    closes it when no stage reads it.

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
        creator=None, producer=None, pdf_route=None,
    )
    try:
        wb = open_workbook(data, limits, passwords=passwords, conversions=conversions,
                           sniffed=sniffed)
    except ExtractionError as exc:
        issue = Issue("workbook", None, None, "error", exc.code, exc.message)
        raise StageError(exc, StageOutput({"workbooks": table("workbooks", [row])}, [issue]))
    row.update(
        sheet_count=len(wb.sheets), sheet_names=[s.name for s in wb.sheets],
        sheet_visibility=[s.visibility for s in wb.sheets], has_macros=wb.has_macros,
        has_external_links=wb.has_external_links, date_system=1904 if wb.date1904 else 1900,
        **{key: (wb.conversion or {}).get(fact) for key, fact in
           (("creator", "creator"), ("producer", "producer"), ("pdf_route", "verdict"))},
    )
    # the workbook's other issues belong to parsed_sheets, which reports them once
    return StageOutput({"workbooks": table("workbooks", [row])},
                       [i for i in wb.issues if i.stage == "workbook"],
                       {"conversion": wb.conversion} if wb.conversion else {}, opened=wb)


# -- parsed_sheets ----------------------------------------------------------------------------
def parse_stage(workbook_hash: str, data: bytes, limits: Limits | None = None,
                passwords: Sequence[str] = (), conversions: Path | None = None,
                opened: Workbook | None = None) -> StageOutput:
    """Every cell of every worksheet as written, plus sheets, styles and workbook properties.

    Tables: ``parsed_cells``, ``parsed_sheets``, ``styles``, ``workbook_properties``,
    ``sheet_objects`` (comments, hyperlinks, validations, conditional formats, ListObjects,
    charts, pictures, defined names, external links; ``details`` is JSON) and ``rich_text``
    (one row per shared string with rich-text runs, ECMA-376 Part 1 §18.4.4/§18.4.7, or
    phonetic runs, §18.4.6: ``runs`` is compact JSON whose run properties equal to the default
    cell font are left out; ``phonetic`` is the joined reading, never part of cell values).
    Sheets are read one at a time (memory grows with the largest sheet's cells). An encrypted
    file is opened with the first of ``passwords`` that works. ``conversions``: see
    :func:`~extraction_assets.core.open.open_workbook`. ``opened``: the workbook as
    :func:`workbook_stage` opened it from ``data`` (else it is opened here); it is closed here.

    Raises:
        StageError: the package cannot be read at all.
    """
    try:
        wb = opened or open_workbook(data, limits, passwords=passwords, conversions=conversions)
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
            cell_tables.append(parsed_cells_table(workbook_hash, sheet, style_ids, style_codes))
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
        cells = pa.concat_tables(cell_tables) if cell_tables else table("parsed_cells", [])
        style_rows = [dict(workbook_hash=workbook_hash, style_index=i, **vars(s))
                      for i, s in enumerate(styles)]
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
            "parsed_sheets": table("parsed_sheets", sheet_rows),
            "styles": table("styles", style_rows),
            "workbook_properties": table("workbook_properties", props),
            "sheet_objects": sheet_objects_table(workbook_hash, objects),
            "rich_text": table("rich_text", rich_rows),
        }, list(wb.issues))
    except ExtractionError as exc:
        raise StageError(exc, StageOutput({}, [Issue("parsed_sheets", None, None, "error",
                                                     exc.code, exc.message)]))
    finally:
        wb.close()


# -- normalized_grids -------------------------------------------------------------------------
def normalize_stage(workbook_hash: str, parsed_cells: pa.Table, parsed_sheets: pa.Table,
                    styles: pa.Table, properties: pa.Table,
                    limits: Limits | None = None) -> StageOutput:
    """The StyledGrid of every sheet: tables ``cells``, ``sheets`` (with the used range
    computed from the cells, never from the declared dimension). A number format Excel would not
    accept gives an ``invalid_number_format`` warning (its cells are shown as General).
    ``formula_refs`` lists what each formula reads. Formulas stored without a cached value are
    computed where they can be (value_status
    ``computed``; :func:`~extraction_assets.core.formula.evaluate.compute_uncached`, whose
    ``info`` issues join the stage's).

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
    cell_tables, sheet_facts = [], []
    cell_columns = list(CELL_SCHEMA.names)
    info_rows = parsed_sheets.to_pylist()
    sheet_cells = [sheet_rows(parsed_cells, row["sheet_index"]).select(cell_columns)
                   for row in info_rows]
    computed = compute_uncached([(row["sheet_name"], cells)
                                 for row, cells in zip(info_rows, sheet_cells)],
                                context.date1904, budget.limits.max_cell_chars)
    issues = list(computed.issues)
    for info_row, cells in zip(info_rows, sheet_cells):
        info = SheetInfo(info_row["sheet_index"], info_row["sheet_name"], info_row["visibility"],
                         info_row["kind"], info_row["part"], info_row["declared_dimension"])
        sheet = ParsedSheet(
            info, cells=cells,
            merged_ranges=info_row["merged_ranges"] or [], hidden_rows=info_row["hidden_rows"] or [],
            hidden_columns=info_row["hidden_columns"] or [], frozen_pane=info_row["frozen_pane"],
        )
        cf_ranges = info_row["cf_ranges"] or []
        grid = normalize_sheet(sheet, context, cf_ranges, budget,
                               computed.sheets.get(info.name))
        issues.extend(_format_issues(grid))
        n = len(grid)
        cell_tables.append(grid_cells_table(workbook_hash, grid))
        sheet_facts.append(dict(
            workbook_hash=workbook_hash, sheet_index=info.index, sheet_name=info.name,
            visibility=info.visibility, kind=info.kind,
            declared_dimension=info.declared_dimension, used_range=grid.used_range,
            n_cells=n, n_merged_ranges=len(sheet.merged_ranges),
            n_uncached_formulas=pc.sum(pc.equal(grid.table.column("value_status"),
                                                "uncached_formula")).as_py() or 0,
            n_computed_formulas=len(computed.sheets[info.name].positions)
            if info.name in computed.sheets else 0,
            hidden_rows=grid.hidden_rows,
            hidden_columns=[column_letter(c) for c in grid.hidden_columns],
            frozen_pane=grid.frozen_pane,
        ))
    cells = pa.concat_tables(cell_tables) if cell_tables else table("cells", [])
    refs = formula_refs_table(workbook_hash, [(row["sheet_name"], parsed)
                                              for row, parsed in zip(info_rows, sheet_cells)])
    return StageOutput({"cells": cells, "sheets": table("sheets", sheet_facts),
                        "formula_refs": refs}, issues)


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


def segment_stage(workbook_hash: str, cells: pa.Table, sheets: pa.Table,
                  objects: pa.Table | None = None) -> StageOutput:
    """Blocks of every visible sheet: tables ``blocks`` and ``block_columns``. Headings come
    from the workbook's font sizes (body size and bold size -> level, reported in ``facts``).
    Charts and pictures of ``objects`` (the ``sheet_objects`` table) become ``chart`` and
    ``image`` blocks; its Excel tables (ListObjects) and pivot tables are taken as declared,
    and so are the blocks a document declares (``document_item`` objects, see
    :func:`~extraction_assets.core.segment.documents.document_blocks`).
    Hidden sheets are not segmented; each gives an ``info`` issue so the skip is visible, as
    does an empty worksheet (``empty_sheet``; a document's page or slide says its route) and
    bold text in more font sizes than heading levels (``heading_levels_folded``: the smallest
    share level 6)."""
    issues: list[Issue] = []
    found: list[Block] = []
    sheet_objects = sheet_objects_from_table(objects)
    list_objects, pivot_tables = declared_tables(sheet_objects)
    declared: dict[str, list[SheetObject]] = {}
    for obj in sheet_objects:
        if obj.kind == DOCUMENT_ITEM:
            declared.setdefault(obj.sheet_name, []).append(obj)
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
                grid.sheet_index, grid.sheet_name,
                [o for o in sheet_objects if o.sheet_name == grid.sheet_name])
        if not blocks and not len(grid) and grid.kind == "worksheet":  # (a page: its route)
            issues.append(Issue("segmented_blocks", grid.sheet_name, None, "info", "empty_sheet",
                                f"sheet {grid.sheet_name!r} has no cells and no charts or "
                                "pictures: no block"))
        found += sorted(blocks, key=lambda b: (b.min_row, b.min_col, b.kind))
    folded = sorted(size for size, level in headings.levels.items() if level == LAST_LEVEL)
    if len(folded) > 1:
        issues.append(Issue("segmented_blocks", None, None, "info", "heading_levels_folded", (
            f"bold text in {len(headings.levels)} font sizes; heading levels go to "
            f"{LAST_LEVEL}: sizes {', '.join(f'{s:g}' for s in folded)} pt all take level "
            f"{LAST_LEVEL}")))
    return StageOutput(block_tables(workbook_hash, found), issues,
                       {"body_font_size": headings.body_size,
                        "heading_levels": {str(size): level
                                           for size, level in sorted(headings.levels.items())}})


# -- rendered_chunks --------------------------------------------------------------------------
def render_stage(workbook_hash: str, filename: str, cells: pa.Table, sheets: pa.Table,
                 blocks: pa.Table, block_columns: pa.Table,
                 count_tokens: Callable[[str], int], max_tokens: int,
                 min_tokens: int = 0,
                 markup: dict[tuple[str, str], str] | None = None,
                 count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None
                 ) -> StageOutput:
    """Records, renderings and chunks: tables ``records`` (one per table data or total row, one
    per ``key_value`` block), ``record_units`` (the text and value cells search indexes each
    record by, :mod:`~extraction_assets.core.render.units`, and the chunk holding its row),
    ``renderings`` (per block: Markdown, HTML and ``Header: value`` text) and ``chunks``
    (Markdown within ``max_tokens`` tokens of ``count_tokens``, the embedder's own tokenizer;
    small neighbours under one heading merged below ``min_tokens``). ``markup`` (see
    :func:`~.codecs.cell_markup`) replaces the text of cells with superscripts or subscripts in Markdown,
    HTML and chunks (records keep the plain text). ``count_tokens_batch`` (the same counts for
    a list of texts, e.g. :meth:`~extraction_assets.search.embedding.LocalEmbedder.count_tokens_batch`)
    counts table rows and chunks in batches when given. A chunk still over the budget (a single
    cell that cannot be cut) gives a ``warning`` issue; a cell whose value reaches no record,
    header or block text, or whose block (a table cell: its record) reaches no chunk
    (:class:`~extraction_assets.core.render.coverage.ChunkReach`), an ``error`` issue
    (:func:`lost_value_issues`), counted in ``facts`` as ``lost_values`` with up to ten of them
    in ``lost_values_sample``."""
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
    records = record_set.by_block()
    chunks: list[Chunk] = []
    issues: list[Issue] = []
    rendered = [(block, *render_block(block, records.get(block.block_id), grids[sheet_index]))
                for sheet_index in sorted(by_sheet) for block in by_sheet[sheet_index]]
    renderings = renderings_table(workbook_hash, rendered)
    del rendered
    record_set.forget("html", "texts")  # the chunks need only the lines

    def cut_chunks() -> None:
        for sheet_index in sorted(by_sheet):
            grid, unmarked = grids[sheet_index], {b.block_id: b for b in plain[sheet_index]}

            def line_rows(block: Block, grid=grid, unmarked=unmarked) -> list[int] | None:
                return text_line_rows(grid, unmarked[block.block_id])  # of a text cut in parts

            for chunk in chunk_sheet(by_sheet[sheet_index], records, count_tokens, max_tokens,
                                     min_tokens, count_tokens_batch, line_rows):
                chunks.append(chunk)
                if chunk.n_tokens > max_tokens:
                    issues.append(Issue(
                        "rendered_chunks", chunk.sheet_name, chunk.a1_ranges[0], "warning",
                        "chunk_over_budget",
                        f"chunk has {chunk.n_tokens} tokens; the budget is {max_tokens}"))

    # the records' JSON is built by Arrow while the chunks are cut
    in_threads([cut_chunks, record_set.record_json, record_set.display_json,
                record_set.merged_json, record_set.computed_json])
    record_set.forget("lines", "line_array")  # cut into the chunks
    reach = ChunkReach([b for i in sorted(by_sheet) for b in by_sheet[i]], chunks)
    lost = unreached_cells([(grids[i], plain[i]) for i in sorted(by_sheet)], record_set, reach)
    issues += lost_value_issues(lost)
    return StageOutput({"records": records_table(workbook_hash, filename, record_set),
                        "record_units": record_units_table(workbook_hash, record_set, chunks),
                        "renderings": renderings,
                        "chunks": chunks_table(workbook_hash, chunks)}, issues,
                       {"lost_values": len(lost),
                        "lost_values_sample": [f"{sheet}!{ref}" for sheet, ref, _, _ in lost[:10]]})


#: Most cells that reach no output listed one issue each (the rest are counted in one more).
MAX_LOST_ISSUES = 100


def lost_value_issues(lost: list[tuple[str, str, str, str]]) -> list[Issue]:
    """``error`` issues (code ``value_not_in_output``) for the cells of
    :func:`~extraction_assets.core.render.coverage.unreached_cells` (which give why each reaches
    no chunk): one per cell, at most :data:`MAX_LOST_ISSUES`, then one counting the others."""
    out = [Issue("rendered_chunks", sheet, ref, "error", "value_not_in_output",
                 f"{ref} {text[:60]!r}: {where}")
           for sheet, ref, text, where in lost[:MAX_LOST_ISSUES]]
    if len(lost) > MAX_LOST_ISSUES:
        out.append(Issue("rendered_chunks", None, None, "error", "value_not_in_output",
                         f"{len(lost) - MAX_LOST_ISSUES} more cells reach no chunk"))
    return out


# -- chunk_embeddings -------------------------------------------------------------------------
def embed_stage(workbook_hash: str, filename: str, source_path: str, chunks: pa.Table,
                record_units: pa.Table, blocks: pa.Table,
                count_tokens_batch: Callable[[Sequence[str]], list[int]],
                index_units: Callable[[str, list[dict]], Any]) -> StageOutput:
    """The partition's retrieval units (its chunks and record units,
    :func:`~.codecs.retrieval_units`, record texts' tokens counted by ``count_tokens_batch``)
    handed to ``index_units(workbook_hash, units)``, which embeds them and replaces the
    partition's rows of the vector store (e.g.
    :func:`~extraction_assets.search.retrieval.indexer`) and returns what it stored (an
    :class:`~extraction_assets.search.retrieval.Indexed`). Writes no table; ``facts``:
    ``units``, ``chunk_units``, ``record_units``, ``embedded`` (units sent to the embedder),
    ``reused`` (vectors of an earlier version kept), ``derived`` (vectors made of other units'
    vectors), ``embedded_tokens``, ``embed_seconds`` (wall clock) and ``unit_ids``.

    Raises:
        VectorStoreError: the store holds vectors of another model or dimension.
    """
    units = retrieval_units(workbook_hash, filename, source_path, chunks, record_units, blocks,
                            count_tokens_batch)
    indexed = index_units(workbook_hash, units)
    chunk_units = sum(u["kind"] == "chunk" for u in units)
    return StageOutput({}, facts={
        "units": indexed.rows, "chunk_units": chunk_units,
        "record_units": indexed.rows - chunk_units, "embedded": indexed.embedded,
        "reused": indexed.reused, "derived": indexed.derived,
        "embedded_tokens": indexed.embedded_tokens,
        "embed_seconds": round(indexed.embed_seconds, 3),
        "unit_ids": [u["unit_id"] for u in units]})
