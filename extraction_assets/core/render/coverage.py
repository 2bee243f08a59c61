"""The no-value-lost rule: every cell holding a value reaches its block's records, header or text,
and that a chunk (:func:`unreached_cells`, :class:`ChunkReach`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, cell_ref
from extraction_assets.core.blocks import FLOATING_KINDS, Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.normalize import stripped_text
from extraction_assets.core.render.chunks import Chunk
from extraction_assets.core.render.escape import without_escapes
from extraction_assets.core.render.markdown import headings_markdown
from extraction_assets.core.render.records import RecordSet
from extraction_assets.core.trust.colour import untagged


class ChunkReach:
    """Which blocks, and which rows of a table, the chunks of a workbook reach.

    ``blocks`` are the blocks the chunks were cut from (as cut: with their markup), ``chunks``
    the chunks of their sheets. A table reaches a chunk that lists it in ``block_ids``, a
    record of it one that lists its row in ``rows`` too (:attr:`rows`). A title reaches the
    chunks that show its text as a heading (in ``heading_path``) or in their body; a text,
    form, chart or picture block the chunks whose body, among those listing it, holds its text,
    whitespace and Markdown escapes aside (a text cut in parts is their bodies joined; see
    :func:`~.escape.md_text`). The work grows linearly with the chunks' text and rows.

    Attributes:
        missing: ``block_id -> why`` of every block that reaches no chunk.
        rows: ``block_id -> 1-based sheet rows`` (sorted int64 array) of the records of each
            table that are in a chunk.
    """

    def __init__(self, blocks: list[Block], chunks: list[Chunk]):
        tables = {b.block_id for b in blocks if b.kind == BlockKind.TABLE}
        headings: dict[str, set[str]] = {}
        bodies: dict[str, list[str]] = {}
        rows: dict[str, list[list[int]]] = {}
        for chunk in chunks:
            headings.setdefault(chunk.sheet_name, set()).update(chunk.heading_path)
            head = headings_markdown(chunk.heading_path) + "\n\n"
            body = chunk.text[len(head):] if chunk.text.startswith(head) else chunk.text
            for block_id in chunk.block_ids:
                if block_id in tables:
                    rows.setdefault(block_id, []).append(chunk.rows)
                else:
                    bodies.setdefault(block_id, []).append(body)
        self.rows = {block_id: np.unique(np.concatenate(
            [np.asarray(r, dtype=np.int64) for r in lists])) for block_id, lists in rows.items()}
        self.missing: dict[str, str] = {}
        for block in blocks:
            if block.kind == BlockKind.TABLE:
                if block.block_id not in rows:
                    self.missing[block.block_id] = f"table {block.a1_range} in no chunk"
            elif not (block.kind == BlockKind.TITLE
                      and block.text in headings.get(block.sheet_name, ())) and \
                    _squeezed(block.text) not in _squeezed(
                        "".join(bodies.get(block.block_id, ()))):
                self.missing[block.block_id] = f"{block.kind} block {block.a1_range} " \
                    "in no chunk's text"


def _squeezed(text: str) -> str:
    """``text`` without whitespace (a text cut between chunks is found across the cut) and
    what Markdown escapes add (:func:`~.escape.without_escapes`)."""
    return "".join(without_escapes(text).split())


def unreached_cells(sheets: list[tuple[StyledGrid, list[Block]]], record_set: RecordSet,
                    reach: ChunkReach | None = None) -> list[tuple[str, str, str, str]]:
    """Every cell that holds a value and reaches no output: ``(sheet name, A1 ref, display
    text, where)``. ``sheets`` are the visible sheets' grids with all their blocks (the grids
    in the order ``record_set`` was built from, that set holding their tables and forms);
    ``reach`` what the chunks cut from them reach (``None``: no chunk is sought, the block's
    own output suffices).

    A non-empty cell of a shown row and column, not covered by a merge (its value is its
    anchor's), must be in a block and, there: in a table's header rows, a level of a column's
    header path (a merged header cell stands over several columns); in its data rows, a
    record's own value (a row repeating the header counts as the header); in a form, its label
    or a value; in any other block, in its text. A colour tag shown after a cell's text
    (:func:`~extraction_assets.core.trust.colour.untagged`) is not part of the value sought
    in headers, labels and text, which the blocks hold untagged. With ``reach``, the block must
    reach a chunk too and, in a table, a data cell's record (:class:`ChunkReach`).
    """
    out: list[tuple[str, str, str, str]] = []
    for (grid, blocks), base in zip(sheets, record_set.bases):
        table = grid.table
        if not table.num_rows:
            continue
        owned = np.flatnonzero(bool_array(pc.and_(
            pc.and_(pc.not_equal(stripped_text(table.column("display_text")), ""),
                    pc.invert(pc.fill_null(table.column("hidden"), False))),
            pc.is_null(table.column("merged_from")))))
        lost = np.zeros(len(table), dtype=bool)
        lost[owned] = True
        why: dict[int, str] = {}
        reached = record_set.reached[base:base + len(grid)]
        texts = table.column("display_text")
        for block in blocks:
            if block.kind in FLOATING_KINDS:
                continue
            inside = grid.positions(block.min_row, block.min_col, block.max_row, block.max_col)
            inside = inside[lost[inside]]
            if not len(inside):
                continue
            lost[inside] = False
            rows = grid.keys[inside] // (MAX_COL + 1)
            if block.kind == BlockKind.TABLE:
                header = rows < block.min_row + block.header_row_count
                # a units row's cells are in the keys of the records below it
                data = ~header & ~np.isin(rows, [*block.skip_rows, *block.unit_rows]) \
                    & ~reached[inside]
                every = {level for c in block.columns for level in c.header_levels}
                every |= {c.header for c in block.columns}
                for p in inside[header].tolist():
                    if " ".join(untagged(texts[p].as_py()).split()) not in every:
                        lost[p], why[p] = True, f"header cell of table {block.a1_range} " \
                            "in no column's header"
                for p in inside[data].tolist():
                    lost[p], why[p] = True, f"cell of table {block.a1_range} in no record"
                if reach is not None and block.block_id not in reach.missing:
                    chunked = reach.rows[block.block_id]  # sorted
                    # a units row is in the header line of the chunks of the rows below it
                    units = np.isin(rows, block.unit_rows) & (
                        rows < (chunked[-1] if len(chunked) else 0))
                    unchunked = ~header & ~np.isin(rows, block.skip_rows) & ~lost[inside] \
                        & ~np.isin(rows, chunked) & ~units
                    for p in inside[unchunked].tolist():
                        lost[p], why[p] = True, f"cell of table {block.a1_range} whose " \
                            "record is in no chunk"
            elif block.kind == BlockKind.KEY_VALUE:
                labels = {c.header for c in block.columns} | {
                    level for c in block.columns for level in c.header_levels}
                for p in inside[~reached[inside]].tolist():
                    text = untagged(texts[p].as_py()).strip()
                    if text not in labels and text.rstrip(":：").strip() not in labels:
                        lost[p], why[p] = True, f"cell of form {block.a1_range} in no pair"
            else:
                # the text holds its cells in reading order: each is sought after the one
                # before (linear in the text), and anywhere only when not found there
                cursor = 0
                for p in inside.tolist():
                    text = untagged(texts[p].as_py()).strip()
                    at = block.text.find(text, cursor)
                    if at >= 0:
                        cursor = at + len(text)
                    elif text not in block.text:
                        lost[p], why[p] = True, f"cell of {block.kind} block {block.a1_range} " \
                            "not in its text"
            if reach is not None and block.block_id in reach.missing:
                for p in inside[~lost[inside]].tolist():
                    lost[p], why[p] = True, f"cell of {reach.missing[block.block_id]}"
        for p in np.flatnonzero(lost).tolist():
            r, c = divmod(int(grid.keys[p]), MAX_COL + 1)
            out.append((grid.sheet_name, cell_ref(r, c), texts[p].as_py(),
                        why.get(p, "in no block")))
    return out


def bool_array(values: pa.Array) -> np.ndarray:
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)
