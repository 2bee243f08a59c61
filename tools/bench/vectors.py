"""Vector search at corpus scale (issue 33): ``python -m tools.bench.vectors [--units N]``.

It synthesizes ``--units`` retrieval units (:class:`SyntheticUnits`) and writes them into a new
LanceDB table through :class:`~extraction_assets.search.vectors.VectorStore` as ingest does:
``--partitions`` partitions of about equal size, one ``replace_partition`` each (a
``merge_insert`` commit; the full-text index folded in every 10,000 rows). It keeps
``--fresh`` units aside, then measures, each phase's seconds and peak RSS taken as
:func:`~tools.bench.measure.timed` does (VmHWM reset before it):

1. **brute force**: the table without a vector index (the store's threshold above its rows),
   after ``optimize()``: ``--queries`` hybrid and vector-only queries as ``Searcher`` asks
   them (k = 50), warm (one query first, untimed);
2. **build**: ``optimize()`` of a store whose threshold the table has crossed builds the
   vector index (what a write does when the table crosses
   :data:`~extraction_assets.search.vectors.VECTOR_INDEX_THRESHOLD`);
3. **indexed**: the same queries through the index; recall@10 of vector queries with k = 10
   against the exact search (LanceDB's ``bypass_vector_index()``), and how many of the brute
   force hybrid top 10 the indexed hybrid top 10 keeps;
4. **fresh**: the units kept aside, written after the index (fewer than the fold limit: they
   are not in the index, LanceDB scans them): recall again, and whether fresh units (a sample
   of ``--queries``) are each found first by their own vector;
5. **folded**: ``optimize()`` folds them into the index; latency and recall again.

The figures of issue 33's targets (at 1M units: a warm hybrid query within 1 s, 95th
percentile, on 2 cores; recall@10 >= 0.95) are checked; exit code 1 when one is missed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from itertools import product
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from extraction_assets.search.embedding import LOCAL_DIMENSION
from extraction_assets.search.retrieval import CANDIDATES
from extraction_assets.search.vectors import (
    TABLE_NAME,
    VECTOR_INDEX_NAME,
    VECTOR_INDEX_THRESHOLD,
    VectorStore,
)
from tools.bench.measure import timed

#: the embedding dimension of the local model
DIMENSION = LOCAL_DIMENSION
#: units asked for by each query, as ``Searcher`` asks first
K = CANDIDATES
#: the recall measured: of the first 10
RECALL_AT = 10
#: what the table records as the embedding model of the synthetic vectors
MODEL = "synthetic-clusters"
#: issue 33: at 1M units, a warm hybrid query within 1 s (95th percentile) and recall@10
TARGET_UNITS, TARGET_HYBRID_MS, TARGET_RECALL = 1_000_000, 1000.0, 0.95

_SYLLABLES = ("ka", "ri", "to", "na", "me", "su", "lo", "pa", "ve", "di", "mo", "ku", "sa",
              "te", "ni", "ro", "ga", "be", "zu", "fi", "ha", "jo", "le", "wa")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _key(*parts) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


class SyntheticUnits:
    """Deterministic retrieval units (rows of the ``units`` table and their vectors) shaped like
    record units of spreadsheet tables.

    The units fall in ``units // per_cluster`` clusters ("tables") of Zipf-distributed sizes.
    The clusters' centres are a shared direction plus a point of a 48-dimensional space, drawn
    around 128 topics close enough to overlap; a cluster's units vary around its centre in 24
    other dimensions, plus a little noise in all. At 200,000 units two units have a median
    cosine of 0.28, a unit's nearest neighbour 0.79 and its 10th 0.73 (the local model's units
    of ingested workbooks: 0.21-0.41, 0.88-0.98 and 0.76-0.91), and 14 % of a query's 10
    nearest units are in other clusters (19 % at 1M): a flatter neighbourhood than the model's
    near-duplicate rows, so harder for an index. A unit's text is ``Sheet > Title — Header:
    key; Header: value; ...`` with the cluster's sheet, title and four headers, and a row key
    (``word-number``) and values drawn from a Zipf vocabulary of 14,400 made-up words, so that
    the full-text index has long and short posting lists.

    Args:
        units: the number of units the clusters are made for.
        dim: the dimension of the vectors (at least 72).
        seed: everything follows from it (partitions and queries independently of each other).
        per_cluster: mean units per cluster.

    Raises:
        ValueError: ``dim`` below 72.
    """

    def __init__(self, units: int, dim: int = DIMENSION, seed: int = 0, per_cluster: int = 200):
        if dim < 48 + 24:
            raise ValueError(f"synthetic units need at least 72 dimensions, not {dim}")
        rng = np.random.default_rng([seed, 0])
        self.dim, self.seed, self.rank = dim, seed, 24
        clusters = max(1, units // per_cluster)
        common = _unit(rng.standard_normal(dim))
        # orthonormal directions: 48 where the centres lie, 24 where units vary around them
        basis = np.linalg.qr(rng.standard_normal((dim, 48 + self.rank)))[0].T
        topics = 0.4 * rng.standard_normal((128, 48)) / np.sqrt(48)
        place = (topics[rng.integers(0, 128, clusters)]
                 + 0.3 * rng.standard_normal((clusters, 48)) / np.sqrt(48))
        self.centres = 0.5 * common + place @ basis[:48]
        self.basis = basis[48:]
        weights = 1.0 / np.arange(1, clusters + 1) ** 0.7
        self.cluster_p = weights / weights.sum()
        self.words = np.array(["".join(s) for n in (2, 3) for s in product(_SYLLABLES, repeat=n)])
        rng.shuffle(self.words)
        word_weights = 1.0 / np.arange(1, len(self.words) + 1)
        self.word_p = word_weights / word_weights.sum()
        # per cluster: sheet, two title words, four headers (indices into the vocabulary)
        self.labels = rng.choice(len(self.words), (clusters, 7), p=self.word_p)

    def _draw(self, rng: np.random.Generator, n: int):
        """``n`` units' clusters, vectors (n x dim float32, unit length), keys and values."""
        cluster = rng.choice(len(self.centres), n, p=self.cluster_p)
        spread = rng.standard_normal((n, self.rank)) / np.sqrt(self.rank)
        noise = rng.standard_normal((n, self.dim)) / np.sqrt(self.dim)
        vectors = _unit(self.centres[cluster] + 0.6 * (spread @ self.basis) + 0.2 * noise)
        keys = [f"{w}-{k}" for w, k in zip(self.words[rng.choice(len(self.words), n,
                                                                   p=self.word_p)],
                                            rng.integers(1, 1000, n))]
        values = self.words[rng.choice(len(self.words), (n, 3), p=self.word_p)]
        numbers = rng.integers(0, 100_000, (n, 3))
        use_number = rng.random((n, 3)) < 0.5
        return cluster, vectors.astype(np.float32), keys, values, numbers, use_number

    def _text(self, cluster: int, key: str, values, numbers, use_number) -> str:
        sheet, t1, t2, *headers = self.words[self.labels[cluster]]
        cells = [f"{headers[0]}: {key}"] + [
            f"{h}: {n if num else v}" for h, v, n, num in zip(headers[1:], values, numbers,
                                                             use_number)]
        return f"{sheet} > {t1} {t2} — {'; '.join(cells)}"

    def partition(self, index: int, n: int) -> tuple[str, list[dict], np.ndarray]:
        """Partition ``index`` of ``n`` units: its key (sha256 hex), its rows (the columns of
        :func:`~extraction_assets.search.vectors.unit_schema` but the vector; every tenth
        unit a chunk, the others records) and their vectors (n x dim float32)."""
        rng = np.random.default_rng([self.seed, 1, index])
        workbook_hash = _key(self.seed, "partition", index)
        cluster, vectors, keys, values, numbers, use_number = self._draw(rng, n)
        rows = []
        for i in range(n):
            text = self._text(cluster[i], keys[i], values[i], numbers[i], use_number[i])
            unit_id = _key(self.seed, index, i)
            chunk = i % 10 == 0
            rows.append({
                "workbook_hash": workbook_hash, "unit_id": unit_id,
                "kind": "chunk" if chunk else "record",
                "chunk_id": unit_id if chunk else _key(self.seed, index, "chunk", cluster[i]),
                "filename": f"book_{index:05d}.xlsx", "source_path": f"/in/book_{index:05d}.xlsx",
                "sheet_name": str(self.words[self.labels[cluster[i], 0]]),
                "a1_ranges": [f"A{i + 2}:D{i + 2}"], "heading_path": [],
                "block_id": "" if chunk else _key(self.seed, index, "table", cluster[i])[:16],
                "title": "", "row_path": [], "cells": [], "text": text,
                "n_tokens": len(text.split())})
        return workbook_hash, rows, vectors

    def queries(self, n: int) -> list[tuple[np.ndarray, str]]:
        """``n`` queries, each a new unit of the clusters (not stored) asked for as the
        retrieval evaluation asks: its vector, and ``"<header> of <key> in <title>"``."""
        rng = np.random.default_rng([self.seed, 2])
        cluster, vectors, keys, *_ = self._draw(rng, n)
        out = []
        for i in range(n):
            _, t1, t2, *headers = self.words[self.labels[cluster[i]]]
            header = headers[1 + rng.integers(0, 3)]
            out.append((vectors[i], f"{header} of {keys[i]} in {t1} {t2}"))
        return out


def _latency(ask, queries: list) -> tuple[dict, list]:
    """Milliseconds of ``ask(query)`` over ``queries`` after one untimed call (warm): median,
    95th percentile (nearest rank) and slowest; and the answers, in the order of ``queries``."""
    ask(queries[0])
    seconds, answers = [], []
    for query in queries:
        start = time.perf_counter()
        answers.append(ask(query))
        seconds.append(time.perf_counter() - start)
    seconds.sort()
    p95 = seconds[min(len(seconds) - 1, int(np.ceil(0.95 * len(seconds))) - 1)]
    return {"median_ms": round(statistics.median(seconds) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(seconds[-1] * 1000, 1)}, answers


def _ids(hits: list[dict], n: int = RECALL_AT) -> list[str]:
    return [hit["unit_id"] for hit in hits[:n]]


def exact_top(uri: str, vectors: list[np.ndarray], k: int = RECALL_AT) -> list[list[str]]:
    """The unit ids of the ``k`` nearest units by cosine of each vector, by an exact scan
    (LanceDB's ``bypass_vector_index()``, whatever index the table has)."""
    import lancedb

    table = lancedb.connect(uri).open_table(TABLE_NAME)
    return [table.search(v).distance_type("cosine").bypass_vector_index().select(["unit_id"])
            .limit(k).to_arrow().column("unit_id").to_pylist() for v in vectors]


def recall(store: VectorStore, vectors: list[np.ndarray], truth: list[list[str]]) -> float:
    """Mean recall@10 of ``store.search(10, vector=v)`` against ``truth``, the exact ids
    (:func:`exact_top`) of each vector."""
    found = [len(set(_ids(store.search(RECALL_AT, vector=v))) & set(top)) / len(top)
             for v, top in zip(vectors, truth)]
    return round(float(np.mean(found)), 4)


def _queries(store: VectorStore, queries: list) -> tuple[dict, list[list[str]]]:
    """Warm latencies of hybrid and vector-only queries (k = :data:`K`), and the first 10
    unit ids of each hybrid answer."""
    hybrid, answers = _latency(lambda q: store.search(K, vector=q[0], text=q[1]), queries)
    vector, _ = _latency(lambda q: store.search(K, vector=q[0]), queries)
    return {"hybrid": hybrid, "vector": vector}, [_ids(hits) for hits in answers]


def _phase(timing) -> dict:
    return {"seconds": round(timing.seconds, 2),
            "peak_rss_mb": None if timing.peak_rss_mb is None else round(timing.peak_rss_mb)}


def _disk_gb(uri: str) -> float:
    """Gigabytes of the files under ``uri`` (the table's versions not yet pruned included)."""
    return round(sum(f.stat().st_size for f in Path(uri).rglob("*") if f.is_file()) / 1e9, 2)


def _unindexed(uri: str) -> int | None:
    import lancedb

    stats = lancedb.connect(uri).open_table(TABLE_NAME).index_stats(VECTOR_INDEX_NAME)
    return None if stats is None else stats.num_unindexed_rows


def benchmark(uri: str, units: int, partitions: int, fresh: int, n_queries: int,
              seed: int = 0, dim: int = DIMENSION) -> dict:
    """The five phases of the module's docstring on a new table at ``uri``: ``units`` units
    (``fresh`` of them written after the index, in two partitions) of ``dim``-d vectors.

    Returns a JSON-compatible dict: per phase (``write``, ``brute``, ``build``, ``indexed``,
    ``fresh``, ``fold``, ``folded``) its ``seconds`` and ``peak_rss_mb`` (``peak_rss_mb`` of
    the whole: the largest), ``disk_gb`` of the table after the writes and at the end; for the query phases the ``hybrid`` and ``vector`` latencies
    (``median_ms``, ``p95_ms``, ``max_ms``) and, with the index, ``recall_at_10``; and
    ``hybrid_overlap_at_10`` (indexed against brute force), ``fresh_found`` (the share of
    ``n_queries`` fresh units, sampled, found first by their own vector) and ``unindexed_rows`` before and after the fold.

    Raises:
        ValueError: fewer units than partitions, or ``fresh`` not below ``units``.
    """
    if not 0 <= fresh < units or units - fresh < partitions:
        raise ValueError("need fresh < units and at least one unit per partition")
    synthetic = SyntheticUnits(units, dim, seed)
    queries = synthetic.queries(n_queries)
    query_vectors = [v for v, _ in queries]
    out: dict = {"units": units, "partitions": partitions, "fresh_units": fresh, "dim": dim,
                 "queries": n_queries, "k": K, "index_threshold": VECTOR_INDEX_THRESHOLD}
    brute = VectorStore(uri, index_threshold=units + 1)
    stored = units - fresh
    bounds = np.linspace(0, stored, partitions + 1).astype(int)

    def run(name: str, fn) -> None:
        """``fn()`` timed; its dict (if any), seconds and peak RSS go under ``name``."""
        result, timing = timed(fn, lambda _: 0)
        out[name] = {**(result or {}), **_phase(timing)}

    def write() -> None:
        for p in range(partitions):
            h, rows, vectors = synthetic.partition(p, int(bounds[p + 1] - bounds[p]))
            brute.replace_partition(h, rows, vectors, MODEL)
        brute.optimize()

    brute_hybrid: list[list[str]] = []

    def brute_queries() -> dict:
        latencies, hybrid = _queries(brute, queries)
        brute_hybrid.extend(hybrid)
        return latencies

    indexed = VectorStore(uri, index_threshold=1)

    def indexed_queries() -> dict:
        latencies, hybrid = _queries(indexed, queries)
        overlap = [len(set(got) & set(top)) / len(top) for got, top in zip(hybrid, brute_hybrid)]
        return {**latencies, "hybrid_overlap_at_10": round(float(np.mean(overlap)), 4),
                "recall_at_10": recall(indexed, query_vectors, exact_top(uri, query_vectors))}

    store = VectorStore(uri)  # as ingest: the production threshold and retraining
    truth: list[list[str]] = []

    def fresh_queries() -> dict:
        written: list[tuple[str, np.ndarray]] = []
        for p, n in zip((partitions, partitions + 1), (fresh - fresh // 2, fresh // 2)):
            if n:
                h, rows, vectors = synthetic.partition(p, n)
                store.replace_partition(h, rows, vectors, MODEL)
                written += [(row["unit_id"], v) for row, v in zip(rows, vectors)]
        sample = written[::max(1, len(written) // n_queries)][:n_queries]
        found = [_ids(store.search(1, vector=v)) == [unit_id] for unit_id, v in sample]
        truth.extend(exact_top(uri, query_vectors))  # with the fresh units
        return {**folded_queries(), "fresh_found": round(float(np.mean(found)), 4)}

    def folded_queries() -> dict:
        return {**_queries(store, queries)[0], "unindexed_rows": _unindexed(uri),
                "recall_at_10": recall(store, query_vectors, truth)}

    run("write", write)
    out["write"]["disk_gb"] = _disk_gb(uri)
    run("brute", brute_queries)
    run("build", indexed.optimize)
    run("indexed", indexed_queries)
    if fresh:
        run("fresh", fresh_queries)
        run("fold", store.optimize)
        run("folded", folded_queries)
    out["disk_gb"] = _disk_gb(uri)
    peaks = [phase["peak_rss_mb"] for phase in out.values()
             if isinstance(phase, dict) and phase.get("peak_rss_mb") is not None]
    out["peak_rss_mb"] = max(peaks, default=None)
    return out


def targets(results: dict) -> list[str]:
    """The issue's targets that apply to ``results`` (hybrid latency from
    :data:`TARGET_UNITS` units, recall at any size), as lines ``met: ...``/``missed: ...``."""
    lines = []
    recalls = [results[p]["recall_at_10"] for p in ("indexed", "fresh", "folded") if p in results]
    worst = min(recalls)
    lines.append(f"{'met' if worst >= TARGET_RECALL else 'missed'}: recall@10 >= "
                 f"{TARGET_RECALL} (lowest {worst})")
    if results["units"] >= TARGET_UNITS:
        p95 = max(results[p]["hybrid"]["p95_ms"] for p in ("indexed", "fresh", "folded")
                  if p in results)
        lines.append(f"{'met' if p95 <= TARGET_HYBRID_MS else 'missed'}: warm hybrid query "
                     f"<= {TARGET_HYBRID_MS:.0f} ms at {results['units']:,} units "
                     f"(slowest 95th percentile {p95} ms)")
    return lines


def _print(results: dict) -> None:
    typer.echo(f"{results['units']:,} units of {results['dim']} dimensions in "
               f"{results['partitions']} partitions (+{results['fresh_units']:,} fresh); "
               f"write {results['write']['seconds']} s, index build "
               f"{results['build']['seconds']} s ({results['build']['peak_rss_mb']} MB peak); "
               f"process peak {results['peak_rss_mb']} MB; {results['write']['disk_gb']} GB on "
               f"disk after the writes, {results['disk_gb']} GB at the end")
    typer.echo(f"{'phase':8s} {'hybrid median/p95 ms':>22s} {'vector median/p95 ms':>22s} "
               f"{'recall@10':>9s}")
    for phase in ("brute", "indexed", "fresh", "folded"):
        if phase not in results:
            continue
        got = results[phase]
        hybrid, vector = got["hybrid"], got["vector"]
        typer.echo(f"{phase:8s} {hybrid['median_ms']:>11.1f} / {hybrid['p95_ms']:>7.1f}   "
                   f"{vector['median_ms']:>11.1f} / {vector['p95_ms']:>7.1f}   "
                   f"{got.get('recall_at_10', ''):>9}")
    typer.echo(f"hybrid top 10 kept by the index: {results['indexed']['hybrid_overlap_at_10']}")
    if "fresh" in results:
        typer.echo(f"fresh units found by their own vector: {results['fresh']['fresh_found']} "
                   f"({results['fresh']['unindexed_rows']} rows not in the index; "
                   f"fold {results['fold']['seconds']} s)")


app = typer.Typer(add_completion=False)


@app.command()
def main(units: Annotated[int, typer.Option(min=2, help="Units in the table at the end.")]
         = 1_000_000,
         partitions: Annotated[int, typer.Option(
             min=1, help="Partitions they are written in (each write past 10,000 units "
                         "compacts the table, whose old versions stay 7 days).")] = 10,
         fresh: Annotated[int, typer.Option(
             min=0, help="Units of --units written after the index is built.")] = 5_000,
         queries: Annotated[int, typer.Option(min=1, help="Timed queries of each kind.")] = 50,
         seed: Annotated[int, typer.Option(help="Seed of the units and queries.")] = 0,
         workdir: Annotated[Path | None, typer.Option(
             help="Where the LanceDB table goes (kept); default a temporary folder.")] = None,
         json_out: Annotated[Path | None, typer.Option(
             "--json", help="Write the results here.")] = None) -> None:
    """Write synthetic units through VectorStore, build the vector index, and measure warm
    query latency, recall@10 against brute force, build seconds and peak memory."""
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as tmp:
        root = workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        uri = str(root / f"lancedb-{units}")
        if Path(uri).exists():
            raise typer.BadParameter(f"{uri} exists: choose another --workdir")
        results = benchmark(uri, units, partitions, fresh, queries, seed)
    results["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version()}
    results["targets"] = targets(results)
    _print(results)
    for line in results["targets"]:
        typer.echo(line)
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))
    raise typer.Exit(code=1 if any(t.startswith("missed") for t in results["targets"]) else 0)


if __name__ == "__main__":
    app(prog_name="python -m tools.bench.vectors")
