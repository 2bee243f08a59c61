"""Asset ``parsed_sheets``: every cell, style and merged range as the file writes them."""

from dagster import MaterializeResult

from extraction_assets.defs.assets.common import (
    PartitionContext,
    fail,
    finish,
    stage_asset,
)
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.resources import DataStoreResource, LimitsResource, PasswordsResource
from extraction_assets.pipeline.stages import StageError, parse_stage

CODE_VERSION = "4"


@stage_asset(
    deps=[workbook],
    code_version=CODE_VERSION,
    description=(
        "What the OOXML parts say, cell by cell (value, type, formula, cached value, style "
        "index, number format), with merged ranges, sheet kinds and visibility, the styles and "
        "the workbook's theme colours and date system. Streamed sheet by sheet; nothing "
        "interpreted yet."
    ),
)
def parsed_sheets(context: PartitionContext, storage: DataStoreResource,
                  limits: LimitsResource, passwords: PasswordsResource) -> MaterializeResult:
    store = storage.store()
    workbook_hash = context.partition_key
    data = store.blob_path(workbook_hash).read_bytes()
    try:
        output = parse_stage(workbook_hash, data, limits.limits(), passwords.passwords)
    except StageError as error:
        raise fail(store, "parsed_sheets", workbook_hash, error) from error
    sheets = output.tables["parsed_sheets"]
    return finish(context, store, "parsed_sheets", output, CODE_VERSION, {
        "sheets": sheets.num_rows,
        "merged_ranges": sum(len(m or []) for m in sheets.column("merged_ranges").to_pylist()),
    })
