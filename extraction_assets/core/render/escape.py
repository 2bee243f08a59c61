"""Escaping of cell texts, column-wise: JSON strings, HTML text, Markdown table cells and text (no
tag, link or emphasis of a cell's own survives, see :func:`md_cells`)."""

from __future__ import annotations

import re
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


#: Markdown escapes that keep a cell's text text when a chat UI renders the chunk as HTML
#: (CommonMark §2.4 backslash escapes, §6.6 raw HTML), in this order: ``\`` -> ``\\``,
#: ``[`` -> ``\[`` (no link or image, so no ``javascript:`` URL), ``<`` -> ``&lt;`` (no tag,
#: no autolink); the tags the renderings write themselves are then put back (:data:`_OWN_TAGS`).
_MD_TEXT_ESCAPES = (("\\", "\\\\"), ("[", "\\["), ("<", "&lt;"))
#: GFM table-cell escapes: those of text, ``|`` -> ``\|`` after the backslash, and line breaks
#: (CR LF, then LF) -> ``<br>``.
_MD_ESCAPES = (_MD_TEXT_ESCAPES[0], ("|", "\\|"), *_MD_TEXT_ESCAPES[1:], ("\r\n", "<br>"),
               ("\n", "<br>"))
#: The HTML the Markdown of a cell may hold: rich-text superscripts and subscripts (whose own
#: text :func:`~extraction_assets.pipeline.codecs.marked_strings` escapes) and line breaks.
_OWN_TAGS = r"&lt;(/?(?:sup|sub|br)>)"


def md_cells(texts: pa.Array) -> pa.Array:
    """:func:`md_cell` of every text, with Arrow kernels."""
    for old, new in _MD_ESCAPES:
        texts = pc.replace_substring(texts, old, new)
    return pc.replace_substring_regex(texts, _OWN_TAGS, r"<\1")


def md_cell(text: str) -> str:
    """Escape text for a GFM table cell (:data:`_MD_ESCAPES`): no HTML, link or pipe of the
    text reaches the rendered table."""
    return escape_md(text, _MD_ESCAPES)


def md_text(text: str) -> str:
    """Escape the text of a paragraph (notes, titles, forms, charts: :data:`_MD_TEXT_ESCAPES`):
    no HTML or link of the text reaches the rendered Markdown."""
    return escape_md(text, _MD_TEXT_ESCAPES)


def escape_md(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for old, new in escapes:
        text = text.replace(old, new)
    return re.sub(_OWN_TAGS, r"<\1", text) if "&lt;" in text else text


def per_row(values: pa.Array, offsets: np.ndarray, separator: str) -> pa.Array:
    """``values`` joined with ``separator`` per row, row ``i`` being ``offsets[i]:offsets[i+1]``."""
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)
    return pc.binary_join(lists, separator)


def wrap(prefix: str, values: pa.Array, suffix: str) -> pa.Array:
    return pc.binary_join_element_wise(prefix, values, suffix, "")
