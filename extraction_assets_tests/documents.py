"""Documents built in code for the tests: a Word specification, a PowerPoint review and a PDF
report (python-docx, python-pptx, fpdf2; nothing copied from elsewhere)."""

from __future__ import annotations

import datetime as dt
import io


def docx_bytes() -> bytes:
    """A Word specification: title ``Pump specification``, an intro paragraph, a heading
    ``Models`` over a table whose header has two rows (``Model`` merged down, ``Flow`` merged
    over ``Min``/``Max``, ``Price`` over ``EUR``) and two rows of data, a heading ``Options``
    over a bulleted list (one nested item), a closing paragraph, and a page header."""
    import docx

    d = docx.Document()
    d.sections[0].header.paragraphs[0].text = "ACME confidential"
    d.add_heading("Pump specification", 0)
    d.add_paragraph("This document specifies the centrifugal pumps of the Riverside station.")
    d.add_heading("Models", 1)
    table = d.add_table(rows=4, cols=4)
    table.cell(0, 0).merge(table.cell(1, 0)).text = "Model"
    table.cell(0, 1).merge(table.cell(0, 2)).text = "Flow"
    table.cell(0, 3).text = "Price"
    for c, text in enumerate(["Min", "Max", "EUR"], start=1):
        table.cell(1, c).text = text
    for r, row in enumerate([["P-100", "10", "20", "1200"], ["P-200", "15", "40", "1850"]],
                            start=2):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    d.add_heading("Options", 2)
    d.add_paragraph("Stainless steel housing", style="List Bullet")
    d.add_paragraph("Variable speed drive", style="List Bullet")
    d.add_paragraph("Remote monitoring", style="List Bullet 2")
    d.add_paragraph("All options ship within six weeks.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def pptx_bytes() -> bytes:
    """A PowerPoint review: slide 1 ``Quarterly review`` with a table (Region, Q1, Q2) and
    speaker notes; slide 2 ``Sales chart`` with a clustered column chart ``Sales by quarter``
    (series North and South over Q1 and Q2)."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Quarterly review"
    table = slide.shapes.add_table(3, 3, Inches(1), Inches(1.5), Inches(6), Inches(1.5)).table
    for r, row in enumerate([["Region", "Q1", "Q2"], ["North", "120", "135"],
                             ["South", "80", "95"]]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    slide.notes_slide.notes_text_frame.text = "Mention the growth of the North region."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Sales chart"
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("North", (120, 135))
    data.add_series("South", (80, 95))
    frame = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1.5),
                                   Inches(6), Inches(4), data)
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Sales by quarter"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _report(title: str):
    """An fpdf2 document dated 2024-01-31 whose first page has ``title`` in bold and the
    station's first paragraph (11 pt)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(dt.datetime(2024, 1, 31, tzinfo=dt.timezone.utc))
    pdf.add_page()
    pdf.set_font("helvetica", "B", 16)
    pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, "The pumping station ran 8,412 hours in 2023. Two unplanned stops "
                         "were recorded, both caused by the intake screen clogging after "
                         "the spring floods.")
    return pdf


def pdf_bytes(scanned_page: bool = True, password: str | None = None) -> bytes:
    """A PDF report: page 1 a heading and two paragraphs, page 2 one paragraph (both with a
    text layer), and (``scanned_page``) page 3 a full-page picture of ruled lines with no
    text, as a scanner without OCR writes it. ``password`` encrypts it (RC4)."""
    from PIL import Image, ImageDraw

    pdf = _report("Annual maintenance report")
    pdf.ln(6)
    pdf.multi_cell(0, 6, "The maintenance budget was kept within 3 percent of plan, and the "
                         "spare parts for both pumps were ordered in March.")
    pdf.add_page()
    pdf.multi_cell(0, 6, "Conclusions: the station needs a new intake screen before winter, "
                         "estimated at 40,000 EUR, and a second inspection in October.")
    if scanned_page:
        pdf.add_page()
        picture = Image.new("L", (850, 1100), 255)
        draw = ImageDraw.Draw(picture)
        for y in range(100, 1000, 40):
            draw.line((80, y, 770, y), fill=0, width=3)
        stream = io.BytesIO()
        picture.save(stream, "PNG")
        pdf.image(stream, x=0, y=0, w=pdf.w, h=pdf.h)
    if password:
        pdf.set_encryption(owner_password=password, user_password=password)
    return bytes(pdf.output())


#: The ruled table of :func:`pdf_tables_bytes`: a header row and four rows.
RULED_ROWS = [("Station", "Hours", "Stops", "Cost (EUR)"),
              ("North intake", "2,104", "1", "12,400"), ("South intake", "2,311", "0", "9,850"),
              ("East basin", "1,997", "1", "14,020"), ("West basin", "2,000", "0", "8,775")]
#: The unruled table of :func:`pdf_tables_bytes` (white space between its columns only).
UNRULED_ROWS = [("Part", "Supplier", "Units", "Price"),
                ("Impeller", "Acme Pumps", "4", "1,200.50"),
                ("Seal kit", "Hydro Ltd", "12", "85.00"),
                ("Bearing", "Acme Pumps", "8", "240.75")]


def pdf_tables_bytes(creator: str | None = None, producer: str | None = None) -> bytes:
    """A one-page PDF report: a bold title, a paragraph, :data:`RULED_ROWS` as a ruled table
    (bold header row), a paragraph, :data:`UNRULED_ROWS` without any rule (bold header row),
    a closing paragraph. ``creator`` and ``producer`` are written in its document
    information."""
    pdf = _report("Quarterly station report")
    if creator:
        pdf.set_creator(creator)
    if producer:
        pdf.set_producer(producer)
    pdf.ln(4)
    for rows, options in ((RULED_ROWS, {"col_widths": (50, 30, 30, 40)}),
                          (UNRULED_ROWS, {"col_widths": (40, 40, 25, 30), "width": 135,
                                          "borders_layout": "NONE", "align": "LEFT"})):
        with pdf.table(first_row_as_headings=True, **options) as table:
            for values in rows:
                row = table.row()
                for value in values:
                    row.cell(value)
        pdf.ln(6)
        pdf.multi_cell(0, 6, "Spare parts were ordered in March for both pumps and delivered "
                             "in April, ahead of the summer peak." if rows is RULED_ROWS else
                             "Conclusions: the station needs a new intake screen before "
                             "winter, estimated at 40,000 EUR.")
        pdf.ln(4)
    return bytes(pdf.output())


def ole2_bytes(stream: str, data: bytes) -> bytes:
    """A Compound File Binary ([MS-CFB], version 3, 512-byte sectors) holding one stream
    ``stream`` of ``data`` padded to 4,096 bytes (so it is in the regular stream, not the mini
    stream): what a Word 97-2003 (``WordDocument``) or PowerPoint 97-2003 (``PowerPoint
    Document``) file is to a sniffer; LibreOffice would not open it."""
    import struct

    end, free, fat_sector, no_stream = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF
    body = data.ljust(max(4096, -(-len(data) // 512) * 512), b"\0")
    n = len(body) // 512
    header = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16)
              + struct.pack("<HHHHH6xIIIIIIIII", 0x3E, 3, 0xFFFE, 9, 6, 0, 1, 1, 0, 4096, end,
                            0, end, 0)
              + struct.pack("<I", 0) + struct.pack("<I", free) * 108)
    chain = [fat_sector, end] + [2 + k + 1 for k in range(n - 1)] + [end]
    fat = struct.pack(f"<{len(chain)}I", *chain).ljust(512, b"\xff")

    def entry(name: str, kind: int, child: int, start: int, size: int) -> bytes:
        raw = name.encode("utf-16-le") + b"\0\0"
        return (raw.ljust(64, b"\0") + struct.pack("<HBBIII", len(raw), kind, 1, no_stream,
                                                   no_stream, child)
                + bytes(16) + struct.pack("<I", 0) + bytes(16) + struct.pack("<IQ", start, size))

    directory = (entry("Root Entry", 5, 1, end, 0) + entry(stream, 2, no_stream, 2, len(body))
                 + bytes(256))
    return header + fat + directory + body
