"""A scanned PDF and a workbook holding a picture of text through the whole asset graph with
Tesseract, as a user runs ``ingest``, ``search`` and ``review list``: the text OCR reads is in
blocks, chunks and search, and the words it is not sure of are in ``review_queue``."""

from __future__ import annotations

import json

import pytest

from extraction_assets.app.ingest import ingest_paths
from extraction_assets.core.ocr import MIN_CONFIDENCE
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.search.retrieval import Searcher
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.app.graph_helpers import ingest_inbox, warehouse
from extraction_assets_tests.scans import need_tesseract, picture_xlsx_bytes, scanned_pdf_bytes

pytestmark = pytest.mark.integration  # the asset graph, and Tesseract (a process)


@pytest.fixture(scope="module")
def ocr_ingest(tmp_path_factory):
    need_tesseract()
    return ingest_inbox(tmp_path_factory.mktemp("ocr-data"), [
        ("inspection_scan.pdf", scanned_pdf_bytes()), ("summary.xlsx", picture_xlsx_bytes())])


def test_the_scanned_page_is_found_by_a_phrase_in_english_and_japanese(ocr_ingest):
    root, _, results = ocr_ingest
    assert [r.status for r in results] == ["success"] * 2, [r.error for r in results]
    searcher = Searcher(root, LocalEmbedder())
    for query in ("pressure test on 12 March", "圧力試験に合格"):
        for mode in ("text", "hybrid"):
            top = searcher.search(query, k=1, mode=mode)[0]
            assert (top["filename"], top["sheet"]) == ("inspection_scan.pdf", "Page 1"), (
                query, mode)
            assert "冷却塔は三月十二日の圧力試験に合格しました。" in top["text"]
    top = searcher.search("Net sales total", k=1, mode="text")[0]
    assert top["filename"] == "summary.xlsx" and "Net sales total 1,250" in top["text"]


def test_ocr_blocks_keep_their_page_box_and_confidence(ocr_ingest):
    root, _, _ = ocr_ingest
    with warehouse(root) as con:
        blocks = con.execute(
            "SELECT b.sheet_name, b.kind, b.a1_range, b.source_ref, b.text FROM blocks b "
            "JOIN workbooks w USING (workbook_hash) WHERE w.filename = 'inspection_scan.pdf' "
            "ORDER BY b.min_row").fetchall()
        assert [b[:4] for b in blocks] == [
            ("Page 1", "text", "A1", "page 1 ocr paragraph 1"),
            ("Page 1", "text", "A2", "page 1 ocr paragraph 2"),
            ("Page 1", "text", "A3", "page 1 ocr paragraph 3")]
        assert blocks[0][4] == "Cooling tower inspection"
        items = {name: json.loads(details) for name, details in con.execute(
            "SELECT o.name, o.details FROM sheet_objects o JOIN workbooks w "
            "USING (workbook_hash) WHERE w.filename = 'inspection_scan.pdf' "
            "AND o.kind = 'document_item'").fetchall()}
        title = items["page 1 ocr paragraph 1"]
        assert title["label"] == "ocr" and title["ocr_confidence"] > 90
        assert len(title["bbox"]) == 4 and title["bbox"][0] < title["bbox"][2]
        issues = con.execute(
            "SELECT i.code FROM extraction_issues i JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'inspection_scan.pdf'").fetchall()
        assert issues == [("ocr_read",)]
        picture = con.execute(
            "SELECT b.kind, b.a1_range, b.text FROM blocks b JOIN workbooks w "
            "USING (workbook_hash) WHERE w.filename = 'summary.xlsx' AND b.kind = 'image'"
        ).fetchone()
        assert picture == ("image", "B3", "Sales figure\nNet sales total 1,250\n売上高の合計")


def test_words_ocr_is_not_sure_of_are_in_the_review_queue(ocr_ingest):
    root, _, _ = ocr_ingest
    with warehouse(root) as con:
        rows = con.execute(
            "SELECT status, reason, filename, sheet_name, ref, first_read, first_value, "
            "second_value, confidence, bbox FROM review_queue "
            "WHERE reason = 'ocr_low_confidence'").fetchall()
        squeezed = con.execute(
            "SELECT b.text FROM blocks b JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'inspection_scan.pdf' AND b.source_ref = "
            "'page 1 ocr paragraph 3'").fetchone()[0]
    assert rows, "no low-confidence word in review_queue"
    for status, reason, filename, sheet, ref, reader, word, second, confidence, bbox in rows:
        assert (status, filename, sheet, ref, second) == (
            "open", "inspection_scan.pdf", "Page 1", "A3", None)
        assert reader.startswith("tesseract 5") and reader.endswith("(eng+jpn)")
        assert word in squeezed.split() and confidence < MIN_CONFIDENCE
        assert len(bbox) == 4 and bbox[0] < bbox[2] and bbox[1] < bbox[3]


def test_a_second_ingest_reads_the_same_text(ocr_ingest):
    root, paths, results = ocr_ingest
    store = DataStore(root)
    before = {r.workbook_hash: store.table_path("chunks", r.workbook_hash).read_bytes()
              for r in results}
    forced = ingest_paths(paths, root, force=True)
    assert [r.status for r in forced] == ["success"] * 2
    assert {r.workbook_hash: store.table_path("chunks", r.workbook_hash).read_bytes()
            for r in results} == before


def test_an_ocr_word_has_no_second_read_to_choose(ocr_ingest):
    from extraction_assets.store.decisions import RegistryError, resolve_item

    root, _, _ = ocr_ingest
    with warehouse(root) as con:
        cur = con.execute("SELECT * FROM review_items WHERE reason = 'ocr_low_confidence' "
                          "ORDER BY item_id LIMIT 1")
        item = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    with pytest.raises(RegistryError, match="has no second read"):
        resolve_item(DataStore(root), item, "second", "carol")
    row = resolve_item(DataStore(root), item, "value", "carol", value="Inspector")
    assert (row["decision"], row["value"]) == ("value", "Inspector")


def test_a_file_read_without_ocr_is_read_again_once_ocr_is_there(tmp_path, monkeypatch):
    from extraction_assets.core.ocr import TESSERACT_ENV

    need_tesseract()
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf_bytes())
    root = tmp_path / "data"
    with monkeypatch.context() as patch:
        patch.setenv(TESSERACT_ENV, "off")
        first, = ingest_paths([path], root, until="parsed_sheets")
    again, = ingest_paths([path], root, until="parsed_sheets")
    then, = ingest_paths([path], root, until="parsed_sheets")
    assert (first.status, again.status, then.status) == ("success", "success", "unchanged")
    assert (first.counts["ocr_unread"], again.counts["ocr_unread"]) == (1, 0)
    with warehouse(root) as con:
        codes = con.execute("SELECT code FROM extraction_issues").fetchall()
    assert codes == [("ocr_read",)]
