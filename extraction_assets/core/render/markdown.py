"""Markdown of a table: ATX headings of its heading path, then a GFM pipe table."""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.blocks import Block
from extraction_assets.core.render.escape import md_cell, printable
from extraction_assets.core.render.records import TableRecords


def md_name(name: str) -> str:
    """A sheet name, title or column header as Markdown shows it in a heading or a header row:
    its control and bidirectional formatting characters written as escapes (:func:`printable`;
    the name as it is stays in the ``sheets``, ``blocks`` and ``chunks`` tables), then escaped
    as a cell (:func:`md_cell`)."""
    return md_cell(printable(name))


def headings_markdown(path: list[str]) -> str:
    """ATX headings for a heading path: ``#`` the sheet, ``##`` the next level... (at most six),
    each name as :func:`md_name` shows it."""
    return heading_lines(tuple(path))


@lru_cache(maxsize=4096)
def heading_lines(path: tuple[str, ...]) -> str:
    return "\n\n".join(f"{'#' * min(level + 1, 6)} {md_name(h)}" for level, h in enumerate(path))


def row_line(cells: list[str]) -> str:
    """A GFM table line of ``cells`` already written as Markdown (:func:`md_cell`)."""
    return "| " + " | ".join(cells) + " |"


def header_lines(headers: list[str]) -> str:
    """The GFM header line and delimiter row of the column ``headers`` (:func:`md_name`)."""
    rule = "|" + "|".join(" --- " for _ in headers) + "|"
    return row_line([md_name(h) for h in headers]) + "\n" + rule


def joined(head: list[str], lines: pa.Array, tail: list[str] = ()) -> pa.Array:
    """``head``, ``lines`` and ``tail`` joined by line breaks, as a one-element Arrow string
    array (the text of a large table never becomes a Python string)."""
    values = pa.concat_arrays([pa.array(list(head), pa.string()), lines.cast(pa.string()),
                               pa.array(list(tail), pa.string())])
    return pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()),
                                                   values), "\n")


def table_markdown(block: Block, records: TableRecords) -> pa.Array:
    """The whole table as a GFM pipe table (flattened headers, then one line per record), as
    one :func:`joined` text."""
    return joined([header_lines([c.header for c in block.columns])], records.line_array())
