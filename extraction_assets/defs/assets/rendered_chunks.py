"""Asset ``rendered_chunks``: records and token-bounded Markdown chunks."""

from collections import ChainMap

import pyarrow.compute as pc
from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue
from pydantic import Field

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
from extraction_assets.defs.assets.segmented_blocks import segmented_blocks
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.io_manager import UpstreamTables, tables_in
from extraction_assets.defs.resources import DataStoreResource, EmbedderResource
from extraction_assets.defs.trust_resources import RedactionResource
from extraction_assets.pipeline import RunSettings
from extraction_assets.pipeline.checks import (
    chunk_budget,
    heading_paths,
    record_provenance,
    rows_in_one_chunk,
    values_in_output,
)
from extraction_assets.pipeline.codecs import MARKUP_COLUMNS
from extraction_assets.pipeline.trust import draft_issues
from extraction_assets.store.decisions import active_tags, undecided

CODE_VERSION = "17"


class ChunkingConfig(Config):
    """Chunk budget in tokens of the configured embedder's own tokenizer."""

    max_tokens: int = Field(512, ge=32, description="Most tokens in one chunk.")
    min_tokens: int = Field(64, ge=0, description="Smallest chunk worth keeping alone.")


@stage_asset(
    ins={"file": tables_in(workbook, ("workbooks",)),
         "grids": tables_in(normalized_grids, ("cells", "sheets"), last_use=("cells", "sheets")),
         "segments": tables_in(segmented_blocks, ("blocks", "block_columns"),
                               last_use=("block_columns",)),
         "parsed": tables_in(parsed_sheets, ("parsed_cells", "rich_text"),
                             {"parsed_cells": MARKUP_COLUMNS},
                             last_use=("parsed_cells", "rich_text"))},
    code_version=CODE_VERSION,
    checks={"values_in_output": "Every value of a visible cell reaches its block's records, "
                                "header or text (none lost).",
            "chunk_budget": "Every chunk is within max_tokens tokens of the embedder.",
            "record_provenance": "Every record names its file, sheet, row and A1 range inside "
                                 "its block.",
            "rows_in_one_chunk": "Every table row is in exactly one chunk.",
            "heading_paths": "Every chunk has a non-empty heading path."},
    description=(
        "One record per table data row (header -> typed value, citing file, sheet, row and A1 "
        "range) and Markdown chunks with heading paths, the header repeated in every chunk of a "
        "split table, counted in the embedder's tokens. Cell text is redacted first (resource "
        "`redaction`); cells whose fill has an active colour mapping show its tag."
    ),
)
def rendered_chunks(context: AssetExecutionContext, config: ChunkingConfig,
                    file: UpstreamTables, grids: UpstreamTables, segments: UpstreamTables,
                    parsed: UpstreamTables, storage: DataStoreResource,
                    embedder: EmbedderResource, redaction: RedactionResource) -> MaterializeResult:
    store = storage.store()
    model = embedder.get_embedder()
    max_tokens = config.max_tokens
    if model.max_input_tokens:
        max_tokens = min(max_tokens, model.max_input_tokens)

    def one(h: str) -> PartitionResult:
        source = file.partition(h)["workbooks"].to_pylist()[0]
        tags = active_tags(store, source["source_path"])
        inputs = ChainMap(grids.partition(h), segments.partition(h), parsed.partition(h))
        output = run_stage(store, "rendered_chunks", h, inputs, RunSettings(
            filename=source["filename"], count_tokens=model.count_tokens,
            count_tokens_batch=model.count_tokens_batch, max_tokens=max_tokens,
            min_tokens=config.min_tokens, redaction=redaction.policy(), colour_tags=tags))
        output.issues += draft_issues(undecided(store, source["source_path"]))
        blocks = inputs["blocks"]
        del inputs  # the grid's cells, the largest input, are freed before the tables are encoded
        chunks = output.tables["chunks"]
        checks = [
            check_result("values_in_output", values_in_output(
                output.facts["lost_values"], output.facts["lost_values_sample"])),
            check_result("chunk_budget", chunk_budget(chunks, max_tokens)),
            check_result("record_provenance", record_provenance(output.tables["records"],
                                                                blocks)),
            check_result("rows_in_one_chunk", rows_in_one_chunk(output.tables["records"],
                                                                chunks)),
            check_result("heading_paths", heading_paths(chunks)),
        ]
        return finish(output, {
            "max_tokens": max_tokens,
            "tokenizer": model.model_name,
            "total_tokens": pc.sum(chunks.column("n_tokens")).as_py() or 0,
            "colour_tags": MetadataValue.json(tags),
            "preview": MetadataValue.md(chunks.column("text")[0].as_py() if chunks.num_rows
                                        else "(no chunks)"),
        }, check_results=checks)

    return materialize_partitions(context, store, one)
