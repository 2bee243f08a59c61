"""Asset ``chunk_embeddings``: the partition's retrieval units (chunks and records) in LanceDB,
each with its vector and in the full-text index."""

import hashlib
from collections import ChainMap

from dagster import AssetExecutionContext, Failure, MaterializeResult

from extraction_assets.defs.assets.common import (
    PartitionResult,
    check_result,
    finish,
    materialize_partitions,
    stage_asset,
)
from extraction_assets.defs.assets.rendered_chunks import rendered_chunks
from extraction_assets.defs.assets.segmented_blocks import segmented_blocks
from extraction_assets.defs.assets.workbook import workbook
from extraction_assets.defs.io_manager import UpstreamTables, tables_in
from extraction_assets.defs.resources import DataStoreResource, EmbedderResource
from extraction_assets.pipeline import STAGE, RunSettings, StageOutput
from extraction_assets.pipeline.checks import one_row_per_unit
from extraction_assets.search.retrieval import indexer
from extraction_assets.search.vectors import VectorStore, VectorStoreError

CODE_VERSION = "8"


@stage_asset(
    ins={"file": tables_in(workbook, ("workbooks",), last_use=("workbooks",)),
         "segments": tables_in(segmented_blocks, ("blocks",), columns={
             "blocks": ["block_id", "kind", "heading_path", "title"]}, last_use=("blocks",)),
         "rendered": tables_in(rendered_chunks, ("chunks", "record_units"),
                               last_use=("chunks", "record_units"))},
    code_version=CODE_VERSION,
    kinds=("lancedb",),
    checks={"one_row_per_unit": "LanceDB holds exactly one row (vector and full-text entry) "
                                "per retrieval unit of the partition."},
    description=(
        "Retrieval units in the LanceDB table `units`: every chunk, and one unit per record "
        "('Sheet > Heading > Title — Row > path; Header: value; ...', the `record_units` "
        "table, pointing at its chunk), each with its vector, text, file, sheet, A1 ranges and "
        "heading path, in a full-text index. "
        "Units embedded before with the same model reuse their vector; re-materializing a "
        "partition replaces its rows."
    ),
)
def chunk_embeddings(context: AssetExecutionContext, file: UpstreamTables,
                     segments: UpstreamTables, rendered: UpstreamTables,
                     storage: DataStoreResource, embedder: EmbedderResource) -> MaterializeResult:
    store = storage.store()
    model = embedder.get_embedder()
    vector_store = VectorStore(store.lancedb_uri)

    def one(h: str) -> PartitionResult:
        source = file.partition(h)["workbooks"].to_pylist()[0]
        inputs = ChainMap(segments.partition(h), rendered.partition(h))
        try:
            output = STAGE["chunk_embeddings"].run(h, inputs, RunSettings(
                filename=source["filename"], source_path=source["source_path"],
                count_tokens_batch=model.count_tokens_batch,
                index_units=indexer(vector_store, model)))
        except VectorStoreError as exc:
            raise Failure(description=str(exc)) from exc
        facts = output.facts
        unit_ids = facts.pop("unit_ids")
        digest = hashlib.sha256()
        for unit_id in unit_ids:
            digest.update(unit_id.encode())
        digest.update(f"{model.model_name}:{model.dimension}".encode())
        coverage = one_row_per_unit(unit_ids, vector_store.unit_ids(h))
        seconds = facts["embed_seconds"]
        return finish(StageOutput({}), {
            **facts,
            "tokens_per_second": round(facts["embedded_tokens"] / seconds) if seconds else 0,
            "model": model.model_name, "dimension": model.dimension,
            "lancedb_uri": str(store.lancedb_uri),
        }, data_version=digest.hexdigest(), row_count=facts["units"],
            check_results=[check_result("one_row_per_unit", coverage)])

    return materialize_partitions(context, store, one)
