"""Chunk vectors in LanceDB: one row per (partition, chunk id) with text and provenance.

The table records the embedding model and dimension in its schema metadata and refuses vectors
of another model or dimension, so one table never mixes embedding spaces. Re-materializing a
partition deletes its rows before adding the new ones, so rows are replaced, never duplicated.
"""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from .storage import HASH_RE

TABLE_NAME = "chunks"


class VectorStoreError(RuntimeError):
    """The LanceDB table holds vectors of another model or dimension than the configured one."""


def chunk_schema(dimension: int, model: str) -> pa.Schema:
    """Arrow schema of the LanceDB ``chunks`` table for ``dimension``-long float32 vectors."""
    return pa.schema(
        [
            ("workbook_hash", pa.string()), ("chunk_id", pa.string()),
            ("filename", pa.string()), ("source_path", pa.string()),
            ("sheet_name", pa.string()), ("a1_ranges", pa.list_(pa.string())),
            ("heading_path", pa.list_(pa.string())), ("text", pa.string()),
            ("n_tokens", pa.int32()), ("vector", pa.list_(pa.float32(), dimension)),
        ],
        metadata={"embedding_model": model, "embedding_dimension": str(dimension)},
    )


class VectorStore:
    """The LanceDB database of a data dir (``<data-dir>/lancedb``)."""

    def __init__(self, uri: str | Path, table_name: str = TABLE_NAME):
        self.uri = str(uri)
        self.table_name = table_name
        self._db = lancedb.connect(self.uri)

    def _table(self):
        if self.table_name in self._db.table_names():
            return self._db.open_table(self.table_name)
        return None

    def check_model(self, model: str, dimension: int) -> None:
        """Refuse a model/dimension that differs from the one the table was created with.

        Raises:
            VectorStoreError: the table exists with another model or dimension.
        """
        table = self._table()
        if table is None:
            return
        meta = table.schema.metadata or {}
        have_model = meta.get(b"embedding_model", b"").decode()
        have_dim = int(meta.get(b"embedding_dimension", b"0") or 0)
        if have_dim != dimension or have_model != model:
            raise VectorStoreError(
                f"LanceDB table {self.table_name!r} holds {have_dim}-d vectors of "
                f"{have_model!r}; the configured embedder is {model!r} ({dimension}-d). "
                "Use another data dir or re-embed everything into a new table."
            )

    def replace_partition(self, workbook_hash: str, rows: list[dict], vectors: np.ndarray | None,
                          model: str) -> int:
        """Replace the rows of one partition with ``rows`` and their ``vectors`` (N x dim;
        ``None`` when there are no rows, which just removes the partition's rows).

        Returns the number of rows now stored for the partition.

        Raises:
            VectorStoreError: model or dimension mismatch with the existing table.
            ValueError: ``rows`` and ``vectors`` lengths differ, or a bad partition key.
        """
        if not HASH_RE.match(workbook_hash):
            raise ValueError(f"not a sha256 hex partition key: {workbook_hash!r}")
        table = self._table()
        if not rows:
            if table is not None:
                table.delete(f"workbook_hash = '{workbook_hash}'")
            return 0
        if vectors is None or vectors.ndim != 2 or len(rows) != len(vectors):
            raise ValueError("rows and vectors differ in length")
        dimension = int(vectors.shape[1])
        self.check_model(model, dimension)
        schema = chunk_schema(dimension, model)
        data = pa.Table.from_pylist(
            [dict(row, vector=vec.astype(np.float32).tolist()) for row, vec in zip(rows, vectors)],
            schema=schema,
        )
        if table is None:
            self._db.create_table(self.table_name, data=data, schema=schema)
        else:
            table.delete(f"workbook_hash = '{workbook_hash}'")
            table.add(data)
        return len(rows)

    def count(self, workbook_hash: str | None = None) -> int:
        """Rows in the table (of one partition when ``workbook_hash`` is given)."""
        table = self._table()
        if table is None:
            return 0
        if workbook_hash is None:
            return table.count_rows()
        if not HASH_RE.match(workbook_hash):
            raise ValueError(f"not a sha256 hex partition key: {workbook_hash!r}")
        return table.count_rows(f"workbook_hash = '{workbook_hash}'")

    def chunk_ids(self, workbook_hash: str) -> list[str]:
        """The chunk ids stored for one partition (one per row, duplicates kept)."""
        table = self._table()
        if table is None:
            return []
        if not HASH_RE.match(workbook_hash):
            raise ValueError(f"not a sha256 hex partition key: {workbook_hash!r}")
        rows = table.search().where(f"workbook_hash = '{workbook_hash}'").select(["chunk_id"])
        return rows.limit(None).to_arrow().column("chunk_id").to_pylist()

    def search(self, vector: np.ndarray, k: int = 5) -> list[dict]:
        """The ``k`` nearest chunks to ``vector`` (cosine distance), best first, without vectors."""
        table = self._table()
        if table is None:
            return []
        hits = table.search(vector.astype(np.float32)).metric("cosine").limit(k).to_list()
        return [{key: value for key, value in hit.items() if key != "vector"} for hit in hits]
