"""Retrieval units, the full-text and vector index in LanceDB, hybrid search and the retrieval
evaluation: real stages, a real LanceDB table, a real Dagster instance."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from openpyxl import Workbook
from openpyxl.styles import Font

from extraction_assets.app.ingest import ingest_paths, refresh_stale
from extraction_assets.app.samples import build_ledger, build_spec_ja, workbook_bytes
from extraction_assets.core.a1 import parse_range
from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.codecs import retrieval_units
from extraction_assets.search import vectors
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.search.retrieval import Searcher, index_units
from extraction_assets.search.vectors import VectorStore
from extraction_assets.store.storage import DataStore
from tools import retrieval_eval
from tools.paths import shared_dir


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def _units(embedder, data: bytes, filename: str, max_tokens: int = 512) -> tuple[str, list]:
    tables = run_pipeline(data, filename=filename, count_tokens=embedder.count_tokens,
                          count_tokens_batch=embedder.count_tokens_batch, min_tokens=64,
                          max_tokens=max_tokens)
    h = hashlib.sha256(data).hexdigest()
    return h, retrieval_units(h, filename, f"/in/{filename}", tables["chunks"],
                              tables["record_units"], tables["blocks"],
                              embedder.count_tokens_batch)


def test_a_record_unit_names_its_place_and_values_and_points_at_its_chunk(embedder):
    h, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx")
    chunks = [u for u in units if u["kind"] == "chunk"]
    records = {u["a1_ranges"][0]: u for u in units if u["kind"] == "record"}
    assert len(chunks) == 2 and len(records) == 18
    row = records["A2:E2"]
    assert row["text"] == ("Ledger — Date: 2024-01-03; Account: 1200; Description: Invoice "
                           "INV-1001 Harbor Cafe; Debit: $4,800.00")
    assert row["sheet_name"] == "Ledger" and row["heading_path"] == ["Ledger"]
    assert row["filename"] == "ledger.xlsx" and row["source_path"] == "/in/ledger.xlsx"
    holder = next(c for c in chunks if c["unit_id"] == row["chunk_id"])
    assert holder["a1_ranges"] == ["A2:E14"] and "| 2024-01-03 | 1200 |" in holder["text"]
    assert all(c["unit_id"] == c["chunk_id"] for c in chunks)
    assert len({u["unit_id"] for u in units}) == len(units)
    # the same bytes give the same units (ids, texts, token counts)
    assert _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx") == (h, units)


def test_value_cells_cite_their_own_column_past_an_empty_column(embedder):
    """A table with an empty column inside it (its records have fewer keys than the block
    has columns): each value cell still cites its own A1 reference, by the block's columns."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Prices"
    ws.append(["Item", "Qty", None, "Price", "Origin"])
    for i, item in enumerate(["Apples", "Pears", "Plums", "Figs"]):
        ws.append([item, 10 + i, None, 1.5 + i, "Chile"])
    _, units = _units(embedder, workbook_bytes(wb), "prices.xlsx")
    (pears,) = [u for u in units if u["kind"] == "record" and u["row_path"] == ["Pears"]]
    assert pears["a1_ranges"] == ["A3:E3"]
    assert [(c["ref"], c["header"], c["value"]) for c in pears["cells"]] == [
        ("B3", "Qty", "11"), ("D3", "Price", "2.5"), ("E3", "Origin", "Chile")]


def test_the_fields_of_a_form_cite_their_own_cells(embedder):
    """A key-value block is one record of one field a row: each value cell cites its own row
    (``B2`` for ``Utility``), not the record's first."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Site"
    for row, (key, value) in enumerate([("Facility:", "Conover, NC"),
                                        ("Utility:", "Piedmont Natural Gas"),
                                        ("Rate:", "103 Large General Service")], start=1):
        ws.cell(row, 1, key)
        ws.cell(row, 2, value)
    _, units = _units(embedder, workbook_bytes(wb), "site.xlsx")
    (form,) = [u for u in units if u["kind"] == "record"]
    assert form["a1_ranges"] == ["A1:B3"]
    assert [(c["ref"], c["header"], c["value"]) for c in form["cells"]] == [
        ("B1", "Facility", "Conover, NC"), ("B2", "Utility", "Piedmont Natural Gas"),
        ("B3", "Rate", "103 Large General Service")]


def _rows(store: VectorStore, h: str) -> list[dict]:
    table = store._table()
    return (table.search().where(f"workbook_hash = '{h}'")
            .select(["unit_id", "kind", "text", "vector"]).limit(None).to_list())


@pytest.mark.parametrize("fold_every_write", [False, True])
def test_rerunning_a_partition_leaves_one_text_and_one_vector_row_per_unit(
        tmp_path, embedder, monkeypatch, fold_every_write):
    """Indexing a partition again (same units, then the partition re-chunked) leaves exactly
    one row per unit: the full-text index finds each text once, the vectors each vector
    once, and nothing of the replaced chunking is found. ``fold_every_write``: the rows not
    yet in the full-text index are folded into it on every write (the other path)."""
    if fold_every_write:
        monkeypatch.setattr(vectors, "UNINDEXED_ROWS_LIMIT", 1)
    store = VectorStore(tmp_path / "lancedb")
    data = workbook_bytes(build_ledger())
    h, units = _units(embedder, data, "ledger.xlsx")
    _, other = _units(embedder, workbook_bytes(build_spec_ja()), "spec_ja.xlsx")
    index_units(store, "f" * 64, other, embedder)
    first = index_units(store, h, units, embedder)
    derived = [u for u in units if u["from_records"]]
    assert derived and all(u["kind"] == "chunk" for u in derived)
    assert (first.rows, first.reused, first.derived, first.embedded_tokens) == (
        len(units), 0, len(derived), sum(u["n_tokens"] for u in units if not u["from_records"]))
    assert first.embed_seconds > 0
    again = index_units(store, h, units, embedder)
    assert (again.rows, again.reused, again.embedded_tokens) == (
        len(units), len(units) - len(derived), 0)
    _, rechunked = _units(embedder, data, "ledger.xlsx", max_tokens=40)
    old_chunks = {u["unit_id"]: u for u in units if u["kind"] == "chunk"}
    assert not old_chunks.keys() & {u["unit_id"] for u in rechunked}
    index_units(store, h, rechunked, embedder)

    rows = _rows(store, h)
    assert sorted(r["unit_id"] for r in rows) == sorted(u["unit_id"] for u in rechunked)
    assert store.count() == len(rechunked) + len(other)
    for unit in rechunked:  # its own text finds it once, its own vector finds it once
        hits = store.search(len(rechunked) + len(other), text=unit["text"])
        assert [x["unit_id"] for x in hits].count(unit["unit_id"]) == 1
    for row in rows:
        hits = store.search(len(rechunked) + len(other),
                            vector=np.asarray(row["vector"], np.float32))
        assert [x["unit_id"] for x in hits].count(row["unit_id"]) == 1
    for old in old_chunks.values():  # the replaced chunks are in neither index
        ids = {x["unit_id"] for x in store.search(100, text=old["text"])}
        ids |= {x["unit_id"] for x in store.search(100, vector=embedder.embed([old["text"]])[0])}
        assert old["unit_id"] not in ids
    assert store.count(h) == len(rechunked)
    index_units(store, h, [], embedder)  # a partition with nothing left: its rows go
    assert store.count(h) == 0 and store.count() == len(other)


def test_a_chunk_of_records_takes_its_records_mean_vector_a_chunk_with_notes_is_embedded(
        tmp_path, embedder):
    wb = Workbook()
    ws = wb.active
    ws.title = "Fruit"
    ws.append(["Item", "Price", "Origin"])
    for k, (item, origin) in enumerate([("Apple", "Kent"), ("Pear", "Anjou"),
                                        ("Plum", "Agen"), ("Fig", "Smyrna")]):
        ws.append([item, 2 + k, origin])
    notes = wb.create_sheet("Veg")
    notes.append(["Item", "Price"])
    notes.append(["Leek", 3])
    notes.append(["Kale", 4])
    notes.append([])
    notes.append(["Prices include VAT; source: the spring market survey of growers."])
    h, units = _units(embedder, workbook_bytes(wb), "produce.xlsx")
    store = VectorStore(tmp_path / "lancedb")
    indexed = index_units(store, h, units, embedder)
    chunks = {u["sheet_name"]: u for u in units if u["kind"] == "chunk"}
    assert chunks["Fruit"]["from_records"] and not chunks["Veg"]["from_records"]
    assert "VAT" in chunks["Veg"]["text"]  # the note shares the chunk of the rows above it
    assert (indexed.derived, indexed.embedded) == (1, len(units) - 1)
    rows = {r["unit_id"]: np.asarray(r["vector"], np.float32) for r in _rows(store, h)}
    records = [u for u in units if u["kind"] == "record"
               and u["chunk_id"] == chunks["Fruit"]["unit_id"]]
    assert len(records) == 4
    mean = np.mean([rows[u["unit_id"]] for u in records], axis=0)
    assert np.allclose(rows[chunks["Fruit"]["unit_id"]], mean / np.linalg.norm(mean), atol=1e-6)
    veg = chunks["Veg"]
    assert np.allclose(rows[veg["unit_id"]], embedder.embed([veg["text"]])[0], atol=1e-6)


def test_text_search_finds_exact_codes_dates_and_japanese_words(tmp_path, embedder):
    store = VectorStore(tmp_path / "lancedb")
    for data, name in ((workbook_bytes(build_ledger()), "ledger.xlsx"),
                       (workbook_bytes(build_spec_ja()), "spec_ja.xlsx")):
        h, units = _units(embedder, data, name)
        index_units(store, h, units, embedder)
    top = store.search(1, text="Credit of Invoice INV-1002 Northwind Traders")[0]
    assert (top["kind"], top["a1_ranges"]) == ("record", ["A11:E11"])
    top = store.search(1, text="Debit 2024-01-12")[0]
    assert (top["kind"], top["a1_ranges"]) == ("record", ["A6:E6"])
    top = store.search(1, text="定格電圧")[0]
    assert top["filename"] == "spec_ja.xlsx" and "定格電圧" in top["text"]
    assert store.search(3, text="定格電圧", kinds=["chunk"])[0]["kind"] == "chunk"
    assert store.search(3, text="zzqx no such word") == []


def test_searcher_returns_chunks_ranked_by_their_best_unit(tmp_path, embedder):
    """Each result is a chunk with its provenance, found by its own text or by one of its rows
    (``kind``), naming the best row among the hits; the modes rank differently."""
    root = tmp_path / "data"
    h, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx", max_tokens=120)
    chunks = {u["unit_id"]: u for u in units if u["kind"] == "chunk"}
    assert len(chunks) > 2
    index_units(VectorStore(DataStore(root).lancedb_uri), h, units, embedder)
    searcher = Searcher(root, embedder)
    query = "Credit of Invoice INV-1002 Northwind Traders"
    for mode in ("hybrid", "vector", "text"):
        hits = searcher.search(query, k=3, mode=mode)
        assert len(hits) == 3 and {hit["mode"] for hit in hits} == {mode}
        assert set(hits[0]) == {"score", "filename", "sheet", "a1_ranges", "heading_path",
                                "chunk_id", "workbook_hash", "text", "mode", "kind", "record",
                                "cell"}
        assert len({hit["chunk_id"] for hit in hits}) == 3  # one result per chunk
        for hit in hits:
            chunk = chunks[hit["chunk_id"]]
            assert (hit["a1_ranges"], hit["text"], hit["heading_path"]) == (
                chunk["a1_ranges"], chunk["text"], chunk["heading_path"])
            assert hit["workbook_hash"] == h and hit["sheet"] == chunk["sheet_name"]
        # the best first; a table's further chunks after every table's first
        assert hits[0]["score"] == max(hit["score"] for hit in hits)
    for mode in ("hybrid", "text"):
        top = searcher.search(query, k=1, mode=mode)[0]  # the chunk of rows 10-11 itself
        assert top["a1_ranges"] == ["A10:E11"] and top["record"]["a1_range"] == "A11:E11"
        assert top["record"]["text"].startswith("Ledger — Date: 2024-01-24; Account: 4000; ")
    by_rows = searcher.search(query, k=1, mode="text", kinds=["record"])[0]
    assert (by_rows["kind"], by_rows["a1_ranges"]) == ("record", ["A10:E11"])
    only_chunks = searcher.search(query, k=2, mode="text", kinds=["chunk"])
    assert {hit["kind"] for hit in only_chunks} == {"chunk"}
    assert all(hit["record"] is None for hit in only_chunks)
    with pytest.raises(ValueError, match="unknown search mode"):
        searcher.search(query, mode="fuzzy")


def test_twin_units_of_two_partitions_score_alike_run_after_run(tmp_path, embedder):
    """The same units in two partitions (a file's bytes under two hashes, as two versions
    searched with ``--all-versions`` may hold): both legs of a hybrid query tie them, and the
    fusion gives them one score whatever order LanceDB returns them in, so every run ranks
    the same way (LanceDB's own fusion gave the first-returned twin rank 1, the other rank 2,
    the order changing between runs)."""
    _, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx")
    store = VectorStore(tmp_path / "lancedb")
    for h in ("a" * 64, "b" * 64):
        index_units(store, h, [dict(u, workbook_hash=h) for u in units], embedder)
    store.fold_index()  # as an ingest does when it ends
    vector = embedder.embed(["Invoice INV-1001 Harbor Cafe debit"])[0]
    runs = {tuple((hit["workbook_hash"], hit["unit_id"], hit["score"])
                  for hit in store.search(6, vector=vector, text="Invoice INV-1001 Harbor Cafe"))
            for _ in range(5)}
    assert len(runs) == 1
    (hits,) = runs
    assert [h[0] for h in hits[:2]] == ["a" * 64, "b" * 64]  # twins, by partition
    assert hits[0][1] == hits[1][1] and hits[0][2] == hits[1][2]


def test_k_results_when_the_rows_of_one_chunk_fill_the_candidates(tmp_path, embedder):
    """Eighty rows of one chunk all match better than the other chunks: the searcher asks for
    more units until it has ``k`` chunks (it returned only the one chunk before)."""
    import openpyxl

    from extraction_assets_tests.builders import put_rows

    wb = openpyxl.Workbook()
    wb.active.title = "Orders"
    put_rows(wb.active, [["Code", "Item"], *[[f"Z-{n}", f"zircon widget {n}"]
                                              for n in range(80)]])
    for name in ("North", "South", "East"):
        put_rows(wb.create_sheet(name), [["Region", "Note"], [name, "one zircon sample"],
                                         [name, "other goods"]])
    h, units = _units(embedder, workbook_bytes(wb), "orders.xlsx", max_tokens=4096)
    index_units(VectorStore(DataStore(tmp_path / "data").lancedb_uri), h, units, embedder)
    hits = Searcher(tmp_path / "data", embedder).search("zircon widget", k=4, mode="text")
    assert sorted(hit["sheet"] for hit in hits) == ["East", "North", "Orders", "South"]


@pytest.mark.integration
def test_ingest_and_force_rerun_keep_one_row_per_unit(tmp_path):
    """The real asset graph: re-running the partition with another chunk budget replaces its
    units; the `one_row_per_unit` check passes and the counts are chunks + records."""
    path = tmp_path / "ledger.xlsx"
    path.write_bytes(workbook_bytes(build_ledger()))
    root = tmp_path / "data"
    first = ingest_paths([path], root)[0]
    again = ingest_paths([path], root, force=True, max_tokens=40)[0]
    assert first.status == again.status == "success"
    store = VectorStore(DataStore(root).lancedb_uri)
    h = again.workbook_hash
    ids = store.unit_ids(h)
    assert len(ids) == len(set(ids)) == again.counts["chunks"] + again.counts["records"]
    assert again.counts["chunks"] > first.counts["chunks"]
    assert store.count(h, kind="chunk") == again.counts["chunks"]


def _staff_table(title: str, rows: list[tuple[str, float]]) -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "Staff"
    ws.append([title])
    ws.append([])
    ws.append(["Group", "Workers in region 1 (%)"])
    for label, value in rows:
        ws.append([label, value])
    return workbook_bytes(wb)


@pytest.mark.integration
def test_files_ingested_by_later_commands_are_scored_on_one_scale(tmp_path, embedder):
    """Each ingest folds the units it wrote into the full-text index, so a row of the first
    file ingested is ranked by its words like any other, whatever the order of the commands
    (without the fold, the units of the first file alone were indexed and scored on another
    scale: a row naming every word of the query lost to rows sharing one)."""
    first = tmp_path / "marital.xlsx"
    first.write_bytes(_staff_table("Sex and marital status of workers",
                                   [("Married French-language workers", 35.3),
                                    ("Single workers", 20.1)]))
    root = tmp_path / "data"
    assert ingest_paths([first], root)[0].status == "success"
    later = []
    for n in range(3):
        later.append(tmp_path / f"education{n}.xlsx")
        later[-1].write_bytes(_staff_table(
            f"Education of workers, survey {n}",
            [(f"Workers with degree {k}", 10.0 + k) for k in range(40)]
            + [("French-language teachers", 5.0)] * (n == 0)))
    assert {r.status for r in ingest_paths(later, root)} == {"success"}
    store = VectorStore(DataStore(root).lancedb_uri)
    assert store.unindexed_rows() == 0
    hits = Searcher(root, None).search("married French-language workers", k=3, mode="text")
    assert hits[0]["filename"] == "marital.xlsx"
    assert hits[0]["record"]["row_path"] == ["Married French-language workers"]
    # rows written outside a command (a run still going) are named by search, then folded
    # by refresh
    h, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx")
    index_units(store, h, units, embedder)
    assert store.unindexed_rows() == len(units)
    proc = subprocess.run([sys.executable, "-m", "extraction_assets.app.cli", "search",
                           "workers", "--mode", "text", "--data-dir", str(root)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"note: {len(units)} units are not in the full-text index yet" in proc.stderr
    refresh_stale(root)
    assert store.unindexed_rows() == 0


def test_sample_questions_drop_questions_with_two_answers():
    q = retrieval_eval.Question
    tables = [[q("a.xlsx", "S", 2, 2, "Units of North"), q("a.xlsx", "S", 3, 2, "Units of South")],
              [q("b.xlsx", "S", 2, 2, "Units of North"), q("b.xlsx", "S", 4, 3, "Cost of East")]]
    picked = retrieval_eval.sample_questions(tables, per_table=5)
    assert [x.text for x in picked] == ["Units of South", "Cost of East"]
    assert retrieval_eval.sample_questions(tables, per_table=1) == picked


def test_generated_questions_ask_for_a_cell_by_header_key_and_title():
    from extraction_assets.pipeline.stages import normalize_stage, parse_stage
    from tools.evaluate import generate_layout

    data, truth = generate_layout(3)
    parsed = parse_stage("0" * 64, data).tables
    cells = normalize_stage("0" * 64, parsed["parsed_cells"], parsed["parsed_sheets"],
                            parsed["styles"], parsed["workbook_properties"]).tables["cells"]
    tables = retrieval_eval.generated_questions("g.xlsx", truth, retrieval_eval._display_text(
        cells))
    titled = next(t for t in tables if t and t[0].text.endswith("in Table 2. Results by Region"))
    assert any(x.text == "FY2023 Jan of South in Table 2. Results by Region"
               and (x.row, x.col) == (23, 2) for x in titled)
    untitled = tables[0]  # its key column holds 関東 twice: those rows are not asked about
    assert untitled and not any("関東" in x.text for x in untitled)
    assert all(" of " in x.text for t in tables for x in t)


def test_labelled_questions_use_header_data_and_title_labels():
    root = shared_dir("labelled")
    truth_path = root / "deco" / "truth.json"
    if not truth_path.is_file():
        pytest.skip(f"no labelled dev set in {root}")
    from extraction_assets.pipeline.stages import normalize_stage, parse_stage

    name = "andrea_ring__51__RFPloadinfo.xlsx"
    truth = json.loads(truth_path.read_text(encoding="utf-8"))[name]
    data = (root / "deco" / "files" / name).read_bytes()
    parsed = parse_stage("0" * 64, data).tables
    cells = normalize_stage("0" * 64, parsed["parsed_cells"], parsed["parsed_sheets"],
                            parsed["styles"], parsed["workbook_properties"]).tables["cells"]
    tables = retrieval_eval.labelled_questions(name, truth["sheets"],
                                               retrieval_eval._display_text(cells))
    first = tables[0]  # table A6:B18: header "Month | Dth", data A7:B18, title A1:B1
    assert len(tables) == 3 and len(first) == 12
    assert first[0] == retrieval_eval.Question(name, "Sheet1", 7, 2, "Dth of 1-Aug in Carpenter")


def test_the_retrieval_evaluation_scores_every_mode_and_can_fail(tmp_path, embedder):
    """A bounded run (2 generated workbooks, no labelled set) prints a row per unit choice and
    mode; the same questions asked of another file score zero."""
    results = retrieval_eval.evaluate(seeds=2, labelled=tmp_path / "none", per_table=2,
                                      work_dir=tmp_path, embedder=embedder)
    assert list(results) == ["generated"]
    scores = results["generated"]["scores"]
    assert set(scores) == {(u, m) for u, _ in retrieval_eval.UNIT_CHOICES
                           for m in retrieval_eval.MODES}
    questions = results["generated"]["questions"]
    assert len(questions) >= 5 and all(s["questions"] == len(questions) for s in scores.values())
    for s in scores.values():
        assert 0 <= s["hit@1"] <= s["hit@5"] <= 1 and s["hit@1"] <= s["mrr"] <= s["hit@5"]
    assert scores[("both", "hybrid")]["hit@1"] >= 0.8
    assert scores[("both", "hybrid")]["hit@1"] > scores[("chunk", "vector")]["hit@1"]

    root = tmp_path / "again"
    asked = retrieval_eval.generated_set(2, 2, root, embedder)
    wrong = [retrieval_eval.Question("other.xlsx", q.sheet, q.row, q.col, q.text) for q in asked]
    failed = retrieval_eval.score(wrong, Searcher(root, embedder), "hybrid")
    assert (failed["hit@1"], failed["hit@5"], failed["mrr"]) == (0, 0, 0)
    assert len(failed["misses"]) == len(wrong)


@pytest.mark.integration
def test_cli_search_modes_json_and_queries_file(samples_ingest, tmp_path):
    root, _, _ = samples_ingest
    cli = [sys.executable, "-m", "extraction_assets.app.cli", "search"]
    proc = subprocess.run([*cli, "定格電圧", "--mode", "text", "--json", "-k", "2",
                           "--data-dir", str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert [h["mode"] for h in hits] == ["text"]  # one chunk holds the word
    assert hits[0]["filename"] == "spec_ja.xlsx"
    assert hits[0]["a1_ranges"] == ["A5:D9"] and hits[0]["sheet"] == "仕様書"
    # the row label leads the record's text as its row path, not as a "項目: …" value
    assert hits[0]["record"] == {"a1_range": "A5:D5", "text": "仕様書 > 製品仕様書 > 1. 基本仕様 — "
                                 "定格電圧; 値: 100; 単位: V; 備考: AC 50/60 Hz",
                                 "row_path": ["定格電圧"]}
    assert hits[0]["cell"] is None  # the query names no column
    assert "| 定格電圧 | 100 | V | AC 50/60 Hz |" in hits[0]["text"]

    queries = tmp_path / "queries.txt"
    queries.write_text("Top products revenue\n\n定格電圧\nledger debit credit total\n",
                       encoding="utf-8")
    proc = subprocess.run([*cli, "--queries", str(queries), "--json", "-k", "1",
                           "--data-dir", str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["query"] for a in answers] == ["Top products revenue", "定格電圧",
                                             "ledger debit credit total"]
    assert [a["results"][0]["filename"] for a in answers] == [
        "quarterly_report.xlsx", "spec_ja.xlsx", "ledger.xlsx"]
    assert {a["results"][0]["mode"] for a in answers} == {"hybrid"}

    proc = subprocess.run([*cli, "--queries", str(queries), "-k", "1", "--mode", "text",
                           "--data-dir", str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith("query:")] == [
        "query: Top products revenue", "query: 定格電圧", "query: ledger debit credit total"]
    assert "1. " in proc.stdout
    assert "   row A5:D5: 定格電圧; 値: 100" in proc.stdout

    for bad in ([], ["  "], ["x", "--queries", str(queries)], ["x", "--mode", "fuzzy"],
                ["--queries", str(tmp_path / "missing.txt")]):
        proc = subprocess.run([*cli, *bad, "--data-dir", str(root)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.mark.integration
def test_search_answers_within_a_second_after_the_first_query(samples_ingest):
    """The model and table are opened once: every query after the first is well under 1 s."""
    import time

    root, _, _ = samples_ingest
    searcher = Searcher(root, LocalEmbedder())
    searcher.search("warm up")
    for query in ("revenue of top products", "定格電圧", "Invoice INV-1002 credit"):
        started = time.perf_counter()
        assert searcher.search(query, k=5)
        assert time.perf_counter() - started < 1.0


def test_a_data_dir_with_vectors_of_an_earlier_version_is_reindexed(tmp_path, embedder):
    """The ``chunks`` table of an earlier version (vectors only, no full-text index) is
    dropped when the ``units`` table is first written."""
    import lancedb
    import pyarrow as pa

    uri = Path(tmp_path / "lancedb")
    db = lancedb.connect(str(uri))
    db.create_table(vectors.LEGACY_TABLE_NAME, data=pa.table({"chunk_id": ["x"]}))
    h, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx")
    index_units(VectorStore(uri), h, units, embedder)
    assert db.list_tables().tables == [vectors.TABLE_NAME]


def test_a_units_table_of_an_earlier_schema_is_replaced_on_the_first_write(tmp_path, embedder):
    """Units written before record units carried their row path and cells are dropped with
    their table when a partition is next written (the asset's code version re-embeds all)."""
    import lancedb
    import pyarrow as pa

    uri = Path(tmp_path / "lancedb")
    h, units = _units(embedder, workbook_bytes(build_ledger()), "ledger.xlsx")
    old = [name for name in vectors.unit_schema(4, "m").names
           if name not in ("block_id", "title", "row_path", "cells")]
    lancedb.connect(str(uri)).create_table(vectors.TABLE_NAME, schema=pa.schema(
        [f for f in vectors.unit_schema(embedder.dimension, embedder.model_name) if f.name in old],
        metadata={"embedding_model": embedder.model_name,
                  "embedding_dimension": str(embedder.dimension)}))
    index_units(VectorStore(uri), h, units, embedder)
    table = lancedb.connect(str(uri)).open_table(vectors.TABLE_NAME)
    assert {"row_path", "cells", "block_id", "title"} <= set(table.schema.names)
    assert table.count_rows() == len(units)


def test_a_table_answers_with_its_best_row_and_the_chunk_that_holds_it(tmp_path, embedder):
    """A long table cut into several chunks, its sections repeating the same row labels: the
    question names a row label and a column, not the section; the first result is the chunk
    holding the first section's row, whichever chunk the units ranked first, and names the
    cell of the column asked for."""
    wb = Workbook()
    ws = wb.active
    ws.append(["Fruit and vegetable consumption by age, including and excluding juice"])
    ws.append([])
    ws.append(["Characteristic", "2007 times/day", "2014 times/day", "Annual change"])
    row = 4
    for section in ("Including juice", "Excluding juice"):
        ws.cell(row, 1, section).font = Font(bold=True)
        row += 1
        for k, ages in enumerate(["12 to 18", "19 to 50", "51 to 64", "65 to 79", "80 or older",
                                  "Males", "Females", "Lowest income", "Highest income"]):
            for col, value in enumerate([ages, f"{4 + k / 10:.1f}", f"{4 + k / 9:.1f}",
                                         f"{-k / 100:.2f}" if section[0] == "I" else "0.01"],
                                        start=1):
                ws.cell(row, col, value)
            row += 1
    buf = io.BytesIO()
    wb.save(buf)
    root = tmp_path / "data"
    h, units = _units(embedder, buf.getvalue(), "fruit.xlsx", max_tokens=90)
    assert len({u["chunk_id"] for u in units if u["kind"] == "record"}) > 2
    index_units(VectorStore(DataStore(root).lancedb_uri), h, units, embedder)
    searcher = Searcher(root, embedder)
    for mode in ("hybrid", "text"):
        top = searcher.search("annual change at ages 19 to 50", k=3, mode=mode)[0]
        assert top["record"]["a1_range"] == "A6:D6"
        assert top["record"]["row_path"] == ["Including juice", "19 to 50"]
        assert top["cell"] == {"ref": "D6", "header": "Annual change", "value": "-0.01"}
        r1, _, r2, _ = parse_range(top["a1_ranges"][0])
        assert r1 <= 6 <= r2  # the chunk shown holds the row
        top = searcher.search("excluding juice annual change at ages 19 to 50", k=3,
                              mode=mode)[0]
        assert top["record"]["a1_range"] == "A16:D16"
