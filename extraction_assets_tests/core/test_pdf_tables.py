"""Tables on digital PDF pages (pdfplumber): ruled and unruled tables as records equal to their
rows, prose left alone, spans, header rows from bold rows, printed numbers typed, the bounds
of the search, and the creator/producer/route of the ``workbooks`` row."""

from __future__ import annotations

import io
import json

import pytest

from extraction_assets.core.documents import pdf_tables
from extraction_assets.core.documents.layout import number_formatted
from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.stages import workbook_stage
from extraction_assets_tests.documents import (
    RULED_ROWS,
    UNRULED_ROWS,
    pdf_bytes,
    pdf_tables_bytes,
)


def _run(data: bytes) -> dict:
    return run_pipeline(data, filename="report.pdf", count_tokens=lambda s: len(s.split()),
                        max_tokens=200, min_tokens=20)


def _typed(text: str):
    """A cell text as the record types it (numbers as printed are numbers)."""
    formatted = number_formatted(text)
    value = formatted[0] if formatted else text
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


@pytest.fixture(scope="module")
def report() -> dict:
    return _run(pdf_tables_bytes())


def test_ruled_and_unruled_tables_give_records_equal_to_their_rows(report):
    blocks = [(b["kind"], b["source_ref"], b["a1_range"]) for b in report["blocks"].to_pylist()]
    assert blocks == [
        ("text", "page 1 paragraph 1", "A1"), ("text", "page 1 paragraph 2", "A2"),
        ("table", "page 1 table 1", "A3:D7"), ("text", "page 1 paragraph 3", "A8"),
        ("table", "page 1 table 2", "A9:D12"), ("text", "page 1 paragraph 4", "A13")]
    by_table: dict[str, list[dict]] = {}
    for r in report["records"].to_pylist():
        by_table.setdefault(r["block_id"], []).append(json.loads(r["record"]))
    ruled, unruled = by_table.values()
    for rows, records in ((RULED_ROWS, ruled), (UNRULED_ROWS, unruled)):
        header, *data = rows
        assert records == [{h: _typed(v) for h, v in zip(header, row)} for row in data]
    assert ruled[0] == {"Station": "North intake", "Hours": 2104, "Stops": 1,
                        "Cost (EUR)": 12400}
    assert unruled[0]["Price"] == 1200.5
    labels = [json.loads(o["details"])["label"] for o in report["sheet_objects"].to_pylist()
              if o["kind"] == "document_item" and json.loads(o["details"])["block"] == "table"]
    assert labels == ["ruled table", "unruled table"]


def test_table_text_is_not_read_again_as_paragraphs_and_numbers_print_as_written(report):
    texts = " ".join(b["text"] or "" for b in report["blocks"].to_pylist()
                     if b["kind"] == "text")
    assert "Acme Pumps" not in texts and "North intake" not in texts
    chunks = "\n".join(c["text"] for c in report["chunks"].to_pylist())
    assert "| North intake | 2,104 | 1 | 12,400 |" in chunks
    assert "| Seal kit | Hydro Ltd | 12 | 85.00 |" in chunks


def test_prose_pages_have_no_tables():
    tables = _run(pdf_bytes(scanned_page=False))
    assert {b["kind"] for b in tables["blocks"].to_pylist()} == {"text"}


@pytest.mark.parametrize("width", [85, 40])
def test_two_columns_of_prose_are_no_table(width):
    """Columns of prose: long segments (85 mm), or short ones going on in lower case (40 mm)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    text = ("The intake screen was cleaned twice in spring and the pumps ran without a stop "
            "through the summer, when the river was at its lowest level of the decade. ") * 4
    top = pdf.get_y()
    pdf.multi_cell(width, 5, text)
    pdf.set_xy(pdf.l_margin + width + 15, top)
    pdf.multi_cell(width, 5, text)
    assert pdf_tables.find_tables(bytes(pdf.output()), None, [1]) == ({}, [], [])


def test_a_cell_spanning_columns_is_a_merged_range():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    with pdf.table(col_widths=(40, 30, 30), num_heading_rows=2) as table:
        row = table.row()
        row.cell("Model", rowspan=2)
        row.cell("Flow (m3/h)", colspan=2)
        row = table.row()
        row.cell("Min")
        row.cell("Max")
        for values in (("P-100", "12", "40"), ("P-200", "20", "75")):
            row = table.row()
            for value in values:
                row.cell(value)
    tables = _run(bytes(pdf.output()))
    assert tables["parsed_sheets"].to_pylist()[0]["merged_ranges"] == ["A1:A2", "B1:C1"]
    records = [json.loads(r["record"]) for r in tables["records"].to_pylist()]
    assert records == [{"Model": "P-100", "Flow (m3/h) > Min": 12, "Flow (m3/h) > Max": 40},
                       {"Model": "P-200", "Flow (m3/h) > Min": 20, "Flow (m3/h) > Max": 75}]


@pytest.mark.parametrize(("text", "expected"), [
    ("2,104", ("2104", "#,##0")), ("1,200.50", ("1200.5", "#,##0.00")),
    ("85.00", ("85", "0.00")), ("12.5%", ("0.125", "0.0%")), ("-3,000", ("-3000", "#,##0")),
    ("12.5 %", ("0.125", '0.0" "%')), ("$12,450", ("12450", '"$"#,##0')),
    ("€1.04", ("1.04", '"€"0.00')), ("$ 0.61", ("0.61", '"$ "0.00')),
    ("(7,310)", ("-7310", "#,##0;(#,##0)")), ("-$5", ("-5", '"$"0')),
    ("($1,200.50)", ("-1200.5", '"$"#,##0.00;("$"#,##0.00)')),
    ("\u22127,310", ("-7310", '#,##0;"\u2212"#,##0')), ("$(1,200)", ("-1200", '"$"#,##0;"$"(#,##0)')),
    ("(12)", None), ("(0.00)", None), ("(0)", None), ("$($5)", None), ("$5)", None), ("-(5)", None), ("(12", None),
    ("1.200", None), ("007", None), ("1,23", None), ("12", None), ("2.5", None),
    ("12,345,678,901,234,567", None), ("N/A", None), ("€ 1.234,50", None)])
def test_numbers_as_reports_print_them_are_typed(text, expected):
    """Each typed text printed back by its number format; in a column of numbers ``(405)``
    is -405 too."""
    from extraction_assets.core.numfmt import format_value

    assert number_formatted(text) == expected
    if expected:  # the number format prints the number as the report did
        assert format_value(float(expected[0]), expected[1]) == text
    assert number_formatted("(405)", accounting=True) == ("-405", "0;(0)")


def test_pages_past_the_bounds_are_not_searched(monkeypatch):
    monkeypatch.setattr(pdf_tables, "MAX_PAGE_CHARS", 50)
    tables = _run(pdf_tables_bytes())
    assert {b["kind"] for b in tables["blocks"].to_pylist()} == {"text"}
    issues = {i["code"]: i for i in tables["extraction_issues"].to_pylist()}
    assert issues["tables_not_searched"]["message"].startswith(
        "page 1: more than 50 characters: tables not searched")


def test_a_page_whose_content_is_too_long_to_interpret_is_not_searched(monkeypatch):
    """pdfminer interprets content at ~0.5 MB/s: a page of 400 KB of no-op operators (few
    characters, no paths: the other bounds do not see it) under a bound of 200 KB is left to
    the text layer."""
    import zlib

    content = b"BT /F1 10 Tf 72 720 Td (Hello) Tj ET\n" + b"q Q\n" * 100_000
    stream = zlib.compress(content)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
               + b"\nendstream", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(data)
    data += (b"xref\n0 6\n0000000000 65535 f \n"
             + b"".join(b"%010d 00000 n \n" % at for at in offsets)
             + b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    assert pdf_tables.find_tables(data, None, [1]) == ({}, [], [])
    issues = {i["code"]: i["message"] for i in _run(data)["extraction_issues"].to_pylist()}
    assert "tables_not_searched" not in issues
    monkeypatch.setattr(pdf_tables, "MAX_PAGE_CONTENT_BYTES", 200_000)
    assert pdf_tables.find_tables(data, None, [1]) == ({}, [1], [])
    issues = {i["code"]: i["message"] for i in _run(data)["extraction_issues"].to_pylist()}
    assert "bytes of content" in issues["tables_not_searched"]


def test_a_page_shown_sideways_is_read_as_paragraphs_once():
    """A /Rotate that turns a page's horizontal text sideways: its tables are not searched
    (they would come out transposed), its text is read once, as paragraphs."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(pdf_tables_bytes())
    pdf[0].set_rotation(90)
    out = io.BytesIO()
    pdf.save(out)
    tables = _run(out.getvalue())
    texts = [b["text"] for b in tables["blocks"].to_pylist()]
    assert {b["kind"] for b in tables["blocks"].to_pylist()} == {"text"}
    assert sum(t.count("Acme Pumps") for t in texts) == 2  # two rows, once each
    issues = {i["code"]: i["message"] for i in tables["extraction_issues"].to_pylist()}
    assert issues["tables_not_searched"].startswith("page 1: text shown sideways")


def test_a_page_of_many_runs_is_read_character_by_character_to_the_same_paragraphs(
        monkeypatch):
    from extraction_assets.core.documents import pdf

    boxed = [b["text"] for b in _run(pdf_bytes(scanned_page=False))["blocks"].to_pylist()]
    monkeypatch.setattr(pdf, "MAX_BOXED_RUNS", 0)
    assert [b["text"] for b in _run(pdf_bytes(scanned_page=False))["blocks"].to_pylist()] == boxed


def test_the_workbooks_row_names_creator_producer_and_route():
    data = pdf_tables_bytes(creator="Microsoft® PowerPoint® for Microsoft 365",
                            producer="Microsoft: Print To PDF\x07")
    out = workbook_stage("h", data, "deck.pdf")
    row = out.tables["workbooks"].to_pylist()[0]
    assert row["creator"] == "Microsoft® PowerPoint® for Microsoft 365"
    assert (row["producer"], row["pdf_route"]) == ("Microsoft: Print To PDF", "digital")
    issues = {i["code"]: i["message"] for i in _run(data)["extraction_issues"].to_pylist()}
    assert "made by PowerPoint" in issues["office_export"]
    assert "presentation (.pptx)" in issues["office_export"]
    other = pdf_tables_bytes(creator="WordPerfect 12 with Password Manager")
    assert "office_export" not in {i["code"] for i in _run(other)["extraction_issues"].to_pylist()}
    plain = workbook_stage("h", pdf_tables_bytes(), "r.pdf").tables["workbooks"].to_pylist()[0]
    assert plain["creator"] is None and "office_export" not in {
        i["code"] for i in _run(pdf_tables_bytes())["extraction_issues"].to_pylist()}
    xlsx = io.BytesIO()
    import openpyxl

    openpyxl.Workbook().save(xlsx)
    row = workbook_stage("h", xlsx.getvalue(), "a.xlsx").tables["workbooks"].to_pylist()[0]
    assert (row["creator"], row["producer"], row["pdf_route"]) == (None, None, None)


def test_name_value_lines_tight_headers_and_stacked_tables():
    """"Name: value" lines right above a table are not its rows; a header whose words are too
    close for segments is still its header; two unruled tables one right under the other
    stay two."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    tight = [("Station Name", "Flow Rate", "Run Hours"), ("North", "12.5", "2,104"),
             ("South", "8.25", "1,997"), ("East", "9.75", "2,311")]
    other = [("Part", "Units"), ("Seal kit", "12"), ("Bearing", "8"), ("Impeller", "4")]
    for rows, pad in ((tight, 2.5), (other, 20)):
        widths = [max(pdf.get_string_width(r[k]) for r in rows) + pad
                  for k in range(len(rows[0]))]
        with pdf.table(col_widths=widths, width=sum(widths), align="LEFT", line_height=5,
                       borders_layout="NONE", first_row_as_headings=False) as table:
            for values in rows:
                row = table.row()
                for value in values:
                    row.cell(value)
        pdf.ln(3)
        if rows is tight:
            for name, value in (("Prepared by:", "Plant office"), ("Checked by:", "Head office")):
                pdf.cell(40, 5, name)
                pdf.cell(0, 5, value, new_x="LMARGIN", new_y="NEXT")
    found = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    grids = []
    for table in found:
        grid: dict[int, list[str]] = {}
        for cell in table.cells:
            grid.setdefault(cell.row, []).append(cell.text)
        grids.append([tuple(row) for _, row in sorted(grid.items())])
    assert grids == [tight, other]


def test_a_grid_without_two_rows_of_text_is_no_table():
    """A chart's bars, boxes of a form, a framed paragraph: lines make a grid, but fewer than
    two of its rows have text in two cells."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    for k in range(6):  # bars of a chart over a baseline, one label under it
        pdf.rect(20 + 15 * k, 100 - 10 * k, 10, 10 * k + 10)
    pdf.line(15, 110, 120, 110)
    pdf.text(20, 118, "Pumped volume by year")
    for row in range(3):  # a form's empty boxes
        for col in range(3):
            pdf.rect(20 + 40 * col, 140 + 12 * row, 40, 12)
    pdf.text(22, 148, "Signature")
    assert pdf_tables.find_tables(bytes(pdf.output()), None, [1]) == ({}, [], [])


def test_ruled_columns_without_rules_between_body_rows_give_a_row_a_line():
    """A frame, column rules and a rule under the header, no rule between the body's rows (as
    Excel prints a table): each text line is a row; a description wrapping onto a second
    line is one cell; a label wrapping likewise."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    left, top, widths = 20, 40, (45, 70, 30)
    edges = [left + sum(widths[:k]) for k in range(len(widths) + 1)]
    lines = [("Employee", "Description", "Amount"), ("Bain, J", "District director", "37,499.96"),
             ("Smith, A", "Legislative correspondent", "21,000.00"),
             ("", "from May 23", ""), ("Armer, D", "Staff assistant", "12,111.06"),
             ("Englert,", "Intern", "446.87"), ("Payton A", "", "")]
    bottom = top + 6 * len(lines) + 2
    pdf.rect(left, top, edges[-1] - left, bottom - top)
    for x in edges[1:-1]:
        pdf.line(x, top, x, bottom)
    pdf.line(left, top + 8, edges[-1], top + 8)
    for i, values in enumerate(lines):
        for x, value in zip(edges, values):
            if value:
                pdf.text(x + 2, top + 6 + 6 * i + (2 if i else 0), value)
    (table,) = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    grid: dict[int, list[str]] = {}
    for cell in sorted(table.cells, key=lambda c: (c.row, c.col)):
        grid.setdefault(cell.row, []).append(" ".join(cell.text.split()))
    assert list(grid.values()) == [
        ["Employee", "Description", "Amount"], ["Bain, J", "District director", "37,499.96"],
        ["Smith, A", "Legislative correspondent from May 23", "21,000.00"],
        ["Armer, D", "Staff assistant", "12,111.06"], ["Englert, Payton A", "Intern", "446.87"]]


def test_rows_grouped_by_spacing_stay_one_table_and_bold_totals_are_no_header():
    """An unruled budget: each ministry's bold total row after a wider gap, its departments
    below; one table, whose header is its bold header line, not the bold totals under it."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    widths = (70, 30, 30)
    groups = [(("Ministry of Agriculture", "28,130", "67"),
               [("Department of Farming", "22,260", "48"), ("Department of Research", "3,715", "19")]),
              (("Ministry of Coal", "550", "12"), [("Department of Coal", "550", "12")]),
              (("Ministry of Culture", "1,767", "68"),
               [("Department of Museums", "1,200", "40"), ("Department of Archives", "567", "28")])]
    pdf.set_font("helvetica", "B", 10)
    for x, text in zip((0, 70, 100), ("Ministry or department", "Revenue", "Capital")):
        pdf.set_x(20 + x)
        pdf.cell(widths[0] if x == 0 else 30, 5, text)
    pdf.ln(5)
    for total, rows in groups:
        pdf.ln(3)
        for values, style in [(total, "B")] + [(r, "") for r in rows]:
            pdf.set_font("helvetica", style, 10)
            pdf.set_x(20)
            for width, value in zip(widths, values):
                pdf.cell(width, 5, value, align="L" if width == 70 else "R")
            pdf.ln(5)
    (table,) = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    assert max(c.row for c in table.cells) + 1 == 1 + 3 + 5
    assert table.header_rows == 1  # the bold header line; the bold totals hold numbers
    first = sorted((c.col, c.text) for c in table.cells if c.row == 1)
    assert first == [(0, "Ministry of Agriculture"), (1, "28,130"), (2, "67")]


def test_section_labels_and_wrapped_cells_stay_inside_an_unruled_table():
    """A line with one segment between rows: a label in the first column is a row of its own
    (a section), text in another column is the wrapped rest of the nearest row's cell."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    lines = [("Site", "Operator", "Capacity"), ("North region", "", ""),
             ("Riverside", "Acme Water", "1,200"), ("Hilltop", "Blue River Utilities", "800"),
             ("", "and Partners", ""), ("South region", "", ""),
             ("Lakeside", "Acme Water", "950"), ("Valley", "Hydro Ltd", "700")]
    for values in lines:
        pdf.set_x(20)
        for width, value in zip((50, 60, 30), values):
            pdf.cell(width, 5, value, align="R" if width == 30 else "L")
        pdf.ln(5)
    (table,) = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    grid: dict[int, dict[int, str]] = {}
    for cell in table.cells:
        grid.setdefault(cell.row, {})[cell.col] = cell.text
    assert [grid[r] for r in sorted(grid)] == [
        {0: "Site", 1: "Operator", 2: "Capacity"}, {0: "North region"},
        {0: "Riverside", 1: "Acme Water", 2: "1,200"},
        {0: "Hilltop", 1: "Blue River Utilities and Partners", 2: "800"}, {0: "South region"},
        {0: "Lakeside", 1: "Acme Water", 2: "950"}, {0: "Valley", 1: "Hydro Ltd", 2: "700"}]


def _grid(table) -> list[list[tuple[int, int, str]]]:
    rows: dict[int, list[tuple[int, int, str]]] = {}
    for cell in sorted(table.cells, key=lambda c: (c.row, c.col)):
        rows.setdefault(cell.row, []).append((cell.col, cell.col_span, cell.text))
    return [rows[r] for r in sorted(rows)]


def test_unruled_header_lines_group_labels_wrapped_headers_and_titles():
    """A title above a table is no header; a year centred over two quarters spans them; a
    header wrapped over two lines is one header row; one-word lower-case cells (units) are a
    table, not prose."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    pdf.set_xy(20, 30)
    pdf.cell(0, 5, "Sales by quarter in units")
    columns = (20, 60, 85, 110, 135)  # Region, then four quarters 20 mm wide
    for centre, label in ((82.5, "2023"), (132.5, "2024")):  # over 60-105 and 110-155 mm
        pdf.text(centre - pdf.get_string_width(label) / 2, 40, label)
    for k, values in enumerate([("Region", "Q1", "Q2", "Q1", "Q2"),
                                ("North", "1,240", "1,315", "1,382", "1,450"),
                                ("South", "980", "1,022", "1,107", "1,163"),
                                ("East", "760", "801", "822", "870")]):
        for x, value in zip(columns, values):
            pdf.text(x + (20 - pdf.get_string_width(value) if x > 20 else 0), 45 + 5 * k, value)
    pdf.set_xy(20, 90)
    for k, values in enumerate([("", "Schools in", "Students"), ("Country", "original sample",
                                "assessed"), ("Austria", "160", "4,670"), ("Belgium", "150", "3,727"),
                                ("Chile", "210", "5,044")]):
        for x, value in zip((20, 70, 120), values):
            pdf.text(x, 100 + 5 * k, value)
    for k, values in enumerate([("symbol", "unit", "quantity"), ("m", "metre", "length"),
                                ("kg", "kilogram", "mass"), ("s", "second", "time")]):
        for x, value in zip((20, 60, 100), values):
            pdf.text(x, 150 + 5 * k, value)
    quarters, schools, units = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    assert _grid(quarters)[:3] == [
        [(1, 2, "2023"), (3, 2, "2024")],
        [(0, 1, "Region"), (1, 1, "Q1"), (2, 1, "Q2"), (3, 1, "Q1"), (4, 1, "Q2")],
        [(0, 1, "North"), (1, 1, "1,240"), (2, 1, "1,315"), (3, 1, "1,382"), (4, 1, "1,450")]]
    assert _grid(schools)[0] == [(0, 1, "Country"), (1, 1, "Schools in original sample"),
                                 (2, 1, "Students assessed")]
    assert _grid(units)[1] == [(0, 1, "m"), (1, 1, "metre"), (2, 1, "length")]


def test_a_wrapped_line_over_two_columns_joins_its_row():
    """A line with its first cell empty, filling two of four cells: the wrapped rest of the
    row above (not a row of its own); so is a line of one cell after the last row."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    for values in [("ID", "Description", "Owner", "Cost"),
                   ("R-1", "Replace the roof", "Facilities", "12,500"),
                   ("R-2", "Repaint the dock", "Operations", "850"),
                   ("R-3", "Upgrade fire systems", "IT and Facilities", "48,200"),
                   ("", "with inert gas", "jointly", ""),
                   ("R-4", "Fence repairs", "Operations", "2,300"), ("", "and gates", "", "")]:
        pdf.set_x(20)
        for width, value in zip((20, 50, 45, 25), values):
            pdf.cell(width, 5, value, align="R" if width == 25 else "L")
        pdf.ln(5)
    (table,) = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    rows = [[text for _, _, text in row] for row in _grid(table)]
    assert rows[3] == ["R-3", "Upgrade fire systems with inert gas", "IT and Facilities jointly",
                       "48,200"]
    assert rows[4] == ["R-4", "Fence repairs and gates", "Operations", "2,300"]  # ends it
    assert len(rows) == 5


def test_same_pdf_bytes_give_the_same_tables(report):
    again = _run(pdf_tables_bytes())
    for name in ("parsed_cells", "blocks", "block_columns", "records", "chunks"):
        assert report[name].equals(again[name]), name


@pytest.mark.parametrize("angle", [90, 270])
def test_a_landscape_page_drawn_turned_and_shown_upright_gives_its_table(angle):
    """A table drawn turned by ``angle`` on a page whose /Rotate turns it back upright (how a
    landscape page is often stored): its records, and its text read once."""
    import pypdfium2 as pdfium
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    with pdf.rotation(angle, x=105, y=148):
        pdf.set_xy(35, 108)
        pdf.cell(0, 8, "Station hours in 2023, a landscape table.")
        pdf.set_xy(35, 123)
        with pdf.table(col_widths=(50, 30, 30, 40), width=150, align="LEFT") as table:
            for values in RULED_ROWS:
                row = table.row()
                for value in values:
                    row.cell(value)
    document = pdfium.PdfDocument(bytes(pdf.output()))
    document[0].set_rotation(angle)
    out = io.BytesIO()
    document.save(out)
    tables = _run(out.getvalue())
    assert [b["kind"] for b in tables["blocks"].to_pylist()] == ["text", "table"]
    header, *data = RULED_ROWS
    assert [json.loads(r["record"]) for r in tables["records"].to_pylist()] == [
        {h: _typed(v) for h, v in zip(header, row)} for row in data]


def test_header_lines_in_lower_case_do_not_make_a_table_of_numbers_prose():
    """Header lines going on in lower case ("participation rate") over rows of numbers: a
    table (its lines with numbers standing alone outnumber the header's)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=9)
    lines = [("Education", "Weighted school", "Weighted student", "Combined school"),
             ("systems", "participation rate", "response rate", "and student rate"),
             ("education systems", "before substitution", "after substitution", "overall rate"),
             ("Alberta", "97", "95", "94"), ("Ontario", "99", "96", "95"),
             ("Quebec", "95", "96", "92"), ("Florida", "96", "95", "91")]
    for k, values in enumerate(lines):
        for x, value in zip((20, 65, 110, 155), values):
            pdf.text(x, 40 + 4.5 * k, value)
    (table,) = pdf_tables.find_tables(bytes(pdf.output()), None, [1])[0][1]
    rows = [[text for _, _, text in row] for row in _grid(table)]
    assert rows[-1] == ["Florida", "96", "95", "91"] and len(rows) >= 5


def test_an_income_statement_with_signs_set_apart_years_and_a_total_line():
    """"$" set apart from its amount goes with it; a header line of years under group labels
    (with the first column's label on it) is header, not data; a total line with its first
    cell empty stays a row."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    xs = (20, 80, 85, 110, 115, 140)  # label, $, 2024, $, 2023, change
    for centre, label in ((115, "Revenue"), (150, "Change")):  # over both years; over %
        pdf.text(centre - pdf.get_string_width(label) / 2, 30, label)
    lines = [("Division", "", "2024", "", "2023", "%"),
             ("Public sector", "$", "12,450", "$", "11,020", "13.0%"),
             ("Services", "", "3,120", "", "3,480", "(10.3%)"),
             ("Products for resale", "", "905", "", "880", "2.8%"),
             ("", "", "16,475", "", "15,380", "")]
    for k, values in enumerate(lines):
        for x, value in zip(xs, values):
            if value:
                right = x in (85, 115, 140)  # amounts set right in 20 mm
                pdf.text(x + (20 - pdf.get_string_width(value) if right else 0), 35 + 5 * k,
                         value)
    tables = _run(bytes(pdf.output()))
    records = [json.loads(r["record"]) for r in tables["records"].to_pylist()]
    assert records[0] == {"Division": "Public sector", "Revenue > 2024": 12450,
                          "Revenue > 2023": 11020, "Change > %": 0.13}
    assert records[1]["Change > %"] == -0.103
    assert records[3]["Revenue > 2024"] == 16475 and len(records) == 4
