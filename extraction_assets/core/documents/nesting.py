"""How deep a document nests, measured by a cheap streaming scan before Docling parses it
(``max_nesting_depth``): Docling's work grows with the depth times the size (100,000 nested
``<div>`` ran for minutes), and its readers recurse.

* **HTML** (:func:`check_html_depth`): the elements open at once, as BeautifulSoup's
  ``html.parser`` tree builder (Docling's) nests them: the same tokenizer (the standard
  library's ``HTMLParser``), void elements never open, an end tag closes up to the latest
  open element of its name and is ignored when none is open, no optional end tag implied.
* **XML parts** of a Word or PowerPoint package (:func:`check_xml_depth`): the elements open
  at once (tables in tables are ``tbl/tr/tc`` three levels each, groups of shapes
  ``grpSp`` one each).
* **Markdown** (:func:`check_markdown_depth`): the block quotes and list items around a line
  (CommonMark containers, 0.31 §5): the list items whose content column the line's indent
  reaches, and the ``>`` and list markers that start it.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from html.parser import HTMLParser
from typing import IO

from lxml import etree

from extraction_assets.core.errors import LimitExceededError

#: Elements BeautifulSoup's HTML tree builder never opens (they have no content).
VOID_ELEMENTS = frozenset((
    "area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame", "hr",
    "image", "img", "input", "isindex", "keygen", "link", "menuitem", "meta", "nextid", "param",
    "source", "spacer", "track", "wbr"))
#: Characters of HTML fed to the tokenizer at a time.
_HTML_STEP = 65_536
#: Bytes of an XML part fed to the parser at a time.
_XML_STEP = 65_536
#: One CommonMark container marker at the start of what is left of a line: a block quote
#: ``>`` (and one optional space), or a bullet or ordered list marker followed by spaces (or
#: the line's end).
_MD_MARKER = re.compile(r"[ ]{0,3}(?:>[ ]?|(?:[-+*]|\d{1,9}[.)])(?:[ ]{1,4}|$))")


def _too_deep(what: str, depth: int, limit: int) -> LimitExceededError:
    return LimitExceededError(f"{what} nests deeper than {limit} levels (at least {depth}); "
                              f"the limit is {limit} (max_nesting_depth)")


class _HtmlDepth(HTMLParser):
    """The open elements of an HTML page as BeautifulSoup's ``html.parser`` builder nests
    them; raises once more than ``limit`` are open."""

    def __init__(self, limit: int):
        super().__init__(convert_charrefs=False)
        self.limit = limit
        self.stack: list[str] = []
        self.open = Counter()

    def handle_starttag(self, tag, attrs) -> None:
        if tag in VOID_ELEMENTS:
            return
        self.stack.append(tag)
        self.open[tag] += 1
        if len(self.stack) > self.limit:
            raise _too_deep("the HTML page", len(self.stack), self.limit)

    def handle_startendtag(self, tag, attrs) -> None:
        pass  # opened and closed at once

    def handle_endtag(self, tag) -> None:
        if not self.open[tag]:
            return  # nothing to close: the tree builder ignores it
        while True:
            name = self.stack.pop()
            self.open[name] -= 1
            if name == tag:
                return


def check_html_depth(data: bytes, limit: int) -> None:
    """Refuse an HTML page with more than ``limit`` elements open at once (see the module
    docstring); the bytes are decoded as UTF-16 after its byte-order mark, else as UTF-8
    (tags are ASCII in every encoding a page may declare without one).

    Raises:
        LimitExceededError: the page nests deeper than ``limit``.
    """
    encoding = ("utf-16" if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
                else "utf-8")
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    parser = _HtmlDepth(limit)
    for at in range(0, len(data), _HTML_STEP):
        parser.feed(decoder.decode(data[at:at + _HTML_STEP]))
    parser.feed(decoder.decode(b"", final=True))
    parser.close()


def check_xml_depth(stream: IO[bytes], name: str, limit: int) -> None:
    """Refuse an XML part (``stream``, read to its end) with more than ``limit`` elements
    open at once. What is not well-formed XML stops the scan: the part's reader says what is
    damaged.

    Raises:
        LimitExceededError: the part nests deeper than ``limit``.
    """
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False,
                                 no_network=True, load_dtd=False)
    depth = 0

    def walk() -> None:
        nonlocal depth
        for event, element in parser.read_events():
            if event == "start":
                depth += 1
                if depth > limit:
                    raise _too_deep(f"part {name}", depth, limit)
                continue
            depth -= 1
            element.clear()  # keep no tree: only the depth is wanted
            while element.getprevious() is not None:
                del element.getparent()[0]

    for block in iter(lambda: stream.read(_XML_STEP), b""):
        try:
            parser.feed(block)
        except etree.XMLSyntaxError:
            walk()  # the elements met before (libxml2 stops past 256 levels itself)
            return
        walk()


def check_markdown_depth(data: bytes, limit: int) -> None:
    """Refuse Markdown with a line inside more than ``limit`` block quotes and list items
    (see the module docstring; a line indented 4 columns past its list items is code and
    opens nothing).

    Raises:
        LimitExceededError: a line nests deeper than ``limit``.
    """
    items: list[int] = []  # content columns of the open list items, innermost last
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.expandtabs(4)
        text = line.lstrip(" ")
        if not text:
            continue  # a blank line closes nothing by itself
        indent = len(line) - len(text)
        while items and items[-1] > indent:
            items.pop()
        if indent - (items[-1] if items else 0) >= 4:
            continue  # indented code
        depth, at, quoted = len(items), indent, False
        while True:
            match = _MD_MARKER.match(line, at)
            if match is None:
                break
            depth += 1
            if depth > limit:
                raise _too_deep("the Markdown text", depth, limit)
            quoted = quoted or match.group().lstrip(" ").startswith(">")
            at = match.end()
            if not quoted:
                items.append(at)  # a list item: lines indented this far are inside it
