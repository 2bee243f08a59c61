"""The inbox sensor: a new partition and a run for every new file content in ``<data-dir>/inbox``,
the sensors that refresh the ``lineage`` table after each run, and the one that folds the
units a run wrote into the full-text index."""

import os
from pathlib import Path

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

from extraction_assets.core.formats import SUFFIXES
from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.catalog import CatalogFile, catalog_requests
from extraction_assets.defs.lineage import export_lineage
from extraction_assets.defs.partitions import (
    MAX_RUNS_PER_TICK,
    existing_partition_keys,
    keys_with_runs,
    plan_discovery,
    run_partition_keys,
    workbook_partitions,
)
from extraction_assets.defs.resources import DataStoreResource
from extraction_assets.store.storage import DataStore

#: Materializes all six assets for one partition.
ingest_job = define_asset_job(
    "ingest_workbook", selection=AssetSelection.assets(*ALL_ASSETS), partitions_def=workbook_partitions,
    description="Materialize the whole asset graph for one workbook partition, or a batch of "
                "them (a range of partition keys).",
)

#: Environment variable naming the Celery broker (e.g. ``redis://host:6379/0``): when set, the
#: ``ingest_workbook`` job of the project's definitions runs its steps on Celery workers; the
#: daemon's runs (inbox sensor, backfills) then do too. Otherwise the sensor's runs execute
#: every step in the run's own process (the six assets are a chain: nothing runs side by side).
ENV_CELERY_BROKER = "EXTRACTION_ASSETS_CELERY_BROKER"

#: Run tags naming the file(s) of a run.
SOURCE_PATH_TAG = "extraction_assets/source_path"
FILENAME_TAG = "extraction_assets/filename"


def inbox_files(inbox: Path) -> list[Path]:
    """The spreadsheet and document files of ``inbox`` and its subfolders, sorted: those with a
    suffix of the format table (:data:`~extraction_assets.core.formats.SUFFIXES`, in any
    case), hidden names left out, whose real path, symlinks followed, lies inside the inbox. A
    symlink to a file elsewhere (``inbox/leak.csv -> /elsewhere/secret.csv``), one that loops
    or dangles, is not read."""
    root = inbox.resolve()
    out = []
    for path in sorted(inbox.rglob("*")):
        if path.name.startswith(".") or path.suffix.lower() not in SUFFIXES:
            continue
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):  # dangling, or a loop (RuntimeError before 3.13)
            continue
        if real.is_relative_to(root) and real.is_file():
            out.append(path)
    return out


@sensor(job=ingest_job, minimum_interval_seconds=15, default_status=DefaultSensorStatus.RUNNING,
        description="Adds a `workbooks` partition for each new file content found in "
                    "<data-dir>/inbox (same bytes under any name are processed once) and "
                    "requests a run for each file with no run yet, at most "
                    f"{MAX_RUNS_PER_TICK} per tick.")
def inbox_sensor(context: SensorEvaluationContext, storage: DataStoreResource) -> SensorResult:
    """One tick: hash every spreadsheet file of the inbox, add the new hashes as partitions
    (add requests of at most ``ADD_BATCH_SIZE`` keys) and request a run (``run_key`` = hash)
    for up to ``MAX_RUNS_PER_TICK`` hashes that have no run yet; the rest are requested on
    later ticks (see :func:`~extraction_assets.defs.partitions.plan_discovery`). Files whose
    content or name is new go into the ``files`` catalog (see
    :func:`~extraction_assets.defs.catalog.catalog_requests`). Only files that resolve inside
    the inbox are read (:func:`inbox_files`)."""
    store = storage.store()
    store.inbox.mkdir(parents=True, exist_ok=True)
    found = []
    for path in inbox_files(store.inbox):
        try:
            found.append(CatalogFile(str(path), store.register_source(path)[0]))
        except OSError as exc:  # one unreadable file never stops the tick
            context.log.warning(f"{path} not read: {exc.strerror or exc}")
    plan = plan_discovery([f.workbook_hash for f in found],
                          existing_partition_keys(context.instance),
                          keys_with_runs(context.instance))
    names, catalog_events = catalog_requests(context.instance, found,
                                             {key for batch in plan.add_batches for key in batch})
    if plan.waiting:
        context.log.info(f"{plan.waiting} partitions wait for their run request on a later tick")
    run_config = ({} if os.environ.get(ENV_CELERY_BROKER)
                  else {"execution": {"config": {"in_process": {}}}})
    return SensorResult(
        run_requests=[RunRequest(partition_key=k, run_key=k, run_config=run_config,
                                 tags=file_tags(store, k)) for k in plan.run_keys],
        dynamic_partitions_requests=[workbook_partitions.build_add_request(batch)
                                     for batch in plan.add_batches] + names,
        asset_events=catalog_events,
    )


def file_tags(store: DataStore, workbook_hash: str) -> dict[str, str]:
    """The run tags naming a partition's file, as first registered: :data:`SOURCE_PATH_TAG`
    and :data:`FILENAME_TAG` (the UI's Runs page filters on them); none for a hash never
    registered."""
    try:
        source = store.source_of(workbook_hash)
    except KeyError:
        return {}
    return {SOURCE_PATH_TAG: source["source_path"], FILENAME_TAG: source["filename"]}


def _export_run_lineage(context: RunStatusSensorContext, storage: DataStoreResource) -> None:
    keys = run_partition_keys(context.instance, context.dagster_run.tags)
    if keys:
        export_lineage(context.instance, storage.store(), keys)


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, default_status=DefaultSensorStatus.RUNNING,
                   description="Refreshes the `lineage` table of a partition after a run succeeds.")
def lineage_after_success(context: RunStatusSensorContext, storage: DataStoreResource):
    _export_run_lineage(context, storage)


@run_status_sensor(run_status=DagsterRunStatus.FAILURE, default_status=DefaultSensorStatus.RUNNING,
                   description="Refreshes the `lineage` table of a partition after a run fails.")
def lineage_after_failure(context: RunStatusSensorContext, storage: DataStoreResource):
    _export_run_lineage(context, storage)


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, default_status=DefaultSensorStatus.RUNNING,
                   description="Folds the retrieval units a run wrote into the LanceDB full-text "
                               "index, so that search scores every unit on one scale.")
def full_text_index_after_success(context: RunStatusSensorContext, storage: DataStoreResource):
    store = storage.store()
    if store.lancedb_uri.exists():
        from extraction_assets.search.vectors import VectorStore  # imports LanceDB (~1-3 s)

        folded = VectorStore(store.lancedb_uri).fold_index()
        if folded:
            context.log.info(f"folded {folded} units into the full-text index")
