"""Container sniffing and guarded access to the parts of an OOXML zip package.

The format is decided from the magic bytes, never from the file name:

* ``PK\\x03\\x04`` (zip) holding ``xl/workbook.xml`` or an officeDocument relationship -> OOXML
  (``xlsx``; ``xlsm`` when ``xl/vbaProject.bin`` is present; ``xlsb`` when the workbook part is
  binary); a zip holding ``content.xml`` with an OpenDocument mimetype -> ``ods``;
* ``D0 CF 11 E0 A1 B1 1A E1`` (OLE2 / Compound File Binary) -> ``xls`` (a ``Workbook`` or
  ``Book`` stream; its BOF record gives the BIFF version, a ``FILEPASS`` record marks RC4 / XOR
  encryption) or an encrypted OOXML package (an ``EncryptionInfo`` stream, [MS-OFFCRYPTO]);
* a bare BIFF2/3/4 stream (a ``BOF`` record at offset 0, no OLE2 wrapper) -> ``xls``;
* XML whose root is ``office:document`` with the OpenDocument spreadsheet mimetype -> ``fods``;
* text that parses as delimited rows (the same delimiter count on several lines) -> ``csv``;
* anything else -> ``other``.

Zip parts are read through :class:`PackageReader`, which enforces :class:`Limits` so a zip bomb
or an absurd package is refused with :class:`LimitExceededError` instead of exhausting memory.
"""

from __future__ import annotations

import codecs
import csv
import io
import posixpath
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

import olefile
from lxml import etree

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    EncryptedWorkbookError,
    HostileContentError,
    LimitExceededError,
    NotASpreadsheetError,
)

ZIP_MAGIC = b"PK\x03\x04"
#: Bytes at the start of a part searched for a DTD; the parser never loads one either way.
_PROLOG_BYTES = 65_536
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class Limits:
    """Safety limits applied to every input package (bytes are uncompressed sizes).

    Attributes:
        max_parts: most zip entries a package may hold.
        max_total_bytes: most uncompressed bytes over all parts read.
        max_part_bytes: most uncompressed bytes of one part.
        max_compression_ratio: most uncompressed/compressed ratio of a part larger than 1 MiB.
        max_sheets: most worksheets in a workbook.
        max_cells: most non-empty cells over the whole workbook, the cells merged ranges fill
            included.
        max_merged_ranges: most merged ranges on one worksheet.
        max_cell_chars: most characters of one cell's text or formula (Excel's own limit is
            32,767); a longer one is cut there, with a ``cell_text_truncated`` warning.
        max_text_bytes: most bytes (UTF-8) of cell text over the whole workbook, as the cells
            show it: shared strings counted once per cell that uses them, merged ranges'
            values once per cell they fill.
        max_styles: most entries of each list of the stylesheet (``cellXfs``, fonts, fills,
            borders, number formats...; Excel's own limit is 65,490 cell formats).
        max_tree_bytes: most bytes of XML held as an element tree: a part read whole
            (workbook, styles, comments, drawings, charts...) or what a worksheet holds outside
            its ``<sheetData>``.
    """

    max_parts: int = 10_000
    max_total_bytes: int = 4 * 1024**3
    max_part_bytes: int = 2 * 1024**3
    max_compression_ratio: float = 2_000.0
    max_sheets: int = 2_000
    max_cells: int = 50_000_000
    max_merged_ranges: int = 1_000_000
    max_cell_chars: int = 32_767
    max_text_bytes: int = 64 * 1024**2
    max_styles: int = 65_490
    max_tree_bytes: int = 16 * 1024**2


class Budget:
    """What the sheets of one workbook have used of its :class:`Limits`: cells and bytes of
    cell text (see ``max_cells`` and ``max_text_bytes``), counted by whoever makes them (the
    worksheet reader, the merge fill of the normalizer).

    Raises:
        LimitExceededError: from :meth:`add` and :meth:`check_text` once a limit is passed.
    """

    def __init__(self, limits: Limits):
        self.limits = limits
        self.cells = 0
        self.text_bytes = 0

    def check_text(self, text_bytes: int) -> None:
        """Raise before ``text_bytes`` more bytes of text are made, if they would not fit."""
        if self.text_bytes + text_bytes > self.limits.max_text_bytes:
            raise LimitExceededError(
                f"workbook has more than {self.limits.max_text_bytes} bytes of cell text "
                "(max_text_bytes; shared strings and merged values counted in every cell that "
                "shows them)")

    def add(self, cells: int, text_bytes: int = 0) -> None:
        """Count ``cells`` more cells holding ``text_bytes`` bytes of text."""
        self.check_text(text_bytes)
        self.cells += cells
        self.text_bytes += text_bytes
        if self.cells > self.limits.max_cells:
            raise LimitExceededError(f"workbook has more than {self.limits.max_cells} cells")

    def state(self) -> tuple[int, int]:
        """What is used so far, for :meth:`restore`."""
        return self.cells, self.text_bytes

    def restore(self, state: tuple[int, int]) -> None:
        """Go back to an earlier :meth:`state` (a sheet read again from its start)."""
        self.cells, self.text_bytes = state


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
        return Sniffed("ole2", "other")
    version = _bare_biff_version(data)
    if version:
        return Sniffed("biff", "xls", version=version,
                       encrypted=_scan_filepass(data, 0) if version != "biff2" else False)
    if _is_flat_ods(data):
        return Sniffed("xml", "fods")
    dialect = sniff_delimited(data)
    if dialect is not None:
        return Sniffed("text", "csv", encoding=dialect[0], delimiter=dialect[1])
    return Sniffed("other", "other")


# -- BIFF (.xls) ------------------------------------------------------------------------------
#: BOF record types of BIFF2, BIFF3, BIFF4 and BIFF5/8 ([MS-XLS] 2.4.21; BIFF2-4 from the
#: Excel 97 developer's kit).
_BOF = {0x0009: "biff2", 0x0209: "biff3", 0x0409: "biff4", 0x0809: None}
_BOF_SUBSTREAMS = {0x0005, 0x0010, 0x0020, 0x0040, 0x0100}
_FILEPASS, _EOF = 0x002F, 0x000A


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


# -- flat ODS (.fods) -------------------------------------------------------------------------
_ODS_MIMETYPE = b"application/vnd.oasis.opendocument.spreadsheet"


def _is_flat_ods(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    return (head.startswith(b"<") and b"office:document" in head
            and _ODS_MIMETYPE in head)


# -- delimited text (.csv / .tsv) -------------------------------------------------------------
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


class _CountingReader(io.RawIOBase):
    """Wrap a zip member stream and stop once more than ``budget`` bytes come out of it
    (:class:`LimitExceededError` saying ``over``)."""

    def __init__(self, raw: IO[bytes], name: str, budget: int, on_read, over: str):
        self._raw = raw
        self._name = name
        self._budget = budget
        self._on_read = on_read
        self._over = over

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            chunk = self._raw.read(len(buffer))
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError) as exc:
            raise CorruptWorkbookError(f"part {self._name} is damaged: {exc}") from exc
        n = len(chunk)
        self._budget -= n
        if self._budget < 0:
            raise LimitExceededError(f"part {self._name} {self._over}")
        self._on_read(n)
        buffer[:n] = chunk
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


class PackageReader:
    """Guarded reader of the parts of an OOXML zip package.

    Args:
        data: the whole file's bytes.
        limits: the safety limits to enforce.

    Raises:
        CorruptWorkbookError: the zip directory cannot be read, or two of its parts have the
            same name (ECMA-376 Part 2, §9.1.1.1: part names are unique, compared without
            regard to ASCII case).
        LimitExceededError: the package has more parts than allowed, or a part's declared sizes
            exceed the limits.
    """

    def __init__(self, data: bytes, limits: Limits):
        self.limits = limits
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, OSError) as exc:
            raise CorruptWorkbookError(f"not a readable zip package: {exc}") from exc
        infos = self._zip.infolist()
        if len(infos) > limits.max_parts:
            raise LimitExceededError(
                f"package has {len(infos)} parts; the limit is {limits.max_parts}"
            )
        self._infos = {}
        for info in infos:
            key = info.filename.lstrip("/").lower()
            if key in self._infos:
                first = self._infos[key].filename
                raise CorruptWorkbookError(
                    f"the package holds two parts named {info.filename!r}" if first ==
                    info.filename else f"the package holds parts {first!r} and "
                    f"{info.filename!r}, whose names differ only in case")
            self._infos[key] = info
            if info.file_size > limits.max_part_bytes:
                raise LimitExceededError(
                    f"part {info.filename} declares {info.file_size} bytes; the limit is "
                    f"{limits.max_part_bytes}"
                )
            if (
                info.file_size > 1024**2
                and info.file_size > limits.max_compression_ratio * max(info.compress_size, 1)
            ):
                raise LimitExceededError(
                    f"part {info.filename} has compression ratio "
                    f"{info.file_size / max(info.compress_size, 1):.0f}; the limit is "
                    f"{limits.max_compression_ratio:.0f} (zip bomb?)"
                )
        self._total_read = 0

    def close(self) -> None:
        """Close the underlying zip file."""
        self._zip.close()

    def __enter__(self) -> "PackageReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def has(self, name: str) -> bool:
        """Whether the package holds part ``name`` (case-insensitive, no leading slash)."""
        return name.lstrip("/").lower() in self._infos

    def names(self) -> list[str]:
        """The part names of the package, in directory order."""
        return [info.filename for info in self._infos.values()]

    def _count(self, n: int) -> None:
        self._total_read += n
        if self._total_read > self.limits.max_total_bytes:
            raise LimitExceededError(
                f"package inflates beyond {self.limits.max_total_bytes} bytes in total"
            )

    def open(self, name: str, max_bytes: int | None = None) -> IO[bytes]:
        """Open part ``name`` as a buffered binary stream with the limits enforced:
        ``max_part_bytes``, or ``max_bytes`` when given (e.g. ``max_tree_bytes`` for a part
        parsed whole).

        A part that is XML declaring a DTD (``<!DOCTYPE``) is refused, since no OOXML part has
        one and DTDs carry entity-expansion and XXE attacks: its prolog is read by libxml2 up
        to the root element, whatever comments or processing instructions come first and
        whatever the encoding (UTF-16 without a byte-order mark included). (The XML parser is
        also configured to load no DTD and resolve no entity.)

        Raises:
            CorruptWorkbookError: the part is missing or its data is damaged.
            HostileContentError: the part declares a DTD.
            LimitExceededError: (while reading) the part inflates beyond its limit.
        """
        stream = self._stream(name, max_bytes)
        head = stream.peek(_PROLOG_BYTES)[:_PROLOG_BYTES]
        verdict = _declares_dtd([head], complete=False)
        if verdict is None:  # the root not met in the peek: read the start from a second stream
            with self._stream(name, max_bytes) as again:
                verdict = _declares_dtd(iter(lambda: again.read(_PROLOG_BYTES), b""),
                                        complete=True)
        if verdict:
            stream.close()
            raise HostileContentError(f"part {name} declares a DTD; refused")
        return stream

    def _stream(self, name: str, max_bytes: int | None) -> IO[bytes]:
        info = self._infos.get(name.lstrip("/").lower())
        if info is None:
            raise CorruptWorkbookError(f"required part {name} is missing")
        try:
            raw = self._zip.open(info)
        except (zipfile.BadZipFile, NotImplementedError, zlib.error, OSError, ValueError) as exc:
            raise CorruptWorkbookError(f"part {name} cannot be opened: {exc}") from exc
        if max_bytes is None:
            budget, over = self.limits.max_part_bytes, "inflates beyond the per-part limit"
        else:
            budget, over = max_bytes, (f"holds more than {max_bytes} bytes, the limit of a part "
                                       "read whole")
        return io.BufferedReader(_CountingReader(raw, name, budget, self._count, over), 1 << 16)

    def read(self, name: str) -> bytes:
        """Read the whole of part ``name`` (for small parts such as workbook.xml)."""
        with self.open(name) as stream:
            return stream.read()


#: Bytes of a part's start fed to libxml2 at a time to find its root element.
_PROLOG_STEP = 4096


class _Stop(Exception):
    """Raised by :class:`_Prolog` to stop the parser."""


class _Prolog:
    """A parser target that stops at the document type declaration or at the root element,
    noting which came first (before any entity of a DTD is declared or expanded)."""

    def __init__(self) -> None:
        self.dtd: bool | None = None

    def doctype(self, *args) -> None:
        self.dtd = True
        raise _Stop()

    def start(self, *args) -> None:
        self.dtd = False
        raise _Stop()

    def end(self, *args) -> None:
        pass

    def data(self, *args) -> None:
        pass

    def close(self) -> bool | None:
        return self.dtd


def _declares_dtd(blocks, complete: bool) -> bool | None:
    """Whether the XML of ``blocks`` (the start of a part; all of it when ``complete``)
    declares a DTD before its root element, as libxml2 reads it (any encoding it detects);
    ``False`` for what is not well-formed XML there (a binary part; its reader reports what is
    damaged) and ``None`` when the blocks end before the root."""
    target = _Prolog()
    parser = etree.XMLParser(target=target, resolve_entities=False, no_network=True,
                             load_dtd=False, huge_tree=False)
    try:
        for block in blocks:
            for at in range(0, len(block), _PROLOG_STEP):
                parser.feed(block[at:at + _PROLOG_STEP])
        if complete:
            parser.close()
    except _Stop:
        pass
    except etree.XMLSyntaxError:
        return bool(target.dtd)
    return target.dtd


def resolve_target(source_part: str, target: str) -> str:
    """Resolve a relationship ``Target`` against the part that owns the relationship.

    Follows OPC (ECMA-376 Part 2, §9.3): a target starting with ``/`` is package-absolute,
    otherwise it is relative to the source part's folder. Returns a part name without a leading
    slash.
    """
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    base = posixpath.dirname(source_part)
    return posixpath.normpath(posixpath.join(base, target))



#: Formats read through :mod:`~extraction_assets.core.legacy` (converted or read by value).
LEGACY_FORMATS = ("xls", "xlsb", "ods", "fods", "csv")


def require_spreadsheet(data: bytes) -> Sniffed:
    """Sniff ``data`` and raise the typed error for anything that is not a readable workbook:
    OOXML (``xlsx``/``xlsm``) or one of :data:`LEGACY_FORMATS`.

    Raises:
        NotASpreadsheetError: empty file, or a file that is no spreadsheet format.
        EncryptedWorkbookError: a password-protected OOXML package or an encrypted ``xls``.
        CorruptWorkbookError: a damaged zip container.
    """
    if not data:
        raise NotASpreadsheetError("the file is empty (0 bytes)")
    sniffed = sniff(data)
    if sniffed.format in LEGACY_FORMATS:
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
    if sniffed.format in ("xlsx", "xlsm"):
        return sniffed
    if sniffed.format == "encrypted-ooxml":
        raise EncryptedWorkbookError("the workbook is password-protected: password required")
    if sniffed.format in LEGACY_FORMATS:
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
