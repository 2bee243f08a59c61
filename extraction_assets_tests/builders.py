"""Fixture builders shared by the core tests: real xlsx bytes, written part by part.

:func:`xlsx_bytes` assembles a SpreadsheetML package from raw XML strings with :mod:`zipfile`,
for what openpyxl cannot write (shared formulas, inline strings, phonetic runs, a DTD, a
relationship to a missing part, malformed XML, formulas without a cached value...).
:func:`save_openpyxl` saves an openpyxl workbook to a file and returns its bytes.
"""

from __future__ import annotations

import datetime as dt
import io
import signal
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
REL_BASE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
CT_BASE = "application/vnd.openxmlformats-officedocument.spreadsheetml"

#: A stylesheet whose ``cellXfs`` are: 0 General, 1 ``0.00`` (built-in 2), 2 ``0000000`` (custom
#: 164), 3 built-in 14 (no ``numFmt`` element: the reader must know it), 4 ``yyyy-mm-dd`` (custom 165).
STYLES_XML = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="{NS_MAIN}">
<numFmts count="2"><numFmt numFmtId="164" formatCode="0000000"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd"/></numFmts>
<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>
<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
<cellXfs count="5"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>\
<xf numFmtId="2" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="14" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>
</styleSheet>"""


@dataclass
class Sheet:
    """One sheet of a hand-built package.

    Attributes:
        name: tab name.
        xml: the worksheet part's text; ``None`` writes the relationship but not the part.
        state: ``hidden`` / ``veryHidden`` or ``None`` (visible).
    """

    name: str
    xml: str | bytes | None
    state: str | None = None


def worksheet(rows: str = "", *, dimension: str | None = None, merges: list[str] = (),
              prologue: str = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n') -> str:
    """A worksheet part whose ``<sheetData>`` holds ``rows`` (raw ``<row>`` XML)."""
    dim = f'<dimension ref="{dimension}"/>' if dimension else ""
    merge = (f'<mergeCells count="{len(merges)}">'
             + "".join(f'<mergeCell ref="{m}"/>' for m in merges) + "</mergeCells>") if merges else ""
    return (f'{prologue}<worksheet xmlns="{NS_MAIN}" xmlns:r="{NS_R}">{dim}'
            f"<sheetData>{rows}</sheetData>{merge}</worksheet>")


def sst(*items: str) -> str:
    """A sharedStrings part; each item is the raw inner XML of one ``<si>``."""
    body = "".join(f"<si>{item}</si>" for item in items)
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<sst xmlns="{NS_MAIN}" count="{len(items)}" uniqueCount="{len(items)}">{body}</sst>')


def t(text: str) -> str:
    """A plain ``<t>`` element holding ``text`` (escaped, spaces preserved)."""
    return f'<t xml:space="preserve">{escape(text)}</t>'


def xlsx_bytes(sheets: list[Sheet], *, shared_strings: str | None = None,
               styles: str | None = STYLES_XML, workbook_pr: str = "",
               omit: tuple[str, ...] = (), extra_parts: dict[str, str | bytes] | None = None) -> bytes:
    """Assemble an xlsx package from raw parts and return its bytes.

    Args:
        sheets: the sheets, in workbook order (parts ``xl/worksheets/sheetN.xml``).
        shared_strings: the ``xl/sharedStrings.xml`` text, or ``None`` for no table.
        styles: the ``xl/styles.xml`` text, or ``None`` for no stylesheet.
        workbook_pr: attributes of ``<workbookPr>``, e.g. ``date1904="1"``.
        omit: part names to leave out of the zip (their relationships stay).
        extra_parts: more parts to add verbatim (name -> content).
    """
    parts: dict[str, str | bytes] = {}
    overrides = [("/xl/workbook.xml", f"{CT_BASE}.sheet.main+xml")]
    rels = []
    sheet_els = []
    for i, sheet in enumerate(sheets, start=1):
        rels.append(f'<Relationship Id="rId{i}" Type="{REL_BASE}/worksheet" '
                    f'Target="worksheets/sheet{i}.xml"/>')
        state = f' state="{sheet.state}"' if sheet.state else ""
        sheet_els.append(f'<sheet name="{escape(sheet.name)}" sheetId="{i}"{state} r:id="rId{i}"/>')
        if sheet.xml is not None:
            parts[f"xl/worksheets/sheet{i}.xml"] = sheet.xml
            overrides.append((f"/xl/worksheets/sheet{i}.xml", f"{CT_BASE}.worksheet+xml"))
    n = len(sheets)
    if shared_strings is not None:
        n += 1
        rels.append(f'<Relationship Id="rId{n}" Type="{REL_BASE}/sharedStrings" Target="sharedStrings.xml"/>')
        parts["xl/sharedStrings.xml"] = shared_strings
        overrides.append(("/xl/sharedStrings.xml", f"{CT_BASE}.sharedStrings+xml"))
    if styles is not None:
        n += 1
        rels.append(f'<Relationship Id="rId{n}" Type="{REL_BASE}/styles" Target="styles.xml"/>')
        parts["xl/styles.xml"] = styles
        overrides.append(("/xl/styles.xml", f"{CT_BASE}.styles+xml"))
    parts["xl/workbook.xml"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<workbook xmlns="{NS_MAIN}" xmlns:r="{NS_R}"><workbookPr {workbook_pr}/>'
        f'<sheets>{"".join(sheet_els)}</sheets></workbook>')
    parts["xl/_rels/workbook.xml.rels"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<Relationships xmlns="{NS_PKG_REL}">{"".join(rels)}</Relationships>')
    parts["_rels/.rels"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<Relationships xmlns="{NS_PKG_REL}"><Relationship Id="rId1" '
        f'Type="{REL_BASE}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
    parts["[Content_Types].xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        + "".join(f'<Override PartName="{p}" ContentType="{c}"/>' for p, c in overrides)
        + "</Types>")
    parts.update(extra_parts or {})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ["[Content_Types].xml", "_rels/.rels", *sorted(p for p in parts if p not in (
                "[Content_Types].xml", "_rels/.rels"))]:
            if name in omit:
                continue
            content = parts[name]
            zf.writestr(name, content.encode("utf-8") if isinstance(content, str) else content)
    return buf.getvalue()


def put_rows(ws, rows: list[list], start_row: int = 1, start_col: int = 1) -> None:
    """Write ``rows`` (lists of values; ``None`` leaves a cell empty) into the openpyxl
    worksheet ``ws`` from the 1-based ``start_row`` / ``start_col``."""
    for r, row in enumerate(rows, start=start_row):
        for c, value in enumerate(row, start=start_col):
            if value is not None:
                ws.cell(r, c, value)


def save_openpyxl(wb, path: Path) -> bytes:
    """Save an openpyxl workbook to ``path`` and return the file's bytes."""
    wb.save(path)
    return Path(path).read_bytes()


@contextmanager
def deadline(seconds: int, name: str):
    """Raise ``TimeoutError`` in the main thread when the block runs longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"{name} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- OpenDocument --------------------------------------------------------------------------------
_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
       'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
       'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')


def _ods_body(tables: dict[str, list[list]], merge_first_row: bool = False) -> str:
    out = []
    for name, rows in tables.items():
        out.append(f'<table:table table:name="{name}">')
        for r, row in enumerate(rows):
            out.append("<table:table-row>")
            for c, value in enumerate(row):
                span = (' table:number-columns-spanned="2"'
                        if merge_first_row and r == 0 and c == 0 else "")
                if isinstance(value, bool):
                    out.append(f'<table:table-cell office:value-type="boolean" '
                               f'office:boolean-value="{str(value).lower()}"{span}>'
                               f'<text:p>{value}</text:p></table:table-cell>')
                elif isinstance(value, (int, float)):
                    out.append(f'<table:table-cell office:value-type="float" '
                               f'office:value="{value}"{span}><text:p>{value}</text:p>'
                               "</table:table-cell>")
                elif isinstance(value, dt.date):
                    out.append(f'<table:table-cell office:value-type="date" '
                               f'office:date-value="{value.isoformat()}"{span}>'
                               f"<text:p>{value}</text:p></table:table-cell>")
                elif value is None:
                    out.append("<table:covered-table-cell/>")
                else:
                    out.append(f'<table:table-cell office:value-type="string"{span}>'
                               f"<text:p>{value}</text:p></table:table-cell>")
            out.append("</table:table-row>")
        out.append("</table:table>")
    return "".join(out)


def ods_bytes(tables: dict[str, list[list]], merge_first_row: bool = False) -> bytes:
    """An OpenDocument spreadsheet (zip) with one table per entry of ``tables`` (rows of
    str, int, float, bool, date or ``None`` for a covered cell); ``merge_first_row`` spans the
    first cell of each first row over two columns."""
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS} '
               'office:version="1.2"><office:body><office:spreadsheet>'
               f"{_ods_body(tables, merge_first_row)}</office:spreadsheet></office:body>"
               "</office:document-content>")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        zf.writestr("META-INF/manifest.xml",
                    '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
                    '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry '
                    'manifest:full-path="/" manifest:media-type="application/vnd.oasis.'
                    'opendocument.spreadsheet"/></manifest:manifest>', zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def fods_bytes(tables: dict[str, list[list]], merge_first_row: bool = False) -> bytes:
    """The same tables as a flat OpenDocument spreadsheet (one XML document)."""
    return (f'<?xml version="1.0" encoding="UTF-8"?><office:document {_NS} office:version="1.2" '
            'office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body>'
            f"<office:spreadsheet>{_ods_body(tables, merge_first_row)}</office:spreadsheet>"
            "</office:body></office:document>").encode()
