"""The Dagster definitions load as ``workspace.yaml`` loads them: six partitioned assets, each
reading the tables of the one before it (and of earlier ones it reads through its inputs), their
checks, the ``files`` catalog, the ingest job, the sensors and the resources they need."""

from __future__ import annotations

import importlib
from pathlib import Path

import yaml
from dagster import AssetKey

from extraction_assets.defs.definitions import defs, make_definitions

REPO_WORKSPACE = "workspace.yaml"
CHAIN = ["workbook", "parsed_sheets", "normalized_grids", "segmented_blocks", "rendered_chunks",
         "chunk_embeddings"]


def test_workspace_yaml_names_the_definitions_object():
    from tools.paths import REPO

    target = yaml.safe_load((REPO / REPO_WORKSPACE).read_text())["load_from"][0]["python_module"]
    module = importlib.import_module(target["module_name"])
    assert getattr(module, target["attribute"]) is defs


#: The earlier assets whose tables each asset reads besides the one before it.
READS_EARLIER = {"normalized_grids": {"workbook"}, "segmented_blocks": {"parsed_sheets"},
                 "rendered_chunks": {"workbook", "parsed_sheets", "normalized_grids"},
                 "chunk_embeddings": {"workbook", "segmented_blocks"}}


def test_six_assets_in_one_chain_partitioned_by_content_hash():
    """The lineage shows what each asset really reads: the one before it in the chain, and
    the earlier tables its inputs name (rendered_chunks reads the rich text of parsed_sheets)."""
    graph = defs.resolve_asset_graph()
    keys = sorted(k.path[-1] for k in graph.get_all_asset_keys())
    assert keys == sorted([*CHAIN, "files"])  # and the catalog of file names
    catalog = graph.get(AssetKey("files"))
    assert catalog.partitions_def.name == "file_names" and not catalog.is_executable
    for upstream, downstream in zip(CHAIN, CHAIN[1:]):
        parents = {key.path[-1] for key in graph.get(AssetKey(downstream)).parent_keys}
        assert parents == {upstream} | READS_EARLIER.get(downstream, set())
    for name in CHAIN:
        node = graph.get(AssetKey(name))
        assert node.partitions_def.name == "workbooks"
        assert node.code_version and node.group_name == "extraction"


def test_checks_job_sensors_and_resources():
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.path[-1], k.name) for k in graph.asset_check_keys}
    assert checks == {
        ("segmented_blocks", "cell_coverage"),
        ("rendered_chunks", "values_in_output"), ("rendered_chunks", "chunk_budget"),
        ("rendered_chunks", "record_provenance"), ("rendered_chunks", "rows_in_one_chunk"),
        ("rendered_chunks", "heading_paths"), ("chunk_embeddings", "one_row_per_unit"),
    }
    assert defs.resolve_job_def("ingest_workbook").name == "ingest_workbook"
    sensors = {s.name for s in defs.get_repository_def().sensor_defs}
    assert sensors == {"inbox_sensor", "lineage_after_success", "lineage_after_failure",
                       "full_text_index_after_success"}
    elsewhere = make_definitions(data_dir="/tmp/elsewhere")
    assert set(elsewhere.resources) == {"storage", "tables_io_manager", "embedder", "limits",
                                        "passwords", "redaction", "dual_read",
                                        "header_detector"}
    assert elsewhere.resources["storage"].data_dir == "/tmp/elsewhere"
    assert elsewhere.resources["tables_io_manager"].data_dir == "/tmp/elsewhere"


def test_the_package_uses_no_private_dagster_api():
    """Dagster's machinery only through its public API: no ``dagster._`` module is named
    anywhere in the package (an import, a string, a config written by it), so that the next
    Dagster release cannot break a private override."""
    import extraction_assets

    root = Path(extraction_assets.__file__).parent
    offenders = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), start=1)
                 if "dagster._" in line]
    assert offenders == []


def test_every_asset_backfills_a_batch_of_partitions_in_one_run():
    graph = defs.resolve_asset_graph()
    for name in CHAIN:
        policy = graph.get(AssetKey(name)).backfill_policy
        assert policy is not None and policy.max_partitions_per_run is None, name
