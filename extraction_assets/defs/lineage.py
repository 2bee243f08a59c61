"""The ``lineage`` table, filled from what Dagster records: one row per asset materialization of
a partition (run id, code version, data version, time, row count), read from the instance's event
log so it agrees with the Dagster UI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from dagster import AssetRecordsFilter, DagsterInstance

from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views

#: Most materializations of one asset fetched for one lineage export.
MAX_RECORDS = 10_000


@dataclass
class Lineage:
    """What the event log holds of some partitions: ``rows``, the ``lineage`` table's rows by
    partition (see :func:`read_lineage`), and ``latest``, by partition and asset name, the
    metadata values of the asset's latest materialization."""

    rows: dict[str, list[dict]]
    latest: dict[str, dict[str, dict]]

    def counts(self, workbook_hash: str) -> dict[str, int]:
        """What a result line says of a partition, from its latest materializations' metadata
        (see :func:`partition_counts`)."""
        return partition_counts(self.latest.get(workbook_hash, {}))


def partition_counts(latest: dict[str, dict]) -> dict[str, int]:
    """Sheets, tables, records and chunks a partition's latest materializations wrote, its
    ``errors`` (issues of severity ``error`` of every asset: the file was read, but not all of
    it), ``over_budget`` (chunks over the token budget) and the formulas stored without a
    cached value that were computed or not (``formulas_computed``, ``formulas_not_computed``)
    and the issues of pictures or scans OCR did not read (``ocr_unread``), from their metadata
    (``latest``: asset name -> metadata values, as :class:`Lineage` holds them); 0 for an asset
    never materialized."""
    def value(asset: str, key: str) -> int:
        return int(latest.get(asset, {}).get(key) or 0)

    return {"sheets": value("normalized_grids", "sheets_rows"),
            "tables": value("segmented_blocks", "tables"),
            "records": value("rendered_chunks", "records_rows"),
            "chunks": value("rendered_chunks", "chunks_rows"),
            "errors": sum(int(meta.get("error_issues") or 0) for meta in latest.values()),
            "over_budget": value("rendered_chunks", "over_budget"),
            "formulas_computed": value("normalized_grids", "computed_formulas"),
            "formulas_not_computed": value("normalized_grids", "uncached_formulas"),
            "ocr_unread": value("parsed_sheets", "ocr_unread")}


def latest_counts(instance: DagsterInstance, workbook_hash: str) -> dict[str, int]:
    """A partition's :func:`partition_counts` from the latest materialization of each asset
    (one record fetched per asset, not the partition's history)."""
    latest = {}
    for asset in ALL_ASSETS:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=[workbook_hash]),
            limit=1).records
        if records:
            latest[asset.key.path[-1]] = {
                k: v.value for k, v in records[0].asset_materialization.metadata.items()}
    return partition_counts(latest)


def read_lineage(instance: DagsterInstance, workbook_hashes: Sequence[str]) -> Lineage:
    """Every materialization of the six assets for each partition (the newest
    :data:`MAX_RECORDS` of each asset), oldest first, by partition; one query per asset for all
    the partitions.

    ``code_version`` is the ``dagster/code_version`` tag Dagster stores; ``data_version`` is the
    hash of the partition's output (metadata ``data_hash``, which equals Dagster's data version
    of a run of one partition; the tag where that metadata is missing); ``row_count`` is the
    ``row_count`` metadata the asset reported; ``materialized_at`` is the event time (UTC).
    """
    rows: dict[str, list[dict]] = {h: [] for h in workbook_hashes}
    latest: dict[str, dict[str, dict]] = {h: {} for h in workbook_hashes}
    for asset in ALL_ASSETS:
        name = asset.key.path[-1]
        records = instance.fetch_materializations(  # newest first: past the limit, the
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=list(workbook_hashes)),
            limit=MAX_RECORDS, ascending=False,  # oldest rows are left out, never the latest
        ).records
        for record in records:
            materialization = record.asset_materialization
            tags = materialization.tags or {}
            metadata = materialization.metadata
            count, digest = metadata.get("row_count"), metadata.get("data_hash")
            rows[materialization.partition].append(dict(
                workbook_hash=materialization.partition, asset=name,
                run_id=record.run_id, code_version=tags.get("dagster/code_version"),
                data_version=digest.value if digest is not None
                else tags.get("dagster/data_version"),
                materialized_at=datetime.fromtimestamp(record.timestamp, timezone.utc),
                row_count=int(count.value) if count is not None else None,
            ))
            latest[materialization.partition].setdefault(
                name, {k: v.value for k, v in metadata.items()})
    return Lineage({h: sorted(r, key=lambda row: (row["materialized_at"], row["asset"]))
                    for h, r in rows.items()}, latest)


def export_lineage(instance: DagsterInstance, store: DataStore,
                   workbook_hashes: Sequence[str]) -> Lineage:
    """Rewrite each partition's ``lineage`` Parquet file from the event log and refresh the
    views once; returns what was read (:func:`read_lineage`)."""
    lineage = read_lineage(instance, workbook_hashes)
    for workbook_hash, rows in lineage.rows.items():
        store.write_table("lineage", workbook_hash, rows)
    refresh_views(store)
    return lineage
