"""The ``files`` catalog: a file found by its name in the Dagster UI.

The six assets are partitioned by content hash, and a run of several files names them in one
comma-joined run tag, which the UI's run filter (an exact ``key=value`` match) never matches for
one file. The ``files`` asset has one partition per file name (:data:`file_names`); the UI's
Partitions tab of an asset filters its keys by what is typed (a case-insensitive substring), so
typing ``orders.xlsx`` there lists that file. Each materialization of a name's partition names
the ``workbooks`` partition (content hash) of the bytes the file held, its source path and, when
``ingest`` recorded it, the run that processed it and the file's outcome.

Nothing computes the catalog: ``ingest`` and the inbox sensor report its materializations
(runless events, one per file whose content or name is new to the catalog, or that ``ingest``
ran), so a file costs one event, and a file seen again unchanged costs nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence, Set
from pathlib import Path
from typing import NamedTuple

from dagster import (
    AddDynamicPartitionsRequest,
    AssetMaterialization,
    AssetSpec,
    DagsterInstance,
    DynamicPartitionsDefinition,
    MetadataValue,
)

from extraction_assets.defs.partitions import (
    add_partition_keys,
    existing_partition_keys,
    new_key_batches,
)

#: One partition per file name (see :func:`file_name_key`).
file_names = DynamicPartitionsDefinition(name="file_names")

#: The catalog asset: reported by ``ingest`` and the inbox sensor, never materialized by a run.
files_catalog = AssetSpec(
    "files", partitions_def=file_names, group_name="catalog",
    description="The files ingested, one partition per file name: type a file's name in the "
                "search box of the Partitions tab, open its partition; each materialization "
                "names the `workbooks` partition (`workbook_hash`) of the bytes the file held, "
                "its `source_path` and, for an `ingest`, the `run` and the file's `status`. "
                "Reported by `ingest` and the inbox sensor.",
)

#: What Dagster refuses in a partition key: ``...`` (it separates a range) and control characters.
_REFUSED_IN_KEY = re.compile(r"\.\.\.|[\a\b\f\n\r\t\v\0]")


class CatalogFile(NamedTuple):
    """A file to record: its path, the content hash of its bytes (its ``workbooks`` partition)
    and, after an ingest's run, the file's outcome (an ``IngestResult`` status) and run id."""

    path: str
    workbook_hash: str
    status: str | None = None
    run_id: str | None = None


def file_name_key(path: str | Path) -> str:
    """The :data:`file_names` partition key of a file: its name (last path component), each
    ``...`` and control character in it (which Dagster refuses in a key) replaced by ``_``."""
    return _REFUSED_IN_KEY.sub("_", Path(path).name)


def file_event(file: CatalogFile) -> AssetMaterialization:
    """The catalog materialization of a file: partition :func:`file_name_key`, metadata
    ``workbook_hash`` and ``source_path`` (made absolute), and ``status`` and ``run`` (a link
    to the run) when known."""
    metadata: dict = {"workbook_hash": MetadataValue.text(file.workbook_hash),
                      "source_path": MetadataValue.path(os.path.abspath(file.path))}
    if file.status:
        metadata["status"] = MetadataValue.text(file.status)
    if file.run_id:
        metadata["run"] = MetadataValue.dagster_run(file.run_id)
    return AssetMaterialization(files_catalog.key, partition=file_name_key(file.path),
                                metadata=metadata)


def files_to_record(files: Iterable[CatalogFile], changed: Set[str],
                    new_names: Set[str]) -> list[AssetMaterialization]:
    """The catalog events of ``files``: one for each file whose content hash is in ``changed``
    or whose name key is in ``new_names``; none for a file whose name and content the catalog
    holds already."""
    return [file_event(f) for f in files
            if f.workbook_hash in changed or file_name_key(f.path) in new_names]


def catalog_requests(instance: DagsterInstance, files: Sequence[CatalogFile],
                     changed: Set[str]) -> tuple[list[AddDynamicPartitionsRequest],
                                                 list[AssetMaterialization]]:
    """What a sensor tick adds to the catalog for the ``files`` it found: the requests adding
    the names that are not :data:`file_names` partitions yet (one fetch of the existing keys),
    and the events of :func:`files_to_record` (``changed``: the hashes new this tick)."""
    batches = new_key_batches([file_name_key(f.path) for f in files],
                              existing_partition_keys(instance, file_names))
    new_names = {key for batch in batches for key in batch}
    return ([file_names.build_add_request(batch) for batch in batches],
            files_to_record(files, changed, new_names))


def record_files(instance: DagsterInstance, files: Sequence[CatalogFile],
                 changed: Set[str]) -> int:
    """Add the names of ``files`` that are not :data:`file_names` partitions yet and report the
    events of :func:`files_to_record` (``changed``: the hashes an ingest ran or found failed,
    i.e. every result but ``unchanged``); returns the number of events reported."""
    new_names = set(add_partition_keys(instance, [file_name_key(f.path) for f in files],
                                       partitions_def=file_names))
    events = files_to_record(files, changed, new_names)
    for event in events:
        instance.report_runless_asset_event(event)
    return len(events)
