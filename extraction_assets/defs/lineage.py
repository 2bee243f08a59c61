"""The ``lineage`` table, filled from what Dagster records: one row per asset materialization of
a partition (run id, code version, data version, time, row count), read from the instance's event
log so it agrees with the Dagster UI."""

from __future__ import annotations

from datetime import datetime, timezone

from dagster import AssetRecordsFilter, DagsterInstance

from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views

#: Most materializations of one asset and partition exported.
MAX_RECORDS = 10_000


def lineage_rows(instance: DagsterInstance, workbook_hash: str) -> list[dict]:
    """Every materialization of the six assets for one partition, oldest first.

    ``code_version`` and ``data_version`` are the ``dagster/code_version`` and
    ``dagster/data_version`` tags Dagster stores; ``row_count`` is the ``row_count`` metadata
    the asset reported; ``materialized_at`` is the event time (UTC).
    """
    rows = []
    for asset in ALL_ASSETS:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=[workbook_hash]),
            limit=MAX_RECORDS, ascending=True,
        ).records
        for record in records:
            materialization = record.asset_materialization
            tags = materialization.tags or {}
            count = materialization.metadata.get("row_count")
            rows.append(dict(
                workbook_hash=workbook_hash, asset=asset.key.path[-1], run_id=record.run_id,
                code_version=tags.get("dagster/code_version"),
                data_version=tags.get("dagster/data_version"),
                materialized_at=datetime.fromtimestamp(record.timestamp, timezone.utc),
                row_count=int(count.value) if count is not None else None,
            ))
    return sorted(rows, key=lambda r: (r["materialized_at"], r["asset"]))


def export_lineage(instance: DagsterInstance, store: DataStore, workbook_hash: str) -> int:
    """Rewrite the partition's ``lineage`` Parquet file from the event log and refresh the
    views; returns the number of rows."""
    rows = lineage_rows(instance, workbook_hash)
    store.write_table("lineage", workbook_hash, rows)
    refresh_views(store)
    return len(rows)
