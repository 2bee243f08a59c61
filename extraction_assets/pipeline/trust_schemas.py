"""Arrow schemas of the trust features' tables (merged into
:data:`~extraction_assets.pipeline.schemas.SCHEMAS`).

Per partition, written by the assets: ``colour_legends`` (legend entries found in the workbook,
with the size of each colour's cluster) and ``review_items`` (cells the two reads of the
workbook disagree on, words OCR is not sure of). Append-only registries, written by people
through the CLI (see :mod:`extraction_assets.store.decisions`): ``colour_mappings`` (every
version of every colour mapping) and ``review_resolutions`` (every decision on a review
item).
"""

from __future__ import annotations

import pyarrow as pa

S, I32, I64, B = pa.string(), pa.int32(), pa.int64(), pa.bool_()
TS = pa.timestamp("us", tz="UTC")

TRUST_SCHEMAS: dict[str, pa.Schema] = {
    # one row per legend swatch; n_cells / n_cf_cells: non-empty cells of the colour outside /
    # inside conditional-format ranges
    "colour_legends": pa.schema([
        ("workbook_hash", S), ("sheet_name", S), ("fill_rgb", S), ("key", S), ("label", S),
        ("tag", S), ("swatch_ref", S), ("label_ref", S), ("n_cells", I64), ("n_cf_cells", I64),
    ]),
    # one row per cell the reads disagree on (values as text, null where a read has none)
    # and per word OCR read with a low confidence (0..100; its box: points on a PDF page,
    # pixels of a picture, [left, top, right, bottom] from the top left)
    "review_items": pa.schema([
        ("workbook_hash", S), ("item_id", S), ("sheet_name", S), ("row", I32), ("col", I32),
        ("ref", S), ("reason", S), ("priority", I32), ("first_read", S), ("first_value", S),
        ("second_read", S), ("second_value", S), ("confidence", pa.float64()),
        ("bbox", pa.list_(I32)),
    ]),
    # one row per version of a mapping (scope, fill_rgb); status draft / active / rejected
    "colour_mappings": pa.schema([
        ("mapping_id", S), ("scope", S), ("fill_rgb", S), ("version", I32), ("status", S),
        ("key", S), ("label", S), ("tag", S), ("workbook_hash", S), ("sheet_name", S),
        ("swatch_ref", S), ("actor", S), ("note", S), ("created_at", TS),
    ]),
    # one row per decision on a review item; the source tables are never changed
    "review_resolutions": pa.schema([
        ("resolution_id", S), ("item_id", S), ("workbook_hash", S), ("decision", S),
        ("value", S), ("actor", S), ("note", S), ("resolved_at", TS),
    ]),
}
