"""Asset ``chunk_embeddings``: one vector per chunk in LanceDB."""

import hashlib

import numpy as np
from dagster import AssetExecutionContext, Failure, MaterializeResult

from ..checks import one_vector_per_chunk
from ..embedding import EmbedderResource
from ..resources import DataStoreResource
from ..stages import StageOutput
from ..vectors import VectorStore, VectorStoreError
from .common import check_result, finish, stage_asset
from .rendered_chunks import rendered_chunks

CODE_VERSION = "2"


@stage_asset(
    deps=[rendered_chunks],
    code_version=CODE_VERSION,
    kinds=("lancedb",),
    checks={"one_vector_per_chunk": "LanceDB holds exactly one vector per chunk id of the "
                                    "partition."},
    description=(
        "Embeddings of every chunk in the LanceDB table `chunks` (vector, text, file, sheet, "
        "A1 ranges, heading path). Chunk ids embedded before with the same model reuse their "
        "vector; re-materializing a partition replaces its rows."
    ),
)
def chunk_embeddings(context: AssetExecutionContext, storage: DataStoreResource,
                     embedder: EmbedderResource) -> MaterializeResult:
    store = storage.store()
    h = context.partition_key
    model = embedder.get_embedder()
    chunks = store.read_table("chunks", h).to_pylist()
    source = store.read_table("workbooks", h).to_pylist()[0]
    vector_store = VectorStore(store.lancedb_uri)
    vectors, reused = _vectors(model, vector_store, chunks)
    rows = [dict(workbook_hash=h, chunk_id=c["chunk_id"], filename=source["filename"],
                 source_path=source["source_path"], sheet_name=c["sheet_name"],
                 a1_ranges=c["a1_ranges"], heading_path=c["heading_path"], text=c["text"],
                 n_tokens=c["n_tokens"]) for c in chunks]
    try:
        n = vector_store.replace_partition(h, rows, vectors, model.model_name)
    except VectorStoreError as exc:
        raise Failure(description=str(exc)) from exc
    digest = hashlib.sha256()
    for c in chunks:
        digest.update(c["chunk_id"].encode())
    digest.update(f"{model.model_name}:{model.dimension}".encode())
    coverage = one_vector_per_chunk([c["chunk_id"] for c in chunks], vector_store.chunk_ids(h))
    return finish(context, store, "chunk_embeddings", StageOutput({}), CODE_VERSION, {
        "vectors": n, "embedded": n - reused, "reused": reused,
        "model": model.model_name, "dimension": model.dimension,
        "lancedb_uri": str(store.lancedb_uri),
    }, data_version=digest.hexdigest(), row_count=n,
        check_results=[check_result("one_vector_per_chunk", coverage)])


def _vectors(model, vector_store: VectorStore, chunks: list[dict]):
    """(N x dim vectors or ``None``, how many were reused): chunk ids already embedded with the
    same model (an unchanged chunk of an earlier file version) reuse their stored vector; only
    the others are sent to the embedder, in one batch."""
    if not chunks:
        return None, 0
    stored = vector_store.stored_vectors([c["chunk_id"] for c in chunks], model.model_name)
    missing = [c for c in chunks if c["chunk_id"] not in stored]
    if missing:
        for chunk, vector in zip(missing, model.embed([c["text"] for c in missing])):
            stored[chunk["chunk_id"]] = vector
    return np.stack([stored[c["chunk_id"]] for c in chunks]), len(chunks) - len(missing)
