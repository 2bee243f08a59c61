"""The ``files`` catalog: one partition per file name, whose materializations name the file's
content hash, source path and (after an ingest) run and status. Real instances, no run: the
inbox sensor's tick and :func:`record_files` as ``ingest`` calls it. The catalog as the UI
reads it, after a real ingest, is tested in ``test_webserver.py``."""

from __future__ import annotations

from dagster import AssetKey, AssetRecordsFilter, build_sensor_context

from extraction_assets.app.ingest import open_instance
from extraction_assets.app.samples import write_samples
from extraction_assets.defs.catalog import (
    CatalogFile,
    file_name_key,
    file_names,
    record_files,
)
from extraction_assets.defs.definitions import make_definitions
from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.defs.sensors import inbox_sensor
from extraction_assets.store.storage import DataStore

FILES = AssetKey("files")


def _metadata(event) -> dict:
    return {label: value.value for label, value in event.metadata.items()}


def test_a_file_name_is_its_key_but_what_dagster_refuses_in_a_key():
    assert file_name_key("/inbox/2024/Q3 orders (final).xlsx") == "Q3 orders (final).xlsx"
    assert file_name_key("draft...v2\t.xlsx") == "draft_v2_.xlsx"


def test_the_inbox_sensor_puts_each_new_name_or_content_in_the_catalog_once(tmp_path):
    store = DataStore(tmp_path / "data")
    store.inbox.mkdir(parents=True)
    paths = write_samples(store.inbox)
    copy = store.inbox / "sub" / "orders.xlsx"  # the bytes of the first sample, another name
    copy.parent.mkdir()
    copy.write_bytes(paths[0].read_bytes())
    defs = make_definitions(str(store.root))

    def tick(instance):
        return inbox_sensor(build_sensor_context(instance=instance, resources=defs.resources))

    with open_instance(store) as instance:
        result = tick(instance)
        names = [r for r in result.dynamic_partitions_requests
                 if r.partitions_def_name == file_names.name]
        assert [sorted(r.partition_keys) for r in names] == [
            sorted(p.name for p in [*paths, copy])]
        by_name = {e.partition: _metadata(e) for e in result.asset_events}
        assert {e.asset_key for e in result.asset_events} == {FILES}
        assert set(by_name) == {p.name for p in [*paths, copy]}
        hashes = {r.partition_key for r in result.run_requests}
        assert by_name["orders.xlsx"]["workbook_hash"] == by_name[paths[0].name]["workbook_hash"]
        assert {m["workbook_hash"] for m in by_name.values()} == hashes
        assert by_name["orders.xlsx"]["source_path"] == str(copy)
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)

        again = tick(instance)  # nothing new: no event, no name to add
        assert again.asset_events == [] and again.dynamic_partitions_requests == []
        assert sorted(instance.get_dynamic_partitions(file_names.name)) == sorted(by_name)
        assert len(instance.get_dynamic_partitions(workbook_partitions.name)) == 3


def test_ingest_records_each_file_it_ran_and_a_known_unchanged_file_not_again(tmp_path):
    store = DataStore(tmp_path / "data")
    a, b = (CatalogFile(str(tmp_path / name), digest * 64, "success", "run-1")
            for name, digest in (("orders.xlsx", "a"), ("Q3 ledger.xlsx", "b")))
    with open_instance(store) as instance:
        assert record_files(instance, [a, b], changed={a.workbook_hash, b.workbook_hash}) == 2
        unchanged = [a._replace(status="unchanged", run_id=None),
                     b._replace(status="unchanged", run_id=None)]
        assert record_files(instance, unchanged, changed=set()) == 0
        # a new name for known bytes is recorded, though its content did not change
        renamed = CatalogFile(str(tmp_path / "orders-final.xlsx"), a.workbook_hash, "unchanged")
        assert record_files(instance, [renamed], changed=set()) == 1
        [record] = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=FILES, asset_partitions=["orders.xlsx"]), limit=5).records
        assert _metadata(record.asset_materialization) == {
            "workbook_hash": a.workbook_hash, "source_path": a.path, "status": "success",
            "run": "run-1"}
        assert sorted(instance.get_dynamic_partitions(file_names.name)) == [
            "Q3 ledger.xlsx", "orders-final.xlsx", "orders.xlsx"]
