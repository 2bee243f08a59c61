"""Asset ``normalized_grids``: the StyledGrid every later stage reads."""

from dagster import MaterializeResult, MetadataValue

from extraction_assets.defs.assets.common import (
    PartitionContext,
    fail,
    finish,
    stage_asset,
)
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.resources import DataStoreResource, LimitsResource
from extraction_assets.pipeline.stages import StageError, normalize_stage

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
def normalized_grids(context: PartitionContext, storage: DataStoreResource,
                     limits: LimitsResource) -> MaterializeResult:
    store = storage.store()
    h = context.partition_key
    try:
        output = normalize_stage(
            h, store.read_table("parsed_cells", h), store.read_table("parsed_sheets", h),
            store.read_table("styles", h), store.read_table("workbook_properties", h),
            limits.limits(),
        )
    except StageError as error:
        raise fail(store, "normalized_grids", h, error) from error
    sheets = output.tables["sheets"].to_pylist()
    return finish(context, store, "normalized_grids", output, CODE_VERSION, {
        "used_ranges": MetadataValue.json({s["sheet_name"]: s["used_range"] for s in sheets}),
        "uncached_formulas": sum(s["n_uncached_formulas"] for s in sheets),
    })
