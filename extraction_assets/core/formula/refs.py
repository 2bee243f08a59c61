"""The references a formula reads: each operand of a cell's formula that names cells, found by
openpyxl's formula tokenizer (:class:`openpyxl.formula.tokenizer.Tokenizer`, the grammar of
ECMA-376 Part 1 §18.17) and resolved to a sheet and 1-based bounds.

Nothing is followed: an external workbook reference (``[1]Sheet1!A1``) is listed as
``external`` and never opened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, column_index, parse_cell_ref, range_ref

_ROWS = re.compile(r"^\$?(\d{1,7}):\$?(\d{1,7})$")
_COLUMNS = re.compile(r"^\$?([A-Za-z]{1,3}):\$?([A-Za-z]{1,3})$")
_SHEET = r"'(?:[^']|'')*'|[^'!:]+"
#: ``Sheet1!A1:Sheet1!B2``: both ends of a range qualified by the same sheet
_BOTH_ENDS = re.compile(rf"^(?P<first>{_SHEET})!(?P<a>[^!:]+):(?P<second>{_SHEET})!(?P<b>[^!:]+)$")


@dataclass(frozen=True)
class Reference:
    """One reference of a formula.

    Attributes:
        text: the operand as written (``'My Sheet'!$A$1``, ``B2:B9``, ``Table1[#All]``).
        kind: ``cell``, ``range``, ``columns`` (``A:C``), ``rows`` (``1:3``), ``name`` (a
            defined name or a structured table reference, resolved by the caller),
            ``external`` (another workbook, never followed) or ``sheets`` (a 3-D reference
            over several sheets, ``Sheet1:Sheet3!A1``).
        sheet: the sheet it reads (the formula's own sheet when none is written); ``None``
            for ``name`` and ``external``.
        first_row, first_col, last_row, last_col: 1-based bounds (whole columns span rows
            1..1,048,576, whole rows columns 1..16,384); ``None`` where ``sheet`` is.
    """

    text: str
    kind: str
    sheet: str | None
    first_row: int | None = None
    first_col: int | None = None
    last_row: int | None = None
    last_col: int | None = None

    @property
    def a1_range(self) -> str | None:
        """The bounds as an A1 range without ``$`` (``B2:B9``, ``B2``), ``None`` for a name or
        an external or 3-D reference."""
        if self.first_row is None:
            return None
        return range_ref(self.first_row, self.first_col, self.last_row, self.last_col)

    def covers(self, row: int, col: int) -> bool:
        """Whether the 1-based cell (``row``, ``col``) of :attr:`sheet` is inside."""
        return (self.first_row is not None and self.first_row <= row <= self.last_row
                and self.first_col <= col <= self.last_col)


def _unquote(sheet: str) -> str:
    if len(sheet) >= 2 and sheet[0] == "'" and sheet[-1] == "'":
        return sheet[1:-1].replace("''", "'")
    return sheet


def _bounds(area: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """(kind, bounds) of an area without sheet (``$B$2:B9``, ``A:C``, ``1:3``), else ``None``."""
    m = _COLUMNS.match(area)
    if m:
        try:
            c1, c2 = column_index(m.group(1)), column_index(m.group(2))
        except ValueError:
            return None
        return "columns", (1, min(c1, c2), MAX_ROW, max(c1, c2))
    m = _ROWS.match(area)
    if m:
        r1, r2 = int(m.group(1)), int(m.group(2))
        if not (1 <= r1 <= MAX_ROW and 1 <= r2 <= MAX_ROW):
            return None
        return "rows", (min(r1, r2), 1, max(r1, r2), MAX_COL)
    first, colon, last = area.partition(":")
    try:
        r1, c1 = parse_cell_ref(first)
        r2, c2 = parse_cell_ref(last) if colon else (r1, c1)
    except ValueError:
        return None
    kind = "range" if colon and (r1, c1) != (r2, c2) else "cell"
    return kind, (min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2))


def parse_reference(text: str, sheet: str) -> Reference:
    """The :class:`Reference` of one range operand ``text`` of a formula on ``sheet``."""
    text = text.removeprefix("@")  # the implicit intersection operator of dynamic arrays
    if text.startswith("[") or "[" in text.rpartition("!")[0]:
        return Reference(text, "external", None)
    both = _BOTH_ENDS.match(text)
    if both and both["first"] == both["second"]:
        where, bang, area = both["first"], "!", f"{both['a']}:{both['b']}"
    else:
        where, bang, area = text.rpartition("!")
    target = _unquote(where) if bang else sheet
    if bang and ":" in target and not target.startswith("'"):
        return Reference(text, "sheets", None)
    found = _bounds(area)
    if found is None:
        return Reference(text, "name", None)
    kind, (r1, c1, r2, c2) = found
    return Reference(text, kind, target, r1, c1, r2, c2)


_END = re.compile(r"(\$?)([A-Za-z]{1,3})?(\$?)(\d{1,7})?")


def relative_reference(operand: str, row: int, col: int) -> str:
    """A range operand written relative to cell (``row``, ``col``) in R1C1 style (``B2`` in
    C3: ``R[-1]C[-1]``; ``$B$2``: ``R2C2``); a name as written."""
    where, bang, area = operand.rpartition("!")
    ends = []
    for end in area.split(":"):
        m = _END.fullmatch(end)
        if not m or not (m[2] or m[4]) or (":" not in area and not (m[2] and m[4])):
            return operand
        try:
            c = "" if not m[2] else (f"C{column_index(m[2])}" if m[1]
                                     else f"C[{column_index(m[2]) - col}]")
        except ValueError:
            return operand
        r = "" if not m[4] else (f"R{m[4]}" if m[3] else f"R[{int(m[4]) - row}]")
        ends.append(r + c)
    return where + bang + ":".join(ends)


def relative_shape(formula: str, row: int, col: int) -> str | None:
    """``formula`` (without ``=``) of cell (``row``, ``col``, 1-based) with every reference
    written relative to the cell, R1C1 style (ECMA-376 Part 1 §18.17.2.3): two cells whose
    shapes are equal compute the same function of the cells at the same offsets, as a shared
    formula's cells do (``B2*2`` in C2 and ``B3*2`` in C3: ``R[0]C[-1]*2``). ``None`` when the
    tokenizer cannot read the formula."""
    tokens = _tokens(formula)
    if tokens is None:
        return None
    return "".join(relative_reference(value, row, col) if kind == _RANGE else value
                   for kind, value in tokens)


_RANGE, _FUNCTION, _OTHER = 0, 1, 2


_DIGITS = re.compile(r"\d+")


@lru_cache(maxsize=4_096)
def _template(canonical: str) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """The tokens of a formula whose digit runs are all ``1``: (kind, the token's text split
    around its digit runs)."""
    try:
        items = Tokenizer("=" + canonical).items
    except (TokenizerError, ValueError, IndexError):
        return None
    return tuple(
        (_RANGE if t.type == Token.OPERAND and t.subtype == Token.RANGE
         else _FUNCTION if t.type == Token.FUNC and t.subtype == Token.OPEN else _OTHER,
         tuple(_DIGITS.split(t.value)))
        for t in items)


@lru_cache(maxsize=65_536)
def _tokens(formula: str) -> tuple[tuple[int, str], ...] | None:
    """(kind, text) of each token of a formula's text (without ``=``): a range operand, a
    function's opening (``SUM(``) or anything else; ``None`` when it cannot be read.

    The formulas of a column differ in their digits only (``B2*2``, ``B3*2``): the tokenizer
    runs once for the text with every digit run made ``1`` and each formula's own digit runs
    are put back in order (changing digits changes no token boundary)."""
    template = _template(_DIGITS.sub("1", formula))
    if template is None:
        return None
    runs = iter(_DIGITS.findall(formula))
    tokens = []
    for kind, pieces in template:
        text = pieces[0]
        for piece in pieces[1:]:
            text += next(runs) + piece
        tokens.append((kind, text))
    return tuple(tokens)


def formula_references(formula: str, sheet: str) -> list[Reference]:
    """Every reference of ``formula`` (its text without the leading ``=``, as the
    ``formula`` column holds it) on ``sheet``, in the order written (repeats kept).
    A formula the tokenizer cannot read gives ``[]``."""
    return [parse_reference(text, sheet) for kind, text in _tokens(formula) or ()
            if kind == _RANGE]


def formula_functions(formula: str) -> tuple[str, ...] | None:
    """The function names ``formula`` calls, upper case, in the order written (``_xlfn.``
    prefixes kept, as the file writes them), or ``None`` when the tokenizer cannot read it."""
    tokens = _tokens(formula)
    if tokens is None:
        return None
    return tuple(text[:-1].upper() for kind, text in tokens if kind == _FUNCTION)


def token_count(formula: str) -> int:
    """How many tokens ``formula`` has (0 when the tokenizer cannot read it)."""
    return len(_tokens(formula) or ())


#: The comparison operators of the formula grammar (ECMA-376 Part 1 §18.17.2.2).
_COMPARISONS = frozenset({"=", "<>", "<", ">", "<=", ">="})


def literals(formula: str) -> list:
    """The number and text literals of ``formula`` (texts without their quotes)."""
    found = []
    for kind, text in _tokens(formula) or ():
        if kind != _OTHER:
            continue
        if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
            found.append(text[1:-1].replace('""', '"'))
        else:
            try:
                found.append(float(text))
            except ValueError:
                pass
    return found


def whole_line_uses(formula: str) -> list[tuple[str, str | None, bool]]:
    """How ``formula`` uses each whole column or row it reads (``A:C``, ``1:3``): (the operand
    as written, the function whose parentheses directly hold it, upper case, ``None`` for plain
    parentheses or none, and whether a comparison operator stands inside those parentheses).
    ``SUM(A:A)>0``: ``("A:A", "SUM", False)``; ``SUM((A:A="")*1)``: ``("A:A", None, True)``."""
    frames: list[list] = [[None, False, []]]  # function, compares, whole-line operands
    uses: list[tuple[str, str | None, bool]] = []

    def close(frame: list) -> None:
        uses.extend((text, frame[0], frame[1]) for text in frame[2])

    for kind, text in _tokens(formula) or ():
        if kind == _FUNCTION:
            frames.append([text[:-1].upper(), False, []])
        elif kind == _OTHER and text == "(":
            frames.append([None, False, []])
        elif kind == _OTHER and text == ")" and len(frames) > 1:
            close(frames.pop())
        elif kind == _OTHER and text in _COMPARISONS:
            frames[-1][1] = True
        elif kind == _RANGE and parse_reference(text, "").kind in ("columns", "rows"):
            frames[-1][2].append(text)
    for frame in reversed(frames):
        close(frame)
    return uses
