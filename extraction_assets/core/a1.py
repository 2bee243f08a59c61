"""A1 reference helpers (rows and columns are 1-based, as in Excel).

Column letters follow ECMA-376 Part 1, §18.17.2.4 (``A``..``XFD``, 1..16384).
"""

from __future__ import annotations

import re
from functools import lru_cache

_CELL_RE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")

MAX_ROW = 1_048_576
MAX_COL = 16_384


@lru_cache(maxsize=20_000)
def column_letter(col: int) -> str:
    """Return the column letters of a 1-based column index (1 -> ``A``, 28 -> ``AB``).

    Raises:
        ValueError: if ``col`` is not in 1..16384.
    """
    if not 1 <= col <= MAX_COL:
        raise ValueError(f"column index out of range: {col}")
    letters = ""
    while col:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


@lru_cache(maxsize=20_000)
def column_index(letters: str) -> int:
    """Return the 1-based index of column letters (``A`` -> 1, ``XFD`` -> 16384).

    Raises:
        ValueError: if the letters are not a valid column.
    """
    value = 0
    for ch in letters.upper():
        if not "A" <= ch <= "Z":
            raise ValueError(f"invalid column letters: {letters!r}")
        value = value * 26 + ord(ch) - 64
    if not 1 <= value <= MAX_COL:
        raise ValueError(f"column out of range: {letters!r}")
    return value


def cell_ref(row: int, col: int) -> str:
    """Return the A1 reference of a 1-based (row, col), e.g. (2, 3) -> ``C2``."""
    return f"{column_letter(col)}{row}"


def parse_cell_ref(ref: str) -> tuple[int, int]:
    """Parse an A1 cell reference (``$`` allowed) into 1-based (row, col).

    Raises:
        ValueError: if ``ref`` is not a cell reference within the sheet limits.
    """
    m = _CELL_RE.match(ref.strip())
    if not m:
        raise ValueError(f"invalid cell reference: {ref!r}")
    row = int(m.group(2))
    if not 1 <= row <= MAX_ROW:
        raise ValueError(f"row out of range in {ref!r}")
    return row, column_index(m.group(1))


def parse_range(ref: str) -> tuple[int, int, int, int]:
    """Parse ``A1:C3`` (or a single cell ``B2``) into (min_row, min_col, max_row, max_col).

    Raises:
        ValueError: if either end is not a valid cell reference.
    """
    first, _, last = ref.partition(":")
    r1, c1 = parse_cell_ref(first)
    r2, c2 = parse_cell_ref(last) if last else (r1, c1)
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def range_ref(min_row: int, min_col: int, max_row: int, max_col: int) -> str:
    """Return the A1 range for 1-based bounds; a single cell gives ``B2`` rather than ``B2:B2``."""
    start = cell_ref(min_row, min_col)
    if (min_row, min_col) == (max_row, max_col):
        return start
    return f"{start}:{cell_ref(max_row, max_col)}"
