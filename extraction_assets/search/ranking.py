"""Structure-aware choices over a query's ranked units: the row of a table that answers it,
and the cell of that row it names.

The units a query ranks (:meth:`~extraction_assets.search.vectors.VectorStore.search`) find the
table; which of its rows answers is decided here, on the fields a record unit carries — its row
path (row-group labels, row label) and its value cells (header path, display text) — not on its
whole text, whose title and column headers every row of the table shares:

* :func:`best_row` scores each record of a table by the query's terms in its row path and in
  the values the query says whole, each term weighted by how few of the table's rows hold it
  (BM25's inverse document frequency over the rows) and by :data:`CONTEXT_WEIGHT` when the
  title or the column headers hold it too. The best row wins; among rows named alike, the one
  with a value in the column the query names, then — where the table labels those rows apart —
  the first in reading order (``Including … > 19 to 50`` before its twin ``Excluding … > 19 to
  50``), else the one the units ranked first. When the query names no row, the units'
  ranking decides. A comparison question (``which year has a lower … intake, 2004 or
  2015?``, ``which sex was more likely …``) is answered by the compared row with the largest
  or smallest number in the column it names (:func:`_compared`).
* :func:`best_cell` names the cell of that row whose header path holds the most weighted query
  terms (weights over the row's headers), when the query names a column at all.

Terms are the full-text index's own tokens (``tokenize``: ICU words, lower-cased, English
stems), so a label matches a query as the index would match it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

from extraction_assets.core.a1 import parse_range

#: the weight, in choosing a row, of a query term its table's title or headers hold too
CONTEXT_WEIGHT = 0.5
#: words of a question asking for the row with the largest number in a column
LARGEST = "more most higher highest larger largest greater greatest bigger biggest maximum"
#: and for the smallest
SMALLEST = "less least lower lowest smaller smallest fewer fewest minimum"

#: what may stand beside a value a query says whole (:func:`says`): a space (runs of
#: whitespace are one), sentence punctuation, brackets, quotes
_BOUNDARIES = frozenset(" ,;:?!()\"'")

Tokenize = Callable[[str], list[str]]


def _idf(n: int, df: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``n`` documents (always > 0)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _weighted_overlap(terms: set[str], docs: list[set[str]],
                      context: frozenset[str] | set[str] = frozenset()) -> list[float]:
    """For each of ``docs`` (term sets), the summed :func:`_idf` weights (over ``docs``) of the
    query ``terms`` it holds, a term of ``context`` weighing :data:`CONTEXT_WEIGHT` as much."""
    df = {t: sum(t in d for d in docs) for t in terms}
    weight = {t: _idf(len(docs), n) * (CONTEXT_WEIGHT if t in context else 1.0)
              for t, n in df.items() if n}
    return [sum(w for t, w in weight.items() if t in d) for d in docs]


class Terms:
    """Term sets of texts by ``tokenize``, each distinct text tokenized once."""

    def __init__(self, tokenize: Tokenize):
        self._tokenize = tokenize
        self._seen: dict[str, frozenset[str]] = {}

    def __call__(self, *texts: str) -> set[str]:
        out: set[str] = set()
        for text in texts:
            if text not in self._seen:
                self._seen[text] = frozenset(self._tokenize(text)) if text.strip() else frozenset()
            out |= self._seen[text]
        return out


def best_row(query: set[str], records: Sequence[dict], terms: Terms,
             ranked: dict[str, int], text: str = "") -> dict | None:
    """The record of ``records`` (the record units of one table or chunk: ``unit_id``,
    ``sheet_name``, ``a1_ranges``, ``title``, ``row_path``, ``cells``) that the query's
    ``query`` terms name (see the module docstring): by the weighted terms of its row path and
    of the values the query's ``text`` says whole (:func:`says`); among rows named alike, by
    the weighted terms of the headers of its non-empty cells (a row with a value in the column
    the query names before one without), then by the share of its row label the query says;
    then, among twins (one row label under different row groups, the later
    sections repeating the first's), the first in reading order, and among other rows the
    one the units' ranking (``ranked``) put first. A term of the table's title or column
    headers weighs :data:`CONTEXT_WEIGHT` as much: it places the table or names a column more
    than it picks a row. When the query names no row, ``ranked`` (the rank of the records the
    units' ranking returned, by unit id) decides alone. A comparison question's answer comes
    first (:func:`_compared`). ``None`` when ``records`` is empty or no record is named or
    ranked."""
    if not records:
        return None
    compared = _compared(query, records, terms, text)
    if compared is not None:
        return compared
    context = terms(*{r["title"] for r in records},
                    *{c["header"] for r in records for c in r["cells"]})
    labels = [terms(*r["row_path"]) for r in records]
    named = _weighted_overlap(query, [own | _whole_values(text, r, terms)
                                      for r, own in zip(records, labels)], context)
    top = max(named)
    if top <= 0:
        hit = [r for r in records if r["unit_id"] in ranked]
        return min(hit, key=lambda r: ranked[r["unit_id"]]) if hit else None
    columns = _weighted_overlap(query, [terms(*(c["header"] for c in r["cells"])) - own
                                        for r, own in zip(records, labels)], context)
    tied = [i for i, n in enumerate(named) if n >= top - 1e-9]
    most = max(columns[i] for i in tied)
    tied = [records[i] for i in tied if columns[i] >= most - 1e-9]
    said = [_said(query, r, terms) for r in tied]  # a label said whole before one word of it
    tied = [r for r, x in zip(tied, said) if x >= max(said) - 1e-9]
    if len({tuple(r["row_path"]) for r in tied}) == len(tied) and tied[0]["row_path"]:
        # rows the table labels apart, named alike: its reading order (a later section
        # repeats the first's labels; of rows a question names together, the first)
        return min(tied, key=_reading_order)
    return min(tied, key=lambda r: (ranked.get(r["unit_id"], len(ranked)), _reading_order(r)))


def _said(query: set[str], record: dict, terms: Terms) -> float:
    """The share of the terms of ``record``'s row label (the last level of its row path) in
    the query's ``query`` terms (0 without a row path): ``Garlic`` is said whole by "garlic
    or currants", ``Black, white, or red currants`` only in part."""
    label = terms(*record["row_path"][-1:])
    return len(label & query) / len(label) if label else 0.0


def says(text: str, value: str) -> bool:
    """Whether a query's ``text`` says ``value`` whole: the value (case and runs of spaces
    ignored) stands in the text between spaces, its ends or sentence punctuation — ``Texla``
    in ``ENE Letters of Texla``, ``45 mp`` in ``Month of 45 mp``, but not ``31`` in
    ``RRC 10/31/96`` nor ``in`` in a comment."""
    value = _normal(value)
    if not value:
        return False
    text = _normal(text)
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        if (start == 0 or text[start - 1] in _BOUNDARIES) and \
                (end == len(text) or text[end] in _BOUNDARIES):
            return True
        start = text.find(value, start + 1)
    return False


@functools.lru_cache(maxsize=4096)
def _normal(text: str) -> str:
    """``text`` lower-cased, its runs of whitespace one space (a query is compared with every
    value of a table: each is made once)."""
    return " ".join(text.split()).lower()


def _whole_values(text: str, record: dict, terms: Terms) -> set[str]:
    """The terms of the values of ``record`` the query's ``text`` says whole (:func:`says`:
    a key, a code, a date; a word shared with a free-text cell is no match)."""
    out: set[str] = set()
    for cell in record["cells"]:
        if says(text, cell["value"]):
            out |= terms(cell["value"])
    return out


def _reading_order(record: dict) -> tuple[str, int]:
    """Sheet, then first row of ``record``'s A1 range: its place in reading order."""
    return record["sheet_name"], parse_range(record["a1_ranges"][0])[0]


def best_cell(query: set[str], record: dict, terms: Terms, text: str = "") -> dict | None:
    """The value cell of ``record`` (``{"ref", "header", "value"}``) whose header path holds
    the query's ``query`` terms with the most weight (weights over the record's headers; the
    leftmost among equals), the terms of the record's row path and of the values the query's
    ``text`` says whole left out, and those cells too, or ``None`` when no header holds any.
    The words that named the row are not the column's: "aged 2 to 8" is no "… > to", and in
    "county of Loop Field" the cell ``FIELD: Loop Field`` is the key, ``COUNTY`` the answer."""
    keys = [c for c in record["cells"] if says(text, c["value"])]
    cells = [c for c in record["cells"] if c not in keys]
    if not cells:
        return None
    scores = _weighted_overlap(query - terms(*record["row_path"], *(c["value"] for c in keys)),
                               [terms(c["header"]) for c in cells])
    top = max(scores)
    if top <= 0:
        return None
    return dict(cells[scores.index(top)])


def _number(text: str) -> float | None:
    """The number a displayed value shows (``1,234``, ``12.5%``, ``(6)`` = -6, ``$3``), or
    ``None``."""
    t = text.strip().replace(",", "").replace("$", "").rstrip("%").strip()
    negative = t.startswith("(") and t.endswith(")")
    try:
        value = float(t.strip("()"))
    except ValueError:
        return None
    return -value if negative else value


def _compared(query: set[str], records: Sequence[dict], terms: Terms, text: str) -> dict | None:
    """The record a comparison question answers, or ``None``. The query asks for the largest
    or for the smallest (a word of :data:`LARGEST` or of :data:`SMALLEST`, not both) among
    rows it names: two or more row labels it says whole (:func:`says`; ``2004 or 2015``),
    else the rows under a row-group label it says whole (``which sex``); a label made of the
    comparison's words alone (a quintile ``Lowest``) names nothing. Of these, the rows of one
    group compete — the group whose path holds most query terms, then the first in reading
    order (of twin sections, the first) — and the one with the largest (smallest) number in
    the column the query names (:func:`best_cell` of that group's first row) answers.
    ``None`` when the query compares nothing, fewer than two rows compete, no column is
    named, or a competing row shows no number there."""
    words = terms(LARGEST), terms(SMALLEST)
    largest = bool(query & words[0])
    if largest == bool(query & words[1]):
        return None

    def named(label: str) -> bool:  # said whole, and not as the comparison ("Lowest" quintile)
        return says(text, label) and not terms(label) <= words[0] | words[1]

    rows = [r for r in records if r["row_path"] and named(r["row_path"][-1])]
    if len(rows) < 2:
        rows = [r for r in records if len(r["row_path"]) >= 2 and named(r["row_path"][-2])
                and not named(r["row_path"][-1])]
    if len(rows) < 2:
        return None
    # the rows of one group: the one whose path the query names most, the first of twins
    first = min(rows, key=lambda r: (-len(query & terms(*r["row_path"][:-1])),
                                     _reading_order(r)))
    rows = [r for r in rows if r["row_path"][:-1] == first["row_path"][:-1]]
    cell = best_cell(query, first, terms, text)
    if len(rows) < 2 or cell is None:
        return None
    values = []
    for r in rows:
        value = next((_number(c["value"]) for c in r["cells"] if c["header"] == cell["header"]),
                     None)
        if value is None:
            return None
        values.append(value)
    pick = max if largest else min
    return rows[values.index(pick(values))]
