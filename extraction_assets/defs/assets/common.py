"""What every stage asset does: run its stage on the tables of its inputs, encode its tables and
issues for the IO manager (:mod:`~extraction_assets.defs.io_manager`) and build the
materialization's metadata, data version and asset check results; record a failed stage; and
how one asset step materializes a batch of partitions (a run over a range of partition keys)."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    BackfillPolicy,
    BetaWarning,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from extraction_assets.core.model import Issue
from extraction_assets.defs.io_manager import (
    IO_MANAGER_KEY,
    STAGE_TABLES,
    PartitionTables,
    StageTables,
)
from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.pipeline import STAGE, RunSettings, StageError, StageOutput
from extraction_assets.pipeline.checks import SAMPLE, CheckOutcome
from extraction_assets.pipeline.codecs import issue_rows
from extraction_assets.store.storage import DataStore, EncodedTable, encode_table
from extraction_assets.store.warehouse import refresh_views


def stage_asset(*, description: str, code_version: str, ins: Mapping[str, AssetIn] | None = None,
                kinds=("parquet",), checks: dict[str, str] | None = None):
    """The ``@asset`` decorator of every stage: partitioned by ``workbooks``, group
    ``extraction``, owned by the data-platform team, with a description, a code version (bump it
    when the logic changes so the UI marks older partitions stale), its inputs (``ins``, see
    :func:`~extraction_assets.defs.io_manager.tables_in`), the IO manager of the stage tables
    (:mod:`~extraction_assets.defs.io_manager`) and asset checks (``checks``: name ->
    description) that the asset reports with each materialization.

    A run may target a range of partition keys (a batch of files: ``ingest``, the inbox sensor,
    or a backfill, ``BackfillPolicy.single_run``): the asset's body calls
    :func:`materialize_partitions` with a function that materializes one partition."""
    def decorate(fn):
        specs = [AssetCheckSpec(name, asset=fn.__name__, description=text)
                 for name, text in (checks or {}).items()]
        with warnings.catch_warnings():  # backfill_policy is marked beta
            warnings.simplefilter("ignore", BetaWarning)
            return asset(partitions_def=workbook_partitions, group_name="extraction",
                         ins=dict(ins or {}), code_version=code_version, kinds=set(kinds),
                         description=description, owners=["team:data-platform"],
                         check_specs=specs or None, io_manager_key=IO_MANAGER_KEY,
                         dagster_type=STAGE_TABLES,
                         backfill_policy=BackfillPolicy.single_run())(fn)
    return decorate


@dataclass
class PartitionResult:
    """What a stage asset made of one partition (:func:`finish`): the stage's output, the
    asset's own metadata, the data version and row count when they are not the tables' (an
    output that lives elsewhere, e.g. LanceDB), and the asset check results."""

    output: StageOutput
    metadata: dict
    data_version: str | None = None
    row_count: int | None = None
    check_results: list[AssetCheckResult] = field(default_factory=list)


@dataclass(frozen=True)
class _Encoded:
    """A partition's result encoded: the tables for the IO manager, the materialization's
    metadata and its data version."""

    tables: PartitionTables
    metadata: dict
    data_version: str
    check_results: list[AssetCheckResult]


def materialize_partitions(context: AssetExecutionContext, store: DataStore,
                           one: Callable[[str], PartitionResult]) -> MaterializeResult:
    """Run ``one(partition key)`` for every partition key of the step, in key order, and encode
    each result as it comes (:func:`encode`; a step of one partition keeps its Arrow tables for
    the later assets of the run, a batch keeps only the Parquet files); the tables of all of
    them are the asset's output (:class:`StageTables`, written by the IO manager).

    One key: its metadata, data version and check results as they are. Several keys: each
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
    results: list[tuple[str, _Encoded]] = []
    for key in keys:
        try:
            results.append((key, encode(store, key, one(key), keep=len(keys) == 1)))
        except Failure as exc:
            raise Failure(description=exc.description,
                          metadata={**exc.metadata, "partition": key}) from exc
        except Exception as exc:  # noqa: BLE001 - named with its partition, raised at once
            if len(keys) == 1:
                raise
            lines = str(exc).strip().splitlines()
            raise Failure(description=f"{type(exc).__name__}: {lines[0] if lines else ''}",
                          metadata={"partition": key}) from exc
    value = StageTables({key: result.tables for key, result in results})
    if len(results) == 1:
        result = results[0][1]
        return MaterializeResult(metadata=result.metadata,
                                 data_version=DataVersion(result.data_version),
                                 check_results=result.check_results or None, value=value)
    for key, result in results:
        context.add_asset_metadata(result.metadata, partition_key=key)
    return MaterializeResult(metadata={"partitions": len(results)},
                             check_results=combined_checks(results) or None, value=value)


def combined_checks(results: list[tuple[str, _Encoded]]) -> list[AssetCheckResult]:
    """One check result per check name over a batch of partitions' results: passed when every
    partition passed; the description and metadata name the files that did not (their
    ``filename`` metadata, at most :data:`~extraction_assets.pipeline.checks.SAMPLE`)."""
    by_name: dict[str, list[tuple[str, str, AssetCheckResult]]] = {}
    for key, result in results:
        name = result.metadata.get("filename") or key
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


def finish(output: StageOutput, extra_metadata: dict | None = None,
           data_version: str | None = None, row_count: int | None = None,
           check_results: list[AssetCheckResult] | None = None) -> PartitionResult:
    """One partition's result of a stage asset (see :class:`PartitionResult`; encoded by
    :func:`materialize_partitions`)."""
    return PartitionResult(output, dict(extra_metadata or {}), data_version, row_count,
                           list(check_results or []))


def encode(store: DataStore, workbook_hash: str, result: PartitionResult,
           keep: bool) -> _Encoded:
    """A partition's tables and issues encoded as their Parquet files (``keep``: with the
    Arrow tables too, for the later assets of the run), its metadata and its data version.

    The data version is the sha256 over the Parquet files of the tables (or the result's
    ``data_version`` when the output lives elsewhere, e.g. LanceDB), so equal outputs give
    equal versions; it is also the metadata ``data_hash`` (a run over several partitions
    records one Dagster data version for them all). The metadata ``row_count`` (default: rows
    of the tables) is what the ``lineage`` view reports; ``<table>_rows`` and ``<table>_path``
    name each table's file; ``issues``, ``error_issues`` and ``over_budget`` count the asset's
    ``extraction_issues`` (:func:`issue_counts`); ``filename`` and ``source_path`` name the file
    in the UI.
    """
    output = result.output
    digest = hashlib.sha256()
    metadata: dict = source_metadata(store, workbook_hash)
    tables: dict[str, EncodedTable] = {}
    total_rows = 0
    for name, data in sorted(output.tables.items()):
        tables[name] = encoded = encode_table(name, data, keep=keep)
        digest.update(encoded.sha256.encode())
        metadata[f"{name}_rows"] = MetadataValue.int(encoded.n_rows)
        metadata[f"{name}_path"] = MetadataValue.path(str(store.table_path(name,
                                                                           workbook_hash)))
        total_rows += encoded.n_rows
    issues = encode_table("extraction_issues", issue_rows(workbook_hash, output.issues))
    metadata.update(issue_counts(output.issues))
    version = result.data_version or digest.hexdigest()
    metadata["row_count"] = MetadataValue.int(total_rows if result.row_count is None
                                              else result.row_count)
    metadata["data_hash"] = version
    metadata.update(result.metadata)
    return _Encoded(PartitionTables(tables, issues, output.opened), metadata, version,
                    result.check_results)


def issue_counts(issues: list[Issue]) -> dict[str, int]:
    """The metadata counting a partition's issues: ``issues``, ``error_issues`` (severity
    ``error``: the file was read in part) and ``over_budget`` (``chunk_over_budget``
    warnings)."""
    return {"issues": len(issues),
            "error_issues": sum(i.severity == "error" for i in issues),
            "over_budget": sum(i.code == "chunk_over_budget" for i in issues)}


def run_stage(store: DataStore, asset: str, workbook_hash: str, tables: Mapping[str, pa.Table],
              settings: RunSettings) -> StageOutput:
    """Run ``asset``'s stage (see :data:`~extraction_assets.pipeline.registry.STAGES`) on the
    partition's ``tables`` (the asset's inputs).

    Raises:
        dagster.Failure: the stage failed on its input (recorded first, see :func:`fail`).
        FileNotFoundError: an upstream asset has not been materialized for the partition.
    """
    try:
        return STAGE[asset].run(workbook_hash, tables, settings)
    except StageError as error:
        raise fail(store, asset, workbook_hash, error) from error


def source_metadata(store: DataStore, workbook_hash: str) -> dict:
    """``filename`` and ``source_path`` of a partition's file (as first registered), the
    metadata by which a person finds a file in the UI; empty for a hash never registered."""
    try:
        source = store.source_of(workbook_hash)
    except KeyError:
        return {}
    return {"filename": source["filename"],
            "source_path": MetadataValue.path(source["source_path"])}


def fail(store: DataStore, asset: str, workbook_hash: str, error: StageError) -> Failure:
    """Record a failed stage (its partial tables and its issue rows) and build the Failure
    (its metadata names the file)."""
    for table, data in error.output.tables.items():
        store.write_table(table, workbook_hash, data)
    store.write_table("extraction_issues", workbook_hash,
                      issue_rows(workbook_hash, error.output.issues), asset=asset)
    refresh_views(store)
    return Failure(
        description=f"{error.error.code}: {error.error.message}",
        metadata={"error_code": error.error.code, "error_class": type(error.error).__name__,
                  **source_metadata(store, workbook_hash)},
    )
