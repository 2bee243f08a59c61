"""The ``lineage`` table, filled from what Dagster records: one row per asset materialization of
a partition (run id, code version, data version, time, row count), read from the instance's event
log so it agrees with the Dagster UI."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from dagster import AssetRecordsFilter, DagsterInstance

from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views

#: Most materializations of one asset fetched for one lineage export.
MAX_RECORDS = 10_000


def lineage_rows(instance: DagsterInstance,
                 workbook_hashes: Sequence[str]) -> dict[str, list[dict]]:
    """Every materialization of the six assets for each partition, oldest first, by partition;
    one query per asset for all the partitions.

    ``code_version`` is the ``dagster/code_version`` tag Dagster stores; ``data_version`` is the
    hash of the partition's output (metadata ``data_hash``, which equals Dagster's data version
    of a run of one partition; the tag where that metadata is missing); ``row_count`` is the
    ``row_count`` metadata the asset reported; ``materialized_at`` is the event time (UTC).
    """
    rows: dict[str, list[dict]] = {h: [] for h in workbook_hashes}
    for asset in ALL_ASSETS:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=list(workbook_hashes)),
            limit=MAX_RECORDS, ascending=True,
        ).records
        for record in records:
            materialization = record.asset_materialization
            tags = materialization.tags or {}
            metadata = materialization.metadata
            count, digest = metadata.get("row_count"), metadata.get("data_hash")
            rows[materialization.partition].append(dict(
                workbook_hash=materialization.partition, asset=asset.key.path[-1],
                run_id=record.run_id, code_version=tags.get("dagster/code_version"),
                data_version=digest.value if digest is not None
                else tags.get("dagster/data_version"),
                materialized_at=datetime.fromtimestamp(record.timestamp, timezone.utc),
                row_count=int(count.value) if count is not None else None,
            ))
    return {h: sorted(r, key=lambda row: (row["materialized_at"], row["asset"]))
            for h, r in rows.items()}


def export_lineage(instance: DagsterInstance, store: DataStore,
                   workbook_hashes: Sequence[str]) -> int:
    """Rewrite each partition's ``lineage`` Parquet file from the event log and refresh the
    views once; returns the number of rows written."""
    written = 0
    for workbook_hash, rows in lineage_rows(instance, workbook_hashes).items():
        store.write_table("lineage", workbook_hash, rows)
        written += len(rows)
    refresh_views(store)
    return written
