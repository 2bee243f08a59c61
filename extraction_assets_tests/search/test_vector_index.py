"""The vector index of the LanceDB ``units`` table: built past the store's threshold, trained
again as the table grows, and never missing a unit (stored before or after it), on real
tables with small vectors and a threshold lowered through ``VectorStore(index_threshold=)``."""

from __future__ import annotations

import hashlib

import numpy as np

from extraction_assets.search.vectors import VECTOR_INDEX_NAME, VectorStore

DIM = 64


def _key(*parts) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def _vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    """``n`` unit vectors (float32) around 30 fixed centres: neighbours a little apart, as
    embeddings are, not the equidistant points of uniformly random directions."""
    centres = np.random.default_rng(0).standard_normal((30, dim))
    rng = np.random.default_rng(seed)
    vectors = centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _write(store: VectorStore, partition: int, n: int,
           dim: int = DIM) -> tuple[list[dict], np.ndarray]:
    """``n`` units with short texts as partition ``partition``."""
    vectors = _vectors(n, partition + 1, dim)
    rows = [{"workbook_hash": _key("partition", partition), "unit_id": _key(partition, i),
             "kind": "chunk" if i % 10 == 0 else "record", "chunk_id": _key(partition, i),
             "filename": f"book{partition}.xlsx", "source_path": f"/in/book{partition}.xlsx",
             "sheet_name": "Sheet1", "a1_ranges": [f"A{i + 1}"], "heading_path": [],
             "block_id": "", "title": "", "row_path": [], "cells": [],
             "text": f"row {i} of book {partition} code{partition}x{i}", "n_tokens": 6}
            for i in range(n)]
    store.replace_partition(rows[0]["workbook_hash"], rows, vectors, "test-model")
    return rows, vectors


def _vector_index(store: VectorStore):
    """The table's index of the ``vector`` column, or ``None``."""
    return next((index for index in store._table().list_indices()
                 if index.columns == ["vector"]), None)


def _finds_itself(store: VectorStore, rows: list[dict], vectors: np.ndarray) -> bool:
    """Every unit's own vector ranks it first, alone and with its text (hybrid)."""
    for row, vector in zip(rows, vectors):
        if store.search(1, vector=vector)[0]["unit_id"] != row["unit_id"]:
            return False
        if store.search(1, vector=vector, text=row["text"])[0]["unit_id"] != row["unit_id"]:
            return False
    return True


def test_a_table_crossing_the_threshold_gets_a_vector_index_and_finds_every_unit(tmp_path):
    below = VectorStore(tmp_path / "lancedb")  # the default threshold: 100,000 rows
    first, first_vectors = _write(below, 0, 1500)
    second, second_vectors = _write(below, 1, 1499)
    below.optimize()
    assert [index.index_type for index in below._table().list_indices()] == ["FTS"]
    store = VectorStore(tmp_path / "lancedb", index_threshold=3000)
    store.optimize()
    assert store.count() == 2999 and _vector_index(store) is None  # exact scans only
    last, last_vectors = _write(store, 2, 1)
    index = _vector_index(store)
    assert index is not None and index.name == VECTOR_INDEX_NAME and index.index_type == "IvfRq"
    stats = store._table().index_stats(VECTOR_INDEX_NAME)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (3000, 0)
    assert _finds_itself(store, first[::15] + last, np.vstack([first_vectors[::15],
                                                              last_vectors]))
    # recall@10 against the exact ranking (the index's probes and exact re-ranking)
    ids = np.array([row["unit_id"] for row in first + second + last])
    stored = np.vstack([first_vectors, second_vectors, last_vectors])
    recall = [len({hit["unit_id"] for hit in store.search(10, vector=query)}
                  & set(ids[np.argsort(-(stored @ query))[:10]])) / 10
              for query in _vectors(20, 99)]
    assert np.mean(recall) >= 0.95
    # a filtered query through the index still fills k
    hits = store.search(20, vector=first_vectors[3], kinds=["chunk"])
    assert len(hits) == 20 and {hit["kind"] for hit in hits} == {"chunk"}


def test_units_written_after_the_index_are_found_then_folded_into_it(tmp_path):
    store = VectorStore(tmp_path / "lancedb", index_threshold=3000)
    _write(store, 0, 3000)
    rows, vectors = _write(store, 1, 500)
    stats = store._table().index_stats(VECTOR_INDEX_NAME)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (3000, 500)
    assert _finds_itself(store, rows[::10], vectors[::10])  # scanned beside the index
    store.optimize()
    stats = store._table().index_stats(VECTOR_INDEX_NAME)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (3500, 0)
    assert _finds_itself(store, rows[::10], vectors[::10])


def test_the_index_is_trained_again_once_the_table_has_doubled(tmp_path):
    store = VectorStore(tmp_path / "lancedb", index_threshold=2000)
    _write(store, 0, 2000)
    _write(store, 1, 1999)  # folded in later, by optimize(): the index as trained on 2,000
    stats = store._table().index_stats(VECTOR_INDEX_NAME)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (2000, 1999)
    rows, vectors = _write(store, 2, 1)  # 4,000 rows: trained again, on all of them
    stats = store._table().index_stats(VECTOR_INDEX_NAME)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (4000, 0)
    assert _finds_itself(store, rows, vectors)


def test_vectors_rabitq_cannot_code_get_a_scalar_quantized_index(tmp_path):
    store = VectorStore(tmp_path / "lancedb", index_threshold=1000)
    rows, vectors = _write(store, 0, 1000, dim=36)  # not a multiple of 8
    assert _vector_index(store).index_type == "IvfSq"
    assert _finds_itself(store, rows[::20], vectors[::20])
