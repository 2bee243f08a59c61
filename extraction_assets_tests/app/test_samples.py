"""Tests for the bundled, deterministic sample workbooks."""

from __future__ import annotations

import datetime as dt
import hashlib
import zipfile

import openpyxl
import pytest

from extraction_assets.app.samples import SAMPLES, write_samples

NAMES = ["ledger.xlsx", "quarterly_report.xlsx", "spec_ja.xlsx"]


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("samples") / "nested" / "dir"
    write_samples(directory)
    return directory


def _merged(ws) -> set[str]:
    return {str(r) for r in ws.merged_cells.ranges}


def test_write_samples_returns_sorted_paths_and_creates_directory(tmp_path):
    target = tmp_path / "a" / "b"
    paths = write_samples(target)
    assert [p.name for p in paths] == NAMES
    assert sorted(SAMPLES) == NAMES
    assert all(p.parent == target and p.is_file() for p in paths)


def test_output_is_byte_identical(tmp_path):
    first = write_samples(tmp_path / "one")
    second = write_samples(str(tmp_path / "two"))
    assert [_sha(p) for p in first] == [_sha(p) for p in second]
    # and identical to a third run in the same directory (overwrite)
    third = write_samples(tmp_path / "one")
    assert [_sha(p) for p in first] == [_sha(p) for p in third]


def test_zip_entries_have_fixed_metadata(sample_dir):
    for name in NAMES:
        with zipfile.ZipFile(sample_dir / name) as zf:
            infos = zf.infolist()
            assert infos
            for info in infos:
                assert info.date_time == (1980, 1, 1, 0, 0, 0)
                assert info.compress_type == zipfile.ZIP_DEFLATED
            core = zf.read("docProps/core.xml").decode()
            assert "2024-01-01T00:00:00Z" in core


def test_quarterly_report(sample_dir):
    wb = openpyxl.load_workbook(sample_dir / "quarterly_report.xlsx")
    assert wb.sheetnames == ["Report"]
    ws = wb["Report"]
    assert ws["A1"].value == "Quarterly Sales Report 2024"
    assert ws["A1"].font.bold and ws["A1"].font.size == 14
    assert {"A1:E1", "A3:A4", "B3:C3", "D3:E3"} <= _merged(ws)
    assert [ws.cell(3, c).value for c in range(1, 6)] == ["Region", "2023", None, "2024", None]
    assert [ws.cell(4, c).value for c in range(1, 6)] == [None, "Q1", "Q2", "Q1", "Q2"]
    assert ws["A3"].font.bold and ws["B4"].font.bold
    assert ws["A3"].fill.fill_type == "solid"
    assert ws["A3"].border.top.style == "thin"
    assert [ws.cell(5, c).value for c in range(1, 6)] == ["North", 1240, 1315, 1382, 1450]
    assert [ws.cell(r, 1).value for r in range(5, 9)] == ["North", "South", "East", "West"]
    # two empty rows between the tables
    for r in (9, 10):
        assert all(ws.cell(r, c).value is None for c in range(1, 7))
    assert ws["A11"].value == "Top products" and ws["A11"].font.bold
    assert [ws.cell(12, c).value for c in range(1, 5)] == ["Product", "Category", "Units", "Revenue"]
    assert [ws.cell(13, c).value for c in range(1, 5)] == ["Aurora Desk Lamp", "Lighting", 842, 37890]
    assert ws["D13"].number_format == "#,##0.00"
    assert ws["A17"].value == "Lumen LED Strip"
    assert ws.max_row == 17


def test_ledger(sample_dir):
    wb = openpyxl.load_workbook(sample_dir / "ledger.xlsx")
    assert wb.sheetnames == ["Ledger", "Accounts"]
    ws = wb["Ledger"]
    assert [c.value for c in ws[1]] == ["Date", "Account", "Description", "Debit", "Credit"]
    assert ws["A2"].value == dt.datetime(2024, 1, 3)
    assert ws["A2"].number_format == "yyyy-mm-dd"
    assert [ws.cell(2, c).value for c in range(2, 6)] == [1200, "Invoice INV-1001 Harbor Cafe", 4800, None]
    assert ws["D2"].number_format == '"$"#,##0.00'
    assert ws["E3"].number_format == '"$"#,##0.00'
    assert ws["C5"].value is None  # some blank descriptions
    assert ws["A14"].value == "Total"
    assert ws["D14"].value == "=SUM(D2:D13)"
    assert ws["E14"].value == "=SUM(E2:E13)"
    assert ws.max_row == 14
    debit = sum(ws.cell(r, 4).value or 0 for r in range(2, 14))
    credit = sum(ws.cell(r, 5).value or 0 for r in range(2, 14))
    assert debit == pytest.approx(credit) == pytest.approx(16343.95)

    acc = wb["Accounts"]
    rows = [tuple(c.value for c in row) for row in acc.iter_rows()]
    assert rows == [
        ("Code", "Name"),
        (1000, "Cash"),
        (1200, "Receivables"),
        (4000, "Sales"),
        (5000, "Supplies"),
        (6100, "Rent"),
    ]


def test_spec_ja(sample_dir):
    wb = openpyxl.load_workbook(sample_dir / "spec_ja.xlsx")
    assert wb.sheetnames == ["仕様書"]
    ws = wb["仕様書"]

    def font(ref):
        return ws[ref].font.bold, ws[ref].font.size

    assert ws["A1"].value == "製品仕様書" and font("A1") == (True, 18)
    assert ws["A3"].value == "1. 基本仕様" and font("A3") == (True, 14)
    assert [ws.cell(4, c).value for c in range(1, 5)] == ["項目", "値", "単位", "備考"]
    assert [ws.cell(5, c).value for c in range(1, 5)] == ["定格電圧", 100, "V", "AC 50/60 Hz"]
    assert ws["A9"].value == "動作温度" and ws["B9"].value == "0〜40" and ws["C9"].value == "℃"
    assert ws["A11"].value == "2. 付属品" and font("A11") == (True, 14)
    assert ws["A12"].value == "2.1 標準付属品" and font("A12") == (True, 12)
    assert [ws.cell(13, c).value for c in range(1, 3)] == ["品名", "数量"]
    assert [ws.cell(14, c).value for c in range(1, 3)] == ["電源コード", 1]
    assert ws["A16"].value == "保証書"
    assert ws["A18"].value == "※ 仕様は予告なく変更することがあります。"
    assert not ws["A18"].font.bold and ws["A18"].font.size == 11
    assert not ws["A5"].font.bold and ws["A5"].font.size == 11
    assert ws.max_row == 18
