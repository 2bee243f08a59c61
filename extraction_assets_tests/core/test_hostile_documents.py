"""Hostile documents of issue #34: nesting depth (HTML, Markdown, Word tables in tables),
decompression bombs outside the zip reader (a PDF stream, a picture Docling decodes) and a
PDF page tree PDFium cannot walk. Every input is built here
(``tools.bench.hostile_documents``)."""

from __future__ import annotations

import io
import sys
import zipfile
import zlib

import duckdb
import pytest

from extraction_assets.app.ingest import ingest_paths
from extraction_assets.core.documents.nesting import check_html_depth, check_markdown_depth
from extraction_assets.core.documents.pdf import check_streams
from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.limits import Limits
from extraction_assets.core.open import open_workbook
from extraction_assets.core.readers import libreoffice
from extraction_assets.pipeline import StageError, run_pipeline
from extraction_assets.store.storage import DataStore
from extraction_assets_tests.builders import ods_bytes
from extraction_assets_tests.documents import pdf_bytes, pptx_bytes
from tools.bench.hostile_documents import (
    _TABLE_END,
    _TABLE_START,
    DOCUMENT_RECIPES,
    _paragraph,
    docx,
    nested_docx_tables,
    pdf,
    pdf_self_kid,
)
from tools.bench.hostile_recipes import package


def refused(data: bytes, filename: str, limits: Limits | None = None) -> StageError:
    with pytest.raises(StageError) as info:
        run_pipeline(data, filename=filename, limits=limits, until="parsed_sheets")
    return info.value


# -- nesting depth -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, scale, where", [
    ("nested_html", 0.01, "the HTML page"),  # 1,000 nested <div>
    ("nested_markdown", 0.01, "the Markdown text"),  # a list 100 deep, 1,000 block quotes
    ("nested_docx_tables", 0.01, "part word/document.xml"),  # 500 tables in tables
])
def test_deep_nesting_is_refused_before_the_document_is_parsed(name, scale, where):
    filename, data = DOCUMENT_RECIPES[name].build(scale)
    error = refused(data, filename)
    assert error.error.code == DOCUMENT_RECIPES[name].expect == "limit_exceeded"
    assert error.error.message.startswith(f"{where} nests deeper than 100 levels")
    assert "(max_nesting_depth)" in error.error.message
    assert [i.code for i in error.output.issues] == ["limit_exceeded"]  # its issues row


def test_html_depth_counts_the_elements_the_tree_builder_nests():
    # void elements never open, a stray end tag closes nothing, an end tag closes up to the
    # latest element of its name (the <span>s left open inside each <div>)
    page = ("<html><body>" + "<div><span>" * 40 + "<br><img src=x><hr/>" * 500
            + "</p></table>" * 500 + "</div>" * 40 + "<p>after" + "</body></html>")
    check_html_depth(page.encode(), 82)  # html, body, 40 x (div, span)
    with pytest.raises(LimitExceededError, match="at least 82"):
        check_html_depth(page.encode(), 81)
    # optional end tags are not implied: html.parser (Docling's) nests <p><p> as deep
    with pytest.raises(LimitExceededError):
        check_html_depth(b"<p>x" * 101, 100)
    check_html_depth("<div>".encode("utf-16") * 3, 3)  # decoded after its byte-order mark
    with pytest.raises(LimitExceededError):
        check_html_depth("<div>".encode("utf-16") * 4, 3)


def test_markdown_depth_counts_block_quotes_and_list_items_around_a_line():
    nested = "".join("  " * k + f"- item {k}\n" for k in range(10))
    check_markdown_depth(nested.encode(), 10)
    with pytest.raises(LimitExceededError, match="at least 11"):
        check_markdown_depth((nested + " " * 20 + "- one more\n").encode(), 10)
    # a line back at the left margin closes the items; indented code opens nothing
    check_markdown_depth((nested + "back\n" + "    " + "- " * 50 + "\n" + nested).encode(),
                         10)
    check_markdown_depth(b"> > - 1. quoted item\n", 4)
    with pytest.raises(LimitExceededError):
        check_markdown_depth(b"> > - 1. > quoted item\n", 4)
    with pytest.raises(LimitExceededError):
        check_markdown_depth(b">" * 1_000_000, 100)


def test_nesting_within_the_limit_is_read_and_the_limit_is_configured():
    html = ("<html><body><h1>Deep</h1>" + "<div>" * 90 + "<p>ninety levels down</p>"
            + "</div>" * 90 + "</body></html>").encode()
    markdown = ("# Deep\n\n" + "".join("  " * k + f"- item {k}\n" for k in range(20))).encode()
    word = docx(_paragraph("before") + _TABLE_START.decode() * 20 + _paragraph("twenty down")
                + _TABLE_END.decode() * 20)
    for data, filename, text in [(html, "deep.html", "ninety levels down"),
                                 (markdown, "deep.md", "item 19"),
                                 (word, "deep.docx", "twenty down")]:
        tables = run_pipeline(data, filename=filename, until="parsed_sheets")
        assert text in tables["parsed_cells"].column("value").to_pylist(), filename
        tight = refused(data, filename, Limits(max_nesting_depth=12))
        assert "the limit is 12 (max_nesting_depth)" in tight.error.message


# -- decompression bombs -------------------------------------------------------------------------
def test_a_picture_declaring_more_pixels_than_the_limit_is_refused_before_decoding():
    filename, data = DOCUMENT_RECIPES["png_bomb"].build(1.0)  # 12,000 x 12,000 in 3 KB
    error = refused(data, filename)
    assert error.error.code == DOCUMENT_RECIPES["png_bomb"].expect == "limit_exceeded"
    assert error.error.message == (
        "picture word/media/bomb.png declares 12000 x 12000 pixels; the limit is 89478485 "
        "(max_image_pixels; a decompression bomb?)")
    assert [i.code for i in error.output.issues] == ["limit_exceeded"]


def test_a_pdf_stream_inflating_past_the_limit_is_refused_before_pdfium_reads_it():
    filename, data = DOCUMENT_RECIPES["pdf_stream_bomb"].build(1.0)  # 500 MB of spaces
    error = refused(data, filename)
    assert error.error.code == DOCUMENT_RECIPES["pdf_stream_bomb"].expect == "limit_exceeded"
    assert error.error.message.endswith(
        "inflates beyond 134217728 bytes (max_stream_bytes: PDFium holds a stream whole)")
    assert [i.code for i in error.output.issues] == ["limit_exceeded"]


def _one_stream_pdf(stream: bytes, filters: str) -> bytes:
    return pdf(["<< /Type /Catalog /Pages 2 0 R >>",
                "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                [f"<< /Length {len(stream)} /Filter {filters} >>\nstream\n".encode(), stream,
                 b"\nendstream"]])


def test_pdf_streams_get_the_zip_limits_through_every_layer_of_flate():
    spaces = b" " * 20_000_000
    twice = zlib.compress(zlib.compress(spaces, 9), 9)  # 20 MB in a few hundred bytes
    with pytest.raises(LimitExceededError, match="max_compression_ratio"):
        check_streams(_one_stream_pdf(twice, "[/FlateDecode /FlateDecode]"), Limits())
    with pytest.raises(LimitExceededError, match="max_stream_bytes"):
        check_streams(_one_stream_pdf(twice, "[/FlateDecode /FlateDecode]"),
                      Limits(max_compression_ratio=1e9, max_stream_bytes=10_000_000))
    once = zlib.compress(b"BT ET " * 400_000)  # 2.4 MB, ratio about 200
    check_streams(_one_stream_pdf(once, "/FlateDecode"), Limits())
    with pytest.raises(LimitExceededError, match="in total"):
        check_streams(_one_stream_pdf(once, "/FlateDecode") * 2,
                      Limits(max_total_bytes=4_000_000))
    check_streams(pdf_bytes(), Limits())  # a real PDF (fpdf2's Flate streams) passes


# -- PDF structure --------------------------------------------------------------------------------
@pytest.mark.integration
def test_a_page_tree_pdfium_cannot_walk_fails_its_file_typed_and_spares_the_batch(tmp_path):
    bad = tmp_path / "self_kid.pdf"
    bad.write_bytes(pdf_self_kid(1.0)[1])
    good = tmp_path / "report.pdf"
    good.write_bytes(pdf_bytes(scanned_page=False))
    deep = tmp_path / "deep.docx"
    deep.write_bytes(nested_docx_tables(0.01)[1])
    results = ingest_paths([bad, good, deep], tmp_path / "data", until="parsed_sheets")
    by_name = {r.path.rsplit("/", 1)[-1]: r for r in results}
    assert by_name["report.pdf"].status == "success", by_name["report.pdf"].error
    assert by_name["self_kid.pdf"].status == "failed"
    assert "corrupt_workbook" in by_name["self_kid.pdf"].error
    assert "cannot be read: Failed to load page." in by_name["self_kid.pdf"].error
    assert by_name["deep.docx"].status == "failed"
    assert "limit_exceeded" in by_name["deep.docx"].error
    with duckdb.connect(str(DataStore(tmp_path / "data").warehouse_path),
                        read_only=True) as con:
        rows = con.execute("select workbook_hash, code from extraction_issues "
                           "where severity = 'error' order by code").fetchall()
    assert [(h, c) for h, c in rows] == [
        (by_name["self_kid.pdf"].workbook_hash, "corrupt_workbook"),
        (by_name["deep.docx"].workbook_hash, "limit_exceeded")]


# -- LibreOffice's output -------------------------------------------------------------------------
#: A stand-in ``soffice`` whose conversion writes 3 MB (what LibreOffice makes of an ODS that
#: repeats a cell over a whole sheet), and says how much it could write.
BIG_OUTPUT = '''#!{python}
import sys
from pathlib import Path

args = sys.argv[1:]
if "--version" in args:
    print("LibreOffice 7.6.4.1 stand-in")
    sys.exit(0)
written = 0
try:
    with open(Path(args[args.index("--outdir") + 1]) / "input.xlsx", "wb") as out:
        for _ in range(48):
            out.write(b"PK" * 32768)
            out.flush()
            written += 65536
finally:
    Path({log!r}).write_text(str(written))
'''


@pytest.mark.integration
def test_libreoffice_output_is_bounded_and_the_file_read_by_value(tmp_path, monkeypatch):
    log = tmp_path / "written"
    script = tmp_path / "soffice"
    script.write_text(BIG_OUTPUT.format(python=sys.executable, log=str(log)))
    script.chmod(0o755)
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", str(script))
    libreoffice.soffice_version.cache_clear()
    book = ods_bytes({"Data": [["Name", "Value"], ["alpha", 1]]})
    with pytest.raises(LimitExceededError, match="output passed 1000000 bytes"):
        libreoffice.convert(book, "ods", str(script), max_bytes=1_000_000)
    assert int(log.read_text()) <= 1_000_000  # stopped there, never written whole
    workbook = open_workbook(book, Limits(max_total_bytes=1_000_000))
    (warning,) = [i for i in workbook.issues if i.code == "conversion_failed"]
    assert warning.severity == "warning"
    assert "output passed 1000000 bytes (max_total_bytes)" in warning.message
    assert [s.name for s in workbook.sheets] == ["Data"]  # read by value instead


def test_a_word_drawing_is_never_handed_to_libreoffice(monkeypatch):
    """Docling's Word backend renders a DrawingML drawing (or a picture Pillow cannot read)
    by converting it with LibreOffice when one is installed: here a stand-in converter that
    records its calls."""
    import docling.backend.msword_backend as msword

    calls = []
    monkeypatch.setattr(msword, "get_docx_to_pdf_converter",
                        lambda: lambda *args, **kwargs: calls.append(args))
    shape = ('<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
             'drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/>'
             '<wp:docPr id="1" name="Shape 1"/><a:graphic><a:graphicData uri="http://schemas.'
             'microsoft.com/office/word/2010/wordprocessingShape"/></a:graphic></wp:inline>'
             '</w:drawing></w:r></w:p>')
    tables = run_pipeline(docx(_paragraph("a shape:") + shape), filename="shape.docx",
                          until="parsed_sheets")
    assert "a shape:" in tables["parsed_cells"].column("value").to_pylist()
    assert calls == []


def test_groups_of_shapes_nested_too_deep_are_refused_before_the_slides_are_parsed():
    with zipfile.ZipFile(io.BytesIO(pptx_bytes())) as zf:
        parts = {name: zf.read(name) for name in zf.namelist()}
    group = (b'<p:grpSp><p:nvGrpSpPr><p:cNvPr id="90" name="Group"/><p:cNvGrpSpPr/><p:nvPr/>'
             b'</p:nvGrpSpPr><p:grpSpPr/>')
    parts["ppt/slides/slide1.xml"] = parts["ppt/slides/slide1.xml"].replace(
        b"</p:spTree>", group * 150 + b"</p:grpSp>" * 150 + b"</p:spTree>")
    error = refused(package(parts), "groups.pptx")
    assert error.error.code == "limit_exceeded"
    assert error.error.message.startswith("part ppt/slides/slide1.xml nests deeper than 100")
    assert [i.code for i in error.output.issues] == ["limit_exceeded"]
