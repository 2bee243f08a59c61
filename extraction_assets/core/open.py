"""Opening a workbook: sniff the container, decrypt it, pick the reader (OOXML, or one of
:mod:`.readers`) and open it (:func:`open_workbook`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    ExtractionError,
    LimitExceededError,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue, SheetInfo, Workbook
from extraction_assets.core.ooxml.objects import read_workbook_objects
from extraction_assets.core.ooxml.rels import parse_part, read_rels, rel_attr
from extraction_assets.core.ooxml.styles import read_styles, read_theme_colors
from extraction_assets.core.ooxml.workbook import REL_OFFICE_DOCUMENT, SHEET_KINDS, OoxmlWorkbook
from extraction_assets.core.ooxml.xml import local
from extraction_assets.core.package import PackageReader
from extraction_assets.core.sniff import (
    DOCUMENT_FORMATS,
    LEGACY_FORMATS,
    require_spreadsheet,
    sniff,
)


def open_workbook(data: bytes, limits: Limits | None = None, *,
                  filename: str | None = None, passwords: Sequence[str] = (),
                  conversions: Path | None = None) -> Workbook:
    """Open a workbook from its bytes and read its workbook-level parts.

    OOXML (``xlsx``/``xlsm``) is read by :mod:`.ooxml`; ``xls``, ``xlsb``, ``ods`` and ``fods``
    are converted to xlsx by LibreOffice when it is installed (and then read the same way),
    else read by value by :mod:`.readers`, as ``csv``/``tsv`` are; documents (``docx``,
    ``pptx``, ``pdf``, ``html``, ``md``) are read by :mod:`.documents`, their sections, slides
    or pages as sheets; every route returns the same shapes. ``filename`` only names the sheet of a CSV (its stem; ``Sheet1`` without).
    A password-protected file is decrypted first with the first of ``passwords`` that opens it.
    ``conversions`` is a folder where LibreOffice's conversions are kept, so that the assets
    that open one file convert it once (see
    :func:`~extraction_assets.core.readers.libreoffice.convert_to_xlsx`).

    Cells are not read here: iterate :meth:`~extraction_assets.core.model.Workbook.iter_sheets`. Close the result with
    :meth:`~extraction_assets.core.model.Workbook.close` when done.

    Raises:
        NotASpreadsheetError, EncryptedWorkbookError: see
            :func:`~extraction_assets.core.sniff.require_spreadsheet` (encrypted: no
            password configured, or none opens the file).
        CorruptWorkbookError: missing ``xl/workbook.xml``, malformed workbook-level XML.
        HostileContentError: a part declares a DTD.
        LimitExceededError: the package or the sheet list exceeds ``limits``.
    """
    limits = limits or Limits()
    data = decrypted(data, passwords)
    sniffed = require_spreadsheet(data)
    if sniffed.format in DOCUMENT_FORMATS:
        # imported here: Docling and PDFium are loaded only for documents
        from extraction_assets.core.documents import open_document

        return open_document(data, sniffed, limits, passwords)
    if sniffed.format in LEGACY_FORMATS:
        return _open_legacy(data, sniffed, limits, filename, conversions)
    return _open_ooxml(data, sniffed.has_macros, limits)


def _open_ooxml(data: bytes, has_macros: bool, limits: Limits) -> Workbook:
    reader = PackageReader(data, limits)
    try:
        return _open(reader, has_macros, limits)
    except BaseException:
        reader.close()
        raise


def _open_legacy(data: bytes, sniffed, limits: Limits, filename: str | None,
                 conversions: Path | None) -> Workbook:
    """A non-OOXML workbook: converted to xlsx by LibreOffice when it is installed and the
    format converts (the OOXML reader then reads the result; the conversion is an ``info``
    issue ``converted``), else read by value (a failed conversion is a ``warning``)."""
    # imported here: the readers of the other formats load xlrd and calamine, which an OOXML
    # ingest never needs
    from extraction_assets.core.readers import check_legacy, read_by_value
    from extraction_assets.core.readers.libreoffice import SUFFIX, convert_to_xlsx, find_soffice

    check_legacy(data, sniffed, limits)
    soffice = find_soffice() if sniffed.format in SUFFIX else None
    fallback = None
    if soffice:
        try:
            converted, version, seconds = convert_to_xlsx(data, sniffed.format, soffice,
                                                          keep_in=conversions,
                                                          max_bytes=limits.max_total_bytes)
        except ExtractionError as exc:
            fallback = Issue("parsed_sheets", None, None, "warning", "conversion_failed",
                             f"LibreOffice could not convert the {sniffed.format} file "
                             f"({exc.message}); read by value instead")
        else:
            wb = _open_ooxml(converted, sniffed.has_macros, limits)
            wb.conversion = {"tool": "LibreOffice", "version": version,
                             "seconds": round(seconds, 3)}
            wb.issues.insert(0, Issue(
                "parsed_sheets", None, None, "info", "converted",
                f"{sniffed.format} ({sniffed.label}) converted to xlsx by LibreOffice {version} "
                f"in {seconds:.2f} s; read with the full OOXML reader"))
            return wb
    wb = read_by_value(data, sniffed, limits, filename)
    if fallback:
        wb.issues.insert(0, fallback)
    return wb


def decrypted(data: bytes, passwords: Sequence[str]) -> bytes:
    """``data`` itself, or its decryption when it is an encrypted workbook and ``passwords``
    are configured (see :func:`~extraction_assets.core.crypto.decrypt`)."""
    if not passwords:
        return data
    sniffed = sniff(data)
    if sniffed.format == "encrypted-ooxml" or (sniffed.format == "xls" and sniffed.encrypted):
        from extraction_assets.core.crypto import decrypt

        return decrypt(data, passwords)
    return data


def _open(reader: PackageReader, has_macros: bool, limits: Limits) -> Workbook:
    if not reader.has("[Content_Types].xml"):
        raise CorruptWorkbookError("the package has no [Content_Types].xml part")
    workbook_part = None
    for rtype, target in read_rels(reader, "").values() if reader.has("_rels/.rels") else []:
        if rtype == REL_OFFICE_DOCUMENT and not target.startswith("external:"):
            workbook_part = target
    if workbook_part is None or not reader.has(workbook_part):
        workbook_part = "xl/workbook.xml"
    if not reader.has(workbook_part):
        raise CorruptWorkbookError("the package has no workbook part (xl/workbook.xml)")
    root = parse_part(reader, workbook_part)
    rels = read_rels(reader, workbook_part)
    by_type: dict[str, str] = {}
    for rtype, target in rels.values():
        by_type.setdefault(rtype, target)
    issues: list[Issue] = []
    date1904 = False
    sheets: list[SheetInfo] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = local(el.tag)
        if tag == "workbookPr" and "date1904" in el.attrib:  # not x15:workbookPr's
            date1904 = el.get("date1904") in ("1", "true")
        elif tag == "sheet":
            if len(sheets) >= limits.max_sheets:
                raise LimitExceededError(f"workbook has more than {limits.max_sheets} sheets")
            rid = rel_attr(el)
            rtype, target = rels.get(rid or "", ("", None))
            kind = SHEET_KINDS.get(rtype, "worksheet" if target else "unknown")
            name = el.get("name") or f"Sheet{len(sheets) + 1}"
            if target is None:
                issues.append(Issue("parsed_sheets", name, None, "warning", "missing_sheet_part",
                                    f"sheet {name!r} has no relationship to a sheet part"))
            sheets.append(SheetInfo(
                index=len(sheets) + 1, name=name, visibility=el.get("state") or "visible",
                kind=kind, part=target if target and not target.startswith("external:") else None,
            ))
    styles, indexed = read_styles(reader, by_type.get("styles"), issues)
    objects = read_workbook_objects(reader, workbook_part, root, issues=issues)
    return OoxmlWorkbook(
        reader=reader, sheets=sheets, styles=styles, objects=objects,
        shared_strings_part=by_type.get("sharedStrings"),
        date1904=date1904, theme_colors=read_theme_colors(reader, by_type.get("theme")),
        indexed_colors=indexed, has_macros=has_macros or "vbaProject" in by_type,
        has_external_links="externalLink" in by_type, issues=issues, limits=limits,
    )
