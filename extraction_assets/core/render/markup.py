"""Rich-text markup in renderings: cells whose text has superscripts or subscripts
(``<sup>``/``<sub>``, :func:`~extraction_assets.pipeline.codecs.cell_markup`) shown with them
in a block's Markdown, HTML and chunks, while records keep the plain text."""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape, unescape

import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import cell_ref, parse_cell_ref
from extraction_assets.core.blocks import RECORD_KINDS, Block
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.normalize import stripped_text


def apply_markup(block: Block, grid: StyledGrid, marked: dict[str, str]) -> Block:
    """The block with ``marked`` cell texts (A1 ref -> text with ``<sup>``/``<sub>``) used in
    its renderings: for a table through ``block.markup`` (a ``key_value`` block keeps it there
    too; its ``label: value`` lines stay plain), for text rebuilt line by line as HTML, the
    other cells' text escaped (:func:`marked_text`; the cells kept in ``block.markup`` too)."""
    inside = {ref: text for ref, text in marked.items()
              if block.min_row <= parse_cell_ref(ref)[0] <= block.max_row
              and block.min_col <= parse_cell_ref(ref)[1] <= block.max_col}
    if not inside:
        return block
    if block.kind in RECORD_KINDS:
        return replace(block, markup=inside)
    text = "\n".join(" ".join(inside.get(cell_ref(r, c), escape(t)) for c, t in cells)
                     for r, cells in shown_lines(grid, block))
    return replace(block, text=text, markup=inside)


def shown_lines(grid: StyledGrid, block: Block) -> list[tuple[int, list[tuple[int, str]]]]:
    """The rows of a block's area that show text, in order, each with its cells' ``(column,
    stripped display text)``: the cells that own their value (no merge-covered cell), not
    hidden, not blank; as :func:`~extraction_assets.core.segment.context.make_block` writes a
    text block's lines (one per row, its cells joined by a space)."""
    cells = grid.table.take(pa.array(grid.positions(block.min_row, block.min_col, block.max_row,
                                                    block.max_col), pa.int64()))
    texts = stripped_text(cells.column("display_text"))
    keep = pc.and_(pc.and_(pc.not_equal(texts, ""),
                           pc.invert(pc.fill_null(cells.column("hidden"), False))),
                   pc.is_null(cells.column("merged_from")))
    lines: dict[int, list[tuple[int, str]]] = {}
    for r, c, text in zip(pc.filter(cells.column("row"), keep).to_pylist(),
                          pc.filter(cells.column("col"), keep).to_pylist(),
                          pc.filter(texts, keep).to_pylist()):
        lines.setdefault(r, []).append((c, text))
    return sorted(lines.items())


def marked_text(block: Block) -> bool:
    """Whether ``block.text`` is HTML (as :func:`apply_markup` wrote it: text escaped,
    ``<sup>``/``<sub>`` tags), not text as it is."""
    return bool(block.markup) and block.kind not in RECORD_KINDS


def plain_text(block: Block) -> str:
    """``block.text`` as it reads: without the tags and references of a :func:`marked_text`."""
    return unescape(re.sub(r"</?su[pb]>", "", block.text)) if marked_text(block) else block.text
