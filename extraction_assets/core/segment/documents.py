"""The blocks of a document's sheet: declared by its reader, not found by the worksheet rules.

A Word, PowerPoint, PDF, HTML or Markdown file says what each item is (heading, paragraph,
list, table, picture, chart); :mod:`extraction_assets.core.documents` lays the items out on a
sheet and declares each as a ``document_item`` object. :func:`document_blocks` makes them
blocks: headings are ``title`` blocks with their level, and every block's heading path is the
sheet name and the headings above it (a heading replacing those of its level and deeper), then
a table's caption; a table's header rows are at least those the source declares, more when the
worksheet header rules find them (a merged parent header over sub-headers, text rows over
numbers), and its columns, total rows and group rows follow those rules
(:func:`~.header.find_header`, :func:`~.rows.mark_data_rows`).
"""

from __future__ import annotations

from extraction_assets.core.a1 import parse_range
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.model import SheetObject
from extraction_assets.core.segment.context import SheetContext
from extraction_assets.core.segment.header import find_header
from extraction_assets.core.segment.headings import HeadingMap
from extraction_assets.core.segment.rows import mark_data_rows


def document_blocks(grid: StyledGrid, items: list[SheetObject]) -> list[Block]:
    """The blocks of one document sheet from its ``document_item`` objects (in reading order:
    ``ref`` the A1 range, ``name`` the source's item reference, ``text``, ``details`` with
    ``block``, ``label``, ``level``, ``header_rows``, ``caption``, ``title``). Items whose range
    is not valid A1 are skipped."""
    ctx = SheetContext(grid, HeadingMap())
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    for item in items:
        details = item.details
        try:
            r1, c1, r2, c2 = parse_range(item.ref or "")
        except ValueError:
            continue
        kind = BlockKind(details.get("block", "text"))
        text = item.text or ""
        level = details.get("level")
        block = Block(grid.sheet_index, grid.sheet_name, kind, r1, c1, r2, c2,
                      len(ctx.cells_in(r1, c1, r2, c2)), text=text, level=level,
                      title=details.get("title") or details.get("caption"),
                      source_ref=item.name,
                      reasons=[f"{details.get('label', kind)} {item.name or ''} declared by "
                               "the document".replace("  ", " ")])
        if level is not None:
            while headings and headings[-1][0] >= level:
                headings.pop()
            if level > 1:
                headings.append((level, text))
        block.heading_path = [grid.sheet_name] + [h for _, h in headings]
        if kind == BlockKind.TABLE:
            if block.title and block.title not in block.heading_path[1:]:
                block.heading_path.append(block.title)
            declared = int(details.get("header_rows", 0))
            find_header(ctx, block, declared)
            mark_data_rows(ctx, block)
        blocks.append(block)
    return blocks
