"""Segmentation signals beyond gaps: Excel tables (ListObjects), frozen panes, header bands of up
to four rows, and forms (``key_value`` blocks).

Every fixture is built here with openpyxl and runs through the real stages
(:func:`extraction_assets.pipeline.run_pipeline`: parse, normalize, segment, render with the real
USE tokenizer); the tests read the tables a user would query: ``blocks``, ``block_columns``,
``records`` and ``renderings``.
"""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from openpyxl import Workbook
from openpyxl.styles import Border, Font, PatternFill, Side
from openpyxl.worksheet.table import Table, TableStyleInfo

from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.checks import cell_coverage, rows_in_one_chunk
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets_tests.builders import put_rows as put


@pytest.fixture(scope="module")
def count_tokens():
    return LocalEmbedder().count_tokens


def run(wb: Workbook, count_tokens) -> dict:
    buf = io.BytesIO()
    wb.save(buf)
    tables = run_pipeline(buf.getvalue(), count_tokens=count_tokens)
    coverage = cell_coverage(tables["cells"], tables["sheets"], tables["blocks"])
    assert coverage.passed, coverage.description
    assert rows_in_one_chunk(tables["records"], tables["chunks"]).passed
    return {name: table.to_pylist() for name, table in tables.items()}


def blocks_of(out: dict, kind: str) -> list[dict]:
    return [b for b in out["blocks"] if b["kind"] == kind]


def headers(out: dict, block: dict) -> list[str]:
    return [c["header"] for c in sorted(out["block_columns"], key=lambda c: c["position"])
            if c["block_id"] == block["block_id"]]


def records(out: dict, block: dict) -> list[tuple[str, dict]]:
    return [(r["role"], json.loads(r["record"])) for r in out["records"]
            if r["block_id"] == block["block_id"]]


# -- ListObjects ------------------------------------------------------------------------------
def test_list_object_range_header_and_totals_row_are_authoritative(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Orders"
    # the Excel table's totals row is followed directly by a short line the gap rules would
    # otherwise read as a row of the table, and its totals row's label is not a summary word
    put(ws, [["Order", "Customer", "Amount"], ["A-1", "Kato", 120], ["A-2", "Ito", 80],
             ["A-3", "Sato", 45], ["Sum", None, 245], ["Checked 3 Oct"]])
    table = Table(displayName="Orders2024", ref="A1:C5", totalsRowCount=1)
    table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium9")
    ws.add_table(table)
    out = run(wb, count_tokens)
    (block,) = [b for b in blocks_of(out, "table") if b["a1_range"] == "A1:C5"]
    assert block["header_row_count"] == 1
    assert any("ListObject" in r and "Orders2024" in r for r in block["reasons"])
    assert headers(out, block) == ["Order", "Customer", "Amount"]
    assert records(out, block) == [
        ("data", {"Order": "A-1", "Customer": "Kato", "Amount": 120}),
        ("data", {"Order": "A-2", "Customer": "Ito", "Amount": 80}),
        ("data", {"Order": "A-3", "Customer": "Sato", "Amount": 45}),
        ("total", {"Order": "Sum", "Customer": None, "Amount": 245})]
    # row 6 is outside the table: a block of its own
    others = [b for b in out["blocks"] if b["block_id"] != block["block_id"]]
    assert [(b["a1_range"], b["kind"]) for b in others] == [("A6", "text")]


def test_without_the_list_object_the_line_under_is_a_row(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Order", "Customer", "Amount"], ["A-1", "Kato", 120], ["A-2", "Ito", 80],
             ["A-3", "Sato", 45], ["Sum", None, 245], ["Checked 3 Oct"]])
    out = run(wb, count_tokens)
    assert [b["a1_range"] for b in blocks_of(out, "table")] == ["A1:C6"]


def test_stale_list_object_inside_a_wider_table_is_not_used(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Stale"
    put(ws, [["Id", "Created", "Kind"]] + [[f"id-{i}", f"2024-01-{i:02d}", "Btp"] for i in range(1, 9)])
    ws.add_table(Table(displayName="Table1", ref="B1:C5"))  # written by software that never grew it
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert block["a1_range"] == "A1:C9"
    assert headers(out, block) == ["Id", "Created", "Kind"]
    assert any("Table1 B1:C5 covers only part" in r for r in block["reasons"])
    assert [b["kind"] for b in out["blocks"]] == ["table"]


def test_list_object_without_header_row_takes_its_column_names(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Raw"
    put(ws, [["x", 1], ["y", 2], ["z", 3]], start_row=3)
    table = Table(displayName="Points", ref="A3:B5", headerRowCount=0)
    table._initialise_columns()
    table.tableColumns[0].name, table.tableColumns[1].name = "Label", "Score"
    ws.add_table(table)
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert (block["a1_range"], block["header_row_count"]) == ("A3:B5", 0)
    assert headers(out, block) == ["Label", "Score"]
    assert [rec for _, rec in records(out, block)] == [
        {"Label": "x", "Score": 1}, {"Label": "y", "Score": 2}, {"Label": "z", "Score": 3}]


def test_side_by_side_list_objects_one_column_apart_stay_separate(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Two"
    # one empty column apart, same rows, no titles: the gap rule alone would join them
    put(ws, [["Item", "Qty"], ["bolt", 4], ["nut", 9]])
    put(ws, [["Part", "Cost"], ["gear", 12], ["cam", 30]], start_col=4)
    ws.add_table(Table(displayName="Left", ref="A1:B3"))
    ws.add_table(Table(displayName="Right", ref="D1:E3"))
    out = run(wb, count_tokens)
    assert [(b["a1_range"], headers(out, b)) for b in blocks_of(out, "table")] == [
        ("A1:B3", ["Item", "Qty"]), ("D1:E3", ["Part", "Cost"])]


# -- header bands -----------------------------------------------------------------------------
def test_four_row_header_from_merges(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Plan"
    put(ws, [["Region", "FY2024", None, None, None],
             [None, "H1", None, "H2", None],
             [None, "Q1", "Q2", "Q3", "Q4"],
             [None, "売上", "売上", "売上", "売上"],
             ["East", 1, 2, 3, 4], ["West", 5, 6, 7, 8]])
    for ref in ("A1:A4", "B1:E1", "B2:C2", "D2:E2"):
        ws.merge_cells(ref)
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert (block["a1_range"], block["header_row_count"]) == ("A1:E6", 4)
    assert headers(out, block) == ["Region", "FY2024 > H1 > Q1 > 売上", "FY2024 > H1 > Q2 > 売上",
                                   "FY2024 > H2 > Q3 > 売上", "FY2024 > H2 > Q4 > 売上"]
    levels = [c["header_levels"] for c in out["block_columns"]]
    assert levels[1] == ["FY2024", "H1", "Q1", "売上"]
    assert [rec["Region"] for _, rec in records(out, block)] == ["East", "West"]


def test_frozen_pane_marks_a_two_row_header_without_merges(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Frozen"
    put(ws, [["Staff list"], [None],
             ["Name", "Contact", "Contact", "Team"], ["", "phone", "e-mail", "name"],
             ["Sato", "x101", "sato@example.com", "Sales"],
             ["Ito", "x102", "ito@example.com", "Support"]])
    ws.freeze_panes = "B5"
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert (block["a1_range"], block["header_row_count"]) == ("A3:D6", 2)
    assert any(r.startswith("frozen pane at B5") for r in block["reasons"])
    assert headers(out, block) == ["Name", "Contact > phone", "Contact > e-mail", "Team > name"]
    assert block["title"] == "Staff list"


def test_without_the_frozen_pane_the_same_table_has_one_header_row(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Name", "Contact", "Contact", "Team"], [None, "phone", "e-mail", "name"],
             ["Sato", "x101", "sato@example.com", "Sales"],
             ["Ito", "x102", "ito@example.com", "Support"]])
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert block["header_row_count"] == 1


def test_a_row_of_text_over_the_number_columns_is_a_second_header_row(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Store", "Sales", "Sales", "Visitors"], [None, "JPY", "USD", "count"],
             ["Ginza", 100, 0.7, 40], ["Umeda", 90, 0.6, 35]])
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert block["header_row_count"] == 2
    assert headers(out, block) == ["Store", "Sales > JPY", "Sales > USD", "Visitors > count"]
    assert [rec["Sales > USD"] for _, rec in records(out, block)] == [0.7, 0.6]


def test_styled_header_band_without_merges_is_three_rows(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Band"
    rows = [["Plant", "Output", "Output", "Energy"], ["Plant", "2023", "2024", "2024"],
            ["Plant", "t", "t", "MWh"], ["Kobe", 10, 12, 3], ["Sakai", 7, 9, 2]]
    put(ws, rows)
    fill = PatternFill("solid", fgColor="DDEBF7")
    for r in (1, 2, 3):
        for c in range(1, 5):
            ws.cell(r, c).font = Font(bold=True)
            ws.cell(r, c).fill = fill
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert block["header_row_count"] == 3
    assert headers(out, block) == ["Plant", "Output > 2023 > t", "Output > 2024 > t",
                                   "Energy > 2024 > MWh"]


# -- forms ------------------------------------------------------------------------------------
def test_form_with_colon_labels_is_one_key_value_record(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "申請書"
    ws["A1"] = "Expense claim"
    ws["A1"].font = Font(bold=True, size=16)
    put(ws, [["Name:", "Mori Aya"], ["Date:", dt.date(2024, 5, 1)], ["Amount:", 1250.5],
             ["Approved:", None], ["Department:", "Sales"]], start_row=3)
    ws.merge_cells("B7:D7")
    put(ws, [["Item", "Cost"], ["Taxi", 1000], ["Meal", 250.5]], start_row=10)
    out = run(wb, count_tokens)
    (form,) = blocks_of(out, "key_value")
    assert form["a1_range"] == "A3:D7"
    assert form["heading_path"] == ["申請書", "Expense claim"]
    assert form["text"] == ("Name: Mori Aya\nDate: 2024-05-01\nAmount: 1250.5\nApproved:\n"
                            "Department: Sales")
    assert any("5 of 5 labels end with a colon" in r for r in form["reasons"])
    assert records(out, form) == [("data", {"Name": "Mori Aya", "Date": "2024-05-01",
                                            "Amount": 1250.5, "Approved": None,
                                            "Department": "Sales"})]
    (record,) = [r for r in out["records"] if r["block_id"] == form["block_id"]]
    assert (record["row"], record["a1_range"]) == (3, "A3:D7")
    assert json.loads(record["merged_from"]) == {}
    (rendering,) = [r for r in out["renderings"] if r["block_id"] == form["block_id"]]
    assert rendering["html"].startswith("<dl><dt>Name</dt><dd>Mori Aya</dd>")
    (chunk,) = [c for c in out["chunks"] if form["block_id"] in c["block_ids"]]
    assert "Amount: 1250.5" in chunk["text"]
    # the table under the form is still a table
    (table,) = blocks_of(out, "table")
    assert (table["a1_range"], headers(out, table)) == ("A10:B12", ["Item", "Cost"])


def test_form_with_two_pairs_per_row(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["氏名：", "山田太郎", "部署：", "営業"], ["日付：", 45413, "金額：", 3000]])
    ws["B2"].number_format = "yyyy-mm-dd"
    out = run(wb, count_tokens)
    (form,) = blocks_of(out, "key_value")
    assert records(out, form) == [("data", {"氏名": "山田太郎", "部署": "営業",
                                            "日付": "2024-05-01", "金額": 3000})]
    assert form["text"] == "氏名: 山田太郎\n部署: 営業\n日付: 2024-05-01\n金額: 3000"


def test_form_with_bold_labels_and_no_colons(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Project", "Atlas"], ["Owner", "R. Diaz"], ["Budget", 50000]])
    for r in (1, 2, 3):
        ws.cell(r, 1).font = Font(bold=True)
    out = run(wb, count_tokens)
    (form,) = blocks_of(out, "key_value")
    assert [rec for _, rec in records(out, form)] == [
        {"Project": "Atlas", "Owner": "R. Diaz", "Budget": 50000}]
    assert not blocks_of(out, "table")


@pytest.mark.parametrize("rows, bold_first_row", [
    # a two-column table with a header row: text above numbers
    ([["City", "Population"], ["Tokyo", 14000000], ["Osaka", 2700000], ["Nagoya", 2300000]], False),
    # a parameter table with a bold header row, values of mixed types
    ([["Parameter", "Value"], ["Rate", 0.05], ["Owner", "Kim"], ["Start", 45413]], True),
])
def test_two_column_tables_are_not_forms(count_tokens, rows, bold_first_row):
    wb = Workbook()
    ws = wb.active
    put(ws, rows)
    if bold_first_row:
        for c in (1, 2):
            ws.cell(1, c).font = Font(bold=True)
    out = run(wb, count_tokens)
    assert not blocks_of(out, "key_value")
    (table,) = blocks_of(out, "table")
    assert headers(out, table) == rows[0]


def test_stacked_single_parents_give_a_four_row_header(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Region", "Plan", None, None, None], [None, "Sales", None, None, None],
             [None, "Domestic", None, "Export", None], [None, "Q1", "Q2", "Q1", "Q2"],
             ["North", 1, 2, 3, 4], ["South", 5, 6, 7, 8]])
    for ref in ("A1:A4", "B1:E1", "B2:E2", "B3:C3", "D3:E3"):
        ws.merge_cells(ref)
    for row in ws["A1:E4"]:
        for cell in row:
            cell.font = Font(bold=True)
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert (block["a1_range"], block["header_row_count"]) == ("A1:E6", 4)
    assert headers(out, block) == ["Region", "Plan > Sales > Domestic > Q1",
                                   "Plan > Sales > Domestic > Q2", "Plan > Sales > Export > Q1",
                                   "Plan > Sales > Export > Q2"]


def test_row_group_label_merged_down_the_data_is_not_a_header(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Source", "Mean", "Count"], ["Excel", 43.1, 8], [None, 40.7, 8], [None, 49.5, 11],
             [None, 42.0, 9]])
    ws.merge_cells("A2:A5")
    out = run(wb, count_tokens)
    (block,) = blocks_of(out, "table")
    assert block["header_row_count"] == 1
    assert [rec["Source"] for _, rec in records(out, block)] == ["Excel"] * 4


def test_form_keeps_a_blank_field_between_pairs(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Date:", dt.date(2024, 5, 1)], ["Remarks:", "ok"], ["Approved by:", None],
             ["Department:", "Sales"], ["Due date:", dt.date(2024, 6, 1)]])
    out = run(wb, count_tokens)
    (form,) = blocks_of(out, "key_value")
    assert form["a1_range"] == "A1:B5"
    assert [rec for _, rec in records(out, form)] == [
        {"Date": "2024-05-01", "Remarks": "ok", "Approved by": None, "Department": "Sales",
         "Due date": "2024-06-01"}]


def test_form_range_ignores_how_far_other_content_stretches_the_sheet(count_tokens):
    def form(with_table: bool) -> dict:
        wb = Workbook()
        ws = wb.active
        put(ws, [["Name:", "Mori"], ["Dept:", "Sales"], ["Amount:", 1250]])
        ws.merge_cells("B2:C2")
        if with_table:
            put(ws, [["Item", "Cost"], ["Taxi", 1000], ["Meal", 250]], start_row=6, start_col=4)
        (block,) = blocks_of(run(wb, count_tokens), "key_value")
        return block

    assert form(False)["a1_range"] == form(True)["a1_range"] == "A1:C3"


def test_title_over_a_single_pair_is_not_a_form_field(count_tokens):
    wb = Workbook()
    ws = wb.active
    ws["F3"] = "Measured production"
    ws.merge_cells("F3:K3")
    put(ws, [["Period:", "01-Mar-2023 - 08-Apr-2023"]], start_row=4, start_col=2)
    ws.merge_cells("C4:F4")
    out = run(wb, count_tokens)
    assert [(b["a1_range"], b["kind"], b["text"]) for b in out["blocks"]] == [
        ("F3:K3", "title", "Measured production"),
        ("B4:F4", "key_value", "Period: 01-Mar-2023 - 08-Apr-2023")]
    assert out["blocks"][1]["heading_path"] == ["Sheet", "Measured production"]


def test_title_line_above_a_form_is_its_title(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Visitor card"], [None], ["Name:", "Ono"], ["Company:", "Acme"], ["Badge:", 17]])
    out = run(wb, count_tokens)
    (form,) = blocks_of(out, "key_value")
    assert (form["a1_range"], form["title"]) == ("A3:B5", "Visitor card")
    assert form["heading_path"] == ["Sheet", "Visitor card"]
    (chunk,) = out["chunks"]
    assert chunk["text"] == "# Sheet\n\n## Visitor card\n\nName: Ono\nCompany: Acme\nBadge: 17"


@pytest.mark.parametrize("bordered, ranges", [(True, ["A1:C6"]), (False, ["A1:C3", "A5:C6"])])
def test_borders_carry_a_text_table_across_one_empty_row(count_tokens, bordered, ranges):
    wb = Workbook()
    ws = wb.active
    thin = Side(style="thin")
    rows = [["Name", "City", "Note"], ["Ann", "Oslo", "new"], ["Bo", "Rome", "old"],
            [None, None, None], ["Cy", "Kyiv", "new"], ["Di", "Lima", "old"]]
    put(ws, rows)
    if bordered:
        for row in ws["A1:C6"]:
            for cell in row:
                cell.border = Border(left=thin, right=thin, top=thin, bottom=thin)
    out = run(wb, count_tokens)
    assert [b["a1_range"] for b in blocks_of(out, "table")] == ranges


# -- regions: bitmap and graph ------------------------------------------------------------------
def test_regions_are_the_same_on_a_bitmap_and_as_a_graph(monkeypatch, count_tokens):
    """A dense bounding box is labelled on a bitmap, a sparse one as a graph of neighbours:
    scattered cells, diagonal touches and a hidden row give the same blocks either way."""
    import random

    from extraction_assets.core.segment import regions

    rng = random.Random(7)
    wb = Workbook()
    ws = wb.active
    for _ in range(120):
        ws.cell(rng.randint(1, 60), rng.randint(1, 40), rng.choice(["x", 1, 2.5, "label"]))
    for r, c in ((70, 1), (71, 2), (72, 3), (75, 5), (76, 5)):  # a diagonal chain, a pair
        ws.cell(r, c, "d")
    ws.row_dimensions[74].hidden = True
    ws.cell(74, 5, "hidden")  # joins 73 and 75 only as the sheet is shown
    ws.cell(73, 5, "above")
    dense = run(wb, count_tokens)
    monkeypatch.setattr(regions, "_DENSE_AREA", 0)
    graph = run(wb, count_tokens)
    assert len(dense["blocks"]) > 50
    assert [(b["kind"], b["a1_range"]) for b in dense["blocks"]] == [
        (b["kind"], b["a1_range"]) for b in graph["blocks"]]
    assert [(b["kind"], b["a1_range"]) for b in dense["blocks"]][-2:] == [
        ("text", "A70:C72"), ("text", "E73:E76")]
