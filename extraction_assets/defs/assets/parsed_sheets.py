"""Asset ``parsed_sheets``: every cell, style and merged range as the file writes them."""

from dagster import MaterializeResult

from extraction_assets.defs.assets.common import (
    PartitionContext,
    finish,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.resources import DataStoreResource, LimitsResource, PasswordsResource
from extraction_assets.defs.trust_resources import DualReadResource, RedactionResource
from extraction_assets.pipeline import RunSettings

CODE_VERSION = "5"


@stage_asset(
    deps=[workbook],
    code_version=CODE_VERSION,
    description=(
        "What the OOXML parts say, cell by cell (value, type, formula, cached value, style "
        "index, number format), with merged ranges, sheet kinds and visibility, the styles and "
        "the workbook's theme colours and date system. Streamed sheet by sheet; nothing "
        "interpreted yet. The cells python-calamine reads otherwise are review items."
    ),
)
def parsed_sheets(context: PartitionContext, storage: DataStoreResource,
                  limits: LimitsResource, passwords: PasswordsResource,
                  redaction: RedactionResource, dual_read: DualReadResource) -> MaterializeResult:
    store = storage.store()
    workbook_hash = context.partition_key
    output, _ = run_stage(store, "parsed_sheets", workbook_hash, RunSettings(
        data=store.blob_path(workbook_hash).read_bytes(), limits=limits.limits(),
        passwords=passwords.passwords, conversions=store.converted_dir,
        redaction=redaction.policy(), dual_read_max_cells=dual_read.max_cells))
    sheets = output.tables["parsed_sheets"]
    return finish(context, store, "parsed_sheets", output, CODE_VERSION, {
        "sheets": sheets.num_rows,
        "merged_ranges": sum(len(m or []) for m in sheets.column("merged_ranges").to_pylist()),
        "review_items": output.tables["review_items"].num_rows,
    })
