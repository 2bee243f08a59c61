"""Rich-text runs and phonetic text of shared strings (ECMA-376 Part 1 §18.4.4 ``r``,
§18.4.7 ``rPr``, §18.4.6 ``rPh``, §18.4.3 ``phoneticPr``) and the completed ``styles`` table
(borders per side §18.8.4, alignment indent / vertical / rotation §18.8.1)."""

from __future__ import annotations

import json

import openpyxl
import pytest
from openpyxl.styles import Alignment, Border, Font, Side

from extraction_assets.core.limits import Limits
from extraction_assets.core.model import CellStyle
from extraction_assets.core.ooxml.strings import (
    SharedStrings,
    read_rich_strings,
    read_shared_strings,
    runs_without_defaults,
)
from extraction_assets.core.open import open_workbook
from extraction_assets.core.package import PackageReader
from extraction_assets.pipeline import stages
from extraction_assets.pipeline.codecs import cell_markup, marked_strings
from extraction_assets.pipeline.schemas import SCHEMAS
from extraction_assets_tests.builders import (
    NS_MAIN,
    Sheet,
    sst,
    t,
    worksheet,
    xlsx_bytes,
)

#: A stylesheet whose default font (cellXfs 0) is Calibri 11 theme:1, as Excel writes it.
STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="{NS_MAIN}">
<fonts count="1"><font><sz val="11"/><color theme="1"/><name val="Calibri"/><family val="2"/>\
<scheme val="minor"/></font></fonts>
<fills count="1"><fill><patternFill patternType="none"/></fill></fills>
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>
</styleSheet>"""

B25_ITEMS = (
    t("Metric"),
    t("Value"),
    # Excel-like: the plain run has a full rPr equal to the default font; the superscript run
    # repeats size 11 (as B25 does) — neither default property is listed.
    '<r><rPr><sz val="11"/><color theme="1"/><rFont val="Calibri"/><family val="2"/>'
    '<scheme val="minor"/></rPr><t>Number of Hires</t></r>'
    '<r><rPr><b val="1"/><sz val="11"/><vertAlign val="superscript"/></rPr><t>1</t></r>',
    '<r><t xml:space="preserve">Base salary </t></r><r><rPr><b/></rPr><t>(USD)</t></r>'
    '<r><rPr><i val="1"/></rPr><t xml:space="preserve"> median</t></r>',
    '<t>東京都</t><rPh sb="0" eb="3"><t>トウキョウト</t></rPh>'
    '<phoneticPr fontId="0" type="noConversion"/>',
    '<t>大阪府</t><rPh sb="0" eb="2"><t>オオサカ</t></rPh><rPh sb="2" eb="3"><t>フ</t></rPh>'
    '<phoneticPr fontId="0" type="noConversion"/>',
    # phoneticPr alone (no rPh) does not make a string phonetic
    '<t>漢字</t><phoneticPr fontId="0" type="noConversion"/>',
    # every other run property, and an escaped character in a run
    '<r><rPr><u val="double"/><strike/><sz val="14"/><color rgb="ffff0000"/>'
    '<rFont val="Arial"/><vertAlign val="subscript"/></rPr><t>H_x0032_O</t></r>'
    '<r><rPr><b val="0"/><u/><vertAlign val="baseline"/><color theme="4" tint="-0.25"/></rPr>'
    '<t>!</t></r>',
)

ROWS = "".join(
    f'<row r="{i}"><c r="A{i}" t="s"><v>{i - 1}</v></c></row>' for i in range(1, len(B25_ITEMS) + 1)
)


@pytest.fixture(scope="module")
def parsed():
    data = xlsx_bytes([Sheet("Compensation", worksheet(ROWS))], shared_strings=sst(*B25_ITEMS),
                      styles=STYLES)
    return stages.parse_stage("wb1", data).tables


def test_rich_text_rows_exact(parsed):
    table = parsed["rich_text"]
    assert table.schema == SCHEMAS["rich_text"]
    rows = {r["string_index"]: r for r in table.to_pylist()}
    # plain strings (0, 1) and the phoneticPr-only string (6) are not listed
    assert sorted(rows) == [2, 3, 4, 5, 7]
    assert all(r["workbook_hash"] == "wb1" for r in rows.values())
    assert rows[2]["text"] == "Number of Hires1"
    assert rows[2]["runs"] == ('[{"text":"Number of Hires"},'
                               '{"text":"1","bold":true,"vert_align":"superscript"}]')
    assert rows[2]["phonetic"] is None
    assert json.loads(rows[3]["runs"]) == [
        {"text": "Base salary "}, {"text": "(USD)", "bold": True},
        {"text": " median", "italic": True}]
    assert rows[4] == dict(workbook_hash="wb1", string_index=4, text="東京都",
                           runs='[{"text":"東京都"}]', phonetic="トウキョウト")
    assert rows[5]["phonetic"] == "オオサカフ"
    assert json.loads(rows[7]["runs"]) == [
        {"text": "H2O", "underline": "double", "strike": True, "vert_align": "subscript",
         "size": 14.0, "color": "rgb:FFFF0000", "font": "Arial"},
        {"text": "!", "underline": "single", "color": "theme:4;tint:-0.25"}]
    for row in rows.values():
        assert "".join(run["text"] for run in json.loads(row["runs"])) == row["text"]


def test_cell_values_are_plain_text_without_phonetic(parsed):
    cells = parsed["parsed_cells"].to_pylist()
    values = {c["ref"]: c["value"] for c in cells}
    assert values["A3"] == "Number of Hires1"
    assert values["A4"] == "Base salary (USD) median"
    assert values["A5"] == "東京都"
    assert values["A6"] == "大阪府"
    assert values["A8"] == "H2O!"
    text = " ".join(v for v in values.values() if v)
    for reading in ("トウキョウト", "オオサカ", "フ"):
        assert reading not in text
    assert {c["ref"]: c["string_index"] for c in cells}["A5"] == 4


def _reader(data: bytes) -> PackageReader:
    return PackageReader(data, Limits())


def test_read_shared_strings_keeps_list_api():
    data = xlsx_bytes([Sheet("S", worksheet(ROWS))], shared_strings=sst(*B25_ITEMS),
                      styles=STYLES)
    reader = _reader(data)
    try:
        strings = read_shared_strings(reader, "xl/sharedStrings.xml")
        assert isinstance(strings, list) and isinstance(strings, SharedStrings)
        assert strings[:2] == ["Metric", "Value"] and strings[4] == "東京都"
        assert [r.index for r in strings.rich] == [2, 3, 4, 5, 7]
        # raw runs keep every set property; the table drops the default-font ones
        assert strings.rich[0].runs[0] == {"text": "Number of Hires", "size": 11.0,
                                           "color": "theme:1", "font": "Calibri"}
        assert read_rich_strings(reader, None) == [] and read_rich_strings(reader, None).rich == []
    finally:
        reader.close()
    wb = open_workbook(data)
    try:
        assert wb.shared_strings[3] == "Base salary (USD) median"
        assert [r.phonetic for r in wb.rich_strings if r.phonetic] == ["トウキョウト", "オオサカフ"]
        assert wb.shared_strings_array.to_pylist() == list(wb.shared_strings)
    finally:
        wb.close()


def test_runs_without_defaults():
    runs = [{"text": "a", "size": 11.0, "font": "Calibri", "bold": True}, {"text": "b", "size": 9.0}]
    assert runs_without_defaults(runs, {"size": 11.0, "font": "Calibri", "color": None}) == [
        {"text": "a", "bold": True}, {"text": "b", "size": 9.0}]


def test_plain_table_builds_no_rich_entries():
    items = [t(f"s{i}") for i in range(5000)]
    data = xlsx_bytes([Sheet("S", worksheet(""))], shared_strings=sst(*items))
    reader = _reader(data)
    try:
        strings = read_shared_strings(reader, "xl/sharedStrings.xml")
    finally:
        reader.close()
    assert len(strings) == 5000 and strings[4999] == "s4999" and strings.rich == []
    assert stages.parse_stage("h", data).tables["rich_text"].num_rows == 0


def test_rich_text_without_shared_strings():
    data = xlsx_bytes([Sheet("S", worksheet('<row r="1"><c r="A1"><v>1</v></c></row>'))])
    table = stages.parse_stage("h", data).tables["rich_text"]
    assert table.num_rows == 0 and table.schema == SCHEMAS["rich_text"]


# -- styles -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def styled(tmp_path_factory):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "bordered"
    ws["A1"].border = Border(left=Side(style="thin"), right=Side(style="medium"),
                             top=Side(style=None), bottom=Side(style="dashed"))
    ws["A2"] = "aligned"
    ws["A2"].alignment = Alignment(indent=2, vertical="top", textRotation=90,
                                   horizontal="left", wrap_text=True)
    ws["A3"] = "plain"
    ws["A4"] = "font"
    ws["A4"].font = Font(name="Arial", size=9, bold=True)
    path = tmp_path_factory.mktemp("styles") / "styles.xlsx"
    wb.save(path)
    tables = stages.parse_stage("st", path.read_bytes()).tables
    cells = {c["ref"]: c["style_index"] for c in tables["parsed_cells"].to_pylist()}
    styles = {s["style_index"]: s for s in tables["styles"].to_pylist()}
    return tables, {ref: styles[i] for ref, i in cells.items()}


def test_styles_borders_and_alignment(styled):
    tables, by_ref = styled
    assert tables["styles"].schema == SCHEMAS["styles"]
    a1 = by_ref["A1"]
    assert (a1["border_left"], a1["border_right"], a1["border_top"], a1["border_bottom"]) == (
        "thin", "medium", None, "dashed")
    assert a1["has_border"] is True
    a2 = by_ref["A2"]
    assert (a2["indent"], a2["vertical"], a2["text_rotation"]) == (2, "top", 90)
    assert (a2["horizontal"], a2["wrap_text"]) == ("left", True)
    assert a2["has_border"] is False and a2["border_left"] is None
    a3 = by_ref["A3"]
    assert (a3["indent"], a3["vertical"], a3["text_rotation"], a3["has_border"]) == (
        0, None, None, False)
    a4 = by_ref["A4"]
    assert (a4["font_name"], a4["font_size"], a4["bold"]) == ("Arial", 9.0, True)


def test_every_cellstyle_field_is_a_styles_column(styled):
    tables, _ = styled
    names = set(SCHEMAS["styles"].names) - {"workbook_hash", "style_index"}
    assert names == set(vars(CellStyle()))
    # normalize_stage rebuilds CellStyle from the rows: it must accept the new columns
    for row in tables["styles"].to_pylist():
        CellStyle(**{k: v for k, v in row.items() if k not in ("workbook_hash", "style_index")})
    out = stages.normalize_stage("st", tables["parsed_cells"], tables["parsed_sheets"],
                                 tables["styles"], tables["workbook_properties"]).tables
    assert {c["ref"]: c["has_border"] for c in out["cells"].to_pylist()}["A1"] is True


def test_none_side_style_is_no_border():
    styles = STYLES.replace(
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>',
        '<borders count="2"><border><left/><right/><top/><bottom/><diagonal/></border>'
        '<border><start style="hair"/><end style="none"/><left style="none"/>'
        '<top style="double"/></border></borders>').replace(
        '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>',
        '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
        '<xf numFmtId="0" fontId="0" fillId="0" borderId="1" xfId="0" applyBorder="1">'
        '<alignment textRotation="255" indent="x"/></xf>'
        '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>')
    data = xlsx_bytes([Sheet("S", worksheet(""))], styles=styles)
    wb = open_workbook(data)
    try:
        style = wb.styles[1]
    finally:
        wb.close()
    assert (style.border_left, style.border_right, style.border_top, style.border_bottom) == (
        "hair", None, "double", None)
    assert style.has_border and style.text_rotation == 255 and style.indent == 0
    assert not wb.styles[2].has_border



def test_superscripts_render_as_sup_in_markdown_html_and_chunks():
    from extraction_assets.search.embedding import LocalEmbedder

    strings = [t("Metric"), t("Value"), B25_ITEMS[2], B25_ITEMS[3],
               '<r><rPr><vertAlign val="superscript"/></rPr><t>1</t></r>'
               '<r><t xml:space="preserve"> Includes interns.</t></r>']
    rows = ('<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
            '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>42</v></c></row>'
            '<row r="3"><c r="A3" t="s"><v>3</v></c><c r="B3"><v>98000</v></c></row>'
            '<row r="5"><c r="A5" t="s"><v>4</v></c></row>')
    data = xlsx_bytes([Sheet("Compensation", worksheet(rows))], shared_strings=sst(*strings),
                      styles=STYLES)
    p = stages.parse_stage("wb", data).tables
    n = stages.normalize_stage("wb", p["parsed_cells"], p["parsed_sheets"], p["styles"],
                               p["workbook_properties"]).tables
    s = stages.segment_stage("wb", n["cells"], n["sheets"]).tables
    markup = cell_markup(p["parsed_cells"], marked_strings(p["rich_text"]))
    assert markup == {("Compensation", "A2"): "Number of Hires<sup>1</sup>",
                      ("Compensation", "A5"): "<sup>1</sup> Includes interns."}
    out = stages.render_stage("wb", "b25.xlsx", n["cells"], n["sheets"], s["blocks"],
                              s["block_columns"], LocalEmbedder().count_tokens, 512,
                              markup=markup).tables
    text = "\n".join(c["text"] for c in out["chunks"].to_pylist())
    assert "| Number of Hires<sup>1</sup> | 42 |" in text
    assert "<sup>1</sup> Includes interns." in text
    table = next(r for r in out["renderings"].to_pylist() if r["kind"] == "table")
    assert "<td>Number of Hires<sup>1</sup></td>" in table["html"]
    records = [json.loads(r["record"]) for r in out["records"].to_pylist()]
    assert records[0] == {"Metric": "Number of Hires1", "Value": 42}
