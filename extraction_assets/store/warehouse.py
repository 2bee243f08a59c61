"""DuckDB views over the Parquet tables: the audit contract of DESIGN.md.

The views read Parquet through globs, so the DuckDB file holds no data: concurrent runs never
fight over a DuckDB write lock for their outputs, and new partitions appear in the views as soon
as their files are renamed into place. A view whose folder has no file yet is an empty,
correctly typed relation, so every contract view always answers.

Only the view definitions live in the DuckDB file, and every run rewrites them: writers in
several processes take a file lock (``<data-dir>/.warehouse.duckdb.lock``) so they queue instead
of failing with DuckDB's ``Could not set lock on file``, and each one lists the Parquet folders
*inside* the lock, so the last writer's views cover every file renamed into place before it.
A reader (or a writer that does not use the lock) holding the file is waited out with retries.
Temp files of writers (``.<name>.*.tmp``, left behind by a killed run) never match the views'
``*.parquet`` globs.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import duckdb
import pyarrow as pa
from filelock import FileLock

from extraction_assets.core.errors import one_line
from extraction_assets.core.render.units import CELL_TYPE
from extraction_assets.pipeline.schemas import SCHEMAS
from extraction_assets.store.storage import DataStore, atomic_write_bytes
from extraction_assets.store.trust_views import trust_view_sql

#: view name -> (table, glob below parquet/); the columns are the contract of DESIGN.md.
_VIEWS: dict[str, tuple[str, str]] = {
    "sheets": ("sheets", "sheets/*.parquet"),
    "cells": ("cells", "cells/*.parquet"),
    "formula_refs": ("formula_refs", "formula_refs/*.parquet"),
    "blocks": ("blocks", "blocks/*.parquet"),
    "block_columns": ("block_columns", "block_columns/*.parquet"),
    "records": ("records", "records/*.parquet"),
    "record_units": ("record_units", "record_units/*.parquet"),
    "chunks": ("chunks", "chunks/*.parquet"),
    "extraction_issues": ("extraction_issues", "extraction_issues/*/*.parquet"),
    "lineage": ("lineage", "lineage/*.parquet"),
    "sources": ("sources", "sources/*.parquet"),
    "sheet_objects": ("sheet_objects", "sheet_objects/*.parquet"),
    "rich_text": ("rich_text", "rich_text/*.parquet"),
    "renderings": ("renderings", "renderings/*.parquet"),
}

CONTRACT_VIEWS = ("workbooks", "sheets", "cells", "blocks", "block_columns", "records",
                  "chunks", "extraction_issues", "lineage")

_DUCK_TYPES = {
    pa.string(): "VARCHAR", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
    pa.list_(pa.string()): "VARCHAR[]", pa.list_(pa.int32()): "INTEGER[]",
    pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
    pa.list_(CELL_TYPE): "STRUCT(ref VARCHAR, header VARCHAR, value VARCHAR)[]",
}

#: seconds a writer waits for the other writers of the warehouse before giving up
LOCK_TIMEOUT_SECONDS = 600.0


def _writer_lock(path: Path) -> FileLock:
    return FileLock(str(path.with_name(f".{path.name}.lock")), timeout=LOCK_TIMEOUT_SECONDS)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _relation(store: DataStore, table: str, pattern: str) -> str:
    """SQL for a table's rows: ``read_parquet`` over its files, or a typed empty relation."""
    folder = store.parquet_dir
    if any(folder.glob(pattern)):
        return f"read_parquet({_quote(str(folder / pattern))}, union_by_name = true)"
    columns = ", ".join(
        f"CAST(NULL AS {_DUCK_TYPES[f.type]}) AS {f.name}" for f in SCHEMAS[table]
    )
    return f"(SELECT {columns} WHERE false)"


def view_sql(store: DataStore) -> dict[str, str]:
    """The ``CREATE OR REPLACE VIEW`` statement of every view, by view name, in creation order:
    the nine contract views, ``sources``, ``sheet_objects``, ``rich_text``, then
    ``workbook_versions`` (a source path's hashes in registration order, with ``version`` and
    ``previous_hash``), ``chunk_changes`` (per pair of consecutive versions, each chunk id
    ``added``, ``removed`` or ``kept``) and the trust views (:mod:`.trust_views`)."""
    sql = {
        name: f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {_relation(store, table, pattern)}"
        for name, (table, pattern) in _VIEWS.items()
    }
    workbooks = _relation(store, "workbooks", "workbooks/*.parquet")
    sql["workbooks"] = (
        "CREATE OR REPLACE VIEW workbooks AS SELECT w.*, l.ingested_at FROM "
        f"{workbooks} AS w LEFT JOIN (SELECT workbook_hash, min(materialized_at) AS ingested_at "
        "FROM lineage WHERE asset = 'workbook' GROUP BY workbook_hash) AS l USING (workbook_hash)"
    )
    sql["workbook_versions"] = (
        "CREATE OR REPLACE VIEW workbook_versions AS SELECT source_path, workbook_hash, filename, "
        "registered_at, row_number() OVER w AS version, lag(workbook_hash) OVER w AS previous_hash "
        "FROM sources WINDOW w AS (PARTITION BY source_path ORDER BY registered_at, workbook_hash)"
    )
    sql["chunk_changes"] = (
        "CREATE OR REPLACE VIEW chunk_changes AS "
        "WITH pairs AS (SELECT source_path, previous_hash, workbook_hash FROM workbook_versions "
        "WHERE previous_hash IS NOT NULL), "
        "now AS (SELECT p.*, c.chunk_id FROM pairs p JOIN chunks c USING (workbook_hash)), "
        "before AS (SELECT p.*, c.chunk_id FROM pairs p JOIN chunks c "
        "ON c.workbook_hash = p.previous_hash) "
        "SELECT source_path, previous_hash, workbook_hash, chunk_id, CASE "
        "WHEN before.chunk_id IS NULL THEN 'added' WHEN now.chunk_id IS NULL THEN 'removed' "
        "ELSE 'kept' END AS change FROM now FULL OUTER JOIN before "
        "USING (source_path, previous_hash, workbook_hash, chunk_id)"
    )
    order = ["lineage", "sources", *[v for v in CONTRACT_VIEWS if v != "lineage"],
             *[v for v in _VIEWS if v not in CONTRACT_VIEWS and v != "sources"],
             "workbook_versions", "chunk_changes"]
    trust = trust_view_sql(lambda table, pattern: _relation(store, table, pattern))
    return {**{name: sql[name] for name in order}, **trust}


def refresh_views(store: DataStore, attempts: int = 20, delay_seconds: float = 0.25) -> Path:
    """(Re)create every contract view in ``<data-dir>/warehouse.duckdb``; returns its path.

    The views' SQL is computed from the Parquet files present; when it is the SQL the file
    already holds (recorded by the sha256 of the statements in ``.warehouse.duckdb.views``),
    nothing is done and no lock is taken: a view's glob already reads every new partition, only
    a table's first file changes its SQL. Otherwise writers of all processes are serialized by
    a file lock, the SQL is computed again under it, and a run that still finds the DuckDB file
    locked (by a reader, or a process not using the lock) retries with a growing delay.

    Raises:
        duckdb.IOException: the file stayed locked for all ``attempts``.
        filelock.Timeout: other writers held the lock for ``LOCK_TIMEOUT_SECONDS``.
    """
    path = store.warehouse_path
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = path.with_name(f".{path.name}.views")

    def current() -> tuple[dict[str, str], str, bool]:
        statements = view_sql(store)
        digest = hashlib.sha256("\n".join(statements.values()).encode()).hexdigest()
        return statements, digest, path.exists() and stamp.exists() and stamp.read_text() == digest

    if current()[2]:
        return path  # the views already read these globs: new files need nothing, no lock
    with _writer_lock(path):
        for attempt in range(attempts):
            try:
                statements, digest, up_to_date = current()
                if up_to_date:
                    return path  # another writer made them while this one waited
                with duckdb.connect(str(path)) as con:
                    con.execute("BEGIN TRANSACTION")
                    for statement in statements.values():
                        con.execute(statement)
                    con.execute("COMMIT")
                atomic_write_bytes(stamp, digest.encode())
                return path
            except duckdb.IOException:
                if attempt == attempts - 1:
                    raise
                time.sleep(delay_seconds * (attempt + 1))
    return path


def warehouse_damage(store: DataStore) -> str | None:
    """Why ``warehouse.duckdb`` does not open as a DuckDB database (one line: overwritten,
    truncated), ``None`` when it opens, is absent or is held by a writer (a lock is no
    damage). ``refresh_views`` rebuilds it once it is moved away (with its stamp)."""
    path = store.warehouse_path
    if not path.exists():
        return None
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            con.execute("SELECT count(*) FROM duckdb_views()").fetchall()
    except duckdb.Error as exc:
        return None if "lock" in str(exc).lower() else one_line(exc)
    return None


def connect(store: DataStore, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open the warehouse (creating the views first if the file does not exist yet), retrying
    for a few seconds while a writer holds it.

    Raises:
        duckdb.IOException: the file stayed locked.
    """
    if not store.warehouse_path.exists():
        refresh_views(store)
    for attempt in range(20):
        try:
            return duckdb.connect(str(store.warehouse_path), read_only=read_only)
        except duckdb.IOException:
            if attempt == 19:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")
