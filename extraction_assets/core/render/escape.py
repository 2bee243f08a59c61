"""Escaping of cell texts, column-wise: JSON strings, HTML text, Markdown table cells and text (no
tag, link, autolink or emphasis of a cell's own survives, see :func:`md_cell`); and names and
text printed or shown with their control and bidirectional characters escaped
(:func:`printable`)."""

from __future__ import annotations

import re
from functools import partial
from html import escape
from json.encoder import encode_basestring
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.arrays import scatter


def _each_distinct(texts: pa.Array, fn: Callable[[str], str]) -> pa.Array:
    """``fn`` of every string of ``texts``, called once per distinct string (nulls stay null)."""
    if len(texts) == 0:
        return pa.array([], pa.string())
    encoded = pc.dictionary_encode(texts)
    mapped = pa.array([fn(t) for t in encoded.dictionary.to_pylist()], pa.string())
    return mapped.take(encoded.indices)


def _escaped(texts: pa.Array, pattern: str, fn: Callable[[str], str]) -> pa.Array:
    """``texts`` with ``fn`` applied to the strings that contain a match of the RE2 ``pattern``
    (once per distinct such string); the others, and nulls, as they are."""
    found = pc.fill_null(pc.match_substring_regex(texts, pattern), False)
    positions = np.flatnonzero(found.to_numpy(zero_copy_only=False))
    if not len(positions):
        return texts
    return scatter(texts, positions, _each_distinct(texts.take(pa.array(positions)), fn))


#: The characters ``json.dumps(..., ensure_ascii=False)`` escapes in a string (RFC 8259 §7).
_JSON_ESCAPED = r'[\x00-\x1f"\\]'
#: The characters ``html.escape`` replaces.
_HTML_ESCAPED = r"[&<>\"']"


def json_strings(texts: pa.Array) -> pa.Array:
    """Each string as a JSON string literal, as ``json.dumps(text, ensure_ascii=False)`` writes
    it (RFC 8259 §7); nulls stay null."""
    return wrap('"', _escaped(texts, _JSON_ESCAPED, lambda t: encode_basestring(t)[1:-1]), '"')


def html_texts(texts: pa.Array) -> pa.Array:
    """:func:`html.escape` of every string (``&``, ``<``, ``>``, ``"``, ``'``); nulls stay null."""
    return _escaped(texts, _HTML_ESCAPED, escape)


#: Markdown escapes that keep a text text when a chat UI renders it as CommonMark or as GFM with
#: autolinks: a backslash before each ASCII punctuation character that would start markup there
#: (CommonMark 0.31 §2.4: an escaped punctuation character renders as itself): ``\``, ````` (code),
#: ``*`` and ``~`` (emphasis, GFM strikethrough), ``[`` (links, images, footnotes), ``|`` (GFM table
#: cells), ``@`` (GFM and linkify e-mail autolinks), ``_`` but inside a word (where it never
#: emphasises, §6.2), a run of ``#`` ending the line after a blank or alone (an ATX heading's
#: closing sequence, §4.2; ``#N/A`` stays), a ``.`` between a letter and a letter or digit (a host
#: name: GFM's ``www.`` and linkify's fuzzy ``x.com`` links; ``1.5`` stays) and the first ``/`` of
#: ``//`` (``http://``, ``//host``; GFM extended autolinks §6.9).
_MD_INLINE = (r"[\\`*~\[|@]|(?<![^\W_])_|_(?![^\W_])|(?<!\S)#(?=#*[ \t]*$)"
              r"|(?<=[^\W\d_])\.(?=[^\W_])|(?<=[^\W_])\.(?=[^\W\d_])|/(?=/)")
#: Of a text as it is (not already HTML, see :func:`md_cell`): ``<`` (raw HTML, ``<http:..>``
#: autolinks, §6.5-6.6) and ``&`` starting an entity or character reference (``&amp;``, §2.5).
_MD_RAW = r"|<|&(?=#?\w+;)"
#: A line break, written ``<br>`` in a GFM table cell (a cell is one line).
_MD_BREAK = r"|\r\n?|\n"
#: What starts a block other than a list at the start of a line of paragraphs (:func:`md_text`;
#: CommonMark §4): ``>`` (block quote), ``#`` (ATX heading), ``=`` and a line of ``-`` (setext
#: heading underline, thematic break), the other blocks starting with characters escaped anywhere
#: (``*``, ``_``, `````, ``~``, ``<``, ``|``); and a line's leading blanks, dropped (four make a
#: code block) but before a list item. Lists stay lists: a document's list is written with their
#: markers (``-``, ``1.``, :mod:`~extraction_assets.core.documents.layout`), a note's ``- x`` lines
#: show as the list they are meant as, and a list holds no link or emphasis either.
_MD_LINE_START = r"^[ \t]*[>=#]|^[ \t]*-(?=[- \t]*$)|^[ \t]+(?![ \t]|[-+*][ \t]|\d{1,9}[.)][ \t])|"

_MD_CELL = re.compile(_MD_INLINE + _MD_RAW + _MD_BREAK)
_MD_CELL_MARKED = re.compile(_MD_INLINE + _MD_BREAK)
_MD_TEXT = re.compile(_MD_LINE_START + _MD_INLINE + _MD_RAW, re.MULTILINE)
_MD_TEXT_MARKED = re.compile(_MD_LINE_START + _MD_INLINE, re.MULTILINE)
#: An RE2 pattern found in every text that :data:`_MD_CELL` changes (:func:`md_cells` sends
#: only those to Python: numbers and most words are written as they are).
_MD_CELL_FOUND = r"[\\`*~\[|@_#<&\r\n]|//|[^\d\s]\.\S|\.[^\d\s]"


#: What :func:`_backslashed` writes before an ``@``: WORD JOINER (U+2060, default-ignorable:
#: it shows nothing), since cmark-gfm joins escaped characters into one text before it looks
#: for e-mail addresses, and an address whose ``@`` follows anything but a letter, digit or
#: ``.+-_`` is none (GFM §6.9, and linkify-it's ``fuzzyEmail``).
_WORD_JOINER = "\u2060"


def _backslashed(match: re.Match) -> str:
    """The escape of one match of the patterns above: a line break as ``<br>``, a line's
    leading blanks dropped, ``@`` after :data:`_WORD_JOINER`, else a backslash before its
    last character."""
    text = match.group().lstrip(" \t")
    if text[:1] in ("\r", "\n"):
        return "<br>"
    if text == "@":
        return _WORD_JOINER + "\\@"
    return text[:-1] + "\\" + text[-1] if text else ""


def without_escapes(text: str) -> str:
    """``text`` (Markdown of :func:`md_cell` or :func:`md_text`) without the characters the
    escapes add: backslashes and word joiners. For comparing a text with its Markdown (the
    text's own backslashes go too, on both sides)."""
    return text.replace("\\", "").replace(_WORD_JOINER, "")


def md_cells(markup: pa.Array, texts: pa.Array) -> pa.Array:
    """:func:`md_cell` of each cell: of its ``markup`` (rich text with superscripts or
    subscripts, ``marked``) where it has some, else of its text; with Arrow kernels, Python
    running once per distinct text that needs an escape."""
    return pc.coalesce(_escaped(markup, _MD_CELL_FOUND, partial(md_cell, marked=True)),
                       _escaped(texts, _MD_CELL_FOUND, md_cell))


def md_cell(text: str, marked: bool = False) -> str:
    """``text`` for a GFM table cell or an ATX heading: no HTML, link, autolink, emphasis or
    pipe of the text reaches the rendered Markdown, which shows the text itself (line breaks as
    ``<br>``). ``marked``: the text is already HTML (rich text whose runs are escaped, with
    ``<sup>``/``<sub>`` tags: :func:`~extraction_assets.pipeline.codecs.marked_strings`), its
    tags and character references are kept."""
    return (_MD_CELL_MARKED if marked else _MD_CELL).sub(_backslashed, text)


def md_text(text: str, marked: bool = False) -> str:
    """``text`` (lines) as Markdown paragraphs (notes, titles, forms, charts) that render as
    the text itself: :func:`md_cell`'s escapes, and no line starts a list, quote, heading,
    rule or code block (``marked``: see :func:`md_cell`)."""
    return (_MD_TEXT_MARKED if marked else _MD_TEXT).sub(_backslashed, text)


#: Characters a terminal or a rendered page acts on instead of showing them: C0 and C1 controls
#: but tab and line feed, DEL, and the bidirectional formatting characters (Unicode UAX #9 §2:
#: the marks ALM U+061C, LRM U+200E, RLM U+200F, the embeddings and overrides U+202A-U+202E, the
#: isolates U+2066-U+2069), which reorder what follows them (``rtl\u202eexe.txt`` shows as
#: ``rtltxt.exe``). Joiners and other invisible format characters (ZWJ in emoji, ZWNJ in
#: Persian) are part of the words they are in, and stay.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control and bidirectional formatting character (:data:`_CONTROL`)
    written as an escape (``\\x1b``, ``\\u202e``), so that a name from a file (an ESC sequence,
    a right-to-left override in a sheet name) cannot clear, retitle or reorder the terminal, nor
    reorder a heading where it is shown. Used for what is printed (the CLI) and for the names
    of the Markdown headings and header rows."""
    return _CONTROL.sub(lambda m: (f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                   else f"\\u{ord(m.group()):04x}"), text)


def per_row(values: pa.Array, offsets: np.ndarray, separator: str) -> pa.Array:
    """``values`` joined with ``separator`` per row, row ``i`` being ``offsets[i]:offsets[i+1]``."""
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)
    return pc.binary_join(lists, separator)


def wrap(prefix: str, values: pa.Array, suffix: str) -> pa.Array:
    return pc.binary_join_element_wise(prefix, values, suffix, "")
