"""Asset ``workbook``: file facts and a content-addressed copy of the bytes."""

from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue

from extraction_assets.core.errors import SourceUnavailableError
from extraction_assets.core.model import Issue
from extraction_assets.defs.assets.common import (
    PartitionResult,
    fail,
    finish,
    materialize_partitions,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.resources import DataStoreResource, LimitsResource, PasswordsResource
from extraction_assets.pipeline import RunSettings, StageError, StageOutput

CODE_VERSION = "3"


@stage_asset(
    code_version=CODE_VERSION,
    description=(
        "One row per file version: content hash, source path, size, format sniffed from the "
        "magic bytes, sheet list with visibility, macro / external-link / encryption flags. "
        "Copies the bytes into the content-addressed store so re-runs never need the inbox."
    ),
)
def workbook(context: AssetExecutionContext, storage: DataStoreResource,
             limits: LimitsResource, passwords: PasswordsResource) -> MaterializeResult:
    store = storage.store()

    def one(workbook_hash: str) -> PartitionResult:
        blob = store.blob_path(workbook_hash)
        try:
            source = store.source_of(workbook_hash)
        except KeyError as exc:
            raise Failure(description=str(exc)) from exc
        if blob.exists():
            data = blob.read_bytes()
        else:  # registered before the bytes were stored at once: only the source is left
            try:
                data = Path(source["source_path"]).read_bytes()
                store.store_bytes(workbook_hash, data)
            except (OSError, ValueError) as exc:
                why = (f"cannot be read ({exc.strerror or exc})" if isinstance(exc, OSError)
                       else "holds other bytes now")
                error = SourceUnavailableError(f"the partition's bytes were never stored and "
                                               f"{source['source_path']} {why}")
                raise fail(store, "workbook", workbook_hash, StageError(error, StageOutput(
                    {}, [Issue("workbook", None, None, "error", error.code,
                               error.message)]))) from exc
        output = run_stage(store, "workbook", workbook_hash, {}, RunSettings(
            data=data, source_path=source["source_path"], limits=limits.limits(),
            passwords=passwords.passwords, conversions=store.converted_dir))
        row = output.tables["workbooks"].to_pylist()[0]
        return finish(output, {
            "filename": row["filename"], "format": row["format"], "size_bytes": row["size_bytes"],
            "sheets": MetadataValue.json([{"name": n, "visibility": v} for n, v in
                                          zip(row["sheet_names"], row["sheet_visibility"])]),
            "stored_at": MetadataValue.path(str(blob)),
            **({"conversion": MetadataValue.json(output.facts["conversion"])}
               if "conversion" in output.facts else {}),
        })

    return materialize_partitions(context, store, one)
