"""OCR with Tesseract: scanned PDF pages and pictures of workbooks and Word files read as text,
words with their confidence and box, the bounds. Pages and pictures are drawn by the tests
(:mod:`extraction_assets_tests.scans`); the tests that run Tesseract (a process) are
``integration`` and skip without it."""

from __future__ import annotations

import io
import stat

import pytest

from extraction_assets.core.limits import Limits
from extraction_assets.core.ocr import (
    MIN_CONFIDENCE,
    TESSERACT_ENV,
    TIMEOUT_ENV,
    _paragraphs,
    find_tesseract,
)
from extraction_assets.core.open import open_workbook
from extraction_assets_tests.scans import (
    TABLE_ROWS,
    need_tesseract,
    picture_xlsx_bytes,
    ruled_table_page,
    scanned_page,
    scanned_pdf_bytes,
)


def _items(wb) -> list:
    return [o for s in wb.iter_sheets() for o in s.objects]


def _tsv(words: list[tuple]) -> dict:
    """pytesseract's dict of columns for ``(block, par, line, text, conf, left, top, w, h)``
    word rows, with the non-word rows Tesseract writes before them."""
    columns = {k: [] for k in ("level", "page_num", "block_num", "par_num", "line_num",
                               "word_num", "left", "top", "width", "height", "conf", "text")}
    for block, par, line, text, conf, left, top, width, height in words:
        for level, value in ((4, ""), (5, text)):
            for key, v in zip(columns, (level, 1, block, par, line, 1, left, top, width,
                                        height, conf if level == 5 else -1, value)):
                columns[key].append(v)
    return columns


def test_words_become_paragraphs_joined_as_each_script_is_written():
    data = _tsv([(1, 1, 1, "Net", 96, 10, 10, 40, 20), (1, 1, 1, "sales", 91, 60, 10, 60, 20),
                 (1, 1, 2, "1,250", 40, 10, 40, 60, 20),
                 (2, 1, 1, "売上高", 93, 10, 100, 90, 30), (2, 1, 1, "の", 95, 100, 100, 30, 30),
                 (2, 1, 2, "合計", 90, 10, 140, 60, 30), (2, 1, 2, "", 0, 80, 140, 5, 30)])
    first, second = _paragraphs(data, scale=2.0)
    assert first.text == "Net sales\n1,250"  # a line a line
    assert second.text == "売上高の合計"  # no space inside Japanese, across lines either
    assert first.box == (5, 5, 60, 30)  # pixels of the enlarged image / 2
    assert first.confidence == round((96 + 91 + 40) / 3, 1)
    assert [(w.text, w.confidence, w.box) for w in first.doubtful()] == [
        ("1,250", 40.0, (5, 20, 35, 30))]
    assert second.doubtful() == []


def test_ocr_off_or_missing_finds_no_tesseract(monkeypatch, tmp_path):
    monkeypatch.setenv(TESSERACT_ENV, "off")
    assert find_tesseract() is None
    monkeypatch.setenv(TESSERACT_ENV, str(tmp_path / "no-such-tesseract"))
    assert find_tesseract() is None


def test_without_tesseract_a_picture_keeps_its_alt_text_and_says_so(monkeypatch):
    monkeypatch.setenv(TESSERACT_ENV, "off")
    wb = open_workbook(picture_xlsx_bytes())
    picture, = [o for o in _items(wb) if o.kind == "picture"]
    assert picture.text == "Sales figure" and "ocr_text" not in picture.details
    assert [(i.code, i.severity, i.sheet_name, i.ref) for i in wb.issues] == [
        ("ocr_not_configured", "info", "Summary", "B3")]


@pytest.mark.integration
def test_a_scanned_page_is_read_with_words_boxes_and_confidence():
    need_tesseract()
    wb = open_workbook(scanned_pdf_bytes())
    assert wb.conversion["verdict"] == "image_scan"
    paragraphs = [o for o in _items(wb) if o.kind == "document_item"]
    assert [(o.ref, o.name, o.details["block"], o.details["label"]) for o in paragraphs] == [
        ("A1", "page 1 ocr paragraph 1", "text", "ocr"),
        ("A2", "page 1 ocr paragraph 2", "text", "ocr"),
        ("A3", "page 1 ocr paragraph 3", "text", "ocr")]
    title, body, squeezed = paragraphs
    assert title.text == "Cooling tower inspection"
    assert body.text == ("The cooling tower passed the pressure test on 12 March.\n"
                         "冷却塔は三月十二日の圧力試験に合格しました。")
    # boxes in points from the page's top left: the title drawn at (160, 200) px of 200 dpi
    left, top, right, bottom = title.details["bbox"]
    assert 55 <= left <= 62 and 70 <= top <= 80 and left < right < 320 and top < bottom < 100
    assert body.details["bbox"][1] > bottom
    assert title.details["ocr_confidence"] > 90 and title.details["ocr_doubtful"] == []
    assert body.details["ocr_doubtful"] == []
    doubtful = squeezed.details["ocr_doubtful"]
    assert doubtful and all(conf < MIN_CONFIDENCE for _, conf, *_ in doubtful)
    assert {w for w, *_ in doubtful} <= set(squeezed.text.split())
    assert squeezed.details["ocr_reader"].startswith("tesseract 5")
    codes = [(i.code, i.severity) for i in wb.issues]
    assert codes == [("ocr_read", "info")]
    assert open_workbook(scanned_pdf_bytes()).parsed[0].objects == wb.parsed[0].objects
    pages = open_workbook(scanned_pdf_bytes(pages=3)).parsed  # read by workers in parallel
    assert [[o.text for o in p.objects if o.kind == "document_item"] for p in pages] == [
        [o.text for o in paragraphs]] * 3


@pytest.mark.integration
def test_a_picture_in_a_worksheet_is_read_after_its_alt_text():
    need_tesseract()
    wb = open_workbook(picture_xlsx_bytes())
    picture, = [o for o in _items(wb) if o.kind == "picture"]
    assert picture.ref == "B3"
    assert picture.text == "Sales figure\nNet sales total 1,250\n売上高の合計"
    assert picture.details["ocr_text"] == "Net sales total 1,250\n売上高の合計"
    left, top, right, bottom = picture.details["bbox"]  # pixels of the 520 x 140 picture
    assert 10 <= left < right <= 520 and 10 <= top < bottom <= 140
    assert wb.issues == []


@pytest.mark.integration
def test_a_picture_with_a_transparent_background_is_read():
    need_tesseract()
    wb = open_workbook(picture_xlsx_bytes(transparent=True))
    picture, = [o for o in _items(wb) if o.kind == "picture"]
    assert picture.details["ocr_text"] == "Net sales total 1,250\n売上高の合計"


@pytest.mark.integration
def test_a_picture_in_a_word_file_is_read():
    import docx

    need_tesseract()
    png = io.BytesIO()
    scanned_page(("Pump P-200 rated at 40 m3/h",), squeeze_last=False).crop(
        (100, 150, 1300, 320)).save(png, "PNG")
    png.seek(0)
    document = docx.Document()
    document.add_heading("Pumps", 1)
    document.add_picture(png)
    out = io.BytesIO()
    document.save(out)
    wb = open_workbook(out.getvalue())
    picture, = [o for o in _items(wb) if o.details.get("block") == "image"]
    assert picture.text == "Pump P-200 rated at 40 m3/h"
    assert picture.details["ocr_confidence"] > 80


def _little_text_pdf() -> bytes:
    """A page of two lines of text and, between them, a picture of the line ``Spare
    impellers in stock: 14`` (120 x 17 mm: far under half the page, route ``low_text``)."""
    from fpdf import FPDF

    png = io.BytesIO()
    scanned_page(("Spare impellers in stock: 14",), squeeze_last=False).crop(
        (100, 150, 1300, 320)).save(png, "PNG")
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    pdf.cell(0, 10, "Store room count")
    pdf.image(png, x=20, y=40, w=120)
    pdf.set_y(80)
    pdf.cell(0, 10, "Counted on 3 May.")
    return bytes(pdf.output())


def test_without_ocr_the_picture_on_a_page_of_little_text_is_said(monkeypatch):
    monkeypatch.setenv(TESSERACT_ENV, "off")
    wb = open_workbook(_little_text_pdf())
    assert [(i.code, i.message.split(":")[0]) for i in wb.issues] == [
        ("ocr_not_configured", "page 1 picture 1"), ("low_text", "page 1")]


@pytest.mark.integration
def test_the_picture_on_a_page_of_little_text_is_read_where_it_stands():
    need_tesseract()
    wb = open_workbook(_little_text_pdf())
    sheet, = wb.iter_sheets()
    route, = [o.details["route"] for o in sheet.objects if o.kind == "pdf_page"]
    items = [(o.ref, o.name, o.text, o.details["label"]) for o in sheet.objects
             if o.kind == "document_item"]
    assert route == "low_text"
    assert items == [("A1", "page 1 paragraph 1", "Store room count", "text_layer"),
                     ("A2", "page 1 picture paragraph 1", "Spare impellers in stock: 14", "ocr"),
                     ("A3", "page 1 paragraph 2", "Counted on 3 May.", "text_layer")]
    left, top, right, bottom = sheet.objects[2].details["bbox"]  # points on the page
    assert 57 <= left < right <= 57 + 340 and 113 <= top < bottom <= 113 + 48


@pytest.mark.integration
def test_images_past_max_ocr_images_are_not_read_and_said():
    need_tesseract()
    wb = open_workbook(scanned_pdf_bytes(pages=2), Limits(max_ocr_images=1))
    texts = {s.info.name: [o.text for o in s.objects if o.kind == "document_item"]
             for s in wb.iter_sheets()}
    assert texts["Page 1"][0] == "Cooling tower inspection" and texts["Page 2"] == []
    issues = {i.code: (i.severity, i.message) for i in wb.issues}
    assert issues["ocr_skipped"] == (
        "warning", "page 2 and later images not read: 1 images were read by OCR "
                   "(max_ocr_images)")
    assert issues["ocr_read"][1].startswith("page 1: scanned pages")


@pytest.mark.integration
def test_a_tesseract_that_hangs_is_stopped_and_the_page_said(monkeypatch, tmp_path):
    program = tmp_path / "tesseract"
    program.write_text("#!/bin/sh\ncase \"$1\" in\n  --version) echo 'tesseract 5.3.0';;\n"
                       "  --list-langs) printf 'List of available languages (1):\\neng\\n';;\n"
                       "  *) exec sleep 30;;\nesac\n")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv(TESSERACT_ENV, str(program))
    monkeypatch.setenv(TIMEOUT_ENV, "1")
    wb = open_workbook(scanned_pdf_bytes())
    assert [(i.code, i.severity, i.message) for i in wb.issues] == [
        ("ocr_failed", "warning", "page 1: Tesseract took more than 1 s (raise "
                                  "EXTRACTION_ASSETS_OCR_TIMEOUT)")]
    assert [o.kind for o in _items(wb)] == ["pdf_page"]


def _stand_in(tmp_path, monkeypatch, body: str) -> None:
    """A ``tesseract`` answering ``--version`` and ``--list-langs`` as Tesseract 5.3.0 with
    English and Japanese, and running ``body`` (sh) to read a picture."""
    program = tmp_path / "tesseract"
    program.write_text("#!/bin/sh\ncase \"$1\" in\n  --version) echo 'tesseract 5.3.0';;\n"
                       "  --list-langs) printf 'List of available languages (2):\\neng\\njpn\\n'"
                       f";;\n  *) {body};;\nesac\n")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv(TESSERACT_ENV, str(program))


@pytest.mark.integration
@pytest.mark.parametrize("body, said", [
    ("echo 'Error: no memory for the page' >&2; exit 1",
     "Tesseract failed (exit 1: Error: no memory for the page)"),
    ("kill -SEGV $$", "Tesseract failed (exit signal 11: no message)")])
def test_a_tesseract_that_fails_or_crashes_is_said_as_such(monkeypatch, tmp_path, body, said):
    _stand_in(tmp_path, monkeypatch, body)
    wb = open_workbook(scanned_pdf_bytes(pages=2))
    assert [(i.code, i.message) for i in wb.issues] == [
        ("ocr_failed", f"page 1: {said}"), ("ocr_failed", f"page 2: {said}")]


def test_a_tesseract_named_but_missing_is_a_misconfiguration(monkeypatch, tmp_path):
    monkeypatch.setenv(TESSERACT_ENV, str(tmp_path / "bin" / "tesseract"))
    wb = open_workbook(picture_xlsx_bytes())
    _items(wb)  # a worksheet's pictures are read with its cells
    assert [(i.code, i.severity, i.message) for i in wb.issues] == [(
        "ocr_misconfigured", "warning",
        f"{TESSERACT_ENV}={str(tmp_path / 'bin' / 'tesseract')!r} names no program that can "
        "run: no OCR, picture 'Image 1' and any other picture or scanned page not read")]
    pdf = open_workbook(scanned_pdf_bytes())
    assert [(i.code, i.message.split(":")[0]) for i in pdf.issues] == [
        ("ocr_misconfigured", TESSERACT_ENV + "='" + str(tmp_path / "bin" / "tesseract") + "' "
         "names no program that can run")]


@pytest.mark.integration
@pytest.mark.parametrize("languages, timeout, problem, read", [
    ("fra", None, "none of the OCR languages 'fra' is installed (installed: eng+jpn; "
                  "EXTRACTION_ASSETS_OCR_LANGUAGES)", False),
    ("eng+fra", None, "OCR languages 'fra' are not installed (installed: eng+jpn): read with "
                      "eng", True),
    (None, "abc", "EXTRACTION_ASSETS_OCR_TIMEOUT='abc' is no number of seconds above 0: 60 s "
                  "used", True),
    (None, "-5", "EXTRACTION_ASSETS_OCR_TIMEOUT='-5' is no number of seconds above 0: 60 s "
                 "used", True)])
def test_settings_that_do_not_work_as_given_are_said(monkeypatch, tmp_path, languages,
                                                     timeout, problem, read):
    from extraction_assets.core.ocr import LANGUAGES_ENV

    _stand_in(tmp_path, monkeypatch, "exit 1")
    for name, value in ((LANGUAGES_ENV, languages), (TIMEOUT_ENV, timeout)):
        if value is not None:
            monkeypatch.setenv(name, value)
    wb = open_workbook(picture_xlsx_bytes())
    _items(wb)
    codes = [(i.code, i.severity, i.message) for i in wb.issues]
    assert codes[0][:2] == ("ocr_misconfigured", "warning")
    assert codes[0][2].startswith(problem)
    assert any(c[0] == "ocr_failed" for c in codes) is read  # the stand-in fails each read


@pytest.mark.integration
def test_a_damaged_picture_is_said_and_keeps_its_alt_text():
    import zipfile

    need_tesseract()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(picture_xlsx_bytes())) as source, \
            zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            part = source.read(item.filename)
            target.writestr(item, part[:len(part) // 3] if item.filename.endswith(".png")
                            else part)
    wb = open_workbook(out.getvalue())
    picture, = [o for o in _items(wb) if o.kind == "picture"]
    assert picture.text == "Sales figure"
    issue, = wb.issues
    assert (issue.code, issue.severity, issue.ref) == ("ocr_failed", "warning", "B3")
    assert issue.message.startswith("picture 'Image 1': the PNG picture cannot be decoded (")


@pytest.mark.integration
def test_a_picture_declaring_too_many_pixels_is_not_decoded():
    import struct
    import zipfile
    import zlib

    need_tesseract()
    data = picture_xlsx_bytes()
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    # a PNG declaring 10,000 x 10,000 pixels (over max_image_pixels, under Pillow's own
    # refusal at twice that) whose data would inflate to 100 MB
    bomb = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10_000, 10_000, 8, 0,
                                                              0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(10_001 * 100))) + chunk(b"IEND", b""))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            target.writestr(item, bomb if item.filename.endswith(".png")
                            else source.read(item.filename))
    wb = open_workbook(out.getvalue())
    picture, = [o for o in _items(wb) if o.kind == "picture"]
    assert picture.text == "Sales figure"
    issue, = wb.issues
    assert (issue.code, issue.severity) == ("limit_exceeded", "error")
    assert "10000 x 10000" in issue.message and "max_image_pixels" in issue.message


def test_the_result_line_says_what_ocr_did_not_read(monkeypatch):
    from rich.console import Console

    from extraction_assets.app import cli
    from extraction_assets.app.ingest import IngestResult

    out = Console(record=True, width=300)
    monkeypatch.setattr(cli, "console", out)
    counts = {"sheets": 1, "tables": 0, "records": 0, "chunks": 1}
    cli._print_result(IngestResult("scan.pdf", "h" * 64, "success", counts=counts))
    cli._print_result(IngestResult("scan.pdf", "h" * 64, "success",
                                   counts={**counts, "ocr_unread": 2}))
    first, second = out.export_text().splitlines()
    assert "ocr" not in first
    assert "ocr_unread=2 (extraction_issues 'ocr_*')" in second


@pytest.mark.integration
def test_a_ruled_table_in_a_scan_is_read_with_all_its_cells():
    from extraction_assets.core.ocr import without_rules

    need_tesseract()
    page = ruled_table_page()
    text = "\n".join(p.text for p in find_tesseract().read(page))
    assert text == "\n".join(" ".join(row) for row in TABLE_ROWS)  # a row a line
    # the rules are gone, the letters are not: nothing dark is left on a rule's line
    import numpy as np

    cleaned = np.asarray(without_rules(page))
    assert (cleaned[300:304, 150:1350] >= 128).all()  # the top rule
    assert (cleaned[300:620, 149:154] >= 128).all()  # the left rule
    inside = (slice(306, 374), slice(156, 544))  # the first cell, rules left out: "Item"
    before = np.asarray(page)[inside] < 128
    assert before.sum() > 300 and ((cleaned[inside] < 128) == before).all()
