"""Asset ``normalized_grids``: the StyledGrid every later stage reads."""

from dagster import MaterializeResult, MetadataValue

from extraction_assets.defs.assets.common import (
    PartitionContext,
    finish,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.resources import DataStoreResource, LimitsResource
from extraction_assets.defs.trust_resources import RedactionResource
from extraction_assets.pipeline import RunSettings
from extraction_assets.store.decisions import propose_drafts

CODE_VERSION = "7"


@stage_asset(
    deps=[parsed_sheets],
    code_version=CODE_VERSION,
    description=(
        "The StyledGrid: per cell the display text through its number format, typed value, "
        "resolved RGB colours, bold and size, merged values propagated with merged_from; per "
        "sheet the used range computed from the cells. Colour legends (swatch next to a "
        "label) found in the workbook become draft colour mappings."
    ),
)
def normalized_grids(context: PartitionContext, storage: DataStoreResource,
                     limits: LimitsResource, redaction: RedactionResource) -> MaterializeResult:
    store = storage.store()
    h = context.partition_key
    output, _ = run_stage(store, "normalized_grids", h, RunSettings(
        limits=limits.limits(), redaction=redaction.policy()))
    sheets = output.tables["sheets"].to_pylist()
    legends = output.tables["colour_legends"].to_pylist()
    scope = store.read_table("workbooks", h).column("source_path")[0].as_py()
    drafts = propose_drafts(store, scope, legends)
    return finish(context, store, "normalized_grids", output, CODE_VERSION, {
        "used_ranges": MetadataValue.json({s["sheet_name"]: s["used_range"] for s in sheets}),
        "uncached_formulas": sum(s["n_uncached_formulas"] for s in sheets),
        "colour_legends": MetadataValue.json([{k: row[k] for k in ("sheet_name", "fill_rgb", "tag")}
                                              for row in legends]),
        "colour_drafts": len(drafts),
    })
