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
