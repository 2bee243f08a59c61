"""Asset ``chunk_embeddings``: the partition's retrieval units (chunks and records) in LanceDB,
each with its vector and in the full-text index."""

import hashlib

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
from extraction_assets.pipeline import StageOutput
from extraction_assets.pipeline.checks import one_row_per_unit
from extraction_assets.search.retrieval import index_units, retrieval_units
from extraction_assets.search.vectors import VectorStore, VectorStoreError

CODE_VERSION = "7"


@stage_asset(
    ins={"file": tables_in(workbook, ("workbooks",), last_use=("workbooks",)),
         "segments": tables_in(segmented_blocks, ("blocks", "block_columns"),
                               last_use=("blocks", "block_columns")),
         "rendered": tables_in(rendered_chunks, ("chunks", "records"),
                               last_use=("chunks", "records"))},
    code_version=CODE_VERSION,
    kinds=("lancedb",),
    checks={"one_row_per_unit": "LanceDB holds exactly one row (vector and full-text entry) "
                                "per retrieval unit of the partition."},
    description=(
        "Retrieval units in the LanceDB table `units`: every chunk, and one unit per record "
        "('Sheet > Heading > Title — Row > path; Header: value; ...', pointing at its "
        "chunk), each with its vector, text, file, sheet, A1 ranges and heading path, in a "
        "full-text index. "
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
        blocks, made = segments.partition(h), rendered.partition(h)
        units = retrieval_units(h, source["filename"], source["source_path"],
                                made["chunks"].to_pylist(), made["records"].to_pylist(),
                                blocks["blocks"].to_pylist(), blocks["block_columns"].to_pylist(),
                                model.count_tokens_batch)
        try:
            indexed = index_units(vector_store, h, units, model)
        except VectorStoreError as exc:
            raise Failure(description=str(exc)) from exc
        digest = hashlib.sha256()
        for unit in units:
            digest.update(unit["unit_id"].encode())
        digest.update(f"{model.model_name}:{model.dimension}".encode())
        coverage = one_row_per_unit([u["unit_id"] for u in units], vector_store.unit_ids(h))
        chunks = sum(u["kind"] == "chunk" for u in units)
        n, seconds = indexed.rows, indexed.embed_seconds
        return finish(StageOutput({}), {
            "units": n, "chunk_units": chunks, "record_units": n - chunks,
            "embedded": n - indexed.reused, "reused": indexed.reused,
            "embedded_tokens": indexed.embedded_tokens, "embed_seconds": round(seconds, 3),
            "tokens_per_second": round(indexed.embedded_tokens / seconds) if seconds else 0,
            "model": model.model_name, "dimension": model.dimension,
            "lancedb_uri": str(store.lancedb_uri),
        }, data_version=digest.hexdigest(), row_count=n,
            check_results=[check_result("one_row_per_unit", coverage)])

    return materialize_partitions(context, store, one)
