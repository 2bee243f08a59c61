"""Records and token-bounded Markdown chunks from segmented blocks.

* A **record** is one data row of a table: header -> typed value (int, float, bool, ISO date /
  datetime / time string, string; ``None`` for an empty cell), with the display text alongside,
  a role (``data`` or ``total``) and its source (sheet, 1-based row, A1 range of the row).
* A ``key_value`` block (a form) gives one record, label -> typed value, cited at its first row
  and whole range; its Markdown and chunk text are ``Label: value`` lines.
* A **chunk** is Markdown: ATX headings from the block's heading path (``#`` sheet, ``##``
  title), then a GFM pipe table whose header row is repeated in every chunk of a split table, or
  the text of non-table blocks. Its size is counted with the embedder's own tokenizer and kept
  within ``max_tokens`` by splitting tables on row boundaries. ``chunk_id`` is the sha256 of the
  text, sheet name and A1 ranges, so unchanged content keeps its id across file versions.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from html import escape
from typing import Callable

from .a1 import cell_ref, parse_cell_ref, parse_range, range_ref
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
    continuation: bool = False

    @property
    def chunk_id(self) -> str:
        """sha256 hex of text, sheet name and A1 ranges (independent of the file's hash)."""
        key = "\x1f".join([self.text, self.sheet_name, *self.a1_ranges])
        return hashlib.sha256(key.encode()).hexdigest()


#: The StyledGrid columns a record reads (see :func:`typed_value`).
_RECORD_COLUMNS = ("value_type", "number_value", "iso_value", "raw_value", "display_text",
                   "merged_from")


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


def _cell_entry(grid: StyledGrid, i: int) -> tuple[object, str, str | None]:
    """(typed value, display text, ``merged_from``) of the grid's cell at position ``i``."""
    values = grid.columns
    cell = {name: values[name][i] for name in _RECORD_COLUMNS}
    return typed_value(cell), cell["display_text"] or "", cell["merged_from"]


def table_records(grid: StyledGrid, block: Block) -> list[Record]:
    """Records of every non-blank, visible row of a table block below its header rows.

    Rows hidden in the sheet and rows that repeat the header (``block.skip_rows``) are left
    out; summary rows (``block.total_rows``, or a first cell reading Total, 合計...) get role
    ``total``; in a row-group column (``block.row_group_col``) a group's label is filled down to
    the rows under it, recorded in ``merged_from`` as coming from the label's cell.
    """
    index = grid.cell_index
    skipped = set(grid.hidden_rows) | set(block.skip_rows)
    totals = set(block.total_rows)
    group = next((c for c in block.columns if c.col == block.row_group_col), None)
    group_label: tuple[object, str, str] | None = None
    out = []
    for r in range(block.min_row + block.header_row_count, block.max_row + 1):
        if r in skipped:
            continue
        record, display, merged = {}, {}, {}
        first_text = None
        for column in block.columns:
            i = index.get((r, column.col))
            if i is None:
                record[column.header] = None
                display[column.header] = ""
                continue
            record[column.header], display[column.header], source = _cell_entry(grid, i)
            if first_text is None and display[column.header].strip():
                first_text = display[column.header]
            if source:
                merged[column.header] = source
        if first_text is None:
            continue
        role = "total" if r in totals or is_total_row(first_text) else "data"
        if group is not None and role == "data":
            if display[group.header].strip():
                label_ref = range_ref(r, group.col, r, group.col)
                group_label = (record[group.header], display[group.header], label_ref)
            elif group_label is not None:
                record[group.header], display[group.header], merged[group.header] = group_label
        out.append(Record(
            block.block_id, block.sheet_name, r, range_ref(r, block.min_col, r, block.max_col),
            role, record, display, merged,
        ))
    return out


def form_record(grid: StyledGrid, block: Block) -> Record:
    """The one record of a ``key_value`` block: label -> typed value of its value cell
    (``None`` for a label without a value), cited at the block's first row and whole range."""
    index = grid.cell_index
    record, display, merged = {}, {}, {}
    for column in block.columns:
        i = index.get((column.row, column.col))
        record[column.header], display[column.header], source = (
            _cell_entry(grid, i) if i is not None else (None, "", None))
        if source:
            merged[column.header] = source
    return Record(block.block_id, block.sheet_name, block.min_row, block.a1_range, "data",
                  record, display, merged)


def form_html(block: Block, record: Record) -> str:
    """A ``key_value`` block as an HTML description list (``<dl>``), all text escaped."""
    items = "".join(f"<dt>{escape(c.header_levels[0])}</dt><dd>{escape(record.display[c.header])}</dd>"
                    for c in block.columns)
    return f"<dl>{items}</dl>"


def apply_markup(block: Block, grid: StyledGrid, marked: dict[str, str]) -> Block:
    """The block with ``marked`` cell texts (A1 ref -> text with ``<sup>``/``<sub>``) used in
    its renderings: for a table through ``block.markup`` (a ``key_value`` block keeps it there
    too; its ``label: value`` lines stay plain), for text rebuilt line by line."""
    inside = {ref: text for ref, text in marked.items()
              if block.min_row <= parse_cell_ref(ref)[0] <= block.max_row
              and block.min_col <= parse_cell_ref(ref)[1] <= block.max_col}
    if not inside:
        return block
    if block.kind in ("table", "key_value"):
        return replace(block, markup=inside)
    lines: dict[int, list[str]] = {}
    cols = grid.columns
    for r, c, text, merged, hidden in zip(cols["row"], cols["col"], cols["display_text"],
                                          cols["merged_from"], cols["hidden"]):
        if (block.min_row <= r <= block.max_row and block.min_col <= c <= block.max_col
                and text and text.strip() and merged is None and not hidden):
            lines.setdefault(r, []).append(inside.get(cell_ref(r, c), text.strip()))
    return replace(block, text="\n".join(" ".join(parts) for _, parts in sorted(lines.items())))


def md_cell(text: str) -> str:
    """Escape text for a GFM table cell: ``|`` -> ``\\|``, line breaks -> ``<br>``."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def headings_markdown(path: list[str]) -> str:
    """ATX headings for a heading path: ``#`` the sheet, ``##`` the next level... (at most six)."""
    return "\n\n".join(f"{'#' * min(level + 1, 6)} {md_cell(h)}" for level, h in enumerate(path))


def _row_line(cells: list[str]) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def table_markdown(block: Block, records: list[Record]) -> str:
    """The whole table as a GFM pipe table (flattened headers, then one line per record)."""
    header = _row_line([c.header for c in block.columns])
    rule = "|" + "|".join(" --- " for _ in block.columns) + "|"
    return "\n".join([header, rule] + [_row_line(_shown(block, r)) for r in records])


def _shown(block: Block, record: Record) -> list[str]:
    """A record's cell texts for Markdown, with the block's rich-text markup where it has any."""
    return [block.markup.get(cell_ref(record.row, c.col), record.display[c.header])
            for c in block.columns]


def table_html(block: Block, records: list[Record], grid: StyledGrid) -> str:
    """The table as HTML: ``<thead>`` with one ``<tr>`` per header row, merged header cells as
    ``colspan``/``rowspan`` (counted in the table's columns), then ``<tbody>`` rows; all text
    escaped."""
    index = grid.cell_index
    texts, merged_from, merge_range = (grid.columns["display_text"], grid.columns["merged_from"],
                                       grid.columns["merge_range"])
    cols = [c.col for c in block.columns]
    header_rows = list(range(block.min_row, block.min_row + block.header_row_count))
    out = ["<table>", "<thead>"]
    if len(header_rows) <= 1:
        out.append("<tr>" + "".join(f"<th>{escape(c.header)}</th>" for c in block.columns) + "</tr>")
    else:
        for r in header_rows:
            cells = []
            for c in cols:
                i = index.get((r, c))
                if i is not None and merged_from[i] is not None:
                    continue  # covered by a merge whose top-left cell spans it
                attrs = ""
                if i is not None and merge_range[i]:
                    r1, c1, r2, c2 = parse_range(merge_range[i])
                    span_c = sum(1 for x in cols if c1 <= x <= c2)
                    span_r = min(r2, header_rows[-1]) - r + 1
                    attrs = (f' colspan="{span_c}"' if span_c > 1 else "") + (
                        f' rowspan="{span_r}"' if span_r > 1 else "")
                text = texts[i] if i is not None else ""
                cells.append(f"<th{attrs}>{escape(text or '')}</th>")
            out.append("<tr>" + "".join(cells) + "</tr>")
    out += ["</thead>", "<tbody>"]
    for rec in records:
        out.append("<tr>" + "".join(
            f"<td>{block.markup.get(cell_ref(rec.row, c.col)) or escape(rec.display[c.header])}</td>"
            for c in block.columns) + "</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def record_text(record: Record, columns: list) -> str:
    """One record as prose for embedders that prefer it: ``Header: value; Header: value``
    (empty cells left out)."""
    return "; ".join(f"{c.header}: {record.display[c.header]}" for c in columns
                     if record.display[c.header] != "")


@dataclass
class _Piece:
    """Content of one chunk before packing: a heading path and a Markdown body, with its token
    count when the producer already counted its text (``None``: count it when packing)."""

    heading_path: list[str]
    body: str
    block_ids: list[str]
    a1_ranges: list[str]
    rows: list[int]
    continuation: bool = False
    n_tokens: int | None = None


def chunk_sheet(
    blocks: list[Block],
    records: dict[str, list[Record]],
    count_tokens: Callable[[str], int],
    max_tokens: int,
    min_tokens: int = 0,
) -> list[Chunk]:
    """Chunk one sheet's blocks (in order) within ``max_tokens`` tokens each.

    * a table larger than the budget is split on row boundaries, every chunk repeating the
      header rows under the table's heading path; a single row larger than the budget is split
      by columns, its first column (the row key) repeated in every part;
    * text (notes, paragraphs, titles that head nothing) becomes paragraphs under its heading
      path; a text larger than the budget is cut at line, then sentence, boundaries;
    * neighbouring pieces of different blocks under the same heading path are merged while the
      result fits the budget and one of them is smaller than ``min_tokens``;
    * the parts of anything cut are marked ``continuation`` (all but the first).

    Each line, row and cell is counted once for packing, each chunk's text once exactly, so the
    work grows linearly with the text (cells of 10,000 characters included).
    """
    used = {h for b in blocks for h in b.heading_path[1:]}
    used |= {b.title for b in blocks if b.kind in ("table", "key_value") and b.title}
    pieces: list[_Piece] = []
    for block in blocks:
        if block.kind == "table":
            pieces += _table_pieces(block, records.get(block.block_id, []), count_tokens, max_tokens)
        elif block.text and not (block.kind == "title" and block.text in used):
            pieces += _text_pieces(block, count_tokens, max_tokens)
    return _pack(pieces, count_tokens, max_tokens, min_tokens)


def _text(piece: _Piece) -> str:
    return headings_markdown(piece.heading_path) + "\n\n" + piece.body


def _pack(pieces: list[_Piece], count_tokens, max_tokens: int, min_tokens: int) -> list[Chunk]:
    merged: list[_Piece] = []
    sizes: list[int] = []
    for piece in pieces:
        size = piece.n_tokens if piece.n_tokens is not None else count_tokens(_text(piece))
        last = merged[-1] if merged else None
        if (last is not None and last.heading_path == piece.heading_path
                and not set(last.block_ids) & set(piece.block_ids)
                and (sizes[-1] < min_tokens or size < min_tokens)):
            candidate = _Piece(last.heading_path, last.body + "\n\n" + piece.body,
                               last.block_ids + piece.block_ids, last.a1_ranges + piece.a1_ranges,
                               last.rows + piece.rows, last.continuation)
            n = count_tokens(_text(candidate))
            if n <= max_tokens:
                merged[-1], sizes[-1] = candidate, n
                continue
        merged.append(piece)
        sizes.append(size)
    return [Chunk(p.heading_path[0], p.heading_path, p.block_ids, p.a1_ranges, _text(p), n,
                  p.rows, p.continuation) for p, n in zip(merged, sizes)]


def _runs(costs: list[int], base: int, max_tokens: int,
          exact: Callable[[int, int], int]) -> list[tuple[int, int, int]]:
    """Cut items ``0..len(costs)`` into consecutive runs within ``max_tokens``.

    A run takes items while ``base`` plus their estimated ``costs`` fits (at least one item),
    then gives items back while ``exact(start, end)``, the true token count of the run's text,
    is over the budget and more than one item is left. Returns ``(start, end, tokens)`` per
    run, ``end`` exclusive; a one-item run may still be over the budget.
    """
    out = []
    start = 0
    while start < len(costs):
        end, total = start, base
        while end < len(costs) and (end == start or total + costs[end] <= max_tokens):
            total += costs[end]
            end += 1
        while True:
            n_tokens = exact(start, end)
            if n_tokens <= max_tokens or end - start == 1:
                break
            end -= 1
        out.append((start, end, n_tokens))
        start = end
    return out


def _table_pieces(block: Block, records: list[Record], count_tokens, max_tokens) -> list[_Piece]:
    head = headings_markdown(block.heading_path)
    columns = block.columns
    header = _row_line([c.header for c in columns])
    rule = "|" + "|".join(" --- " for _ in columns) + "|"
    if not records:
        return [_Piece(block.heading_path, f"{header}\n{rule}", [block.block_id],
                       [block.a1_range], [])]
    lines = [_row_line(_shown(block, r)) for r in records]
    overhead = count_tokens("")
    base = count_tokens(f"{head}\n\n{header}\n{rule}")
    costs = [count_tokens(line) - overhead + 1 for line in lines]

    def body(start: int, end: int) -> str:
        return f"{header}\n{rule}\n" + "\n".join(lines[start:end])

    pieces: list[_Piece] = []
    for start, end, n_tokens in _runs(costs, base, max_tokens,
                                      lambda a, b: count_tokens(f"{head}\n\n{body(a, b)}")):
        part = records[start:end]
        if n_tokens > max_tokens and len(columns) > 1:
            pieces += _wide_row_pieces(block, part[0], count_tokens, max_tokens)
        else:
            a1 = range_ref(part[0].row, block.min_col, part[-1].row, block.max_col)
            pieces.append(_Piece(block.heading_path, body(start, end), [block.block_id], [a1],
                                 [r.row for r in part], n_tokens=n_tokens))
    return pieces


def _wide_row_pieces(block: Block, record: Record, count_tokens, max_tokens) -> list[_Piece]:
    """A row too large for the budget, split into column groups that each repeat the first
    column (the row key) with its header, when the key takes at most a quarter of the budget
    (a larger key is written once, in the first group)."""
    head = headings_markdown(block.heading_path)

    def body(cols) -> str:
        return "\n".join([_row_line([c.header for c in cols]),
                          "|" + "|".join(" --- " for _ in cols) + "|",
                          _row_line([block.markup.get(cell_ref(record.row, c.col),
                                                      record.display[c.header]) for c in cols])])

    key_cost = count_tokens(f"{head}\n\n{body(block.columns[:1])}")
    lead = block.columns[:1] if key_cost <= max_tokens // 4 else []
    rest = block.columns[len(lead):]
    overhead = count_tokens("")
    # a column adds its header cell, its rule cell and its value cell to the three lines
    costs = [count_tokens(f"{md_cell(c.header)} | --- | {md_cell(record.display[c.header])}")
             - overhead + 3 for c in rest]
    runs = _runs(costs, key_cost if lead else count_tokens(head), max_tokens,
                 lambda a, b: count_tokens(f"{head}\n\n{body([*lead, *rest[a:b]])}"))
    pieces = []
    for k, (start, end, n_tokens) in enumerate(runs):
        cols = [*lead, *rest[start:end]]
        a1 = [range_ref(record.row, c.col, record.row, c.col) for c in cols] \
            if len(cols) <= 2 else [range_ref(record.row, min(c.col for c in cols), record.row,
                                               max(c.col for c in cols))]
        pieces.append(_Piece(block.heading_path, body(cols), [block.block_id], a1, [record.row],
                             continuation=k > 0, n_tokens=n_tokens))
    return pieces


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


def _text_pieces(block: Block, count_tokens, max_tokens) -> list[_Piece]:
    head = headings_markdown(block.heading_path)
    rows = list(range(block.min_row, block.max_row + 1))
    n_tokens = count_tokens(f"{head}\n\n{block.text}")
    if n_tokens <= max_tokens:
        return [_Piece(block.heading_path, block.text, [block.block_id], [block.a1_range], rows,
                       n_tokens=n_tokens)]
    units = [u for line in block.text.split("\n") for u in _SENTENCE.split(line) if u.strip()]
    bodies: list[str] = []
    for unit in units:
        while count_tokens(f"{head}\n\n{unit}") > max_tokens and len(unit) > 1:
            cut = len(unit) // 2  # a single sentence beyond the budget: halve it
            while cut > 1 and count_tokens(f"{head}\n\n{unit[:cut]}") > max_tokens:
                cut //= 2
            bodies.append(unit[:cut])
            unit = unit[cut:]
        if bodies and count_tokens(f"{head}\n\n{bodies[-1]} {unit}") <= max_tokens:
            bodies[-1] = f"{bodies[-1]} {unit}"
        else:
            bodies.append(unit)
    return [_Piece(block.heading_path, b, [block.block_id], [block.a1_range], rows,
                   continuation=k > 0) for k, b in enumerate(bodies)]
