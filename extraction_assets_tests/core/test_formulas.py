"""Formulas stored without a cached value computed (core.formula.evaluate) and the references of
every formula listed (core.formula.refs, the formula_refs table), on workbooks built here."""

from __future__ import annotations

import io
import json

import openpyxl
import pyarrow as pa
import pytest

from extraction_assets.core.formula.evaluate import compute_uncached
from extraction_assets.core.formula.refs import formula_references
from extraction_assets.pipeline import stages
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets_tests.builders import Sheet, worksheet, xlsx_bytes


def _saved(wb: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _book(title: str) -> tuple[openpyxl.Workbook, object]:
    """A new openpyxl workbook and its one sheet, named ``title``."""
    wb = openpyxl.Workbook()
    wb.active.title = title
    return wb, wb.active


def _normalized(data: bytes) -> dict[str, pa.Table]:
    p = stages.parse_stage("wb", data).tables
    out = stages.normalize_stage("wb", p["parsed_cells"], p["parsed_sheets"], p["styles"],
                                 p["workbook_properties"])
    return {**out.tables, "issues": out.issues}


def _cells(tables) -> dict[tuple[str, str], dict]:
    return {(c["sheet_name"], c["ref"]): c for c in tables["cells"].to_pylist()}


def sales_book() -> bytes:
    """What a script writes: openpyxl stores formulas and no cached value."""
    wb, ws = _book("Sales")
    ws.append(["Item", "Qty", "Double"])
    for i in range(2, 10):
        ws.append([f"item {i}", i * 10, f"=B{i}*2"])
    ws["A10"], ws["B10"], ws["C10"] = "Total", "=SUM(B2:B9)", "=SUM(C2:C9)"
    return _saved(wb)


@pytest.fixture(scope="module")
def count_tokens():
    return LocalEmbedder().count_tokens


def test_openpyxl_formulas_give_numbers_in_records_marked_computed(count_tokens):
    n = _normalized(sales_book())
    cells = _cells(n)
    assert cells[("Sales", "C2")]["number_value"] == 40
    assert cells[("Sales", "B10")]["number_value"] == 440  # 20 + 30 + ... + 90
    assert cells[("Sales", "C10")]["number_value"] == 880  # reads the computed C2:C9
    assert {c["value_status"] for c in cells.values() if c["formula"]} == {"computed"}
    assert cells[("Sales", "C10")]["formula"] == "SUM(C2:C9)"  # the formula is kept
    assert n["sheets"].to_pylist()[0]["n_computed_formulas"] == 10
    assert [(i.code, i.severity) for i in n["issues"]] == [("formulas_computed", "info")]
    s = stages.segment_stage("wb", n["cells"], n["sheets"]).tables
    r = stages.render_stage("wb", "sales.xlsx", n["cells"], n["sheets"], s["blocks"],
                            s["block_columns"], count_tokens, 512).tables
    records = {row["row"]: row for row in r["records"].to_pylist()}
    assert json.loads(records[2]["record"]) == {"Item": "item 2", "Qty": 20, "Double": 40}
    assert json.loads(records[2]["computed"]) == {"Double": "C2"}
    assert json.loads(records[10]["record"])["Double"] == 880
    assert json.loads(records[10]["computed"]) == {"Qty": "B10", "Double": "C10"}
    assert json.loads(records[3]["computed"]) == {"Double": "C3"}


def test_formula_refs_list_what_each_formula_reads():
    refs = _normalized(sales_book())["formula_refs"].to_pylist()
    by_cell = {(r["ref"], r["position"]): r for r in refs}
    assert len(refs) == 10
    total = by_cell[("B10", 1)]
    assert (total["reads"], total["kind"], total["reads_sheet"], total["reads_range"]) == (
        "B2:B9", "range", "Sales", "B2:B9")
    assert (total["first_row"], total["first_col"], total["last_row"], total["last_col"]) == (
        2, 2, 9, 2)
    # "which totals depend on B7?"
    assert sorted(r["ref"] for r in refs if r["reads_sheet"] == "Sales"
                  and r["first_row"] <= 7 <= r["last_row"]
                  and r["first_col"] <= 2 <= r["last_col"]) == ["B10", "C7"]


def test_a_cached_value_is_never_replaced():
    # a wrong cache (999) stays: what Excel wrote is what the file says
    rows = ('<row r="1"><c r="A1"><v>5</v></c><c r="B1"><f>A1*2</f><v>999</v></c>'
            '<c r="C1"><f>A1*2</f></c></row>')
    cells = _cells(_normalized(xlsx_bytes([Sheet("S", worksheet(rows))])))
    assert (cells[("S", "B1")]["number_value"], cells[("S", "B1")]["value_status"]) == (999, "ok")
    assert (cells[("S", "C1")]["number_value"], cells[("S", "C1")]["value_status"]) == (
        10, "computed")


def test_what_cannot_be_computed_keeps_its_text_with_an_info_issue():
    wb, ws = _book("S")
    ws["A1"] = 1
    ws["B1"] = "=NOW()"  # volatile: the same bytes must give the same output
    ws["B2"] = "=NOSUCHFUNCTION(A1)"
    ws["B3"] = "=B2+1"  # reads a cell that was not computed
    ws["B4"] = "=[1]Other!A1"  # another workbook: never opened
    ws["B5"] = "=B6+1"  # circular
    ws["B6"] = "=B5+1"
    ws["B7"] = "=MyName*2"  # a defined name
    n = _normalized(_saved(wb))
    cells = _cells(n)
    for ref in ("B1", "B2", "B3", "B4", "B5", "B6", "B7"):
        assert cells[("S", ref)]["value_status"] == "uncached_formula", ref
        assert cells[("S", ref)]["display_text"].startswith("="), ref
    messages = {i.ref: i.message for i in n["issues"] if i.code == "formula_not_computed"}
    assert "volatile function NOW" in messages["B1"]
    assert "function NOSUCHFUNCTION is not supported" in messages["B2"]
    assert "reads a formula cell that was not computed" in messages["B3"]
    assert "another workbook" in messages["B4"]
    assert "circular reference" in messages["B5"]
    assert "MyName" in messages["B7"]
    assert all(i.severity == "info" for i in n["issues"])


def test_a_chain_behind_a_formula_not_computed_is_one_issue():
    wb, ws = _book("S")
    ws["A1"] = "=NOSUCHFUNCTION(1)"
    for r in range(2, 2001):
        ws[f"A{r}"] = f"=A{r - 1}+1"
    n = _normalized(_saved(wb))
    issues = [i for i in n["issues"] if i.code == "formula_not_computed"]
    assert [(i.ref, i.message.split(" formula")[0]) for i in issues] == [("A1", "1"),
                                                                        ("A2", "1,999")]


def test_a_long_chain_and_other_sheets_are_computed_in_dependency_order():
    wb, ws = _book("Chain")
    ws["A1"] = 1
    for r in range(2, 3001):  # a running total: each row reads the one above
        ws[f"A{r}"] = f"=A{r - 1}+1"
    other = wb.create_sheet("My Sheet")
    other["A1"] = "=Chain!A3000*2"
    other["A2"] = "='My Sheet'!A1&\" units\""
    ws["B1"] = "='My Sheet'!A2"  # written above its input: order is by dependency
    cells = _cells(_normalized(_saved(wb)))
    assert cells[("Chain", "A3000")]["number_value"] == 3000
    assert cells[("My Sheet", "A1")]["number_value"] == 6000
    assert cells[("Chain", "B1")]["display_text"] == "6000 units"


def test_formulas_of_one_shape_read_their_own_cells():
    wb, ws = _book("S")
    for r in range(2, 6):
        ws[f"B{r}"] = r - 1
        ws[f"C{r}"] = f"=B{r}+$B$2"  # in C2 both read B2; in C3 they read B3 and B2
        ws[f"D{r}"] = f"=ROW()*10+B{r}"  # asks for its own cell
    cells = _cells(_normalized(_saved(wb)))
    assert [cells[("S", f"C{r}")]["number_value"] for r in range(2, 6)] == [2, 3, 4, 5]
    assert [cells[("S", f"D{r}")]["number_value"] for r in range(2, 6)] == [21, 32, 43, 54]


def test_date_functions_are_not_computed_in_a_1904_workbook():
    wb = openpyxl.Workbook()
    wb.epoch = openpyxl.utils.datetime.CALENDAR_MAC_1904
    ws = wb.active
    ws.title = "S"
    ws["A1"] = 1
    ws["B1"] = '=TEXT(A1,"yyyy-mm-dd")'  # 1904-01-02 here, 1900-01-01 in a 1900 book
    ws["C1"] = "=A1+1"  # no date function: computed
    n = _normalized(_saved(wb))
    cells = _cells(n)
    assert cells[("S", "B1")]["value_status"] == "uncached_formula"
    assert cells[("S", "C1")]["number_value"] == 2
    (issue,) = [i for i in n["issues"] if i.code == "formula_not_computed"]
    assert "1904 date system" in issue.message


def test_ranges_are_read_as_written_and_whole_columns_only_where_length_is_moot():
    wb, ws = _book("S")
    for r in range(1, 6):
        ws[f"E{r}"] = r
    ws["A11"] = "last"  # the used range ends at row 11
    formulas = {"B1": "=ROWS(E1:E100)", "B2": "=COUNTBLANK(E1:E100)",
                "B3": "=INDEX(E1:E100,50)+1", "B4": "=SUM(E:E)", "B5": "=COUNTA(E:E)",
                "B6": "=ROWS(E:E)", "B7": "=SUMPRODUCT(--(E:E=\"\"))",
                "B8": '=IF(SUM(E:E)>10,"big","small")',
                "B9": '=IF(ISNA(VLOOKUP(4,E:E,1,FALSE)),"no","yes")',
                "B10": "=SUM((E:E=\"\")*1)"}
    for ref, formula in formulas.items():
        ws[ref] = formula
    n = _normalized(_saved(wb))
    cells = _cells(n)
    assert [cells[("S", f"B{r}")]["number_value"] for r in range(1, 6)] == [100, 95, 1, 15, 5]
    assert [cells[("S", r)]["display_text"] for r in ("B8", "B9")] == ["big", "yes"]
    for ref in ("B6", "B7", "B10"):
        assert cells[("S", ref)]["value_status"] == "uncached_formula", ref
    messages = {i.message for i in n["issues"] if i.code == "formula_not_computed"}
    assert any("whole column or row E:E in ROWS()" in m for m in messages)
    assert any("in an expression with a comparison" in m for m in messages)


def test_results_are_stored_as_excel_would():
    wb, ws = _book("S")
    ws["A1"] = "=0.1+0.2"
    ws["A2"] = '=REPT("x",40000)'  # longer than a cell may hold: #VALUE!, as in Excel
    cells = _cells(_normalized(_saved(wb)))
    assert (cells[("S", "A1")]["raw_value"], cells[("S", "A1")]["number_value"]) == ("0.3", 0.3)
    assert (cells[("S", "A2")]["value_type"], cells[("S", "A2")]["raw_value"]) == (
        "error", "#VALUE!")


@pytest.mark.parametrize(("formula", "reason"), [
    ('=REPT("ab",400000000)', "REPT could build more than"),
    ('=REPT(E2,E3)', "REPT could build more than"),
    ("=SUM(MMULT(E1:E3000,TRANSPOSE(E1:E3000)))", "a matrix function reads"),
    ("=" + "+".join(["E1"] * 600), "more than 1,000 tokens"),
    ("=SUM(MUNIT(100000))", "function MUNIT builds an array"),
    ("=SUM(E1:F600000)", "more than 1,000,000 cells"),
])
def test_hostile_formulas_are_refused_before_they_run(formula, reason):
    # REPT of literals: the library folds them as it compiles, so the bound comes first
    wb, ws = _book("S")
    ws["E1"], ws["E2"], ws["E3"] = 1, "ab", 400_000_000
    ws["A1"] = formula
    n = _normalized(_saved(wb))
    assert _cells(n)[("S", "A1")]["value_status"] == "uncached_formula"
    (message,) = [i.message for i in n["issues"] if i.code == "formula_not_computed"]
    assert reason in message


def test_array_formulas_are_not_computed():
    wb, ws = _book("S")
    for r in range(2, 5):
        ws[f"B{r}"] = r
    ws["C2"] = openpyxl.worksheet.formula.ArrayFormula("C2:C4", "=B2:B4*10")
    ws["D2"] = "=C2+1"  # reads it: not computed either (C2 would read as empty)
    n = _normalized(_saved(wb))
    cells = _cells(n)
    assert cells[("S", "C2")]["value_status"] == "uncached_formula"
    assert cells[("S", "D2")]["value_status"] == "uncached_formula"
    messages = {i.ref: i.message for i in n["issues"] if i.code == "formula_not_computed"}
    assert "array formula" in messages["C2"]
    assert "reads a formula cell that was not computed" in messages["D2"]


def test_computing_is_deterministic():
    data = sales_book()
    first, second = _normalized(data), _normalized(data)
    assert first["cells"].equals(second["cells"])
    assert first["formula_refs"].equals(second["formula_refs"])


def test_compute_uncached_without_uncached_formulas_computes_nothing():
    cells = pa.table({"row": pa.array([1], pa.int32()), "col": pa.array([1], pa.int32()),
                      "data_type": ["n"], "value": ["3"], "formula": ["1+2"]})
    found = compute_uncached([("S", cells)])
    assert found.sheets == {} and found.issues == []


@pytest.mark.parametrize(("formula", "expected"), [
    ("SUM(B2:B9)*2", [("B2:B9", "range", "S", "B2:B9")]),
    ("'My Sheet'!$A$1+A1", [("'My Sheet'!$A$1", "cell", "My Sheet", "A1"),
                            ("A1", "cell", "S", "A1")]),
    ("SUM(A:C)", [("A:C", "columns", "S", "A1:C1048576")]),
    ("SUM(2:3)", [("2:3", "rows", "S", "A2:XFD3")]),
    ("[1]Other!A1", [("[1]Other!A1", "external", None, None)]),
    ("'C:\\x\\[book.xlsx]Sheet1'!A1", [("'C:\\x\\[book.xlsx]Sheet1'!A1", "external", None,
                                        None)]),
    ("@Data!A1:A3", [("Data!A1:A3", "range", "Data", "A1:A3")]),
    ("MyName*2", [("MyName", "name", None, None)]),
    ("SUM(Sheet1:Sheet3!A1)", [("Sheet1:Sheet3!A1", "sheets", None, None)]),
    ('IF(A1="B2",C1,"D4")', [("A1", "cell", "S", "A1"), ("C1", "cell", "S", "C1")]),
    ("Sheet2!A1:Sheet2!B2", [("Sheet2!A1:Sheet2!B2", "range", "Sheet2", "A1:B2")]),
])
def test_formula_references(formula, expected):
    assert [(r.text, r.kind, r.sheet, r.a1_range)
            for r in formula_references(formula, "S")] == expected


@pytest.mark.parametrize("formula", [
    "B2*2", "B22*2", "1.5E+3*A1", "LOG10(A1)+LOG2(B22)", "'Sheet 2'!A1+'Sheet 10'!B2",
    '"a1b22"&C3', "A1:B22", "SUM(1:3)+SUM($A$1:A100)", "IF(A1>10,ROUND(B2,2),-3.25%)",
    "[1]Book2!A1+Table1[[#This Row],[Col2]]", "{1,2;3,4}", "ATAN2(1,2)",
])
def test_tokens_of_a_column_are_the_tokenizers_own(formula):
    # the tokenizer runs once per digit-free form; each formula's digits are put back
    from openpyxl.formula.tokenizer import Token, Tokenizer

    from extraction_assets.core.formula import refs

    direct = tuple(
        (refs._RANGE if t.type == Token.OPERAND and t.subtype == Token.RANGE
         else refs._FUNCTION if t.type == Token.FUNC and t.subtype == Token.OPEN
         else refs._OTHER, t.value)
        for t in Tokenizer("=" + formula).items)
    assert refs._tokens(formula) == direct


def test_the_result_line_says_how_many_formulas_were_computed(monkeypatch):
    from rich.console import Console

    from extraction_assets.app import cli
    from extraction_assets.app.ingest import IngestResult

    out = Console(record=True, width=300)
    monkeypatch.setattr(cli, "console", out)
    counts = {"sheets": 1, "tables": 1, "records": 9, "chunks": 1}
    cli._print_result(IngestResult("book.xlsx", "h" * 64, "success", counts=counts))
    cli._print_result(IngestResult("book.xlsx", "h" * 64, "success", counts={
        **counts, "formulas_computed": 10, "formulas_not_computed": 3}))
    first, second = out.export_text().splitlines()
    assert "formulas" not in first
    assert "formulas computed=10 not computed=3 (kept as text" in second
