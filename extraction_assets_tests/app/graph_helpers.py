"""What the asset-graph tests share: files written to an inbox and ingested, and the data
dir's DuckDB warehouse opened read-only, as a user audits it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from extraction_assets.app.ingest import IngestResult, ingest_paths
from extraction_assets.store.storage import DataStore


def warehouse(root: Path) -> duckdb.DuckDBPyConnection:
    """The warehouse of data dir ``root``, read-only."""
    return duckdb.connect(str(DataStore(root).warehouse_path), read_only=True)


def ingest_inbox(root: Path, files: list[tuple[str, bytes]]
                 ) -> tuple[Path, list[Path], list[IngestResult]]:
    """``files`` (name, bytes) written to ``root/inbox`` and ingested into data dir ``root``
    through all six assets: ``(root, paths, results)``."""
    inbox = root / "inbox"
    inbox.mkdir()
    paths = []
    for name, data in files:
        paths.append(inbox / name)
        paths[-1].write_bytes(data)
    return root, paths, ingest_paths(paths, root)
