"""The streaming SpreadsheetML reader and its typed errors: extraction_assets.core.ooxml.

Every fixture is a real xlsx package, written part by part with :mod:`zipfile` (see
``builders.py``) where openpyxl cannot write the construct, or saved by openpyxl.
"""

from __future__ import annotations

import io
import time
import zipfile

import pytest
from openpyxl import Workbook

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    ExtractionError,
    HostileContentError,
    LimitExceededError,
    NotASpreadsheetError,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import ParsedSheet
from extraction_assets.core.normalize import normalize_sheet
from extraction_assets.core.ooxml.sheet_cells import translate_formula
from extraction_assets.core.open import open_workbook
from extraction_assets.pipeline import stages
from extraction_assets_tests.builders import (
    NS_MAIN,
    Sheet,
    save_openpyxl,
    sst,
    t,
    worksheet,
    xlsx_bytes,
)


def read(data: bytes, limits: Limits | None = None):
    """Open ``data`` and read every sheet: (workbook, [ParsedSheet, ...])."""
    wb = open_workbook(data, limits)
    try:
        return wb, list(wb.iter_sheets())
    finally:
        wb.close()


def cells(sheet: ParsedSheet) -> dict[str, dict]:
    """The parsed cells of a sheet keyed by A1 reference."""
    from extraction_assets.core.a1 import cell_ref

    return {
        cell_ref(r, c): dict(t=dt, v=v, f=f, kind=k)
        for r, c, dt, v, f, k in zip(sheet.column("row"), sheet.column("col"),
                                     sheet.column("data_type"), sheet.column("value"),
                                     sheet.column("formula"), sheet.column("formula_kind"))
    }


def one_sheet(rows: str, **kwargs) -> bytes:
    return xlsx_bytes([Sheet("S", worksheet(rows))], **kwargs)


# -- cell values ------------------------------------------------------------------------------
def test_shared_strings_rich_runs_joined_and_phonetic_runs_excluded():
    strings = sst(
        t("都道府県"),
        "<t>東京都</t><rPh sb=\"0\" eb=\"3\"><t>トウキョウト</t></rPh>"
        '<phoneticPr fontId="1" type="noConversion"/>',
        "<r><t>日本語</t></r><rPh sb=\"0\" eb=\"3\"><t>ニホンゴ</t></rPh><r><t>あいうえお</t></r>",
        '<r><t>Number of Hires</t></r><r><rPr><b/><vertAlign val="superscript"/></rPr><t>1</t></r>',
    )
    rows = "".join(f'<row r="{i}"><c r="A{i}" t="s"><v>{i - 1}</v></c></row>' for i in range(1, 5))
    _, (sheet,) = read(one_sheet(rows, shared_strings=strings))
    assert [c["v"] for c in cells(sheet).values()] == [
        "都道府県", "東京都", "日本語あいうえお", "Number of Hires1"]
    assert not any(kana in v for v in sheet.column("value") for kana in ("トウキョウト", "ニホンゴ"))


def test_inline_strings_booleans_and_errors():
    rows = (
        '<row r="1"><c r="A1" t="inlineStr"><is><t>inline text</t></is></c>'
        '<c r="B1" t="inlineStr"><is><r><t>rich </t></r><r><rPr><i/></rPr><t>inline</t></r>'
        "<rPh><t>ルビ</t></rPh></is></c>"
        '<c r="C1" t="b"><v>1</v></c><c r="D1" t="b"><v>0</v></c>'
        '<c r="E1" t="e"><v>#DIV/0!</v></c><c r="F1" t="inlineStr"><is><t>#N/A</t></is></c></row>'
    )
    _, (sheet,) = read(one_sheet(rows))
    got = cells(sheet)
    assert got["A1"] == dict(t="inlineStr", v="inline text", f=None, kind=None)
    assert got["B1"]["v"] == "rich inline"
    assert (got["C1"]["t"], got["C1"]["v"]) == ("b", "1")
    assert (got["D1"]["t"], got["D1"]["v"]) == ("b", "0")
    assert (got["E1"]["t"], got["E1"]["v"]) == ("e", "#DIV/0!")
    assert (got["F1"]["t"], got["F1"]["v"]) == ("inlineStr", "#N/A")  # a string, not an error


def test_formulas_cached_uncached_and_shared():
    rows = (
        '<row r="2"><c r="B2"><v>100</v></c><c r="C2"><v>115</v></c>'
        '<c r="D2"><f t="shared" ref="D2:D4" si="0">B2+C2</f><v>215</v></c>'
        '<c r="E2" t="str"><f>CONCATENATE("Four"," (4)")</f></c>'
        '<c r="F2"><f>SUM($B$2:B2)</f><v>100</v></c></row>'
        '<row r="3"><c r="D3"><f t="shared" si="0"/><v>310</v></c></row>'
        '<row r="4"><c r="D4"><f t="shared" si="0"/><v>0</v></c></row>'
    )
    _, (sheet,) = read(one_sheet(rows))
    got = cells(sheet)
    assert got["D2"] == dict(t="n", v="215", f="B2+C2", kind="shared")
    assert got["D3"] == dict(t="n", v="310", f="B3+C3", kind="shared")
    assert got["D4"] == dict(t="n", v="0", f="B4+C4", kind="shared")
    # a formula with no <v>: no value, formula kept
    assert got["E2"] == dict(t="str", v=None, f='CONCATENATE("Four"," (4)")', kind="normal")
    assert got["F2"]["f"] == "SUM($B$2:B2)"


def test_uncached_formula_is_kept_through_parse_and_normalize():
    rows = ('<row r="1"><c r="A1" t="inlineStr"><is><t>Question</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Answer</t></is></c></row>'
            '<row r="2"><c r="A2" t="inlineStr"><is><t>Total questions</t></is></c>'
            "<c r=\"B2\"><f>COUNTA(A2:A3)</f></c></row>")
    wb, (sheet,) = read(one_sheet(rows))
    grid = {c["ref"]: c for c in normalize_sheet(sheet, wb.style_context).records()}
    assert grid["B2"]["value_status"] == "uncached_formula"
    assert grid["B2"]["display_text"] == "=COUNTA(A2:A3)"
    parsed = stages.parse_stage("h", one_sheet(rows)).tables["parsed_cells"].to_pylist()
    assert [c["value_status"] for c in parsed if c["ref"] == "B2"] == ["uncached_formula"]


@pytest.mark.parametrize(
    ("formula", "d_row", "d_col", "expected"),
    [
        ("B2+C2", 1, 0, "B3+C3"),
        ("A1+$A$1+A$1+$A1", 2, 3, "D3+$A$1+D$1+$A3"),
        ("Sheet2!A1*2", 1, 0, "Sheet2!A2*2"),
        ("'Data 2'!B2", 1, 0, "'Data 2'!B3"),
        ('A1&"B2"', 1, 0, 'A2&"B2"'),  # no shift inside a string literal
        ("LOG10(A1)", 1, 0, "LOG10(A2)"),  # a function name is not a reference
        ("SUM(B2:C2)*1E5", 1, 1, "SUM(C3:D3)*1E5"),
        ("A2-A1", -1, 0, "A1-#REF!"),
    ],
)
def test_translate_formula(formula, d_row, d_col, expected):
    assert translate_formula(formula, d_row, d_col) == expected


def test_shared_formula_shifted_past_last_column():
    rows = ('<row r="1"><c r="XFC1"><f t="shared" ref="XFC1:XFD1" si="0">XFD1*2</f><v>0</v></c>'
            '<c r="XFD1"><f t="shared" si="0"/><v>0</v></c></row>'
            '<row r="2"><c r="A2"><v>42</v></c></row>')
    wb, (sheet,) = read(one_sheet(rows))
    assert [i.code for i in wb.issues] == []
    got = cells(sheet)
    assert got["XFD1"]["f"] == "#REF!*2"
    assert got["A2"]["v"] == "42"


def test_bad_shared_string_index_is_an_issue():
    wb, (sheet,) = read(one_sheet('<row r="1"><c r="A1" t="s"><v>7</v></c></row>',
                                  shared_strings=sst(t("only"))))
    assert "A1" not in cells(sheet)  # no value left, so no cell
    assert [(i.code, i.ref) for i in wb.issues] == [("bad_shared_string_index", "A1")]


# -- sheets, merges, styles -------------------------------------------------------------------
def test_merged_ranges_visibility_and_missing_part():
    data = xlsx_bytes([
        Sheet("Main", worksheet('<row r="1"><c r="A1"><v>1</v></c></row>',
                                merges=["B1:D1", "A2:A4", "$E$5:F6"])),
        Sheet("Hidden", worksheet(""), "hidden"),
        Sheet("Secret", worksheet(""), "veryHidden"),
        Sheet("Gone", None),  # relationship to a part that is not in the package
    ])
    wb, sheets = read(data)
    assert [(s.info.name, s.info.visibility) for s in sheets] == [
        ("Main", "visible"), ("Hidden", "hidden"), ("Secret", "veryHidden"), ("Gone", "visible")]
    assert sheets[0].merged_ranges == ["B1:D1", "A2:A4", "E5:F6"]
    assert len(sheets[3]) == 0
    assert [(i.sheet_name, i.code) for i in wb.issues] == [("Gone", "missing_sheet_part")]


def test_builtin_date_format_and_1904_flag():
    rows = '<row r="1"><c r="A1" s="3"><v>43904</v></c><c r="B1" s="2"><v>123</v></c></row>'
    wb, (sheet,) = read(one_sheet(rows, workbook_pr='date1904="1"'))
    assert wb.date1904 is True
    assert wb.styles[3].number_format_id == 14
    assert wb.styles[3].number_format == "m/d/yyyy"
    grid = {c["ref"]: c for c in normalize_sheet(sheet, wb.style_context).records()}
    assert grid["A1"]["display_text"] == "3/15/2024"
    assert grid["A1"]["iso_value"] == "2024-03-15"
    assert (grid["B1"]["display_text"], grid["B1"]["number_value"]) == ("0000123", 123.0)


def test_openpyxl_workbook_theme_and_sheets(tmp_path):
    wb = Workbook()
    wb.active.title = "First"
    wb.active["A1"] = "hello"
    second = wb.create_sheet("Second")
    second.sheet_state = "hidden"
    parsed, sheets = read(save_openpyxl(wb, tmp_path / "wb.xlsx"))
    assert [s.name for s in parsed.sheets] == ["First", "Second"]
    assert parsed.theme_colors[:6] == ["000000", "FFFFFF", "1F497D", "EEECE1", "4F81BD", "C0504D"]
    assert cells(sheets[0])["A1"]["v"] == "hello"


# -- size: declared dimension and empty rows --------------------------------------------------
def test_declared_dimension_and_empty_rows_are_not_materialised():
    rows = ('<row r="1"><c r="B1" t="inlineStr"><is><t>Code</t></is></c>'
            '<c r="H1" t="inlineStr"><is><t>Checked</t></is></c></row>'
            '<row r="2"><c r="B2"><v>1</v></c><c r="H2"><v>2</v></c></row>'
            '<row r="3"><c r="C3"><v>3</v></c></row>'
            + "".join(f'<row r="{r}"/>' for r in range(4, 200_004)))
    data = xlsx_bytes([Sheet("Big", worksheet(rows, dimension="A1:H1048570"))])
    start = time.perf_counter()
    wb, (sheet,) = read(data)
    grid = normalize_sheet(sheet, wb.style_context)
    elapsed = time.perf_counter() - start
    assert sheet.info.declared_dimension == "A1:H1048570"
    assert sorted(cells(sheet)) == ["B1", "B2", "C3", "H1", "H2"]
    assert grid.used_range == "B1:H3"
    assert elapsed < 5


# -- typed errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [b"", b"GIF89a\x01\x00\x01\x00", b"name,amount\nalpha,1\n", b"\x89PNG\r\n\x1a\n"],
    ids=["empty", "gif", "csv", "png"],
)
def test_not_a_spreadsheet(data):
    with pytest.raises(NotASpreadsheetError) as info:
        open_workbook(data)
    assert info.value.code == "not_a_spreadsheet"


def test_zip_without_workbook_is_not_a_spreadsheet():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(NotASpreadsheetError):
        open_workbook(buf.getvalue())


def test_missing_workbook_part_is_corrupt():
    data = one_sheet('<row r="1"><c r="A1"><v>1</v></c></row>', omit=("xl/workbook.xml",))
    with pytest.raises(CorruptWorkbookError, match="xl/workbook.xml") as info:
        open_workbook(data)
    assert info.value.code == "corrupt_workbook"


@pytest.mark.parametrize("keep", [0.5, 0.98], ids=["half", "tail-cut"])
def test_truncated_zip_gives_a_typed_error(keep):
    data = one_sheet('<row r="1"><c r="A1"><v>1</v></c></row>')
    with pytest.raises(ExtractionError):
        open_workbook(data[: int(len(data) * keep)])


def test_truncated_zip_is_corrupt_workbook():
    data = one_sheet('<row r="1"><c r="A1"><v>1</v></c></row>')
    with pytest.raises(CorruptWorkbookError):
        open_workbook(data[: len(data) // 2])


_LAUGHS = (
    '<!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>\n'
)


@pytest.mark.parametrize("part", ["sharedStrings", "worksheet", "workbook"])
def test_dtd_is_hostile_content(part):
    prologue = '<?xml version="1.0" encoding="UTF-8"?>\n' + _LAUGHS
    rows = '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
    strings = sst(t("x"))
    if part == "sharedStrings":
        strings = prologue + f'<sst xmlns="{NS_MAIN}"><si><t>&lol3;</t></si></sst>'
    data = xlsx_bytes([Sheet("S", worksheet(rows, prologue=prologue if part == "worksheet" else
                                             '<?xml version="1.0"?>\n'))],
                      shared_strings=strings)
    if part == "workbook":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts = {n: zf.read(n) for n in zf.namelist()}
        parts["xl/workbook.xml"] = parts["xl/workbook.xml"].replace(
            b"?>\n", b"?>\n" + _LAUGHS.encode(), 1)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for name, content in parts.items():
                zf.writestr(name, content)
        data = buf.getvalue()
    with pytest.raises(HostileContentError) as info:
        read(data)
    assert info.value.code == "hostile_content"


def test_dtd_after_a_long_comment_is_hostile_content():
    prologue = '<?xml version="1.0" encoding="UTF-8"?>\n<!--' + "x" * 3000 + "-->\n" + _LAUGHS
    rows = '<row r="1"><c r="A1" t="inlineStr"><is><t>&lol3;</t></is></c></row>'
    data = xlsx_bytes([Sheet("S", worksheet(rows, prologue=prologue))])
    try:
        read(data)
    except HostileContentError:
        return
    raise AssertionError("a part with a DTD was accepted")


def test_malformed_worksheet_keeps_the_workbook_and_records_an_issue():
    bad = worksheet('<row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="A2"><v>2</v></c></row>'
                    '<row r="3"><c r="A3"><v>3</c></row>')  # </v> missing
    good = worksheet('<row r="1"><c r="A1"><v>9</v></c></row>')
    wb, sheets = read(xlsx_bytes([Sheet("Bad", bad), Sheet("Good", good)]))
    assert [s.info.name for s in sheets] == ["Bad", "Good"]
    assert {"A1": "1", "A2": "2"}.items() <= {k: v["v"] for k, v in cells(sheets[0]).items()}.items()
    assert cells(sheets[1])["A1"]["v"] == "9"
    assert [(i.sheet_name, i.severity, i.code) for i in wb.issues] == [
        ("Bad", "error", "corrupt_workbook")]
    # libxml2's message with the part's line and column, not lxml's "(<string>, line 2)"
    assert wb.issues[0].message == ("worksheet is not well-formed XML: Opening and ending tag "
                                    "mismatch: v line 2 and c, line 2, column 274")


def test_cell_limit():
    rows = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}"><v>{r}</v></c></row>'
                   for r in range(1, 6))
    data = one_sheet(rows)
    with pytest.raises(LimitExceededError) as info:
        read(data, Limits(max_cells=5))
    assert info.value.code == "limit_exceeded"
    _, (sheet,) = read(data, Limits(max_cells=10))
    assert len(sheet) == 10
    with pytest.raises(stages.StageError) as stage_info:
        stages.parse_stage("h", data, Limits(max_cells=5))
    assert stage_info.value.error.code == "limit_exceeded"


def test_shared_strings_are_read_for_the_cells_not_for_the_workbook_facts():
    """The ``workbook`` stage (sheet list, flags) does not parse ``xl/sharedStrings.xml``; a
    damaged string table fails the stage that reads cells, with the typed error."""
    rows = '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
    good = xlsx_bytes([Sheet("Prices", worksheet(rows))], shared_strings=sst(t("Apple")))
    assert stages.parse_stage("h", good).tables["parsed_cells"].column("value").to_pylist() \
        == ["Apple"]
    damaged = xlsx_bytes([Sheet("Prices", worksheet(rows))],
                         shared_strings=f'<sst xmlns="{NS_MAIN}"><si><t>Apple</si></sst>')
    facts = stages.workbook_stage("h", damaged, "in/prices.xlsx").tables["workbooks"].to_pylist()
    assert (facts[0]["sheet_names"], facts[0]["sheet_count"]) == (["Prices"], 1)
    with pytest.raises(stages.StageError) as info:
        stages.parse_stage("h", damaged)
    assert info.value.error.code == "corrupt_workbook"
    assert info.value.error.message == (
        "part xl/sharedStrings.xml is not well-formed XML: Opening and ending tag mismatch: "
        "t line 1 and si, line 1, column 89")


def test_workbook_stage_records_a_non_spreadsheet():
    with pytest.raises(stages.StageError) as info:
        stages.workbook_stage("h", b"\x89PNG\r\n\x1a\n", "in/report.png")
    row = info.value.output.tables["workbooks"].to_pylist()[0]
    assert (row["filename"], row["container"], row["format"]) == ("report.png", "other", "other")
    assert [i.code for i in info.value.output.issues] == ["not_a_spreadsheet"]
