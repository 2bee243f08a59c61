"""Segmentation cases: tables, their ranges, headers and headings (issue "Find every table, its
headers and its headings").

Each fixture is built here with openpyxl (acceptance cases B01-B07 of EXPECTED.md rebuilt with
their values, plus gap, note, summary-row, repeated-header, row-group and heading cases), run
through parse and normalize, then segmented with :func:`segment_sheet` and rendered to records
with :func:`block_records`.
"""

from __future__ import annotations

import io

import pyarrow as pa
from openpyxl import Workbook
from openpyxl.styles import Font, PatternFill

from extraction_assets.core.grid import GRID_SCHEMA
from extraction_assets.core.render.records import block_records
from extraction_assets.core.segment import segment_sheet
from extraction_assets.core.segment.headings import HeadingMap, detect_heading_levels
from extraction_assets.pipeline import stages
from extraction_assets.pipeline.codecs import grids_from_tables
from extraction_assets_tests.builders import put_rows as put

H = "0" * 64


def grids_of(wb: Workbook):
    buf = io.BytesIO()
    wb.save(buf)
    p = stages.parse_stage(H, buf.getvalue()).tables
    n = stages.normalize_stage(H, p["parsed_cells"], p["parsed_sheets"], p["styles"],
                               p["workbook_properties"]).tables
    return grids_from_tables(n["cells"], n["sheets"])


def segment(wb: Workbook, sheet: int = 0):
    """(grid, blocks) of one sheet, headings detected over the whole workbook."""
    grids = grids_of(wb)
    grid = grids[sheet]
    return grid, segment_sheet(grid, detect_heading_levels(grids))


def sheet_of(title: str, rows: list[list], start_row: int = 1, start_col: int = 1):
    wb = Workbook()
    ws = wb.active
    ws.title = title
    put(ws, rows, start_row, start_col)
    return wb, ws


def tables(blocks):
    return [b for b in blocks if b.kind == "table"]


def headers(block):
    return [c.header for c in block.columns]


def records(grid, block):
    return [r.record for r in block_records(grid, block)]


# -- acceptance cases ---------------------------------------------------------------------------
def test_b01_merged_across_columns_header_is_one_row():
    wb, ws = sheet_of("RFQ", [["Item", "Description", None, None, "Qty"],
                              [1, "Steel bracket, galvanized", None, None, 40],
                              [2, "Hex bolt M8", None, None, 200],
                              [3, "Flat washer", None, None, 500]])
    for r in range(1, 5):
        ws.merge_cells(f"B{r}:D{r}")
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count) == ("A1:E4", 1)
    assert headers(table) == ["Item", "Description", "Qty"]
    assert records(grid, table) == [
        {"Item": 1, "Description": "Steel bracket, galvanized", "Qty": 40},
        {"Item": 2, "Description": "Hex bolt M8", "Qty": 200},
        {"Item": 3, "Description": "Flat washer", "Qty": 500}]


def test_b02_merged_down_rows_filled():
    wb, ws = sheet_of("Sales", [["Region", "Product", "Units"], ["North", "Apples", 10],
                                [None, "Pears", 12], [None, "Plums", 7], ["South", "Apples", 5],
                                [None, "Pears", 9]])
    ws.merge_cells("A2:A4")
    ws.merge_cells("A5:A6")
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:C6"
    assert headers(table) == ["Region", "Product", "Units"]
    assert [tuple(r.values()) for r in records(grid, table)] == [
        ("North", "Apples", 10), ("North", "Pears", 12), ("North", "Plums", 7),
        ("South", "Apples", 5), ("South", "Pears", 9)]
    assert table.row_group_cols == []  # vertical merges are already filled by normalize


def test_b04_two_row_header_with_merged_groups():
    wb, ws = sheet_of("Quarterly", [["Region", "2023", None, "2024", None],
                                    [None, "Q1", "Q2", "Q1", "Q2"], ["North", 10, 11, 12, 13],
                                    ["South", 20, 21, 22, 23], ["West", 30, 31, 32, 33]])
    for ref in ("A1:A2", "B1:C1", "D1:E1"):
        ws.merge_cells(ref)
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count) == ("A1:E5", 2)
    assert headers(table) == ["Region", "2023 > Q1", "2023 > Q2", "2024 > Q1", "2024 > Q2"]
    assert len(records(grid, table)) == 3
    assert records(grid, table)[0] == {"Region": "North", "2023 > Q1": 10, "2023 > Q2": 11,
                                       "2024 > Q1": 12, "2024 > Q2": 13}


def test_b05_sparse_table_stays_one_table():
    wb, _ = sheet_of("Sparse", [["ID", "Name", "Note"], [1, "alpha", None], [2, None, "foo"],
                                [3, None, "bar"], [4, None, None]])
    grid, blocks = segment(wb)
    assert [b.kind for b in blocks] == ["table"]
    (table,) = blocks
    assert table.a1_range == "A1:C5"
    assert headers(table) == ["ID", "Name", "Note"]
    assert [list(r.values()) for r in records(grid, table)] == [
        [1, "alpha", None], [2, None, "foo"], [3, None, "bar"], [4, None, None]]


def test_b06_three_tables_on_one_sheet():
    wb, ws = sheet_of("Tables", [["Employee", "Dept"], ["Alice", "Finance"], ["Bob", "Sales"], [],
                                 ["Dept", "Budget"], ["Finance", 120000], ["Sales", 95000]])
    put(ws, [["Code", "Meaning"], ["FIN", "Finance department"], ["SAL", "Sales department"]],
        start_col=5)
    ws["B6"].number_format = ws["B7"].number_format = "#,##0"
    grid, blocks = segment(wb)
    found = tables(blocks)
    assert [b.a1_range for b in found] == ["A1:B3", "E1:F3", "A5:B7"]
    assert [headers(b) for b in found] == [["Employee", "Dept"], ["Code", "Meaning"],
                                           ["Dept", "Budget"]]
    assert [len(records(grid, b)) for b in found] == [2, 2, 2]
    assert [r.display["Budget"] for r in block_records(grid, found[2])] == ["120,000", "95,000"]


def test_b07_title_row_and_spacer_column():
    wb, ws = sheet_of("Sheet", [["PROGRESS"], [], ["Task", None, "Owner", "Status"],
                                ["Design", None, "Ana", "Done"], ["Build", None, "Ben", "In progress"]])
    ws["A1"].font = Font(bold=True, size=16)
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A3:D5"
    assert headers(table) == ["Task", "Owner", "Status"]
    assert records(grid, table) == [{"Task": "Design", "Owner": "Ana", "Status": "Done"},
                                    {"Task": "Build", "Owner": "Ben", "Status": "In progress"}]
    assert table.title == "PROGRESS"
    assert table.heading_path == ["Sheet", "PROGRESS"]
    (heading,) = [b for b in blocks if b.kind == "title"]
    assert (heading.a1_range, heading.level) == ("A1", 2)
    assert any("empty column B" in why for why in table.reasons)


# -- gaps -----------------------------------------------------------------------------------------
def test_one_empty_row_then_a_new_header_row_splits():
    wb, _ = sheet_of("Two", [["Item", "Qty"], ["Bolt", 4], ["Nut", 9], [],
                             ["Supplier", "Rating"], ["Acme", 5], ["Globex", 3]])
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B3", "A5:B7"]
    assert [headers(b) for b in tables(blocks)] == [["Item", "Qty"], ["Supplier", "Rating"]]


def test_one_empty_row_then_a_bold_header_of_text_splits():
    wb, ws = sheet_of("Text", [["Name", "City"], ["Ann", "Oslo"], [], ["Product", "Colour"],
                               ["Pen", "Blue"], ["Cup", "Red"]])
    for ref in ("A1", "B1", "A4", "B4"):
        ws[ref].font = Font(bold=True)
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B2", "A4:B6"]


def test_sparse_table_with_an_empty_interior_row_stays_one():
    wb, _ = sheet_of("Gaps", [["ID", "Name", "Score"], [1, "alpha", 3.5], [2, None, 4], [],
                              [3, "gamma", None], [4, "delta", 2]])
    grid, blocks = segment(wb)
    assert [b.kind for b in blocks] == ["table"]
    assert blocks[0].a1_range == "A1:C6"
    assert [r["ID"] for r in records(grid, blocks[0])] == [1, 2, 3, 4]
    assert any("single empty row" in why for why in blocks[0].reasons)


def test_side_by_side_tables_one_column_apart_stay_separate():
    # different heights
    wb, ws = sheet_of("Side", [["Item", "Qty"], ["Bolt", 4], ["Nut", 9], ["Pin", 2]])
    put(ws, [["Code", "Price"], ["B1", 0.5], ["N1", 0.2]], start_col=4)
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B4", "D1:E3"]
    # the same heights, each with a title of its own
    wb, ws = sheet_of("Titled", [["Parts"], ["Item", "Qty"], ["Bolt", 4], ["Nut", 9]])
    put(ws, [["Prices"], ["Code", "Price"], ["B1", 0.5], ["N1", 0.2]], start_col=4)
    _, blocks = segment(wb)
    assert [(b.a1_range, b.title) for b in tables(blocks)] == [("A2:B4", "Parts"), ("D2:E4", "Prices")]
    # the same heights, the same labels
    wb, ws = sheet_of("Twins", [["Name", "Value"], ["a", 1], ["b", 2]])
    put(ws, [["Name", "Value"], ["c", 3], ["d", 4]], start_col=4)
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B3", "D1:E3"]


def test_spacer_column_between_wide_parts_keeps_one_table():
    wb, ws = sheet_of("Spacer", [["Sales by region"], ["Region", "Owner", None, "Q1", "Q2"],
                                 ["North", "Ana", None, 10, 11], ["South", "Ben", None, 20, 21],
                                 ["Total", None, None, 30, 32]])
    for ref in ("A2", "B2", "D2", "E2"):
        ws[ref].font = Font(bold=True)
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.a1_range, table.title) == ("A2:E5", "Sales by region")
    assert headers(table) == ["Region", "Owner", "Q1", "Q2"]
    assert table.total_rows == [5]
    assert records(grid, table)[0] == {"Region": "North", "Owner": "Ana", "Q1": 10, "Q2": 11}


def test_plain_text_groups_one_empty_row_apart_stay_separate():
    wb, _ = sheet_of("Plain", [["a", "b"], ["c", "d"], [], ["e", "f"], ["g", "h"]])
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B2", "A4:B5"]


def test_unit_line_is_not_the_title():
    wb, _ = sheet_of("Units", [["Revenue by region", None, "(単位：千円)"], ["Region", "FY23", "FY24"],
                                ["North", 10, 12], ["South", 20, 22]])
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.a1_range, table.title, table.unit) == ("A2:C4", "Revenue by region", "(単位：千円)")
    assert table.heading_path == ["Units", "Revenue by region"]


def test_two_empty_columns_always_separate():
    wb, ws = sheet_of("Far", [["Task", "Owner"], ["Design", "Ana"], ["Build", "Ben"]])
    put(ws, [["Step"], ["1"], ["2"]], start_col=5)
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B3"]
    assert "E1:E3" in [b.a1_range for b in blocks]


# -- notes, titles, summary rows, repeated headers, row groups ------------------------------------
def test_notes_under_a_table_are_text_blocks():
    wb, _ = sheet_of("Notes", [["Item", "Qty"], ["Bolt", 4], ["Nut", 9],
                               ["※ Quantities are per box."], [],
                               ["Note: prices exclude VAT and shipping."]])
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:B3"
    assert len(records(grid, table)) == 2
    texts = [(b.kind, b.a1_range, b.text) for b in blocks if b.kind != "table"]
    assert texts == [("text", "A4", "※ Quantities are per box."),
                     ("text", "A6", "Note: prices exclude VAT and shipping.")]


def test_long_line_in_the_first_column_under_a_table_is_a_note():
    wb, _ = sheet_of("Long", [["Code", "Qty"], ["A1", 4], ["B2", 9],
                              ["All figures were counted by hand on the first Monday of the month."]])
    _, blocks = segment(wb)
    assert [(b.kind, b.a1_range) for b in blocks] == [("table", "A1:B3"), ("text", "A4")]


def test_a_lone_sentence_is_text_and_a_lone_label_a_title():
    wb, ws = sheet_of("Info", [["Quarterly summary"]])
    ws["A5"] = "Figures are provisional and may change before the audit."
    ws["A9"] = "この資料は社外秘です。"
    ws["A13"] = "Acme Co., Ltd."
    put(ws, [["Read this before you fill in the form below."], [], ["Name", "Team"],
             ["Ana", "Core"], ["Ben", "Ops"]], start_row=17)
    _, blocks = segment(wb)
    assert [(b.kind, b.a1_range) for b in blocks if b.kind != "table"] == [
        ("title", "A1"), ("text", "A5"), ("text", "A9"), ("title", "A13"),
        ("title", "A17")]
    (table,) = tables(blocks)
    # the sentence just above the table is still its title
    assert (table.a1_range, table.title) == ("A19:B21", "Read this before you fill in the form below.")


def test_merged_title_row_is_the_title_never_a_header_row():
    wb, ws = sheet_of("Merged", [["Stock by warehouse"], ["Region", "2023", None],
                                 [None, "Q1", "Q2"], ["North", 1, 2], ["South", 3, 4]])
    for ref in ("A1:C1", "A2:A3", "B2:C2"):
        ws.merge_cells(ref)
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert (table.a1_range, table.header_row_count, table.title) == ("A2:C5", 2, "Stock by warehouse")
    assert headers(table) == ["Region", "2023 > Q1", "2023 > Q2"]
    assert table.heading_path == ["Merged", "Stock by warehouse"]
    assert len(records(grid, table)) == 2


def test_a_title_equal_to_the_sheet_name_is_not_repeated_in_the_heading_path():
    wb, ws = sheet_of("Stanley Cups", [["Stanley  cups"], ["Team", "Cups"], ["Canadiens", 24],
                                       ["Maple Leafs", 13]])
    ws["A1"].font = Font(bold=True, size=14)
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.title == "Stanley  cups"
    assert table.heading_path == ["Stanley Cups"]


def test_title_line_between_two_adjacent_tables_splits_them():
    wb, _ = sheet_of("Stack", [["Item", "Qty"], ["Bolt", 4], ["Nut", 9], ["Suppliers"],
                               ["Name", "Rating"], ["Acme", 5], ["Globex", 3]])
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B3", "A5:B7"]
    assert tables(blocks)[1].title == "Suppliers"


def test_total_rows_stay_in_the_table():
    wb, _ = sheet_of("Sum", [["Pond", "Count"], ["A", 120], ["B", 95], ["Subtotal", 215],
                             ["C", 10], ["Grand total", 225], ["合計", 225]])
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:B7"
    assert table.total_rows == [4, 6, 7]
    assert [r.role for r in block_records(grid, table)] == ["data", "data", "total", "data",
                                                            "total", "total"]


def test_repeated_header_row_is_recorded():
    wb, _ = sheet_of("Pages", [["Name", "Qty"], ["a", 1], ["b", 2], ["Name", "Qty"], ["c", 3]])
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:B5"
    assert table.skip_rows == [4]


def test_repeated_labels_stay_distinct_and_no_value_is_lost():
    wb, _ = sheet_of("Dup", [["Q1", "Q1", "Q1 (2)", "Label:"], [10, 20, 30, "x"],
                             [11, 21, 31, "y"]])
    grid, blocks = segment(wb)
    (table,) = tables(blocks)
    assert headers(table) == ["Q1", "Q1 (2)", "Q1 (2) (2)", "Label:"]
    assert records(grid, table) == [{"Q1": 10, "Q1 (2)": 20, "Q1 (2) (2)": 30, "Label:": "x"},
                                    {"Q1": 11, "Q1 (2)": 21, "Q1 (2) (2)": 31, "Label:": "y"}]


def test_repeated_form_labels_stay_distinct():
    wb, _ = sheet_of("Form", [["Name:", "Ann"], ["Name:", "Bo"], ["Name (2):", "Cy"]])
    grid, blocks = segment(wb)
    (form,) = [b for b in blocks if b.kind == "key_value"]
    assert headers(form) == ["Name", "Name (2)", "Name (2) (2)"]
    assert block_records(grid, form)[0].record == {"Name": "Ann", "Name (2)": "Bo",
                                                 "Name (2) (2)": "Cy"}


def test_row_group_labels_on_the_first_row_of_each_group():
    wb, _ = sheet_of("Groups", [["Region", "Product", "Units"], ["North", "Apples", 10],
                                [None, "Pears", 12], ["South", "Apples", 5], [None, "Pears", 9]])
    _, blocks = segment(wb)
    (table,) = tables(blocks)
    assert table.a1_range == "A1:C5"
    assert table.row_group_cols == [1]


# -- headings --------------------------------------------------------------------------------------
def test_japanese_spec_three_bold_sizes_give_h2_h3_h4():
    wb, ws = sheet_of("仕様書", [])
    for ref, text, size in (("A1", "製品仕様書", 18), ("A3", "1. 基本仕様", 14),
                            ("A9", "2. 付属品", 14), ("A10", "2.1 標準付属品", 12)):
        ws[ref] = text
        ws[ref].font = Font(bold=True, size=size)
    put(ws, [["項目", "値", "単位"], ["定格電圧", 100, "V"], ["消費電力", 1200, "W"],
             ["質量", 3.5, "kg"]], start_row=4)
    put(ws, [["品名", "数量"], ["電源コード", 1], ["保証書", 1]], start_row=11)
    ws["A15"] = "本書の内容は予告なく変更することがあります。"
    _, blocks = segment(wb)
    levels = {b.text: b.level for b in blocks if b.level is not None}
    assert levels == {"製品仕様書": 2, "1. 基本仕様": 3, "2. 付属品": 3, "2.1 標準付属品": 4}
    first, second = tables(blocks)
    assert first.a1_range == "A4:C7" and second.a1_range == "A11:B13"
    assert first.heading_path == ["仕様書", "製品仕様書", "1. 基本仕様"]
    assert second.heading_path == ["仕様書", "製品仕様書", "2. 付属品", "2.1 標準付属品"]
    assert (first.title, second.title) == ("1. 基本仕様", "2.1 標準付属品")
    (note,) = [b for b in blocks if b.a1_range == "A15"]
    assert note.kind == "text" and note.level is None


def test_no_bold_workbook_has_no_headings():
    wb, ws = sheet_of("Plain", [["Big plain title"], [], ["Team", "People"], ["Core", 4], ["Ops", 3]])
    ws["A1"].font = Font(size=20)
    grids = grids_of(wb)
    assert detect_heading_levels(grids).levels == {}
    blocks = segment_sheet(grids[0])
    assert all(b.level is None for b in blocks)
    (table,) = tables(blocks)
    assert table.heading_path == ["Plain", "Big plain title"]  # a title line, not a heading


def test_headings_are_computed_per_workbook_and_text_regions_split():
    wb, ws = sheet_of("Doc", [["Overview"], ["This sheet lists the parts."], ["Parts are counted weekly."]])
    ws["A1"].font = Font(bold=True, size=14)
    other = wb.create_sheet("Data")
    put(other, [["Part", "Qty"], ["Bolt", 4]])
    other["A1"].font = other["B1"].font = Font(bold=True)
    grids = grids_of(wb)
    hm = detect_heading_levels(grids)
    assert (hm.body_size, hm.levels) == (11.0, {14.0: 2, 11.0: 3})
    blocks = segment_sheet(grids[0], hm)
    assert [(b.kind, b.a1_range, b.level) for b in blocks] == [
        ("title", "A1", 2), ("text", "A2:A3", None)]
    assert blocks[1].heading_path == ["Doc", "Overview"]


def test_heading_map_rules():
    class G:
        visibility = "visible"

        def __init__(self, cells):
            keys = ("display_text", "bold", "font_size", "hidden", "value_type", "merged_from")
            self.table = pa.table({k: pa.array([c[i] for c in cells], GRID_SCHEMA.field(k).type)
                                   for i, k in enumerate(keys)})

    def cell(text, bold=False, size=11.0, vtype="string"):
        return (text, bold, size, False, vtype, None)

    body = [cell("x", size=10.0)] * 3 + [cell("y", size=12.0)]
    sizes = [cell(f"h{s}", True, float(s)) for s in (30, 24, 20, 18, 16, 14, 13)]
    hm = detect_heading_levels([G(body + sizes)])
    assert hm.body_size == 10.0
    assert [hm.levels[float(s)] for s in (30, 24, 20, 18, 16, 14, 13)] == [2, 3, 4, 5, 6, 6, 6]
    assert hm.level(False, 30.0) is None and hm.level(True, 30.0) == 2
    # bold numbers are no headings; only bold cells: body is the mode of all sizes
    hm = detect_heading_levels([G([cell("1", True, 14.0, "number"), cell("a", True, 9.0)])])
    assert (hm.body_size, hm.levels) == (9.0, {9.0: 2})
    assert detect_heading_levels([]) == HeadingMap(11.0, {})


def test_filled_header_then_gap_then_filled_header_splits():
    fill = PatternFill("solid", fgColor="FFDDEBF7")
    wb, ws = sheet_of("Fill", [["Name", "City"], ["Ann", "Oslo"], [], ["Name2", "Town"], ["Bo", "Rome"]])
    for ref in ("A1", "B1", "A4", "B4"):
        ws[ref].fill = fill
    _, blocks = segment(wb)
    assert [b.a1_range for b in tables(blocks)] == ["A1:B2", "A4:B5"]
