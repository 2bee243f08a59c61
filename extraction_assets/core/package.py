"""Guarded access to the parts of a zip package (OOXML, ECMA-376 Part 2; ODS): limits on parts,
sizes and compression ratio so a zip bomb is refused, and XML parts declaring a DTD or
holding a start tag past ``max_start_tag_bytes`` refused before they are parsed."""

from __future__ import annotations

import codecs
import io
import re
import zipfile
import zlib
from typing import IO

import numpy as np
from lxml import etree

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    HostileContentError,
    LimitExceededError,
)
from extraction_assets.core.limits import Limits

#: Bytes at the start of a part searched for a DTD; the parser never loads one either way.
_PROLOG_BYTES = 65_536


#: A start tag from its ``<`` to its ``>``, quoted attribute values (which may hold ``>``)
#: included; possessive, so a failed match takes linear time.
_START_TAG = re.compile(rb"""<[^"'>]*+(?:(?:"[^"]*+"|'[^']*+')[^"'>]*+)*+>""")
#: Byte-order marks and first bytes of XML in UTF-32 and UTF-16 (ECMA-376 Part 2 allows
#: UTF-16; libxml2 reads UTF-32 too), with the codec that decodes them; UTF-32 first, since
#: its marks begin like UTF-16's.
_WIDE_XML = ((b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe\x00\x00", "utf-32"),
             (b"\x00\x00\x00<", "utf-32-be"), (b"<\x00\x00\x00", "utf-32-le"),
             (b"\xfe\xff", "utf-16"), (b"\xff\xfe", "utf-16"), (b"\x00<", "utf-16-be"),
             (b"<\x00", "utf-16-le"))


#: Bytes :class:`StartTagCheck` scans at a time (small enough to stay in the CPU's cache).
_SCAN_BYTES = 1 << 16


class StartTagCheck:
    """Finds, in the bytes of a part fed in order, a start tag longer than ``limit`` bytes
    (``max_start_tag_bytes``), holding at most ``limit`` bytes itself. The part's first bytes
    tell whether it is XML: ``<`` after white space and a UTF-8 byte-order mark (any
    encoding whose ASCII is ASCII), or UTF-16/UTF-32 (re-encoded in UTF-8 as it is checked);
    any other part (an image, a binary part) is not checked.

    A span from a ``<`` to the next ``<`` longer than ``limit`` is found with numpy; only
    then is the tag matched (:data:`_START_TAG`: a comment, CDATA section, processing
    instruction, end tag or long text after a tag is no long start tag).
    """

    def __init__(self, limit: int):
        self.limit = limit
        self._carry = b""
        self._decode = None
        self._on: bool | None = None

    def feed(self, chunk: bytes) -> bool:
        """Check ``chunk``, the bytes that follow those fed before; ``True`` once a start tag
        longer than ``limit`` is met."""
        if self._on is None:
            self._start(chunk)
        if not self._on:
            return False
        if self._decode is not None:
            chunk = self._decode(chunk, False).encode("utf-8", "surrogatepass")
        return any(self._scan(chunk[at:at + _SCAN_BYTES])
                   for at in range(0, len(chunk), _SCAN_BYTES))

    def _scan(self, chunk: bytes) -> bool:
        data = self._carry + chunk
        opens = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x3C)
        if not len(opens):
            self._carry = b""
            return False
        spans = np.diff(np.append(opens, len(data)))
        for at in opens[spans > self.limit].tolist():
            if data[at + 1:at + 2] not in (b"!", b"?", b"/") and not _START_TAG.match(
                    data, at, at + self.limit + 1):
                return True
        last = int(opens[-1])
        self._carry = data[last:] if len(data) - last <= self.limit else b""
        return False

    def _start(self, head: bytes) -> None:
        """Decide from the part's first bytes whether it is XML, and in which encoding."""
        for mark, codec in _WIDE_XML:
            if head.startswith(mark):
                self._on = True
                self._decode = codecs.getincrementaldecoder(codec)("replace").decode
                return
        text = head[3:] if head.startswith(codecs.BOM_UTF8) else head
        self._on = text.lstrip(b" \t\r\n").startswith(b"<")


class _CountingReader(io.RawIOBase):
    """Wrap a zip member stream and stop once more than ``budget`` bytes come out of it
    (:class:`LimitExceededError` saying ``over``), or once a start tag of an XML part is
    longer than ``max_start_tag_bytes`` (:class:`StartTagCheck`)."""

    def __init__(self, raw: IO[bytes], name: str, budget: int, on_read, over: str,
                 max_start_tag_bytes: int):
        self._raw = raw
        self._name = name
        self._budget = budget
        self._on_read = on_read
        self._over = over
        self._tags = StartTagCheck(max_start_tag_bytes)

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
        if self._tags.feed(chunk):
            raise LimitExceededError(
                f"part {self._name} has a start tag longer than {self._tags.limit} bytes "
                "(max_start_tag_bytes; an element of too many or too long attributes)")
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

    def sizes(self) -> list[tuple[str, int]]:
        """``(part name, declared uncompressed bytes)`` of every part, in directory order."""
        return [(info.filename, info.file_size) for info in self._infos.values()]

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
            LimitExceededError: (while reading) the part inflates beyond its limit, or (an
                XML part) holds a start tag longer than ``max_start_tag_bytes``.
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
        return io.BufferedReader(_CountingReader(raw, name, budget, self._count, over,
                                                 self.limits.max_start_tag_bytes), 1 << 16)

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
