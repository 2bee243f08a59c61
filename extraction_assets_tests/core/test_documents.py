"""Word, PowerPoint, PDF, HTML and Markdown read as sheets: sniffing, the blocks, records,
heading paths and chunks a reader expects, PDF page routing, typed errors and limits."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import pytest

from extraction_assets.core.documents.pdf import (
    MIN_TEXT_CHARS,
    SCAN_COVERAGE,
    image_coverage,
    paragraphs,
    route_page,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.sniff import sniff
from extraction_assets.pipeline import StageError, run_pipeline
from extraction_assets_tests.documents import docx_bytes, pdf_bytes, pptx_bytes


def _words(text: str) -> int:
    return len(text.split())


def _run(data: bytes, **kwargs) -> dict:
    return run_pipeline(data, filename="document", count_tokens=_words, max_tokens=200,
                        min_tokens=20, **kwargs)


def _blocks(tables: dict) -> list[dict]:
    return tables["blocks"].to_pylist()


@pytest.fixture(scope="module")
def word() -> dict:
    return _run(docx_bytes())


@pytest.fixture(scope="module")
def slides() -> dict:
    return _run(pptx_bytes())


@pytest.fixture(scope="module")
def report() -> dict:
    return _run(pdf_bytes())


def test_formats_are_sniffed_from_the_bytes():
    assert sniff(docx_bytes()).format == "docx"
    assert sniff(pptx_bytes()).format == "pptx"
    pdf = sniff(pdf_bytes(scanned_page=False))
    assert (pdf.format, pdf.label) == ("pdf", "pdf/1.3")
    assert sniff(b"<!DOCTYPE html><html><body><h1>Hi</h1></body></html>").format == "html"
    assert sniff(b"# Notes\n\nSome text.\n").format == "md"
    assert sniff(b"Just a sentence of prose.\n").format == "other"
    assert sniff(b"a|b|c\n1|2|3\n4|5|6\n").format == "csv"  # delimited text stays CSV


def test_word_sections_are_sheets_named_after_their_headings(word):
    sheets = word["parsed_sheets"].to_pylist()
    assert [(s["sheet_name"], s["kind"]) for s in sheets] == [
        ("Pump specification", "section"), ("Models", "section"),
        ("Page headers and footers", "section")]
    assert sheets[1]["merged_ranges"] == ["A2:A3", "B2:C2"]


def test_word_table_has_two_header_rows_and_typed_records(word):
    table = next(b for b in _blocks(word) if b["kind"] == "table")
    assert (table["sheet_name"], table["a1_range"], table["header_row_count"]) == (
        "Models", "A2:D5", 2)
    assert table["source_ref"] == "#/tables/0"
    assert table["heading_path"] == ["Models"]
    columns = [(c["header"], c["header_levels"]) for c in word["block_columns"].to_pylist()]
    assert columns == [("Model", ["Model"]), ("Flow > Min", ["Flow", "Min"]),
                       ("Flow > Max", ["Flow", "Max"]), ("Price > EUR", ["Price", "EUR"])]
    records = [(r["row"], r["a1_range"], json.loads(r["record"]))
               for r in word["records"].to_pylist()]
    assert records == [
        (4, "A4:D4", {"Model": "P-100", "Flow > Min": 10, "Flow > Max": 20, "Price > EUR": 1200}),
        (5, "A5:D5", {"Model": "P-200", "Flow > Min": 15, "Flow > Max": 40, "Price > EUR": 1850})]


def test_word_headings_lists_and_paragraphs(word):
    blocks = [(b["sheet_name"], b["kind"], b["level"], b["heading_path"], b["text"])
              for b in _blocks(word) if b["kind"] != "table"]
    assert blocks == [
        ("Pump specification", "title", 1, ["Pump specification"], "Pump specification"),
        ("Pump specification", "text", None, ["Pump specification"],
         "This document specifies the centrifugal pumps of the Riverside station."),
        ("Models", "title", 1, ["Models"], "Models"),
        ("Models", "title", 2, ["Models", "Options"], "Options"),
        ("Models", "text", None, ["Models", "Options"],
         "- Stainless steel housing\n- Variable speed drive\n  - Remote monitoring"),
        ("Models", "text", None, ["Models", "Options"], "All options ship within six weeks."),
        ("Page headers and footers", "text", None, ["Page headers and footers"],
         "ACME confidential"),
    ]


def test_word_chunks_carry_heading_paths_and_the_table(word):
    chunks = {tuple(c["heading_path"]): c["text"] for c in word["chunks"].to_pylist()}
    assert chunks[("Models",)] == (
        "# Models\n\n| Model | Flow > Min | Flow > Max | Price > EUR |\n| --- | --- | --- | --- |\n"
        "| P-100 | 10 | 20 | 1200 |\n| P-200 | 15 | 40 | 1850 |")
    assert chunks[("Models", "Options")] == (
        "# Models\n\n## Options\n\n- Stainless steel housing\n- Variable speed drive\n"
        "  - Remote monitoring\n\nAll options ship within six weeks.")
    assert chunks[("Pump specification",)] == (
        "# Pump specification\n\nThis document specifies the centrifugal pumps of the "
        "Riverside station.")
    assert not [i for i in word["extraction_issues"].to_pylist() if i["severity"] != "info"]


def test_powerpoint_slides_tables_notes_and_chart_data(slides):
    assert [(s["sheet_name"], s["kind"]) for s in slides["parsed_sheets"].to_pylist()] == [
        ("Slide 1", "slide"), ("Slide 2", "slide")]
    blocks = [(b["sheet_name"], b["kind"], b["heading_path"], b["title"])
              for b in _blocks(slides)]
    assert blocks == [
        ("Slide 1", "title", ["Slide 1", "Quarterly review"], None),
        ("Slide 1", "table", ["Slide 1", "Quarterly review"], None),
        ("Slide 1", "title", ["Slide 1", "Quarterly review", "Speaker notes"], None),
        ("Slide 1", "text", ["Slide 1", "Quarterly review", "Speaker notes"], None),
        ("Slide 2", "title", ["Slide 2", "Sales chart"], None),
        ("Slide 2", "chart", ["Slide 2", "Sales chart"], "Sales by quarter"),
        ("Slide 2", "table", ["Slide 2", "Sales chart", "Sales by quarter"], "Sales by quarter"),
    ]
    chart = next(b for b in _blocks(slides) if b["kind"] == "chart")
    assert chart["text"] == ('Chart "Sales by quarter" (bar)\n'
                             'Series "North": Q1 = 120; Q2 = 135\n'
                             'Series "South": Q1 = 80; Q2 = 95')
    records = [(r["sheet_name"], json.loads(r["record"])) for r in slides["records"].to_pylist()]
    assert records == [
        ("Slide 1", {"Region": "North", "Q1": 120, "Q2": 135}),
        ("Slide 1", {"Region": "South", "Q1": 80, "Q2": 95}),
        ("Slide 2", {"Column A": "Q1", "North": 120, "South": 80}),
        ("Slide 2", {"Column A": "Q2", "North": 135, "South": 95}),
    ]
    notes = next(c for c in slides["chunks"].to_pylist() if "Speaker notes" in c["heading_path"])
    assert notes["text"] == ("# Slide 1\n\n## Quarterly review\n\n### Speaker notes\n\n"
                             "Mention the growth of the North region.")


def test_pdf_pages_are_routed_and_read_from_the_text_layer(report):
    pages = {o["sheet_name"]: json.loads(o["details"])
             for o in report["sheet_objects"].to_pylist() if o["kind"] == "pdf_page"}
    assert {name: p["route"] for name, p in pages.items()} == {
        "Page 1": "digital", "Page 2": "digital", "Page 3": "image_scan"}
    assert pages["Page 3"]["chars"] == 0 and pages["Page 3"]["image_coverage"] == 1.0
    blocks = [(b["sheet_name"], b["kind"], b["source_ref"], b["text"]) for b in _blocks(report)]
    assert blocks == [
        ("Page 1", "text", "page 1 paragraph 1", "Annual maintenance report"),
        ("Page 1", "text", "page 1 paragraph 2",
         "The pumping station ran 8,412 hours in 2023. Two unplanned stops were recorded, "
         "both caused by the intake screen clogging after the spring floods."),
        ("Page 1", "text", "page 1 paragraph 3",
         "The maintenance budget was kept within 3 percent of plan, and the spare parts for "
         "both pumps were ordered in March."),
        ("Page 2", "text", "page 2 paragraph 1",
         "Conclusions: the station needs a new intake screen before winter, estimated at "
         "40,000 EUR, and a second inspection in October."),
    ]
    issues = {i["code"]: i["message"] for i in report["extraction_issues"].to_pylist()}
    assert "pdf_tables_failed" not in issues and "office_export" not in issues
    assert issues["ocr_not_configured"].startswith("page 3: scanned pages")
    chunks = report["chunks"].to_pylist()
    assert [c["heading_path"] for c in chunks] == [["Page 1"], ["Page 1"], ["Page 2"]]
    assert chunks[2]["text"].startswith("# Page 2\n\nConclusions: the station needs")


def test_page_routes_follow_the_named_thresholds():
    assert route_page(MIN_TEXT_CHARS, 0.0) == "digital"
    assert route_page(MIN_TEXT_CHARS - 1, SCAN_COVERAGE - 0.01) == "low_text"
    assert route_page(MIN_TEXT_CHARS, SCAN_COVERAGE) == "ocr_scan"
    assert route_page(0, 1.0) == "image_scan"
    # two overlapping pictures over the left half count once
    assert image_coverage([(0, 0, 50, 100), (0, 0, 50, 100)], 100, 100) == 0.5


def test_text_runs_become_lines_and_paragraphs():
    runs = [(30, 790, 240, 806, 16.0, "Title"),
            (30, 771, 560, 781, 11.0, "first line of a paragraph that"),
            (30, 754, 300, 764, 11.0, "goes on here."),
            (30, 720, 200, 730, 11.0, "Next"), (210, 720, 300, 730, 11.0, "paragraph.")]
    assert paragraphs(runs) == [(806, "Title"),
                                (781, "first line of a paragraph that goes on here."),
                                (730, "Next paragraph.")]


def test_a_file_of_scans_has_the_image_scan_verdict():
    from fpdf import FPDF  # a page that is one picture

    from extraction_assets.core.open import open_workbook

    pdf = FPDF()
    pdf.add_page()
    from PIL import Image

    stream = io.BytesIO()
    Image.new("L", (200, 280), 200).save(stream, "PNG")
    pdf.image(stream, x=0, y=0, w=pdf.w, h=pdf.h)
    wb = open_workbook(bytes(pdf.output()))
    assert wb.conversion["verdict"] == "image_scan"
    assert wb.conversion["pages"] == {"image_scan": 1}


def test_encrypted_and_damaged_pdfs_fail_typed():
    locked = pdf_bytes(scanned_page=False, password="s3cret")
    with pytest.raises(StageError) as err:
        _run(locked)
    assert err.value.error.code == "encrypted"
    with pytest.raises(StageError) as err:
        _run(locked, passwords=["wrong"])
    assert err.value.error.code == "encrypted"
    opened = _run(locked, passwords=["wrong", "s3cret"])
    assert [b["sheet_name"] for b in _blocks(opened)] == ["Page 1"] * 3 + ["Page 2"]
    with pytest.raises(StageError) as err:
        _run(pdf_bytes(scanned_page=False)[:400])
    assert err.value.error.code == "corrupt_workbook"


def test_limits_and_hostile_packages_are_refused():
    with pytest.raises(StageError) as err:
        _run(pdf_bytes(), limits=Limits(max_sheets=2))
    assert err.value.error.code == "limit_exceeded"
    with pytest.raises(StageError) as err:
        _run(pptx_bytes(), limits=Limits(max_sheets=1))
    assert err.value.error.code == "limit_exceeded"
    source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"?>", b'?><!DOCTYPE d [<!ENTITY x "boom">]>', 1)
            target.writestr(info, data)
    with pytest.raises(StageError) as err:
        _run(out.getvalue())
    assert err.value.error.code == "hostile_content"
    with pytest.raises(StageError) as err:
        _run(docx_bytes()[:2000])
    assert err.value.error.code == "corrupt_workbook"


def test_same_bytes_give_the_same_tables():
    data = pptx_bytes()
    first, second = _run(data), _run(data)
    for name in ("parsed_cells", "blocks", "block_columns", "records", "chunks"):
        assert first[name].equals(second[name]), name


def test_html_and_markdown_come_through_docling_too():
    html = (b"<!DOCTYPE html><html><body><h1>Tariffs</h1><p>Valid from May.</p>"
            b"<table><tr><th>Zone</th><th>Price</th></tr><tr><td>A</td><td>2.5</td></tr>"
            b"</table></body></html>")
    tables = _run(html)
    assert [json.loads(r["record"]) for r in tables["records"].to_pylist()] == [
        {"Zone": "A", "Price": 2.5}]
    assert {b["kind"] for b in _blocks(tables)} == {"title", "text", "table"}
    markdown = b"# Tariffs\n\n## Zones\n\n| Zone | Price |\n|---|---|\n| A | 2.5 |\n"
    tables = _run(markdown)
    table = next(b for b in _blocks(tables) if b["kind"] == "table")
    # "#" is the title (a sheet of its own), "##" the top heading level: a section each
    assert [s["sheet_name"] for s in tables["parsed_sheets"].to_pylist()] == ["Tariffs", "Zones"]
    assert (table["sheet_name"], table["heading_path"]) == ("Zones", ["Zones"])


@pytest.mark.integration
def test_reading_word_and_powerpoint_never_imports_torch(tmp_path):
    (tmp_path / "a.docx").write_bytes(docx_bytes())
    (tmp_path / "a.pptx").write_bytes(pptx_bytes())
    code = ("import sys\nfrom extraction_assets.pipeline import run_pipeline\n"
            f"for name in ('a.docx', 'a.pptx'):\n"
            f"    run_pipeline(open({str(tmp_path)!r} + '/' + name, 'rb').read())\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'transformers', 'docling_ibm_models')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_hidden_slide_is_a_hidden_sheet():
    from pptx import Presentation

    deck = Presentation(io.BytesIO(pptx_bytes()))
    deck.slides[1]._element.set("show", "0")  # Slide Show > Hide Slide
    out = io.BytesIO()
    deck.save(out)
    tables = _run(out.getvalue())
    assert [(s["sheet_name"], s["visibility"]) for s in tables["sheets"].to_pylist()] == [
        ("Slide 1", "visible"), ("Slide 2", "hidden")]
    assert {b["sheet_name"] for b in _blocks(tables)} == {"Slide 1"}
    assert [i["code"] for i in tables["extraction_issues"].to_pylist()] == ["hidden_sheet_skipped"]


def test_docling_models_configured_but_not_installed_fall_back_to_the_text_layer(
        tmp_path, monkeypatch):
    monkeypatch.setenv("EXTRACTION_ASSETS_DOCLING_MODELS", str(tmp_path))
    tables = _run(pdf_bytes(scanned_page=False))
    issues = {i["code"]: i for i in tables["extraction_issues"].to_pylist()}
    assert issues["docling_models_unavailable"]["severity"] == "warning"
    assert "PDF read from its text layer" in issues["docling_models_unavailable"]["message"]
    assert len(_blocks(tables)) == 4
    monkeypatch.setenv("EXTRACTION_ASSETS_DOCLING_MODELS", str(tmp_path / "missing"))
    issues = {i["code"]: i for i in _run(pdf_bytes(scanned_page=False))[
        "extraction_issues"].to_pylist()}
    assert "names no folder" in issues["docling_models_unavailable"]["message"]


def test_documents_without_content_have_no_sheets():
    import docx
    from pptx import Presentation

    for document in (docx.Document(), Presentation()):
        out = io.BytesIO()
        document.save(out)
        tables = _run(out.getvalue())
        assert tables["sheets"].num_rows == tables["chunks"].num_rows == 0
