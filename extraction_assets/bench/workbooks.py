"""Benchmark: parse + normalize against python-calamine on the same files, in the same process.

Run ``python -m extraction_assets.bench [--cells 1000000] [--repeat 3] [--json OUT] [FILE...]``.
It generates a deterministic workbook (rows x 10 columns of text, integers, decimals, currency,
dates and booleans, with a merged title and a two-row merged header, strings in the shared
string table as Excel writes them) unless files are given, then for each file measures, in
alternation and ``--repeat`` times:

* **calamine**: python-calamine reading every value of every sheet (the reference: a Rust
  reader that does no styling, our proxy for the physical limit);
* **ours**: :func:`~extraction_assets.core.ooxml.open_workbook` + ``iter_sheets`` +
  :func:`~extraction_assets.core.normalize.normalize_sheet` (display text, colours, merges).

It prints the median wall seconds of each, cells per second, the ratio ours / calamine, and the
peak resident memory (VmHWM, reset before each measurement through ``/proc/self/clear_refs``)
in MB. Medians, because this machine is noisy. Needs the ``bench`` extra (python-calamine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import io
import json
import statistics
import sys
import time
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

from .core.normalize import normalize_sheet
from .core.ooxml import open_workbook

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_CITIES = ["Tokyo", "Osaka", "Paris", "Lyon", "Berlin", "Madrid", "Nagoya", "Sapporo"]
_HEADER_TOP = ["Order", "", "Customer", "", "Amounts", "", "", "Dates", "", ""]
_HEADER = ["ID", "Line", "Name", "City", "Qty", "Unit price", "Amount", "Ordered", "Paid",
           "Code"]

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)
_WORKBOOK = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    '<sheets><sheet name="Orders" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
_WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
    '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>'
    "</Relationships>"
)
# cellXfs: 0 default, 1 bold header with fill, 2 currency, 3 date, 4 decimal, 5 bold 14pt title
_STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
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


def _col(i: int) -> str:
    return "ABCDEFGHIJ"[i]


def generate_workbook(path: Path, rows: int) -> Path:
    """Write a deterministic ``rows`` x 10 workbook (plus a title row and a two-row merged
    header) to ``path`` as Excel lays it out: strings in ``xl/sharedStrings.xml``, cells with
    ``r``/``s``/``t`` attributes. Same ``rows`` -> byte-identical file."""
    strings: dict[str, int] = {}

    def sst(text: str) -> int:
        return strings.setdefault(text, len(strings))

    def text_cell(ref: str, text: str, style: int = 0) -> str:
        s = f' s="{style}"' if style else ""
        return f'<c r="{ref}"{s} t="s"><v>{sst(text)}</v></c>'

    base = dt.date(2020, 1, 1).toordinal() - dt.date(1899, 12, 30).toordinal()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        def part(name: str, data: str) -> None:
            zf.writestr(zipfile.ZipInfo(name, _FIXED_TIME), data, zipfile.ZIP_DEFLATED)

        part("[Content_Types].xml", _CONTENT_TYPES)
        part("_rels/.rels", _ROOT_RELS)
        part("xl/workbook.xml", _WORKBOOK)
        part("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS)
        part("xl/styles.xml", _STYLES)
        info = zipfile.ZipInfo("xl/worksheets/sheet1.xml", _FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as out:
            last = rows + 3
            out.write((
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                f'<dimension ref="A1:J{last}"/><sheetData>'
                f'<row r="1">{text_cell("A1", "Orders 2020-2024", 5)}</row>'
                '<row r="2">' + "".join(text_cell(f"{_col(i)}2", h, 1) if h else
                                        f'<c r="{_col(i)}2" s="1"/>'
                                        for i, h in enumerate(_HEADER_TOP)) + "</row>"
                '<row r="3">' + "".join(text_cell(f"{_col(i)}3", h, 1)
                                        for i, h in enumerate(_HEADER)) + "</row>"
            ).encode())
            buf = []
            for k in range(rows):
                r = k + 4
                qty = k % 97 + 1
                price = (k % 400) / 4 + 0.99
                buf.append(
                    f'<row r="{r}"><c r="A{r}"><v>{k + 1}</v></c><c r="B{r}"><v>{k % 7 + 1}</v></c>'
                    + text_cell(f"C{r}", f"Customer {k % 5000:04d}")
                    + text_cell(f"D{r}", _CITIES[k % len(_CITIES)])
                    + f'<c r="E{r}"><v>{qty}</v></c><c r="F{r}" s="4"><v>{price!r}</v></c>'
                    f'<c r="G{r}" s="2"><v>{round(qty * price, 2)!r}</v></c>'
                    f'<c r="H{r}" s="3"><v>{base + k % 1500}</v></c>'
                    f'<c r="I{r}" t="b"><v>{k % 3 == 0:d}</v></c>'
                    + text_cell(f"J{r}", f"C{k % 20000:06d}") + "</row>")
                if len(buf) >= 5000:
                    out.write("".join(buf).encode())
                    buf = []
            out.write("".join(buf).encode())
            out.write(b'</sheetData><mergeCells count="4"><mergeCell ref="A1:J1"/>'
                      b'<mergeCell ref="A2:B2"/><mergeCell ref="C2:D2"/><mergeCell ref="E2:G2"/>'
                      b"</mergeCells></worksheet>")
        items = "".join(f"<si><t>{escape(s)}</t></si>" for s in strings)
        part("xl/sharedStrings.xml",
             '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
             '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
             f'count="{len(strings)}" uniqueCount="{len(strings)}">{items}</sst>')
    return path


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_calamine(data: bytes) -> int:
    """Read every value of every sheet with python-calamine; returns the non-empty cell count."""
    from python_calamine import CalamineWorkbook

    workbook = CalamineWorkbook.from_filelike(io.BytesIO(data))
    cells = 0
    for name in workbook.sheet_names:
        for row in workbook.get_sheet_by_name(name).to_python():
            cells += sum(1 for v in row if v != "")
    return cells


def run_ours(data: bytes) -> int:
    """Parse and normalize every sheet; returns the StyledGrid cell count."""
    workbook = open_workbook(data)
    try:
        context = workbook.style_context
        return sum(len(normalize_sheet(sheet, context)) for sheet in workbook.iter_sheets())
    finally:
        workbook.close()


def _measure(fn, data: bytes) -> tuple[float, float | None, int]:
    gc.collect()
    _reset_peak()
    start = time.perf_counter()
    cells = fn(data)
    seconds = time.perf_counter() - start
    return seconds, _peak_mb(), cells


def bench_file(path: Path, repeat: int) -> dict:
    """Median seconds, cells/s and peak MB of calamine and ours on one file, and the ratio."""
    data = path.read_bytes()
    runs: dict[str, list] = {"calamine": [], "ours": []}
    for _ in range(repeat):
        for name, fn in (("calamine", run_calamine), ("ours", run_ours)):
            runs[name].append(_measure(fn, data))
    out: dict = {"file": str(path), "size_bytes": len(data)}
    for name, results in runs.items():
        seconds = statistics.median(r[0] for r in results)
        peaks = [r[1] for r in results if r[1] is not None]
        out[name] = {"seconds": round(seconds, 3), "cells": results[0][2],
                     "cells_per_second": round(results[0][2] / seconds) if seconds else None,
                     "peak_rss_mb": round(max(peaks)) if peaks else None}
    out["ratio_ours_to_calamine"] = round(out["ours"]["seconds"] / out["calamine"]["seconds"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; prints a table and optionally writes JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="workbooks to measure")
    parser.add_argument("--cells", type=int, default=1_000_000,
                        help="cells of the generated workbook (rows x 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each reader (median)")
    parser.add_argument("--workdir", type=Path, default=Path("data/bench"),
                        help="where the generated workbook is written")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    files = list(args.files)
    if not files:
        args.workdir.mkdir(parents=True, exist_ok=True)
        target = args.workdir / f"orders_{args.cells}.xlsx"
        if not target.exists():
            print(f"generating {target} ...", file=sys.stderr)
            generate_workbook(target, max(args.cells // 10, 1))
        files = [target]
    results = []
    print(f"{'file':40} {'calamine s':>10} {'ours s':>8} {'ratio':>6} {'cells/s':>10} {'peak MB':>8}")
    for path in files:
        result = bench_file(path, args.repeat)
        results.append(result)
        print(f"{path.name[:40]:40} {result['calamine']['seconds']:10.2f} "
              f"{result['ours']['seconds']:8.2f} {result['ratio_ours_to_calamine']:6.2f} "
              f"{result['ours']['cells_per_second'] or 0:10d} {result['ours']['peak_rss_mb'] or 0:8}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
