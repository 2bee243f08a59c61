"""The IO manager of the stage assets: how their partitioned Arrow tables are written and read.

An asset's output is a :class:`StageTables`: for each partition key of its step (one, or the
range of a run over a batch of files, ``BackfillPolicy.single_run``), the Parquet files of the
tables its stage wrote and its ``extraction_issues`` (encoded by the asset: their sha256 is its
data version), and for the ``workbook`` asset the file as opened. :class:`TablesIOManager`
writes each file atomically under ``<data-dir>/parquet/`` (see
:mod:`~extraction_assets.store.storage`), refreshes the DuckDB views once per step, and empties
the output (Dagster's in-process execution keeps every step's output value until the run ends).

A downstream asset declares what it reads of an upstream asset in its ``AssetIn`` metadata
(:func:`tables_in`): the ``tables``, the only ``columns`` it reads of some, and the tables it is
the last asset of the graph to read (``last_use``). Its input is an :class:`UpstreamTables`:
per partition, a mapping that reads a table when it is first looked up.

Within one run of the in-process executor (``ingest``, the CLI; Dagster builds the IO manager
once per run), a table an asset made for a run of one partition travels on in memory to the
later assets of the run that read it, until its last reader has it; the opened file travels
from ``workbook`` to ``parsed_sheets`` in a batch too, so that a file is opened (sniffed,
decrypted, converted) once. What a run still holds when it ends (e.g. ``ingest --until``)
goes with its IO manager: an opened workbook reads bytes in memory, it holds no file open.
A batch's later assets, another process (the multiprocess or Celery executor) or a run of
later assets alone read the Parquet files; ``parsed_sheets`` in another process or run opens
the file again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from dagster import (
    AssetIn,
    ConfigurableIOManagerFactory,
    InputContext,
    IOManager,
    OutputContext,
    PythonObjectDagsterType,
)

from extraction_assets.store.storage import DataStore, EncodedTable
from extraction_assets.store.warehouse import refresh_views

#: The resource key of :class:`TablesIOManagerFactory` in the definitions.
IO_MANAGER_KEY = "tables_io_manager"


@dataclass
class PartitionTables:
    """What one asset made for one partition: its tables (each encoded as its Parquet file),
    its ``extraction_issues`` and, for ``workbook``, the file as opened (an object with a
    ``close()``: the asset that reads it closes it)."""

    tables: dict[str, EncodedTable]
    issues: EncodedTable
    opened: Any = None


@dataclass
class StageTables:
    """An asset's output for the partitions of its step, by partition key, in key order.
    :meth:`drain` hands each over once and empties the output."""

    partitions: dict[str, PartitionTables] = field(default_factory=dict)

    def drain(self) -> Iterator[tuple[str, PartitionTables]]:
        """Each ``(partition key, tables)``, removed from the output as it is handed over."""
        while self.partitions:
            key = next(iter(self.partitions))
            yield key, self.partitions.pop(key)


#: The Dagster type of every stage asset's output.
STAGE_TABLES = PythonObjectDagsterType(StageTables, name="StageTables",
                                       description="Per partition, the Parquet files of the "
                                       "tables a stage wrote and its extraction_issues.")


def tables_in(asset, tables: tuple[str, ...], columns: Mapping[str, list[str]] | None = None,
              last_use: tuple[str, ...] = ()) -> AssetIn:
    """The ``AssetIn`` of an input that reads ``tables`` of ``asset`` (an ``AssetsDefinition``
    or its key): only ``columns`` of some of them, and ``last_use``, the tables no later asset
    of the graph reads (an in-memory copy is then dropped once this input has it)."""
    key = getattr(asset, "key", asset)
    return AssetIn(key=key, metadata={"tables": list(tables),
                                      "columns": dict(columns or {}),
                                      "last_use": list(last_use)})


def tables_read(assets) -> list[str]:
    """The tables the inputs of ``assets`` (``AssetsDefinition``s) read, sorted."""
    return sorted({table for a in assets for i in a.op.ins.values()
                   for table in (i.metadata or {}).get("tables", ())})


class PartitionInput(Mapping):
    """One partition's tables of an upstream asset that an input reads (the table the run
    holds in memory, else its Parquet file, each read once when first looked up), and
    ``opened``, the file as the ``workbook`` asset opened it in this run (else ``None``)."""

    def __init__(self, manager: TablesIOManager, key: str, asset: str, tables: list[str],
                 columns: Mapping[str, list[str]], last_use: list[str]):
        self._manager, self._key, self._asset = manager, key, asset
        self._tables, self._columns, self._last = tables, columns, set(last_use)
        self._read: dict[str, pa.Table] = {}

    @property
    def opened(self):
        """The opened file the upstream asset passed on in this run, handed over once."""
        return self._manager.take_opened(self._key, self._asset)

    def __getitem__(self, name: str) -> pa.Table:
        if name not in self._tables:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = self._manager.read(self._key, name, self._columns.get(name),
                                                  name in self._last)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


@dataclass
class UpstreamTables:
    """An input's view of an upstream asset's tables for the partitions of the step
    (:meth:`partition`)."""

    manager: TablesIOManager
    asset: str
    keys: list[str]
    tables: list[str]
    columns: Mapping[str, list[str]]
    last_use: list[str]

    def partition(self, key: str) -> PartitionInput:
        """The tables of partition ``key``.

        Raises:
            KeyError: ``key`` is not a partition of the step.
        """
        if key not in self.keys:
            raise KeyError(f"{key} is not a partition of this step")
        return PartitionInput(self.manager, key, self.asset, self.tables, self.columns,
                              self.last_use)


class TablesIOManager(IOManager):
    """Writes the stage assets' :class:`StageTables` to the data dir and loads their tables
    for downstream assets (see the module docstring); holds, for the run, the Arrow tables
    and opened files that later assets of the run read."""

    def __init__(self, store: DataStore, held_tables: frozenset[str] = frozenset()):
        self.store, self.held_tables = store, held_tables
        self._held: dict[tuple[str, str], pa.Table] = {}
        self._opened: dict[tuple[str, str], Any] = {}

    def handle_output(self, context: OutputContext, obj: StageTables) -> None:
        asset = context.asset_key.path[-1]
        for key, part in obj.drain():
            for encoded in part.tables.values():
                self.store.write_encoded(encoded, key)
                if encoded.data is not None and encoded.name in self.held_tables:
                    self._held[key, encoded.name] = encoded.data
            self.store.write_encoded(part.issues, key, asset=asset)
            if part.opened is not None:
                self._opened[key, asset] = part.opened
        refresh_views(self.store)

    def load_input(self, context: InputContext) -> UpstreamTables:
        meta = context.definition_metadata or {}
        keys = (list(context.asset_partition_keys) if context.has_asset_partitions else [])
        return UpstreamTables(self, context.asset_key.path[-1], keys, list(meta["tables"]),
                              dict(meta.get("columns") or {}), list(meta.get("last_use") or []))

    def read(self, key: str, table: str, columns: list[str] | None, last_use: bool) -> pa.Table:
        """Partition ``key``'s ``table`` (only ``columns`` when given): the copy this run
        holds (dropped when ``last_use``), else the Parquet file.

        Raises:
            FileNotFoundError: the table has no output for the partition.
            DamagedFileError: its file does not read.
        """
        held = self._held.pop((key, table), None) if last_use else self._held.get((key, table))
        if held is not None:
            return held.select(columns) if columns else held
        return self.store.read_table(table, key, columns=columns)

    def take_opened(self, key: str, asset: str):
        """The file ``asset`` opened for partition ``key`` in this run, handed over once
        (``None`` when it was not opened in this run)."""
        return self._opened.pop((key, asset), None)


class TablesIOManagerFactory(ConfigurableIOManagerFactory):
    """The stage assets' IO manager on the data dir ``data_dir`` (the ``storage`` resource's;
    see the module docstring); ``held_tables`` names the tables that travel in memory to later
    assets of a run (those some asset's input reads, :func:`tables_read`)."""

    data_dir: str
    held_tables: list[str] = []

    def create_io_manager(self, context) -> TablesIOManager:
        return TablesIOManager(DataStore(self.data_dir), frozenset(self.held_tables))
