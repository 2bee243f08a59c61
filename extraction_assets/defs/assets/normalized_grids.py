"""Asset ``normalized_grids``: the StyledGrid every later stage reads."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from extraction_assets.defs.assets.common import finish, run_stage, stage_asset
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.resources import DataStoreResource, LimitsResource
from extraction_assets.pipeline import RunSettings

CODE_VERSION = "4"


@stage_asset(
    deps=[parsed_sheets],
    code_version=CODE_VERSION,
    description=(
        "The StyledGrid: per cell the display text through its number format, typed value, "
        "resolved RGB colours, bold and size, merged values propagated with merged_from; per "
        "sheet the used range computed from the cells."
    ),
)
def normalized_grids(context: AssetExecutionContext, storage: DataStoreResource,
                     limits: LimitsResource) -> MaterializeResult:
    store = storage.store()
    h = context.partition_key
    output, _ = run_stage(store, "normalized_grids", h, RunSettings(limits=limits.limits()))
    sheets = output.tables["sheets"].to_pylist()
    return finish(context, store, "normalized_grids", output, CODE_VERSION, {
        "used_ranges": MetadataValue.json({s["sheet_name"]: s["used_range"] for s in sheets}),
        "uncached_formulas": sum(s["n_uncached_formulas"] for s in sheets),
    })
