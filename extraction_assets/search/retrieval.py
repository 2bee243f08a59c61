"""Retrieval units and search: what is indexed in LanceDB, and the queries over it.

A partition's **retrieval units** are

* its Markdown chunks (``kind = "chunk"``), as the ``chunks`` table holds them;
* one unit per row of the ``record_units`` table (a record but group label rows and label-only
  rows), whose text ``rendered_chunks`` built with the records
  (:mod:`~extraction_assets.core.render.units`): ``Sheet > Heading > Table title — Row > path;
  Header: value; Header: value``. It cites the record's sheet, A1 range and heading path, and
  ``chunk_id`` names the chunk that holds its row.

Each unit is one LanceDB row, embedded and in the full-text index (see
:mod:`extraction_assets.search.vectors`); the rows are built by
:func:`~extraction_assets.pipeline.codecs.retrieval_units`. A chunk's ``unit_id`` is its chunk
id, a record's the sha256 of its text, sheet and A1 range
(:func:`~extraction_assets.pipeline.codecs.record_unit_id`), so an unchanged unit keeps its id
(and its stored vector) across file versions.

:class:`Searcher` opens the embedder and the table once and answers queries in ``hybrid``
(default), ``vector`` or ``text`` mode, returning chunks ranked by their best unit, each with
the row that matched; the ``search`` command and the retrieval evaluation
(:mod:`tools.retrieval_eval`) use it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from extraction_assets.search.ranking import Terms, best_cell, best_row
from extraction_assets.search.vectors import MODES, VectorStore
from extraction_assets.store.storage import DataStore

#: units a query looks at, at least (grouped into the chunks it returns)
CANDIDATES = 50
#: and at least this many per chunk asked for
UNITS_PER_RESULT = 5
#: most units a query looks at when the rows of a few chunks fill the first candidates
MAX_CANDIDATES = 20_000
#: most records of the tables found a query reads to choose each table's answering row
TABLE_RECORDS_LIMIT = 20_000


class Indexed(NamedTuple):
    """What :func:`index_units` stored: ``rows`` in LanceDB, of which ``embedded`` were sent
    to the embedder, ``reused`` kept a vector embedded before and ``derived`` got a vector made
    of other units' vectors; the embedded units' ``embedded_tokens`` (their ``n_tokens``) and
    the ``embed_seconds`` the embedder took for them (wall clock)."""

    rows: int
    embedded: int
    reused: int
    derived: int
    embedded_tokens: int
    embed_seconds: float


def index_units(vector_store: VectorStore, workbook_hash: str, units: list[dict],
                embedder) -> Indexed:
    """Embed ``units`` and replace the partition's rows of ``vector_store`` with them. Unit ids
    already embedded with the same model (an unchanged unit of an earlier file version) reuse
    their stored vector; the others are sent to ``embedder``, in one call, but a chunk marked
    ``from_records`` (:func:`~extraction_assets.pipeline.codecs.retrieval_units`), whose
    vector is the mean of its record units' vectors (those whose ``chunk_id`` it is), made
    unit-length (summed in float64 in the units' order: the same units give the same bytes).

    Raises:
        VectorStoreError: the table holds vectors of another model or dimension.
    """
    if not units:
        return Indexed(vector_store.replace_partition(workbook_hash, [], None,
                                                      embedder.model_name), 0, 0, 0, 0, 0.0)
    derived = [u for u in units if u.get("from_records")]
    own = [u for u in units if not u.get("from_records")]
    stored = vector_store.stored_vectors([u["unit_id"] for u in own], embedder.model_name)
    todo = {u["unit_id"]: u for u in own if u["unit_id"] not in stored}
    start = time.perf_counter()
    if todo:
        for key, vector in zip(todo, embedder.embed([u["text"] for u in todo.values()])):
            stored[key] = vector
    seconds = time.perf_counter() - start
    members: dict[str, list[str]] = {}
    for u in own:
        if u["kind"] == "record" and u["chunk_id"]:
            members.setdefault(u["chunk_id"], []).append(u["unit_id"])
    for u in derived:
        mean = np.sum([stored[m] for m in members[u["unit_id"]]], axis=0, dtype=np.float64)
        stored[u["unit_id"]] = (mean / (np.linalg.norm(mean) or 1.0)).astype(np.float32)
    vectors = np.stack([stored[u["unit_id"]] for u in units])
    n = vector_store.replace_partition(workbook_hash, units, vectors, embedder.model_name)
    return Indexed(n, len(todo), len(own) - len(todo), len(derived),
                   sum(u["n_tokens"] for u in todo.values()), seconds)


def indexer(vector_store: VectorStore, embedder) -> Callable[[str, list[dict]], Indexed]:
    """:func:`index_units` bound to ``vector_store`` and ``embedder``: the ``index_units`` of
    the ``chunk_embeddings`` stage (:class:`~extraction_assets.pipeline.RunSettings`)."""
    def index(workbook_hash: str, units: list[dict]) -> Indexed:
        return index_units(vector_store, workbook_hash, units, embedder)
    return index


def _load_in_background(embedder) -> None:
    """Start loading ``embedder``'s model in a thread, when it has one to load (its ``load``
    method: the local model, ~1 s), so that the load overlaps what the caller does next; the
    first query's :meth:`~extraction_assets.search.embedding.LocalEmbedder.embed` waits for it.
    A failed load is left for that query to raise again and report. The thread is not a
    daemon: an interpreter that exits while SentencePiece reads its model aborts, so an exit
    (e.g. after an error opening the table) waits for the load to end."""
    load = getattr(embedder, "load", None)
    if load is None:
        return

    def run() -> None:
        with contextlib.suppress(Exception):  # raised again, and reported, by the first query
            load()

    threading.Thread(target=run, name="model-load").start()


class Searcher:
    """Queries over a data dir's retrieval units, with the embedder and the LanceDB table
    opened once (the model starts loading in a thread at creation, which the first query
    waits for; later queries take tens of milliseconds).

    A query ranks the units (:meth:`VectorStore.search`); the hits are then grouped by the
    chunk they belong to (a record's chunk holds its row), and each result is that chunk,
    ranked by its best unit: a table is found by the row that matches best, and the answer
    comes with its context (the chunk's rows, header and heading path).

    Args:
        data_dir: the data dir (``<data_dir>/lancedb`` holds the units).
        embedder: what embeds the queries (an :class:`~extraction_assets.search.embedding.Embedder`;
            ``None`` for ``text`` queries only).
        all_versions: also search the earlier versions of each file path (by default only
            the latest content of each path is searched, as of the Searcher's creation).

    Example::

        from extraction_assets.search.embedding import LocalEmbedder
        from extraction_assets.search.retrieval import Searcher

        searcher = Searcher("data", LocalEmbedder())
        for hit in searcher.search("Amount of Item-96 in Summary of accounts", k=3):
            print(hit["score"], hit["filename"], hit["sheet"], hit["a1_ranges"], hit["record"])
    """

    def __init__(self, data_dir: str | Path, embedder, all_versions: bool = False):
        store = DataStore(data_dir)
        self.embedder = embedder
        _load_in_background(embedder)  # while LanceDB is imported and the versions read
        self.vectors = VectorStore(store.lancedb_uri)
        versions = store.versions()
        self.exclude = set() if all_versions else versions.superseded
        #: hash -> the paths whose latest version it is (a hit is named by one of them)
        self.latest = versions.latest

    def search(self, query: str, k: int = 5, mode: str = "hybrid",
               kinds: Sequence[str] | None = None) -> list[dict]:
        """The ``k`` best chunks for ``query``, best first, as dicts: the chunk's ``filename``,
        ``sheet``, ``a1_ranges``, ``heading_path``, ``chunk_id``, ``workbook_hash`` and
        ``text``; ``score`` and ``kind`` (``chunk`` or ``record``) of its best unit (of
        ``kinds`` only, when given); ``record``, the row of the chunk that answers the query
        (``{"a1_range", "text", "row_path"}``, see :func:`~extraction_assets.search.ranking.best_row`)
        or ``None`` (a chunk of no table rows, or record units not searched); ``cell``, the
        value cell of that row the query names by its column header (``{"ref", "header",
        "value"}``, see :func:`~extraction_assets.search.ranking.best_cell`) or ``None``; and
        ``mode``, the one asked for. Chunks are ranked by their best unit; where a table first
        appears, the chunk holding its best row comes first (see :meth:`_results`).

        Raises:
            ValueError: ``mode`` is not one of ``hybrid``, ``vector``, ``text``.
            EmbeddingError: the embedder failed on the query.
        """
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
        vector = None if mode == "text" else self.embedder.embed([query])[0]
        wanted = max(CANDIDATES, UNITS_PER_RESULT * k)
        while True:  # the rows of one table can fill the candidates: ask for more until k
            hits = self.vectors.search(wanted, vector=vector,
                                       text=None if mode == "vector" else query,
                                       exclude=self.exclude, kinds=kinds)
            groups: dict[tuple[str, str], list[dict]] = {}  # in the order of their best unit
            for hit in hits:  # the first k chunks give k results or more
                key = (hit["workbook_hash"], hit["chunk_id"] or hit["unit_id"])
                if key in groups or len(groups) < k:
                    groups.setdefault(key, []).append(hit)
            if len(groups) >= k or len(hits) < wanted or wanted >= MAX_CANDIDATES:
                break
            wanted = min(wanted * 4, MAX_CANDIDATES)
        return self._results(query, mode, hits, groups, k, kinds)

    def _results(self, query: str, mode: str, hits: list[dict],
                 groups: dict[tuple[str, str], list[dict]], k: int,
                 kinds: Sequence[str] | None) -> list[dict]:
        """The first ``k`` results of the ranked ``hits`` grouped by chunk (``groups``, in
        the order of their best unit), each chunk once: where a table first appears, the
        chunk holding the table's best row (:func:`~extraction_assets.search.ranking.best_row`
        over all its records, at most :data:`TABLE_RECORDS_LIMIT` of them read) comes first,
        then the group's own chunk; every chunk answers with the best row of its own records
        and the cell of that row the query names
        (:func:`~extraction_assets.search.ranking.best_cell`)."""
        with_records = kinds is None or "record" in kinds
        of_chunk = self.vectors.records_of("chunk_id", list(groups)) if with_records else {}
        table_of = {}
        for key, group in groups.items():
            record = next((h for h in group if h["kind"] == "record"), None) \
                or next(iter(of_chunk.get(key, ())), None)
            table_of[key] = record and (key[0], record["block_id"])
        of_table = self.vectors.records_of(
            "block_id", list(dict.fromkeys(t for t in table_of.values() if t)),
            limit=TABLE_RECORDS_LIMIT) if with_records else {}
        terms = Terms(self.vectors.tokenizer())
        asked = terms(query)
        ranked = {h["unit_id"]: i for i, h in enumerate(hits) if h["kind"] == "record"}
        answers, seen = [], set()  # (chunk key, its group's best unit, record)
        for key, group in groups.items():
            table = table_of[key]
            own = of_chunk.get(key) or [h for h in group if h["kind"] == "record"]
            if table is not None and table not in seen and of_table.get(table):
                record = best_row(asked, of_table[table], terms, ranked, query)
                if record and record["chunk_id"] and record["chunk_id"] != key[1]:
                    # the table's best row, in its chunk, then this chunk as it ranked
                    answers.append(((key[0], record["chunk_id"]), group[0], record))
            seen.add(table)
            answers.append((key, group[0], best_row(asked, own, terms, ranked, query)))
        placed: set[tuple[str, str]] = set()  # a chunk answers once, at its first place
        chosen = [a for a in answers if not (a[0] in placed or placed.add(a[0]))][:k]
        held = {place: next((h for h in groups.get(place, ()) if h["unit_id"] == place[1]),
                            None) for place, *_ in chosen}
        held.update(self.vectors.units([p for p, hit in held.items() if hit is None]))
        results = []
        for place, best, record in chosen:
            chunk = held.get(place) or best  # a record no chunk holds: itself
            results.append({
                "score": round(best["score"], 4), "filename": self._filename(chunk),
                "sheet": chunk["sheet_name"], "a1_ranges": list(chunk["a1_ranges"]),
                "heading_path": list(chunk["heading_path"]), "chunk_id": chunk["chunk_id"],
                "workbook_hash": chunk["workbook_hash"], "text": chunk["text"], "mode": mode,
                "kind": best["kind"], "record": record and {
                    "a1_range": record["a1_ranges"][0], "text": record["text"],
                    "row_path": list(record["row_path"])},
                "cell": record and best_cell(asked, record, terms, query),
            })
        return results

    def _filename(self, unit: dict) -> str:
        """The file name a unit is shown under: the one it was embedded with, unless its
        content is no longer that path's latest version but is another path's (the same bytes
        ingested under two names, then one of them changed): then that path's name. Content
        that is no path's latest (``all_versions``) keeps its name."""
        paths = self.latest.get(unit["workbook_hash"])
        if not paths or unit.get("source_path") in paths:
            return unit["filename"]
        return Path(paths[0]).name
