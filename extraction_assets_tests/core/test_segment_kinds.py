"""Segmentation faults by kind, each on a fixture built here with openpyxl: a caption row with a
unit above the header (not the header), label / sentence annotation text (not a table) and two
bordered tables stacked with no empty row, of other widths or under a second styled header (two
tables)."""

from __future__ import annotations

import datetime as dt

from openpyxl.styles import Border, Font, Side

from extraction_assets_tests.core.test_segment_cases import (
    headers,
    records,
    segment,
    sheet_of,
    tables,
)

CUSTOMERS = ["Acme", "Beta", "Gamma", "Delta", "Epsilon"]


def caption_sheet(months: list, start_row: int = 1):
    rows = [["Volumes", "MMBtu"], ["Customer", *months]]
    rows += [[name, *[100 * m + i for m in range(1, len(months) + 1)]]
             for i, name in enumerate(CUSTOMERS)]
    wb, ws = sheet_of("Gas", rows, start_row=start_row)
    for cell in ws[start_row + 1][1:]:
        cell.number_format = "mmm-yy"
    return wb


def test_caption_with_a_unit_above_a_header_of_dates_is_no_header_row():
    grid, blocks = segment(caption_sheet([dt.datetime(2001, m, 1) for m in range(1, 7)]))
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count) == ("A2:G7", 1)
    assert headers(table) == ["Customer", "Jan-01", "Feb-01", "Mar-01", "Apr-01", "May-01",
                              "Jun-01"]
    assert records(grid, table)[0] == {"Customer": "Acme", "Jan-01": 100, "Feb-01": 200,
                                       "Mar-01": 300, "Apr-01": 400, "May-01": 500,
                                       "Jun-01": 600}
    assert (table.title, table.unit, table.heading_path) == ("Volumes", "MMBtu", ["Gas", "Volumes"])
    assert [(b.kind, b.a1_range) for b in blocks if b is not table] == [("title", "A1"),
                                                                        ("text", "B1")]


def test_caption_above_a_header_of_text_is_not_a_parent_header():
    grid, blocks = segment(caption_sheet(["Jan", "Feb", "Mar", "Apr"], start_row=3))
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count) == ("A4:E9", 1)
    assert headers(table) == ["Customer", "Jan", "Feb", "Mar", "Apr"]
    assert (table.title, table.unit) == ("Volumes", "MMBtu")


def test_caption_without_a_unit_is_the_title_whole():
    rows = [["Volumes", "by customer"], ["Customer", "Jan", "Feb", "Mar"],
            *[[name, 1, 2, 3] for name in CUSTOMERS]]
    _, blocks = segment(sheet_of("Gas", rows)[0])
    (table,) = tables(blocks)
    assert (table.a1_range, table.title, table.unit) == ("A2:D7", "Volumes by customer", None)


def annotation_rows(n: int = 50) -> list[list]:
    return [[f"Field {i}", f"This field records the quantity number {i} that the operator "
                           "reports each month."] for i in range(n)]


def test_label_sentence_pairs_are_a_form_not_a_table():
    _, blocks = segment(sheet_of("Notes", annotation_rows())[0])
    (block,) = blocks
    assert (block.kind, block.a1_range) == ("key_value", "A1:B50")
    assert [c.header for c in block.columns[:2]] == ["Field 0", "Field 1"]
    assert block.text.splitlines()[0] == ("Field 0: This field records the quantity number 0 "
                                          "that the operator reports each month.")


def test_text_under_a_header_of_sentences_is_text_not_a_table():
    rows = [[f"Field {i}" if i % 3 else None, text, "Ops"] for i, (_, text) in
            enumerate(annotation_rows(30))]
    _, blocks = segment(sheet_of("Notes", rows)[0])
    assert [(b.kind, b.a1_range) for b in blocks] == [("text", "A1:C30")]


def test_questions_heading_short_answers_stay_a_table():
    rows = [["Respondent", "How satisfied are you with the service?",
             "Would you recommend us to a friend?"],
            *[[f"R{i}", "Very satisfied", "Yes"] for i in range(10)]]
    _, blocks = segment(sheet_of("Survey", rows)[0])
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count) == ("A1:C11", 1)


def test_stacked_border_boxes_are_two_tables():
    rows = [["Region", "Q1", "Q2", "Q3"], ["North", 10, 11, 12], ["South", 20, 21, 22],
            ["East", 30, 31, 32], ["Dept", "Head", "Budget"], ["Sales", "Kim", 1000],
            ["Ops", "Lee", 2000], ["IT", "Ng", 3000]]
    wb, ws = sheet_of("Org", rows)
    thin = Side(style="thin")
    box = Border(left=thin, right=thin, top=thin, bottom=thin)
    for rng in ("A1:D4", "A5:C8"):
        for row in ws[rng]:
            for cell in row:
                cell.border = box
    for cell in ws[5][:3]:
        cell.font = Font(bold=True)
    grid, blocks = segment(wb)
    assert [(b.a1_range, b.header_row_count) for b in tables(blocks)] == [("A1:D4", 1),
                                                                         ("A5:C8", 1)]
    assert headers(tables(blocks)[1]) == ["Dept", "Head", "Budget"]
    assert records(grid, tables(blocks)[1])[0] == {"Dept": "Sales", "Head": "Kim",
                                                   "Budget": 1000}


def test_bordered_header_band_with_row_labels_in_its_last_row_stays_one_table():
    rows = [[None, "Orders"], [None, "Actual", None, "Budget"], ["Region", "H1", "H2", "H1", "H2"],
            ["North", 1, 2, 3, 4], ["South", 5, 6, 7, 8], ["East", 9, 10, 11, 12]]
    wb, ws = sheet_of("Orders", rows)
    ws.merge_cells("B1:E1")
    ws.merge_cells("B2:C2")
    ws.merge_cells("D2:E2")
    thin = Side(style="thin")
    for row in ws["A1:E6"]:
        for cell in row:
            cell.border = Border(left=thin, right=thin, top=thin, bottom=thin)
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.header_row_count, headers(table)[:2]) == (3, ["Region", "Orders > Actual > H1"])


def test_stacked_tables_of_one_width_split_at_the_second_styled_header():
    rows = [["Region", "Q1", "Q2"], ["North", 10, 11], ["South", 20, 21], ["East", 30, 31],
            ["Dept", "Head", "Budget"], ["Sales", "Kim", 1000], ["Ops", "Lee", 2000],
            ["IT", "Ng", 3000]]
    wb, ws = sheet_of("Org", rows)
    thin = Side(style="thin")
    for row in ws["A1:C8"]:
        for cell in row:
            cell.border = Border(left=thin, right=thin, top=thin, bottom=thin)
    for r in (1, 5):
        for cell in ws[r]:
            cell.font = Font(bold=True)
    grid, blocks = segment(wb)
    assert [(b.a1_range, b.header_row_count) for b in tables(blocks)] == [("A1:C4", 1),
                                                                         ("A5:C8", 1)]
    assert records(grid, tables(blocks)[1])[-1] == {"Dept": "IT", "Head": "Ng", "Budget": 3000}


def test_a_header_repeated_at_a_page_break_stays_in_its_table():
    rows = [["Region", "Q1", "Q2"], *[[f"R{i}", i, i + 1] for i in range(5)],
            ["Region", "Q1", "Q2"], *[[f"S{i}", i, i + 1] for i in range(5)]]
    wb, ws = sheet_of("Org", rows)
    for r in (1, 7):
        for cell in ws[r]:
            cell.font = Font(bold=True)
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:C12" and table.skip_rows == [7]


def test_a_note_merged_over_two_rows_under_a_table_is_text():
    rows = [["Region", "Q1", "Q2"], *[[f"R{i}", i, i + 1] for i in range(5)],
            ["Note: figures are provisional and will be revised with the audited accounts."]]
    wb, ws = sheet_of("Notes", rows)
    ws.merge_cells("A7:C8")
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:C6"
    assert [(b.kind, b.a1_range) for b in blocks if b.kind == "text"] == [("text", "A7:C8")]
