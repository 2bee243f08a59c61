"""What every asset does after its stage ran: write tables and issues, refresh the DuckDB views
and build the materialization's metadata, data version and asset check results."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping

import pyarrow as pa
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.pipeline import STAGE, RunSettings, Stage, StageError, StageOutput
from extraction_assets.pipeline.checks import CheckOutcome
from extraction_assets.pipeline.codecs import issue_rows
from extraction_assets.pipeline.registry import LAST_READER
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views


def stage_asset(*, description: str, code_version: str, deps=(), kinds=("parquet",),
                checks: dict[str, str] | None = None):
    """The ``@asset`` decorator of every stage: partitioned by ``workbooks``, group
    ``extraction``, owned by the data-platform team, with a description, a code version (bump it
    when the logic changes so the UI marks older partitions stale) and asset checks
    (``checks``: name -> description) that the asset reports with each materialization."""
    def decorate(fn):
        specs = [AssetCheckSpec(name, asset=fn.__name__, description=text)
                 for name, text in (checks or {}).items()]
        return asset(partitions_def=workbook_partitions, group_name="extraction",
                     deps=list(deps), code_version=code_version, kinds=set(kinds),
                     description=description, owners=["team:data-platform"],
                     check_specs=specs or None)(fn)
    return decorate


def check_result(name: str, outcome: CheckOutcome) -> AssetCheckResult:
    """A Dagster asset check result (severity ERROR on failure) from a :class:`CheckOutcome`."""
    return AssetCheckResult(check_name=name, passed=outcome.passed,
                            severity=AssetCheckSeverity.ERROR, description=outcome.description,
                            metadata={k: MetadataValue.json(v) if isinstance(v, list) else v
                                      for k, v in outcome.metadata.items()})


def write_issues(store: DataStore, asset: str, workbook_hash: str, output: StageOutput) -> int:
    """Write the stage's ``extraction_issues`` partition (replacing earlier runs' rows)."""
    rows = issue_rows(workbook_hash, output.issues)
    store.write_table("extraction_issues", workbook_hash, rows, asset=asset)
    return len(rows)


def finish(context: AssetExecutionContext, store: DataStore, asset: str, output: StageOutput,
           code_version: str, extra_metadata: dict | None = None,
           data_version: str | None = None, row_count: int | None = None,
           check_results: list[AssetCheckResult] | None = None) -> MaterializeResult:
    """Write ``output``'s tables and issues, refresh the views, and build the result.

    The tables a later stage reads are held in memory for it (see
    :meth:`~extraction_assets.store.storage.DataStore.write_table`). The data version is the
    sha256 over the written Parquet files (or ``data_version`` when the output lives elsewhere,
    e.g. LanceDB), so equal outputs give equal versions. The metadata ``row_count`` (default:
    rows written to Parquet) is what the ``lineage`` view reports.
    """
    workbook_hash = context.partition_key
    digest = hashlib.sha256()
    metadata: dict = {}
    total_rows = 0
    for table, data in sorted(output.tables.items()):  # one at a time: the peak memory
        written = store.write_table(table, workbook_hash, data, hold=table in LAST_READER)
        digest.update(written.sha256.encode())
        metadata[f"{table}_rows"] = MetadataValue.int(written.n_rows)
        metadata[f"{table}_path"] = MetadataValue.path(str(written.path))
        total_rows += written.n_rows
    metadata["issues"] = MetadataValue.int(write_issues(store, asset, workbook_hash, output))
    version = data_version or digest.hexdigest()
    metadata["row_count"] = MetadataValue.int(total_rows if row_count is None else row_count)
    refresh_views(store)
    metadata.update(extra_metadata or {})
    return MaterializeResult(metadata=metadata, data_version=DataVersion(version),
                             check_results=check_results or None)


class StageInputs(Mapping):
    """The partition's tables that ``stage`` reads, each read when it is first looked up (the
    table this process just wrote, or its Parquet file; only the columns of
    :attr:`~extraction_assets.pipeline.registry.Stage.columns` where it names some)."""

    def __init__(self, store: DataStore, workbook_hash: str, stage: Stage):
        self._store, self._hash, self._stage = store, workbook_hash, stage
        self._read: dict[str, pa.Table] = {}

    def __getitem__(self, name: str) -> pa.Table:
        if name not in self._stage.reads:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = self._store.read_table(name, self._hash,
                                                      columns=self._stage.columns.get(name))
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stage.reads)

    def __len__(self) -> int:
        return len(self._stage.reads)


def run_stage(store: DataStore, asset: str, workbook_hash: str,
              settings: RunSettings) -> tuple[StageOutput, StageInputs]:
    """Run ``asset``'s stage on the partition's tables that it reads (see
    :data:`~extraction_assets.pipeline.registry.STAGES`, :class:`StageInputs`); returns its
    output and the tables it read. The tables held in memory for no later stage are released.

    Raises:
        dagster.Failure: the stage failed on its input (recorded first, see :func:`fail`).
        FileNotFoundError: an upstream asset has not been materialized for the partition.
    """
    stage = STAGE[asset]
    inputs = StageInputs(store, workbook_hash, stage)
    try:
        return stage.run(workbook_hash, inputs, settings), inputs
    except StageError as error:
        raise fail(store, asset, workbook_hash, error) from error
    finally:
        store.release([name for name, last in LAST_READER.items() if last == asset],
                      workbook_hash)


def fail(store: DataStore, asset: str, workbook_hash: str, error: StageError) -> Failure:
    """Record a failed stage (its partial tables and its issue rows) and build the Failure."""
    for table, data in error.output.tables.items():
        store.write_table(table, workbook_hash, data)
    write_issues(store, asset, workbook_hash, error.output)
    refresh_views(store)
    return Failure(
        description=f"{error.error.code}: {error.error.message}",
        metadata={"error_code": error.error.code, "error_class": type(error.error).__name__},
    )
