"""The readers of the other spreadsheet formats: .xls (BIFF2-8), .xlsb, .ods, .fods, .csv/.tsv.

Without LibreOffice they are read by value (xlrd / python-calamine / the CSV reader); with
``soffice`` on the machine they are converted to xlsx first (those tests skip cleanly when it is
missing). Fixtures are built here; the shared corpus and cases are used when present.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess

import openpyxl
import pytest

from extraction_assets.core.errors import (
    EncryptedWorkbookError,
    ExtractionError,
    NotASpreadsheetError,
)
from extraction_assets.core.formats import FORMATS
from extraction_assets.core.open import open_workbook
from extraction_assets.core.readers import libreoffice
from extraction_assets.core.sniff import sniff
from extraction_assets.pipeline import stages

H = "0" * 64

from extraction_assets_tests.builders import deadline, fods_bytes, ods_bytes


@pytest.fixture
def no_soffice(monkeypatch):
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", "off")


@pytest.fixture(scope="module")
def embedder():
    from extraction_assets.search.embedding import LocalEmbedder

    return LocalEmbedder()


def _b30_twin() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Legacy"
    ws.append(["Name", "Amount", "Date"])
    for name, amount, day in [("Alpha", 1234.5, dt.date(2023, 1, 31)),
                              ("Beta", 99, dt.date(2023, 2, 28)),
                              ("Gamma", 0.25, dt.date(2023, 3, 31))]:
        ws.append([name, amount, day])
    for row in ws.iter_rows(min_row=2):
        row[1].number_format = "#,##0.00"
        row[2].number_format = "yyyy-mm-dd"
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _pipeline(data: bytes, count_tokens, filename: str = "book") -> dict:
    parsed = stages.parse_stage(H, data).tables
    norm = stages.normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                  parsed["styles"], parsed["workbook_properties"]).tables
    seg = stages.segment_stage(H, norm["cells"], norm["sheets"]).tables
    out = stages.render_stage(H, filename, norm["cells"], norm["sheets"], seg["blocks"],
                              seg["block_columns"], count_tokens, 512).tables
    return {"records": [(r["sheet_name"], r["row"], r["a1_range"], r["role"],
                         json.loads(r["record"]), json.loads(r["display"]))
                        for r in out["records"].to_pylist()],
            "chunks": [(c["sheet_name"], c["a1_ranges"], c["heading_path"], c["text"],
                        c["n_tokens"]) for c in out["chunks"].to_pylist()],
            "cells": {(c["ref"], c["display_text"], c["iso_value"], c["value_type"])
                      for c in norm["cells"].to_pylist()}}


# -- B30: the .xls gives what its .xlsx twin gives ----------------------------------------------
def test_b30_legacy_xls_matches_its_xlsx_twin(cases_dir, no_soffice, embedder):
    path = cases_dir / "B30_legacy.xls"
    if not path.exists():
        pytest.skip("B30_legacy.xls is not in the cases")
    data = path.read_bytes()
    xls = _pipeline(data, embedder.count_tokens)
    xlsx = _pipeline(_b30_twin(), embedder.count_tokens)
    assert xls["records"] and xls["records"] == xlsx["records"]
    assert xls["chunks"] == xlsx["chunks"]
    assert xls["cells"] == xlsx["cells"]
    display = {r[4]["Name"]: r[5] for r in xls["records"]}
    assert display["Alpha"] == {"Name": "Alpha", "Amount": "1,234.50", "Date": "2023-01-31"}
    row = stages.workbook_stage(H, data, "cases/B30_legacy.xls").tables["workbooks"].to_pylist()
    assert (row[0]["container"], row[0]["format"], row[0]["sheet_names"]) == (
        "ole2/biff8", "xls", ["Legacy"])
    assert stages.workbook_stage(H, data, "B30_legacy.xls").issues == []  # reported once, by:
    issues = stages.parse_stage(H, data).issues
    assert [i.code for i in issues] == ["styles_unavailable"]
    assert issues[0].severity == "info" and "formulas" in issues[0].message


@pytest.mark.integration
@pytest.mark.skipif(libreoffice.find_soffice() is None, reason="LibreOffice (soffice) not installed")
def test_b30_through_libreoffice(cases_dir, embedder, monkeypatch):
    monkeypatch.delenv("EXTRACTION_ASSETS_SOFFICE", raising=False)
    data = (cases_dir / "B30_legacy.xls").read_bytes()
    wb = open_workbook(data)
    try:
        assert wb.conversion and wb.conversion["tool"] == "LibreOffice"
        assert wb.issues[0].code == "converted"
    finally:
        wb.close()
    xls = _pipeline(data, embedder.count_tokens)
    xlsx = _pipeline(_b30_twin(), embedder.count_tokens)
    assert [r[4:] for r in xls["records"]] == [r[4:] for r in xlsx["records"]]


@pytest.mark.integration
@pytest.mark.skipif(libreoffice.find_soffice() is None, reason="LibreOffice (soffice) not installed")
def test_soffice_conversion_of_a_builtods_bytes(tmp_path):
    ods = ods_bytes({"Data": [["Name", "Value"], ["a", 1.5], ["b", 2]]})
    xlsx, version, seconds = libreoffice.convert(ods, "ods")
    assert xlsx.startswith(b"PK") and seconds > 0 and version
    assert sniff(xlsx).format == "xlsx"


@pytest.mark.integration
@pytest.mark.skipif(libreoffice.find_soffice() is None, reason="LibreOffice (soffice) not installed")
def test_soffice_reads_a_doc_and_a_ppt_as_docx_and_pptx(tmp_path):
    from extraction_assets_tests.documents import docx_bytes, pptx_bytes

    for built, suffix, fmt in ((docx_bytes(), "docx", "doc"), (pptx_bytes(), "pptx", "ppt")):
        source = tmp_path / f"made.{suffix}"
        source.write_bytes(built)
        subprocess.run([libreoffice.find_soffice(), "--headless", "--convert-to",
                        {"doc": "doc:MS Word 97", "ppt": "ppt:MS PowerPoint 97"}[fmt],
                        "--outdir", str(tmp_path), str(source)], check=True, timeout=300)
        legacy = (tmp_path / f"made.{fmt}").read_bytes()
        assert sniff(legacy).format == fmt
        wb = open_workbook(legacy)
        assert wb.conversion["tool"] == "LibreOffice" and wb.issues[0].code == "converted"
        from extraction_assets.pipeline import run_pipeline

        chunks = run_pipeline(legacy, filename=f"made.{fmt}", count_tokens=lambda t: len(
            t.split()), max_tokens=200, min_tokens=20)["chunks"].column("text").to_pylist()
        assert ("P-200" if fmt == "doc" else "Quarterly review") in " ".join(chunks)


# -- encryption and sniffing --------------------------------------------------------------------
def test_encrypted_xls_needs_a_password(corpus_dir):
    path = corpus_dir / "files/poi/xor-encryption-abc.xls"
    if not path.exists():
        pytest.skip("xor-encryption-abc.xls is not in the corpus")
    data = path.read_bytes()
    assert sniff(data).encrypted
    with pytest.raises(EncryptedWorkbookError, match="password required"):
        open_workbook(data)
    with pytest.raises(stages.StageError) as info:
        stages.workbook_stage(H, data, "x.xls")
    row = info.value.output.tables["workbooks"].to_pylist()[0]
    assert row["is_encrypted"] and row["container"] == "ole2/biff8"
    assert info.value.error.code == "encrypted"


def test_ole2_garbage_is_typed_never_a_zip_error():
    import olefile  # noqa: F401 - the sniffer's dependency

    data = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600
    with pytest.raises(ExtractionError) as info:
        open_workbook(data)
    assert "zip" not in info.value.message.lower()


def test_bare_biff2_stream_is_read():
    # BOF (BIFF2 worksheet), LABEL A1 "hi", NUMBER B1 2.5, EOF
    def rec(rtype, payload):
        return rtype.to_bytes(2, "little") + len(payload).to_bytes(2, "little") + payload

    import struct

    data = (rec(0x0009, b"\x07\x00\x10\x00") + rec(0x0004, b"\x00" * 7 + b"\x02hi")
            + rec(0x0003, b"\x00\x00\x01\x00\x00\x00\x00" + struct.pack("<d", 2.5))
            + rec(0x000A, b""))
    s = sniff(data)
    assert (s.container, s.format, s.version) == ("biff", "xls", "biff2")
    wb = open_workbook(data)
    try:
        (sheet,) = list(wb.iter_sheets())
        assert {(c["col"], c["data_type"], c["value"]) for c in sheet.cells.to_pylist()} == {
            (1, "s", "hi"), (2, "n", "2.5")}
    finally:
        wb.close()


# -- ODS / FODS built here ----------------------------------------------------------------------
ROWS = [["Quarterly", None, ""], ["Item", "Qty", "When"], ["Bolt", 12, dt.date(2024, 5, 1)],
        ["Nut", 3.5, dt.date(2024, 6, 30)]]


@pytest.mark.parametrize("build,fmt", [(ods_bytes, "ods"), (fods_bytes, "fods")])
def test_ods_and_fods_values_merges_and_dates(build, fmt, no_soffice, embedder):
    data = build({"Stock": ROWS}, merge_first_row=True)
    assert sniff(data).format == fmt
    wb = open_workbook(data)
    try:
        (sheet,) = list(wb.iter_sheets())
        assert sheet.merged_ranges == ["A1:B1"]
        cells = {(c["row"], c["col"]): (c["data_type"], c["value"],
                                       wb.styles[c["style_index"]].number_format)
                 for c in sheet.cells.to_pylist()}
        assert cells[(3, 2)] == ("n", "12", "General")
        assert cells[(4, 2)] == ("n", "3.5", "General")
        assert cells[(3, 3)] == ("n", "45413", "yyyy-mm-dd")
        assert any(i.code == "styles_unavailable" for i in wb.issues)
    finally:
        wb.close()
    out = _pipeline(data, embedder.count_tokens)
    assert ("C3", "2024-05-01", "2024-05-01", "date") in out["cells"]
    records = [r[4] for r in out["records"]]
    assert {"Item": "Bolt", "Qty": 12, "When": "2024-05-01"} in records or any(
        rec.get("Item") == "Bolt" for rec in records)


def test_fods_with_a_dtd_is_refused():
    data = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>' + fods_bytes({"S": [["a", "b"]]})[38:]
    with pytest.raises(ExtractionError) as info:
        open_workbook(data)
    assert info.value.code in ("hostile_content", "not_a_spreadsheet")


# -- CSV / TSV ----------------------------------------------------------------------------------
def test_csv_is_sniffed_and_typed(no_soffice, embedder):
    text = "Code;Name;Amount;Day\n007;Widget;1234.5;2024-01-31\n012;Gadget;10;2024-02-29\n" \
           "020;Gizmo;1.50;n/a\n"
    data = text.encode("cp1252")
    s = sniff(data)
    assert (s.container, s.format, s.delimiter) == ("text", "csv", ";")
    wb = open_workbook(data, filename="in/stock list.csv")
    try:
        (sheet,) = list(wb.iter_sheets())
        assert sheet.info.name == "stock list"
        cells = {(c["row"], c["col"]): (c["data_type"], c["value"])
                 for c in sheet.cells.to_pylist()}
    finally:
        wb.close()
    assert cells[(2, 1)] == ("s", "007")          # leading zeros stay text
    assert cells[(2, 3)] == ("n", "1234.5")
    assert cells[(4, 3)] == ("s", "1.50")         # trailing zero kept as written
    assert cells[(2, 4)][0] == "n"                # ISO date -> serial with a date format
    out = _pipeline(data, embedder.count_tokens)
    assert ("D2", "2024-01-31", "2024-01-31", "date") in out["cells"]
    assert len(out["records"]) == 3


def test_tsv_in_utf16_and_shift_jis():
    rows = "名前\t数量\t備考\nりんご\t3\t赤い\nみかん\t5\t甘い\nぶどう\t7\t紫\n"
    for data in (rows.encode("utf-16"), rows.encode("shift_jis")):
        s = sniff(data)
        assert (s.format, s.delimiter) == ("csv", "\t"), s
        wb = open_workbook(data)
        try:
            (sheet,) = list(wb.iter_sheets())
            assert sheet.info.name == "Sheet1"
            assert "りんご" in sheet.column("value")
        finally:
            wb.close()


@pytest.mark.parametrize("data", [
    b"Dear team, the meeting is moved.\nPlease bring notes, pens and ideas.\nThanks.\n",
    b"name,amount\nalpha,1\n",
    b"def f(a, b):\n    return a\n\nprint(f(1, 2))\n",
    b"<body><p>a,b,c</p>\n<p>d,e,f</p>\n<p>g,h,i</p></body>\n",  # no <html>: no HTML document
])
def test_prose_and_snippets_are_not_spreadsheets(data):
    assert sniff(data).format == "other"
    with pytest.raises(NotASpreadsheetError):
        open_workbook(data)


# -- the corpus ---------------------------------------------------------------------------------


#: The suffixes of the formats LibreOffice converts (read by value here).
CONVERTED_SUFFIXES = {s for fmt in FORMATS.values() if fmt.converts for s in fmt.suffixes}


@pytest.mark.slow
def test_every_legacy_corpus_file_succeeds_or_fails_typed(corpus_dir, no_soffice):
    files = sorted(p for p in (corpus_dir / "files").rglob("*")
                   if p.suffix.lower() in CONVERTED_SUFFIXES and p.is_file())
    if not files:
        pytest.skip("no legacy files in the corpus")
    outcomes = {}
    for path in files:
        with deadline(60, path.name):
            try:
                parsed = stages.parse_stage(H, path.read_bytes()).tables
                stages.normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                       parsed["styles"], parsed["workbook_properties"])
                outcomes[path.name] = "success"
            except stages.StageError as exc:
                assert isinstance(exc.error, ExtractionError)
                message = exc.error.message.lower()
                assert "readable zip" not in message and "zip container" not in message
                outcomes[path.name] = exc.error.code
    assert outcomes.get("xor-encryption-abc.xls", "encrypted") == "encrypted"
    assert outcomes.get("too_small.xls", "x") != "success"
    successes = sum(v == "success" for v in outcomes.values())
    assert successes >= len(outcomes) - 3, outcomes


def _gt_tables(md: str) -> list[set[str]]:
    tables, current = [], None
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            current = current if current is not None else set()
            current.update(c for c in cells if c)
        elif current is not None:
            tables.append(current)
            current = None
    return tables


@pytest.mark.parametrize("name", ["legacy_sample.xls", "odf_table_with_title_01.ods"])
def test_docling_ground_truth_content(corpus_dir, name, no_soffice, embedder):
    path = corpus_dir / "files/docling" / name
    gt = corpus_dir / "groundtruth/docling" / f"{name}.md"
    if not path.exists() or not gt.exists():
        pytest.skip(f"{name} or its ground truth is not in the corpus")
    expected = _gt_tables(gt.read_text(encoding="utf-8"))
    parsed = stages.parse_stage(H, path.read_bytes()).tables
    norm = stages.normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                  parsed["styles"], parsed["workbook_properties"]).tables
    seg = stages.segment_stage(H, norm["cells"], norm["sheets"]).tables
    cells = norm["cells"].to_pylist()
    ours = []
    for block in seg["blocks"].to_pylist():
        ours.append({c["display_text"] for c in cells
                     if c["sheet_name"] == block["sheet_name"]
                     and block["min_row"] <= c["row"] <= block["max_row"]
                     and block["min_col"] <= c["col"] <= block["max_col"] and c["display_text"]})
    for table in expected:
        assert table in ours, (table, ours)
