"""HTML of tables (``<thead>`` with ``colspan``/``rowspan`` from merges) and forms, all text
escaped."""

from __future__ import annotations

from html import escape

import pyarrow as pa

from extraction_assets.core.a1 import parse_range
from extraction_assets.core.blocks import Block
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.render.markdown import joined
from extraction_assets.core.render.records import TableRecords


def form_html(block: Block, record: TableRecords) -> str:
    """A ``key_value`` block as an HTML description list (``<dl>``), all text escaped."""
    items = "".join(f"<dt>{escape(c.header_levels[0])}</dt><dd>{escape(text)}</dd>"
                    for c, text in zip(block.columns, record.row_display(0)))
    return f"<dl>{items}</dl>"


def table_html(block: Block, records: TableRecords, grid: StyledGrid) -> pa.Array:
    """The table as HTML: ``<thead>`` with one ``<tr>`` per header row, merged header cells as
    ``colspan``/``rowspan`` (counted in the table's columns), then ``<tbody>`` rows; all text
    escaped. One :func:`joined` text."""
    cols = [c.col for c in block.columns if not c.group]
    header_rows = list(range(block.min_row, block.min_row + block.header_row_count))
    out = ["<table>", "<thead>"]
    if len(header_rows) <= 1:
        out.append("<tr>" + "".join(f"<th>{escape(c.header)}</th>" for c in block.columns) + "</tr>")
    else:
        groups = "".join(f'<th rowspan="{len(header_rows)}">{escape(c.header)}</th>'
                         for c in block.columns if c.group)
        head = grid.table.take(pa.array(grid.positions(header_rows[0], block.min_col,
                                                       header_rows[-1], block.max_col)))
        cell = {(r, c): (text, merged, rng) for r, c, text, merged, rng in zip(
            *(head.column(name).to_pylist()
              for name in ("row", "col", "display_text", "merged_from", "merge_range")))}
        for r in header_rows:
            cells = []
            for c in cols:
                text, merged, rng = cell.get((r, c), ("", None, None))
                if merged is not None:
                    continue  # covered by a merge whose top-left cell spans it
                attrs = ""
                if rng:
                    r1, c1, r2, c2 = parse_range(rng)
                    span_c = sum(1 for x in cols if c1 <= x <= c2)
                    span_r = min(r2, header_rows[-1]) - r + 1
                    attrs = (f' colspan="{span_c}"' if span_c > 1 else "") + (
                        f' rowspan="{span_r}"' if span_r > 1 else "")
                cells.append(f"<th{attrs}>{escape(text or '')}</th>")
            out.append("<tr>" + (groups if r == header_rows[0] else "") + "".join(cells) + "</tr>")
    out += ["</thead>", "<tbody>"]
    return joined(out, records.html_rows(), ["</tbody>", "</table>"])
