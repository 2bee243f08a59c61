"""The three renderings of one block (Markdown, HTML, plain text), by its kind."""

from __future__ import annotations

from html import escape as html_escape

import pyarrow as pa

from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.render.escape import md_text
from extraction_assets.core.render.html import form_html, table_html
from extraction_assets.core.render.markdown import joined, table_markdown
from extraction_assets.core.render.markup import marked_text, plain_text
from extraction_assets.core.render.records import TableRecords


def render_block(block: Block, rows: TableRecords | None,
                 grid: StyledGrid) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(Markdown, HTML, text) of ``block``, each a one-element string array: a ``table`` as a
    GFM pipe table, ``<table>`` and its rows' ``Header: value`` lines (``rows`` its records;
    joined by Arrow, so a large table's text is never one Python str); a ``key_value`` form as
    its escaped text, a ``<dl>`` and its pairs; any other kind as its escaped text, a ``<p>``
    and the text itself."""
    if block.kind == BlockKind.TABLE:
        return table_markdown(block, rows), table_html(block, rows, grid), joined([], rows.texts())
    if block.kind == BlockKind.KEY_VALUE:
        texts = (md_text(block.text), form_html(block, rows), rows.texts()[0].as_py())
    else:
        marked = marked_text(block)
        texts = (md_text(block.text, marked),
                 f"<p>{block.text if marked else html_escape(block.text)}</p>", plain_text(block))
    return tuple(pa.array([text], pa.string()) for text in texts)
