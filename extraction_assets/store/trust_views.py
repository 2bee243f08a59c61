"""The DuckDB views of the trust features (created with the contract views by
:func:`~extraction_assets.store.warehouse.refresh_views`), one row per:

* ``colour_legends``: legend entry found in a workbook (colour, tag, swatch, cluster size);
* ``colour_mapping_events``: event of the colour mapping registry (draft, confirmation,
  rejection);
* ``colour_mappings``: mapping version (scope, colour, version) with its current status, the
  actor and note of the latest decision, ``superseded``;
* ``cell_tags``: cell tagged by an active mapping: ref, tag, mapping version;
* ``review_items``: cell the two reads of a workbook disagree on, or word OCR read with a
  low confidence (``confidence``, ``bbox``);
* ``review_resolutions``: decision on a review item;
* ``review_queue``: review item with its latest resolution, open items first, conflicts first.
"""

from __future__ import annotations

from typing import Callable

#: The tables the views read directly: view name -> (table, glob below parquet/).
TRUST_TABLES: dict[str, tuple[str, str]] = {
    "colour_legends": ("colour_legends", "colour_legends/*.parquet"),
    "colour_mapping_events": ("colour_mappings", "colour_mappings/*.parquet"),
    "review_items": ("review_items", "review_items/*.parquet"),
    "review_resolutions": ("review_resolutions", "review_resolutions/*.parquet"),
}

_COLOUR_MAPPINGS = """
CREATE OR REPLACE VIEW colour_mappings AS
WITH latest AS (
  SELECT * FROM colour_mapping_events
  QUALIFY row_number() OVER (PARTITION BY mapping_id ORDER BY created_at DESC) = 1)
SELECT l.scope, l.fill_rgb, l.version, l.status, l.tag, l.key, l.label, l.actor, l.note,
       l.created_at AS decided_at,
       (SELECT min(e.created_at) FROM colour_mapping_events e
        WHERE e.mapping_id = l.mapping_id) AS proposed_at,
       l.status = 'active' AND EXISTS (
         SELECT 1 FROM latest x WHERE x.scope = l.scope AND x.fill_rgb = l.fill_rgb
         AND x.status = 'active' AND x.version > l.version) AS superseded,
       l.mapping_id, l.workbook_hash, l.sheet_name, l.swatch_ref
FROM latest l"""

_CELL_TAGS = """
CREATE OR REPLACE VIEW cell_tags AS
SELECT c.workbook_hash, c.sheet_name, c.ref, c.row, c.col, m.tag, m.version AS mapping_version,
       m.mapping_id, c.fill_rgb, m.scope
FROM cells c JOIN workbooks w USING (workbook_hash)
JOIN colour_mappings m ON m.scope = w.source_path AND m.fill_rgb = c.fill_rgb
WHERE m.status = 'active' AND NOT m.superseded AND NOT coalesce(c.cf_affected, false)
  AND c.display_text <> '' AND c.merged_from IS NULL"""

_REVIEW_QUEUE = """
CREATE OR REPLACE VIEW review_queue AS
WITH latest AS (
  SELECT * FROM review_resolutions
  QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY resolved_at DESC) = 1)
SELECT CASE WHEN r.item_id IS NULL THEN 'open' ELSE 'resolved' END AS status, i.priority,
       i.reason, w.filename, i.sheet_name, i.ref, i.first_read, i.first_value, i.second_read,
       i.second_value, i.confidence, i.bbox, r.decision, r.value AS resolved_value, r.actor,
       r.note, r.resolved_at,
       i.item_id, i.workbook_hash, w.source_path, i.row, i.col
FROM review_items i LEFT JOIN workbooks w ON w.workbook_hash = i.workbook_hash
LEFT JOIN latest r ON r.item_id = i.item_id
ORDER BY r.item_id IS NOT NULL, i.priority, w.filename, i.sheet_name, i.row, i.col, i.item_id"""


def trust_view_sql(relation: Callable[[str, str], str]) -> dict[str, str]:
    """The ``CREATE OR REPLACE VIEW`` statements of the trust views, in creation order (after
    ``cells`` and ``workbooks``); ``relation(table, glob)`` gives the SQL of a table's rows."""
    sql = {name: f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {relation(table, pattern)}"
           for name, (table, pattern) in TRUST_TABLES.items()}
    sql["colour_mappings"] = _COLOUR_MAPPINGS.strip()
    sql["cell_tags"] = _CELL_TAGS.strip()
    sql["review_queue"] = _REVIEW_QUEUE.strip()
    return sql
