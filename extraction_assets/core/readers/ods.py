"""OpenDocument spreadsheets (``.ods``, flat ``.fods``): merges, hidden rows and columns and typed
values from ``content.xml``, encryption detected, a flat file repackaged."""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.errors import (
    CorruptWorkbookError,
    HostileContentError,
    LimitExceededError,
    one_line,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import CellStyle, Issue, ParsedSheet, SheetInfo, Workbook
from extraction_assets.core.ooxml.xml import syntax_error_message
from extraction_assets.core.package import PackageReader
from extraction_assets.core.readers.common import (
    CellColumns,
    DateStyles,
    by_value_workbook,
    number_text,
    serial,
    styles_unavailable,
)
from extraction_assets.core.sniff import Sniffed


def open_ods_content(content_xml: bytes, sniffed: Sniffed, limits: Limits,
                      why: str) -> Workbook:
    """Read an ODS ``content.xml`` ourselves (calamine refused the file)."""
    styles = [CellStyle()]
    style_for = DateStyles(styles)

    facts = ods_sheet_facts(content_xml, limits, values=True, date_style=style_for)
    issues = [Issue("parsed_sheets", None, None, "info", "calamine_failed",
                    f"python-calamine could not read the {sniffed.format} file ({why}); "
                    "content.xml read directly")]
    styles_unavailable(issues, f"the ODS content reader ({sniffed.format})",
                 "number formats (dates get yyyy-mm-dd, other numbers General), fonts, fills, "
                 "borders, alignment, sheet visibility, formulas (cached values only), rich text "
                 "and comments")
    sheets = [SheetInfo(index=i + 1, name=name, visibility="visible", kind="worksheet",
                        part=None) for i, name in enumerate(facts)]

    def load(i: int) -> ParsedSheet:
        f = facts[sheets[i].name]
        return ParsedSheet(sheets[i], cells=f["cells"].table(), merged_ranges=f["merged"],
                           hidden_rows=f["hidden_rows"], hidden_columns=f["hidden_columns"])

    return by_value_workbook(sheets, styles, load, limits, issues, has_macros=sniffed.has_macros)


ERROR_RE = re.compile(r"^#(NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|GETTING_DATA)$")


def zip_member(data: bytes, name: str, limits: Limits) -> bytes | None:
    try:
        with PackageReader(data, limits) as reader:
            return reader.read(name) if reader.has(name) else None
    except (CorruptWorkbookError, HostileContentError):
        return None


def ods_encrypted(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            manifest = zf.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in \
                zf.namelist() else b""
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return False
    return b"encryption-data" in manifest[:1_000_000]


def check_xml_prolog(data: bytes) -> None:
    head = data[:65_536]
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise HostileContentError("the flat ODS file declares a DTD; refused")


_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def fods_to_ods(data: bytes) -> tuple[bytes, bytes]:
    """Repackage a flat ODS (one ``office:document`` XML) as an ODS zip (``mimetype``,
    ``content.xml``, ``styles.xml``, manifest) so calamine can read it; returns the zip and its
    ``content.xml``."""
    from lxml import etree

    check_xml_prolog(data)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise CorruptWorkbookError(
            f"the flat ODS XML is malformed: {one_line(syntax_error_message(exc))}") from None
    o = "{%s}" % _OFFICE
    content = etree.Element(o + "document-content", nsmap=root.nsmap)
    styles = etree.Element(o + "document-styles", nsmap=root.nsmap)
    for key, value in root.attrib.items():
        if not key.endswith("mimetype"):
            content.set(key, value)
            styles.set(key, value)
    for child in root:
        if not isinstance(child.tag, str):
            continue
        local = child.tag.rsplit("}", 1)[-1]
        if local in ("scripts", "font-face-decls", "automatic-styles", "body"):
            content.append(child)
        elif local in ("styles", "master-styles"):
            styles.append(child)
    content_xml = etree.tostring(content, xml_declaration=True, encoding="UTF-8")
    manifest = (b'<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest='
                b'"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                b'<manifest:file-entry manifest:full-path="/" manifest:media-type='
                b'"application/vnd.oasis.opendocument.spreadsheet"/>'
                b'<manifest:file-entry manifest:full-path="content.xml" '
                b'manifest:media-type="text/xml"/><manifest:file-entry manifest:full-path='
                b'"styles.xml" manifest:media-type="text/xml"/></manifest:manifest>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"),
                    b"application/vnd.oasis.opendocument.spreadsheet")
        zf.writestr("content.xml", content_xml, zipfile.ZIP_DEFLATED)
        zf.writestr("styles.xml", etree.tostring(styles, xml_declaration=True, encoding="UTF-8"),
                    zipfile.ZIP_DEFLATED)
        zf.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
    return buf.getvalue(), content_xml


def ods_sheet_facts(content_xml: bytes, limits: Limits, values: bool = False,
                     date_style=None) -> dict[str, dict]:
    """Merged ranges (``number-columns-spanned``/``number-rows-spanned``) and hidden rows and
    columns (``table:visibility="collapsed"``) of each table of an ODS ``content.xml``
    (OpenDocument 1.2 Part 1, §9.1), in table order. Repeated rows/columns are counted, not
    expanded. With ``values``, also the cells (``cells``: a :class:`CellColumns`) read from
    ``office:value-type`` and friends (§19.385); ``date_style(kind)`` gives the style index of
    a date kind."""
    from lxml import etree

    t, o, x = "{%s}" % _TABLE, "{%s}" % _OFFICE, "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
    facts: dict[str, dict] = {}
    current = None
    row = col = colpos = 0
    budget = limits.max_cells
    try:
        for event, el in etree.iterparse(io.BytesIO(content_xml), events=("start", "end"),
                                         resolve_entities=False, no_network=True,
                                         load_dtd=False, huge_tree=False):
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag == t + "table":
                    current = {"merged": [], "hidden_rows": [], "hidden_columns": [],
                               "cells": CellColumns(budget) if values else None}
                    facts[el.get(t + "name") or f"Sheet{len(facts) + 1}"] = current
                    row = col = colpos = 0
                elif current is None:
                    continue
                elif tag == t + "table-column":
                    n = min(int(el.get(t + "number-columns-repeated") or 1), 16_384)
                    if el.get(t + "visibility") == "collapsed" and colpos + n <= 16_384:
                        current["hidden_columns"].extend(range(colpos + 1, colpos + n + 1))
                    colpos += n
                elif tag == t + "table-row":
                    col = 0
                    reps = int(el.get(t + "number-rows-repeated") or 1)
                    if el.get(t + "visibility") == "collapsed" and reps < 10_000:
                        current["hidden_rows"].extend(range(row + 1, row + reps + 1))
                    el.set("_reps", str(reps))
                elif tag in (t + "table-cell", t + "covered-table-cell"):
                    span_c = int(el.get(t + "number-columns-spanned") or 1)
                    span_r = int(el.get(t + "number-rows-spanned") or 1)
                    if tag == t + "table-cell" and (span_c > 1 or span_r > 1):
                        current["merged"].append(range_ref(row + 1, col + 1, row + span_r,
                                                           col + span_c))
                        if len(current["merged"]) > limits.max_merged_ranges:
                            raise LimitExceededError("an ODS table has more than "
                                                     f"{limits.max_merged_ranges} merged ranges")
                    el.set("_col", str(col))
                    el.set("_row", str(row))
                    col += int(el.get(t + "number-columns-repeated") or 1)
            elif current is not None and tag in (t + "table-cell", t + "covered-table-cell"):
                if values and (el.get(o + "value-type") or len(el)):
                    _ods_cell(el, current["cells"], o, t, x, date_style)
                el.clear()
            elif tag == t + "table-row":
                row += int(el.get("_reps") or 1)
                el.clear()
            elif tag == t + "table":
                if current is not None and current["cells"] is not None:
                    budget -= len(current["cells"].cols["row"])
                current = None
                el.clear()
    except (etree.XMLSyntaxError, ValueError):
        if values:
            raise CorruptWorkbookError("the ODS content.xml is malformed") from None
    return facts


_DURATION_RE = re.compile(r"^(-)?P(?:(\d+)D)?T?(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$")


def _ods_cell(el, cells: "CellColumns", o: str, t: str, x: str, date_style) -> None:
    """Add one ODS cell (repeated ``number-columns-repeated`` times, at most 1,024 for a
    non-empty value) to ``cells``."""
    row = int(el.get("_row")) + 1
    col = int(el.get("_col")) + 1
    kind = el.get(o + "value-type")
    style = 0
    if kind in ("float", "percentage", "currency"):
        dtype, value = "n", el.get(o + "value")
        try:
            value = number_text(float(value))
        except (TypeError, ValueError):
            dtype, value = "s", _ods_text(el, x)
    elif kind == "boolean":
        dtype, value = "b", "1" if el.get(o + "boolean-value") == "true" else "0"
    elif kind == "date":
        text = el.get(o + "date-value") or ""
        try:
            number, dkind = serial(dt.datetime.fromisoformat(text[:26]))
            dtype, value, style = "n", number_text(number), date_style(dkind)
        except ValueError:
            dtype, value = "s", _ods_text(el, x) or text
    elif kind == "time":
        m = _DURATION_RE.match(el.get(o + "time-value") or "")
        if m:
            days = (int(m.group(2) or 0) + int(m.group(3) or 0) / 24 + int(m.group(4) or 0)
                    / 1440 + float(m.group(5) or 0) / 86400)
            days = -days if m.group(1) else days
            dtype, value = "n", number_text(days)
            style = date_style("time" if 0 <= days < 1 else "duration")
        else:
            dtype, value = "s", _ods_text(el, x)
    else:
        dtype, value = "s", _ods_text(el, x)
    if value in (None, ""):
        return
    reps = min(int(el.get(t + "number-columns-repeated") or 1), 1024)
    for i in range(reps):
        cells.add(row, col + i, dtype, value, style)


def _ods_text(el, x: str) -> str:
    """Text of an ODS cell: its ``text:p`` paragraphs joined by newlines (``text:s`` spaces,
    ``text:tab``, ``text:line-break`` honoured; cell annotations are not cell text)."""
    return "\n".join(_para_text(p, x) for p in el
                     if isinstance(p.tag, str) and p.tag in (x + "p", x + "h"))


def _para_text(node, x: str) -> str:
    out = [node.text or ""]
    for child in node:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == x + "s":
            try:
                out.append(" " * min(int(child.get(x + "c") or 1), 1024))
            except ValueError:
                out.append(" ")
        elif tag == x + "tab":
            out.append("\t")
        elif tag == x + "line-break":
            out.append("\n")
        elif tag and not tag.endswith("}annotation"):
            out.append(_para_text(child, x))
        out.append(child.tail or "")
    return "".join(out)
