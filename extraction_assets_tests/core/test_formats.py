"""The format table (``core/formats.py``): the formats read, their families and readers, and
the file name that never picks one."""

from __future__ import annotations

import io
import struct
import zipfile

import openpyxl
import pytest

from extraction_assets.core.formats import (
    DOCUMENT_FORMATS,
    FORMATS,
    OOXML_FORMATS,
    OTHER_SPREADSHEET_FORMATS,
    SUFFIXES,
    Family,
)
from extraction_assets.core.open import open_workbook
from extraction_assets.core.sniff import sniff
from extraction_assets_tests.builders import fods_bytes, ods_bytes


def test_the_table_holds_the_formats_read_each_with_a_family_and_a_reader():
    assert OOXML_FORMATS == {"xlsx", "xlsm"}
    assert OTHER_SPREADSHEET_FORMATS == {"xls", "xlsb", "ods", "fods", "csv"}
    assert DOCUMENT_FORMATS == {"docx", "pptx", "pdf", "html", "md", "doc", "ppt"}
    assert set(FORMATS) == OOXML_FORMATS | OTHER_SPREADSHEET_FORMATS | DOCUMENT_FORMATS
    assert {f.name: f.converts_to for f in FORMATS.values() if f.converts} == {
        "xls": "xlsx", "xlsb": "xlsx", "ods": "xlsx", "fods": "xlsx", "doc": "docx",
        "ppt": "pptx"}
    assert {f.name for f in FORMATS.values() if f.family is Family.BY_VALUE} == {"csv"}
    for fmt in FORMATS.values():
        assert callable(fmt.load_reader()), fmt.name
        assert fmt.suffixes[0] == f".{fmt.name}"  # the usual suffix first (LibreOffice's input)
        assert all(s == s.lower() and s.startswith(".") for s in fmt.suffixes)
    every = [s for fmt in FORMATS.values() for s in fmt.suffixes]
    assert len(every) == len(set(every)) == len(SUFFIXES)  # a suffix names one format


def _xlsx(vba: bool = False) -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["hello", 2.5])
    out = io.BytesIO()
    book.save(out)
    if not vba:
        return out.getvalue()
    with zipfile.ZipFile(out, "a") as zf:
        zf.writestr("xl/vbaProject.bin", b"\x00" * 16)
    return out.getvalue()


def _biff2() -> bytes:
    def record(rtype: int, payload: bytes) -> bytes:
        return struct.pack("<HH", rtype, len(payload)) + payload

    return (record(0x0009, b"\x07\x00\x10\x00") + record(0x0004, b"\x00" * 7 + b"\x05hello")
            + record(0x0003, b"\x00\x00\x01\x00\x00\x00\x00" + struct.pack("<d", 2.5))
            + record(0x000A, b""))


SAMPLES = {
    "xlsx": _xlsx,
    "xlsm": lambda: _xlsx(vba=True),
    "xls": _biff2,
    "ods": lambda: ods_bytes({"S": [["hello", 2.5]]}),
    "fods": lambda: fods_bytes({"S": [["hello", 2.5]]}),
    "csv": lambda: b"name,value\nhello,2.5\nbye,3\n",
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_bytes_pick_the_reader_never_the_file_name(name, monkeypatch):
    monkeypatch.setenv("EXTRACTION_ASSETS_SOFFICE", "off")  # the by-value route, everywhere
    data = SAMPLES[name]()
    assert sniff(data).format == name
    wb = open_workbook(data, filename="misnamed.pdf")
    try:
        [sheet] = list(wb.iter_sheets())
        values = sheet.cells.column("value").to_pylist()
    finally:
        wb.close()
    assert "hello" in values and "2.5" in values
    assert wb.has_macros == (name == "xlsm")
