"""XML helpers every OOXML reader shares: the parser options (no DTD, no entities, no network),
local names, OOXML string escapes (``_xHHHH_``) and libxml2's syntax errors in one line.
"""

from __future__ import annotations

import re
from typing import IO, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree

XML_OPTS = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def syntax_error_message(exc: etree.XMLSyntaxError) -> str:
    """libxml2's message of an XML syntax error with its line and column (e.g. ``Opening and
    ending tag mismatch: v line 3 and c, line 3, column 41``), without the ``(<string>, line
    3)`` that lxml appends to name the parser's input rather than the part."""
    return exc.msg or str(exc)


#: Bytes fed to a pull parser at a time.
PULL_BLOCK_BYTES = 1 << 16


def pull_events(parser: etree.XMLPullParser, stream: IO[bytes]) -> Iterator[tuple[str, object]]:
    """The events of ``parser`` as ``stream`` is fed to it block by block; the events before a
    syntax error are delivered before the error is raised (``iterparse`` of lxml 6.2 drops
    those of the block that holds the error), so a reader keeps what precedes the fault.

    Raises:
        lxml.etree.XMLSyntaxError: the XML is not well-formed (after the events before it).
    """
    for block in iter(lambda: stream.read(PULL_BLOCK_BYTES), b""):
        try:
            parser.feed(block)
        except etree.XMLSyntaxError:
            yield from parser.read_events()
            raise
        yield from parser.read_events()


_ESCAPE_RE = re.compile(r"_x([0-9A-Fa-f]{4})_")


def text_bytes(values: pa.Array) -> int:
    """Bytes (UTF-8) of the strings of ``values``, nulls counting nothing."""
    return pc.sum(pc.binary_length(values)).as_py() or 0


def local(tag) -> str:
    """Local name of a Clark-notation tag (``{ns}c`` -> ``c``); ``""`` for comments and PIs."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def unescape_xstring(text: str) -> str:
    """Decode the ``_xHHHH_`` escapes of an OOXML string (ST_Xstring, ECMA-376 Part 1 §22.9.2.19)."""
    if "_x" not in text:
        return text
    return _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def rich_text(si) -> str:
    """Text of a ``<si>``/``<is>`` element: plain ``<t>`` or rich-text runs ``<r><t>`` joined.

    Phonetic runs (``<rPh>``, ECMA-376 §18.4.6) and phonetic properties are excluded: they are
    reading aids, not cell text.
    """
    parts = []
    for child in si:
        tag = local(child.tag)
        if tag == "t":
            parts.append(child.text or "")
        elif tag == "r":
            for t in child:
                if local(t.tag) == "t":
                    parts.append(t.text or "")
    return unescape_xstring("".join(parts))


def child_elements(el, name: str) -> list:
    """The child elements of ``el`` whose local name is ``name`` (comments and processing
    instructions skipped)."""
    return [c for c in el if isinstance(c.tag, str) and local(c.tag) == name]


def child_element(el, name: str):
    """The first child element of ``el`` whose local name is ``name``; ``None`` if there is
    none or ``el`` is ``None``."""
    if el is None:
        return None
    for c in el:
        if isinstance(c.tag, str) and local(c.tag) == name:
            return c
    return None


def child_path(el, *names: str):
    """The element reached from ``el`` through first children named ``names`` in turn
    (``None`` when a step is missing)."""
    for name in names:
        el = child_element(el, name)
        if el is None:
            return None
    return el
