"""Statistical tables as agencies publish them (issue "Tables read right on files we never tuned
on"): numbers stored as text, units rows, nested row groups. Fixtures are built here in the
layout of StatCan's tables (a title cell, merged multi-row column headers, a units row, row-group
labels nested two deep, the data labels indented); every test runs the real stages and asserts
what a person reading the table expects: the header path of each column, the row path of each
record, no units row or group label taken for data.
"""

from __future__ import annotations

import io
import json

import pytest
from openpyxl import Workbook
from openpyxl.styles import Alignment, Border, Font, Side

from extraction_assets.core.render.records import RecordSet
from extraction_assets.pipeline import run_pipeline
from extraction_assets.pipeline.codecs import blocks_from_tables, grids_from_tables, retrieval_units

INDENT = Alignment(indent=1)


def words(text: str) -> int:
    return len(text.split())


def run(wb: Workbook, **kwargs) -> dict:
    buf = io.BytesIO()
    wb.save(buf)
    tables = run_pipeline(buf.getvalue(), count_tokens=words, **kwargs)
    lost = [i for i in tables["extraction_issues"].to_pylist()
            if i["code"] == "value_not_in_output"]
    assert not lost, lost
    return tables


def the_table(tables: dict) -> dict:
    (table,) = [b for b in tables["blocks"].to_pylist() if b["kind"] == "table"]
    return table


def columns(tables: dict, table: dict) -> list[str]:
    return [c["header"] for c in tables["block_columns"].to_pylist()
            if c["block_id"] == table["block_id"]]


def records(tables: dict) -> dict[int, dict]:
    return {r["row"]: r for r in tables["records"].to_pylist()}


def band(ws, row: int) -> None:
    """Merge the value cells of a label row into one empty band, its anchor written with a
    border as StatCan's files write it."""
    ws.cell(row, 2).border = Border(top=Side(style="thin"))
    ws.merge_cells(start_row=row, start_column=2, end_row=row, end_column=7)


def sugars(as_text: bool) -> Workbook:
    """A StatCan-style table: title, a three-row column header (merged parents, a ``from`` /
    ``to`` pair), age groups over food groups over years; numbers as text when ``as_text``."""
    wb = Workbook()
    ws = wb.active
    ws["A1"] = "Table 2: Mean daily total sugars intake, in grams, by age group, 2004 vs. 2015"
    ws.merge_cells("A1:G1")
    ws["B3"], ws["E3"] = "Total", "Under-reporters"
    ws.merge_cells("B3:D3")
    ws.merge_cells("E3:G3")
    ws.merge_cells("A3:A5")
    for c, text in zip("BCDEFG", ["Mean grams", "95% confidence interval", None] * 2):
        if text:
            ws[f"{c}4"] = text
    ws.merge_cells("C4:D4")
    ws.merge_cells("F4:G4")
    ws.merge_cells("B4:B5")
    ws.merge_cells("E4:E5")
    for c, text in zip("CDFG", ["from", "to", "from", "to"]):
        ws[f"{c}5"] = text
    row = 6
    values = iter(range(20, 2000, 7))
    for age in ("Aged 2 to 8 years", "Aged 9 to 18 years"):
        ws.cell(row, 1, age)
        band(ws, row)
        row += 1
        for food in ("Food and beverages", "Food alone"):
            ws.cell(row, 1, food).alignment = INDENT
            band(ws, row)
            row += 1
            for year in ("2004", "2015"):
                ws.cell(row, 1, year).alignment = Alignment(indent=2)
                for c in range(2, 8):
                    v = next(values)
                    ws.cell(row, c, f"{v:,}" if as_text else v)
                row += 1
    return wb


def test_nested_row_groups_give_every_record_its_row_path():
    tables = run(sugars(as_text=True))
    table = the_table(tables)
    assert table["header_row_count"] == 3
    assert columns(tables, table)[-3:] == [
        "Under-reporters > Mean grams", "Under-reporters > 95% confidence interval > from",
        "Under-reporters > 95% confidence interval > to"]
    by_row = records(tables)
    # the outer label is a group row, not a record of nulls in the previous section
    assert by_row[6]["role"] == "group" and by_row[6]["row_path"] == ["Aged 2 to 8 years"]
    assert by_row[7]["row_path"] == ["Aged 2 to 8 years", "Food and beverages"]
    assert by_row[8]["row_path"] == ["Aged 2 to 8 years", "Food and beverages", "2004"]
    assert by_row[12]["row_path"] == ["Aged 2 to 8 years", "Food alone", "2015"]
    # the same food group and year under the other age group is told apart
    assert by_row[16]["row_path"] == ["Aged 9 to 18 years", "Food and beverages", "2015"]
    assert json.loads(by_row[16]["record"])["Total > Mean grams"] == f"{20 + 7 * 30:,}"
    assert [r["role"] for r in tables["records"].to_pylist()].count("data") == 8


def test_row_groups_nest_by_their_run_without_indents():
    wb = sugars(as_text=False)
    for row in wb.active.iter_rows():
        for cell in row:
            cell.alignment = Alignment()
    by_row = records(run(wb))
    assert by_row[9]["row_path"] == ["Aged 2 to 8 years", "Food and beverages", "2015"]
    assert by_row[11]["row_path"] == ["Aged 2 to 8 years", "Food alone", "2004"]
    assert by_row[15]["row_path"] == ["Aged 9 to 18 years", "Food and beverages", "2004"]


def test_the_record_text_and_chunks_carry_the_row_path():
    wb = sugars(as_text=True)
    tables = run(wb, max_tokens=200)
    grids = grids_from_tables(tables["cells"], tables["sheets"])
    blocks = [b for b in blocks_from_tables(tables["blocks"], tables["block_columns"])
              if b.kind == "table"]
    (texts,) = [r.texts().to_pylist() for r in RecordSet([(grids[0], blocks)]).by_block().values()]
    assert texts[-1].startswith("Aged 9 to 18 years > Food alone > 2015; ")
    chunks = tables["chunks"].to_pylist()
    assert len(chunks) > 1
    # a chunk that starts under groups whose rows are in an earlier chunk names them
    later = [c for c in chunks if min(c["rows"] or [0]) > 13]
    assert later and all("Aged 9 to 18 years" in c["heading_path"] for c in later)


@pytest.mark.parametrize("as_text", [False, True])
def test_the_same_table_reads_alike_with_numbers_stored_as_text_or_numbers(as_text):
    tables = run(sugars(as_text=as_text))
    table = the_table(tables)
    shape = (table["a1_range"], table["header_row_count"], table["group_rows"],
             table["group_levels"], columns(tables, table))
    reference = run(sugars(as_text=not as_text))
    other = the_table(reference)
    assert shape == (other["a1_range"], other["header_row_count"], other["group_rows"],
                     other["group_levels"], columns(reference, other))
    assert [r["row_path"] for r in tables["records"].to_pylist()] == [
        r["row_path"] for r in reference["records"].to_pylist()]


def two_year_header(title: str, stub: str, left: str, right: str) -> Workbook:
    """A sheet with ``title`` in A1 and a two-row column header on rows 3-4: ``stub`` in A3,
    ``left`` and ``right`` merged over two columns each, the years 2004 and 2015 under both."""
    wb = Workbook()
    ws = wb.active
    ws["A1"] = title
    ws["A3"], ws["B3"], ws["D3"] = stub, left, right
    ws.merge_cells("B3:C3")
    ws.merge_cells("D3:E3")
    for c, year in zip("BCDE", ["2004", "2015"] * 2):
        ws[f"{c}4"] = year
    return wb


def units_table(second_unit: str) -> Workbook:
    """Two sections under one column header, each a label row then a units row (``%`` merged
    across the value columns), the numbers stored as text."""
    wb = two_year_header("Table 1: Beverages consumed, by age", "Beverage", "Aged 1 to 8 years",
                         "Aged 9 to 13 years")
    ws = wb.active
    row = 5
    for section, unit in (("Percentage consuming the day before", "%"),
                          ("Quantity consumed by consumers", second_unit)):
        ws.cell(row, 1, section)
        ws.cell(row + 1, 2, unit)
        ws.merge_cells(start_row=row + 1, start_column=2, end_row=row + 1, end_column=5)
        for k, drink in enumerate(("Water", "Fruit juice", "Coffee")):
            ws.cell(row + 2 + k, 1, drink).alignment = INDENT
            for c in range(2, 6):
                ws.cell(row + 2 + k, c, f"{10 * k + c}.5")
        row += 5
    return wb


def test_a_units_row_is_header_material_never_a_record():
    tables = run(units_table("grams"))
    table = the_table(tables)
    assert table["unit_rows"] == [6, 11]
    by_row = records(tables)
    assert 6 not in by_row and 11 not in by_row
    assert by_row[5]["role"] == "group"
    water = json.loads(by_row[7]["record"])
    assert water == {"Beverage": "Water", "Aged 1 to 8 years > 2004 > %": "2.5",
                     "Aged 1 to 8 years > 2015 > %": "3.5", "Aged 9 to 13 years > 2004 > %": "4.5",
                     "Aged 9 to 13 years > 2015 > %": "5.5"} | {"Group": "Percentage consuming "
                                                                  "the day before"}
    assert by_row[7]["row_path"] == ["Percentage consuming the day before", "Water"]
    # the second section's values are in grams, under the same columns
    assert "Aged 9 to 13 years > 2015 > grams" in json.loads(by_row[13]["record"])
    assert by_row[13]["row_path"] == ["Quantity consumed by consumers", "Fruit juice"]


def test_units_that_agree_end_each_column_header_path():
    tables = run(units_table("%"))
    table = the_table(tables)
    assert columns(tables, table)[-2:] == ["Aged 9 to 13 years > 2004 > %",
                                           "Aged 9 to 13 years > 2015 > %"]
    assert all("%" not in (r["row_path"] or []) for r in tables["records"].to_pylist())


def test_a_units_row_under_the_header_is_a_header_level_not_the_first_record():
    wb = Workbook()
    ws = wb.active
    ws["A1"] = "Table 4: Education of workers, three regions"
    ws["A3"], ws["B3"], ws["D3"] = "Education", "Region 1", "Region 3"
    ws.merge_cells("B3:C3")
    ws.merge_cells("D3:E3")
    ws.merge_cells("A3:A5")
    for c, text in zip("BCDE", ["French", "English"] * 2):
        ws[f"{c}4"] = text
    ws["B5"] = "percent"
    ws.merge_cells("B5:E5")
    for k, level in enumerate(("No certificate", "Secondary school", "College", "Bachelor")):
        ws.cell(6 + k, 1, level)
        for c in range(2, 6):
            ws.cell(6 + k, c, f"{k * 10 + c}.3")
    tables = run(wb)
    table = the_table(tables)
    assert table["header_row_count"] == 3
    assert columns(tables, table) == ["Education", "Region 1 > French > percent",
                                      "Region 1 > English > percent",
                                      "Region 3 > French > percent",
                                      "Region 3 > English > percent"]
    by_row = records(tables)
    assert by_row[6]["row_path"] == ["No certificate"]
    assert json.loads(by_row[6]["record"])["Region 3 > English > percent"] == "5.3"


def test_a_paragraph_above_rows_is_no_group_label_to_fill_down():
    wb = Workbook()
    ws = wb.active
    ws.append(["Part", "Supplier", "Qty", "Price"])
    for cell in ws[1]:
        cell.font = Font(bold=True)
    ws.append(["Parts ordered in March were checked by the warehouse team before payment."])
    ws["A2"].font = Font(bold=True)
    for k in range(12):
        ws.append([f"P-{k:03d}", f"Supplier {k % 3}", k + 1, 2.5 * k])
    tables = run(wb)
    by_row = records(tables)
    assert by_row[2]["role"] == "data"
    assert all(r["row_path"] == [r["row_path"][-1]] for r in by_row.values() if r["row"] > 2)
    assert by_row[5]["row_path"] == ["P-002"]


def test_rows_above_the_only_units_row_keep_their_columns_without_its_unit():
    wb = Workbook()
    ws = wb.active
    ws.append(["Item", "North", "South"])
    ws.append(["Orders", "120", "95"])
    ws.append(["Returns", "7", "4"])
    ws.append([None, "%", "%"])
    ws.append(["Return rate", "5.8", "4.2"])
    ws.append(["Growth", "3.1", "2.0"])
    tables = run(wb)
    table = the_table(tables)
    assert table["unit_rows"] == [4]
    assert columns(tables, table) == ["Item", "North", "South"]
    by_row = records(tables)
    assert json.loads(by_row[2]["record"]) == {"Item": "Orders", "North": "120", "South": "95"}
    assert json.loads(by_row[5]["record"]) == {"Item": "Return rate", "North > %": "5.8",
                                               "South > %": "4.2"}


def test_the_retrieval_text_of_a_record_says_its_row_path_once():
    wb = Workbook()
    ws = wb.active
    ws.title = "Stock"
    ws.append(["Stock by item"])
    ws.append([])
    ws.append(["Item", "Qty", "Note"])
    ws.append(["Water", 3, "Water "])  # a value equal to the row's label is said once
    ws.append(["Juice", None, None])  # a row of its label alone is no unit
    for k in range(6):
        ws.append([f"Part {k}", k, "ok"])
    tables = run(wb)
    units = {u["a1_range"]: u for u in tables["record_units"].to_pylist()}
    assert "A5:C5" not in units
    water = units["A4:C4"]
    assert water["text"] == "Stock > Stock by item — Water; Qty: 3"
    assert water["row_path"] == ["Water"] and water["row"] == 4
    assert water["cells"] == [{"ref": "B4", "header": "Qty", "value": "3"}]
    assert units["A6:C6"]["text"] == "Stock > Stock by item — Part 0; Qty: 0; Note: ok"
    assert water["chunk_id"] in tables["chunks"].column("chunk_id").to_pylist()


def sections_table(indent: bool) -> Workbook:
    """Two sections (a label, then a units row repeated over every value column), each with
    age groups over food groups over statistics; the food groups indented when ``indent``."""
    wb = two_year_header("Table 3: Sugar intake by age group, 2004 and 2015", "Characteristic",
                         "Males", "Females")
    ws = wb.active
    row = 5
    for section, unit in (("Share of energy", "%"), ("Quantity", "grams")):
        ws.cell(row, 1, section)
        for c in range(2, 6):
            ws.cell(row + 1, c, unit)
        row += 2
        for age in ("Aged 2 to 8 years", "Aged 9 to 18 years"):
            ws.cell(row, 1, age)
            ws.cell(row + 1, 1, "Food and beverages").alignment = INDENT if indent else Alignment()
            for k, stat in enumerate(("Mean", "Median")):
                ws.cell(row + 2 + k, 1, stat).alignment = Alignment(indent=2 if indent else 0)
                for c in range(2, 6):
                    ws.cell(row + 2 + k, c, f"{row + k}.{c}")
            row += 4
    return wb


@pytest.mark.parametrize("indent", [True, False])
def test_units_rows_repeated_over_the_columns_between_sections_keep_one_table(indent):
    tables = run(sections_table(indent))
    table = the_table(tables)
    assert table["a1_range"] == "A3:E24" and table["header_row_count"] == 2
    assert table["unit_rows"] == [6, 16]
    by_row = records(tables)
    assert by_row[9]["row_path"] == ["Share of energy", "Aged 2 to 8 years",
                                     "Food and beverages", "Mean"]
    assert json.loads(by_row[9]["record"])["Females > 2015 > %"] == "7.5"
    assert by_row[24]["row_path"] == ["Quantity", "Aged 9 to 18 years", "Food and beverages",
                                      "Median"]
    assert "Males > 2004 > grams" in json.loads(by_row[24]["record"])


def test_a_few_items_without_values_in_a_plain_list_are_no_groups():
    wb = Workbook()
    ws = wb.active
    ws.append(["Item", "Stock", "Ordered"])
    ws.append(["Bolts", 10, 2])
    ws.append(["Nuts"])
    ws.append(["Washers"])
    for k in range(8):
        ws.append([f"Part {k}", k, k + 1])
    by_row = records(run(wb))
    assert by_row[3]["role"] == by_row[4]["role"] == "data"
    assert by_row[5]["row_path"] == ["Part 0"]


def test_group_label_rows_are_no_retrieval_units_their_rows_carry_them():
    tables = run(sugars(as_text=True))
    units = retrieval_units("h", "sugars.xlsx", "sugars.xlsx", tables["chunks"],
                            tables["record_units"], tables["blocks"],
                            lambda texts: [words(t) for t in texts])
    cited = {u["a1_ranges"][0] for u in units if u["kind"] == "record"}
    assert cited == {f"A{r}:G{r}" for r in (8, 9, 11, 12, 15, 16, 18, 19)}
    (unit,) = [u for u in units if u["a1_ranges"] == ["A16:G16"]]
    assert "Aged 9 to 18 years > Food and beverages > 2015; " in unit["text"]


def test_a_group_label_filled_down_its_own_column_is_in_the_path_once():
    wb = Workbook()
    ws = wb.active
    ws.append(["Desk", "Hub", "Month", "Bid"])
    for desk in ("Cinergy Options", "PJM Options"):
        ws.append([desk])
        ws.cell(ws.max_row, 1).font = Font(bold=True)
        for k in range(3):
            ws.append([None, desk[:3], f"M{k}", k + 0.5])
    by_row = records(run(wb))
    assert by_row[2]["role"] == "group"
    assert by_row[3]["row_path"] == ["Cinergy Options", "Cin"]
    assert by_row[8]["row_path"] == ["PJM Options", "PJM"]


def test_lone_group_labels_indented_under_a_section_nest_in_it():
    wb = Workbook()
    ws = wb.active
    ws.append(["Characteristic", "2007", "2014"])
    row = 2
    for section in ("Including fruit juice", "Excluding fruit juice"):
        ws.cell(row, 1, section).font = Font(bold=True)
        ws.cell(row + 1, 1, "Average (overall)").alignment = INDENT
        ws.cell(row + 1, 2, "5.0")
        ws.cell(row + 1, 3, "5.1")
        row += 2
        for group, items in (("Sex", ("Male", "Female")), ("Age group", ("12 to 18", "19 to 50"))):
            cell = ws.cell(row, 1, group)
            cell.font, cell.alignment = Font(bold=True), INDENT
            row += 1
            for k, item in enumerate(items):
                ws.cell(row, 1, item).alignment = INDENT
                ws.cell(row, 2, f"{row}.{k}")
                ws.cell(row, 3, f"{row}.5")
                row += 1
    by_row = records(run(wb))
    assert by_row[3]["row_path"] == ["Including fruit juice", "Average (overall)"]
    assert by_row[5]["row_path"] == ["Including fruit juice", "Sex", "Male"]
    assert by_row[8]["row_path"] == ["Including fruit juice", "Age group", "12 to 18"]
    assert by_row[13]["row_path"] == ["Excluding fruit juice", "Sex", "Male"]


@pytest.mark.parametrize("indented", [True, False])
def test_a_lone_first_group_label_is_a_sibling_of_the_next_not_its_parent(indented):
    """Age groups of one row each, then one whose rows split by sex (StatCan's layout): the
    first labels sit at the level of the outer groups although the table's deepest run is
    longer, and each age group replaces the one before it in the path."""
    wb = Workbook()
    ws = wb.active
    ws.append(["Characteristic", "n", "%"])
    for age, sexes in (("Aged 2 to 8 years", ()), ("Aged 9 to 18 years", ()),
                       ("Aged 19 years and older", ("Both sexes", "Males"))):
        ws.append([age])
        ws.cell(ws.max_row, 1).font = Font(bold=True)
        for sex in sexes or (None,):
            if sex:
                ws.append([sex])
                cell = ws.cell(ws.max_row, 1)
                cell.font = Font(bold=True)
                if indented:
                    cell.alignment = INDENT
            for year in ("2004", "2015"):
                ws.append([year, f"{ws.max_row},0{len(year)}", f"{ws.max_row}.5"])
                if indented and sex:
                    ws.cell(ws.max_row, 1).alignment = INDENT
    tables = run(wb)
    if indented:  # without indents the lone labels' level is unknown; their paths are not
        assert the_table(tables)["group_levels"] == [0, 0, 0, 1, 1]
    by_row = records(tables)
    assert by_row[3]["row_path"] == ["Aged 2 to 8 years", "2004"]
    assert by_row[6]["row_path"] == ["Aged 9 to 18 years", "2004"]
    assert by_row[8]["role"] == "group"
    assert by_row[8]["row_path"] == ["Aged 19 years and older"]
    assert by_row[10]["row_path"] == ["Aged 19 years and older", "Both sexes", "2004"]
    assert by_row[14]["row_path"] == ["Aged 19 years and older", "Males", "2015"]
