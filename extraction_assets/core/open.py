"""Opening a workbook: sniff the container, decrypt it, pick the reader of its format in the
format table (:mod:`.formats`) and open it (:func:`open_workbook`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from extraction_assets.core.errors import ExtractionError
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
    by :mod:`.documents`, their sections, slides or pages as sheets; every route returns the
    same shapes. ``filename`` only names the sheet of a CSV (its stem; ``Sheet1`` without).
    A password-protected file is decrypted first with the first of ``passwords`` that opens it.
    ``conversions`` is a folder where LibreOffice's conversions are kept, so that the assets
    that open one file convert it once (see
    :func:`~extraction_assets.core.readers.libreoffice.convert_to_xlsx`). ``sniffed``: the
    :func:`~extraction_assets.core.sniff.sniff` of ``data``, when the caller has it (the file
    is then not sniffed again, unless it is decrypted).

    Cells are not read here: iterate
    :meth:`~extraction_assets.core.model.Workbook.iter_sheets`. Close the result with
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
    plain = decrypted(data, passwords, sniffed)
    sniffed = require_spreadsheet(plain, sniffed if plain is data else None)
    data = plain
    fmt = FORMATS[sniffed.format]
    if fmt.family in (Family.CONVERTED, Family.BY_VALUE):
        # imported here: an OOXML ingest never needs the other formats' readers
        from extraction_assets.core.readers import check_before_reading

        check_before_reading(data, sniffed, limits)
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
    from extraction_assets.core.readers.libreoffice import convert_to_xlsx, find_soffice

    soffice = find_soffice()
    if not soffice:
        return None, None
    try:
        converted, version, seconds = convert_to_xlsx(data, sniffed.format, soffice,
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
