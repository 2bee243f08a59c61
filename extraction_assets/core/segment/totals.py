"""Which rows of a table are totals: rows whose values aggregate the rows above them.

A leading word is at most a hint ("Total Fina Elf" is a company, ``Total-230`` a code). A row of
a table's data is a **total row** when

* one of its cells holds an aggregate formula over cells above it (:func:`aggregates_above`:
  ``SUM``, ``SUBTOTAL``, ``AGGREGATE``, ``AVERAGE``, ``COUNT``, ``COUNTA``, ``MIN``, ``MAX`` or
  ``PRODUCT`` of references that all lie above the row, or a sum of two or more single cells
  above, ``=B3+B4+B5``), in a column where fewer than half of the rows
  hold such a formula (a column computed on every row, like a running balance, is data); or
* its first shown cell reads like a total (:data:`TOTAL_HINT_RE`) and one of its numbers
  equals the sum of the same column's numbers over the rows above it (back to the previous
  total row, or all data rows above, or the total rows above: nested subtotals); or
* its first shown cell is exactly a total label (:data:`TOTAL_LABEL_RE`: ``Total``, ``Grand
  total``, ``Subtotal``, ``合計``, ``小計``, ``総計``, ``累計``, optionally with a colon) and the row
  holds a number; or
* Excel declares it (a ListObject's ``totalsRowCount``, a pivot table's subtotal and grand
  total rows): the caller adds those.
"""

from __future__ import annotations

import re

import numpy as np

from extraction_assets.core.a1 import column_index

#: A first cell that may start a total row (a hint, never enough alone).
TOTAL_HINT_RE = re.compile(r"^\s*((grand|sub)[\s-]*)?totals?\b|^\s*(合計|小計|総計|累計)",
                           re.IGNORECASE)
#: A first cell that is nothing but a total label.
TOTAL_LABEL_RE = re.compile(
    r"^\s*(((grand|sub)[\s-]*)?totals?|合計|小計|総計|累計|総合計)\s*[:：]?\s*$", re.IGNORECASE)
_AGGREGATE_RE = re.compile(
    r"^\s*=?\s*[+@]?\s*(?:_xlfn\.)?(SUM|SUBTOTAL|AGGREGATE|AVERAGE|COUNT|COUNTA|MIN|MAX|PRODUCT)"
    r"\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_REF_RE = re.compile(r"(?<![A-Za-z0-9_.!'\]])\$?([A-Za-z]{1,3})\$?(\d{1,7})"
                     r"(?::\$?([A-Za-z]{1,3})\$?(\d{1,7}))?(?![A-Za-z0-9_(!])")
_SUM_OF_CELLS_RE = re.compile(r"^\s*=?\s*\+?\s*\(?\s*\$?[A-Za-z]{1,3}\$?\d{1,7}"
                              r"(\s*\+\s*\$?[A-Za-z]{1,3}\$?\d{1,7})+\s*\)?\s*$")
#: Longest formula text looked at (a longer one is no simple aggregate).
_MAX_FORMULA = 2000


def aggregates_above(formula: str | None, row: int) -> bool:
    """Whether ``formula`` (as stored, with or without ``=``) aggregates cells of rows above
    ``row`` (1-based) of the same sheet: an aggregate function whose references all lie above
    ``row`` (a ``SUM`` of one cell is a subtotal of a one-row group), or a sum of two or more
    single cells above. References to another sheet
    or workbook (``Sheet2!A1``, ``[1]Data!A1``) do not count."""
    if not formula or len(formula) > _MAX_FORMULA or "!" in formula:
        return False
    m = _AGGREGATE_RE.match(formula)
    if m is None:
        if not _SUM_OF_CELLS_RE.match(formula):
            return False
        args = formula
    else:
        args = m.group(2)
        if m.group(1).upper() in ("SUBTOTAL", "AGGREGATE"):
            args = args.split(",", 1)[1] if "," in args else ""
    cells = 0
    for c1, r1, c2, r2 in _REF_RE.findall(args):
        top, bottom = int(r1), int(r2 or r1)
        if max(top, bottom) >= row:
            return False
        width = abs(column_index((c2 or c1).upper()) - column_index(c1.upper())) + 1
        cells += (abs(bottom - top) + 1) * width
    return cells >= 1


class ColumnSums:
    """The numbers of one column of a table's data rows (``nan`` where a row holds none), with
    prefix sums, for :meth:`is_sum` checks made in row order."""

    def __init__(self, values: np.ndarray):
        self.values = np.asarray(values, dtype=np.float64)
        known = ~np.isnan(self.values)
        self.sums = np.r_[0.0, np.cumsum(np.where(known, self.values, 0.0))]
        self.counts = np.r_[0, np.cumsum(known)]
        self._total_sum = 0.0
        self._total_count = 0
        self._last = -1

    def is_sum(self, i: int, tolerance_per_term: float = 0.005) -> bool:
        """Whether ``values[i]`` equals the sum of the numbers above it: since the last row
        :meth:`add_total` recorded, over all other rows above, or over the recorded total rows
        (two or more terms each; ``tolerance_per_term`` per term allows for rounding)."""
        v = self.values[i]
        if np.isnan(v):
            return False
        start = self._last + 1
        groups = ((self.sums[i] - self.sums[start], self.counts[i] - self.counts[start]),
                  (self.sums[i] - self._total_sum, self.counts[i] - self._total_count),
                  (self._total_sum, self._total_count))
        return any(n >= 2 and abs(s - v) <= tolerance_per_term * n + 1e-9 * abs(s)
                   for s, n in groups)

    def add_total(self, i: int) -> None:
        """Record row ``i`` (rows are recorded in ascending order) as a total row."""
        v = self.values[i]
        if not np.isnan(v):
            self._total_sum += float(v)
            self._total_count += 1
        self._last = i
