"""The Dagster instance storage of a data dir: ``open_instance`` keeps its SQLite connections
open (:class:`PooledSqliteStorage`) and writes the same files that Dagster's own SQLite storage
(the UI, the daemon) reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import openpyxl
from dagster import AssetKey, DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.app.instance_storage import (
    KEPT_RUN_SHARDS,
    PooledSqliteEventLogStorage,
    PooledSqliteRunStorage,
)
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.builders import put_rows, save_openpyxl


def _workbooks(folder: Path, count: int) -> list[Path]:
    paths = []
    for k in range(count):
        wb = openpyxl.Workbook()
        put_rows(wb.active, [["Item", "Qty"], *[[f"item {k}-{r}", r] for r in range(5)]])
        path = folder / f"book{k}.xlsx"
        save_openpyxl(wb, path)
        paths.append(path)
    return paths


def test_runs_written_with_kept_connections_are_read_by_dagsters_own_storage(tmp_path):
    """Two processes (``jobs=2``) write the runs; Dagster's own SQLite storage reads them."""
    paths = _workbooks(tmp_path, 4)
    results = ingest_paths(paths, tmp_path / "data", until="parsed_sheets", jobs=2)
    assert [r.status for r in results] == ["success"] * 4
    home = DataStore(tmp_path / "data").dagster_home
    # nothing is left in a write-ahead log once the ingest and its worker closed their instance
    assert not list(home.rglob("*.db-wal")) and not list(home.rglob("*.db-shm"))
    shards = sorted(p.name for p in (home / "history" / "runs").glob("*.db"))
    assert shards == sorted(["index.db", *[f"{r.run_id}.db" for r in results]])

    instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    try:
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert {run.run_id for run in instance.get_runs()} == {r.run_id for r in results}
        assert instance.get_materialized_partitions(AssetKey("parsed_sheets")) == {
            r.workbook_hash for r in results}
        for r in results:  # the events of each run are in its own shard
            steps = [s.step_key for s in instance.get_run_step_stats(r.run_id)]
            assert steps == ["workbook", "parsed_sheets"]
    finally:
        instance.dispose()


def test_open_instance_keeps_the_index_and_the_latest_run_shards_open(tmp_path):
    paths = _workbooks(tmp_path, 3)
    data_dir = tmp_path / "data"
    results = ingest_paths(paths, data_dir, until="workbook")
    with open_instance(DataStore(data_dir)) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        assert isinstance(instance.run_storage, PooledSqliteRunStorage)
        assert instance.get_materialized_partitions(AssetKey("workbook")) == {
            r.workbook_hash for r in results}  # read from the index shard
        for r in results:  # read from each run's shard, oldest first
            assert [s.step_key for s in instance.get_run_step_stats(r.run_id)] == ["workbook"]
        # the index shard and the last KEPT_RUN_SHARDS run shards read keep their connections
        assert set(storage._engines) == {"index", *[r.run_id for r in results][-KEPT_RUN_SHARDS:]}
        index = DataStore(data_dir).dagster_home / "history" / "runs" / "index.db"
        assert index.with_name("index.db-wal").exists()
        instance.wipe()  # the run shards' connections are closed before their files go
        assert set(storage._engines) == {"index"}
        assert [p.name for p in index.parent.glob("*.db")] == ["index.db"]
        assert instance.get_runs() == []
        assert instance.get_materialized_partitions(AssetKey("workbook")) == set()
    assert not index.with_name("index.db-wal").exists()


def _schema(path: Path) -> tuple:
    """A SQLite file's tables and indexes (with their SQL), journal mode and Alembic revision."""
    with sqlite3.connect(path) as db:
        return (db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
                db.execute("PRAGMA journal_mode").fetchone(),
                db.execute("SELECT version_num FROM alembic_version").fetchall())


def test_new_run_shards_have_the_schema_dagster_itself_creates(tmp_path):
    """A run's shard is written from a template, yet is the database Dagster's own set-up
    (Alembic check, ``create_all``, stamp) makes for a run: same tables, indexes, WAL mode and
    schema revision; and it holds the run's events."""
    results = ingest_paths(_workbooks(tmp_path, 2), tmp_path / "data", until="workbook")
    runs = DataStore(tmp_path / "data").dagster_home / "history" / "runs"
    own = SqliteEventLogStorage(str(tmp_path / "dagster-own"))
    with own.run_connection("a-run"):  # Dagster creates this shard itself
        pass
    own.dispose()
    expected = _schema(tmp_path / "dagster-own" / "a-run.db")
    assert expected[1] == ("wal",) and len(expected[2]) == 1
    for r in results:
        assert _schema(runs / f"{r.run_id}.db") == expected
        with sqlite3.connect(runs / f"{r.run_id}.db") as db:
            steps = db.execute("SELECT DISTINCT step_key FROM event_logs WHERE step_key IS NOT NULL")
            assert [row[0] for row in steps] == ["workbook"]


def test_tables_found_in_the_index_shard_are_remembered(tmp_path):
    with open_instance(DataStore(tmp_path / "data")) as instance:
        storage = instance.event_log_storage
        assert storage.has_table("dynamic_partitions") and storage.has_table("event_logs")
        assert not storage.has_table("no_such_table")
        assert {"dynamic_partitions", "event_logs"} <= storage._tables
        assert "no_such_table" not in storage._tables
