"""What a fill colour means, as the workbook's own legend says: colour clusters and legends.

Cells are **clustered by resolved fill RGB** (``RRGGBB``, theme and tint applied, see
:func:`~extraction_assets.core.normalize.resolve_color`). A cell inside a conditional-format
range (ECMA-376 Part 1 §18.3.1.18) is left out of every cluster: the colour Excel shows there
depends on the rule, not on the fill written in the cell's style.

A **legend** is a list of colour swatches, each a filled cell that shows nothing (or a single
symbol such as ``■``), with a short text label in the cell right of it (``[red] | overdue``).
At least two swatches of different colours in one column on nearby rows (at most one empty row
between them), or in one row at every other column, make a legend: one filled cell beside a
word is not. The text just above the legend's first swatch or label names what the colours
say (``Status`` gives tags ``status: overdue``); without one, or when it only says
``Legend`` / ``Key``, the key is ``colour``.

Legends give **draft** mappings colour -> meaning; a person confirms or rejects them (see
:mod:`extraction_assets.store.decisions`). Only a confirmed (active) mapping tags cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, cell_ref

#: Longest label a legend entry may have (characters).
MAX_LABEL_CHARS = 40
#: Captions that only say "this is a legend": the key is then ``colour``.
GENERIC_CAPTIONS = {"legend", "key", "colour key", "color key", "colour legend", "color legend",
                    "colours", "colors", "凡例"}
#: What a swatch cell may show (RE2 and Python syntax): nothing, or one symbol.
SWATCH_TEXT = r"^\s*[■□●○◆◇▲△★☆█▇▆▅▪▫•xX✓✔]?\s*$"
_SWATCH_TEXT = re.compile(SWATCH_TEXT)
#: How a cell of a confirmed colour shows its tag after its display text:
#: ``INV-7`` + ``TAG_OPEN`` + ``status: overdue`` + ``TAG_CLOSE``.
TAG_OPEN, TAG_CLOSE = " ⟦", "⟧"
_TAG_SUFFIX = re.compile(re.escape(TAG_OPEN) + "[^⟦⟧]*" + re.escape(TAG_CLOSE) + "$")


def untagged(text: str) -> str:
    """``text`` without the colour tag a confirmed mapping appended to it (see
    :data:`TAG_OPEN`); other text unchanged."""
    return _TAG_SUFFIX.sub("", text)


@dataclass(frozen=True)
class LegendEntry:
    """One swatch of a legend: the sheet, the swatch cell and its label cell (A1), the
    swatch's fill (``RRGGBB``), the label text and the key (``status``, or ``colour``)."""

    sheet_name: str
    swatch_ref: str
    label_ref: str
    fill_rgb: str
    label: str
    key: str

    @property
    def tag(self) -> str:
        """The tag a confirmed mapping gives cells of this colour: ``key: label``."""
        return f"{self.key}: {self.label}"


@dataclass(frozen=True)
class SheetColours:
    """What legend detection reads of one sheet: every cell with a fill, outside
    conditional-format ranges (1-based ``rows``/``cols``, ``fills`` as ``RRGGBB``, ``texts``
    the display text, ``""`` for a cell that shows nothing), and the display text of every
    non-empty cell by key (``row * (MAX_COL + 1) + col``)."""

    sheet_name: str
    rows: np.ndarray
    cols: np.ndarray
    fills: list[str]
    texts: list[str]
    text_at: dict[int, str]


def key_of(row: int, col: int) -> int:
    return row * (MAX_COL + 1) + col


def in_ranges(rows: np.ndarray, cols: np.ndarray, ranges: list[tuple[int, int, int, int]]
              ) -> np.ndarray:
    """Whether each cell (1-based rows and columns) lies in any of ``ranges`` (r1, c1, r2, c2)."""
    inside = np.zeros(len(rows), bool)
    for r1, c1, r2, c2 in ranges:
        inside |= (rows >= r1) & (rows <= r2) & (cols >= c1) & (cols <= c2)
    return inside


def colour_clusters(cells: pa.Table) -> dict[str, tuple[int, int]]:
    """Non-empty cells of StyledGrid ``cells`` (columns ``fill_rgb``, ``cf_affected``,
    ``display_text``) by fill colour: ``RRGGBB -> (cells clustered, cells left out because a
    conditional format covers them)``, sorted by colour."""
    filled = cells.filter(pc.and_(pc.is_valid(cells.column("fill_rgb")),
                                  pc.not_equal(cells.column("display_text"), "")))
    counts = filled.select(["fill_rgb", "cf_affected"]).group_by(
        ["fill_rgb", "cf_affected"]).aggregate([([], "count_all")]).to_pylist()
    out: dict[str, list[int]] = {}
    for row in counts:
        out.setdefault(row["fill_rgb"], [0, 0])[1 if row["cf_affected"] else 0] += \
            row["count_all"]
    return {rgb: (n, cf) for rgb, (n, cf) in sorted(out.items())}


def _label(text: str | None) -> str | None:
    text = (text or "").strip()
    if not text or len(text) > MAX_LABEL_CHARS or re.fullmatch(r"[-+\d.,%/: ]+", text):
        return None
    return text


def _key(caption: str | None) -> str:
    text = (caption or "").strip().rstrip(":").strip()
    if not text or text.lower() in GENERIC_CAPTIONS or len(text) > MAX_LABEL_CHARS:
        return "colour"
    return text.lower()


def find_legends(sheet: SheetColours) -> list[LegendEntry]:
    """The legend entries of one sheet (see the module docstring), ordered by swatch row and
    column; one entry per swatch. A colour listed twice keeps its first label."""
    pairs = []  # (row, col, fill, label)
    for r, c, fill, text in zip(sheet.rows.tolist(), sheet.cols.tolist(), sheet.fills,
                                sheet.texts):
        if not _SWATCH_TEXT.match(text):
            continue
        label = _label(sheet.text_at.get(key_of(r, c + 1)))
        if label is not None:
            pairs.append((r, c, fill, label))
    legends: list[list[tuple]] = []
    by_col: dict[int, list[tuple]] = {}
    for pair in sorted(pairs):
        by_col.setdefault(pair[1], []).append(pair)
    for col_pairs in by_col.values():  # vertical lists: nearby rows of one column
        run = [col_pairs[0]]
        for pair in col_pairs[1:]:
            if pair[0] - run[-1][0] <= 2:
                run.append(pair)
            else:
                legends.append(run)
                run = [pair]
        legends.append(run)
    by_row: dict[int, list[tuple]] = {}
    for pair in pairs:
        by_row.setdefault(pair[0], []).append(pair)
    for row_pairs in by_row.values():  # horizontal: swatch, label, swatch, label...
        row_pairs.sort(key=lambda p: p[1])
        run = [row_pairs[0]]
        for pair in row_pairs[1:]:
            if pair[1] - run[-1][1] == 2:
                run.append(pair)
            else:
                legends.append(run)
                run = [pair]
        legends.append(run)
    entries: dict[tuple[int, int], LegendEntry] = {}
    for run in legends:
        if len({fill for _, _, fill, _ in run}) < 2:
            continue
        r0, c0 = run[0][0], run[0][1]
        caption = sheet.text_at.get(key_of(r0 - 1, c0)) or sheet.text_at.get(key_of(r0 - 1, c0 + 1))
        key = _key(caption)
        for r, c, fill, label in run:
            entries.setdefault((r, c), LegendEntry(sheet.sheet_name, cell_ref(r, c),
                                                   cell_ref(r, c + 1), fill, label, key))
    seen: set[str] = set()
    out = []
    for _, entry in sorted(entries.items()):
        if entry.fill_rgb not in seen:
            seen.add(entry.fill_rgb)
            out.append(entry)
    return out
