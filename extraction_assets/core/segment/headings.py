"""Heading levels from font sizes, per workbook (pure; no I/O).

Rules (deterministic):

* The **body size** is the mode of the font sizes of non-bold, non-empty visible cells; when
  there is none, the mode of all sizes of non-empty visible cells; when there is none, 11.
  Ties go to the smaller size.
* The distinct sizes used by **bold text cells** (``value_type == "string"``, non-empty,
  visible) are ranked descending and mapped to heading levels 2..6 (level 1 is the sheet name);
  with more than five sizes, the smallest ones all share level 6. A bold cell without a size
  counts as the body size.
* Non-bold cells never are headings; a workbook with no bold text cell has no heading levels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.normalize import stripped_text

DEFAULT_BODY_SIZE = 11.0
FIRST_LEVEL = 2  # H1 is the sheet name
LAST_LEVEL = 6


@dataclass(frozen=True)
class HeadingMap:
    """Body font size and the heading level of each bold font size (``{18.0: 2, 14.0: 3}``)."""

    body_size: float = DEFAULT_BODY_SIZE
    levels: dict[float, int] = field(default_factory=dict)

    def level(self, bold: bool | None, size: float | None) -> int | None:
        """Heading level (2..6) of a text cell with this style, ``None`` when it is no heading."""
        if not bold:
            return None
        return self.levels.get(float(size) if size is not None else self.body_size)


def _mode(counter: Counter) -> float | None:
    if not counter:
        return None
    best = max(counter.values())
    return min(size for size, n in counter.items() if n == best)


def detect_heading_levels(grids: Iterable) -> HeadingMap:
    """The :class:`HeadingMap` of a workbook, computed over all its visible StyledGrids (grids
    whose ``visibility`` is not ``visible`` are ignored), column-wise over their cells."""
    plain: Counter = Counter()
    every: Counter = Counter()
    bold_text_sizes: set[float | None] = set()
    for grid in grids:
        if getattr(grid, "visibility", "visible") != "visible":
            continue
        table = grid.table
        counted = pc.and_(pc.and_(pc.not_equal(stripped_text(table.column("display_text")), ""),
                                  pc.invert(pc.fill_null(table.column("hidden"), False))),
                          pc.is_null(table.column("merged_from")))
        cells = table.select(["font_size", "bold", "value_type"]).filter(counted)
        sizes = pc.cast(cells.column("font_size"), pa.float64())
        bold = pc.fill_null(cells.column("bold"), False)
        every.update(_counts(sizes))
        plain.update(_counts(sizes.filter(pc.invert(bold))))
        is_text = pc.fill_null(pc.equal(cells.column("value_type"), "string"), False)
        bold_text = pc.and_(bold, is_text)
        bold_text_sizes.update(pc.unique(sizes.filter(bold_text)).to_pylist())
    body = _mode(plain)
    if body is None:
        body = _mode(every)
    if body is None:
        body = DEFAULT_BODY_SIZE
    ranked = sorted({body if s is None else s for s in bold_text_sizes}, reverse=True)
    levels = {size: min(FIRST_LEVEL + k, LAST_LEVEL) for k, size in enumerate(ranked)}
    return HeadingMap(body, levels)


def _counts(sizes: pa.ChunkedArray) -> dict[float, int]:
    """Cells per font size (cells without a size are not counted)."""
    counts = pc.value_counts(sizes.drop_null()).to_pylist() if len(sizes) else []
    return {row["values"]: row["counts"] for row in counts}
