"""Word, PowerPoint and PDF files through the whole asset graph: a real Dagster instance,
Parquet, the DuckDB views, LanceDB and search, as a user runs ``ingest`` and ``search``."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterEventType

from extraction_assets.app.ingest import ingest_paths, open_instance
from extraction_assets.core.ocr import TESSERACT_ENV
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets.search.retrieval import Searcher
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.app.graph_helpers import ingest_inbox, warehouse
from extraction_assets_tests.documents import docx_bytes, pdf_bytes, pptx_bytes

pytestmark = pytest.mark.integration  # the documents ingested through the asset graph


@pytest.fixture(scope="module", autouse=True)
def without_ocr():
    """These documents are read as on a machine without Tesseract (``test_ocr_graph`` reads
    with it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TESSERACT_ENV, "off")
        yield


@pytest.fixture(scope="module")
def documents_ingest(tmp_path_factory):
    return ingest_inbox(tmp_path_factory.mktemp("documents-data"), [
        ("pump_spec.docx", docx_bytes()), ("review.pptx", pptx_bytes()),
        ("report.pdf", pdf_bytes())])


def test_documents_materialize_and_every_check_passes(documents_ingest):
    root, _, results = documents_ingest
    assert [r.status for r in results] == ["success"] * 3, [r.error for r in results]
    with open_instance(DataStore(root)) as instance:
        outcomes = {}
        for result in results:
            for entry in instance.all_logs(result.run_id,
                                           of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
                evaluation = entry.dagster_event.event_specific_data
                outcomes[(result.path, evaluation.check_name)] = evaluation.passed
    assert len(outcomes) == 7 * 3
    assert all(outcomes.values()), [k for k, v in outcomes.items() if not v]


def test_views_hold_sections_slides_pages_and_their_blocks(documents_ingest):
    root, _, _ = documents_ingest
    with warehouse(root) as con:
        formats = con.execute("SELECT filename, format, sheet_count FROM workbooks "
                              "ORDER BY filename").fetchall()
        assert formats == [("pump_spec.docx", "docx", 3), ("report.pdf", "pdf", 3),
                           ("review.pptx", "pptx", 2)]
        sheets = con.execute(
            "SELECT w.filename, s.sheet_name, s.kind FROM sheets s JOIN workbooks w "
            "USING (workbook_hash) WHERE w.filename = 'review.pptx' ORDER BY sheet_index"
        ).fetchall()
        assert sheets == [("review.pptx", "Slide 1", "slide"), ("review.pptx", "Slide 2", "slide")]
        table = con.execute(
            "SELECT b.sheet_name, b.a1_range, b.header_row_count, b.heading_path, b.source_ref "
            "FROM blocks b JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'pump_spec.docx' AND b.kind = 'table'").fetchall()
        assert table == [("Models", "A2:D5", 2, ["Models"], "#/tables/0")]
        headers = [h for (h,) in con.execute(
            "SELECT header FROM block_columns c JOIN blocks b USING (workbook_hash, block_id) "
            "JOIN workbooks w USING (workbook_hash) WHERE w.filename = 'pump_spec.docx' "
            "ORDER BY position").fetchall()]
        assert headers == ["Model", "Flow > Min", "Flow > Max", "Price > EUR"]
        records = con.execute(
            "SELECT r.sheet_name, r.record FROM records r JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'review.pptx' ORDER BY r.sheet_name, r.row").fetchall()
        assert [(s, json.loads(r)) for s, r in records] == [
            ("Slide 1", {"Region": "North", "Q1": 120, "Q2": 135}),
            ("Slide 1", {"Region": "South", "Q1": 80, "Q2": 95}),
            ("Slide 2", {"Column A": "Q1", "North": 120, "South": 80}),
            ("Slide 2", {"Column A": "Q2", "North": 135, "South": 95})]
        chunk_paths = con.execute(
            "SELECT c.heading_path FROM chunks c JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'review.pptx' ORDER BY chunk_index").fetchall()
        assert [p for (p,) in chunk_paths] == [
            ["Slide 1", "Quarterly review"], ["Slide 1", "Quarterly review", "Speaker notes"],
            ["Slide 2", "Sales chart"], ["Slide 2", "Sales chart", "Sales by quarter"]]
        issues = con.execute(
            "SELECT i.code FROM extraction_issues i JOIN workbooks w USING (workbook_hash) "
            "WHERE w.filename = 'report.pdf' ORDER BY i.code").fetchall()
        assert issues == [("ocr_not_configured",)]
        made = con.execute("SELECT pdf_route, creator, producer FROM workbooks "
                           "WHERE filename = 'report.pdf'").fetchone()
        assert made == ("mixed", None, None)


def test_search_finds_a_row_of_the_word_table_by_header_and_key(documents_ingest):
    root, _, _ = documents_ingest
    searcher = Searcher(root, LocalEmbedder())
    for mode in ("text", "hybrid"):
        top = searcher.search("P-200 Price > EUR", k=1, mode=mode)[0]
        assert (top["filename"], top["sheet"], top["heading_path"]) == (
            "pump_spec.docx", "Models", ["Models"]), mode
        assert top["record"]["a1_range"] == "A5:D5"
        # the row label leads the record as its row path; the query names the price's cell
        assert top["record"]["text"] == ("Models — P-200; Flow > Min: 15; Flow > Max: 40; "
                                         "Price > EUR: 1850")
        assert top["cell"] == {"ref": "D5", "header": "Price > EUR", "value": "1850"}


def test_a_second_ingest_leaves_the_documents_unchanged(documents_ingest):
    root, paths, results = documents_ingest
    store = DataStore(root)
    before = {r.workbook_hash: store.table_path("chunks", r.workbook_hash).read_bytes()
              for r in results}
    again = ingest_paths(paths, root)
    assert [r.status for r in again] == ["unchanged"] * 3
    forced = ingest_paths(paths, root, force=True)
    assert [r.status for r in forced] == ["success"] * 3
    assert {r.workbook_hash: store.table_path("chunks", r.workbook_hash).read_bytes()
            for r in results} == before
