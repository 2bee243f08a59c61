"""The layouts of real spreadsheets that were misread (issue "Real spreadsheets: no cell lost,
every table and header as a person reads it"), one kind each, with fixtures built here.

Every test runs the real stages (parse → normalize → segment → render) and asserts the
records a person reading the sheet expects, and that no value was lost (the
``values_in_output`` rule: no ``value_not_in_output`` issue).
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from openpyxl import Workbook
from openpyxl.styles import Border, Font, PatternFill, Side

from extraction_assets.core.blocks import Block, Column
from extraction_assets.core.render.coverage import unreached_cells
from extraction_assets.core.render.records import RecordSet
from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.checks import cell_coverage
from extraction_assets.pipeline.codecs import grids_from_tables
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets_tests.builders import put_rows as put

BOLD = Font(bold=True)
FILL = PatternFill("solid", fgColor="DDEBF7")
THIN = Border(bottom=Side(style="thin"))


@pytest.fixture(scope="module")
def count_tokens():
    return LocalEmbedder().count_tokens


def run_bytes(data: bytes, count_tokens) -> dict:
    tables = run_pipeline(data, count_tokens=count_tokens)
    out = {name: table.to_pylist() for name, table in tables.items()}
    lost = [i for i in out["extraction_issues"] if i["code"] == "value_not_in_output"]
    assert not lost, lost
    assert cell_coverage(tables["cells"], tables["sheets"], tables["blocks"]).passed
    return out


def run(wb: Workbook, count_tokens) -> dict:
    buf = io.BytesIO()
    wb.save(buf)
    return run_bytes(buf.getvalue(), count_tokens)


def tables_of(out: dict) -> list[dict]:
    return [b for b in out["blocks"] if b["kind"] == "table"]


def records(out: dict, block: dict) -> list[tuple[int, str, dict]]:
    return [(r["row"], r["role"], json.loads(r["record"])) for r in out["records"]
            if r["block_id"] == block["block_id"]]


def headers(out: dict, block: dict) -> list[str]:
    return [c["header"] for c in sorted(out["block_columns"], key=lambda c: c["position"])
            if c["block_id"] == block["block_id"]]


def style(ws, ref: str, *, bold=False, fill=False) -> None:
    for row in ws[ref]:
        for cell in row:
            if bold:
                cell.font = BOLD
            if fill:
                cell.fill = FILL


# -- kind 1: data under a merged header cell ---------------------------------------------------
def month_table() -> Workbook:
    wb = Workbook()
    ws = wb.active
    ws.title = "norway"
    put(ws, [["Month", None, "2016 Actual", "2015 Actual"],
             [1, "January", 178092, 181301],
             [2, "February", 181199, 164932],
             [3, "March", 190692, 186419]], start_row=3, start_col=2)
    ws.merge_cells("B3:C3")
    return wb


def test_kind1_every_column_under_a_merged_header_cell_is_kept(count_tokens):
    out = run(month_table(), count_tokens)
    (table,) = tables_of(out)
    assert table["a1_range"] == "B3:E6"
    assert headers(out, table) == ["Month", "Month (2)", "2016 Actual", "2015 Actual"]
    assert [rec for _, _, rec in records(out, table)][:2] == [
        {"Month": 1, "Month (2)": "January", "2016 Actual": 178092, "2015 Actual": 181301},
        {"Month": 2, "Month (2)": "February", "2016 Actual": 181199, "2015 Actual": 164932}]


def test_the_lost_value_rule_names_the_cells_of_a_dropped_column(count_tokens):
    """The rule behind ``values_in_output`` fails on kind 1: a block whose column C is not a
    column of it (as the segmenter once made it) leaves C's month names in no record."""
    buf = io.BytesIO()
    month_table().save(buf)
    tables = run_pipeline(buf.getvalue(), until="segmented_blocks")
    (grid,) = grids_from_tables(tables["cells"], tables["sheets"])
    block = Block(grid.sheet_index, grid.sheet_name, "table", 3, 2, 6, 5, 0, header_row_count=1,
                  columns=[Column(2, "Month", ["Month"]), Column(4, "2016 Actual", ["2016 Actual"]),
                           Column(5, "2015 Actual", ["2015 Actual"])], heading_path=["norway"])
    lost = unreached_cells([(grid, [block])], RecordSet([(grid, [block])]))
    assert [(ref, text) for _, ref, text, _ in lost] == [
        ("C4", "January"), ("C5", "February"), ("C6", "March")]
    assert all(where == "cell of table B3:E6 in no record" for *_, where in lost)
    full = Block(**{**block.__dict__, "columns": [Column(2, "Month", ["Month"]),
                                                  Column(3, "Month (2)", ["Month"]),
                                                  *block.columns[1:]]})
    assert unreached_cells([(grid, [full])], RecordSet([(grid, [full])])) == []


def test_a_lost_value_is_an_error_issue_and_fails_the_check(count_tokens, monkeypatch):
    import extraction_assets.core.segment as segment

    real = segment.find_header

    def drop_column_c(ctx, block):  # the fault: a column under a merged header cell dropped
        real(ctx, block)
        block.columns = [c for c in block.columns if c.col != 3]

    monkeypatch.setattr(segment, "find_header", drop_column_c)
    buf = io.BytesIO()
    month_table().save(buf)
    tables = run_pipeline(buf.getvalue(), count_tokens=count_tokens)
    lost = [i for i in tables["extraction_issues"].to_pylist()
            if i["code"] == "value_not_in_output"]
    assert [(i["ref"], i["severity"]) for i in lost] == [("C4", "error"), ("C5", "error"),
                                                         ("C6", "error")]
    assert "'January'" in lost[0]["message"] and "in no record" in lost[0]["message"]


# -- kind 2: empty rows between the header and the data ---------------------------------------
def test_kind2_a_header_over_empty_rows_heads_its_data(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Account", "Owner", "Region", "Support"]], start_row=8)
    style(ws, "A8:D8", bold=True)
    put(ws, [["MidAmerican", "L. Lantef", "North", "J. Bollin"],
             ["Wisconsin", "C. Sebest", "East", "L. Penkav"],
             ["Alliant", "C. Sebest", "West", "L. Penkav"]], start_row=11)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert (table["a1_range"], table["header_row_count"]) == ("A8:D13", 1)
    rows = records(out, table)
    assert [(r, role) for r, role, _ in rows] == [(11, "data"), (12, "data"), (13, "data")]
    assert rows[0][2] == {"Account": "MidAmerican", "Owner": "L. Lantef", "Region": "North",
                          "Support": "J. Bollin"}


def test_kind2_a_header_split_by_empty_cells_and_a_row_of_numbers(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Price", "Volume", None, None, "Date", "Source"]], start_row=20, start_col=2)
    style(ws, "B20:G20", bold=True, fill=True)
    put(ws, [[9.72, 5, 0.023, 0.224, "12/26", "ENA"], [9.78, 5, 0.023, 0.225, "12/26", "ENA"],
             [9.84, 10, 0.046, 0.453, "12/27", "ENA"]], start_row=22, start_col=2)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["a1_range"] == "B20:G24"
    assert [rec for _, _, rec in records(out, table)][0] == {
        "Price": 9.72, "Volume": 5, "Column D": 0.023, "Column E": 0.224, "Date": "12/26",
        "Source": "ENA"}


# -- kind 3: horizontally merged data cells ----------------------------------------------------
def test_kind3_merged_data_cells_are_records_not_header_parents(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Employer", None, "Contact"]])
    ws.merge_cells("A1:B1")
    for r in range(2, 6):
        ws.cell(r, 1, f"Company {r - 1:05d}")
        ws.cell(r, 3, f"Contact {r - 1}")
        ws.merge_cells(f"A{r}:B{r}")
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert (table["a1_range"], table["header_row_count"]) == ("A1:C5", 1)
    assert headers(out, table) == ["Employer", "Contact"]
    assert [rec for _, _, rec in records(out, table)] == [
        {"Employer": f"Company {i:05d}", "Contact": f"Contact {i}"} for i in range(1, 5)]


# -- kind 4: pivot tables ----------------------------------------------------------------------
PIVOT = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
         '<pivotTableDefinition xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
         ' name="PivotTable1" cacheId="1" dataCaption="Data">'
         '<location ref="A3:E10" firstHeaderRow="1" firstDataRow="2" firstDataCol="2"/>'
         '<rowFields count="2"><field x="0"/><field x="1"/></rowFields>'
         '<colFields count="1"><field x="2"/></colFields>'
         '<rowItems count="6"><i><x/><x/></i><i r="1"><x v="1"/></i><i t="default"><x/></i>'
         '<i><x v="1"/><x/></i><i r="1"><x v="1"/></i><i t="grand"><x/></i></rowItems>'
         '</pivotTableDefinition>')


def pivot_workbook() -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "Summary Pivot"
    ws["A1"] = "Imports by day"
    put(ws, [["Sum of Volume", None, "Customer", None, None],
             ["Date", "Hour", "ECTRT", "SCL", "Grand Total"],
             ["09/06", 1, 0.74, 17.55, 18.29],
             [None, 2, 0.42, 9.96, 10.38],
             ["09/06 Total", None, 1.16, 27.51, 28.67],
             ["09/07", 1, 0.68, 16.16, 16.84],
             [None, 2, 0.38, 9.05, 9.43],
             ["Grand Total", None, 2.22, 52.72, 54.94]], start_row=3)
    buf = io.BytesIO()
    wb.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    rel = ('<Relationship Id="rIdPivot1" Target="../pivotTables/pivotTable1.xml" Type="http://'
           'schemas.openxmlformats.org/officeDocument/2006/relationships/pivotTable"/>')
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        for name in names:
            data = src.read(name)
            if name == "[Content_Types].xml":
                data = data.replace(b"</Types>", b'<Override PartName="/xl/pivotTables/pivot'
                                    b'Table1.xml" ContentType="application/vnd.openxmlformats-'
                                    b'officedocument.spreadsheetml.pivotTable+xml"/></Types>')
            dst.writestr(name, data)
        rels = "xl/worksheets/_rels/sheet1.xml.rels"
        if rels not in names:
            dst.writestr(rels, '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                         '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                         f'relationships">{rel}</Relationships>')
        dst.writestr("xl/pivotTables/pivotTable1.xml", PIVOT)
    return out.getvalue()


def test_kind4_a_pivot_table_is_read_as_its_part_lays_it_out(count_tokens):
    out = run_bytes(pivot_workbook(), count_tokens)
    (pivot,) = [o for o in out["sheet_objects"] if o["kind"] == "pivot_table"]
    assert (pivot["ref"], json.loads(pivot["details"])["row_items"]) == (
        "A3:E10", ["data", "data", "default", "data", "data", "grand"])
    (table,) = tables_of(out)
    assert (table["a1_range"], table["header_row_count"]) == ("A3:E10", 2)
    assert table["total_rows"] == [7, 10] and table["row_group_cols"] == [1]
    # the column field's caption (C3) heads every value column (it names the column axis, as
    # the second trial found: it labelled only its own column); the items row labels each
    assert headers(out, table) == ["Sum of Volume > Date", "Hour", "Customer > ECTRT",
                                   "Customer > SCL", "Customer > Grand Total"]
    rows = records(out, table)
    assert [(r, role) for r, role, _ in rows] == [(5, "data"), (6, "data"), (7, "total"),
                                                  (8, "data"), (9, "data"), (10, "total")]
    # the row label Excel shows once per group is carried down to the group's rows
    assert [rec["Sum of Volume > Date"] for _, _, rec in rows] == [
        "09/06", "09/06", "09/06 Total", "09/07", "09/07", "Grand Total"]
    assert rows[1][2]["Customer > SCL"] == 9.96


# -- kind 5: one table cut by empty rows and group label rows ----------------------------------
def test_kind5_group_labels_and_empty_rows_inside_one_table(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [[None, "Month", "Underlying", "Option", "Bid", "Offer"]], start_row=20)
    style(ws, "B20:F20", bold=True)
    ws["A21"] = "Cinergy Options"
    ws["A21"].font = BOLD
    put(ws, [[None, "Nov", 25.25, "ATM straddle", 5.0, 7.0],
             [None, "Nov", 25.25, "20 dp", 0.5, 0.75]], start_row=23)
    ws["A27"] = "Entergy Options"
    ws["A27"].font = BOLD
    put(ws, [[None, "Dec", 25.3, "25 dp", 1.75, 2.0],
             [None, "Dec", 25.3, "30 dc", 0.6, 0.85]], start_row=28)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert (table["a1_range"], table["header_row_count"]) == ("A20:F29", 1)
    assert table["group_rows"] == [21, 27]
    rows = records(out, table)
    assert [(r, role) for r, role, _ in rows] == [(21, "group"), (23, "data"), (24, "data"),
                                                  (27, "group"), (28, "data"), (29, "data")]
    # the group label is a column of its own, carried down to the group's rows
    assert [rec["Column A"] for _, role, rec in rows if role == "data"] == [
        "Cinergy Options", "Cinergy Options", "Entergy Options", "Entergy Options"]
    assert rows[4][2] == {"Column A": "Entergy Options", "Month": "Dec", "Underlying": 25.3,
                          "Option": "25 dp", "Bid": 1.75, "Offer": 2.0}


def test_kind5_group_labels_over_row_labels_become_a_column_of_their_own(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Counterparty", "Letter", "Comments"]], start_row=4)
    style(ws, "A4:C4", bold=True)
    ws["A6"] = "NO ACTION REQUIRED"
    ws["A6"].fill = FILL
    put(ws, [["Apache Corp", "10/31", "adequate assurances"],
             ["Aquila", "11/27", "drawing on the L/C"]], start_row=7)
    ws["A12"] = "ACTION REQUIRED"
    ws["A12"].fill = FILL
    put(ws, [["Belden & Blake", "11/26", "contend no default"]], start_row=13)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert (table["a1_range"], table["group_rows"]) == ("A4:C13", [6, 12])
    assert headers(out, table) == ["Group", "Counterparty", "Letter", "Comments"]
    rows = records(out, table)
    assert [(r, role) for r, role, _ in rows] == [(6, "group"), (7, "data"), (8, "data"),
                                                  (12, "group"), (13, "data")]
    assert rows[4][2] == {"Group": "ACTION REQUIRED", "Counterparty": "Belden & Blake",
                          "Letter": "11/26", "Comments": "contend no default"}
    merged = [json.loads(r["merged_from"]) for r in out["records"] if r["row"] == 13]
    assert merged == [{"Group": "A12"}]


def test_kind5_rows_after_empty_rows_continue_despite_missing_value_marks(count_tokens):
    """A task list whose date column says ``?`` or ``不明`` (unknown) above the gap and holds
    dates below it: the marks stand for missing values, not for a column of text, so the rows
    below the two empty rows continue the table and keep its header."""
    import datetime as dt

    wb = Workbook()
    ws = wb.active
    put(ws, [["作業NO", "Status", "担当者", "作業申告日", "作業終了日付"]], start_row=3)
    day = dt.date(2002, 7, 2)
    put(ws, [[1, "完了", "川本", day, "不明"], [2, "完了", "古城", day, "?"],
             [3, "不明", "川本", day, "不明"], [4, "完了", "古城", day, "?"],
             [5, "完了", "古城", day, "不明"], [6, "完了", "古城", day, day]], start_row=4)
    put(ws, [[7 + k, "完了", "川本", day, day + dt.timedelta(days=k)] for k in range(4)],
        start_row=12)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert (table["a1_range"], table["header_row_count"]) == ("A3:E15", 1)
    rows = records(out, table)
    assert [r for r, _, _ in rows] == [4, 5, 6, 7, 8, 9, 12, 13, 14, 15]
    assert rows[6][2]["作業NO"] == 7 and rows[6][2]["担当者"] == "川本"


def test_kind5_a_row_of_hidden_zeros_is_data_not_a_group_label(count_tokens):
    """Calls per half hour where the number format ``#`` shows zeros blank, in banded rows: a
    slot with no calls shows only its label, filled unlike the next slot, like a group label
    over it, but it holds values (zeros) and is a record; a real label row (no values at all)
    stays a group label."""
    wb = Workbook()
    ws = wb.active
    put(ws, [["Slot", "Received", "Answered", "Lost"]], start_row=2)
    style(ws, "A2:D2", bold=True)
    put(ws, [["Morning"], ["09:30-10:00", 2, 1, 1],
             ["10:00-10:30", 0, 0, 0], ["10:30-11:00", 0, 0, 0], ["11:00-11:30", 3, 2, 1],
             ["11:30-12:00", 0, 0, 0], ["12:00-12:30", 4, 4, 0]], start_row=3)
    ws["A3"].font = BOLD
    for row in ws["B4:D9"]:
        for cell in row:
            cell.number_format = "#"
    for r in (4, 6, 8):  # banded rows
        style(ws, f"A{r}:D{r}", fill=True)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["group_rows"] == [3]
    rows = records(out, table)
    assert [(r, role) for r, role, _ in rows] == [(3, "group")] + [(r, "data")
                                                                   for r in range(4, 10)]
    assert [rec["Slot"] for _, role, rec in rows if role == "data"] == [
        "09:30-10:00", "10:00-10:30", "10:30-11:00", "11:00-11:30", "11:30-12:00",
        "12:00-12:30"]
    assert {rec["Group"] for _, role, rec in rows if role == "data"} == {"Morning"}


def test_kind5_one_row_missing_its_label_is_no_row_group(count_tokens):
    """Parts listed one a row, one of them missing its name: the empty cell is a missing value,
    not the continuation of the row above (no fill-down, no ``merged_from``). Labels on the
    first row of groups of several rows still fill down."""
    wb = Workbook()
    ws = wb.active
    put(ws, [["Part", "Diameter", "Length"], ["Shaft", 20, 300], ["Gear", 80, 25],
             [None, 12, 40], ["Bearing", 35, 18], ["Key", 6, 30], ["Pin", 4, 22]])
    style(ws, "A1:C1", bold=True)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    rows = records(out, table)
    assert [rec.get("Part") for _, _, rec in rows] == [
        "Shaft", "Gear", None, "Bearing", "Key", "Pin"]
    assert all(r["merged_from"] in (None, "{}") for r in out["records"])

    wb = Workbook()
    ws = wb.active
    put(ws, [["Region", "Month", "Sales"], ["North", "Jan", 5], [None, "Feb", 6],
             ["South", "Jan", 7], [None, "Feb", 8], ["West", "Jan", 9], [None, "Feb", 3]])
    style(ws, "A1:C1", bold=True)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert [rec["Region"] for _, _, rec in records(out, table)] == [
        "North", "North", "South", "South", "West", "West"]


# -- kind 6: side-by-side tables with no empty column between them -----------------------------
def test_kind6_a_lone_column_across_empty_columns_is_a_column_of_the_table(count_tokens):
    """A table of contents whose ``Page`` column stands two empty columns right of ``Topic |
    Period``, its header in the same header row and style: one table, every page number in
    its row's record. A one-column list beside a table, headed in another style, stays apart."""
    wb = Workbook()
    ws = wb.active
    ws["B11"] = "Operational metrics"
    ws["B11"].font = BOLD
    put(ws, [["Topic", "Period", None, None, "Page"],
             ["Mobile customers", "Nine quarters", None, None, 6],
             ["Mobile churn", "Nine quarters", None, None, 11],
             ["Mobile ARPU", "Nine quarters", None, None, 13]], start_row=12, start_col=2)
    style(ws, "B12:C12", bold=True, fill=True)
    style(ws, "F12:F12", bold=True, fill=True)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["a1_range"] == "B12:F15"
    assert headers(out, table) == ["Topic", "Period", "Page"]
    assert [rec["Page"] for _, _, rec in records(out, table)] == [6, 11, 13]
    assert records(out, table)[1][2]["Topic"] == "Mobile churn"

    ws["F12"].font, ws["F12"].fill = Font(), PatternFill()
    out = run(wb, count_tokens)
    assert [t["a1_range"] for t in tables_of(out)] == ["B12:C15"]

def test_kind6_lists_side_by_side_under_a_repeated_header(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["E-rating", "Call Credit", "E-rating", "Call Credit", "E-rating", "No trades"],
             [11, "Abraxas", 11, "Louisiana", 11, "Adonis"],
             [11, "ACN Energy", 9, "Magnum", 11, "Advanced"],
             [10, "Adams", 10, "Mainline", None, None],
             [9, "Agave", None, None, None, None]], start_row=8)
    style(ws, "A8:F8", bold=True)
    out = run(wb, count_tokens)
    tables = tables_of(out)
    assert [t["a1_range"] for t in tables] == ["A8:B12", "C8:D11", "E8:F10"]
    assert [rec for _, _, rec in records(out, tables[1])] == [
        {"E-rating": 11, "Call Credit": "Louisiana"}, {"E-rating": 9, "Call Credit": "Magnum"},
        {"E-rating": 10, "Call Credit": "Mainline"}]


# -- kind 7: totals by their values, not by a leading word -------------------------------------
def test_kind7_total_rows_need_values_that_aggregate(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Counterparty", "Amount", "Letter"],
             ["Apache Corp", 120, "10/31"],
             ["Total Fina Elf", 80, "11/20"],
             ["Total-230", 40, "11/21"],
             [None, "=SUM(B2:B4)", None],
             ["Total", 240, None]])
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["total_rows"] == [5, 6]
    assert [(r, role) for r, role, _ in records(out, table)] == [
        (2, "data"), (3, "data"), (4, "data"), (5, "total"), (6, "total")]


def test_kind7_a_total_word_counts_when_the_value_is_the_sum_above(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Region", "Sales"], ["North", 10], ["South", 20], ["Total sales", 30],
             ["Total Fina Elf", 31]])
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["total_rows"] == [4]


# -- kind 8: numbers as labels, column numbers, header text ------------------------------------
def test_kind8_label_value_pairs_are_a_form_not_a_table_headed_by_a_number(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Number of curves"], ["to fetch", 35], ["Curve date", "2000-12-21"],
             ["First month", "Jan-01"]])
    out = run(wb, count_tokens)
    assert not tables_of(out)
    (form,) = [b for b in out["blocks"] if b["kind"] == "key_value"]
    assert form["a1_range"] == "A2:B4"
    assert [rec for _, _, rec in records(out, form)] == [
        {"to fetch": 35, "Curve date": "2000-12-21", "First month": "Jan-01"}]


def test_kind8_a_row_numbering_the_columns_is_a_header_row(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [["Month", "2016\nActual", "2016  Unit  rate", "2015\nActual"],
             [None, "(1)", "(2)", "(3)"],
             ["January", 178092, 185537, 181301],
             ["February", 181199, 168785, 164932]])
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["header_row_count"] == 2
    assert headers(out, table) == ["Month", "2016 Actual > (1)", "2016 Unit rate > (2)",
                                   "2015 Actual > (3)"]
    assert [r for r, _, _ in records(out, table)] == [3, 4]


def test_kind8_a_banded_first_row_of_values_is_no_header(count_tokens):
    """A list with no header whose rows alternate fills (banded): the first row, filled grey
    while the next is white, holds only numbers and dates like the rows below, so it is the
    first record. A styled header of dates over numbers, or of column numbers, stays one."""
    import datetime as dt

    wb = Workbook()
    ws = wb.active
    day = dt.date(2018, 2, 1)
    put(ws, [[k, 0, 123, day + dt.timedelta(days=k), 17060 - 50 * k, 200 - k] for k in range(6)])
    for r in range(1, 7, 2):
        style(ws, f"A{r}:F{r}", fill=True)
    for row in ws["D1:D6"]:
        row[0].number_format = "dd.mm.yyyy"
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["header_row_count"] == 0
    assert [r for r, _, _ in records(out, table)] == [1, 2, 3, 4, 5, 6]
    assert records(out, table)[0][2]["Column C"] == 123

    for head in ([dt.date(2024, m, 1) for m in (1, 2, 3)], [1, 2, 3]):
        wb = Workbook()
        ws = wb.active
        put(ws, [head, [10, 20, 30], [11, 21, 31], [12, 22, 32]])
        style(ws, "A1:C1", fill=True)
        out = run(wb, count_tokens)
        (table,) = tables_of(out)
        assert table["header_row_count"] == 1, head


def test_kind8_a_first_row_of_numbers_is_no_header(count_tokens):
    wb = Workbook()
    ws = wb.active
    put(ws, [[None, 128, 77, 42], ["Range", 0.84, 98, 35657.3], ["Range", 0.87, 424, 84283.0]],
        start_row=264, start_col=18)
    out = run(wb, count_tokens)
    (table,) = tables_of(out)
    assert table["header_row_count"] == 0
    assert headers(out, table) == ["Column R", "Column S", "Column T", "Column U"]
    assert [r for r, _, _ in records(out, table)] == [264, 265, 266]

