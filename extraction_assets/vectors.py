"""Chunk vectors in LanceDB: one row per (partition, chunk id) with text and provenance.

The table records the embedding model and dimension in its schema metadata and refuses vectors
of another model or dimension, so one table never mixes embedding spaces. Re-materializing a
partition replaces its rows in one commit, so rows are replaced, never duplicated.

Writers may run in several processes at once (one Dagster run per partition): on a local data
dir they take a per-table file lock (``<lancedb>/.<table>.write.lock``) around each commit, so
concurrent runs never race to create the table or hit a commit conflict; a commit that still
conflicts (e.g. a writer on another machine) is retried with a growing delay. Embedding happens
before the lock is taken, so the lock is only held for the commit itself.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
from filelock import FileLock

from .storage import require_partition_key

TABLE_NAME = "chunks"
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")

#: seconds a writer waits for the table's write lock before giving up
LOCK_TIMEOUT_SECONDS = 600.0
#: commits retried after a conflict (writers outside the lock), with a growing delay
COMMIT_ATTEMPTS = 8


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
        import lancedb  # ~3 s to import: only processes that touch vectors pay for it

        self.uri = str(uri)
        self.table_name = table_name
        self._db = lancedb.connect(self.uri)

    def _table(self):
        """The table at its latest version, or ``None`` when it does not exist (yet)."""
        try:
            return self._db.open_table(self.table_name)
        except (ValueError, FileNotFoundError):
            return None

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Serialize the writers of this table across processes (local data dirs only)."""
        if "://" in self.uri:  # object stores: rely on Lance's commit protocol and our retries
            yield
            return
        folder = Path(self.uri)
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / f".{self.table_name}.write.lock"),
                      timeout=LOCK_TIMEOUT_SECONDS):
            yield

    @staticmethod
    def _is_conflict(exc: Exception) -> bool:
        text = str(exc).lower()
        return "conflict" in text or "retryable" in text or "already exists" in text

    def _commit(self, write) -> None:
        """Run ``write()`` under the write lock, retrying commit conflicts with backoff."""
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                with self._write_lock():
                    write()
                return
            except VectorStoreError:
                raise
            except (OSError, RuntimeError, ValueError) as exc:
                if attempt == COMMIT_ATTEMPTS - 1 or not self._is_conflict(exc):
                    raise
            time.sleep(min(5.0, 0.1 * 2 ** attempt) * (0.5 + random.random()))

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
        require_partition_key(workbook_hash)
        where = f"workbook_hash = '{workbook_hash}'"
        if not rows:
            def delete() -> None:
                table = self._table()
                if table is not None:
                    table.delete(where)
            self._commit(delete)
            return 0
        if vectors is None or vectors.ndim != 2 or len(rows) != len(vectors):
            raise ValueError("rows and vectors differ in length")
        dimension = int(vectors.shape[1])
        schema = chunk_schema(dimension, model)
        data = pa.Table.from_pylist(
            [dict(row, vector=vec.astype(np.float32).tolist()) for row, vec in zip(rows, vectors)],
            schema=schema,
        )
        unique_ids = len({row["chunk_id"] for row in rows}) == len(rows)

        def replace() -> None:
            # re-read under the lock: another process may have created the table meanwhile
            self.check_model(model, dimension)
            table = self._table()
            if table is None:
                self._db.create_table(self.table_name, data=data, schema=schema)
            elif unique_ids:
                # one commit: a reader or a killed writer never sees the partition half-replaced
                (table.merge_insert(["workbook_hash", "chunk_id"])
                 .when_matched_update_all().when_not_matched_insert_all()
                 .when_not_matched_by_source_delete(where).execute(data))
            else:  # a merge on a non-unique key would be ambiguous
                table.delete(where)
                table.add(data)

        self._commit(replace)
        return len(rows)

    def count(self, workbook_hash: str | None = None) -> int:
        """Rows in the table (of one partition when ``workbook_hash`` is given)."""
        table = self._table()
        if table is None:
            return 0
        if workbook_hash is None:
            return table.count_rows()
        require_partition_key(workbook_hash)
        return table.count_rows(f"workbook_hash = '{workbook_hash}'")

    def chunk_ids(self, workbook_hash: str) -> list[str]:
        """The chunk ids stored for one partition (one per row, duplicates kept)."""
        table = self._table()
        if table is None:
            return []
        require_partition_key(workbook_hash)
        rows = table.search().where(f"workbook_hash = '{workbook_hash}'").select(["chunk_id"])
        return rows.limit(None).to_arrow().column("chunk_id").to_pylist()

    def stored_vectors(self, chunk_ids: list[str], model: str) -> dict[str, np.ndarray]:
        """Vectors already stored (in any partition) for these chunk ids, by id — reusable when
        the table was made with ``model``, since a chunk id is a hash of the chunk's text, sheet
        and ranges. Empty when the table is missing or holds another model."""
        table = self._table()
        if table is None or not chunk_ids:
            return {}
        if (table.schema.metadata or {}).get(b"embedding_model", b"").decode() != model:
            return {}
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(chunk_ids))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            listed = ", ".join("'" + c + "'" for c in batch if _HEX_RE.match(c))
            if not listed:
                continue
            rows = (table.search().where(f"chunk_id IN ({listed})").select(["chunk_id", "vector"])
                    .limit(None).to_arrow())
            for chunk_id, vector in zip(rows.column("chunk_id").to_pylist(),
                                        rows.column("vector").to_pylist()):
                found.setdefault(chunk_id, np.asarray(vector, dtype=np.float32))
        return found

    def search(self, vector: np.ndarray, k: int = 5, exclude: set[str] = frozenset()) -> list[dict]:
        """The ``k`` nearest chunks to ``vector`` (cosine distance), best first, without vectors;
        chunks of the partitions in ``exclude`` (sha256 hex keys) are filtered out first.

        Raises:
            ValueError: a key of ``exclude`` is not a sha256 hex partition key.
        """
        table = self._table()
        if table is None:
            return []
        query = table.search(vector.astype(np.float32)).metric("cosine")
        if exclude:
            keys = ", ".join(f"'{require_partition_key(h)}'" for h in sorted(exclude))
            query = query.where(f"workbook_hash NOT IN ({keys})", prefilter=True)
        hits = query.limit(k).to_list()
        return [{key: value for key, value in hit.items() if key != "vector"} for hit in hits]
