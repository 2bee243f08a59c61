"""Tests of :mod:`extraction_assets.core.ooxml.objects`: comments, hyperlinks, validations, conditional
formats, tables, charts, pictures, defined names and external links.

Fixtures are built here: openpyxl in write mode, then raw OOXML parts added or patched with
:mod:`zipfile` for what openpyxl cannot write (threaded comments, persons, external links, a
picture without Pillow, malformed or hostile parts). The shared corpus and cases are read in
place when present.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import struct
import urllib.request
import zipfile
import zlib
from pathlib import Path

import pytest
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.hyperlink import Hyperlink
from openpyxl.worksheet.table import Table, TableColumn

from extraction_assets.core.errors import ExtractionError
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects import (
    read_chartsheet_objects,
    read_sheet_objects,
    read_workbook_objects,
)
from extraction_assets.core.ooxml.objects.drawings import _image_header
from extraction_assets.core.ooxml.rels import parse_part as _parse
from extraction_assets.core.open import open_workbook
from extraction_assets.core.package import PackageReader

NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
NS_XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
NS_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
NS_C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
NS_TC = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
REL_MS = "http://schemas.microsoft.com/office/2017/10/relationships"


# --------------------------------------------------------------------------- builders



def package_objects(data: bytes):
    """Every object of a workbook through the real reader: workbook-level, then per sheet."""
    wb = open_workbook(data)
    try:
        objs = list(wb.objects)
        for sheet in wb.iter_sheets():
            objs += sheet.objects
        return objs, [i for i in wb.issues if i.stage == "parsed_sheets"]
    finally:
        wb.close()

def png_bytes(width: int, height: int) -> bytes:
    """A valid RGB PNG written by hand (no Pillow needed)."""
    raw = b"".join(b"\x00" + b"\x20\x40\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def zip_bytes(parts: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in parts.items():
            zf.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
    return buf.getvalue()


def patch_zip(data: bytes, add: dict[str, str | bytes] = None, edit: dict = None) -> bytes:
    """Copy a package, replacing parts through ``edit[name](text)`` and adding ``add`` parts."""
    add, edit = add or {}, edit or {}
    parts: dict[str, str | bytes] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for name in zf.namelist():
            content = zf.read(name)
            if name in edit:
                content = edit[name](content.decode("utf-8"))
            parts[name] = content
    parts.update(add)
    return zip_bytes(parts)


def add_rel(xml: str, rid: str, rtype: str, target: str, external: bool = False) -> str:
    mode = ' TargetMode="External"' if external else ""
    return xml.replace("</Relationships>", f'<Relationship Id="{rid}" Type="{rtype}" '
                       f'Target="{target}"{mode}/></Relationships>')


def rels_xml(*rels: tuple[str, str, str] | tuple[str, str, str, bool]) -> str:
    body = "".join(
        f'<Relationship Id="{r[0]}" Type="{r[1]}" Target="{r[2]}"'
        + (' TargetMode="External"' if len(r) > 3 and r[3] else "") + "/>" for r in rels)
    return f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{NS_PKG}">{body}</Relationships>'


def package(sheet_xml: str, *, sheet_rels: str | None = None, extra: dict | None = None,
            sheet_name: str = "Dashboard", strings: list[str] = (), workbook_extra: str = "",
            workbook_rels: list[tuple] = ()) -> bytes:
    """A one-sheet package written part by part."""
    sst = "".join(f"<si><t>{s}</t></si>" for s in strings)
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
            'package/2006/content-types"><Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
            'ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/>'
            '</Types>'),
        "_rels/.rels": rels_xml(("rId1", f"{REL}/officeDocument", "xl/workbook.xml")),
        "xl/workbook.xml": (
            f'<workbook xmlns="{NS_MAIN}" xmlns:r="{NS_R}"><sheets><sheet name="{sheet_name}" '
            f'sheetId="1" r:id="rId1"/></sheets>{workbook_extra}</workbook>'),
        "xl/_rels/workbook.xml.rels": rels_xml(
            ("rId1", f"{REL}/worksheet", "worksheets/sheet1.xml"),
            ("rId2", f"{REL}/sharedStrings", "sharedStrings.xml"), *workbook_rels),
        "xl/sharedStrings.xml": f'<sst xmlns="{NS_MAIN}">{sst}</sst>',
        "xl/worksheets/sheet1.xml": sheet_xml,
    }
    if sheet_rels is not None:
        parts["xl/worksheets/_rels/sheet1.xml.rels"] = sheet_rels
    parts.update(extra or {})
    return zip_bytes(parts)


LOGO = png_bytes(20, 10)

B28_SHEET = (
    f'<worksheet xmlns="{NS_MAIN}" xmlns:r="{NS_R}"><sheetData>'
    '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
    '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>10</v></c></row>'
    '<row r="3"><c r="A3" t="s"><v>3</v></c><c r="B3"><v>12</v></c></row>'
    '<row r="4"><c r="A4" t="s"><v>4</v></c><c r="B4"><v>9</v></c></row>'
    '</sheetData><drawing r:id="rId1"/></worksheet>')

B28_DRAWING = (
    f'<xdr:wsDr xmlns:xdr="{NS_XDR}" xmlns:a="{NS_A}" xmlns:c="{NS_C}" xmlns:r="{NS_R}">'
    '<xdr:oneCellAnchor><xdr:from><xdr:col>4</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>7</xdr:row>'
    '<xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:ext cx="5400000" cy="2700000"/><xdr:graphicFrame>'
    '<xdr:nvGraphicFramePr><xdr:cNvPr id="1" name="Chart 1"/><xdr:cNvGraphicFramePr/>'
    '</xdr:nvGraphicFramePr><xdr:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats'
    '.org/drawingml/2006/chart"><c:chart r:id="rId1"/></a:graphicData></a:graphic></xdr:graphicFrame>'
    '<xdr:clientData/></xdr:oneCellAnchor>'
    '<xdr:oneCellAnchor><xdr:from><xdr:col>4</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>1</xdr:row>'
    '<xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:ext cx="190500" cy="95250"/><xdr:pic><xdr:nvPicPr>'
    '<xdr:cNvPr id="2" name="Logo" descr="Company logo"/><xdr:cNvPicPr/></xdr:nvPicPr><xdr:blipFill>'
    '<a:blip r:embed="rId2"/><a:stretch><a:fillRect/></a:stretch></xdr:blipFill><xdr:spPr>'
    '<a:prstGeom prst="rect"/></xdr:spPr></xdr:pic><xdr:clientData/></xdr:oneCellAnchor></xdr:wsDr>')

B28_CHART = (
    f'<c:chartSpace xmlns:c="{NS_C}" xmlns:a="{NS_A}"><c:chart><c:title><c:tx><c:rich><a:bodyPr/>'
    '<a:p><a:r><a:t>Sales by </a:t></a:r><a:r><a:t>month</a:t></a:r></a:p></c:rich></c:tx></c:title>'
    '<c:plotArea><c:barChart><c:barDir val="col"/><c:ser><c:idx val="0"/><c:order val="0"/>'
    "<c:tx><c:strRef><c:f>'Dashboard'!B1</c:f></c:strRef></c:tx>"
    "<c:cat><c:numRef><c:f>'Dashboard'!$A$2:$A$4</c:f></c:numRef></c:cat>"
    "<c:val><c:numRef><c:f>'Dashboard'!$B$2:$B$4</c:f></c:numRef></c:val></c:ser>"
    '<c:axId val="10"/><c:axId val="100"/></c:barChart></c:plotArea></c:chart></c:chartSpace>')


def b28_like() -> bytes:
    """The B28 case (picture at E2, bar chart at E8 whose series has no cache) built by hand."""
    return package(
        B28_SHEET, strings=["Month", "Sales", "Jan", "Feb", "Mar"],
        sheet_rels=rels_xml(("rId1", f"{REL}/drawing", "../drawings/drawing1.xml")),
        extra={
            "xl/drawings/drawing1.xml": B28_DRAWING,
            "xl/drawings/_rels/drawing1.xml.rels": rels_xml(
                ("rId1", f"{REL}/chart", "/xl/charts/chart1.xml"),
                ("rId2", f"{REL}/image", "../media/image1.png")),
            "xl/charts/chart1.xml": B28_CHART,
            "xl/media/image1.png": LOGO,
        })


def reader_for(data: bytes) -> PackageReader:
    return PackageReader(data, Limits())


def sheet_objects(data: bytes, part: str = "xl/worksheets/sheet1.xml", name: str = "Dashboard",
                  **kw) -> tuple[list[SheetObject], list]:
    issues: list = []
    with reader_for(data) as reader:
        root = _parse(reader, part)
        objs = read_sheet_objects(reader, part, name, root, kw.pop("strings", None),
                                  issues=issues, **kw)
    json.dumps([o.to_dict() for o in objs])
    return objs, issues


def of_kind(objs, kind):
    return [o for o in objs if o.kind == kind]


# --------------------------------------------------------------------------- B28: chart + picture


def _check_b28(objs):
    chart, = of_kind(objs, "chart")
    assert chart.ref == "E8" and chart.sheet_name == "Dashboard"
    assert chart.name == "Sales by month"
    assert chart.details["chart_types"] == ["bar"]
    assert chart.details["title"] == "Sales by month"
    series, = chart.details["series"]
    assert series["name"] == "Sales"
    assert series["categories"] == ["Jan", "Feb", "Mar"]
    assert series["values"] == [10, 12, 9]
    assert series["source"] == "cells"
    assert series["values_ref"] == "'Dashboard'!$B$2:$B$4"
    for fragment in ("Sales by month", "Jan = 10", "Feb = 12", "Mar = 9"):
        assert fragment in chart.text
    pic, = of_kind(objs, "picture")
    assert pic.ref == "E2" and pic.name == "Logo" and pic.text == "Company logo"
    d = pic.details
    assert d["alt_text"] == "Company logo"
    assert (d["width_px"], d["height_px"]) == (20, 10)
    assert d["content_type"] == "image/png" and d["extension"] == "png"
    assert d["display_size_emu"] == [190500, 95250]
    return pic


def test_b28_chart_resolved_from_package_cells_and_picture():
    objs, issues = sheet_objects(b28_like())
    pic = _check_b28(objs)
    assert pic.details["sha256"] == hashlib.sha256(LOGO).hexdigest()
    assert pic.details["size_bytes"] == len(LOGO)
    assert issues == []


def test_b28_chart_resolved_through_cell_value_callback():
    cells = {("Dashboard", "A2"): "Jan", ("Dashboard", "A3"): "Feb", ("Dashboard", "A4"): "Mar",
             ("Dashboard", "B1"): "Sales", ("Dashboard", "B2"): 10, ("Dashboard", "B3"): 12,
             ("Dashboard", "B4"): 9}
    calls = []

    def cell_value(sheet, ref):
        calls.append((sheet, ref))
        return cells.get((sheet, ref))

    objs, _ = sheet_objects(b28_like(), cell_value=cell_value)
    _check_b28(objs)
    assert ("Dashboard", "B3") in calls


def test_b28_case_file(cases_dir):
    path = cases_dir / "B28_image_and_chart.xlsx"
    if not path.exists():
        pytest.skip("B28 case not present")
    data = path.read_bytes()
    objs, issues = package_objects(data)
    pic = _check_b28(objs)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert pic.details["sha256"] == hashlib.sha256(zf.read("xl/media/image1.png")).hexdigest()
    assert issues == []


def test_chart_cache_wins_and_quoted_sheet_names():
    chart = (
        f'<c:chartSpace xmlns:c="{NS_C}" xmlns:a="{NS_A}"><c:chart><c:title><c:tx><c:strRef>'
        "<c:f>'It''s data'!$A$1</c:f><c:strCache><c:ptCount val=\"1\"/><c:pt idx=\"0\"><c:v>Cached "
        "title</c:v></c:pt></c:strCache></c:strRef></c:tx></c:title><c:plotArea><c:lineChart>"
        "<c:ser><c:idx val=\"0\"/><c:order val=\"0\"/><c:tx><c:v>Literal name</c:v></c:tx>"
        "<c:cat><c:strRef><c:f>'It''s data'!$A$2:$A$4</c:f><c:strCache><c:ptCount val=\"3\"/>"
        '<c:pt idx="0"><c:v>Q1</c:v></c:pt><c:pt idx="2"><c:v>Q3</c:v></c:pt></c:strCache>'
        "</c:strRef></c:cat><c:val><c:numRef><c:f>'It''s data'!$B$2:$B$4</c:f><c:numCache>"
        '<c:formatCode>General</c:formatCode><c:ptCount val="3"/><c:pt idx="0"><c:v>1.5</c:v>'
        '</c:pt><c:pt idx="1"><c:v>2</c:v></c:pt><c:pt idx="2"><c:v>3</c:v></c:pt></c:numCache>'
        "</c:numRef></c:val></c:ser></c:lineChart><c:pie3DChart/><c:valAx><c:title><c:tx><c:rich>"
        "<a:p><a:r><a:t>Units</a:t></a:r></a:p></c:rich></c:tx></c:title></c:valAx></c:plotArea>"
        "</c:chart></c:chartSpace>")
    data = package(
        B28_SHEET, sheet_rels=rels_xml(("rId1", f"{REL}/drawing", "../drawings/drawing1.xml")),
        extra={"xl/drawings/drawing1.xml": B28_DRAWING.split("<xdr:oneCellAnchor><xdr:from><xdr:col>4"
                                                              "</xdr:col><xdr:colOff>0</xdr:colOff>"
                                                              "<xdr:row>1")[0] + "</xdr:wsDr>",
               "xl/drawings/_rels/drawing1.xml.rels": rels_xml(
                   ("rId1", f"{REL}/chart", "../charts/chart1.xml")),
               "xl/charts/chart1.xml": chart})

    def never(sheet, ref):  # the caches are complete: the resolver must not be needed
        raise AssertionError("resolver called")

    objs, issues = sheet_objects(data, cell_value=never)
    chart_obj, = objs
    assert chart_obj.details["title"] == "Cached title"
    assert chart_obj.details["chart_types"] == ["line", "pie"]
    assert chart_obj.details["axis_titles"] == ["Units"]
    s, = chart_obj.details["series"]
    assert s["name"] == "Literal name" and s["source"] == "cache"
    assert s["categories"] == ["Q1", None, "Q3"] and s["values"] == [1.5, 2.0, 3.0]
    assert "Q1 = 1.5" in chart_obj.text and "Q3 = 3" in chart_obj.text
    assert issues == []


# --------------------------------------------------------------------------- openpyxl workbook


def openpyxl_workbook() -> bytes:
    wb = Workbook()
    ws = wb.active
    ws.title = "Dashboard"
    for row in [("Month", "Sales"), ("Jan", 10), ("Feb", 12), ("Mar", 9), ("Total", 31)]:
        ws.append(row)
    ws["A1"].comment = Comment("Check the months", "Alice")
    ws["B2"].comment = Comment("[Threaded comment] placeholder", "tc={T1}")
    ws["D1"] = "Docs"
    ws["D1"].hyperlink = "https://example.com/docs"
    ws["D2"] = "Go"
    ws["D2"].hyperlink = Hyperlink(ref="D2", location="Other!A1", tooltip="Jump")
    ws["D3"] = "Fragment"
    ws["D3"].hyperlink = "#Other!B2"
    dv = DataValidation(type="whole", operator="between", formula1="1", formula2="100",
                        allow_blank=True, prompt="Enter 1-100", promptTitle="Quantity",
                        error="Out of range", showInputMessage=True, showErrorMessage=True)
    ws.add_data_validation(dv)
    dv.add("C2:C10")
    dv.add("E5")
    lst = DataValidation(type="list", formula1='"Yes,No"')
    ws.add_data_validation(lst)
    lst.add("F2:F4")
    ws.conditional_formatting.add("B2:B4", CellIsRule(operator="greaterThan", formula=["10"]))
    ws.conditional_formatting.add("A2:A4 C2:C4", FormulaRule(formula=["ISBLANK(A2)"],
                                                              stopIfTrue=True))
    table = Table(displayName="SalesTable", ref="A1:B5", totalsRowCount=1)
    table.tableColumns = [TableColumn(id=1, name="Month", totalsRowLabel="Total"),
                          TableColumn(id=2, name="Sales", totalsRowFunction="sum")]
    ws.add_table(table)
    chart = BarChart()
    chart.title = "Sales by month"
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
    ws.add_chart(chart, "E8")
    other = wb.create_sheet("Other")
    other["A1"] = "target"
    wb.defined_names["SalesRange"] = DefinedName("SalesRange", attr_text="Dashboard!$B$2:$B$4")
    other.defined_names["LocalCell"] = DefinedName("LocalCell", attr_text="Other!$A$1")
    wb.defined_names["Hidden1"] = DefinedName("Hidden1", attr_text="42", hidden=True)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


THREADED = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><ThreadedComments xmlns="{NS_TC}">'
    '<threadedComment ref="B2" dT="2024-03-01T09:00:00.00" personId="{P1}" id="{T1}">'
    "<text>Is January right?</text></threadedComment>"
    '<threadedComment ref="C3" dT="2024-03-01T09:30:00.00" personId="{P2}" id="{T2}" done="1">'
    "<text>Other thread</text></threadedComment>"
    '<threadedComment ref="B2" dT="2024-03-01T10:00:00.00" personId="{P2}" id="{R1}" '
    'parentId="{T1}"><text>Yes, checked.</text></threadedComment>'
    '<threadedComment ref="B2" dT="2024-03-02T08:00:00.00" personId="{P1}" id="{R2}" '
    'parentId="{T1}"><text>Thanks!</text></threadedComment></ThreadedComments>')

PERSONS = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><personList xmlns="{NS_TC}">'
    '<person displayName="Jane Smith" id="{P1}" userId="jane" providerId="None"/>'
    '<person displayName="Marcus Sterling" id="{P2}" userId="marcus" providerId="None"/>'
    "</personList>")

EXTERNAL_LINK = (
    f'<?xml version="1.0" encoding="UTF-8"?><externalLink xmlns="{NS_MAIN}" xmlns:r="{NS_R}">'
    '<externalBook r:id="rId1"><sheetNames><sheetName val="Budget"/><sheetName val="Notes"/>'
    "</sheetNames></externalBook></externalLink>")

EXTERNAL_URL = "https://example.invalid/secret/budget.xlsx"


def enriched_workbook() -> bytes:
    """The openpyxl workbook plus threaded comments, persons and an external link."""
    return patch_zip(openpyxl_workbook(), add={
        "xl/threadedComments/threadedComment1.xml": THREADED,
        "xl/persons/person.xml": PERSONS,
        "xl/externalLinks/externalLink1.xml": EXTERNAL_LINK,
        "xl/externalLinks/_rels/externalLink1.xml.rels": rels_xml(
            ("rId1", f"{REL}/externalLinkPath", EXTERNAL_URL, True)),
    }, edit={
        "xl/worksheets/_rels/sheet1.xml.rels": lambda x: add_rel(
            x, "rIdTc", f"{REL_MS}/threadedComment", "/xl/threadedComments/threadedComment1.xml"),
        "xl/_rels/workbook.xml.rels": lambda x: add_rel(add_rel(
            x, "rIdP", f"{REL_MS}/person", "persons/person.xml"),
            "rIdExt", f"{REL}/externalLink", "externalLinks/externalLink1.xml"),
        "xl/workbook.xml": lambda x: x.replace(
            "</sheets>", f'</sheets><externalReferences><externalReference xmlns:r="{NS_R}" '
            'r:id="rIdExt"/></externalReferences>'),
    })


@pytest.fixture(scope="module")
def enriched():
    data = enriched_workbook()
    objs, issues = package_objects(data)
    json.dumps([o.to_dict() for o in objs])
    return objs, issues


def test_comments_legacy_and_threaded(enriched):
    objs, issues = enriched
    comments = of_kind(objs, "comment")
    assert [c.ref for c in comments] == ["A1", "B2", "C3"]  # one per cell, threaded preferred
    legacy, thread, other = comments
    assert legacy.details["author"] == "Alice" and legacy.text == "Check the months"
    assert legacy.details["threaded"] is False and legacy.details["replies"] == []
    assert thread.details["threaded"] is True
    assert thread.details["author"] == "Jane Smith"
    assert thread.details["created"] == "2024-03-01T09:00:00.00"
    assert thread.details["replies"] == [
        {"author": "Marcus Sterling", "created": "2024-03-01T10:00:00.00", "text": "Yes, checked."},
        {"author": "Jane Smith", "created": "2024-03-02T08:00:00.00", "text": "Thanks!"},
    ]
    assert thread.text.splitlines() == [
        "Is January right?", "Reply by Marcus Sterling: Yes, checked.", "Reply by Jane Smith: Thanks!"]
    assert thread.details["resolved"] is False and other.details["resolved"] is True
    assert other.text == "Other thread" and other.details["replies"] == []
    assert not [i for i in issues if i.sheet_name == "Dashboard"]


def test_hyperlinks(enriched):
    objs, _ = enriched
    links = {o.ref: o for o in of_kind(objs, "hyperlink")}
    assert links["D1"].details["target"] == "https://example.com/docs"
    assert links["D1"].details["location"] is None
    assert links["D1"].text == "https://example.com/docs"
    assert links["D2"].details["target"] is None
    assert links["D2"].details["location"] == "Other!A1"
    assert links["D2"].details["tooltip"] == "Jump"
    assert links["D3"].details["location"] == "Other!B2"


def test_data_validations(enriched):
    objs, _ = enriched
    dvs = {o.ref: o for o in of_kind(objs, "data_validation")}
    whole = dvs["C2:C10 E5"].details
    assert whole["type"] == "whole" and whole["operator"] == "between"
    assert (whole["formula1"], whole["formula2"]) == ("1", "100")
    assert whole["allow_blank"] is True and whole["prompt"] == "Enter 1-100"
    assert whole["prompt_title"] == "Quantity" and whole["error"] == "Out of range"
    assert whole["source"] == "main"
    lst = dvs["F2:F4"].details
    assert lst["type"] == "list" and lst["formula1"] == '"Yes,No"'


def test_conditional_formats(enriched):
    objs, _ = enriched
    cfs = {o.ref: o for o in of_kind(objs, "conditional_format")}
    rule, = cfs["B2:B4"].details["rules"]
    assert rule["type"] == "cellIs" and rule["operator"] == "greaterThan"
    assert rule["formulas"] == ["10"] and rule["priority"] == 1
    rule2, = cfs["A2:A4 C2:C4"].details["rules"]
    assert rule2["type"] == "expression" and rule2["formulas"] == ["ISBLANK(A2)"]
    assert rule2["stop_if_true"] is True


def test_table(enriched):
    objs, _ = enriched
    table, = of_kind(objs, "table")
    assert table.name == "SalesTable" and table.ref == "A1:B5"
    d = table.details
    assert d["columns"] == ["Month", "Sales"]
    assert d["header_row_count"] == 1 and d["totals_row_count"] == 1
    assert d["column_details"][1]["totals_row_function"] == "sum"
    assert d["column_details"][0]["totals_row_label"] == "Total"
    assert "Month | Sales" in table.text


def test_openpyxl_chart_without_cache(enriched):
    objs, _ = enriched
    chart, = of_kind(objs, "chart")
    assert chart.ref == "E8" and chart.details["chart_types"] == ["bar"]
    assert chart.details["title"] == "Sales by month"
    s, = chart.details["series"]
    assert (s["name"], s["categories"], s["values"]) == ("Sales", ["Jan", "Feb", "Mar"], [10, 12, 9])


def test_defined_names(enriched):
    objs, _ = enriched
    names = {o.name: o for o in of_kind(objs, "defined_name")}
    sales = names["SalesRange"]
    assert sales.sheet_name is None and sales.text == "Dashboard!$B$2:$B$4"
    assert (sales.details["target_sheet"], sales.details["target_ref"]) == ("Dashboard", "B2:B4")
    local = names["LocalCell"]
    assert local.sheet_name == "Other" and local.details["local_sheet_id"] == 1
    assert names["Hidden1"].details["hidden"] is True
    assert names["Hidden1"].details["target_ref"] is None


def test_external_link_recorded_never_opened(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    data = enriched_workbook()
    issues: list = []
    with reader_for(data) as reader:
        root = _parse(reader, "xl/workbook.xml")
        objs = read_workbook_objects(reader, "xl/workbook.xml", root, issues=issues)
    link, = of_kind(objs, "external_link")
    assert link.sheet_name is None
    assert link.details["target"] == EXTERNAL_URL and link.name == EXTERNAL_URL
    assert link.details["index"] == 1 and link.details["link_type"] == "externalBook"
    assert link.details["sheet_names"] == ["Budget", "Notes"]
    assert issues == []


# --------------------------------------------------------------------------- robustness


def test_broken_parts_become_issues():
    sheet = (
        f'<worksheet xmlns="{NS_MAIN}" xmlns:r="{NS_R}"><sheetData/>'
        '<dataValidations count="1"><dataValidation type="list" sqref="A1"><formula1>"a,b"'
        "</formula1></dataValidation></dataValidations>"
        '<hyperlinks><hyperlink ref="B1" r:id="rIdMissing"/><hyperlink ref="B2" r:id="rIdUrl" '
        'tooltip="tip" display="Site"/></hyperlinks>'
        '<drawing r:id="rIdDrawing"/><tableParts count="2"><tablePart r:id="rIdTable"/>'
        '<tablePart r:id="rIdNope"/></tableParts></worksheet>')
    drawing = B28_DRAWING.replace('r:embed="rId2"', 'r:embed="rId9"')
    data = package(sheet, sheet_rels=rels_xml(
        ("rIdUrl", f"{REL}/hyperlink", "http://example.invalid/x", True),
        ("rIdDrawing", f"{REL}/drawing", "../drawings/drawing1.xml"),
        ("rIdTable", f"{REL}/table", "../tables/table1.xml"),
        ("rIdC", f"{REL}/comments", "../comments1.xml")),
        extra={
            "xl/drawings/drawing1.xml": drawing,
            "xl/drawings/_rels/drawing1.xml.rels": rels_xml(
                ("rId1", f"{REL}/chart", "../charts/chart1.xml")),
            "xl/charts/chart1.xml": "<c:chartSpace xmlns:c='x'><c:chart>",  # malformed
            "xl/comments1.xml": ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>'
                                 f'<comments xmlns="{NS_MAIN}"/>'),
        })
    objs, issues = sheet_objects(data)
    codes = sorted(i.code for i in issues)
    assert "hostile_content" in codes  # the comments part with a DTD
    assert "malformed_part" in codes  # the chart
    assert codes.count("bad_relationship") >= 3  # hyperlink, tablePart, picture
    assert "missing_part" in codes  # table1.xml
    assert all(i.stage == "parsed_sheets" and i.sheet_name == "Dashboard" for i in issues)
    # what could be read still is
    assert [o.ref for o in of_kind(objs, "data_validation")] == ["A1"]
    links = {o.ref: o for o in of_kind(objs, "hyperlink")}
    assert links["B2"].details == {"target": "http://example.invalid/x", "location": None,
                                   "display": "Site", "tooltip": "tip"}
    assert links["B1"].details["target"] is None
    pic, = of_kind(objs, "picture")
    assert pic.ref == "E2" and pic.details["sha256"] is None


def test_x14_extensions_and_worksheet_none():
    sheet = (
        f'<worksheet xmlns="{NS_MAIN}" xmlns:r="{NS_R}" xmlns:x14="http://schemas.microsoft.com/'
        'office/spreadsheetml/2009/9/main" xmlns:xm="http://schemas.microsoft.com/office/excel/'
        '2006/main"><sheetData/><extLst><ext uri="{78C0D931-6437-407d-A8EE-F0AAD7539E65}">'
        '<x14:conditionalFormattings><x14:conditionalFormatting><x14:cfRule type="dataBar" '
        'priority="3" id="{X}"><x14:dataBar><x14:cfvo type="autoMin"/><x14:cfvo type="num">'
        "<xm:f>100</xm:f></x14:cfvo></x14:dataBar></x14:cfRule><xm:sqref>D1:D9</xm:sqref>"
        "</x14:conditionalFormatting></x14:conditionalFormattings></ext>"
        '<ext uri="{CCE6A557-97BC-4b89-ADB6-D9C93CAAB3DF}"><x14:dataValidations count="1">'
        '<x14:dataValidation type="list" allowBlank="1"><x14:formula1><xm:f>Lists!$A$1:$A$3'
        "</xm:f></x14:formula1><xm:sqref>E1:E9</xm:sqref></x14:dataValidation>"
        "</x14:dataValidations></ext></extLst></worksheet>")
    objs, issues = sheet_objects(package(sheet))
    cf, = of_kind(objs, "conditional_format")
    assert cf.ref == "D1:D9" and cf.details["source"] == "x14"
    assert cf.details["rules"][0]["type"] == "dataBar"
    assert cf.details["rules"][0]["extra"]["dataBar"]["cfvo"][1] == {"type": "num", "val": "100"}
    dv, = of_kind(objs, "data_validation")
    assert dv.ref == "E1:E9" and dv.details["formula1"] == "Lists!$A$1:$A$3"
    assert dv.details["source"] == "x14"
    # without the worksheet root only what the relationships reach is read
    with reader_for(b28_like()) as reader:
        objs = read_sheet_objects(reader, "xl/worksheets/sheet1.xml", "Dashboard", None, None)
    assert sorted(o.kind for o in objs) == ["chart", "picture"]


def test_chartsheet_objects():
    chartsheet = (f'<chartsheet xmlns="{NS_MAIN}" xmlns:r="{NS_R}"><sheetViews/>'
                  '<drawing r:id="rId1"/></chartsheet>')
    drawing = (
        f'<xdr:wsDr xmlns:xdr="{NS_XDR}" xmlns:a="{NS_A}" xmlns:c="{NS_C}" xmlns:r="{NS_R}">'
        '<xdr:absoluteAnchor><xdr:pos x="0" y="0"/><xdr:ext cx="10" cy="10"/><xdr:graphicFrame>'
        '<xdr:nvGraphicFramePr><xdr:cNvPr id="2" name="Chart 9"/></xdr:nvGraphicFramePr>'
        '<a:graphic><a:graphicData><c:chart r:id="rId1"/></a:graphicData></a:graphic>'
        "</xdr:graphicFrame><xdr:clientData/></xdr:absoluteAnchor></xdr:wsDr>")
    data = package(
        B28_SHEET, strings=["Month", "Sales", "Jan", "Feb", "Mar"],
        workbook_extra="", extra={
            "xl/chartsheets/sheet1.xml": chartsheet,
            "xl/chartsheets/_rels/sheet1.xml.rels": rels_xml(
                ("rId1", f"{REL}/drawing", "../drawings/drawing9.xml")),
            "xl/drawings/drawing9.xml": drawing,
            "xl/drawings/_rels/drawing9.xml.rels": rels_xml(
                ("rId1", f"{REL}/chart", "../charts/chart1.xml")),
            "xl/charts/chart1.xml": B28_CHART,
        })
    issues: list = []
    with reader_for(data) as reader:
        objs = read_chartsheet_objects(reader, "xl/chartsheets/sheet1.xml", "Chart1",
                                       issues=issues)
        missing = read_chartsheet_objects(reader, "xl/chartsheets/nope.xml", "X", issues=issues)
    chart, = objs
    assert chart.ref is None and chart.sheet_name == "Chart1"
    assert chart.details["anchor_type"] == "absoluteAnchor"
    # references to another sheet are resolved through the workbook's sheet list
    assert chart.details["series"][0]["values"] == [10, 12, 9]
    assert missing == [] and [i.code for i in issues] == ["missing_part"]


def test_image_headers():
    gif = b"GIF89a" + struct.pack("<HH", 7, 3) + b"\x00" * 10
    jpeg = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 48, 64) + b"\x03" + b"\x00" * 9)
    bmp = b"BM" + b"\x00" * 16 + struct.pack("<ii", 5, -6) + b"\x00" * 8
    assert _image_header(LOGO) == ("image/png", (20, 10))
    assert _image_header(gif) == ("image/gif", (7, 3))
    assert _image_header(jpeg) == ("image/jpeg", (64, 48))
    assert _image_header(bmp) == ("image/bmp", (5, 6))
    assert _image_header(b"garbage") == (None, None)


# --------------------------------------------------------------------------- corpus


@pytest.mark.slow  # reads the objects of every corpus workbook
def test_corpus_never_raises(corpus_dir: Path):
    files = sorted(p for p in (corpus_dir / "files").rglob("*")
                   if p.suffix.lower() in (".xlsx", ".xlsm") and p.is_file())
    if not files:
        pytest.skip("no xlsx/xlsm files in the corpus")
    kinds: set[str] = set()
    for path in files:
        data = path.read_bytes()
        try:
            objs, issues = package_objects(data)
        except ExtractionError:
            continue  # refused as a whole (encrypted, hostile...): the workbook reader's job
        json.dumps([o.to_dict() for o in objs])
        assert all(o.kind in ("comment", "hyperlink", "data_validation", "conditional_format",
                              "table", "pivot_table", "chart", "picture", "defined_name",
                              "external_link")
                   for o in objs), path
        kinds.update(o.kind for o in objs)
    assert {"comment", "chart", "picture", "table"} <= kinds


def test_legacy_comment_rich_runs_joined():
    comments = (
        f'<comments xmlns="{NS_MAIN}"><authors><author>Bob</author></authors><commentList>'
        '<comment ref="$C$4" authorId="0"><text><r><rPr><b/></rPr><t>Bob:</t></r>'
        '<r><t xml:space="preserve">\nNumber of Hires</t></r><r><rPr><vertAlign '
        'val="superscript"/></rPr><t>1</t></r><rPh sb="0" eb="1"><t>ignored</t></rPh></text>'
        '</comment><comment ref="A1" authorId="7"><text><t>x_x000D_y</t></text></comment>'
        "</commentList></comments>")
    data = package(f'<worksheet xmlns="{NS_MAIN}"><sheetData/></worksheet>',
                   sheet_rels=rels_xml(("rId1", f"{REL}/comments", "../comments1.xml")),
                   extra={"xl/comments1.xml": comments})
    objs, issues = sheet_objects(data)
    first, second = objs
    assert (first.ref, first.details["author"], first.text) == ("A1", None, "x\ry")
    assert (second.ref, second.details["author"]) == ("C4", "Bob")
    assert second.text == "Bob:\nNumber of Hires1"
    assert issues == []
