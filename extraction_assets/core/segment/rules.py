"""Text patterns and limits the segmentation rules share: notes, unit lines, sentences, labels,
totals."""

from __future__ import annotations

import re

from extraction_assets.core.segment.totals import TOTAL_HINT_RE

NOTE_RE = re.compile(
    r"^\s*(※|\*|＊|†|‡|注\s*[\d０-９]*\s*[:：.．)）]|注記|備考\s*[:：]|[(（]注[\d０-９]*[)）]|"
    r"出典\s*[:：]|出所\s*[:：]|notes?\s*\d*\s*[:：.]|source\s*[:：]|remarks?\s*[:：])",
    re.IGNORECASE,
)
UNIT_RE = re.compile(
    r"^\s*[(（\[［【]?\s*(単位\s*[:：]|units?\s*[:：]|in\s+(thousands|millions|billions|hundreds)\b|"
    r"(usd|jpy|eur|gbp|us\$|\$|¥|円)\s*(thousands?|millions?|billions?|k|m|bn)\b|"
    r"(千|百万|十億|万|億)?円\s*[)）\]］】]?\s*$)",
    re.IGNORECASE,
)
#: A cell naming the unit of a table's values beside its caption (``Volumes | MMBtu``): a
#: currency (code or sign), percent, a unit of energy, power, volume, mass or time, a count
#: (``number``), a scale (``$ thousands``), or a rate of one (``$/MMBtu``, ``bbl/d``), in
#: brackets or not.
UNIT_WORD_RE = re.compile(
    r"^\s*[(（\[]?\s*(?:[$€£¥%]|usd|eur|gbp|jpy|cad|chf|cents?|percent|"
    r"(?:mm?|b|k|t)?(?:btu|cf|wh|w)|dths?|dekatherms?|therms?|bbls?|barrels?|gal(?:lons?)?|"
    r"m3|tons?|tonnes?|mt|lbs?|kg|mg|g|grams?|hours?|hrs?|days?|number|dollars?|"
    r"(?:[$€£¥]\s*)?(?:thousands?|millions?|billions?)|"
    r"\S{1,8}\s*/\s*\S{1,8})\s*[)）\]]?\s*$",
    re.IGNORECASE,
)
#: Types that show a row is data, not a header.
DATA_TYPES = ("number", "date", "bool")
#: Texts that stand for a missing value in a column of numbers or dates (compared stripped and
#: lowercased): pandas' default ``na_values`` (``read_csv``), the dashes and ``?`` people type
#: for "none" / "unknown", and their Japanese words (不明 unknown, 未定 undecided, なし none).
MISSING_VALUE_TEXTS = frozenset({
    "#n/a", "#n/a n/a", "#na", "-1.#ind", "-1.#qnan", "-nan", "1.#ind", "1.#qnan", "<na>",
    "n/a", "na", "null", "nan", "none", "-", "--", "–", "—", "－", "―", "?", "？", "??", "tbd",
    "tba", "unknown", "不明", "未定", "なし", "無し", "未", ".", "..", "...", "…"})
#: Text that reads as a number (Arrow regex, matched on the stripped display text): an optional
#: sign or comparison (``<.0001``), currency symbol, digits with ``,`` thousands separators or
#: none, decimals and a percent sign — ``'35.3'``, ``'1,091.0'``, ``'-5%'``, ``'$1,200'``.
#: Statistical agencies publish numbers as text (StatCan, HiTab); such a cell is numeric
#: evidence for every structure decision while its record keeps the text. Parentheses
#: (``(1)``) are not read as negatives: they number columns far more often in text.
NUMBER_TEXT = (r"^[<>≤≥]?[+\-−]?[$€£¥]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|"
               r"\.\d+)%?$")
#: A first-column line at least this long (and much longer than the column's values) is a note.
LONG_NOTE = 30


def reads_as_sentence(text: str) -> bool:
    """Whether ``text`` reads as a sentence: five or more words ending in ``.``, ``!`` or ``?``,
    or any text ending in a CJK full stop, exclamation or question mark (trailing blanks aside).
    A lone cell like this that no table takes as its title is ``text`` (titles are labels, not
    sentences). Linear in the text: only its end and its first five words are looked at."""
    tail = text.rstrip()
    return tail.endswith(("。", "！", "？")) or (
        tail.endswith((".", "!", "?")) and len(tail.split(maxsplit=4)) == 5)


#: A text this long, of several words, reads as prose (:func:`reads_as_prose`) even without a
#: full stop.
PROSE_CHARS = 50


def reads_as_prose(text: str) -> bool:
    """Whether ``text`` reads as prose rather than a label: a sentence
    (:func:`reads_as_sentence`) or a text of :data:`PROSE_CHARS` characters or more and six
    words or more. Column headers are labels; a cell like this is no column header."""
    return reads_as_sentence(text) or (len(text) >= PROSE_CHARS
                                       and len(text.split(maxsplit=5)) == 6)


#: Most regions the pairwise joins are tried on (sheets with more scattered cells keep 8-neighbourhood).
MAX_REGIONS = 2000
#: A label of a form ends with a colon (``Name:``, ``氏名：``).
LABEL_COLON = (":", "：")
#: Most header rows a table has (ECMA-376 does not bound them; real sheets stop at about four).
MAX_HEADER_ROWS = 4


def is_unit(text: str) -> bool:
    return len(text) <= 40 and bool(UNIT_RE.match(text))


#: Most characters of a cell of a units row (``percent``, ``$ thousands``, ``grams``).
UNIT_TEXT_CHARS = 24


def is_unit_word(text: str) -> bool:
    """Whether ``text`` names a unit on its own (:data:`UNIT_WORD_RE`, ``MMBtu``, ``$/bbl``) or
    is a unit line (:func:`is_unit`)."""
    return is_unit(text) or (len(text) <= 20 and bool(UNIT_WORD_RE.match(text)))


def is_label(text: str) -> bool:
    return text.endswith(LABEL_COLON) and len(text) > 1


NUMBERING_RE = re.compile(r"^\s*[(（\[]?\s*(\d{1,3})\s*[)）\]]?\s*$")


def is_total_row(first_text: str | None) -> bool:
    """Whether a row whose first non-empty cell reads ``first_text`` may be a total row
    (Total, Subtotal, Grand total, 合計, 小計, 総計...): a hint only, see :mod:`.totals`."""
    return bool(first_text and TOTAL_HINT_RE.search(first_text))


#: What every match of :data:`~.totals.TOTAL_HINT_RE` contains (an Arrow filter run first).
TOTAL_WORDS = "(?i)total|合計|小計|総計|累計"
#: What every aggregate formula of :func:`~.totals.aggregates_above` contains.
AGGREGATE_HINT = "(?i)sum|subtotal|aggregate|average|count|min|max|product|[+]"
