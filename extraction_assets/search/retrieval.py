"""Retrieval units and search: what is indexed in LanceDB, and the queries over it.

A partition's **retrieval units** are

* its Markdown chunks (``kind = "chunk"``), as the ``chunks`` table holds them;
* one unit per record (``kind = "record"``: a table row, a form) but group label rows (their
  labels lead the row paths of the rows under them), whose text names where the row stands
  and what each value is: ``Sheet > Heading > Table title — Row > path; Header: value;
  Header: value``. It cites the record's sheet, A1 range and heading path, and ``chunk_id``
  names the chunk that holds its row.

Each unit is one LanceDB row, embedded and in the full-text index (see
:mod:`extraction_assets.search.vectors`). A chunk's ``unit_id`` is its chunk id, a record's the sha256
of its text, sheet and A1 range (:func:`record_unit_id`), so an unchanged unit keeps its id (and
its stored vector) across file versions.

:class:`Searcher` opens the embedder and the table once and answers queries in ``hybrid``
(default), ``vector`` or ``text`` mode, returning chunks ranked by their best unit, each with
the row that matched; the ``search`` command and the retrieval evaluation
(:mod:`tools.retrieval_eval`) use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from extraction_assets.core.a1 import cell_ref
from extraction_assets.core.blocks import BlockKind
from extraction_assets.search.ranking import Terms, best_cell, best_row
from extraction_assets.search.vectors import MODES, VectorStore
from extraction_assets.store.storage import DataStore

#: between a record's place (heading path, title) and its values
PLACE_SEPARATOR = " — "
#: units a query looks at, at least (grouped into the chunks it returns)
CANDIDATES = 50
#: and at least this many per chunk asked for
UNITS_PER_RESULT = 5
#: most units a query looks at when the rows of a few chunks fill the first candidates
MAX_CANDIDATES = 20_000
#: most records of the tables found a query reads to choose each table's answering row
TABLE_RECORDS_LIMIT = 20_000


def record_unit_id(text: str, sheet_name: str, a1_range: str) -> str:
    """The unit id of a record: sha256 hex of ``record``, its retrieval text, sheet and A1
    range (never a chunk's id, which hashes the text, sheet and ranges alone)."""
    return hashlib.sha256("\x1f".join(["record", text, sheet_name, a1_range]).encode()).hexdigest()


def record_text(place: Sequence[str], values: dict, row_path: Sequence[str] = ()) -> str:
    """A record's retrieval text: its ``place`` (heading path, then the table title when the
    path does not end with it) joined by ``" > "``, then its ``row_path`` (row-group labels and
    row label, joined by ``" > "``) and the ``Header: value`` pairs of its non-empty
    ``values`` (header path -> display text; :func:`record_fields` leaves the row's own labels
    out of them, so a label is said once, in the path), all joined by ``"; "``."""
    values = "; ".join(part for part in (
        " > ".join(row_path), *(f"{header}: {value}" for header, value in values.items()
                                if str(value).strip())) if part)
    return PLACE_SEPARATOR.join(part for part in (" > ".join(place), values) if part)


def _key_refs(keys: list[str], columns: list[dict], row: int, form: bool) -> list[str]:
    """The A1 reference of each record key's cell, from its block's ``columns`` (its
    ``block_columns`` rows in ``position`` order: a record has one key per column, left to
    right): the column's cell in the record's ``row`` (1-based), or, in a ``form`` (a
    key-value block: one record, one field a row), the field's own cell (the column's
    ``row``); ``""`` for a group column (the label of the group row above, no cell of the
    row's own) and for every key when the counts differ."""
    if len(keys) != len(columns):
        return [""] * len(keys)
    return ["" if c["group_label"] else cell_ref(c["row"] if form else row, c["col"])
            for c in columns]


def record_fields(record: dict, columns: list[dict], form: bool = False
                  ) -> tuple[list[str], list[dict]] | None:
    """A record's row path and its value cells (``{"ref", "header", "value"}``: A1 reference,
    header path, display text; non-empty values only, the row's own labels left out), or
    ``None`` for a label-only row (a row with no value but its labels: its words are in the
    row paths of the rows under it). ``record`` is a ``records`` row, ``columns`` its block's
    ``block_columns`` rows in ``position`` order; ``form``: the block is a key-value block
    (see :func:`_key_refs`)."""
    path = list(record.get("row_path") or ())
    labels = {" ".join(label.split()) for label in path}
    display = json.loads(record["display"])
    cells = []
    for (header, value), ref in zip(display.items(),
                                    _key_refs(list(display), columns, record["row"], form)):
        text = str(value)
        if not text.strip() or " ".join(text.split()) in labels:
            continue
        cells.append({"ref": ref, "header": header, "value": text})
    return (path, cells) if cells else None


def retrieval_units(workbook_hash: str, filename: str, source_path: str, chunks: list[dict],
                    records: list[dict], blocks: list[dict], block_columns: list[dict],
                    count_tokens_batch: Callable[[Sequence[str]], list[int]]) -> list[dict]:
    """The rows of the LanceDB ``units`` table for one partition (without vectors): its
    ``chunks`` as they are, then one unit per record of ``records`` that holds a value
    besides its labels (:func:`record_fields`; group label rows and other label-only rows
    are no units), each placed by its block of ``blocks`` (heading path, title), with its
    ``row_path`` and value ``cells`` (A1 references by ``block_columns``). Rows of the
    ``chunks``, ``records``, ``blocks`` and ``block_columns`` tables as dicts;
    ``count_tokens_batch`` counts the record texts' tokens."""
    units = [dict(workbook_hash=workbook_hash, unit_id=c["chunk_id"],
                  kind="chunk", chunk_id=c["chunk_id"], filename=filename,
                  source_path=source_path, sheet_name=c["sheet_name"],
                  a1_ranges=list(c["a1_ranges"]), heading_path=list(c["heading_path"]),
                  block_id="", title="", row_path=[], cells=[], text=c["text"],
                  n_tokens=c["n_tokens"])
             for c in chunks]
    by_block = {b["block_id"]: b for b in blocks}
    columns_of: dict[str, list[dict]] = {}
    for column in sorted(block_columns, key=lambda c: (c["block_id"], c["position"])):
        columns_of.setdefault(column["block_id"], []).append(column)
    holder = {}  # (block id, row) -> the first chunk holding it; block id -> its first chunk
    for c in chunks:
        for block_id in c["block_ids"]:
            holder.setdefault(block_id, c["chunk_id"])
            for row in c["rows"]:
                holder.setdefault((block_id, row), c["chunk_id"])
    kept, texts = [], []
    for r in records:
        block = by_block[r["block_id"]]
        fields = None if r["role"] == "group" else record_fields(
            r, columns_of.get(r["block_id"], []), form=block["kind"] == BlockKind.KEY_VALUE)
        if fields is None:
            continue
        place = list(block["heading_path"])
        if block["title"] and (not place or place[-1] != block["title"]):
            place.append(block["title"])
        kept.append((r, *fields))
        texts.append(record_text(place, {c["header"]: c["value"] for c in fields[1]},
                                 fields[0]))
    counts = count_tokens_batch(texts) if texts else []
    for (r, path, cells), text, n_tokens in zip(kept, texts, counts):
        units.append(dict(
            workbook_hash=workbook_hash,
            unit_id=record_unit_id(text, r["sheet_name"], r["a1_range"]), kind="record",
            chunk_id=holder.get((r["block_id"], r["row"]), holder.get(r["block_id"])),
            filename=filename, source_path=source_path, sheet_name=r["sheet_name"],
            a1_ranges=[r["a1_range"]], heading_path=list(by_block[r["block_id"]]["heading_path"]),
            block_id=r["block_id"], title=by_block[r["block_id"]]["title"] or "",
            row_path=path, cells=cells, text=text, n_tokens=n_tokens))
    return units


class Indexed(NamedTuple):
    """What :func:`index_units` stored: ``rows`` in LanceDB, of which ``reused`` kept a vector
    embedded before; the others' ``embedded_tokens`` (their ``n_tokens``) and the
    ``embed_seconds`` the embedder took for them (wall clock)."""

    rows: int
    reused: int
    embedded_tokens: int
    embed_seconds: float


def index_units(vector_store: VectorStore, workbook_hash: str, units: list[dict],
                embedder) -> Indexed:
    """Embed ``units`` and replace the partition's rows of ``vector_store`` with them. Unit ids
    already embedded with the same model (an unchanged unit of an earlier file version) reuse
    their stored vector; only the others are sent to ``embedder``, in one call.

    Raises:
        VectorStoreError: the table holds vectors of another model or dimension.
    """
    if not units:
        return Indexed(vector_store.replace_partition(workbook_hash, [], None,
                                                      embedder.model_name), 0, 0, 0.0)
    stored = vector_store.stored_vectors([u["unit_id"] for u in units], embedder.model_name)
    todo = {u["unit_id"]: u for u in units if u["unit_id"] not in stored}
    start = time.perf_counter()
    if todo:
        for key, vector in zip(todo, embedder.embed([u["text"] for u in todo.values()])):
            stored[key] = vector
    seconds = time.perf_counter() - start
    vectors = np.stack([stored[u["unit_id"]] for u in units])
    n = vector_store.replace_partition(workbook_hash, units, vectors, embedder.model_name)
    return Indexed(n, len(units) - len(todo), sum(u["n_tokens"] for u in todo.values()),
                   seconds)


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
