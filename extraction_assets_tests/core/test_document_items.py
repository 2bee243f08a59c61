"""What a file's items carry besides their text, and the skips that are said: Word comments as
comments (not speaker notes), the alt text of pictures and charts, and the ``info`` issues of
an empty sheet, a missing stylesheet and bold font sizes folded into heading level 6 -- on
files built here with python-docx, python-pptx and openpyxl."""

from __future__ import annotations

import io

from extraction_assets.pipeline import run_pipeline


def _run(data: bytes) -> dict:
    return run_pipeline(data, filename="document", count_tokens=lambda t: len(t.split()),
                        max_tokens=200, min_tokens=20)


def commented_docx() -> bytes:
    """A Word file of two sections: a paragraph with Kim's comment and a table whose cell has
    Lee's comment, then a paragraph with an anonymous comment."""
    import docx

    document = docx.Document()
    document.add_heading("Pump review", 1)
    paragraph = document.add_paragraph("The impeller was replaced in March.")
    document.add_comment(paragraph.runs, text="Check the invoice number first.", author="Kim",
                         initials="K")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Part", (0, 1): "Cost", (1, 0): "Seal", (1, 1): "85"}.items():
        table.cell(r, c).text = text
    document.add_comment(table.cell(1, 1).paragraphs[0].runs, text="Price from the 2023 list.",
                         author="Lee")
    document.add_heading("Next steps", 1)
    paragraph = document.add_paragraph("Order a spare.")
    document.add_comment(paragraph.runs, text="Two spares, not one.", author="")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_word_comments_follow_the_text_they_annotate_not_speaker_notes():
    tables = _run(commented_docx())
    items = [(b["sheet_name"], b["a1_range"], b["text"], b["heading_path"])
             for b in tables["blocks"].to_pylist() if b["kind"] == "text"]
    assert items == [
        ("Pump review", "A2", "The impeller was replaced in March.", ["Pump review"]),
        ("Pump review", "A3", "Comment by Kim: Check the invoice number first.",
         ["Pump review"]),
        ("Next steps", "A2", "Order a spare.", ["Next steps"]),
        ("Next steps", "A3", "Comment: Two spares, not one.", ["Next steps"]),
        # a table cell's comment: Docling keeps no item it annotates
        ("Comments", "A1", "Comment by Lee: Price from the 2023 list.", ["Comments"])]
    details = {o["text"]: o["details"] for o in tables["sheet_objects"].to_pylist()
               if '"comment"' in (o["details"] or "")}
    kim = details["Comment by Kim: Check the invoice number first."]
    assert '"author": "Kim"' in kim and '"initials": "K"' in kim and '"time": "' in kim
    chunks = tables["chunks"].to_pylist()
    assert not any("Speaker notes" in c["heading_path"] or "Speaker notes" in c["text"]
                   for c in chunks)
    assert any("Comment by Kim" in c["text"] and c["heading_path"] == ["Pump review"]
               for c in chunks)


def _png() -> io.BytesIO:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (200, 100), "white").save(out, "PNG")
    out.seek(0)
    return out


def test_alt_text_of_word_and_powerpoint_pictures_and_charts_is_their_text():
    import docx
    import pptx
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    document = docx.Document()
    document.add_heading("Plant", 1)
    document.add_picture(_png())
    document.inline_shapes[0]._inline.docPr.set("descr", "Photo of the north intake screen")
    out = io.BytesIO()
    document.save(out)
    word = _run(out.getvalue())
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Sales"
    picture = slide.shapes.add_picture(_png(), Inches(1), Inches(2))
    picture._element.nvPicPr.cNvPr.set("descr", "Logo of Acme Pumps")
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("North", (120, 135))
    frame = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(4), Inches(2),
                                   Inches(4), Inches(3), data)
    frame._element.nvGraphicFramePr.cNvPr.set("title", "North grew in Q2")
    out = io.BytesIO()
    deck.save(out)
    slides = _run(out.getvalue())
    floating = [(b["kind"], b["text"]) for t in (word, slides)
                for b in t["blocks"].to_pylist() if b["kind"] in ("image", "chart")]
    assert floating == [
        ("image", "Photo of the north intake screen"),
        ("image", "Logo of Acme Pumps"),
        ("chart", 'Chart (bar)\nSeries "North": Q1 = 120; Q2 = 135\nNorth grew in Q2')]
    chunks = " ".join(c["text"] for t in (word, slides) for c in t["chunks"].to_pylist())
    for text in ("Photo of the north intake screen", "Logo of Acme Pumps", "North grew in Q2"):
        assert text in chunks


def test_alt_text_of_a_worksheet_chart_follows_its_data():
    import zipfile

    import openpyxl
    from openpyxl.chart import BarChart, Reference

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in (("Quarter", "North"), ("Q1", 120), ("Q2", 135)):
        ws.append(row)
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=3))
    ws.add_chart(chart, "D2")
    out = io.BytesIO()
    wb.save(out)
    patched = io.BytesIO()
    with zipfile.ZipFile(out) as source, zipfile.ZipFile(patched, "w") as target:
        for item in source.infolist():
            part = source.read(item.filename)
            if item.filename.startswith("xl/drawings/drawing"):
                part = part.replace(b'name="Chart 1"',
                                    b'name="Chart 1" descr="North sales rose in Q2"')
            target.writestr(item, part)
    tables = _run(patched.getvalue())
    chart_block, = [b for b in tables["blocks"].to_pylist() if b["kind"] == "chart"]
    assert chart_block["text"].endswith("\nNorth sales rose in Q2")
    assert "Q1 = 120" in chart_block["text"]


def _word_with_chart(alt_text: str) -> bytes:
    """A Word file whose one paragraph holds a bar chart (the chart part written by
    python-pptx's chart XML writer, placed inline as Word places one) with ``alt_text``."""
    import zipfile

    import docx
    from pptx.chart.data import CategoryChartData
    from pptx.chart.xmlwriter import ChartXmlWriter
    from pptx.enum.chart import XL_CHART_TYPE

    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("North", (120, 135))
    chart_xml = ChartXmlWriter(XL_CHART_TYPE.COLUMN_CLUSTERED, data).xml.encode()
    document = docx.Document()
    document.add_heading("Sales", 1)
    document.add_paragraph("CHART-HERE")
    out = io.BytesIO()
    document.save(out)
    drawing = (
        '<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
        'drawingml/2006/wordprocessingDrawing"><wp:extent cx="4572000" cy="2743200"/>'
        f'<wp:docPr id="7" name="Chart 1" descr="{alt_text}"/><a:graphic xmlns:a="http://'
        'schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.'
        'openxmlformats.org/drawingml/2006/chart"><c:chart xmlns:c="http://schemas.'
        'openxmlformats.org/drawingml/2006/chart" xmlns:r="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships" r:id="rIdChart1"/></a:graphicData></a:graphic>'
        '</wp:inline></w:drawing></w:r>')
    patched = io.BytesIO()
    with zipfile.ZipFile(out) as source, zipfile.ZipFile(patched, "w") as target:
        for item in source.infolist():
            part = source.read(item.filename)
            if item.filename == "word/document.xml":
                start = part.index(b"<w:r>", part.index(b"CHART-HERE") - 200)
                end = part.index(b"</w:r>", start) + len(b"</w:r>")
                part = part[:start] + drawing.encode() + part[end:]
            elif item.filename == "word/_rels/document.xml.rels":
                part = part.replace(b"</Relationships>", (
                    b'<Relationship Id="rIdChart1" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/chart" Target="charts/chart1.xml"/>'
                    b"</Relationships>"))
            elif item.filename == "[Content_Types].xml":
                part = part.replace(b"</Types>", (
                    b'<Override PartName="/word/charts/chart1.xml" ContentType="application/'
                    b'vnd.openxmlformats-officedocument.drawingml.chart+xml"/></Types>'))
            target.writestr(item, part)
        target.writestr("word/charts/chart1.xml", chart_xml)
    return patched.getvalue()


def test_alt_text_of_a_word_chart_follows_its_data():
    tables = _run(_word_with_chart("North grew by 15 in Q2"))
    charts = [b["text"] for b in tables["blocks"].to_pylist() if b["kind"] == "chart"]
    assert len(charts) == 1 and charts[0].endswith("\nNorth grew by 15 in Q2")
    assert "Q2 = 135" in charts[0]


def _issues(tables: dict, code: str) -> list[tuple]:
    return [(i["sheet_name"], i["severity"], i["message"])
            for i in tables["extraction_issues"].to_pylist() if i["code"] == code]


def _saved(wb) -> bytes:
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def test_an_empty_sheet_is_said():
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "Data"
    wb.active.append(["Region", "Units"])
    wb.active.append(["North", 10])
    wb.create_sheet("Notes")
    tables = _run(_saved(wb))
    assert _issues(tables, "empty_sheet") == [
        ("Notes", "info", "sheet 'Notes' has no cells and no charts or pictures: no block")]


def test_a_workbook_without_a_stylesheet_is_read_with_the_default_style_and_says_so():
    import zipfile

    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["Region", "Units"])
    wb.active.append(["North", 10])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_saved(wb))) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            if item.filename != "xl/styles.xml":
                target.writestr(item, source.read(item.filename))
    tables = _run(out.getvalue())
    assert _issues(tables, "styles_missing") == [
        (None, "info", "the stylesheet xl/styles.xml is missing from the package: every cell is "
                       "read with the default style (General number format, 11 pt, not bold, "
                       "no fill)")]
    records = [r["record"] for r in tables["records"].to_pylist()]
    assert records == ['{"Region": "North", "Units": 10}']


def test_bold_font_sizes_past_heading_level_6_are_said():
    import openpyxl
    from openpyxl.styles import Font

    wb = openpyxl.Workbook()
    ws = wb.active
    row = 1
    for size in (24, 20, 18, 16, 14, 12):
        ws.cell(row, 1, f"Heading at {size} pt").font = Font(bold=True, size=size)
        for k in range(3):
            ws.cell(row + 1 + k, 1, f"body text {k}")
        row += 5
    tables = _run(_saved(wb))
    assert _issues(tables, "heading_levels_folded") == [
        (None, "info", "bold text in 6 font sizes; heading levels go to 6: sizes 12, 14 pt all "
                       "take level 6")]
    one_size_fewer = openpyxl.load_workbook(io.BytesIO(_saved(wb)))
    one_size_fewer.active.cell(26, 1).font = Font(bold=True, size=24)
    assert _issues(_run(_saved(one_size_fewer)), "heading_levels_folded") == []


def test_word_and_powerpoint_97_files_are_sniffed_and_need_libreoffice(monkeypatch):
    import pytest

    from extraction_assets.core.errors import UnsupportedFormatError
    from extraction_assets.core.open import open_workbook
    from extraction_assets.core.sniff import sniff
    from extraction_assets_tests.documents import ole2_bytes

    doc, ppt = ole2_bytes("WordDocument", b"\xec\xa5"), ole2_bytes("PowerPoint Document", b"")
    assert (sniff(doc).format, sniff(doc).label, sniff(ppt).format) == ("doc", "ole2", "ppt")
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", "off")
    with pytest.raises(UnsupportedFormatError, match="doc files are converted to docx by "
                       "LibreOffice, which EXTRACTION_ASSETS_SOFFICE='off' turns off"):
        open_workbook(doc)
    with pytest.raises(UnsupportedFormatError, match="ppt files are converted to pptx"):
        open_workbook(ppt)


def test_without_libreoffice_a_doc_names_what_to_install(monkeypatch, tmp_path):
    import pytest

    from extraction_assets.core.errors import UnsupportedFormatError
    from extraction_assets.core.open import open_workbook
    from extraction_assets_tests.documents import ole2_bytes

    monkeypatch.delenv("EXTRACTION_ASSETS_SOFFICE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no soffice on it
    with pytest.raises(UnsupportedFormatError, match=r"which is not installed \(sudo apt-get "
                                                     "install libreoffice-writer-nogui"):
        open_workbook(ole2_bytes("WordDocument", b""))
