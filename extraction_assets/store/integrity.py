"""Damage in a data dir: Parquet files that do not read, stored bytes that do not match their
hash, and the quarantine that keeps a damaged file out of the DuckDB views.

The views read each table through a glob (``read_parquet('records/*.parquet')``), so one file
that is not Parquet any more (overwritten, truncated) would break the whole view. The
``refresh`` and ``repair`` commands therefore start with :func:`quarantine_damaged` (and
``ingest`` checks the files of each partition it finds up to date): every Parquet file's
footer is read (a file that passed before is
skipped while its size and modification time are unchanged, recorded in
``<data-dir>/.parquet_footers.json``), and a file whose footer does not read is moved to
``<data-dir>/quarantine/`` under its own relative path, beside a ``.reason`` file saying why.
The views then read every other file; the partition of a quarantined file is reported
``damaged`` by ``ingest`` and ``refresh`` until ``extraction-assets repair`` writes the file
again. Quarantined bytes are kept for inspection (delete the folder when done).

A full check (:func:`parquet_damage`: every row read, the schema compared with the contract's)
is what ``extraction-assets verify`` does (:mod:`extraction_assets.app.verify`). The counts of
a ``damaged`` result line (:func:`summarize`, read from the files, where the other results
take theirs from the materializations' metadata) quarantine a file found damaged past its
footer, and a Parquet file deleted makes its asset stale (:func:`outputs_gone`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from extraction_assets.core.errors import one_line
from extraction_assets.pipeline.schemas import SCHEMAS
from extraction_assets.store.storage import (
    HASH_RE,
    DamagedFileError,
    DataStore,
    atomic_write_bytes,
    sha256_file,
)

#: folder of the data dir that holds damaged files moved out of the views' globs
QUARANTINE = "quarantine"
#: file of the data dir recording the Parquet files whose footer read: relative path ->
#: [size in bytes, modification time in ns]
FOOTER_CACHE = ".parquet_footers.json"


@dataclass(frozen=True)
class Damage:
    """One damaged thing of a data dir: its partition (``""`` when it is the whole LanceDB
    table's), its ``name`` relative to the data dir (``parquet/records/<hash>.parquet``,
    ``store/ab/<hash>``, ``lancedb/units.lance/data/<file>.lance``), the ``kind`` of damage
    (``unreadable``, ``wrong_schema``, ``row_count``, ``missing``, ``quarantined``,
    ``hash_mismatch``, ``unit_count``), a one-line ``detail`` and the ``asset`` that writes
    it (``None`` for the stored bytes and the ``sources`` and ``lineage`` files)."""

    workbook_hash: str
    name: str
    kind: str
    detail: str
    asset: str | None = None


def parquet_footer_damage(path: Path) -> str | None:
    """Why a Parquet file's footer does not read (one line), ``None`` when it does: the cheap
    check (a few KiB read) that keeps a file out of the views."""
    try:
        pq.read_metadata(path)
    except (pa.ArrowException, OSError) as exc:
        return one_line(exc)
    return None


def parquet_damage(path: Path, table: str) -> tuple[str, str, int | None]:
    """Read a Parquet file of ``table`` in full, one row group at a time (memory bounded by
    a row group): returns ``(kind, detail, rows)``, ``kind`` empty when the file is sound.
    ``wrong_schema``: its columns or types are not :data:`SCHEMAS` ``[table]``'s;
    ``unreadable``: the footer or a page does not read."""
    try:
        file = pq.ParquetFile(path)
        schema = file.schema_arrow
        if not schema.remove_metadata().equals(SCHEMAS[table].remove_metadata()):
            expected = set(map(str, SCHEMAS[table]))
            odd = sorted(set(map(str, schema)) ^ expected)
            return "wrong_schema", "columns differ from the contract: " + one_line(
                ", ".join(odd) or "order", 200), None
        rows = 0
        for group in range(file.num_row_groups):
            rows += file.read_row_group(group).num_rows
        return "", "", rows
    except (pa.ArrowException, OSError) as exc:
        return "unreadable", one_line(exc), None


def blob_damage(store: DataStore, workbook_hash: str) -> tuple[str, str]:
    """``(kind, detail)`` of a partition's stored bytes (``store/<hash[:2]>/<hash>``):
    ``missing``, ``hash_mismatch`` (their sha256 is not the partition key) or
    ``unreadable``; ``("", "")`` when sound. Reads the file in 1 MiB blocks."""
    blob = store.blob_path(workbook_hash)
    if not blob.exists():
        return "missing", "the stored bytes of the file are missing"
    try:
        digest = sha256_file(blob)
    except OSError as exc:
        return "unreadable", one_line(exc.strerror or exc)
    if digest != workbook_hash:
        return "hash_mismatch", f"the stored bytes hash to {digest[:12]}…, not the partition key"
    return "", ""


def table_of(store: DataStore, path: Path) -> tuple[str, str | None, str] | None:
    """``(table, asset, partition)`` of a Parquet file of the layout
    (``parquet/<table>/<hash>.parquet``, ``parquet/extraction_issues/<asset>/<hash>.parquet``),
    ``None`` for any other file."""
    try:
        parts = path.relative_to(store.parquet_dir).parts
    except ValueError:
        return None
    key = parts[-1].removesuffix(".parquet")
    if not parts[-1].endswith(".parquet") or not HASH_RE.match(key) or parts[0] not in SCHEMAS:
        return None
    if len(parts) == 2:
        return parts[0], None, key
    if len(parts) == 3 and parts[0] == "extraction_issues":
        return parts[0], parts[1], key
    return None


def parquet_files(store: DataStore) -> Iterator[Path]:
    """Every Parquet file of the layout (:func:`table_of`), folder by folder, sorted."""
    if not store.parquet_dir.is_dir():
        return
    for folder, subfolders, names in os.walk(store.parquet_dir):
        subfolders.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if table_of(store, path):
                yield path


def quarantine(store: DataStore, path: Path, why: str) -> Path:
    """Move a damaged file (or folder: a LanceDB table) of the data dir to
    ``<data-dir>/quarantine/<its relative path>`` (replacing an earlier quarantined copy)
    with ``why`` in a ``.reason`` file beside it; returns the new path. Out of the views'
    globs, the views read every other file."""
    relative = path.relative_to(store.root)
    target = store.root / QUARANTINE / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():  # a table folder quarantined before: the new one replaces it
        shutil.rmtree(target)
    atomic_write_bytes(target.with_name(target.name + ".reason"),
                       f"{relative}: {why}".encode())
    os.replace(path, target)
    return target


def quarantined(store: DataStore, workbook_hash: str) -> list[str]:
    """The reasons (``<relative path>: <why>``) of a partition's files in quarantine that have
    not been written again since (the partition is still damaged), sorted."""
    folder = store.root / QUARANTINE
    if not folder.is_dir():
        return []
    reasons = [*folder.glob(f"parquet/*/{workbook_hash}.parquet.reason"),
               *folder.glob(f"parquet/extraction_issues/*/{workbook_hash}.parquet.reason"),
               *folder.glob(f"store/{workbook_hash[:2]}/{workbook_hash}.reason")]
    return sorted(reason.read_text() for reason in reasons
                  if not (store.root / reason.relative_to(folder).with_suffix("")).exists())


def quarantine_damaged(store: DataStore, partitions: Iterable[str] | None = None
                       ) -> dict[str, list[str]]:
    """Check the footer of every Parquet file (:func:`parquet_footer_damage`; a file whose
    size and modification time are those recorded in :data:`FOOTER_CACHE` when it last passed
    is not read again), or of the files of ``partitions`` only (~0.1 ms a file, without the
    record), and move each file that fails to the quarantine (:func:`quarantine`). Returns
    the reasons of the files moved now, by partition."""
    if partitions is not None:
        moved: dict[str, list[str]] = {}
        for workbook_hash in partitions:
            for path in sorted([*store.parquet_dir.glob(f"*/{workbook_hash}.parquet"),
                                *store.parquet_dir.glob(f"*/*/{workbook_hash}.parquet")]):
                if table_of(store, path) and (why := parquet_footer_damage(path)):
                    quarantine(store, path, why)
                    moved.setdefault(workbook_hash, []).append(
                        f"{path.relative_to(store.root)}: {why}")
        return moved
    cache_path = store.root / FOOTER_CACHE
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    passed: dict[str, list[int]] = {}
    moved = {}
    for path in parquet_files(store):
        relative = str(path.relative_to(store.root))
        try:
            st = path.stat()
        except FileNotFoundError:  # replaced or removed by another process meanwhile
            continue
        identity = [st.st_size, st.st_mtime_ns]
        if cache.get(relative) == identity or not (why := parquet_footer_damage(path)):
            passed[relative] = identity
            continue
        quarantine(store, path, why)
        moved.setdefault(table_of(store, path)[2], []).append(f"{relative}: {why}")
    if passed != cache:
        try:
            atomic_write_bytes(cache_path, json.dumps(passed, sort_keys=True).encode())
        except OSError:  # a read-only data dir: the footers are read again next time
            pass
    return moved


def _read(store: DataStore, table: str, workbook_hash: str, damaged: list[str],
          asset: str | None = None) -> pa.Table | None:
    """A partition's table for :func:`summarize`; ``None`` when it was not written, or when it
    is damaged: the file is then moved to the quarantine (out of the views,
    :mod:`~extraction_assets.store.integrity`) and named in ``damaged``."""
    try:
        return store.read_table(table, workbook_hash, asset=asset)
    except FileNotFoundError:
        return None
    except DamagedFileError as exc:
        quarantine(store, exc.path, exc.reason)
        damaged.append(str(exc))
        return None


def _issue_counts(store: DataStore, workbook_hash: str,
                  damaged: list[str]) -> tuple[int, int]:
    """``(errors, over_budget)`` of one partition's ``extraction_issues``, of every asset:
    issues of severity ``error`` (e.g. a worksheet that is not well-formed XML: its cells after
    the fault are missing) and ``chunk_over_budget`` warnings (a chunk over ``max_tokens``)."""
    folder = store.table_path("extraction_issues", workbook_hash).parent
    errors = over_budget = 0
    for path in sorted(folder.glob(f"*/{workbook_hash}.parquet")):
        issues = _read(store, "extraction_issues", workbook_hash, damaged, path.parent.name)
        if issues is not None:
            errors += issues.column("severity").to_pylist().count("error")
            over_budget += issues.column("code").to_pylist().count("chunk_over_budget")
    return errors, over_budget


def summarize(store: DataStore, workbook_hash: str) -> dict[str, int]:
    """Sheets, tables, records and chunks written for one partition, its ``errors`` (issues of
    severity ``error``: the file was read, but not all of it), ``over_budget`` (chunks
    over the token budget, see :func:`_issue_counts`), ``formulas_computed`` and
    ``formulas_not_computed`` (formulas stored without a cached value, see
    :mod:`extraction_assets.core.formula.evaluate`); ``damaged``, when some, the files of
    the partition that did not read (moved to the quarantine, counted as empty: ``repair``
    rebuilds them)."""
    damaged: list[str] = []
    counts = {}
    for table in ("sheets", "blocks", "records", "chunks"):
        data = _read(store, table, workbook_hash, damaged)
        counts[table] = 0 if data is None else data.num_rows
        if table == "blocks":
            counts["tables"] = 0 if data is None else data.column("kind").to_pylist().count(
                "table")
        if table == "sheets":
            for key, column in (("formulas_computed", "n_computed_formulas"),
                                ("formulas_not_computed", "n_uncached_formulas")):
                found = data is not None and column in data.column_names  # older data dirs
                counts[key] = (pc.sum(data.column(column)).as_py() or 0) if found else 0
    errors, over_budget = _issue_counts(store, workbook_hash, damaged)
    return {"sheets": counts["sheets"], "tables": counts["tables"],
            "records": counts["records"], "chunks": counts["chunks"],
            "errors": errors, "over_budget": over_budget,
            "formulas_computed": counts["formulas_computed"],
            "formulas_not_computed": counts["formulas_not_computed"],
            **({"damaged": len(damaged)} if damaged else {})}


def outputs_gone(store: DataStore, workbook_hash: str, metadata: dict) -> bool:
    """Whether a Parquet file a materialization wrote (named by its ``<table>_path``
    metadata) is gone from the data dir, deleted and not moved to the quarantine (a
    quarantined file's partition is ``damaged``, left to ``repair``): the asset is then
    stale."""
    for key in metadata:
        table = key.removesuffix("_path")
        if key.endswith("_path") and table in SCHEMAS:
            path = store.table_path(table, workbook_hash)
            if not path.exists() and not (
                    store.root / QUARANTINE / path.relative_to(store.root)).exists():
                return True
    return False
