"""Asset ``segmented_blocks``: tables, titles and text blocks with their headers."""

import base64
from collections import ChainMap, Counter

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from extraction_assets.core.render.picture import segmentation_svg
from extraction_assets.core.trust.headers import RULES_VERSION
from extraction_assets.defs.assets.common import (
    PartitionResult,
    check_result,
    finish,
    materialize_partitions,
    run_stage,
    stage_asset,
)
from extraction_assets.defs.assets.normalized_grids import normalized_grids
from extraction_assets.defs.assets.parsed_sheets import parsed_sheets
from extraction_assets.defs.io_manager import UpstreamTables, tables_in
from extraction_assets.defs.resources import DataStoreResource
from extraction_assets.defs.trust_resources import HeaderDetectorResource, RedactionResource
from extraction_assets.pipeline import RunSettings
from extraction_assets.pipeline.checks import cell_coverage
from extraction_assets.store.storage import atomic_write_bytes

CODE_VERSION = "13"

#: Most sheets whose segmentation picture is embedded in the materialization's Markdown (the
#: others are linked by path): the UI shows the metadata of every materialization it lists.
MAX_PICTURES = 20


def pictures_markdown(pictures: list[tuple[str, str]]) -> str:
    """Markdown showing each ``(sheet name, SVG text)`` picture as an image (a ``data:`` URI,
    so the Dagster UI draws it without a file server), under the sheet's name; at most
    :data:`MAX_PICTURES`, then a line saying how many more are only on disk."""
    parts = []
    for name, svg in pictures[:MAX_PICTURES]:
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")
        label = name.replace("[", "(").replace("]", ")")
        parts.append(f"**{label}**\n\n![segmentation of {label}]({uri})")
    if len(pictures) > MAX_PICTURES:
        parts.append(f"{len(pictures) - MAX_PICTURES} more sheets: see the "
                     "`segmentation: <sheet>` paths")
    return "\n\n".join(parts) or "(no visible sheet)"


@stage_asset(
    ins={"grids": tables_in(normalized_grids, ("cells", "sheets")),
         "objects": tables_in(parsed_sheets, ("sheet_objects",), last_use=("sheet_objects",))},
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
def segmented_blocks(context: AssetExecutionContext, grids: UpstreamTables,
                     objects: UpstreamTables, storage: DataStoreResource,
                     header_detector: HeaderDetectorResource,
                     redaction: RedactionResource) -> MaterializeResult:
    store = storage.store()
    detector = header_detector.detector()

    def one(h: str) -> PartitionResult:
        inputs = ChainMap(grids.partition(h), objects.partition(h))
        output = run_stage(store, "segmented_blocks", h, inputs,
                           RunSettings(header_detector=detector, redaction=redaction.policy()))
        cells, sheets = inputs["cells"], inputs["sheets"]
        coverage = cell_coverage(cells, sheets, output.tables["blocks"])
        blocks = output.tables["blocks"].to_pylist()
        kinds = Counter(b["kind"] for b in blocks)
        pictures, shown = {}, []
        for sheet in sheets.to_pylist():
            if sheet["visibility"] != "visible":
                continue
            path = store.picture_path(h, sheet["sheet_index"])
            svg = segmentation_svg(sheet["sheet_name"], sheet["used_range"],
                                   [b for b in blocks if b["sheet_index"] == sheet["sheet_index"]])
            atomic_write_bytes(path, svg.encode())
            pictures[f"segmentation: {sheet['sheet_name']}"] = MetadataValue.path(str(path))
            shown.append((sheet["sheet_name"], svg))
        return finish(output, {
            **pictures,
            "segmentation": MetadataValue.md(pictures_markdown(shown)),
            "tables": kinds.get("table", 0),
            "header_detector": detector.version if detector else RULES_VERSION,
            "body_font_size": output.facts["body_font_size"],
            "heading_levels": MetadataValue.json(output.facts["heading_levels"]),
            "block_kinds": MetadataValue.json(dict(sorted(kinds.items()))),
            "blocks_preview": MetadataValue.md("\n".join(
                f"- `{b['sheet_name']}!{b['a1_range']}` {b['kind']}"
                + (f" — {b['title']}" if b["title"] else "") for b in blocks[:20])
                or "(no blocks)"),
        }, check_results=[check_result("cell_coverage", coverage)])

    return materialize_partitions(context, store, one)
