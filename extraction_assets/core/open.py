"""Opening a workbook: sniff the container, decrypt it, pick the reader of its format in the
format table (:mod:`.formats`) and open it (:func:`open_workbook`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    ExtractionError,
    UnsupportedFormatError,
)
from extraction_assets.core.formats import FORMATS, Family
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue, Workbook
from extraction_assets.core.ooxml.workbook import open_ooxml
from extraction_assets.core.sniff import Sniffed, require_spreadsheet, sniff


def open_workbook(data: bytes, limits: Limits | None = None, *,
                  filename: str | None = None, passwords: Sequence[str] = (),
                  conversions: Path | None = None, sniffed: Sniffed | None = None) -> Workbook:
    """Open a workbook from its bytes and read its workbook-level parts.

    The reader is the one of the sniffed format in the format table
    (:data:`~extraction_assets.core.formats.FORMATS`): OOXML (``xlsx``/``xlsm``) is read by
    :mod:`.ooxml`; ``xls``, ``xlsb``, ``ods`` and ``fods`` are converted to xlsx by LibreOffice
    when it is installed (and then read the same way), else read by value by :mod:`.readers`,
    as ``csv``/``tsv`` are; documents (``docx``, ``pptx``, ``pdf``, ``html``, ``md``) are read
    by :mod:`.documents`, their sections, slides or pages as sheets, ``doc`` and ``ppt`` after
    LibreOffice converted them to ``docx`` and ``pptx``; every route returns the same shapes.
    ``filename`` only names the sheet of a CSV (its stem; ``Sheet1`` without).
    A password-protected file is decrypted first with the first of ``passwords`` that opens it.
    ``conversions`` is a folder where LibreOffice's conversions are kept, so that the assets
    that open one file convert it once (see
    :func:`~extraction_assets.core.readers.libreoffice.convert`). ``sniffed``: the
    :func:`~extraction_assets.core.sniff.sniff` of ``data``, when the caller has it (the file
    is then not sniffed again, unless it is decrypted).

    Cells are not read here: iterate
    :meth:`~extraction_assets.core.model.Workbook.iter_sheets`. Close the result with
    :meth:`~extraction_assets.core.model.Workbook.close` when done.

    Raises:
        NotASpreadsheetError, EncryptedWorkbookError: see
            :func:`~extraction_assets.core.sniff.require_spreadsheet` (encrypted: no
            password configured, or none opens the file).
        UnsupportedFormatError: a ``doc`` or ``ppt`` without LibreOffice.
        CorruptWorkbookError: missing ``xl/workbook.xml``, malformed workbook-level XML.
        HostileContentError: a part declares a DTD.
        LimitExceededError: the package or the sheet list exceeds ``limits``.
    """
    limits = limits or Limits()
    plain = decrypted(data, passwords, sniffed)
    sniffed = require_spreadsheet(plain, sniffed if plain is data else None)
    data = plain
    fmt = FORMATS[sniffed.format]
    if fmt.family in (Family.CONVERTED, Family.BY_VALUE):
        # imported here: an OOXML ingest never needs the other formats' readers
        from extraction_assets.core.readers import check_before_reading

        check_before_reading(data, sniffed, limits)
    if fmt.family is Family.CONVERTED_DOCUMENT:
        return _open_converted_document(data, sniffed, limits, conversions)
    fallback = None
    if fmt.converts:
        converted, fallback = _open_converted(data, sniffed, limits, conversions)
        if converted is not None:
            return converted
    wb = fmt.load_reader()(data, sniffed, limits, filename=filename, passwords=passwords)
    if fallback:
        wb.issues.insert(0, fallback)
    return wb


def _open_converted(data: bytes, sniffed: Sniffed, limits: Limits, conversions: Path | None
                    ) -> tuple[Workbook | None, Issue | None]:
    """A workbook of a format LibreOffice converts, converted to xlsx and read with the OOXML
    reader (the conversion an ``info`` issue ``converted``), or ``None`` when LibreOffice is
    not installed or fails; a failure comes back as the ``warning`` the by-value read then
    carries first."""
    from extraction_assets.core.readers.libreoffice import convert, find_soffice

    soffice = find_soffice()
    if not soffice:
        return None, None
    try:
        converted, version, seconds = convert(data, sniffed.format, soffice,
                                                      keep_in=conversions,
                                                      max_bytes=limits.max_total_bytes)
    except ExtractionError as exc:
        return None, Issue("parsed_sheets", None, None, "warning", "conversion_failed",
                           f"LibreOffice could not convert the {sniffed.format} file "
                           f"({exc.message}); read by value instead")
    wb = open_ooxml(converted, sniffed, limits)
    wb.conversion = {"tool": "LibreOffice", "version": version, "seconds": round(seconds, 3)}
    wb.issues.insert(0, Issue(
        "parsed_sheets", None, None, "info", "converted",
        f"{sniffed.format} ({sniffed.label}) converted to xlsx by LibreOffice {version} "
        f"in {seconds:.2f} s; read with the full OOXML reader"))
    return wb, None


def _open_converted_document(data: bytes, sniffed: Sniffed, limits: Limits,
                             conversions: Path | None) -> Workbook:
    """A ``doc`` or ``ppt`` converted to ``docx`` or ``pptx`` by LibreOffice and read as that
    document (the conversion an ``info`` issue ``converted``; a VBA project flagged, never
    run).

    Raises:
        UnsupportedFormatError: LibreOffice is not installed (or ``EXTRACTION_ASSETS_SOFFICE``
            is ``off``).
        CorruptWorkbookError: LibreOffice failed, timed out or wrote no such document.
        LimitExceededError: its output passed ``max_total_bytes``, or the document the
            limits.
    """
    from extraction_assets.core.documents import open_document
    from extraction_assets.core.readers.libreoffice import convert, find_soffice

    target = FORMATS[sniffed.format].converts_to
    soffice = find_soffice()
    if not soffice:
        setting = os.environ.get("EXTRACTION_ASSETS_SOFFICE")
        raise UnsupportedFormatError(
            f"{sniffed.format} files are converted to {target} by LibreOffice, which " + (
                f"EXTRACTION_ASSETS_SOFFICE={setting!r} turns off or does not find"
                if setting is not None else "is not installed (sudo apt-get install "
                "libreoffice-writer-nogui libreoffice-impress-nogui)"))
    converted, version, seconds = convert(data, sniffed.format, soffice, keep_in=conversions,
                                          max_bytes=limits.max_total_bytes)
    inner = sniff(converted)
    if inner.format != target:
        raise CorruptWorkbookError(f"LibreOffice wrote no {target} for the {sniffed.format} "
                                   f"file (it wrote {inner.label})")
    wb = open_document(converted, inner, limits)
    wb.conversion = {"tool": "LibreOffice", "version": version, "seconds": round(seconds, 3),
                     "read_by": (wb.conversion or {}).get("tool")}
    wb.issues.insert(0, Issue(
        "parsed_sheets", None, None, "info", "converted",
        f"{sniffed.format} ({sniffed.label}) converted to {target} by LibreOffice {version} "
        f"in {seconds:.2f} s; read as {target}"))
    if sniffed.has_macros:
        wb.has_macros = True
        wb.issues.append(Issue("parsed_sheets", None, None, "info", "macros_not_run",
                               f"the {sniffed.format} file holds a VBA project; it is never "
                               "run"))
    return wb


def decrypted(data: bytes, passwords: Sequence[str], sniffed: Sniffed | None = None) -> bytes:
    """``data`` itself, or its decryption when it is an encrypted workbook and ``passwords``
    are configured (see :func:`~extraction_assets.core.crypto.decrypt`); ``sniffed``: the
    sniff of ``data``, when the caller has it."""
    if not passwords:
        return data
    sniffed = sniffed or sniff(data)
    if sniffed.format == "encrypted-ooxml" or (sniffed.format == "xls" and sniffed.encrypted):
        from extraction_assets.core.crypto import decrypt

        return decrypt(data, passwords)
    return data
