"""Normalize -> segment -> render through extraction_assets.pipeline.stages, on real xlsx files.

Each test rebuilds one acceptance case of ``../shared/cases/EXPECTED.md`` with openpyxl (or raw
parts) and checks what a user reads: tables and their A1 ranges, header labels, records,
Markdown chunks, resolved colours and chunk ids. Token counts use the real USE tokenizer.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import Workbook
from openpyxl.styles import Color, Font, PatternFill

from extraction_assets.core.normalize import DEFAULT_INDEXED_COLORS, apply_tint, resolve_color
from extraction_assets.core.render.escape import html_texts, json_strings
from extraction_assets.pipeline import run_pipeline, stages
from extraction_assets.search.embedding import LocalEmbedder
from extraction_assets_tests.builders import (
    Sheet,
    save_openpyxl,
    sst,
    t,
    worksheet,
    xlsx_bytes,
)

OFFICE_2007 = ["000000", "FFFFFF", "1F497D", "EEECE1", "4F81BD", "C0504D", "9BBB59", "8064A2",
               "4BACC6", "F79646", "0000FF", "800080"]


@pytest.fixture(scope="module")
def count_tokens():
    return LocalEmbedder().count_tokens


@dataclass
class Result:
    """The pipeline's tables for one workbook, as lists of dicts."""

    cells: list[dict]
    sheets: list[dict]
    blocks: list[dict]
    columns: list[dict]
    records: list[dict]
    chunks: list[dict]

    def cell(self, ref: str, sheet: str | None = None) -> dict:
        (found,) = [c for c in self.cells if c["ref"] == ref and sheet in (None, c["sheet_name"])]
        return found

    def tables(self) -> list[dict]:
        return [b for b in self.blocks if b["kind"] == "table"]

    def headers(self, block_id: str) -> list[str]:
        return [c["header"] for c in sorted(self.columns, key=lambda c: c["position"])
                if c["block_id"] == block_id]

    def rows(self, block_id: str) -> list[dict]:
        return [json.loads(r["record"]) for r in self.records if r["block_id"] == block_id]


def extract(data: bytes, count_tokens, max_tokens: int = 512, workbook_hash: str = "wb") -> Result:
    """Run parse, normalize, segment and render on ``data`` and return every table."""
    p = stages.parse_stage(workbook_hash, data).tables
    n = stages.normalize_stage(workbook_hash, p["parsed_cells"], p["parsed_sheets"], p["styles"],
                               p["workbook_properties"]).tables
    s = stages.segment_stage(workbook_hash, n["cells"], n["sheets"]).tables
    r = stages.render_stage(workbook_hash, "book.xlsx", n["cells"], n["sheets"], s["blocks"],
                            s["block_columns"], count_tokens, max_tokens).tables
    return Result(n["cells"].to_pylist(), n["sheets"].to_pylist(), s["blocks"].to_pylist(),
                  s["block_columns"].to_pylist(), r["records"].to_pylist(), r["chunks"].to_pylist())


def book(title: str, rows: list[list], start: str = "A1") -> Workbook:
    """An openpyxl workbook with one sheet holding ``rows`` from ``start``."""
    wb = Workbook()
    ws = wb.active
    ws.title = title
    m = re.fullmatch(r"([A-Z]+)(\d+)", start)
    col0 = ws[start].column
    for r, row in enumerate(rows, start=int(m.group(2))):
        for c, value in enumerate(row, start=col0):
            if value is not None:
                ws.cell(r, c, value)
    return wb


def gfm_cells(line: str) -> list[str]:
    """Split a GFM table row on unescaped pipes."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


# -- B01 / B02: merges --------------------------------------------------------------------------
def test_b01_merged_across_columns(tmp_path, count_tokens):
    wb = book("RFQ", [["Item", "Description", None, None, "Qty"],
                      [1, "Steel bracket, galvanized", None, None, 40],
                      [2, "Hex bolt M8", None, None, 200],
                      [3, "Flat washer", None, None, 500]])
    for r in range(1, 5):
        wb.active.merge_cells(f"B{r}:D{r}")
    res = extract(save_openpyxl(wb, tmp_path / "b01.xlsx"), count_tokens)
    (table,) = res.tables()
    assert table["a1_range"] == "A1:E4"
    assert res.headers(table["block_id"]) == ["Item", "Description", "Qty"]
    assert res.rows(table["block_id"]) == [
        {"Item": 1, "Description": "Steel bracket, galvanized", "Qty": 40},
        {"Item": 2, "Description": "Hex bolt M8", "Qty": 200},
        {"Item": 3, "Description": "Flat washer", "Qty": 500},
    ]
    (chunk,) = res.chunks
    lines = chunk["text"].splitlines()
    assert "| Item | Description | Qty |" in lines
    assert "| 1 | Steel bracket, galvanized | 40 |" in lines
    assert chunk["text"].count("Hex bolt M8") == 1


def test_b02_merged_down_rows(tmp_path, count_tokens):
    wb = book("Sales", [["Region", "Product", "Units"], ["North", "Apples", 10], [None, "Pears", 12],
                        [None, "Plums", 7], ["South", "Apples", 5], [None, "Pears", 9]])
    wb.active.merge_cells("A2:A4")
    wb.active.merge_cells("A5:A6")
    res = extract(save_openpyxl(wb, tmp_path / "b02.xlsx"), count_tokens)
    (table,) = res.tables()
    assert table["a1_range"] == "A1:C6"
    records = res.rows(table["block_id"])
    assert [(r["Region"], r["Product"], r["Units"]) for r in records] == [
        ("North", "Apples", 10), ("North", "Pears", 12), ("North", "Plums", 7),
        ("South", "Apples", 5), ("South", "Pears", 9)]
    assert [res.cell(ref)["merged_from"] for ref in ("A2", "A3", "A4", "A5", "A6")] == [
        None, "A2", "A2", None, "A5"]
    assert [res.cell(ref)["merge_range"] for ref in ("A2", "A3", "A4", "A5", "A6")] == [
        "A2:A4", "A2:A4", "A2:A4", "A5:A6", "A5:A6"]
    # a record names the merged range its value was copied from, not only the anchor
    assert [json.loads(r["merged_from"]) for r in res.records] == [
        {}, {"Region": "A2:A4"}, {"Region": "A2:A4"}, {}, {"Region": "A5:A6"}]
    rows = [gfm_cells(line) for line in res.chunks[0]["text"].splitlines()[-5:]]
    assert [row[0] for row in rows] == ["North", "North", "North", "South", "South"]


# -- B04 / B05 / B06: table detection -------------------------------------------------------------
def test_b04_two_row_header(tmp_path, count_tokens):
    wb = book("Quarterly", [["Region", "2023", None, "2024", None], [None, "Q1", "Q2", "Q1", "Q2"],
                            ["North", 10, 11, 12, 13], ["South", 20, 21, 22, 23],
                            ["West", 30, 31, 32, 33]])
    for ref in ("A1:A2", "B1:C1", "D1:E1"):
        wb.active.merge_cells(ref)
    res = extract(save_openpyxl(wb, tmp_path / "b04.xlsx"), count_tokens)
    (table,) = res.tables()
    assert (table["a1_range"], table["header_row_count"]) == ("A1:E5", 2)
    assert res.headers(table["block_id"]) == [
        "Region", "2023 > Q1", "2023 > Q2", "2024 > Q1", "2024 > Q2"]
    assert res.rows(table["block_id"]) == [
        {"Region": "North", "2023 > Q1": 10, "2023 > Q2": 11, "2024 > Q1": 12, "2024 > Q2": 13},
        {"Region": "South", "2023 > Q1": 20, "2023 > Q2": 21, "2024 > Q1": 22, "2024 > Q2": 23},
        {"Region": "West", "2023 > Q1": 30, "2023 > Q2": 31, "2024 > Q1": 32, "2024 > Q2": 33},
    ]


def test_b05_sparse_table_stays_one_table(tmp_path, count_tokens):
    wb = book("Sparse", [["ID", "Name", "Note"], [1, "alpha", None], [2, None, "foo"],
                         [3, None, "bar"], [4, None, None]])
    res = extract(save_openpyxl(wb, tmp_path / "b05.xlsx"), count_tokens)
    assert [b["kind"] for b in res.blocks] == ["table"]
    (table,) = res.tables()
    assert table["a1_range"] == "A1:C5"
    assert [list(r.values()) for r in res.rows(table["block_id"])] == [
        [1, "alpha", None], [2, None, "foo"], [3, None, "bar"], [4, None, None]]
    (chunk,) = res.chunks
    assert chunk["text"].count("foo") == chunk["text"].count("bar") == 1
    assert chunk["text"].splitlines()[-1] == "| 4 |  |  |"
    for junk in ("nan", "NaN", "None", "null", "Unnamed"):
        assert junk not in chunk["text"]


def test_b06_three_tables_on_one_sheet(tmp_path, count_tokens):
    wb = book("Tables", [["Employee", "Dept"], ["Alice", "Finance"], ["Bob", "Sales"], [],
                         ["Dept", "Budget"], ["Finance", 120000], ["Sales", 95000]])
    ws = wb.active
    for r, row in enumerate([["Code", "Meaning"], ["FIN", "Finance department"],
                             ["SAL", "Sales department"]], start=1):
        ws.cell(r, 5, row[0])
        ws.cell(r, 6, row[1])
    ws["B6"].number_format = ws["B7"].number_format = "#,##0"
    res = extract(save_openpyxl(wb, tmp_path / "b06.xlsx"), count_tokens)
    tables = res.tables()
    assert [b["a1_range"] for b in tables] == ["A1:B3", "E1:F3", "A5:B7"]
    assert [res.headers(b["block_id"]) for b in tables] == [
        ["Employee", "Dept"], ["Code", "Meaning"], ["Dept", "Budget"]]
    assert res.rows(tables[1]["block_id"]) == [
        {"Code": "FIN", "Meaning": "Finance department"},
        {"Code": "SAL", "Meaning": "Sales department"}]
    assert res.rows(tables[2]["block_id"]) == [
        {"Dept": "Finance", "Budget": 120000}, {"Dept": "Sales", "Budget": 95000}]
    budget = [json.loads(r["display"])["Budget"] for r in res.records
              if r["block_id"] == tables[2]["block_id"]]
    assert budget == ["120,000", "95,000"]
    assert res.cell("B6")["display_text"] == "120,000"
    assert res.cell("B6")["number_value"] == 120000
    for chunk in res.chunks:  # no row mixes two tables
        for line in chunk["text"].splitlines():
            if line.startswith("|"):
                assert len(gfm_cells(line)) == 2


def test_every_table_converts_to_pandas_with_unique_dictionaries(tmp_path, count_tokens):
    """Two tables on one sheet (and one on another): the in-memory tables' dictionary columns
    hold each sheet name, block id and file name once, so pandas can make categoricals."""
    wb = book("Two", [["Item", "Qty"], ["a", 1], ["b", 2]])
    for r, row in enumerate([["Code", "Name"], ["X", "y"], ["Z", "w"]], start=1):
        wb.active.cell(r, 5, row[0])
        wb.active.cell(r, 6, row[1])
    other = wb.create_sheet("Other")
    for row in (["K", "V"], ["k1", 3]):
        other.append(row)
    embedder = LocalEmbedder()
    tables = run_pipeline(save_openpyxl(wb, tmp_path / "two.xlsx"), filename="two.xlsx",
                                 count_tokens=embedder.count_tokens)
    records = tables["records"]
    names = ["Two"] * 4 + ["Other"]
    assert len(set(records.column("block_id").to_pylist())) == 3
    assert records.column("sheet_name").to_pylist() == names
    assert records.to_pandas()["sheet_name"].tolist() == names
    for name, table in tables.items():
        for column, field in zip(table.columns, table.schema):
            if pa.types.is_dictionary(field.type):
                dictionary = column.combine_chunks().dictionary.to_pylist()
                assert len(dictionary) == len(set(dictionary)), (name, field.name)
        table.to_pandas()


def test_b07_title_row_and_spacer_column(tmp_path, count_tokens):
    wb = book("Sheet", [["PROGRESS"], [], ["Task", None, "Owner", "Status"],
                        ["Design", None, "Ana", "Done"], ["Build", None, "Ben", "In progress"]])
    wb.active["A1"].font = Font(bold=True, size=16)
    res = extract(save_openpyxl(wb, tmp_path / "b07.xlsx"), count_tokens)
    (table,) = res.tables()
    assert table["a1_range"] == "A3:D5"
    assert res.headers(table["block_id"]) == ["Task", "Owner", "Status"]
    assert table["heading_path"] == ["Sheet", "PROGRESS"]


def test_title_above_table_goes_into_heading_path(tmp_path, count_tokens):
    wb = book("Report", [["Headcount by team"], ["Team", "People"], ["Core", 4], ["Ops", 3]])
    res = extract(save_openpyxl(wb, tmp_path / "title.xlsx"), count_tokens)
    (table,) = res.tables()
    assert (table["a1_range"], table["title"]) == ("A2:B4", "Headcount by team")
    assert table["heading_path"] == ["Report", "Headcount by team"]
    (chunk,) = res.chunks  # the title is used by the table, not repeated as text
    assert chunk["text"].startswith("# Report\n\n## Headcount by team\n\n| Team | People |")


# -- B09: header repeated in every chunk ------------------------------------------------------------
def test_b09_split_table_repeats_header_within_budget(tmp_path, count_tokens):
    departments = ["Finance", "Sales", "Engineering", "Support"]
    wb = book("Staff", [["Employee", "Department", "Salary"]]
              + [[f"Employee {i:02d}", departments[i % 4], 50000 + 500 * i] for i in range(1, 61)])
    max_tokens = 120
    res = extract(save_openpyxl(wb, tmp_path / "b09.xlsx"), count_tokens, max_tokens)
    assert len(res.chunks) > 3
    covered = []
    for chunk in res.chunks:
        text = chunk["text"]
        assert text.startswith("# Staff\n\n| Employee | Department | Salary |\n| --- | --- | --- |\n")
        assert chunk["heading_path"] == ["Staff"]
        assert chunk["n_tokens"] == count_tokens(text) <= max_tokens
        body = text.splitlines()[4:]
        assert len(body) == len(chunk["rows"])
        covered.extend(chunk["rows"])
    assert covered == list(range(2, 62))
    first, last = res.chunks[0]["text"].splitlines()[4], res.chunks[-1]["text"].splitlines()[-1]
    assert first == "| Employee 01 | Sales | 50500 |"
    assert last == "| Employee 60 | Finance | 80000 |"


# -- B17 and total rows -----------------------------------------------------------------------------
def test_b17_pipes_escaped_in_markdown_raw_in_records(tmp_path, count_tokens):
    wb = book("Pipes", [["a", "col|withpipe"], ["x|y", 2], ["if (a || b)", "y|n|unknown"]])
    res = extract(save_openpyxl(wb, tmp_path / "b17.xlsx"), count_tokens)
    (table,) = res.tables()
    assert res.rows(table["block_id"]) == [
        {"a": "x|y", "col|withpipe": 2}, {"a": "if (a || b)", "col|withpipe": "y|n|unknown"}]
    lines = res.chunks[0]["text"].splitlines()
    assert lines[-4:] == ["| a | col\\|withpipe |", "| --- | --- |", "| x\\|y | 2 |",
                          "| if (a \\|\\| b) | y\\|n\\|unknown |"]
    assert all(len(gfm_cells(line)) == 2 for line in lines[-4:])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from(
    'a"\\\n\r\t\x00\x1f\x7f\u2028<>&\'日😀 /')) | st.text()), max_size=30))
def test_column_wise_escapes_match_the_standard_library(texts):
    """JSON string literals and HTML text built column-wise are what json.dumps and
    html.escape write for each string; nulls stay null."""
    arr = pa.array(texts, pa.string())
    assert json_strings(arr).to_pylist() == [
        None if t is None else json.dumps(t, ensure_ascii=False) for t in texts]
    assert html_texts(arr).to_pylist() == [None if t is None else html.escape(t) for t in texts]


def test_total_row_role(tmp_path, count_tokens):
    wb = book("Ducks", [["Pond", "Count"], ["A", 120], ["B", 95], ["Total", 215]])
    res = extract(save_openpyxl(wb, tmp_path / "total.xlsx"), count_tokens)
    assert [(r["row"], r["role"]) for r in res.records] == [(2, "data"), (3, "data"), (4, "total")]


def test_b24_phonetic_runs_never_reach_chunks(count_tokens):
    strings = sst(t("都道府県"), t("説明"),
                  '<t>東京都</t><rPh sb="0" eb="3"><t>トウキョウト</t></rPh>',
                  '<r><t>日本語</t></r><rPh sb="0" eb="3"><t>ニホンゴ</t></rPh><r><t>あいうえお</t></r>',
                  '<t>大阪府</t><rPh sb="0" eb="2"><t>オオサカ</t></rPh><rPh sb="2" eb="3"><t>フ</t></rPh>',
                  '<t>漢字</t><rPh sb="0" eb="2"><t>カンジ</t></rPh>')
    rows = "".join(f'<row r="{r}"><c r="A{r}" t="s"><v>{2 * r - 2}</v></c>'
                   f'<c r="B{r}" t="s"><v>{2 * r - 1}</v></c></row>' for r in (1, 2, 3))
    res = extract(xlsx_bytes([Sheet("住所", worksheet(rows))], shared_strings=strings), count_tokens)
    (table,) = res.tables()
    assert res.rows(table["block_id"]) == [{"都道府県": "東京都", "説明": "日本語あいうえお"},
                                           {"都道府県": "大阪府", "説明": "漢字"}]
    text = "\n".join(c["text"] for c in res.chunks)
    assert "| 東京都 | 日本語あいうえお |" in text
    for kana in ("トウキョウト", "ニホンゴ", "オオサカ", "フ", "カンジ"):
        assert kana not in text


def test_b20_uncached_formulas_are_computed_or_kept_and_counted(count_tokens):
    rows = ('<row r="1"><c r="A1" t="inlineStr"><is><t>Question</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Answer</t></is></c></row>'
            '<row r="2"><c r="A2" t="inlineStr"><is><t>What is two plus two?</t></is></c>'
            '<c r="B2" t="str"><f>CONCATENATE("Four"," (4)")</f></c></row>'
            '<row r="3"><c r="A3" t="inlineStr"><is><t>Capital of France?</t></is></c>'
            '<c r="B3" t="inlineStr"><is><t>Paris</t></is></c></row>'
            '<row r="4"><c r="A4" t="inlineStr"><is><t>Total questions</t></is></c>'
            "<c r=\"B4\"><f>COUNTA(A2:A3)</f></c></row>"
            '<row r="5"><c r="A5" t="inlineStr"><is><t>Unknown</t></is></c>'
            "<c r=\"B5\"><f>NOSUCHFUNCTION(A2)</f></c></row>")
    res = extract(xlsx_bytes([Sheet("QA", worksheet(rows))], styles=None), count_tokens)
    assert res.sheets[0]["n_computed_formulas"] == 2
    assert res.sheets[0]["n_uncached_formulas"] == 1
    (table,) = res.tables()
    assert [r["Answer"] for r in res.rows(table["block_id"])] == [
        "Four (4)", "Paris", 2, "=NOSUCHFUNCTION(A2)"]
    assert res.cell("B4")["value_status"] == "computed"
    assert res.cell("B5")["value_status"] == "uncached_formula"


# -- colours (B27) ------------------------------------------------------------------------------------
def near(rgb: str | None, expected: str, tolerance: int = 2) -> bool:
    return rgb is not None and all(
        abs(int(rgb[i:i + 2], 16) - int(expected[i:i + 2], 16)) <= tolerance for i in (0, 2, 4))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("theme:4", "4F81BD"),
        ("theme:1;tint:0.2499", "404040"),
        ("theme:4;tint:0.3999", "95B3D7"),
        ("theme:4;tint:-0.2499", "366092"),
        ("theme:0", "FFFFFF"),  # slots 0-3 are lt1, dk1, lt2, dk2
        ("theme:1", "000000"),
        ("theme:2", "EEECE1"),
        ("theme:3", "1F497D"),
        ("theme:9;tint:0.7999", "FDE9D9"),
        ("indexed:10", "FF0000"),
        ("rgb:FF92D050", "92D050"),
    ],
)
def test_resolve_color(spec, expected):
    assert near(resolve_color(spec, OFFICE_2007, None), expected)


def test_color_edge_cases():
    assert resolve_color(None, OFFICE_2007, None) is None
    assert resolve_color("theme:40", OFFICE_2007, None) is None
    assert DEFAULT_INDEXED_COLORS[10] == "FF0000"
    palette = ["123456"] * 64
    assert resolve_color("indexed:10", OFFICE_2007, palette) == "123456"
    assert apply_tint("4F81BD", 0) == "4F81BD"
    assert apply_tint("000000", 1.0) == "FFFFFF"
    assert apply_tint("FFFFFF", -1.0) == "000000"


def test_b27_theme_colours_resolved_from_a_real_file(tmp_path, count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Colors"
    ws["A1"] = "Quarterly Report"
    ws["A1"].font = Font(bold=True, size=18, color=Color(theme=4))
    specs = {
        "A2": dict(font=Color(theme=1, tint=0.2499)),
        "A3": dict(fill=Color(theme=4, tint=0.3999)),
        "A4": dict(fill=Color(theme=4, tint=-0.2499)),
        "A5": dict(fill=Color(theme=0), font=Color(theme=1)),
        "A6": dict(fill=Color(theme=3), font=Color(theme=0)),
        "A7": dict(fill=Color(theme=9, tint=0.7999)),
        "A8": dict(font=Color(indexed=10)),
        "A9": dict(fill=Color(rgb="FF92D050")),
    }
    for ref, spec in specs.items():
        ws[ref] = ref
        if "font" in spec:
            ws[ref].font = Font(color=spec["font"])
        if "fill" in spec:
            ws[ref].fill = PatternFill("solid", fgColor=spec["fill"])
    res = extract(save_openpyxl(wb, tmp_path / "b27.xlsx"), count_tokens)
    expected = {
        "A1": ("4F81BD", None), "A2": ("404040", None), "A3": (None, "95B3D7"),
        "A4": (None, "366092"), "A5": ("000000", "FFFFFF"), "A6": ("FFFFFF", "1F497D"),
        "A7": (None, "FDE9D9"), "A8": ("FF0000", None), "A9": (None, "92D050"),
    }
    for ref, (font, fill) in expected.items():
        cell = res.cell(ref)
        if font:
            assert near(cell["font_rgb"], font), (ref, cell["font_rgb"], font)
        if fill:
            assert near(cell["fill_rgb"], fill), (ref, cell["fill_rgb"], fill)
    a1 = res.cell("A1")
    assert (a1["bold"], a1["font_size"]) == (True, 18.0)


# -- determinism ----------------------------------------------------------------------------------
def test_chunk_ids_are_deterministic(tmp_path, count_tokens):
    rows = [["Employee", "Dept"], ["Alice", "Finance"], ["Bob", "Sales"], [],
            ["Dept", "Budget"], ["Finance", 120000]]
    first = extract(save_openpyxl(book("Tables", rows), tmp_path / "a.xlsx"), count_tokens,
                    workbook_hash="hash-a")
    again = extract(save_openpyxl(book("Tables", rows), tmp_path / "b.xlsx"), count_tokens,
                    workbook_hash="hash-b")
    ids = [c["chunk_id"] for c in first.chunks]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(re.fullmatch(r"[0-9a-f]{64}", i) for i in ids)
    assert [c["chunk_id"] for c in again.chunks] == ids
    assert [b["block_id"] for b in again.blocks] == [b["block_id"] for b in first.blocks]
    changed = [row[:] for row in rows]
    changed[5][1] = 130000
    other = extract(save_openpyxl(book("Tables", changed), tmp_path / "c.xlsx"), count_tokens)
    other_ids = [c["chunk_id"] for c in other.chunks]
    assert other_ids[0] == ids[0] and other_ids[1] != ids[1]


def test_renderings_wide_rows_and_long_text_respect_the_budget(tmp_path, count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Wide"
    ws.append(["Key"] + [f"Measure {i:02d}" for i in range(1, 41)])
    ws.append(["row-1"] + [f"value number {i} with some words" for i in range(1, 41)])
    ws.append(["row-2"] + [str(i) for i in range(1, 41)])
    ws["A6"] = " ".join(f"Sentence number {i} says something about the table above." for i in range(60))
    p = stages.parse_stage("wb", save_openpyxl(wb, tmp_path / "wide.xlsx")).tables
    n = stages.normalize_stage("wb", p["parsed_cells"], p["parsed_sheets"], p["styles"],
                               p["workbook_properties"]).tables
    s = stages.segment_stage("wb", n["cells"], n["sheets"]).tables
    out = stages.render_stage("wb", "wide.xlsx", n["cells"], n["sheets"], s["blocks"],
                              s["block_columns"], count_tokens, 96).tables
    chunks = out["chunks"].to_pylist()
    assert all(c["n_tokens"] <= 96 and count_tokens(c["text"]) == c["n_tokens"] for c in chunks)
    wide = [c for c in chunks if c["rows"] == [2]]
    assert len(wide) > 1 and [c["continuation"] for c in wide] == [False] + [True] * (len(wide) - 1)
    assert all("| Key |" in c["text"] and "row-1" in c["text"] for c in wide)
    # every element of a1_ranges is one A1 range (a part of two columns names both cells)
    assert all(re.fullmatch(r"[A-Z]+[0-9]+(:[A-Z]+[0-9]+)?", a) for c in chunks for a in c["a1_ranges"])
    text_parts = [c for c in chunks if "Sentence number" in c["text"]]
    assert len(text_parts) > 1 and text_parts[1]["continuation"]
    rendering = {r["kind"]: r for r in out["renderings"].to_pylist()}
    assert rendering["table"]["html"].startswith("<table>\n<thead>\n<tr><th>Key</th>")
    assert "Key: row-2; Measure 01: 1; Measure 02: 2" in rendering["table"]["text"]


def test_row_groups_filled_down_and_repeated_headers_skipped(tmp_path, count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Groups"
    for row in [["Region", "Product", "Units"], ["North", "Apples", 10], [None, "Pears", 12],
                ["South", "Apples", 5], [None, "Pears", 9], ["Region", "Product", "Units"],
                ["West", "Plums", 3], ["Total", None, 39]]:
        ws.append(row)
    result = extract(save_openpyxl(wb, tmp_path / "groups.xlsx"), count_tokens)
    (table,) = result.tables()
    rows = result.rows(table["block_id"])
    assert [(r["Region"], r["Product"]) for r in rows[:5]] == [
        ("North", "Apples"), ("North", "Pears"), ("South", "Apples"), ("South", "Pears"),
        ("West", "Plums")]
    assert len(rows) == 6 and rows[-1]["Region"] == "Total"
    roles = [r["role"] for r in result.records if r["block_id"] == table["block_id"]]
    assert roles == ["data"] * 5 + ["total"]


def test_a_huge_row_key_is_not_repeated_in_every_part(tmp_path, count_tokens):
    wb = Workbook()
    ws = wb.active
    ws.title = "Big"
    key = " ".join(f"word{i}" for i in range(60))  # about a third of a 96-token budget or more
    ws.append(["Key", "A", "B", "C"])
    ws.append([key, "alpha " * 20, "beta " * 20, "gamma " * 20])
    ws.append(["small", "x", "y", "z"])
    res = extract(save_openpyxl(wb, tmp_path / "big.xlsx"), count_tokens, max_tokens=96)
    parts = [c for c in res.chunks if c["rows"] == [2]]
    assert count_tokens(key) > 96 // 4 and len(parts) > 1
    assert [c["continuation"] for c in parts] == [False] + [True] * (len(parts) - 1)
    assert sum(key in c["text"] for c in parts) == 1 and key in parts[0]["text"]
    text = "".join(c["text"] for c in parts)
    assert all(word in text for word in ("alpha", "beta", "gamma"))
