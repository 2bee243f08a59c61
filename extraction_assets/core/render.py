"""Records and token-bounded Markdown chunks from segmented blocks.

* A **record** is one data row of a table: header -> typed value (int, float, bool, ISO date /
  datetime / time string, string; ``None`` for an empty cell), with the display text alongside,
  a role (``data`` or ``total``) and its source (sheet, 1-based row, A1 range of the row).
* A **chunk** is Markdown: ATX headings from the block's heading path (``#`` sheet, ``##``
  title), then a GFM pipe table whose header row is repeated in every chunk of a split table, or
  the text of non-table blocks. Its size is counted with the embedder's own tokenizer and kept
  within ``max_tokens`` by splitting tables on row boundaries. ``chunk_id`` is the sha256 of the
  text, sheet name and A1 ranges, so unchanged content keeps its id across file versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from .a1 import range_ref
from .normalize import StyledGrid
from .segment import Block, is_total_row


@dataclass
class Record:
    """One table row as a record; ``row`` is the 1-based sheet row."""

    block_id: str
    sheet_name: str
    row: int
    a1_range: str
    role: str
    record: dict
    display: dict
    merged_from: dict


@dataclass
class Chunk:
    """One retrievable chunk; ``rows`` are the 1-based sheet rows of its records."""

    sheet_name: str
    heading_path: list[str]
    block_ids: list[str]
    a1_ranges: list[str]
    text: str
    n_tokens: int
    rows: list[int] = field(default_factory=list)

    @property
    def chunk_id(self) -> str:
        """sha256 hex of text, sheet name and A1 ranges (independent of the file's hash)."""
        key = "\x1f".join([self.text, self.sheet_name, *self.a1_ranges])
        return hashlib.sha256(key.encode()).hexdigest()


def typed_value(cell: dict):
    """The typed value of a StyledGrid cell for a record (JSON-compatible)."""
    vtype = cell["value_type"]
    if vtype == "number":
        number = cell["number_value"]
        return int(number) if float(number).is_integer() and abs(number) < 2**53 else number
    if vtype == "date":
        return cell["iso_value"]
    if vtype == "bool":
        return cell["raw_value"] == "TRUE"
    if vtype == "empty":
        return cell["display_text"] or None
    return cell["raw_value"]


def table_records(grid: StyledGrid, block: Block) -> list[Record]:
    """Records of every non-blank, visible data row of a table block (rows below its header
    rows; rows hidden in the sheet are left out)."""
    index = {(r, c): i for i, (r, c) in enumerate(zip(grid.columns["row"], grid.columns["col"]))}
    names = list(grid.columns)
    values = grid.columns
    hidden_rows = set(grid.hidden_rows)
    out = []
    for r in range(block.min_row + block.header_row_count, block.max_row + 1):
        if r in hidden_rows:
            continue
        record, display, merged = {}, {}, {}
        first_text = None
        for column in block.columns:
            i = index.get((r, column.col))
            if i is None:
                record[column.header] = None
                display[column.header] = ""
                continue
            cell = {name: values[name][i] for name in names}
            record[column.header] = typed_value(cell)
            display[column.header] = cell["display_text"] or ""
            if first_text is None and display[column.header].strip():
                first_text = display[column.header]
            if cell["merged_from"]:
                merged[column.header] = cell["merged_from"]
        if first_text is None:
            continue
        out.append(Record(
            block.block_id, block.sheet_name, r, range_ref(r, block.min_col, r, block.max_col),
            "total" if is_total_row(first_text) else "data", record, display, merged,
        ))
    return out


def md_cell(text: str) -> str:
    """Escape text for a GFM table cell: ``|`` -> ``\\|``, line breaks -> ``<br>``."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def _headings(path: list[str]) -> str:
    return "\n\n".join(f"{'#' * min(level + 1, 6)} {md_cell(h)}" for level, h in enumerate(path))


def chunk_sheet(
    blocks: list[Block],
    records: dict[str, list[Record]],
    count_tokens: Callable[[str], int],
    max_tokens: int,
) -> list[Chunk]:
    """Chunk one sheet's blocks (in order) within ``max_tokens`` tokens each.

    Tables give one or more chunks each, split on row boundaries with the header repeated; the
    other blocks (titles not used by a table, text) are gathered into chunks under the sheet
    heading. A single row that alone exceeds the budget is kept whole in its own chunk.
    """
    chunks: list[Chunk] = []
    used_titles = {b.title for b in blocks if b.kind == "table" and b.title}
    text_parts: list[Block] = []
    for block in blocks:
        if block.kind == "table":
            chunks.extend(_table_chunks(block, records.get(block.block_id, []), count_tokens, max_tokens))
        elif not (block.kind == "title" and block.text in used_titles):
            text_parts.append(block)
    if text_parts:
        chunks.extend(_text_chunks(text_parts, count_tokens, max_tokens))
    return chunks


def _table_chunks(block: Block, records: list[Record], count_tokens, max_tokens) -> list[Chunk]:
    head = _headings(block.heading_path)
    header = "| " + " | ".join(md_cell(c.header) for c in block.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in block.columns) + "|"
    preamble = f"{head}\n\n{header}\n{rule}"
    if not records:
        text = preamble
        return [Chunk(block.sheet_name, block.heading_path, [block.block_id], [block.a1_range],
                      text, count_tokens(text))]
    lines = ["| " + " | ".join(md_cell(r.display[c.header]) for c in block.columns) + " |"
             for r in records]
    overhead = count_tokens("")
    base = count_tokens(preamble)
    costs = [count_tokens(line) - overhead + 1 for line in lines]
    chunks: list[Chunk] = []
    start = 0
    while start < len(lines):
        end, total = start, base
        while end < len(lines) and (end == start or total + costs[end] <= max_tokens):
            total += costs[end]
            end += 1
        while True:
            text = preamble + "\n" + "\n".join(lines[start:end])
            n_tokens = count_tokens(text)
            if n_tokens <= max_tokens or end - start == 1:
                break
            end -= 1
        part = records[start:end]
        a1 = range_ref(part[0].row, block.min_col, part[-1].row, block.max_col)
        chunks.append(Chunk(block.sheet_name, block.heading_path, [block.block_id], [a1], text,
                            n_tokens, [r.row for r in part]))
        start = end
    return chunks


def _text_chunks(blocks: list[Block], count_tokens, max_tokens) -> list[Chunk]:
    path = [blocks[0].sheet_name]
    head = _headings(path)
    chunks: list[Chunk] = []
    current: list[Block] = []

    def flush():
        if current:
            text = head + "\n\n" + "\n\n".join(b.text for b in current)
            chunks.append(Chunk(path[0], path, [b.block_id for b in current],
                                [b.a1_range for b in current], text, count_tokens(text),
                                sorted({r for b in current for r in range(b.min_row, b.max_row + 1)})))

    for block in blocks:
        candidate = head + "\n\n" + "\n\n".join(b.text for b in [*current, block])
        if current and count_tokens(candidate) > max_tokens:
            flush()
            current = []
        current.append(block)
    flush()
    return chunks
