"""The stage assets' IO manager: each partition's tables written as Parquet files into the data
dir, read back for the assets downstream; within a run, a table travels in memory to its later
readers until the last of them has it, and the opened file is handed over once."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest
from dagster import StaticPartitionsDefinition, build_input_context, build_output_context

from extraction_assets.defs.io_manager import (
    PartitionTables,
    StageTables,
    TablesIOManager,
)
from extraction_assets.pipeline.codecs import issue_rows, table
from extraction_assets.store.storage import DataStore, encode_table

KEY = hashlib.sha256(b"a workbook").hexdigest()
OTHER = hashlib.sha256(b"another workbook").hexdigest()


def _sheets(key: str) -> pa.Table:
    return table("workbook_properties", [dict(
        workbook_hash=key, date_system=1900, theme_colors=["FFFFFF"], indexed_colors=None,
        has_macros=False, has_external_links=False)])


def _output(keys: list[str], keep: bool, opened=None) -> StageTables:
    return StageTables({key: PartitionTables(
        {"workbook_properties": encode_table("workbook_properties", _sheets(key), keep=keep)},
        encode_table("extraction_issues", issue_rows(key, [])), opened) for key in keys})


def _write(manager: TablesIOManager, keys: list[str], output: StageTables) -> None:
    partitions = StaticPartitionsDefinition(keys)
    context = build_output_context(asset_key="parsed_sheets", asset_partitions_def=partitions,
                                   partition_key=keys[0] if len(keys) == 1 else None)
    manager.handle_output(context, output)


def _input(manager: TablesIOManager, key: str, last_use: bool):
    context = build_input_context(
        asset_key="parsed_sheets", partition_key=key,
        asset_partitions_def=StaticPartitionsDefinition([key]),
        definition_metadata={"tables": ["workbook_properties"], "columns": {},
                             "last_use": ["workbook_properties"] if last_use else []})
    return manager.load_input(context).partition(key)


def test_tables_are_written_and_travel_in_memory_until_their_last_reader(tmp_path):
    store = DataStore(tmp_path)
    manager = TablesIOManager(store, frozenset({"workbook_properties"}))
    output = _output([KEY], keep=True)
    _write(manager, [KEY], output)
    assert output.partitions == {}  # handed over: the run's capture of outputs holds nothing
    path = store.table_path("workbook_properties", KEY)
    assert path.exists() and store.table_path("extraction_issues", KEY, "parsed_sheets").exists()
    assert store.read_table("workbook_properties", KEY).equals(_sheets(KEY))
    path.unlink()  # from here on, only the copy the run holds can answer
    assert _input(manager, KEY, last_use=False)["workbook_properties"].equals(_sheets(KEY))
    assert _input(manager, KEY, last_use=True)["workbook_properties"].equals(_sheets(KEY))
    with pytest.raises(FileNotFoundError):  # the last reader had it: the copy is dropped
        _input(manager, KEY, last_use=False)["workbook_properties"]


def test_tables_no_input_reads_and_batches_are_read_from_their_files(tmp_path):
    store = DataStore(tmp_path)
    not_held = TablesIOManager(store, frozenset())
    _write(not_held, [KEY], _output([KEY], keep=True))
    store.table_path("workbook_properties", KEY).unlink()
    with pytest.raises(FileNotFoundError):
        _input(not_held, KEY, last_use=False)["workbook_properties"]
    batch = TablesIOManager(store, frozenset({"workbook_properties"}))
    _write(batch, [KEY, OTHER], _output([KEY, OTHER], keep=False))
    for key in (KEY, OTHER):
        assert _input(batch, key, last_use=False)["workbook_properties"].equals(_sheets(key))
        store.table_path("workbook_properties", key).unlink()
        with pytest.raises(FileNotFoundError):
            _input(batch, key, last_use=False)["workbook_properties"]


def test_the_opened_file_is_handed_over_once(tmp_path):
    manager = TablesIOManager(DataStore(tmp_path))
    opened = object()  # what the workbook asset opened; the IO manager only passes it on
    _write(manager, [KEY], _output([KEY], keep=True, opened=opened))
    assert _input(manager, OTHER, last_use=False).opened is None
    assert _input(manager, KEY, last_use=False).opened is opened
    assert _input(manager, KEY, last_use=False).opened is None
