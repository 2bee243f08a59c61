"""Arrow schemas of every Parquet table (the storage side of the DuckDB view contract).

Rows and columns are 1-based; ``ref``/``a1_range`` are A1 references; JSON columns hold UTF-8
JSON text; ``size_bytes`` is in bytes; ``n_tokens`` counts tokens of the configured embedder.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from extraction_assets.core.grid import GRID_SCHEMA
from extraction_assets.core.render.units import CELL_MEMORY_TYPE, CELL_TYPE

S, I32, I64, F64, B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
LS = pa.list_(pa.string())

SCHEMAS: dict[str, pa.Schema] = {
    "workbooks": pa.schema([
        ("workbook_hash", S), ("source_path", S), ("filename", S), ("size_bytes", I64),
        ("container", S), ("format", S), ("sheet_count", I32), ("sheet_names", LS),
        ("sheet_visibility", LS), ("has_macros", B), ("has_external_links", B),
        ("is_encrypted", B), ("date_system", I32), ("creator", S), ("producer", S),
        ("pdf_route", S),
    ]),
    "parsed_sheets": pa.schema([
        ("workbook_hash", S), ("sheet_index", I32), ("sheet_name", S), ("visibility", S),
        ("kind", S), ("part", S), ("declared_dimension", S), ("n_cells", I64),
        ("merged_ranges", LS), ("hidden_rows", pa.list_(I32)), ("hidden_columns", pa.list_(I32)),
        ("frozen_pane", S), ("cf_ranges", LS), ("row_heights", S), ("column_widths", S),
    ]),
    "sheet_objects": pa.schema([
        ("workbook_hash", S), ("sheet_name", S), ("kind", S), ("ref", S), ("name", S),
        ("text", S), ("details", S),
    ]),
    "workbook_properties": pa.schema([
        ("workbook_hash", S), ("date_system", I32), ("theme_colors", LS),
        ("indexed_colors", LS), ("has_macros", B), ("has_external_links", B),
    ]),
    "styles": pa.schema([
        ("workbook_hash", S), ("style_index", I32), ("number_format_id", I32),
        ("number_format", S), ("bold", B), ("italic", B), ("underline", B), ("strike", B),
        ("font_size", F64), ("font_color", S), ("fill_color", S), ("has_border", B),
        ("wrap_text", B), ("horizontal", S), ("font_name", S), ("border_left", S),
        ("border_right", S), ("border_top", S), ("border_bottom", S), ("vertical", S),
        ("indent", I32), ("text_rotation", I32),
    ]),
    # One row per shared string with rich-text runs (ECMA-376 §18.4.4) or phonetic runs
    # (§18.4.6); ``runs`` is a JSON list of {"text", "bold", "italic", "underline", "strike",
    # "vert_align", "size", "color", "font"} (set keys only); ``phonetic`` the joined reading.
    "rich_text": pa.schema([
        ("workbook_hash", S), ("string_index", I32), ("text", S), ("runs", S), ("phonetic", S),
    ]),
    "parsed_cells": pa.schema([
        ("workbook_hash", S), ("sheet_index", I32), ("sheet_name", S), ("row", I32),
        ("col", I32), ("ref", S), ("data_type", S), ("value", S), ("formula", S),
        ("formula_kind", S), ("value_status", S), ("style_index", I32),
        ("number_format_id", I32), ("number_format", S), ("string_index", I32),
    ]),
    "sheets": pa.schema([
        ("workbook_hash", S), ("sheet_index", I32), ("sheet_name", S), ("visibility", S),
        ("kind", S), ("declared_dimension", S), ("used_range", S), ("n_cells", I64),
        ("n_merged_ranges", I64), ("n_uncached_formulas", I64), ("hidden_rows", pa.list_(I32)),
        ("hidden_columns", LS), ("frozen_pane", S), ("n_computed_formulas", I64),
    ]),
    # each reference a formula cell reads (core.formula.refs), in the order written
    "formula_refs": pa.schema([
        ("workbook_hash", S), ("sheet_name", S), ("ref", S), ("row", I32), ("col", I32),
        ("position", I32), ("reads", S), ("kind", S), ("reads_sheet", S), ("reads_range", S),
        ("first_row", I32), ("first_col", I32), ("last_row", I32), ("last_col", I32),
    ]),
    # the StyledGrid's cells (core.grid.GRID_SCHEMA) of every sheet, with the sheet named
    "cells": pa.schema([("workbook_hash", S), ("sheet_index", I32), ("sheet_name", S),
                        *GRID_SCHEMA]),
    "blocks": pa.schema([
        ("workbook_hash", S), ("sheet_index", I32), ("sheet_name", S), ("block_id", S),
        ("kind", S), ("a1_range", S), ("min_row", I32), ("min_col", I32), ("max_row", I32),
        ("max_col", I32), ("header_row_count", I32), ("title", S), ("heading_path", LS),
        ("n_cells", I64), ("reasons", LS), ("text", S), ("level", I32),
        ("skip_rows", pa.list_(I32)), ("total_rows", pa.list_(I32)),
        ("row_group_cols", pa.list_(I32)), ("group_rows", pa.list_(I32)),
        ("group_levels", pa.list_(I32)), ("row_label_cols", pa.list_(I32)),
        ("unit_rows", pa.list_(I32)), ("unit", S), ("source_ref", S),
    ]),
    "block_columns": pa.schema([
        ("workbook_hash", S), ("block_id", S), ("sheet_name", S), ("position", I32),
        ("col", I32), ("column_letter", S), ("header", S), ("header_levels", LS),
        ("row", I32), ("group_label", B),
    ]),
    "records": pa.schema([
        ("workbook_hash", S), ("block_id", S), ("sheet_name", S), ("row", I32),
        ("a1_range", S), ("role", S), ("record", S), ("display", S), ("merged_from", S),
        ("row_path", LS), ("filename", S), ("computed", S),
    ]),
    "record_units": pa.schema([
        ("workbook_hash", S), ("block_id", S), ("sheet_name", S), ("row", I32),
        ("a1_range", S), ("chunk_id", S), ("row_path", LS), ("cells", pa.list_(CELL_TYPE)),
        ("text", S),
    ]),
    "chunks": pa.schema([
        ("workbook_hash", S), ("chunk_id", S), ("chunk_index", I32), ("sheet_name", S),
        ("block_ids", LS), ("a1_ranges", LS), ("heading_path", LS), ("text", S),
        ("n_tokens", I32), ("rows", pa.list_(I32)), ("continuation", B),
    ]),
    "renderings": pa.schema([
        ("workbook_hash", S), ("block_id", S), ("sheet_name", S), ("kind", S), ("markdown", S),
        ("html", S), ("text", S),
    ]),
    "extraction_issues": pa.schema([
        ("workbook_hash", S), ("stage", S), ("sheet_name", S), ("ref", S), ("severity", S),
        ("code", S), ("message", S),
    ]),
    "sources": pa.schema([
        ("workbook_hash", S), ("source_path", S), ("filename", S),
        ("registered_at", pa.timestamp("us", tz="UTC")),
    ]),
    "lineage": pa.schema([
        ("workbook_hash", S), ("asset", S), ("run_id", S), ("code_version", S),
        ("data_version", S), ("materialized_at", pa.timestamp("us", tz="UTC")),
        ("row_count", I64),
    ]),
}

#: Columns of the per-cell and per-record tables whose values repeat over many rows (the
#: partition's hash, a sheet's name, a block's id, the file name): dictionary-encoded in
#: memory, one copy of each text instead of one per row, and written to Parquet with the
#: contract's plain string type (see :func:`memory_schema`).
DICTIONARY_COLUMNS: dict[str, tuple[str, ...]] = {
    "parsed_cells": ("workbook_hash", "sheet_name"),
    "formula_refs": ("workbook_hash", "sheet_name", "reads_sheet"),
    "cells": ("workbook_hash", "sheet_name"),
    "records": ("workbook_hash", "block_id", "sheet_name", "filename"),
    "record_units": ("workbook_hash", "block_id", "sheet_name", "chunk_id"),
}
#: Other columns whose in-memory type differs from the contract's (cast when written).
MEMORY_TYPES: dict[str, dict[str, pa.DataType]] = {
    "record_units": {"cells": pa.list_(CELL_MEMORY_TYPE)},
}


def memory_schema(table: str) -> pa.Schema:
    """The in-memory schema of ``table``: :data:`SCHEMAS` with the table's
    :data:`DICTIONARY_COLUMNS` as ``dictionary<int32, string>`` and its :data:`MEMORY_TYPES`.

    Raises:
        KeyError: unknown table name.
    """
    schema = SCHEMAS[table]
    types = {name: pa.dictionary(pa.int32(), pa.string())
             for name in DICTIONARY_COLUMNS.get(table, ())}
    for name, kind in {**types, **MEMORY_TYPES.get(table, {})}.items():
        schema = schema.set(schema.get_field_index(name), pa.field(name, kind))
    return schema


def repeated_column(values: list[str], of: np.ndarray) -> pa.DictionaryArray:
    """A ``dictionary<int32, string>`` column whose row ``i`` is ``values[of[i]]``; each
    distinct value is once in the dictionary (as ``dictionary_encode`` makes it, and as
    pandas' categoricals require)."""
    distinct = list(dict.fromkeys(values))
    position = {value: k for k, value in enumerate(distinct)}
    codes = np.array([position[value] for value in values], np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(codes[np.asarray(of, np.intp)]),
                                          pa.array(distinct, pa.string()))


def constant_column(value: str, n: int) -> pa.DictionaryArray:
    """A ``dictionary<int32, string>`` column holding ``value`` in all ``n`` rows."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                          pa.array([value], pa.string()))


# the trust features' tables (colour legends, review items and their registries)
from extraction_assets.pipeline.trust_schemas import TRUST_SCHEMAS  # noqa: E402

SCHEMAS.update(TRUST_SCHEMAS)
