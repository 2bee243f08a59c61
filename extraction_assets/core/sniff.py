"""What kind of file this is, from its bytes, and the typed error for what is no readable workbook.

The format is decided from the magic bytes, never from the file name:

* ``PK\x03\x04`` (zip) holding ``xl/workbook.xml`` or an officeDocument relationship -> OOXML
  (``xlsx``; ``xlsm`` when ``xl/vbaProject.bin`` is present; ``xlsb`` when the workbook part is
  binary); a zip holding ``content.xml`` with an OpenDocument mimetype -> ``ods``;
* ``D0 CF 11 E0 A1 B1 1A E1`` (OLE2 / Compound File Binary) -> ``xls`` (a ``Workbook`` or
  ``Book`` stream; its BOF record gives the BIFF version, a ``FILEPASS`` record marks RC4 / XOR
  encryption), an encrypted OOXML package (an ``EncryptionInfo`` stream, [MS-OFFCRYPTO]),
  ``doc`` (a ``WordDocument`` stream; macros: a ``Macros`` storage) or ``ppt`` (a
  ``PowerPoint Document`` stream);
* a bare BIFF2/3/4 stream (a ``BOF`` record at offset 0, no OLE2 wrapper) -> ``xls``;
* XML whose root is ``office:document`` with the OpenDocument spreadsheet mimetype -> ``fods``;
* text that parses as delimited rows (the same delimiter count on several lines) -> ``csv``;
* documents (:data:`~extraction_assets.core.formats.DOCUMENT_FORMATS`): a zip
  holding ``word/document.xml`` -> ``docx``, ``ppt/presentation.xml`` -> ``pptx`` (macros
  flagged as for workbooks); ``%PDF-`` in the first 1024 bytes -> ``pdf`` (ISO 32000-1 §7.5.2
  allows bytes before it); text opening with ``<!DOCTYPE html`` or ``<html`` -> ``html``; text
  with an ATX heading line (``# Title``) or a table delimiter row (``|---|---|``) -> ``md``
  (CommonMark / GitHub Flavored Markdown; a delimited text that is also CSV stays ``csv``);
* anything else -> ``other``.

What each format is read with, and the file-name suffixes the inbox accepts for it, is the
format table of :mod:`~extraction_assets.core.formats`.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import struct
import zipfile
from dataclasses import dataclass

import olefile

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    EncryptedWorkbookError,
    NotASpreadsheetError,
)
from extraction_assets.core.formats import (
    DOCUMENT_FORMATS,
    OOXML_FORMATS,
    OTHER_SPREADSHEET_FORMATS,
)

ZIP_MAGIC = b"PK\x03\x04"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class Sniffed:
    """What the magic bytes and container directory say about a file.

    Attributes:
        container: ``zip``, ``ole2`` or ``other``.
        format: ``xlsx``, ``xlsm``, ``xlsb``, ``ods``, ``xls``, ``encrypted-ooxml``, ``zip`` (a
            zip without a workbook), ``damaged-zip`` (unreadable directory) or ``other``.
        has_macros: a VBA project part/stream is present (it is never run).
        version: the format version when known (``biff8``, ``biff5``, ``biff4``... for ``xls``).
        encrypted: an ``xls`` whose globals hold a ``FILEPASS`` record (RC4 or XOR obfuscation).
        encoding, delimiter: for ``csv``, the detected text encoding and field delimiter.

    ``container`` is ``zip``, ``ole2``, ``biff`` (a bare BIFF stream), ``xml`` (flat ODS),
    ``text`` (CSV/TSV) or ``other``.
    """

    container: str
    format: str
    has_macros: bool = False
    version: str | None = None
    encrypted: bool = False
    encoding: str | None = None
    delimiter: str | None = None

    @property
    def label(self) -> str:
        """``container/version`` (``ole2/biff8``) when a version is known, else the container."""
        return f"{self.container}/{self.version}" if self.version else self.container


def sniff(data: bytes) -> Sniffed:
    """Identify the container and spreadsheet format of ``data`` from its bytes.

    Never raises on unknown input: a file that is neither zip nor OLE2 gives ``other``.
    """
    if data.startswith(ZIP_MAGIC) or data.startswith(b"PK\x05\x06"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, ValueError, OSError):
            return Sniffed("zip", "damaged-zip")
        lower = {n.lower() for n in names}
        macros = "xl/vbaproject.bin" in lower
        if "word/document.xml" in lower:
            return Sniffed("zip", "docx", "word/vbaproject.bin" in lower)
        if "ppt/presentation.xml" in lower:
            return Sniffed("zip", "pptx", "ppt/vbaproject.bin" in lower)
        if "xl/workbook.bin" in lower:
            return Sniffed("zip", "xlsb", macros)
        if "xl/workbook.xml" in lower or "_rels/.rels" in lower and any(n.startswith("xl/") for n in lower):
            return Sniffed("zip", "xlsm" if macros else "xlsx", macros)
        if "content.xml" in lower and "mimetype" in lower:
            return Sniffed("zip", "ods")
        return Sniffed("zip", "zip")
    if data.startswith(OLE2_MAGIC):
        try:
            with olefile.OleFileIO(io.BytesIO(data)) as ole:
                streams = {"/".join(s).lower() for s in ole.listdir()}
        except Exception:  # olefile raises many types on damaged directories
            return Sniffed("ole2", "other")
        if "encryptioninfo" in streams:
            return Sniffed("ole2", "encrypted-ooxml")
        if "workbook" in streams or "book" in streams:
            version, encrypted = _biff_globals(data)
            return Sniffed("ole2", "xls", any(s.startswith("_vba_project") for s in streams),
                           version=version, encrypted=encrypted)
        if "worddocument" in streams:  # [MS-DOC] §2.1: a Word 97-2003 document
            return Sniffed("ole2", "doc", any(s.startswith("macros/") for s in streams))
        if "powerpoint document" in streams:  # [MS-PPT] §2.1.1: a PowerPoint 97-2003 deck
            return Sniffed("ole2", "ppt", any("vba" in s for s in streams))
        return Sniffed("ole2", "other")
    version = _bare_biff_version(data)
    if version:
        return Sniffed("biff", "xls", version=version,
                       encrypted=_scan_filepass(data, 0) if version != "biff2" else False)
    if b"%PDF-" in data[:1024]:
        return Sniffed("pdf", "pdf", version=_pdf_version(data))
    if _is_flat_ods(data):
        return Sniffed("xml", "fods")
    markup = _markup_format(data)
    if markup == "html":
        return Sniffed("text", "html")
    dialect = sniff_delimited(data)
    if dialect is not None:
        return Sniffed("text", "csv", encoding=dialect[0], delimiter=dialect[1])
    if markup == "md":
        return Sniffed("text", "md")
    return Sniffed("other", "other")


def _pdf_version(data: bytes) -> str | None:
    """The version of the ``%PDF-1.7`` header line (``1.7``), ``None`` when unreadable."""
    m = re.search(rb"%PDF-(\d\.\d)", data[:1024])
    return m.group(1).decode() if m else None


_HTML_START = re.compile(r"^(?:\ufeff)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]",
                         re.IGNORECASE | re.DOTALL)
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_MD_TABLE_DELIMITER = re.compile(
    r"^ {0,3}\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)+\|?[ \t]*$", re.MULTILINE)


def _markup_format(data: bytes) -> str | None:
    """``html`` or ``md`` when ``data`` is text that reads as one (see the module docstring)."""
    head = data[:_CSV_SAMPLE]
    decoded = decode_text(head if len(data) <= _CSV_SAMPLE else _trim_partial(head))
    if decoded is None:
        return None
    text = decoded[0]
    if _HTML_START.match(text[:4096]):
        return "html"
    if _MD_HEADING.search(text) or _MD_TABLE_DELIMITER.search(text):
        return "md"
    return None


#: BOF record types of BIFF2, BIFF3, BIFF4 and BIFF5/8 ([MS-XLS] 2.4.21; BIFF2-4 from the
#: Excel 97 developer's kit).
_BOF = {0x0009: "biff2", 0x0209: "biff3", 0x0409: "biff4", 0x0809: None}
_BOF_SUBSTREAMS = {0x0005, 0x0010, 0x0020, 0x0040, 0x0100}
_FILEPASS = 0x002F
_EOF = 0x000A


def _bare_biff_version(data: bytes) -> str | None:
    """The BIFF version of a stream without OLE2 wrapper (BIFF2-4 files), else ``None``."""
    if len(data) < 8:
        return None
    rtype, length = struct.unpack_from("<HH", data, 0)
    if rtype not in _BOF or not 4 <= length <= 20 or len(data) < 4 + length:
        return None
    _, substream = struct.unpack_from("<HH", data, 4)
    if substream not in _BOF_SUBSTREAMS:
        return None
    return _BOF[rtype] or ("biff8" if data[4:6] == b"\x00\x06" else "biff5")


def _scan_filepass(stream: bytes, start: int) -> bool:
    """Whether the workbook globals (records up to the first ``EOF``) hold a ``FILEPASS``."""
    pos, n = start, len(stream)
    for _ in range(100_000):
        if pos + 4 > n:
            return False
        rtype, length = struct.unpack_from("<HH", stream, pos)
        if rtype == _FILEPASS:
            return True
        if rtype == _EOF:
            return False
        pos += 4 + length
    return False


def _biff_globals(data: bytes) -> tuple[str | None, bool]:
    """BIFF version (``biff8``, ``biff5``...) and encryption flag of an OLE2 ``xls``."""
    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            name = "Workbook" if ole.exists("Workbook") else "Book"
            stream = ole.openstream(name).read()
    except Exception:  # olefile raises many types on damaged streams
        return None, False
    if len(stream) < 8:
        return None, False
    rtype, _ = struct.unpack_from("<HH", stream, 0)
    if rtype not in _BOF:
        return None, False
    version = _BOF[rtype] or ("biff8" if stream[4:6] == b"\x00\x06" else "biff5")
    return version, _scan_filepass(stream, 0)


_ODS_MIMETYPE = b"application/vnd.oasis.opendocument.spreadsheet"


def _is_flat_ods(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    return (head.startswith(b"<") and b"office:document" in head
            and _ODS_MIMETYPE in head)


_CSV_SAMPLE = 65_536
_CSV_MIN_ROWS = 3
_CSV_DELIMITERS = ",\t;|"
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1f]")


def decode_text(data: bytes) -> tuple[str, str] | None:
    """Decode ``data`` as text: ``(text, encoding)``, or ``None`` when it is not text.

    A BOM decides (UTF-8, UTF-16); else strict UTF-8; else the best guess of
    ``charset-normalizer``. Text holding control characters (other than tab, CR, LF, FF, VT)
    is not text.
    """
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = None
        if b"\x00" in data[:_CSV_SAMPLE]:
            return None
    candidates = [encoding] if encoding else ["utf-8"]
    for enc in candidates:
        try:
            text = data.decode(enc)
            break
        except UnicodeDecodeError:
            text = None
    if text is None:
        try:
            from charset_normalizer import from_bytes
        except ImportError:  # pragma: no cover - a dependency of the project
            return None
        encoding = _guess_encoding(from_bytes(data[: 4 * _CSV_SAMPLE]), data[:_CSV_SAMPLE])
        if encoding is None:
            return None
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            return None
    if _BINARY.search(text[:_CSV_SAMPLE]):
        return None
    return text, encoding or "utf-8"


#: Preferred among near-equal guesses of charset-normalizer on short samples (spreadsheets here
#: are Japanese as often as English): Japanese first, then Western, then other CJK.
_PREFERRED_ENCODINGS = ("cp932", "shift_jis", "euc_jp", "cp1252", "gb18030", "big5", "cp949")


def _guess_encoding(matches, sample: bytes) -> str | None:
    """The encoding of a sample from ``charset-normalizer``'s matches: the best one, unless a
    preferred encoding is about as good (short samples are ambiguous: cp949 vs cp932, cp1250
    vs cp1252)."""
    best = matches.best()
    if best is None:
        return None
    near = [m for m in matches if m.chaos <= best.chaos + 0.05]
    for preferred in _PREFERRED_ENCODINGS:
        for m in near:
            if m.encoding == preferred:
                return preferred
    if best.encoding.startswith(("cp125", "mac_", "iso8859", "latin")):
        try:
            if sample.decode("cp1252") == sample.decode(best.encoding):
                return "cp1252"
        except (UnicodeDecodeError, LookupError):
            pass
    return best.encoding


def sniff_delimited(data: bytes) -> tuple[str, str] | None:
    """``(encoding, delimiter)`` when ``data`` is text that parses as delimited rows, else ``None``.

    The delimiter is ``csv.Sniffer``'s guess among comma, tab, semicolon and pipe (then each of
    them in turn); it is accepted only when at least three non-blank rows parse and at least
    80% of them have the same number (two or more) of fields. Prose, code, XML or a two-line
    snippet stay ``other`` (``not_a_spreadsheet``).
    """
    head = data[:_CSV_SAMPLE]
    if not head.strip() or head.lstrip()[:1] in (b"<", b"{", b"%"):
        return None
    decoded = decode_text(head if len(data) <= _CSV_SAMPLE else _trim_partial(head))
    if decoded is None:
        return None
    text, encoding = decoded
    if len(data) > _CSV_SAMPLE:
        text = text.rsplit("\n", 1)[0]  # drop the possibly cut last line
    guesses = []
    try:
        guesses.append(csv.Sniffer().sniff(text[:16_384], delimiters=_CSV_DELIMITERS).delimiter)
    except csv.Error:
        pass
    guesses += [d for d in _CSV_DELIMITERS if d not in guesses]
    for delimiter in guesses:
        if _consistent(text, delimiter):
            return encoding, delimiter
    return None


def _trim_partial(head: bytes) -> bytes:
    """Cut a sample at its last newline so a multi-byte character is never split."""
    cut = head.rfind(b"\n")
    return head[: cut + 1] if cut > 0 else head


def _consistent(text: str, delimiter: str) -> bool:
    if delimiter not in text:
        return False
    counts = []
    try:
        for fields in csv.reader(io.StringIO(text), delimiter=delimiter):
            if any(f.strip() for f in fields):
                counts.append(len(fields))
            if len(counts) >= 200:
                break
    except csv.Error:
        return False
    if len(counts) < _CSV_MIN_ROWS:
        return False
    mode = max(set(counts), key=counts.count)
    return mode >= 2 and counts.count(mode) >= 0.8 * len(counts)


def require_spreadsheet(data: bytes, sniffed: Sniffed | None = None) -> Sniffed:
    """Sniff ``data`` (``sniffed``: its sniff, when the caller has it) and raise the typed error
    for anything that is not a readable workbook:
    one of :data:`~extraction_assets.core.formats.OOXML_FORMATS`,
    :data:`~extraction_assets.core.formats.OTHER_SPREADSHEET_FORMATS` or
    :data:`~extraction_assets.core.formats.DOCUMENT_FORMATS`.

    Raises:
        NotASpreadsheetError: empty file, or a file that is no spreadsheet format.
        EncryptedWorkbookError: a password-protected OOXML package or an encrypted ``xls``.
        CorruptWorkbookError: a damaged zip container.
    """
    if not data:
        raise NotASpreadsheetError("the file is empty (0 bytes)")
    sniffed = sniffed or sniff(data)
    if sniffed.format in DOCUMENT_FORMATS:
        return sniffed
    if sniffed.format in OTHER_SPREADSHEET_FORMATS:
        if sniffed.encrypted:
            raise EncryptedWorkbookError(
                f"the {sniffed.format} workbook ({sniffed.label}) is encrypted: password required")
        return sniffed
    return require_ooxml(data, sniffed)


def require_ooxml(data: bytes, sniffed: Sniffed | None = None) -> Sniffed:
    """Sniff ``data`` and raise the typed error for anything that is not a readable OOXML package.

    Raises:
        NotASpreadsheetError: empty file, or a file that is neither zip nor OLE2 spreadsheet.
        EncryptedWorkbookError: a password-protected OOXML package.
        UnsupportedFormatError: ``xls``, ``xlsb``, ``ods``, ``fods`` or ``csv`` (not OOXML; see
            :func:`require_spreadsheet`).
    """
    from extraction_assets.core.errors import UnsupportedFormatError

    if not data:
        raise NotASpreadsheetError("the file is empty (0 bytes)")
    sniffed = sniffed or sniff(data)
    if sniffed.format in OOXML_FORMATS:
        return sniffed
    if sniffed.format == "encrypted-ooxml":
        raise EncryptedWorkbookError("the workbook is password-protected: password required")
    if sniffed.format in OTHER_SPREADSHEET_FORMATS:
        raise UnsupportedFormatError(
            f"{sniffed.format} workbooks ({sniffed.label} container) are not OOXML"
        )
    if sniffed.format == "damaged-zip":
        raise CorruptWorkbookError("the zip container is damaged or truncated")
    if sniffed.container == "zip":
        raise NotASpreadsheetError("the zip file holds no spreadsheet workbook part")
    if sniffed.container == "ole2":
        raise NotASpreadsheetError("the OLE2 compound file holds no readable Workbook stream "
                                   "(another Office document, or a damaged file)")
    if decode_text(_trim_partial(data[:4096]) if len(data) > 4096 else data) is not None:
        raise NotASpreadsheetError(
            "the file is text, not a spreadsheet (no zip or OLE2 signature; text is read as "
            f"CSV only with at least {_CSV_MIN_ROWS} rows of the same number of fields)")
    raise NotASpreadsheetError("the file is not a spreadsheet (no zip or OLE2 signature)")
