"""Check a data dir against what its Dagster instance recorded, and rebuild what is damaged.

:func:`verify` goes partition by partition (one at a time: memory does not grow with the
number of partitions) and compares what is on disk with each asset's latest materialization:

- every Parquet file an asset wrote (its ``<table>_rows`` metadata, and its
  ``extraction_issues`` file, ``issues``) reads in full with the contract's schema and holds the
  rows the materialization recorded; the partition's ``sources`` and ``lineage`` files read;
- the LanceDB table of retrieval units holds the ``chunk_units`` and ``record_units`` that
  ``chunk_embeddings`` recorded for the partition (the table is read once, batch by batch,
  before the partitions; a data file that does not read is named);
- the stored bytes (``store/<hash[:2]>/<hash>``) hash to the partition key.

:func:`repair` moves every damaged file to the quarantine
(:mod:`extraction_assets.store.integrity`) and re-materializes, per partition, the first
asset whose output is damaged and everything downstream of it, from the stored bytes; the
stages are deterministic, so the files written again are byte for byte those lost. Stored
bytes that are damaged or missing are copied again from the partition's ``source_path`` when
it still holds them; otherwise the partition is ``unrecoverable`` if an asset that reads the
file must run again. A LanceDB table that does not read is moved to the quarantine whole
(LanceDB's Python API reads no single fragment apart) and every partition's units are
written again (their vectors embedded again: the same model gives the same vectors); a
partition whose unit counts are off has its rows replaced. The views are refreshed and the
full-text index folded at the end.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dagster import AssetRecordsFilter, DagsterInstance

from extraction_assets.app.ingest import (
    IngestResult,
    _Item,
    _run_config,
    _Runner,
    error_line,
    fold_full_text_index,
    materialize_batches,
    open_instance,
)
from extraction_assets.core.errors import one_line
from extraction_assets.defs.assets import ALL_ASSETS, chunk_embeddings
from extraction_assets.defs.lineage import export_lineage
from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.pipeline.schemas import SCHEMAS
from extraction_assets.search.vectors import TABLE_NAME, UNIT_KINDS, probe_text_index
from extraction_assets.store.integrity import (
    QUARANTINE,
    Damage,
    blob_damage,
    parquet_damage,
    quarantine,
    quarantine_damaged,
)
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views, warehouse_damage

#: rows of the LanceDB table read at a time
SCAN_BATCH_ROWS = 65_536
#: the last bytes of every Lance data file (its footer's magic number)
LANCE_MAGIC = b"LANC"
#: assets that read the stored bytes of the file (the others read upstream Parquet files)
_BLOB_READERS = 2
#: partitions whose materializations one query reads (:func:`latest_metadata`), and the
#: records it reads a page
KEYS_PER_QUERY, RECORDS_PER_PAGE = 200, 2_000


@dataclass
class Tally:
    """What :func:`verify` looked at: partitions, Parquet and stored files read, LanceDB
    rows read."""

    partitions: int = 0
    files: int = 0
    units: int = 0


@dataclass
class Repaired:
    """Outcome of :func:`repair` for one damaged partition: ``repaired``; ``failed`` (the
    re-materialization failed, ``detail`` says why); ``unrecoverable`` (the bytes of its file
    are gone from the store and its ``source_path``, and an asset that reads them must run
    again). ``damage`` is what :func:`verify` found; ``assets`` were re-materialized."""

    workbook_hash: str
    path: str
    status: str
    detail: str = ""
    damage: list[Damage] = field(default_factory=list)
    assets: list[str] = field(default_factory=list)


def units_dir(store: DataStore) -> Path:
    """The folder of the LanceDB table of retrieval units."""
    return store.lancedb_uri / f"{TABLE_NAME}.lance"


def unit_counts(store: DataStore, full: bool, tally: Tally | None = None
                ) -> tuple[dict[str, Counter] | None, list[Damage]]:
    """The rows of the LanceDB units table by partition and unit kind, from one scan read
    :data:`SCAN_BATCH_ROWS` rows at a time (``full``: every column, vectors too; else only the
    two counted), and the table's damage: ``(None, [])`` without a table; ``(None, damage)``
    when it does not open, a data file or its full-text index does not read, twice (each
    data file whose Lance footer magic is missing is named, else the table)."""
    folder = units_dir(store)
    if not folder.is_dir():
        return None, []
    import lancedb

    for attempt in range(2):  # again at the latest version: a writer may have committed
        try:
            table = lancedb.connect(str(store.lancedb_uri)).open_table(TABLE_NAME)
            columns = table.schema.names if full else ["workbook_hash", "kind"]
            counts: dict[str, Counter] = {}
            rows = 0
            for batch in (table.search().select(columns).limit(None)
                          .to_batches(SCAN_BATCH_ROWS)):
                for workbook_hash, kind in zip(batch.column("workbook_hash").to_pylist(),
                                               batch.column("kind").to_pylist()):
                    counts.setdefault(workbook_hash, Counter())[kind] += 1
                rows += batch.num_rows
            probe_text_index(table)  # an overwritten index reads only when queried
            if tally:
                tally.units += rows
            return counts, []
        except (RuntimeError, OSError, ValueError) as exc:  # LanceError(IO), a bad magic...
            why = one_line(error_line(exc), 200)
    damage = []
    for path in sorted((folder / "data").glob("*.lance")):
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - len(LANCE_MAGIC)))
            if fh.read() != LANCE_MAGIC:
                damage.append(Damage("", str(path.relative_to(store.root)), "unreadable",
                                     "not a Lance data file (footer magic missing)"))
    return None, damage or [Damage("", str(folder.relative_to(store.root)), "unreadable", why)]


def latest_metadata(instance: DagsterInstance, keys: list[str], assets=ALL_ASSETS
                    ) -> Iterator[tuple[str, dict[str, dict | None]]]:
    """Each partition of ``keys``, in their order, with the metadata of each asset's latest
    materialization (``None``: never materialized), by asset name: read for
    :data:`KEYS_PER_QUERY` partitions at a time, one paged query per asset (one query per
    asset and partition took ~10 ms each)."""
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start:start + KEYS_PER_QUERY]
        latest: dict[str, dict[str, dict | None]] = {
            key: dict.fromkeys((a.key.path[-1] for a in assets)) for key in chunk}
        for asset in assets:
            name, cursor = asset.key.path[-1], None
            while True:
                result = instance.fetch_materializations(
                    AssetRecordsFilter(asset_key=asset.key, asset_partitions=chunk),
                    limit=RECORDS_PER_PAGE, cursor=cursor, ascending=False)
                for record in result.records:  # newest first: the first seen is the latest
                    event = record.asset_materialization
                    if latest[event.partition][name] is None:
                        latest[event.partition][name] = event.metadata
                if not result.has_more:
                    break
                cursor = result.cursor
        yield from latest.items()


def _unit_mismatch(metadata: dict, units: dict[str, Counter] | None,
                   workbook_hash: str) -> tuple[str, str] | None:
    """``(kind, detail)`` when the partition's rows in LanceDB (``units``: by partition and
    kind, ``None`` without a table) are not the ``chunk_units`` and ``record_units`` of its
    ``chunk_embeddings`` materialization ``metadata``: ``missing`` or ``unit_count``."""
    want = Counter({"chunk": int(metadata["chunk_units"].value),
                    "record": int(metadata["record_units"].value)})
    got = (units or {}).get(workbook_hash, Counter())
    if sum(want.values()) and units is None:
        return "missing", "the LanceDB table of retrieval units is missing"
    if any(got[kind] != want[kind] for kind in UNIT_KINDS):
        return "unit_count", ", ".join(f"{got[kind]} {kind} units (recorded {want[kind]})"
                                       for kind in UNIT_KINDS)
    return None


def _file_damage(store: DataStore, workbook_hash: str, path: Path, table: str,
                 expected: int | None, asset: str | None,
                 tally: Tally | None) -> Iterator[Damage]:
    """Damage of one Parquet file that should exist (``expected`` rows, ``None``: any)."""
    name = str(path.relative_to(store.root))
    if not path.exists():
        reason = store.root / QUARANTINE / f"{name}.reason"
        if reason.exists():
            yield Damage(workbook_hash, name, "quarantined", reason.read_text().split(": ", 1)[-1],
                         asset)
        else:
            yield Damage(workbook_hash, name, "missing", "the materialization wrote it", asset)
        return
    if tally:
        tally.files += 1
    kind, detail, rows = parquet_damage(path, table)
    if kind:
        yield Damage(workbook_hash, name, kind, detail, asset)
    elif expected is not None and rows != expected:
        yield Damage(workbook_hash, name, "row_count",
                     f"{rows} rows; the materialization recorded {expected}", asset)


def partition_damage(store: DataStore, workbook_hash: str, latest: dict[str, dict | None],
                     units: dict[str, Counter] | None, units_read: bool,
                     tally: Tally | None = None) -> Iterator[Damage]:
    """Everything damaged in one partition (see the module docstring), given its assets'
    latest materialization metadata (:func:`latest_metadata`), in asset order:
    stored bytes, each asset's files (its ``<table>_rows`` and ``issues`` metadata; the
    ``extraction_issues`` file of an asset that failed, for readability), its LanceDB units
    (``units_read``: the table was read, or is missing, ``units`` ``None``; not when it
    does not read), then ``sources`` (always written) and ``lineage`` (when written)."""
    if tally:
        tally.partitions += 1
        tally.files += 1
    kind, detail = blob_damage(store, workbook_hash)
    if kind:
        yield Damage(workbook_hash, str(store.blob_path(workbook_hash).relative_to(store.root)),
                     kind, detail)
    for asset in ALL_ASSETS:
        name = asset.key.path[-1]
        metadata = latest[name]
        files: list[tuple[str, str | None, int | None]] = []
        for key, value in (metadata or {}).items():
            table = key.removesuffix("_rows")
            if key.endswith("_rows") and f"{table}_path" in metadata and table in SCHEMAS:
                files.append((table, None, int(value.value)))
        issues = store.table_path("extraction_issues", workbook_hash, name)
        if metadata and "issues" in metadata:
            files.append(("extraction_issues", name, int(metadata["issues"].value)))
        elif issues.exists():
            files.append(("extraction_issues", name, None))
        for table, sub, expected in files:
            yield from _file_damage(store, workbook_hash,
                                    store.table_path(table, workbook_hash, sub), table,
                                    expected, name, tally)
        if asset is chunk_embeddings and metadata and units_read and (
                mismatch := _unit_mismatch(metadata, units, workbook_hash)):
            yield Damage(workbook_hash, str(units_dir(store).relative_to(store.root)),
                         *mismatch, name)
    for table in ("sources", "lineage"):  # sources: written when the file was registered
        path = store.table_path(table, workbook_hash)
        moved = store.root / QUARANTINE / f"{path.relative_to(store.root)}.reason"
        if table == "sources" or path.exists() or moved.exists():
            yield from _file_damage(store, workbook_hash, path, table, None, None, tally)


def verify(data_dir: str | Path, tally: Tally | None = None) -> Iterator[Damage]:
    """Every damage of a data dir (see the module docstring), as it is found: the LanceDB
    table's first, then each partition's in partition key order. Reads without writing;
    ``tally`` counts what was read."""
    store = DataStore(data_dir)
    if why := warehouse_damage(store):
        yield Damage("", store.warehouse_path.name, "unreadable", why)
    with open_instance(store) as instance:
        units, damage = unit_counts(store, full=True, tally=tally)
        yield from damage
        keys = sorted(instance.get_dynamic_partitions(workbook_partitions.name))
        for workbook_hash, latest in latest_metadata(instance, keys):
            yield from partition_damage(store, workbook_hash, latest, units, not damage, tally)


def readable_units(store: DataStore, full: bool) -> tuple[dict[str, Counter] | None,
                                                         list[Damage]]:
    """:func:`unit_counts`; a table that does not read is moved to the quarantine (the
    counts are then ``None``, as without a table) and its damage returned."""
    units, damage = unit_counts(store, full)
    if damage:
        quarantine(store, units_dir(store), "; ".join(f"{d.name}: {d.detail}" for d in damage))
    return units, damage


def units_to_rebuild(instance: DagsterInstance, store: DataStore,
                     keys: list[str]) -> tuple[set[str], list[Damage]]:
    """The partitions of ``keys`` whose LanceDB units must be written again, and the table's
    damage (:func:`readable_units`, reading only the counted columns): those whose unit
    counts differ from what ``chunk_embeddings`` recorded (all of them when the table is
    missing or did not read)."""
    units, damage = readable_units(store, full=False)
    rebuild = {workbook_hash
               for workbook_hash, latest in latest_metadata(instance, keys, [chunk_embeddings])
               if latest["chunk_embeddings"] is not None
               and _unit_mismatch(latest["chunk_embeddings"], units, workbook_hash)}
    return rebuild, damage


def rebuild_warehouse(store: DataStore) -> Damage | None:
    """Move a ``warehouse.duckdb`` that does not open (:func:`warehouse_damage`) to the
    quarantine and write the views again; its damage, ``None`` when it opened. It holds only
    view definitions: nothing is lost."""
    why = warehouse_damage(store)
    if why is None:
        return None
    quarantine(store, store.warehouse_path, why)
    stamp = store.warehouse_path.with_name(f".{store.warehouse_path.name}.views")
    stamp.unlink(missing_ok=True)
    refresh_views(store)
    return Damage("", store.warehouse_path.name, "unreadable", why)


def _restore_blob(store: DataStore, workbook_hash: str) -> str:
    """Copy a partition's bytes into the store again from its ``source_path`` (the damaged
    copy moved to the quarantine first); returns why that failed, ``""`` on success."""
    blob = store.blob_path(workbook_hash)
    try:
        source = store.source_of(workbook_hash)["source_path"]
    except KeyError as exc:
        return str(exc)
    if blob.exists():
        quarantine(store, blob, blob_damage(store, workbook_hash)[1])
    try:
        store.restore_blob(workbook_hash, source)
    except OSError as exc:
        return f"{source} cannot be read ({exc.strerror or exc})"
    except ValueError as exc:
        return str(exc)
    return ""


def _rebuild_sources(store: DataStore, workbook_hash: str) -> str:
    """Write a partition's ``sources`` file again from what is left of its registration: the
    first path in ``sources/<hash>.json``, registered at that file's modification time (when
    it was written). Returns what is lost: the later paths of the same bytes."""
    record = store.root / "sources" / f"{workbook_hash}.json"
    source = store.source_of(workbook_hash)
    store.write_table("sources", workbook_hash, [dict(
        workbook_hash=workbook_hash, source_path=source["source_path"],
        filename=source["filename"],
        registered_at=datetime.fromtimestamp(record.stat().st_mtime, timezone.utc))])
    return (f"parquet/sources/{workbook_hash}.parquet rebuilt from {record.name}: its first "
            "path, at the time the record was written; later paths of these bytes are lost")


def repair(data_dir: str | Path, embedder: EmbedderResource | None = None,
           on_result: Callable[[Repaired], None] | None = None) -> list[Repaired]:
    """Rebuild every damaged partition of a data dir (see the module docstring); returns one
    result per damaged partition, in partition key order, plus one (``workbook_hash`` empty)
    for a LanceDB table moved to the quarantine. ``on_result`` gets each result when known."""
    store = DataStore(data_dir)
    quarantine_damaged(store)  # out of the views at once
    results: dict[str, Repaired] = {}
    if damage := rebuild_warehouse(store):
        results["warehouse"] = Repaired("", damage.name, "repaired", "views written again",
                                        [damage])
    with open_instance(store) as instance:
        keys = sorted(instance.get_dynamic_partitions(workbook_partitions.name))
        units, table_damage = readable_units(store, full=True)
        order = [a.key.path[-1] for a in ALL_ASSETS]
        todo: dict[int | None, list[_Item]] = {}  # by the max_tokens of rendered_chunks
        lineage: list[str] = []
        for k, (workbook_hash, latest) in enumerate(latest_metadata(instance, keys)):
            damage = list(partition_damage(store, workbook_hash, latest, units, True))
            if not damage:
                continue
            try:
                path = store.source_of(workbook_hash)["source_path"]
            except KeyError:
                path = workbook_hash
            result = results[workbook_hash] = Repaired(workbook_hash, path, "repaired",
                                                       damage=damage)
            first, blob_lost = len(order), ""
            for d in damage:
                if d.kind not in ("missing", "quarantined") and d.name.startswith("parquet/"):
                    quarantine(store, store.root / d.name, d.detail)
                if d.asset is not None:
                    first = min(first, order.index(d.asset))
                elif d.name.startswith("store/"):
                    if why := _restore_blob(store, workbook_hash):
                        blob_lost = f"{d.name}: {d.kind}; {why}"
                elif d.name.startswith("parquet/lineage/"):
                    lineage.append(workbook_hash)
                else:  # the sources file: the registration history of these bytes
                    result.detail = _rebuild_sources(store, workbook_hash)
            if blob_lost:
                result.status, result.detail = "unrecoverable", blob_lost
            if blob_lost and first < _BLOB_READERS:
                continue  # the assets that read the file's bytes cannot run
            if first < len(order):
                # through the last asset materialized (an ingest --until stops earlier)
                last = max([first] + [n for n, name in enumerate(order)
                                      if latest[name] is not None])
                result.assets = order[first:last + 1]
                blob = store.blob_path(workbook_hash)
                # rendered_chunks again with the budget it had (a run's config names only
                # the assets it materializes)
                rendered = (latest["rendered_chunks"]
                            if first <= order.index("rendered_chunks") <= last else None) or {}
                tokens = rendered.get("max_tokens")
                todo.setdefault(int(tokens.value) if tokens else None, []).append(_Item(
                    k, path, workbook_hash, tuple(ALL_ASSETS[first:last + 1]),
                    blob.stat().st_size if blob.exists() else 0))
        if table_damage:
            results[""] = Repaired("", str(units_dir(store).relative_to(store.root)),
                                   "repaired", "moved to the quarantine; every partition's "
                                   "units written again", table_damage)

        def done(k: int, outcome: IngestResult) -> None:
            result = results[outcome.workbook_hash]
            if outcome.status != "success" and result.status == "repaired":
                result.status, result.detail = "failed", outcome.error or outcome.status

        for max_tokens, items in sorted(todo.items(), key=lambda kv: kv[0] or 0):
            runner = _Runner(instance, store, embedder, None, _run_config(max_tokens))
            materialize_batches(runner, items, done, threading.Event())
        if lineage:
            export_lineage(instance, store, lineage)
    refresh_views(store)
    fold_full_text_index(store)
    ordered = [results[h] for h in ["warehouse", "", *keys] if h in results]
    for result in ordered:
        if on_result:
            on_result(result)
    return ordered
