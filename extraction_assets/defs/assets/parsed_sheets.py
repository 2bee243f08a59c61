"""Asset ``parsed_sheets``: every cell, style and merged range as the file writes them."""

import pyarrow.compute as pc
from dagster import AssetExecutionContext, MaterializeResult

from extraction_assets.core.ocr import OCR_ISSUES, OCR_UNREAD, ocr_setup
from extraction_assets.defs.assets.common import (
    PartitionResult,
    finish,
    materialize_partitions,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.io_manager import UpstreamTables, tables_in
from extraction_assets.defs.resources import DataStoreResource, LimitsResource, PasswordsResource
from extraction_assets.defs.trust_resources import DualReadResource, RedactionResource
from extraction_assets.pipeline import RunSettings

CODE_VERSION = "7"


@stage_asset(
    ins={"opened": tables_in(workbook, ())},
    code_version=CODE_VERSION,
    description=(
        "What the OOXML parts say, cell by cell (value, type, formula, cached value, style "
        "index, number format), with merged ranges, sheet kinds and visibility, the styles and "
        "the workbook's theme colours and date system. Streamed sheet by sheet; nothing "
        "interpreted yet. Scanned pages and pictures are read by OCR when Tesseract is "
        "installed. The cells python-calamine reads otherwise, and the words OCR is not sure "
        "of, are review items."
    ),
)
def parsed_sheets(context: AssetExecutionContext, opened: UpstreamTables,
                  storage: DataStoreResource, limits: LimitsResource,
                  passwords: PasswordsResource, redaction: RedactionResource,
                  dual_read: DualReadResource) -> MaterializeResult:
    store = storage.store()

    def one(workbook_hash: str) -> PartitionResult:
        output = run_stage(store, "parsed_sheets", workbook_hash, {}, RunSettings(
            data=store.blob_path(workbook_hash).read_bytes(), limits=limits.limits(),
            passwords=passwords.passwords, conversions=store.converted_dir,
            redaction=redaction.policy(), dual_read_max_cells=dual_read.max_cells,
            opened=opened.partition(workbook_hash).opened))
        sheets = output.tables["parsed_sheets"]
        details = output.tables["sheet_objects"].column("details")
        needed_ocr = any(i.code in OCR_ISSUES for i in output.issues) or bool(
            pc.any(pc.match_substring(details, '"ocr_reader"')).as_py())
        setup = ocr_setup() if needed_ocr else None
        return finish(output, {
            "sheets": sheets.num_rows,
            "merged_ranges": sum(len(m or []) for m in sheets.column("merged_ranges").to_pylist()),
            "review_items": output.tables["review_items"].num_rows,
            # what its pictures and scans were read with: another setup reads them again
            **({"ocr": setup.label} if setup else {}),
            # issues of pictures or scans left unread (a misconfiguration only when no OCR ran)
            "ocr_unread": sum(i.code in OCR_UNREAD or i.code == "ocr_misconfigured"
                              and setup.tesseract is None for i in output.issues),
        })

    return materialize_partitions(context, store, one)
