"""Bundled sample workbooks, generated deterministically with openpyxl.

Every builder in :data:`SAMPLES` returns a fresh :class:`openpyxl.Workbook`
with invented but realistic content.  :func:`write_samples` saves them so that
repeated calls produce byte-identical ``.xlsx`` files: the document
properties are pinned to constants and the zip container is rewritten with a
fixed timestamp, compression and file attributes (entry order is preserved).
"""

from __future__ import annotations

import datetime as _dt
import io
import zipfile
from pathlib import Path
from typing import Callable

import openpyxl
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.xml.functions import tostring

__all__ = [
    "SAMPLES",
    "FIXED_TIMESTAMP",
    "build_quarterly_report",
    "build_ledger",
    "build_spec_ja",
    "workbook_bytes",
    "write_samples",
]

#: Timestamp stamped into every sample's document properties.
FIXED_TIMESTAMP = _dt.datetime(2024, 1, 1, 0, 0, 0)
_AUTHOR = "extraction-assets"
_ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)
_ZIP_EXTERNAL_ATTR = 0o100644 << 16  # regular file, rw-r--r--
_ZIP_CREATE_SYSTEM = 3  # Unix, regardless of the host platform

_THIN = Side(style="thin", color="FF000000")
_BORDER = Border(left=_THIN, right=_THIN, top=_THIN, bottom=_THIN)
_HEADER_FILL = PatternFill(fill_type="solid", start_color="FFDDEBF7", end_color="FFDDEBF7")
_CENTER = Alignment(horizontal="center", vertical="center")


# --------------------------------------------------------------------------- helpers


def _new_workbook(sheet_title: str) -> tuple[openpyxl.Workbook, Worksheet]:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheet_title
    props = wb.properties
    props.creator = _AUTHOR
    props.lastModifiedBy = _AUTHOR
    props.created = FIXED_TIMESTAMP
    props.modified = FIXED_TIMESTAMP
    return wb, ws


def _style_header(ws, cell_range: str, font: Font | None = None) -> None:
    """Bold + light fill + thin border on every cell of ``cell_range``."""
    for row in ws[cell_range]:
        for cell in row:
            cell.font = font or Font(bold=True)
            cell.fill = _HEADER_FILL
            cell.border = _BORDER
            cell.alignment = _CENTER


def _border(ws, cell_range: str) -> None:
    for row in ws[cell_range]:
        for cell in row:
            cell.border = _BORDER


def _widths(ws, widths: list[float]) -> None:
    for idx, width in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(idx)].width = width


# --------------------------------------------------------------------------- builders


def build_quarterly_report() -> openpyxl.Workbook:
    """Build ``quarterly_report.xlsx``: one sheet, two tables, a two-row merged header.

    Sheet "Report": title in A1 (merged A1:E1), regional units table A3:E8 with
    a two-row header (rows 3-4), two blank rows, a bold "Top products" label in
    A11 and a second table A12:D17.
    """
    wb, ws = _new_workbook("Report")

    ws["A1"] = "Quarterly Sales Report 2024"
    ws["A1"].font = Font(bold=True, size=14)
    ws.merge_cells("A1:E1")

    # Two-row header.
    ws["A3"] = "Region"
    ws["B3"] = "2023"
    ws["D3"] = "2024"
    for col, label in zip("BCDE", ["Q1", "Q2", "Q1", "Q2"]):
        ws[f"{col}4"] = label
    ws.merge_cells("A3:A4")
    ws.merge_cells("B3:C3")
    ws.merge_cells("D3:E3")
    _style_header(ws, "A3:E4")

    regions = [
        ("North", 1240, 1315, 1382, 1450),
        ("South", 980, 1022, 1107, 1163),
        ("East", 1515, 1490, 1604, 1688),
        ("West", 862, 905, 947, 1011),
    ]
    for r, values in enumerate(regions, start=5):
        for c, value in enumerate(values, start=1):
            ws.cell(row=r, column=c, value=value)
    _border(ws, "A5:E8")

    # Rows 9-10 intentionally empty; second table below.
    ws["A11"] = "Top products"
    ws["A11"].font = Font(bold=True)
    for c, label in enumerate(["Product", "Category", "Units", "Revenue"], start=1):
        ws.cell(row=12, column=c, value=label)
    _style_header(ws, "A12:D12")

    products = [
        ("Aurora Desk Lamp", "Lighting", 842, 37890.00),
        ("Nimbus Office Chair", "Furniture", 315, 59850.00),
        ("Vega Monitor Arm", "Accessories", 1120, 44688.00),
        ("Atlas Standing Desk", "Furniture", 198, 87120.00),
        ("Lumen LED Strip", "Lighting", 1530, 22950.00),
    ]
    for r, values in enumerate(products, start=13):
        for c, value in enumerate(values, start=1):
            ws.cell(row=r, column=c, value=value)
        ws.cell(row=r, column=4).number_format = "#,##0.00"
    _border(ws, "A13:D17")

    _widths(ws, [22, 14, 10, 14, 10])
    return wb


def build_ledger() -> openpyxl.Workbook:
    """Build ``ledger.xlsx``: a general-ledger sheet with dates, currency and SUM totals.

    Sheet "Ledger": header A1:E1, twelve entries in rows 2-13 (each row has
    either a Debit or a Credit, a few descriptions are blank), totals row 14
    with ``=SUM(D2:D13)`` / ``=SUM(E2:E13)``.  Sheet "Accounts": code/name
    lookup table A1:B6.
    """
    wb, ws = _new_workbook("Ledger")

    headers = ["Date", "Account", "Description", "Debit", "Credit"]
    for c, label in enumerate(headers, start=1):
        ws.cell(row=1, column=c, value=label)
    _style_header(ws, "A1:E1")

    d = _dt.date
    entries = [
        (d(2024, 1, 3), 1200, "Invoice INV-1001 Harbor Cafe", 4800.00, None),
        (d(2024, 1, 3), 4000, "Invoice INV-1001 Harbor Cafe", None, 4800.00),
        (d(2024, 1, 5), 6100, "January office rent", 2250.00, None),
        (d(2024, 1, 5), 1000, None, None, 2250.00),
        (d(2024, 1, 12), 5000, "Printer paper and toner", 318.45, None),
        (d(2024, 1, 12), 1000, "Printer paper and toner", None, 318.45),
        (d(2024, 1, 18), 1000, "Payment received INV-1001", 4800.00, None),
        (d(2024, 1, 18), 1200, "Payment received INV-1001", None, 4800.00),
        (d(2024, 1, 24), 1200, "Invoice INV-1002 Northwind Traders", 2975.50, None),
        (d(2024, 1, 24), 4000, "Invoice INV-1002 Northwind Traders", None, 2975.50),
        (d(2024, 1, 30), 1000, "Cash sales, week 5", 1200.00, None),
        (d(2024, 1, 30), 4000, None, None, 1200.00),
    ]
    currency = '"$"#,##0.00'
    for r, values in enumerate(entries, start=2):
        for c, value in enumerate(values, start=1):
            if value is not None:
                ws.cell(row=r, column=c, value=value)
        ws.cell(row=r, column=1).number_format = "yyyy-mm-dd"
        ws.cell(row=r, column=4).number_format = currency
        ws.cell(row=r, column=5).number_format = currency
    _border(ws, "A2:E13")

    ws["A14"] = "Total"
    ws["D14"] = "=SUM(D2:D13)"
    ws["E14"] = "=SUM(E2:E13)"
    for col in "ADE":
        ws[f"{col}14"].font = Font(bold=True)
    ws["D14"].number_format = currency
    ws["E14"].number_format = currency
    _border(ws, "A14:E14")
    _widths(ws, [12, 10, 36, 14, 14])

    accounts = wb.create_sheet("Accounts")
    accounts["A1"] = "Code"
    accounts["B1"] = "Name"
    _style_header(accounts, "A1:B1")
    for r, (code, name) in enumerate(
        [(1000, "Cash"), (1200, "Receivables"), (4000, "Sales"), (5000, "Supplies"), (6100, "Rent")],
        start=2,
    ):
        accounts.cell(row=r, column=1, value=code)
        accounts.cell(row=r, column=2, value=name)
    _border(accounts, "A2:B6")
    _widths(accounts, [10, 18])
    return wb


def build_spec_ja() -> openpyxl.Workbook:
    """Build ``spec_ja.xlsx``: a Japanese product specification with sized headings.

    Sheet "仕様書": A1 bold 18pt title, A3 bold 14pt section heading, table
    A4:D9, A11 bold 14pt section heading, A12 bold 12pt subsection heading,
    table A13:B16 and a normal 11pt note in A18.
    """
    wb, ws = _new_workbook("仕様書")
    face = "游ゴシック"
    body = Font(name=face, size=11)

    def heading(ref: str, text: str, size: int) -> None:
        ws[ref] = text
        ws[ref].font = Font(name=face, size=size, bold=True)

    def table(top: int, header: list[str], rows: list[tuple]) -> None:
        for c, label in enumerate(header, start=1):
            ws.cell(row=top, column=c, value=label)
        last_col = get_column_letter(len(header))
        _style_header(ws, f"A{top}:{last_col}{top}", Font(name=face, size=11, bold=True))
        for r, values in enumerate(rows, start=top + 1):
            for c, value in enumerate(values, start=1):
                cell = ws.cell(row=r, column=c, value=value)
                cell.font = body
                cell.border = _BORDER

    heading("A1", "製品仕様書", 18)
    heading("A3", "1. 基本仕様", 14)
    table(
        4,
        ["項目", "値", "単位", "備考"],
        [
            ("定格電圧", 100, "V", "AC 50/60 Hz"),
            ("消費電力", 1200, "W", "最大時"),
            ("質量", 3.5, "kg", "本体のみ"),
            ("外形寸法", "320×250×180", "mm", "幅×奥行×高さ"),
            ("動作温度", "0〜40", "℃", "結露しないこと"),
        ],
    )
    heading("A11", "2. 付属品", 14)
    heading("A12", "2.1 標準付属品", 12)
    table(13, ["品名", "数量"], [("電源コード", 1), ("取扱説明書", 1), ("保証書", 1)])

    ws["A18"] = "※ 仕様は予告なく変更することがあります。"
    ws["A18"].font = body
    _widths(ws, [18, 16, 8, 20])
    return wb


#: Sample file name -> builder returning a fresh workbook.
SAMPLES: dict[str, Callable[[], openpyxl.Workbook]] = {
    "quarterly_report.xlsx": build_quarterly_report,
    "ledger.xlsx": build_ledger,
    "spec_ja.xlsx": build_spec_ja,
}


# --------------------------------------------------------------------------- writing


def workbook_bytes(wb: openpyxl.Workbook) -> bytes:
    """Serialize ``wb`` to ``.xlsx`` bytes that depend only on the workbook content.

    openpyxl stamps the current time into ``docProps/core.xml`` (``modified``)
    and into every zip entry; both are replaced by fixed values here.  Entry
    order is kept, every entry is ZIP_DEFLATED with the default level.
    """
    raw = io.BytesIO()
    wb.save(raw)  # overwrites wb.properties.modified with "now"
    props = wb.properties
    props.created = FIXED_TIMESTAMP
    props.modified = FIXED_TIMESTAMP
    props.lastModifiedBy = _AUTHOR
    core_xml = tostring(props.to_tree())

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw.getvalue())) as src, zipfile.ZipFile(
        out, "w", compression=zipfile.ZIP_DEFLATED
    ) as dst:
        for info in src.infolist():
            data = core_xml if info.filename == "docProps/core.xml" else src.read(info.filename)
            entry = zipfile.ZipInfo(info.filename, date_time=_ZIP_DATE_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = _ZIP_EXTERNAL_ATTR
            entry.create_system = _ZIP_CREATE_SYSTEM
            dst.writestr(entry, data)
    return out.getvalue()


def write_samples(directory: str | Path) -> list[Path]:
    """Write every sample in :data:`SAMPLES` into ``directory`` (created if missing).

    Returns the written paths sorted by file name.  Output is byte-identical
    across calls.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in sorted(SAMPLES):
        path = target / name
        path.write_bytes(workbook_bytes(SAMPLES[name]()))
        paths.append(path)
    return paths
