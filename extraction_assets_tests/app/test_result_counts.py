"""The counts of a result line are those of the partition's latest materializations, also when
the event log holds more of them than one lineage read takes."""

from __future__ import annotations

import duckdb
import pytest

import extraction_assets.defs.lineage as lineage
from extraction_assets.app.ingest import ingest_paths
from tools.bench.workbooks import generate_workbook

pytestmark = pytest.mark.integration  # ingests through the asset graph


def test_counts_are_the_latest_materializations(tmp_path, monkeypatch):
    monkeypatch.setattr(lineage, "MAX_RECORDS", 2)  # fewer than the materializations below
    path = generate_workbook(tmp_path / "orders.xlsx", 200)
    data = tmp_path / "data"
    chunks = []
    for max_tokens in (512, 128, 64):
        [result] = ingest_paths([path], data, until="rendered_chunks", max_tokens=max_tokens,
                                force=True)
        with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
            [(written,)] = con.execute("SELECT count(*) FROM chunks").fetchall()
        assert result.counts["chunks"] == written
        chunks.append(written)
    assert chunks[0] < chunks[1] < chunks[2]


def test_a_second_ingest_materializes_only_what_is_stale(tmp_path):
    """After ``--until rendered_chunks``, a full ingest embeds the chunks and leaves the
    assets before them alone (found by the README trial: it ran all six again)."""
    from dagster import AssetRecordsFilter

    from extraction_assets.app.ingest import open_instance
    from extraction_assets.defs.assets import ALL_ASSETS
    from extraction_assets.store.storage import DataStore

    path = generate_workbook(tmp_path / "orders.xlsx", 20)
    data = tmp_path / "data"
    [first] = ingest_paths([path], data, until="rendered_chunks")
    [second] = ingest_paths([path], data)
    assert (first.status, second.status) == ("success", "success")
    assert second.counts["records"] == 20
    with open_instance(DataStore(data)) as instance:
        runs = {a.key.path[-1]: len(instance.fetch_materializations(
            AssetRecordsFilter(asset_key=a.key), limit=10).records) for a in ALL_ASSETS}
    assert runs == {"workbook": 1, "parsed_sheets": 1, "normalized_grids": 1,
                    "segmented_blocks": 1, "rendered_chunks": 1, "chunk_embeddings": 1}
