"""Asset ``segmented_blocks``: tables, titles and text blocks with their headers."""

from collections import Counter

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from extraction_assets.core.render.picture import segmentation_svg
from extraction_assets.core.trust.headers import RULES_VERSION
from extraction_assets.defs.assets.common import check_result, finish, run_stage, stage_asset
from extraction_assets.defs.assets.normalized_grids import normalized_grids
from extraction_assets.defs.resources import DataStoreResource
from extraction_assets.defs.trust_resources import HeaderDetectorResource
from extraction_assets.pipeline import RunSettings
from extraction_assets.pipeline.checks import cell_coverage
from extraction_assets.store.storage import atomic_write_bytes

CODE_VERSION = "9"


@stage_asset(
    deps=[normalized_grids],
    code_version=CODE_VERSION,
    checks={"cell_coverage": "Every non-empty cell of a visible sheet (outside hidden rows and "
                             "columns) lies in exactly one block."},
    description=(
        "Blocks of every visible sheet (table, key_value, title, text, chart, image) with A1 "
        "range, header rows, flattened column headers (Parent > Child), total and group label "
        "rows, title and heading path, and the reasons for each decision; Excel tables and "
        "pivot tables as declared."
    ),
)
def segmented_blocks(context: AssetExecutionContext, storage: DataStoreResource,
                     header_detector: HeaderDetectorResource) -> MaterializeResult:
    store = storage.store()
    h = context.partition_key
    detector = header_detector.detector()
    output, inputs = run_stage(store, "segmented_blocks", h,
                               RunSettings(header_detector=detector))
    cells, sheets = inputs["cells"], inputs["sheets"]
    coverage = cell_coverage(cells, sheets, output.tables["blocks"])
    blocks = output.tables["blocks"].to_pylist()
    kinds = Counter(b["kind"] for b in blocks)
    pictures = {}
    for sheet in sheets.to_pylist():
        if sheet["visibility"] != "visible":
            continue
        path = store.picture_path(h, sheet["sheet_index"])
        atomic_write_bytes(path, segmentation_svg(
            sheet["sheet_name"], sheet["used_range"],
            [b for b in blocks if b["sheet_index"] == sheet["sheet_index"]]).encode())
        pictures[f"segmentation: {sheet['sheet_name']}"] = MetadataValue.path(str(path))
    return finish(context, store, "segmented_blocks", output, CODE_VERSION, {
        **pictures,
        "tables": kinds.get("table", 0),
        "header_detector": detector.version if detector else RULES_VERSION,
        "body_font_size": output.facts["body_font_size"],
        "heading_levels": MetadataValue.json(output.facts["heading_levels"]),
        "block_kinds": MetadataValue.json(dict(sorted(kinds.items()))),
        "blocks_preview": MetadataValue.md("\n".join(
            f"- `{b['sheet_name']}!{b['a1_range']}` {b['kind']}"
            + (f" — {b['title']}" if b["title"] else "") for b in blocks[:20]) or "(no blocks)"),
    }, check_results=[check_result("cell_coverage", coverage)])
