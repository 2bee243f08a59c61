"""Deterministic workbooks for the benchmark, written as Excel lays them out.

Every generator writes an ``.xlsx`` with strings in ``xl/sharedStrings.xml`` and cells with
``r``/``s``/``t`` attributes, the same bytes for the same arguments (fixed zip timestamps), and
returns its path. :data:`GENERATED` names the benchmark's workbooks with how many non-empty
cells each holds and how many table data rows (records), so a run can check its counts exactly.

Styles (``cellXfs``): 0 default, 1 bold header with a fill, 2 currency, 3 date, 4 decimal,
5 bold 14 pt title.
"""

from __future__ import annotations

import datetime as dt
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator
from xml.sax.saxutils import escape

from extraction_assets.core.a1 import column_letter

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_CITIES = ["Tokyo", "Osaka", "Paris", "Lyon", "Berlin", "Madrid", "Nagoya", "Sapporo"]
_HEADER_TOP = ["Order", "", "Customer", "", "Amounts", "", "", "Dates", "", ""]
_HEADER = ["ID", "Line", "Name", "City", "Qty", "Unit price", "Amount", "Ordered", "Paid",
           "Code"]
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_STYLES = (
    f'{_XML}<styleSheet xmlns="{_MAIN}">'
    '<numFmts count="2"><numFmt numFmtId="164" formatCode="&quot;$&quot;#,##0.00"/>'
    '<numFmt numFmtId="165" formatCode="yyyy-mm-dd"/></numFmts>'
    '<fonts count="3"><font><sz val="11"/><name val="Calibri"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/></font>'
    '<font><b/><sz val="14"/><name val="Calibri"/></font></fonts>'
    '<fills count="3"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill>'
    '<fill><patternFill patternType="solid"><fgColor theme="4" tint="0.7999"/></patternFill></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellXfs count="6"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="2" borderId="0" applyFont="1" applyFill="1"/>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="2" fontId="0" fillId="0" borderId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="0" fontId="2" fillId="0" borderId="0" applyFont="1"/></cellXfs>'
    "</styleSheet>"
)
#: Excel serial of 2020-01-01 (1900 date system).
_BASE_DATE = dt.date(2020, 1, 1).toordinal() - dt.date(1899, 12, 30).toordinal()


class _Strings:
    """The shared string table, filled while the sheets are written."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def cell(self, ref: str, text: str, style: int = 0) -> str:
        s = f' s="{style}"' if style else ""
        return f'<c r="{ref}"{s} t="s"><v>{self.index.setdefault(text, len(self.index))}</v></c>'

    def xml(self) -> str:
        items = "".join(f"<si><t>{escape(s)}</t></si>" for s in self.index)
        return (f'{_XML}<sst xmlns="{_MAIN}" count="{len(self.index)}" '
                f'uniqueCount="{len(self.index)}">{items}</sst>')


@dataclass
class _Sheet:
    """One worksheet to write: ``rows`` yields ``<row>`` elements (streamed in batches)."""

    name: str
    dimension: str
    rows: Iterable[str]
    merges: list[str]


def _write_xlsx(path: Path, sheets: list[_Sheet], strings: _Strings) -> None:
    """Write the package; sheets are streamed, the shared strings written last."""
    n = len(sheets)
    content_types = (
        f'{_XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{_CT}.sheet.main+xml"/>'
        + "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
                  f'ContentType="{_CT}.worksheet+xml"/>' for i in range(1, n + 1))
        + f'<Override PartName="/xl/styles.xml" ContentType="{_CT}.styles+xml"/>'
        f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_CT}.sharedStrings+xml"/>'
        "</Types>")
    root_rels = (
        f'{_XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>")
    workbook = (
        f'{_XML}<workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><sheets>'
        + "".join(f'<sheet name="{escape(s.name)}" sheetId="{i}" r:id="rId{i}"/>'
                  for i, s in enumerate(sheets, start=1))
        + "</sheets></workbook>")
    workbook_rels = (
        f'{_XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" '
                  f'Target="worksheets/sheet{i}.xml"/>' for i in range(1, n + 1))
        + f'<Relationship Id="rId{n + 1}" Type="{_REL}/styles" Target="styles.xml"/>'
        f'<Relationship Id="rId{n + 2}" Type="{_REL}/sharedStrings" Target="sharedStrings.xml"/>'
        "</Relationships>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        def part(name: str, data: str) -> None:
            zf.writestr(zipfile.ZipInfo(name, _FIXED_TIME), data, zipfile.ZIP_DEFLATED)

        part("[Content_Types].xml", content_types)
        part("_rels/.rels", root_rels)
        part("xl/workbook.xml", workbook)
        part("xl/_rels/workbook.xml.rels", workbook_rels)
        part("xl/styles.xml", _STYLES)
        for i, sheet in enumerate(sheets, start=1):
            info = zipfile.ZipInfo(f"xl/worksheets/sheet{i}.xml", _FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w") as out:
                out.write(f'{_XML}<worksheet xmlns="{_MAIN}"><dimension ref="{sheet.dimension}"/>'
                          "<sheetData>".encode())
                buf: list[str] = []
                for row in sheet.rows:
                    buf.append(row)
                    if len(buf) >= 5000:
                        out.write("".join(buf).encode())
                        buf = []
                out.write("".join(buf).encode())
                out.write(b"</sheetData>")
                if sheet.merges:
                    out.write((f'<mergeCells count="{len(sheet.merges)}">'
                               + "".join(f'<mergeCell ref="{m}"/>' for m in sheet.merges)
                               + "</mergeCells>").encode())
                out.write(b"</worksheet>")
        part("xl/sharedStrings.xml", strings.xml())


def _header_rows(strings: _Strings, first_row: int, headers: list[str], style: int = 1) -> str:
    return f'<row r="{first_row}">' + "".join(
        strings.cell(f"{column_letter(i)}{first_row}", h, style) if h
        else f'<c r="{column_letter(i)}{first_row}" s="{style}"/>'
        for i, h in enumerate(headers, start=1)) + "</row>"


def generate_workbook(path: Path, rows: int, title: str = "Orders 2020-2024") -> Path:
    """Orders: ``rows`` x 10 columns (integers, text, decimals, currency, dates, booleans)
    under a merged title (A1:J1, ``title``: another title gives other bytes) and a two-row
    header whose top row has merged groups. ``cells`` = 10 x ``rows`` + 15."""
    strings = _Strings()

    def body() -> Iterator[str]:
        yield f'<row r="1">{strings.cell("A1", title, 5)}</row>'
        yield _header_rows(strings, 2, _HEADER_TOP)
        yield _header_rows(strings, 3, _HEADER)
        for k in range(rows):
            r = k + 4
            qty = k % 97 + 1
            price = (k % 400) / 4 + 0.99
            yield (f'<row r="{r}"><c r="A{r}"><v>{k + 1}</v></c><c r="B{r}"><v>{k % 7 + 1}</v></c>'
                   + strings.cell(f"C{r}", f"Customer {k % 5000:04d}")
                   + strings.cell(f"D{r}", _CITIES[k % len(_CITIES)])
                   + f'<c r="E{r}"><v>{qty}</v></c><c r="F{r}" s="4"><v>{price!r}</v></c>'
                   f'<c r="G{r}" s="2"><v>{round(qty * price, 2)!r}</v></c>'
                   f'<c r="H{r}" s="3"><v>{_BASE_DATE + k % 1500}</v></c>'
                   f'<c r="I{r}" t="b"><v>{k % 3 == 0:d}</v></c>'
                   + strings.cell(f"J{r}", f"C{k % 20000:06d}") + "</row>")

    _write_xlsx(path, [_Sheet("Orders", f"A1:J{rows + 3}", body(),
                              ["A1:J1", "A2:B2", "C2:D2", "E2:G2"])], strings)
    return path


def generate_wide(path: Path, rows: int, columns: int = 200) -> Path:
    """A wide sheet: a merged title, one header row and ``rows`` x ``columns`` values (an ID,
    a name, then decimals, currency, dates and integers in turn). ``cells`` =
    ``rows`` x ``columns`` + ``columns`` + 1."""
    strings = _Strings()
    last = column_letter(columns)
    headers = ["ID", "Name"] + [f"Metric {k:03d}" for k in range(3, columns + 1)]

    def body() -> Iterator[str]:
        yield f'<row r="1">{strings.cell("A1", "Plant measurements", 5)}</row>'
        yield _header_rows(strings, 2, headers)
        for k in range(rows):
            r = k + 3
            cells = [f'<c r="A{r}"><v>{k + 1}</v></c>',
                     strings.cell(f"B{r}", f"Line {k % 300:03d}")]
            for c in range(3, columns + 1):
                ref = f"{column_letter(c)}{r}"
                kind = c % 4
                if kind == 0:
                    cells.append(f'<c r="{ref}" s="4"><v>{((k * c) % 1000) / 8 + 0.5!r}</v></c>')
                elif kind == 1:
                    cells.append(f'<c r="{ref}" s="2"><v>{((k + c) % 500) * 1.25!r}</v></c>')
                elif kind == 2:
                    cells.append(f'<c r="{ref}" s="3"><v>{_BASE_DATE + (k + c) % 900}</v></c>')
                else:
                    cells.append(f'<c r="{ref}"><v>{(k * 7 + c) % 10_000}</v></c>')
            yield f'<row r="{r}">' + "".join(cells) + "</row>"

    _write_xlsx(path, [_Sheet("Wide", f"A1:{last}{rows + 2}", body(), [f"A1:{last}1"])],
                strings)
    return path


def generate_merged(path: Path, merged_ranges: int = 50_000) -> Path:
    """A table whose every row has a description merged over two columns (C:D), under a
    merged title (A1:F1) and a header with the same merge: ``merged_ranges`` merged ranges in
    all, ``merged_ranges`` - 2 data rows of 5 values."""
    strings = _Strings()
    rows = merged_ranges - 2

    def body() -> Iterator[str]:
        yield f'<row r="1">{strings.cell("A1", "Work orders", 5)}</row>'
        yield _header_rows(strings, 2, ["ID", "Site", "Description", "", "Hours", "Cost"])
        for k in range(rows):
            r = k + 3
            yield (f'<row r="{r}"><c r="A{r}"><v>{k + 1}</v></c>'
                   + strings.cell(f"B{r}", _CITIES[k % len(_CITIES)])
                   + strings.cell(f"C{r}", f"Inspection of unit {k % 2500:04d}")
                   + f'<c r="E{r}" s="4"><v>{(k % 40) / 4 + 0.25!r}</v></c>'
                   f'<c r="F{r}" s="2"><v>{(k % 40) * 31.5 + 9.99!r}</v></c></row>')

    merges = ["A1:F1", "C2:D2"] + [f"C{r}:D{r}" for r in range(3, rows + 3)]
    _write_xlsx(path, [_Sheet("Orders", f"A1:F{rows + 2}", body(), merges)], strings)
    return path


def generate_many_sheets(path: Path, sheets: int = 200, rows: int = 20) -> Path:
    """``sheets`` small sheets, each a title, a header and ``rows`` x 5 values (text, integer,
    decimal, currency, date). ``cells`` = ``sheets`` x (5 x ``rows`` + 6)."""
    strings = _Strings()

    def body(s: int) -> Iterator[str]:
        yield f'<row r="1">{strings.cell("A1", f"Store {s:03d} stock", 5)}</row>'
        yield _header_rows(strings, 2, ["Item", "Count", "Weight", "Price", "Checked"])
        for k in range(rows):
            r = k + 3
            yield (f'<row r="{r}">' + strings.cell(f"A{r}", f"Item {(s * 7 + k) % 400:03d}")
                   + f'<c r="B{r}"><v>{(s + k) % 50 + 1}</v></c>'
                   f'<c r="C{r}" s="4"><v>{(s * k % 90) / 4 + 0.5!r}</v></c>'
                   f'<c r="D{r}" s="2"><v>{(s + 3 * k) % 70 * 1.5 + 0.99!r}</v></c>'
                   f'<c r="E{r}" s="3"><v>{_BASE_DATE + (s + k) % 700}</v></c></row>')

    _write_xlsx(path, [_Sheet(f"Store {s:03d}", f"A1:E{rows + 2}", body(s), [])
                       for s in range(1, sheets + 1)], strings)
    return path


@dataclass(frozen=True)
class WorkbookSpec:
    """A benchmark workbook: ``make(path)`` writes it; it holds ``cells`` non-empty cells
    (what python-calamine counts) and ``data_rows`` table data rows (the records expected)."""

    name: str
    description: str
    make: Callable[[Path], Path]
    cells: int
    data_rows: int


def _orders(rows: int) -> WorkbookSpec:
    return WorkbookSpec(f"orders_{10 * rows + 15}", f"{rows:,} rows x 10 columns",
                        lambda path: generate_workbook(path, rows), 10 * rows + 15, rows)


#: The generated workbooks by ``--generate`` name.
GENERATED: dict[str, WorkbookSpec] = {
    "10k": _orders(1_000),
    "50k": _orders(5_000),
    "100k": _orders(10_000),
    "200k": _orders(20_000),
    "1m": _orders(100_000),
    "wide": WorkbookSpec("wide_200cols", "500 rows x 200 columns",
                         lambda path: generate_wide(path, 500), 500 * 200 + 201, 500),
    "merged": WorkbookSpec("merged_50000", "50,000 merged ranges, 49,998 rows x 5",
                           generate_merged, 5 * 49_998 + 6, 49_998),
    "sheets": WorkbookSpec("sheets_200", "200 sheets of 20 rows x 5",
                           generate_many_sheets, 200 * 106, 200 * 20),
}
