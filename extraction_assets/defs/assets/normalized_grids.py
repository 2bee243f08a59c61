"""Asset ``normalized_grids``: the StyledGrid every later stage reads."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from extraction_assets.defs.assets.common import (
    PartitionResult,
    finish,
    materialize_partitions,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.io_manager import UpstreamTables, tables_in
from extraction_assets.defs.resources import DataStoreResource, LimitsResource
from extraction_assets.defs.trust_resources import RedactionResource
from extraction_assets.pipeline import RunSettings
from extraction_assets.store.decisions import propose_drafts

CODE_VERSION = "8"

_PARSED = ("parsed_cells", "parsed_sheets", "styles", "workbook_properties")


@stage_asset(
    ins={"parsed": tables_in(parsed_sheets, _PARSED, last_use=_PARSED),
         "file": tables_in(workbook, ("workbooks",))},
    code_version=CODE_VERSION,
    description=(
        "The StyledGrid: per cell the display text through its number format, typed value, "
        "resolved RGB colours, bold and size, merged values propagated with merged_from; per "
        "sheet the used range computed from the cells; formulas stored without a cached value "
        "computed (value_status 'computed'), each formula's references in formula_refs. "
        "Colour legends (swatch next to a label) found in the workbook become draft colour "
        "mappings."
    ),
)
def normalized_grids(context: AssetExecutionContext, parsed: UpstreamTables,
                     file: UpstreamTables, storage: DataStoreResource, limits: LimitsResource,
                     redaction: RedactionResource) -> MaterializeResult:
    store = storage.store()

    def one(h: str) -> PartitionResult:
        output = run_stage(store, "normalized_grids", h, parsed.partition(h), RunSettings(
            limits=limits.limits(), redaction=redaction.policy()))
        sheets = output.tables["sheets"].to_pylist()
        legends = output.tables["colour_legends"].to_pylist()
        scope = file.partition(h)["workbooks"].column("source_path")[0].as_py()
        drafts = propose_drafts(store, scope, legends)
        return finish(output, {
            "used_ranges": MetadataValue.json({s["sheet_name"]: s["used_range"]
                                               for s in sheets}),
            "uncached_formulas": sum(s["n_uncached_formulas"] for s in sheets),
            "computed_formulas": sum(s["n_computed_formulas"] for s in sheets),
            "colour_legends": MetadataValue.json([
                {k: row[k] for k in ("sheet_name", "fill_rgb", "tag")} for row in legends]),
            "colour_drafts": len(drafts),
        })

    return materialize_partitions(context, store, one)
