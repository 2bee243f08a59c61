"""Container sniffing and guarded access to the parts of an OOXML zip package.

The format is decided from the magic bytes, never from the file name:

* ``PK\\x03\\x04`` (zip) holding ``xl/workbook.xml`` or an officeDocument relationship -> OOXML
  (``xlsx``; ``xlsm`` when ``xl/vbaProject.bin`` is present; ``xlsb`` when the workbook part is
  binary); a zip holding ``content.xml`` with an OpenDocument mimetype -> ``ods``;
* ``D0 CF 11 E0 A1 B1 1A E1`` (OLE2 / Compound File Binary) -> ``xls`` (a ``Workbook`` or
  ``Book`` stream) or an encrypted OOXML package (an ``EncryptionInfo`` stream, [MS-OFFCRYPTO]);
* anything else -> ``other``.

Zip parts are read through :class:`PackageReader`, which enforces :class:`Limits` so a zip bomb
or an absurd package is refused with :class:`LimitExceededError` instead of exhausting memory.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

import olefile

from .errors import (
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
        max_cells: most non-empty cells over the whole workbook.
        max_merged_ranges: most merged ranges on one worksheet.
    """

    max_parts: int = 10_000
    max_total_bytes: int = 4 * 1024**3
    max_part_bytes: int = 2 * 1024**3
    max_compression_ratio: float = 2_000.0
    max_sheets: int = 2_000
    max_cells: int = 50_000_000
    max_merged_ranges: int = 1_000_000


@dataclass(frozen=True)
class Sniffed:
    """What the magic bytes and container directory say about a file.

    Attributes:
        container: ``zip``, ``ole2`` or ``other``.
        format: ``xlsx``, ``xlsm``, ``xlsb``, ``ods``, ``xls``, ``encrypted-ooxml``, ``zip`` (a
            zip without a workbook), ``damaged-zip`` (unreadable directory) or ``other``.
        has_macros: a VBA project part/stream is present (it is never run).
    """

    container: str
    format: str
    has_macros: bool = False


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
            return Sniffed("ole2", "xls", any(s.startswith("_vba_project") for s in streams))
        return Sniffed("ole2", "other")
    return Sniffed("other", "other")


class _CountingReader(io.RawIOBase):
    """Wrap a zip member stream and stop once more than ``budget`` bytes come out of it."""

    def __init__(self, raw: IO[bytes], name: str, budget: int, on_read):
        self._raw = raw
        self._name = name
        self._budget = budget
        self._on_read = on_read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            chunk = self._raw.read(len(buffer))
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise CorruptWorkbookError(f"part {self._name} is damaged: {exc}") from exc
        n = len(chunk)
        self._budget -= n
        if self._budget < 0:
            raise LimitExceededError(f"part {self._name} inflates beyond the per-part limit")
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
        CorruptWorkbookError: the zip directory cannot be read.
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
            self._infos[info.filename.lstrip("/").lower()] = info
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

    def open(self, name: str) -> IO[bytes]:
        """Open part ``name`` as a buffered binary stream with the limits enforced.

        The first 64 KiB are checked: a part declaring a DTD (``<!DOCTYPE``) is refused, since no
        OOXML part has one and DTDs carry entity-expansion and XXE attacks. (The XML parser is
        also configured to load no DTD and resolve no entity.)

        Raises:
            CorruptWorkbookError: the part is missing or its data is damaged.
            HostileContentError: the part declares a DTD.
        """
        info = self._infos.get(name.lstrip("/").lower())
        if info is None:
            raise CorruptWorkbookError(f"required part {name} is missing")
        try:
            raw = self._zip.open(info)
        except (zipfile.BadZipFile, NotImplementedError, zlib.error, OSError) as exc:
            raise CorruptWorkbookError(f"part {name} cannot be opened: {exc}") from exc
        stream = io.BufferedReader(
            _CountingReader(raw, name, self.limits.max_part_bytes, self._count), 1 << 16
        )
        head = stream.peek(_PROLOG_BYTES)[:_PROLOG_BYTES]
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            head = head.decode("utf-16", errors="ignore").encode("utf-8")
        if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
            stream.close()
            raise HostileContentError(f"part {name} declares a DTD; refused")
        return stream

    def read(self, name: str) -> bytes:
        """Read the whole of part ``name`` (for small parts such as workbook.xml)."""
        with self.open(name) as stream:
            return stream.read()


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



def require_ooxml(data: bytes) -> Sniffed:
    """Sniff ``data`` and raise the typed error for anything that is not a readable OOXML package.

    Raises:
        NotASpreadsheetError: empty file, or a file that is neither zip nor OLE2 spreadsheet.
        EncryptedWorkbookError: a password-protected OOXML package.
        UnsupportedFormatError: ``xls``, ``xlsb`` or ``ods``, which this version does not read.
    """
    from .errors import UnsupportedFormatError

    if not data:
        raise NotASpreadsheetError("the file is empty (0 bytes)")
    sniffed = sniff(data)
    if sniffed.format in ("xlsx", "xlsm"):
        return sniffed
    if sniffed.format == "encrypted-ooxml":
        raise EncryptedWorkbookError("the workbook is password-protected: password required")
    if sniffed.format in ("xls", "xlsb", "ods"):
        raise UnsupportedFormatError(
            f"{sniffed.format} workbooks ({sniffed.container} container) are not supported yet"
        )
    if sniffed.format == "damaged-zip":
        raise CorruptWorkbookError("the zip container is damaged or truncated")
    if sniffed.container == "zip":
        raise NotASpreadsheetError("the zip file holds no spreadsheet workbook part")
    raise NotASpreadsheetError("the file is not a spreadsheet (no zip or OLE2 signature)")
