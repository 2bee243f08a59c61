"""What every asset does after its stage ran: write tables and issues, refresh the DuckDB views
and build the materialization's metadata, data version and asset check results; and how one
asset step materializes a batch of partitions (a run over a range of partition keys)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    BackfillPolicy,
    BetaWarning,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.pipeline import STAGE, RunSettings, Stage, StageError, StageOutput
from extraction_assets.pipeline.checks import SAMPLE, CheckOutcome
from extraction_assets.pipeline.codecs import issue_rows
from extraction_assets.pipeline.registry import LAST_READER
from extraction_assets.store.storage import DataStore
from extraction_assets.store.warehouse import refresh_views


@dataclass(frozen=True)
class PartitionContext:
    """What the body of a stage asset sees of its run: one partition of it (a run may
    materialize a batch of partitions, see :func:`stage_asset`)."""

    run: AssetExecutionContext
    partition_key: str

    @property
    def log(self):
        """The run's logger."""
        return self.run.log


def stage_asset(*, description: str, code_version: str, deps=(), kinds=("parquet",),
                checks: dict[str, str] | None = None):
    """The ``@asset`` decorator of every stage: partitioned by ``workbooks``, group
    ``extraction``, owned by the data-platform team, with a description, a code version (bump it
    when the logic changes so the UI marks older partitions stale) and asset checks
    (``checks``: name -> description) that the asset reports with each materialization.

    The decorated function materializes ONE partition: it gets a :class:`PartitionContext` and
    returns :func:`finish`'s result. A run may target a range of partition keys (a batch of
    files: ``ingest``, the inbox sensor, or a backfill, ``BackfillPolicy.single_run``); the step
    then calls the function once per key, in key order, and records each partition's own
    metadata (:func:`materialize_partitions`)."""
    def decorate(fn):
        specs = [AssetCheckSpec(name, asset=fn.__name__, description=text)
                 for name, text in (checks or {}).items()]

        @functools.wraps(fn)
        def compute(context: AssetExecutionContext, **resources) -> MaterializeResult:
            return materialize_partitions(context, lambda part: fn(part, **resources))

        # Dagster reads the parameters (resources, config) from the signature: the body's, with
        # the run's context in place of the PartitionContext
        signature = inspect.signature(fn)
        first, *rest = signature.parameters.values()
        compute.__signature__ = signature.replace(
            parameters=[first.replace(annotation=AssetExecutionContext), *rest])

        with warnings.catch_warnings():  # backfill_policy is marked beta
            warnings.simplefilter("ignore", BetaWarning)
            return asset(partitions_def=workbook_partitions, group_name="extraction",
                         deps=list(deps), code_version=code_version, kinds=set(kinds),
                         description=description, owners=["team:data-platform"],
                         check_specs=specs or None,
                         backfill_policy=BackfillPolicy.single_run())(compute)
    return decorate


def materialize_partitions(context: AssetExecutionContext, one) -> MaterializeResult:
    """Run ``one(PartitionContext)`` for every partition key of the step, in key order.

    One key: its result as it is (metadata, data version, check results). Several keys: each
    partition's metadata goes to its own materialization event
    (``context.add_asset_metadata(..., partition_key=key)``); the check results are combined
    into one per check (:func:`combined_checks`), since Dagster evaluates a check once per step.
    The first partition that fails fails the step with a :class:`Failure` whose metadata names
    it (``partition``), so that the caller can run the others again without it: Dagster records
    no materialization of a failed step, for any of its partitions.

    Raises:
        Failure: a partition failed (a stage's typed error, or any exception of its body).
    """
    keys = context.partition_keys
    results: list[tuple[str, MaterializeResult]] = []
    for key in keys:
        try:
            results.append((key, one(PartitionContext(context, key))))
        except Failure as exc:
            raise Failure(description=exc.description,
                          metadata={**exc.metadata, "partition": key}) from exc
        except Exception as exc:  # noqa: BLE001 - named with its partition, raised at once
            if len(keys) == 1:
                raise
            lines = str(exc).strip().splitlines()
            raise Failure(description=f"{type(exc).__name__}: {lines[0] if lines else ''}",
                          metadata={"partition": key}) from exc
    if len(results) == 1:
        return results[0][1]
    for key, result in results:
        context.add_asset_metadata(result.metadata, partition_key=key)
    return MaterializeResult(metadata={"partitions": len(results)},
                             check_results=combined_checks(results) or None)


def combined_checks(results: list[tuple[str, MaterializeResult]]) -> list[AssetCheckResult]:
    """One check result per check name over a batch of partitions' results: passed when every
    partition passed; the description and metadata name the files that did not (their
    ``filename`` metadata, at most :data:`~extraction_assets.pipeline.checks.SAMPLE`)."""
    by_name: dict[str, list[tuple[str, str, AssetCheckResult]]] = {}
    for key, result in results:
        filename = result.metadata.get("filename")
        name = filename.value if isinstance(filename, MetadataValue) else filename or key
        for check in result.check_results:
            by_name.setdefault(check.check_name, []).append((key, name, check))
    combined = []
    for check_name, checks in by_name.items():
        failed = [(key, name, c) for key, name, c in checks if not c.passed]
        description = (f"passed for all {len(checks)} partitions of the run" if not failed else
                       f"failed for {len(failed)} of {len(checks)} partitions: " + "; ".join(
                           f"{name}: {c.description}" for _, name, c in failed[:SAMPLE]))
        combined.append(AssetCheckResult(
            check_name=check_name, passed=not failed, severity=AssetCheckSeverity.ERROR,
            description=description,
            metadata={"partitions": len(checks), "failed": MetadataValue.json(
                [{"partition": key, "filename": name, "description": c.description}
                 for key, name, c in failed[:SAMPLE]])}))
    return combined


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


def finish(context: PartitionContext, store: DataStore, asset: str, output: StageOutput,
           code_version: str, extra_metadata: dict | None = None,
           data_version: str | None = None, row_count: int | None = None,
           check_results: list[AssetCheckResult] | None = None) -> MaterializeResult:
    """Write ``output``'s tables and issues, refresh the views, and build the result.

    The tables a later stage reads are held in memory for it (see
    :meth:`~extraction_assets.store.storage.DataStore.write_table`). The data version is the
    sha256 over the written Parquet files (or ``data_version`` when the output lives elsewhere,
    e.g. LanceDB), so equal outputs give equal versions; it is also the metadata ``data_hash``
    (a run over several partitions records one Dagster data version for them all). The
    metadata ``row_count`` (default: rows written to Parquet) is what the ``lineage`` view
    reports; ``filename`` and ``source_path`` name the file in the UI.
    """
    workbook_hash = context.partition_key
    digest = hashlib.sha256()
    metadata: dict = source_metadata(store, workbook_hash)
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
    metadata["data_hash"] = version
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


def source_metadata(store: DataStore, workbook_hash: str) -> dict:
    """``filename`` and ``source_path`` of a partition's file (as first registered), the
    metadata by which a person finds a file in the UI; empty for a hash never registered."""
    try:
        source = store.source_of(workbook_hash)
    except KeyError:
        return {}
    return {"filename": source["filename"], "source_path": MetadataValue.path(source["source_path"])}


def fail(store: DataStore, asset: str, workbook_hash: str, error: StageError) -> Failure:
    """Record a failed stage (its partial tables and its issue rows) and build the Failure
    (its metadata names the file)."""
    for table, data in error.output.tables.items():
        store.write_table(table, workbook_hash, data)
    write_issues(store, asset, workbook_hash, error.output)
    refresh_views(store)
    return Failure(
        description=f"{error.error.code}: {error.error.message}",
        metadata={"error_code": error.error.code, "error_class": type(error.error).__name__,
                  **source_metadata(store, workbook_hash)},
    )
