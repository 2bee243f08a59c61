"""The StyledGrid, the intermediate representation every later stage reads: one row per
non-empty cell, plus one per cell covered by a merged range (which takes the merge's top-left
value and records it in ``merged_from``), sorted by (row, col); rows and columns are 1-based.
Cells are found by their keys (``row * (MAX_COL + 1) + col``) with a binary search.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, range_ref

#: Arrow schema of a StyledGrid's cells (rows and columns 1-based).
GRID_SCHEMA = pa.schema([
    ("row", pa.int32()), ("col", pa.int32()), ("ref", pa.string()), ("value_type", pa.string()),
    ("raw_value", pa.string()), ("number_value", pa.float64()), ("iso_value", pa.string()),
    ("formula", pa.string()), ("value_status", pa.string()), ("number_format", pa.string()),
    ("display_text", pa.string()), ("bold", pa.bool_()), ("italic", pa.bool_()),
    ("font_size", pa.float64()), ("font_rgb", pa.string()), ("fill_rgb", pa.string()),
    ("has_border", pa.bool_()), ("indent", pa.int32()), ("merged_from", pa.string()),
    ("merge_range", pa.string()), ("cf_affected", pa.bool_()), ("hidden", pa.bool_()),
])
GRID_COLUMNS = tuple(GRID_SCHEMA.names)


def cell_keys(rows, cols) -> np.ndarray:
    """Keys ``row * (MAX_COL + 1) + col`` (int64) of 1-based cells: ascending keys are cells in
    (row, col) order, as Excel stores them."""
    return np.asarray(rows, dtype=np.int64) * (MAX_COL + 1) + np.asarray(cols, dtype=np.int64)


def find_cell(keys: np.ndarray, row: int, col: int) -> int | None:
    """Position of cell (row, col) in the ascending ``keys`` (:func:`cell_keys`), else ``None``."""
    key = row * (MAX_COL + 1) + col
    i = int(np.searchsorted(keys, key))
    return i if i < len(keys) and keys[i] == key else None


def cells_in_range(keys: np.ndarray, cols: np.ndarray, r1: int, c1: int, r2: int,
                   c2: int) -> np.ndarray:
    """Positions (ascending) of the cells of rows ``r1..r2`` and columns ``c1..c2`` among the
    ascending ``keys`` whose columns are ``cols``: a binary search for the rows, then a filter
    on the columns."""
    lo = int(np.searchsorted(keys, r1 * (MAX_COL + 1) + c1))
    hi = int(np.searchsorted(keys, r2 * (MAX_COL + 1) + c2, side="right"))
    positions = np.arange(lo, hi)
    if r2 > r1:
        inside = cols[lo:hi]
        positions = positions[(inside >= c1) & (inside <= c2)]
    return positions


@dataclass
class StyledGrid:
    """The StyledGrid of one sheet: an Arrow table of cells (:data:`GRID_SCHEMA`), sorted by
    (row, col), plus sheet facts.

    ``value_type`` is ``string``, ``number``, ``date``, ``bool``, ``error`` or ``empty`` (a
    formula with no cached value); ``value_status`` is ``ok``, ``uncached_formula`` (no cached
    value, none computed: the display text is the formula) or ``computed`` (no cached value;
    the value was computed, see :mod:`extraction_assets.core.formula.evaluate`);
    ``iso_value`` holds the ISO date/time of a date-formatted number; ``merged_from`` is the
    top-left reference of the merged range that covers the cell (``None`` for the top-left cell
    itself); ``merge_range`` is the merged range a cell belongs to; ``hidden`` is true when the
    cell's row or column is hidden; ``indent`` is the cell's alignment indent in levels
    (ECMA-376 §18.8.1 ``alignment/@indent``, 0 when not written: how row labels show their
    hierarchy). ``hidden_rows`` / ``hidden_columns`` are 1-based indices.
    """

    sheet_index: int
    sheet_name: str
    visibility: str
    kind: str
    declared_dimension: str | None
    merged_ranges: list[str]
    hidden_rows: list[int] = field(default_factory=list)
    hidden_columns: list[int] = field(default_factory=list)
    frozen_pane: str | None = None
    table: pa.Table = field(default_factory=GRID_SCHEMA.empty_table)
    _keys: np.ndarray | None = field(default=None, repr=False, compare=False)
    _cols: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def keys(self) -> np.ndarray:
        """:func:`cell_keys` of the cells (ascending, as the table is sorted), built once."""
        if self._keys is None:
            self._cols = self.table.column("col").to_numpy().astype(np.int64)
            self._keys = cell_keys(self.table.column("row").to_numpy(), self._cols)
        return self._keys

    def find(self, row: int, col: int) -> int | None:
        """Position in :attr:`table` of cell (row, col), else ``None``."""
        return find_cell(self.keys, row, col)

    def positions(self, r1: int, c1: int, r2: int, c2: int) -> np.ndarray:
        """Positions in :attr:`table` of the cells of rows ``r1..r2``, columns ``c1..c2``."""
        keys = self.keys  # builds the column array too
        return cells_in_range(keys, self._cols, r1, c1, r2, c2)

    @property
    def used_range(self) -> str | None:
        """A1 range spanning every cell of the grid, computed from the cells themselves."""
        if not self.table.num_rows:
            return None
        rows = pc.min_max(self.table.column("row")).as_py()
        cols = pc.min_max(self.table.column("col")).as_py()
        return range_ref(rows["min"], cols["min"], rows["max"], cols["max"])

    def records(self) -> list[dict]:
        """The cells as a list of dicts (one per cell), for tests and small sheets."""
        return self.table.to_pylist()
