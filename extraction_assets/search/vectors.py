"""Retrieval units in LanceDB: one row per (partition, unit id) with text, vector and provenance.

A unit is a chunk (``kind = "chunk"``) or a record (``kind = "record"``, see
:mod:`extraction_assets.search.retrieval`). The table has a full-text index over ``text`` (ICU word
segmentation, so Japanese is split into words; English stemmed) beside the vectors, so one row
is both the full-text and the vector entry of its unit, and :meth:`VectorStore.search` queries
either or both (LanceDB's hybrid query, the two rankings fused by weighted reciprocal rank).

Vector queries scan every row while the table is small: below :data:`VECTOR_INDEX_THRESHOLD`
rows (100,000) they are exact. Once a write finds the table past it, the vectors get an IVF-RQ
index (:func:`vector_index_config`); a vector query (alone or as a hybrid query's vector leg)
then ranks the rows of the :data:`VECTOR_NPROBES` nearest partitions by their 1-bit codes and
re-ranks the best by their exact cosine (:data:`VECTOR_REFINE_FACTOR`): recall@10 >= 0.99 of
the exact ranking at 1M rows, in milliseconds instead of seconds (docs/retrieval.md). Rows written
later are folded into the index with the full-text index, and scanned until then; once the table
holds :data:`VECTOR_INDEX_RETRAIN_GROWTH` times the rows the index was trained on, it is trained
again.

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

import functools
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
from filelock import FileLock

from extraction_assets.core.render.units import CELL_TYPE
from extraction_assets.store.storage import require_partition_key

TABLE_NAME = "units"
#: the kinds of retrieval unit (column ``kind``)
UNIT_KINDS = ("chunk", "record")
#: the table of chunk vectors written before there were record units (dropped on first write)
LEGACY_TABLE_NAME = "chunks"
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")
#: chunk ids (64 hex digits) and block ids (16) as they may go into a filter
_ID_RE = re.compile(r"^[0-9a-f]{16}(?:[0-9a-f]{48})?$")

#: seconds a writer waits for the table's write lock before giving up
LOCK_TIMEOUT_SECONDS = 600.0
#: commits retried after a conflict (writers outside the lock), with a growing delay
COMMIT_ATTEMPTS = 8
#: rows written since the full-text index was last brought up to date before a write folds
#: them in (LanceDB searches rows not in the index yet by a scan, so results never miss them,
#: but scores them on another scale: an ingest or refresh command, and a Dagster run through
#: the ``full_text_index_after_success`` sensor, fold them all when they end,
#: :meth:`VectorStore.fold_index`)
UNINDEXED_ROWS_LIMIT = 10_000
#: rows from which the vectors get an approximate nearest-neighbour index (IVF-RQ, see
#: :func:`vector_index_config`); below, every vector query is an exact scan of the table
VECTOR_INDEX_THRESHOLD = 100_000
#: the vector index is trained again (partitions and quantizer, from every row) once the table
#: holds this many times the rows it was trained on; rows added in between are folded into its
#: partitions with the full-text index (:data:`UNINDEXED_ROWS_LIMIT`, :meth:`VectorStore.optimize`)
VECTOR_INDEX_RETRAIN_GROWTH = 2
#: name of the vector index
VECTOR_INDEX_NAME = "vector_idx"
#: rows per IVF partition of the vector index, and the most partitions it has: past
#: 1,048,576 rows the partitions grow instead, so that :data:`VECTOR_NPROBES` keeps probing a
#: quarter of them (finer partitions lost recall at a fixed share probed, docs/retrieval.md)
VECTOR_INDEX_PARTITION_ROWS, VECTOR_INDEX_MAX_PARTITIONS = 4096, 256
#: IVF partitions a vector query probes through the index, at least (more when a filter
#: leaves fewer rows than asked for in them)
VECTOR_NPROBES = 64
#: candidates re-ranked by their exact cosine, as a multiple of the rows asked for (the
#: index's 1-bit codes only pick them)
VECTOR_REFINE_FACTOR = 10
#: metadata key of the ``vector`` field: the rows the vector index was trained on
_TRAINED_ROWS_KEY = "vector_index_trained_rows"
#: search modes: both fused (the default), vectors only, full text only
MODES = ("hybrid", "vector", "text")
#: candidates each leg of a hybrid query contributes to the fusion (at least ``k``)
HYBRID_CANDIDATES = 50
#: weights of the vector and the full-text ranking in a hybrid query's fusion (weighted
#: reciprocal ranks): the text's first hit stays first, the vectors reorder the rest and
#: fill in where the words match nothing (figures in docs/retrieval.md)
HYBRID_WEIGHTS = (0.25, 0.75)




class VectorStoreError(RuntimeError):
    """The LanceDB table holds vectors of another model or dimension than the configured one."""


class DamagedIndexError(VectorStoreError):
    """A file of the LanceDB table does not read (overwritten, truncated, deleted): the
    message names the table and LanceDB's reason; ``extraction-assets repair`` rebuilds it."""


def unit_schema(dimension: int, model: str) -> pa.Schema:
    """Arrow schema of the LanceDB ``units`` table for ``dimension``-long float32 vectors.

    ``kind`` is ``chunk`` or ``record``; ``chunk_id`` is the chunk itself or, for a record, the
    chunk that holds its row; a record's ``block_id`` and ``title`` (its table's), ``row_path``
    (row-group labels, then its row label) and value ``cells`` (:data:`CELL_TYPE`) are empty
    for a chunk."""
    return pa.schema(
        [
            ("workbook_hash", pa.string()), ("unit_id", pa.string()), ("kind", pa.string()),
            ("chunk_id", pa.string()), ("filename", pa.string()), ("source_path", pa.string()),
            ("sheet_name", pa.string()), ("a1_ranges", pa.list_(pa.string())),
            ("heading_path", pa.list_(pa.string())), ("block_id", pa.string()),
            ("title", pa.string()), ("row_path", pa.list_(pa.string())),
            ("cells", pa.list_(CELL_TYPE)), ("text", pa.string()),
            ("n_tokens", pa.int32()), ("vector", pa.list_(pa.float32(), dimension)),
        ],
        metadata={"embedding_model": model, "embedding_dimension": str(dimension)},
    )


def _text_index():
    """The full-text index of ``text``: ICU word segmentation (Japanese and Chinese split into
    dictionary words, other scripts at word boundaries and punctuation), lower-cased,
    ASCII-folded, English words stemmed; no stop words (the built-in list drops digits and
    words such as "city"), and token positions kept for phrase queries."""
    from lancedb.index import FTS

    return FTS(base_tokenizer="icu", language="English", stem=True, remove_stop_words=False,
               lower_case=True, ascii_folding=True, with_position=True)


def _text_index_name(table) -> str | None:
    """The name of ``table``'s full-text index, ``None`` before it has one."""
    return next((index.name for index in table.list_indices() if index.index_type == "FTS"),
                None)


def probe_text_index(table) -> None:
    """Ask ``table``'s full-text index one query (its files are read only when a query
    needs them; nothing without an index).

    Raises:
        RuntimeError, OSError, ValueError: what LanceDB raises for index files that do not
            read (e.g. ``does not include tokenizer details`` for an overwritten one).
    """
    if _text_index_name(table) is not None:
        table.search(text_query(table, "probe"), query_type="fts").limit(1).to_list()


def vector_index_config(rows: int, dimension: int):
    """The vector index of a table of ``rows`` rows of ``dimension``-long vectors: IVF (k-means
    partitions of :data:`VECTOR_INDEX_PARTITION_ROWS` rows, at most
    :data:`VECTOR_INDEX_MAX_PARTITIONS`) with RaBitQ codes (one bit per dimension; 8-bit
    scalar codes, IVF-SQ, when ``dimension`` is not a multiple of 8, which RaBitQ refuses),
    cosine distance. A query ranks the rows of :data:`VECTOR_NPROBES` partitions by their codes
    and re-ranks the best by their exact cosine (:data:`VECTOR_REFINE_FACTOR`). Chosen over
    IVF-PQ, IVF-SQ and IVF-HNSW-SQ for its build time and recall (figures in
    docs/retrieval.md)."""
    from lancedb.index import IvfRq, IvfSq

    partitions = min(VECTOR_INDEX_MAX_PARTITIONS, max(1, rows // VECTOR_INDEX_PARTITION_ROWS))
    kind = IvfRq if dimension % 8 == 0 else IvfSq
    return kind(distance_type="cosine", num_partitions=partitions)


def text_query(table, text: str):
    """The full-text query of ``text``: its words matched one by one (BM25), plus, for each
    whitespace-separated word the index splits into several tokens (a date ``6/30/01``, a code
    ``Item-96``, a Japanese compound), the word as a phrase, so the exact sequence ranks above
    the same tokens scattered."""
    from lancedb.query import BooleanQuery, MatchQuery, Occur, PhraseQuery

    clauses = [(Occur.SHOULD, MatchQuery(text, "text"))]
    for word in dict.fromkeys(text.split()):
        if len(table.tokenize(word, column="text")) > 1:
            clauses.append((Occur.SHOULD, PhraseQuery(word, "text")))
    return BooleanQuery(clauses) if len(clauses) > 1 else text


class VectorStore:
    """The LanceDB database of a data dir (``<data-dir>/lancedb``).

    Args:
        uri: the database's folder (or object-store URI).
        table_name: the table of retrieval units.
        index_threshold: rows from which writes build the vector index (default
            :data:`VECTOR_INDEX_THRESHOLD`; tests and benchmarks lower or raise it).
    """

    def __init__(self, uri: str | Path, table_name: str = TABLE_NAME, *,
                 index_threshold: int = VECTOR_INDEX_THRESHOLD):
        import lancedb  # ~3 s to import: only processes that touch vectors pay for it

        self.uri = str(uri)
        self.table_name = table_name
        #: rows from which writes build the vector index (:data:`VECTOR_INDEX_THRESHOLD`)
        self.index_threshold = index_threshold
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
        """Replace the units of one partition with ``rows`` and their ``vectors`` (N x dim;
        ``None`` when there are no rows, which just removes the partition's rows), and bring
        the full-text index up to date when many rows are not in it yet.

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
        schema = unit_schema(dimension, model)
        data = pa.Table.from_pydict({  # the vectors as one float32 buffer, not Python floats
            **{name: [row[name] for row in rows] for name in schema.names if name != "vector"},
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.ascontiguousarray(vectors, np.float32).ravel()), dimension),
        }, schema=schema)
        unique_ids = len({row["unit_id"] for row in rows}) == len(rows)

        def replace() -> None:
            # re-read under the lock: another process may have created the table meanwhile
            self.check_model(model, dimension)
            table = self._table()
            if table is not None and set(schema.names) - set(table.schema.names):
                # units of an earlier schema: every partition is re-embedded (the
                # chunk_embeddings asset's code version changed with it)
                self._db.drop_table(self.table_name)
                table = None
            if table is None:
                if LEGACY_TABLE_NAME in self._db.list_tables().tables:
                    self._db.drop_table(LEGACY_TABLE_NAME)  # its partitions are re-embedded
                table = self._db.create_table(self.table_name, data=data, schema=schema)
                table.create_index("text", config=_text_index())
                self._index_vectors(table)
                return
            if unique_ids:
                # one commit: a reader or a killed writer never sees the partition half-replaced
                (table.merge_insert(["workbook_hash", "unit_id"])
                 .when_matched_update_all().when_not_matched_insert_all()
                 .when_not_matched_by_source_delete(where).execute(data))
            else:  # a merge on a non-unique key would be ambiguous
                table.delete(where)
                table.add(data)
            self._fold_into_index(table)

        self._commit(replace)
        return len(rows)

    def _fold_into_index(self, table) -> None:
        """Add the rows not yet in the full-text index to it (and to the vector index) once
        there are :data:`UNINDEXED_ROWS_LIMIT` of them (compacting the table's files as well),
        and build or retrain the vector index when due (:meth:`_index_vectors`)."""
        name = _text_index_name(table)
        if name is None:
            table.create_index("text", config=_text_index())
        elif table.index_stats(name).num_unindexed_rows >= UNINDEXED_ROWS_LIMIT:
            table.optimize()
        self._index_vectors(table)

    def _index_vectors(self, table) -> None:
        """Build the vector index (:func:`vector_index_config`) once the table holds
        :attr:`index_threshold` rows, and train it again from every row once the table holds
        :data:`VECTOR_INDEX_RETRAIN_GROWTH` times the rows it was trained on (recorded in the
        ``vector`` field's metadata; an index without that record is trained again). The new
        index replaces the old in one commit, so queries never go without one. An index stays
        when rows are removed below the threshold."""
        rows = table.count_rows()
        if rows < self.index_threshold:
            return
        if any(index.columns == ["vector"] for index in table.list_indices()):
            trained = int((table.schema.field("vector").metadata or {})
                          .get(_TRAINED_ROWS_KEY.encode(), 0))
            if trained and rows < trained * VECTOR_INDEX_RETRAIN_GROWTH:
                return
        dimension = table.schema.field("vector").type.list_size
        table.create_index("vector", config=vector_index_config(rows, dimension),
                           name=VECTOR_INDEX_NAME, replace=True)
        table.update_field_metadata({"path": "vector",
                                     "metadata": {_TRAINED_ROWS_KEY: str(rows)}})

    def optimize(self) -> None:
        """Fold every row into the full-text and vector indexes and compact the table's files
        now (e.g. after a batch of writes, before many queries), then build or retrain the
        vector index if due (:meth:`_index_vectors`)."""
        def run() -> None:
            table = self._table()
            if table is not None:
                table.optimize()
                self._index_vectors(table)
        self._commit(run)

    def unindexed_rows(self) -> int:
        """Rows written since the full-text index was last brought up to date (0 without a
        table or an index). LanceDB scores them apart from the indexed rows (their BM25
        statistics are not the index's), so until they are folded in (:meth:`fold_index`) a
        text or hybrid query ranks the two groups on different scales.

        Raises:
            DamagedIndexError: the index's files do not read.
        """
        table = self._table()
        try:
            name = table is not None and _text_index_name(table)
            return table.index_stats(name).num_unindexed_rows if name else 0
        except (RuntimeError, OSError, ValueError) as exc:  # LanceError(IO), a bad magic...
            raise self._damaged(exc) from exc

    def _damaged(self, exc: BaseException) -> DamagedIndexError:
        """The typed error of a LanceDB failure to read the table's files."""
        lines = str(exc).strip().splitlines()
        return DamagedIndexError(
            f"the LanceDB table {self.uri}/{self.table_name}.lance does not read "
            f"({lines[0] if lines else type(exc).__name__}): `extraction-assets repair` "
            "rebuilds it")

    def fold_index(self) -> int:
        """Fold the rows not in the full-text index into it (:meth:`optimize`) when there are
        any: after a batch of writes (an ``ingest`` or ``refresh`` command, a Dagster run),
        so that every row is scored on one scale. Returns how many rows were folded."""
        rows = self.unindexed_rows()
        if rows:
            self.optimize()
        return rows

    def count(self, workbook_hash: str | None = None, kind: str | None = None) -> int:
        """Rows in the table (of one partition when ``workbook_hash`` is given, of one unit
        ``kind`` when given)."""
        table = self._table()
        if table is None:
            return 0
        where = []
        if workbook_hash is not None:
            where.append(f"workbook_hash = '{require_partition_key(workbook_hash)}'")
        if kind is not None:
            where.append(f"kind = '{_require_kind(kind)}'")
        return table.count_rows(" AND ".join(where) or None)

    def unit_ids(self, workbook_hash: str, kind: str | None = None) -> list[str]:
        """The unit ids stored for one partition (of one ``kind`` when given), one per row,
        duplicates kept."""
        table = self._table()
        if table is None:
            return []
        where = f"workbook_hash = '{require_partition_key(workbook_hash)}'"
        if kind is not None:
            where += f" AND kind = '{_require_kind(kind)}'"
        rows = table.search().where(where).select(["unit_id"])
        return rows.limit(None).to_arrow().column("unit_id").to_pylist()

    def _rows_where(self, column: str, keys: Sequence[tuple[str, str]], condition: str = "",
                    limit: int | None = None) -> tuple[set[tuple[str, str]], list[dict]]:
        """The rows (without vectors) whose ``column`` holds a value of these (partition,
        value) keys and that meet the SQL ``condition`` (ending in ``AND``, or empty), at most
        ``limit`` (``None``: all), with the keys as a set.

        Raises:
            ValueError: a partition key is not a sha256 hex key.
            DamagedIndexError: a file of the table does not read.
        """
        wanted = {(require_partition_key(h), v) for h, v in keys}
        table = self._table()
        listed = ", ".join(f"'{v}'" for v in sorted({v for _, v in wanted}) if _ID_RE.match(v))
        if table is None or not listed:
            return wanted, []
        try:
            return wanted, (table.search().where(f"{condition} {column} IN ({listed})")
                            .select([name for name in table.schema.names if name != "vector"])
                            .limit(limit).to_list())
        except (RuntimeError, OSError, ValueError) as exc:  # LanceError(IO), a bad magic...
            raise self._damaged(exc) from exc

    def units(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict]:
        """The rows (without vectors) of these (partition, unit id) keys, by key; keys with no
        row are left out.

        Raises:
            ValueError: a partition key is not a sha256 hex key.
        """
        wanted, rows = self._rows_where("unit_id", keys)
        return {(row["workbook_hash"], row["unit_id"]): row for row in rows
                if (row["workbook_hash"], row["unit_id"]) in wanted}

    def records_of(self, column: str, keys: Sequence[tuple[str, str]], limit: int | None = None
                   ) -> dict[tuple[str, str], list[dict]]:
        """The record units (without vectors) of these (partition, ``column`` value) keys,
        ``column`` being ``chunk_id`` (a chunk's records) or ``block_id`` (a table's), by key,
        each key's in unit id order; keys with none are left out. ``limit``: at most this many
        rows in all, ``None`` for all.

        Raises:
            ValueError: a partition key is not a sha256 hex key, or another ``column``.
        """
        if column not in ("chunk_id", "block_id"):
            raise ValueError(f"records are looked up by chunk_id or block_id, not {column!r}")
        wanted, rows = self._rows_where(column, keys, "kind = 'record' AND", limit)
        out: dict[tuple[str, str], list[dict]] = {}
        for row in sorted(rows, key=lambda r: r["unit_id"]):
            key = (row["workbook_hash"], row[column])
            if key in wanted:
                out.setdefault(key, []).append(row)
        return out

    def tokenizer(self) -> Callable[[str], list[str]]:
        """A function from a text to the full-text index's terms of it (its tokenizer: ICU
        words, lower-cased, ASCII-folded, English stems), on the table as it is now; it gives
        ``[]`` when there is no table. The function raises :class:`DamagedIndexError` when
        the index's files do not read."""
        table = self._table()
        if table is None:
            return lambda text: []

        def terms(text: str) -> list[str]:
            try:
                return [token.text for token in table.tokenize(text, column="text")]
            except (RuntimeError, OSError, ValueError) as exc:  # the index's configuration
                raise self._damaged(exc) from exc

        return terms

    def stored_vectors(self, unit_ids: list[str], model: str) -> dict[str, np.ndarray]:
        """Vectors already stored (in any partition) for these unit ids, by id — reusable when
        the table was made with ``model``, since a unit id is a hash of the unit's text, sheet
        and ranges. Empty when the table is missing or holds another model."""
        table = self._table()
        if table is None or not unit_ids:
            return {}
        if (table.schema.metadata or {}).get(b"embedding_model", b"").decode() != model:
            return {}
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(unit_ids))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            listed = ", ".join("'" + c + "'" for c in batch if _HEX_RE.match(c))
            if not listed:
                continue
            rows = (table.search().where(f"unit_id IN ({listed})").select(["unit_id", "vector"])
                    .limit(None).to_arrow())
            for unit_id, vector in zip(rows.column("unit_id").to_pylist(),
                                       rows.column("vector").to_pylist()):
                found.setdefault(unit_id, np.asarray(vector, dtype=np.float32))
        return found

    def search(self, k: int = 5, *, vector: np.ndarray | None = None, text: str | None = None,
               exclude: set[str] = frozenset(), kinds: Sequence[str] | None = None
               ) -> list[dict]:
        """The ``k`` best units, best first, without vectors, each with a ``score`` (higher is
        better): by cosine similarity to ``vector`` alone (``score`` = 1 - cosine distance), by
        full-text relevance of ``text`` alone (BM25, see :func:`text_query`), or by both
        (LanceDB's hybrid query, its legs' rankings fused by reciprocal rank weighted by
        :data:`HYBRID_WEIGHTS`: ``score`` is the fused score); a blank ``text`` counts as none.
        Units of the partitions in ``exclude`` (sha256 hex keys), and units of other kinds
        than ``kinds`` (when given), are filtered out first. Ties are broken by unit id, so the
        order is deterministic.

        Raises:
            ValueError: neither ``vector`` nor ``text`` is given, a key of ``exclude`` is not
                a sha256 hex partition key, or a kind is not a unit kind.
            DamagedIndexError: a file of the table does not read.
        """
        if vector is None and text is None:
            raise ValueError("search needs a vector, a text or both")
        if text is not None and not text.strip():  # no words: nothing for the full text
            text = None
        table = self._table()
        if table is None or (vector is None and text is None):
            return []
        where = []
        if exclude:
            keys = ", ".join(f"'{require_partition_key(h)}'" for h in sorted(exclude))
            where.append(f"workbook_hash NOT IN ({keys})")
        if kinds is not None:
            where.append(f"kind IN ({', '.join(repr(_require_kind(k)) for k in kinds)})")
        try:  # the full-text index is read as the query is built (its tokenizer) too
            if vector is not None and text is not None:
                query = (table.search(query_type="hybrid").vector(vector.astype(np.float32))
                         .text(text_query(table, text)).distance_type("cosine")
                         .rerank(_tied_rank_fusion()()))
                limit, score = max(k, HYBRID_CANDIDATES), "_relevance_score"
            elif vector is not None:
                query = table.search(vector.astype(np.float32)).distance_type("cosine")
                limit, score = k, "_distance"
            else:
                query = table.search(text_query(table, text), query_type="fts")
                limit, score = k, "_score"
            if where:
                query = query.where(" AND ".join(where), prefilter=True)
            if vector is not None:  # through the vector index, when there is one
                query = (query.minimum_nprobes(VECTOR_NPROBES).maximum_nprobes(0)
                         .refine_factor(VECTOR_REFINE_FACTOR))
            found = query.limit(limit).to_list()
        except (RuntimeError, OSError, ValueError) as exc:  # LanceError(IO), a bad magic...
            raise self._damaged(exc) from exc
        hits = []
        for hit in found:
            value = float(hit[score])
            hit = {key: v for key, v in hit.items() if key != "vector" and not key.startswith("_")}
            hit["score"] = 1 - value if score == "_distance" else value
            hits.append(hit)
        hits.sort(key=lambda h: (-h["score"], h["unit_id"], h["workbook_hash"]))
        return hits[:k]


def fused_scores(vector_results: pa.Table | None, fts_results: pa.Table | None
                 ) -> dict[int, float]:
    """The hybrid score of each row (by ``_rowid``) of a vector and a full-text result:
    weighted reciprocal ranks (:data:`HYBRID_WEIGHTS`; LanceDB's ``MRRReranker``), rows of equal
    ``_distance`` or ``_score`` sharing their first rank (ranks 1, 2, 2, 4), so that the
    order in which LanceDB returns tied rows changes no score: the same query gives the same
    ranking, run after run (twin units of two file versions score alike)."""
    out: dict[int, float] = defaultdict(float)
    for results, column, weight, higher_first in (
            (vector_results, "_distance", HYBRID_WEIGHTS[0], False),
            (fts_results, "_score", HYBRID_WEIGHTS[1], True)):
        if results is None or not results.num_rows:
            continue
        pairs = sorted(zip(results[column].to_pylist(), results["_rowid"].to_pylist()),
                       key=lambda pair: -pair[0] if higher_first else pair[0])
        rank, previous = 0, None
        for position, (score, row) in enumerate(pairs, start=1):
            if score != previous:
                rank, previous = position, score
            out[row] += weight / rank
    return out


@functools.cache
def _tied_rank_fusion():
    """The LanceDB reranker class of hybrid queries: :func:`fused_scores` as
    ``_relevance_score`` (made on first use: LanceDB is imported lazily)."""
    from lancedb.rerankers import Reranker

    class TiedRankFusion(Reranker):
        """Weighted reciprocal rank fusion, tied rows sharing a rank (:func:`fused_scores`)."""

        def rerank_hybrid(self, query: str, vector_results: pa.Table,
                          fts_results: pa.Table) -> pa.Table:
            combined = self.merge_results(vector_results, fts_results)
            scores = fused_scores(vector_results, fts_results)
            relevance = pa.array([scores[row] for row in combined["_rowid"].to_pylist()],
                                 pa.float32())
            return (combined.append_column("_relevance_score", relevance)
                    .sort_by([("_relevance_score", "descending")]))

    return TiedRankFusion


def _require_kind(kind: str) -> str:
    """``kind`` if it is a unit kind (``chunk`` or ``record``).

    Raises:
        ValueError: any other value (it goes into a LanceDB filter).
    """
    if kind not in UNIT_KINDS:
        raise ValueError(f"unknown unit kind: {kind!r}")
    return kind
