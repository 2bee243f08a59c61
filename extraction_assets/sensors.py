"""The inbox sensor: a new partition and a run for every new file content in ``<data-dir>/inbox``."""

from dagster import (
    AssetSelection,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    define_asset_job,
    run_status_sensor,
    sensor,
)

from .assets import ALL_ASSETS
from .lineage import export_lineage
from .partitions import workbook_partitions
from .resources import DataStoreResource

#: Materializes all six assets for one partition.
ingest_job = define_asset_job(
    "ingest_workbook", selection=AssetSelection.assets(*ALL_ASSETS), partitions_def=workbook_partitions,
    description="Materialize the whole asset graph for one workbook partition.",
)

SPREADSHEET_SUFFIXES = {".xlsx", ".xlsm", ".xltx", ".xltm", ".xls", ".xlsb", ".ods", ".fods",
                        ".csv", ".tsv"}


@sensor(job=ingest_job, minimum_interval_seconds=15, default_status=DefaultSensorStatus.RUNNING,
        description="Adds a `workbooks` partition and requests a run for each new file content "
                    "found in <data-dir>/inbox (same bytes under any name are processed once).")
def inbox_sensor(context: SensorEvaluationContext, storage: DataStoreResource) -> SensorResult:
    store = storage.store()
    store.inbox.mkdir(parents=True, exist_ok=True)
    new_keys: list[str] = []
    for path in sorted(p for p in store.inbox.rglob("*") if p.is_file()):
        if path.name.startswith(".") or path.suffix.lower() not in SPREADSHEET_SUFFIXES:
            continue
        digest, _ = store.register_source(path)
        if digest in new_keys or context.instance.has_dynamic_partition(
                workbook_partitions.name, digest):
            continue
        new_keys.append(digest)
    return SensorResult(
        run_requests=[RunRequest(partition_key=k, run_key=k) for k in new_keys],
        dynamic_partitions_requests=[workbook_partitions.build_add_request(new_keys)] if new_keys else [],
    )


def _export_run_lineage(context: RunStatusSensorContext, storage: DataStoreResource) -> None:
    partition = context.dagster_run.tags.get("dagster/partition")
    if partition:
        export_lineage(context.instance, storage.store(), partition)


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, default_status=DefaultSensorStatus.RUNNING,
                   description="Refreshes the `lineage` table of a partition after a run succeeds.")
def lineage_after_success(context: RunStatusSensorContext, storage: DataStoreResource):
    _export_run_lineage(context, storage)


@run_status_sensor(run_status=DagsterRunStatus.FAILURE, default_status=DefaultSensorStatus.RUNNING,
                   description="Refreshes the `lineage` table of a partition after a run fails.")
def lineage_after_failure(context: RunStatusSensorContext, storage: DataStoreResource):
    _export_run_lineage(context, storage)
