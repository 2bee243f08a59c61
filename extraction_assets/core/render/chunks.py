"""Token-bounded Markdown chunks of a sheet's blocks: tables split between rows (their header
repeated), a wide row split by columns, text cut at sentences; counted in the embedder's tokens."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Callable, Sequence

import numpy as np

from extraction_assets.core.a1 import range_ref
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.render.escape import md_cell, md_text
from extraction_assets.core.render.markdown import (
    header_lines,
    headings_markdown,
    md_name,
    row_line,
)
from extraction_assets.core.render.markup import marked_text, shown_lines
from extraction_assets.core.render.records import TableRecords


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

    @cached_property
    def chunk_id(self) -> str:
        """sha256 hex of text, sheet name and A1 ranges (independent of the file's hash);
        hashed once (the chunks and record_units tables both name it; a chunk is not changed
        once made)."""
        key = "\x1f".join([self.text, self.sheet_name, *self.a1_ranges])
        return hashlib.sha256(key.encode()).hexdigest()


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


@dataclass(frozen=True)
class _Counter:
    """Token counts of the embedder's tokenizer: ``one(text)``, and ``many(texts)`` through
    ``batch`` when the tokenizer counts a list at once (else one call per text)."""

    one: Callable[[str], int]
    batch: Callable[[Sequence[str]], list[int]] | None = None

    def many(self, texts: Sequence[str]) -> list[int]:
        if self.batch is None:
            return [self.one(text) for text in texts]
        return list(self.batch(texts))


def chunk_sheet(
    blocks: list[Block],
    records: dict[str, TableRecords],
    count_tokens: Callable[[str], int],
    max_tokens: int,
    min_tokens: int = 0,
    count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None,
    line_rows: Callable[[Block], list[int] | None] | None = None,
) -> list[Chunk]:
    """Chunk one sheet's blocks (in order) within ``max_tokens`` tokens each.

    * a table larger than the budget is split on row boundaries, every chunk repeating the
      header rows under the table's heading path; a single row larger than the budget is split
      by columns, its first column (the row key) repeated in every part;
    * text (notes, paragraphs, forms, charts) becomes paragraphs under its heading path; a
      text larger than the budget is cut at line, then sentence, boundaries;
    * a title is the heading line of the chunks it heads: one whose text is in no chunk's
      heading path (a line heading nothing, an instruction line superseded by the next title, a
      document's heading longer than its sheet's name) is a paragraph under the headings
      above it (:func:`_paragraph_titles`); consecutive such titles under one path are one
      paragraph, a line each, leading the first chunk of the block below them when it fits
      (:func:`_lead_with`), else a chunk of their own cut between lines when over the budget;
    * neighbouring pieces of different blocks under the same heading path are merged while the
      result fits the budget and one of them is smaller than ``min_tokens``;
    * the parts of anything cut are marked ``continuation`` (all but the first).

    Each line, row and cell is counted once for packing, each chunk's text once exactly, so the
    work grows linearly with the text (cells of 10,000 characters included).
    ``count_tokens_batch`` (same counts as ``count_tokens``, for a list of texts) is used for
    the rows of a table and its chunks when given. ``line_rows`` (a block -> the sheet row of
    each line of its text, or ``None``: :func:`text_line_rows`), asked of a text block cut in
    parts, gives each part the rows of its own lines; else each part cites its block's rows.
    """
    counter = _Counter(count_tokens, count_tokens_batch)
    # per block in order: its pieces, or the title block itself (decided once all are cut)
    parts: list[list[_Piece] | Block] = []
    for block in blocks:
        if block.kind == BlockKind.TABLE:
            parts.append(_table_pieces(block, records.get(block.block_id), counter, max_tokens))
        elif block.kind == BlockKind.TITLE:
            parts.append(block)
        elif block.text:
            parts.append(_text_pieces(block.heading_path, block.text, [block], count_tokens,
                                      max_tokens, line_rows and partial(line_rows, block)))
    shown = {h for part in parts if isinstance(part, list) for p in part for h in p.heading_path}
    paragraphs = _paragraph_titles([p for p in parts if isinstance(p, Block)], shown)
    pieces: list[_Piece] = []
    run: list[Block] = []  # consecutive titles made paragraphs under one heading path
    for part in parts:
        if isinstance(part, Block) and id(part) not in paragraphs:
            continue
        if run and not (isinstance(part, Block) and _parent_path(run[0]) == _parent_path(part)):
            led = None if isinstance(part, Block) else _lead_with(run, part, counter, max_tokens)
            if led is None:
                pieces += _title_pieces(run, counter, max_tokens)
            else:
                part = led
            run = []
        if isinstance(part, Block):
            run.append(part)
        else:
            pieces += part
    if run:
        pieces += _title_pieces(run, counter, max_tokens)
    return _pack(pieces, count_tokens, max_tokens, min_tokens)


def _parent_path(title: Block) -> list[str]:
    """The heading path above a title: its own, without itself when it is its last heading
    (a heading's path ends with its own text); never less than the sheet name."""
    path = title.heading_path or [title.sheet_name]
    return path[:-1] if len(path) > 1 and title.level is not None and path[-1] == title.text \
        else path


def _paragraph_titles(titles: list[Block], shown: set[str]) -> set[int]:
    """``id`` of the titles (in sheet order) whose text must be a paragraph: those in no heading
    path of ``shown`` (the headings of the other blocks' chunks) nor of the paragraphs made
    of the titles below them (decided bottom-up: a title heading a line below it is that
    paragraph's heading)."""
    shown = set(shown)
    out: set[int] = set()
    for title in reversed(titles):
        if title.text and title.text not in shown:
            out.add(id(title))
            shown.update(_parent_path(title))
    return out


def _lead_with(run: list[Block], pieces: list[_Piece], counter: _Counter,
               max_tokens: int) -> list[_Piece] | None:
    """``pieces`` (the chunks of the block below a run of paragraph titles) with the titles'
    lines leading the first one, above its own body, when that piece's heading path starts
    with the titles' (:func:`_parent_path`: the headings they were left to stand under) and
    the result fits ``max_tokens``; else ``None``. Lines above a table belong with it: alone,
    a chunk of a title's words outranks the rows it stands over in search."""
    parent = _parent_path(run[0])
    if not pieces or pieces[0].heading_path[:len(parent)] != parent:
        return None
    first = pieces[0]
    lead = _Piece(first.heading_path,
                  "\n".join(md_text(t.text, marked_text(t)) for t in run) + "\n\n" + first.body,
                  [t.block_id for t in run] + first.block_ids,
                  [t.a1_range for t in run] + first.a1_ranges, first.rows, first.continuation)
    lead.n_tokens = counter.one(_text(lead))
    return None if lead.n_tokens > max_tokens else [lead, *pieces[1:]]


def _title_pieces(run: list[Block], counter: _Counter, max_tokens) -> list[_Piece]:
    """Consecutive titles as paragraphs of one line each under their heading path
    (:func:`_parent_path`): as many lines a piece as the budget holds (:func:`_runs`), a
    line over the budget cut alone (:func:`_text_pieces`)."""
    path = _parent_path(run[0])
    head = headings_markdown(path)
    lines = [md_text(t.text, marked_text(t)) for t in run]
    overhead = counter.one("")
    costs = [n - overhead + 1 for n in counter.many(lines)]
    pieces: list[_Piece] = []
    for start, end, n_tokens in _runs(costs, counter.one(head), max_tokens,
                                      lambda a, b: f"{head}\n\n" + "\n".join(lines[a:b]), counter):
        if n_tokens > max_tokens:
            pieces += _text_pieces(path, run[start].text, [run[start]], counter.one, max_tokens)
        else:
            titles = run[start:end]
            pieces.append(_Piece(path, "\n".join(lines[start:end]),
                                 [t.block_id for t in titles], [t.a1_range for t in titles],
                                 sorted({r for t in titles
                                         for r in range(t.min_row, t.max_row + 1)}),
                                 n_tokens=n_tokens))
    return pieces


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


def _runs(costs: list[int], base: int, max_tokens: int, text_of: Callable[[int, int], str],
          counter: _Counter) -> list[tuple[int, int, int]]:
    """Cut items ``0..len(costs)`` into consecutive runs within ``max_tokens``.

    A run takes items while ``base`` plus their estimated ``costs`` fits (at least one item),
    then gives items back while the true token count of its text ``text_of(start, end)`` is
    over the budget and more than one item is left. Runs are planned from the estimates
    :data:`_PLANNED` at a time and their texts counted in one batch; after a run that gave
    items back, the next runs are planned again from where it ended. Returns
    ``(start, end, tokens)`` per run, ``end`` exclusive; a one-item run may still be over the
    budget.
    """
    out = []
    start = 0
    while start < len(costs):
        planned = []
        while start < len(costs) and len(planned) < _PLANNED:
            end, total = start, base
            while end < len(costs) and (end == start or total + costs[end] <= max_tokens):
                total += costs[end]
                end += 1
            planned.append((start, end))
            start = end
        counts = counter.many([text_of(a, b) for a, b in planned])
        for (first, end), n_tokens in zip(planned, counts):
            if n_tokens > max_tokens and end - first > 1:
                while n_tokens > max_tokens and end - first > 1:
                    end -= 1
                    n_tokens = counter.one(text_of(first, end))
                out.append((first, end, n_tokens))
                start = end
                break
            out.append((first, end, n_tokens))
    return out


#: Runs planned and counted at a time by :func:`_runs`.
_PLANNED = 64


def _table_pieces(block: Block, records: TableRecords | None, counter: _Counter,
                  max_tokens) -> list[_Piece]:
    """The pieces of a table: runs of its record lines under its header line, cut within
    ``max_tokens`` and at each units row (the rows of each units section under a header
    naming their units, see :meth:`~.records.TableRecords.keys`); a piece's heading path ends
    with the group labels above its first record (see
    :meth:`~.records.TableRecords.groups_above`)."""
    columns = block.columns
    if records is None or not len(records):
        return [_Piece(block.heading_path, header_lines([c.header for c in columns]),
                       [block.block_id], [block.a1_range], [])]
    lines = records.lines()
    overhead = counter.one("")
    costs = [n - overhead + 1 for n in counter.many(lines)]
    rows = records.rows.tolist()
    sections = records.sections
    bounds = [*np.flatnonzero(np.r_[True, sections[1:] != sections[:-1]]).tolist(), len(rows)]

    def path(start: int) -> list[str]:
        """The heading path of a piece starting at record ``start``: the block's, then the
        group labels above that record (their rows are in an earlier piece)."""
        return [*block.heading_path, *records.groups_above(start)]

    pieces: list[_Piece] = []
    block_id = block.block_id
    for first, last in zip(bounds, bounds[1:]):
        header = header_lines(records.keys(int(sections[first])))

        def body(start: int, end: int) -> str:
            return f"{header}\n" + "\n".join(lines[start:end])

        base = counter.one(f"{headings_markdown(block.heading_path)}\n\n{header}")
        for start, end, n_tokens in _runs(
                costs[first:last], base, max_tokens,
                lambda a, b: f"{headings_markdown(path(first + a))}\n\n"
                             f"{body(first + a, first + b)}", counter):
            start, end = first + start, first + end
            if n_tokens > max_tokens and len(columns) > 1:
                pieces += _wide_row_pieces(block, records, start, counter, max_tokens)
            else:
                a1 = range_ref(rows[start], block.min_col, rows[end - 1], block.max_col)
                pieces.append(_Piece(path(start), body(start, end), [block_id], [a1],
                                     rows[start:end], n_tokens=n_tokens))
    return pieces


def _wide_row_pieces(block: Block, records: TableRecords, i: int, counter: _Counter,
                     max_tokens) -> list[_Piece]:
    """Record ``i``, too large for the budget, split into column groups that each repeat the
    first column (the row key) with its header, when the key takes at most a quarter of the
    budget (a larger key is written once, in the first group)."""
    head = headings_markdown(block.heading_path)
    row = int(records.rows[i])
    shown = dict(zip((c.col for c in block.columns), records.row_markdown(i)))
    display = dict(zip((c.col for c in block.columns), records.row_display(i)))

    def body(cols) -> str:
        return "\n".join([header_lines([c.header for c in cols]),
                          row_line([shown[c.col] for c in cols])])

    key_cost = counter.one(f"{head}\n\n{body(block.columns[:1])}")
    lead = block.columns[:1] if key_cost <= max_tokens // 4 else []
    rest = block.columns[len(lead):]
    overhead = counter.one("")
    # a column adds its header cell, its rule cell and its value cell to the three lines
    costs = [n - overhead + 3 for n in counter.many(
        [f"{md_name(c.header)} | --- | {md_cell(display[c.col])}" for c in rest])]
    runs = _runs(costs, key_cost if lead else counter.one(head), max_tokens,
                 lambda a, b: f"{head}\n\n{body([*lead, *rest[a:b]])}", counter)
    pieces = []
    for k, (start, end, n_tokens) in enumerate(runs):
        cols = [*lead, *rest[start:end]]
        a1 = [range_ref(row, c.col, row, c.col) for c in cols] \
            if len(cols) <= 2 else [range_ref(row, min(c.col for c in cols), row,
                                               max(c.col for c in cols))]
        pieces.append(_Piece(block.heading_path, body(cols), [block.block_id], a1, [row],
                             continuation=k > 0, n_tokens=n_tokens))
    return pieces


def text_line_rows(grid: StyledGrid, block: Block) -> list[int] | None:
    """The 1-based sheet row of each line of a text block's ``text`` (the shown cells of a row
    with text make one line, more when a cell holds line breaks; as
    :func:`~extraction_assets.core.segment.context.make_block` writes it), read again from
    ``grid``; ``None`` when its cells do not make that text. Linear in the block's cells."""
    joined = [(row, " ".join(text for _, text in cells)) for row, cells in shown_lines(grid, block)]
    if "\n".join(text for _, text in joined) != block.text:
        return None
    return [row for row, text in joined for _ in range(text.count("\n") + 1)]


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


def _text_pieces(heading_path: list[str], text: str, blocks: list[Block], count_tokens,
                 max_tokens, line_rows: Callable[[], list[int] | None] | None = None
                 ) -> list[_Piece]:
    """The paragraphs of ``text`` (that of ``blocks``) under ``heading_path`` within the
    budget; the text is cut where it is plain, and each part counted and written escaped
    (:func:`md_text`). A part cites the rows of its lines (from the first to the last, and
    their range) when ``line_rows()`` gives one row per line of ``text`` (of one block), else
    every row and the range of ``blocks``."""
    head = headings_markdown(heading_path)
    marked = any(marked_text(b) for b in blocks)
    rows = sorted({r for b in blocks for r in range(b.min_row, b.max_row + 1)})
    block_ids = [b.block_id for b in blocks]
    a1_ranges = [b.a1_range for b in blocks]

    def cost(text: str) -> int:
        return count_tokens(f"{head}\n\n{md_text(text, marked)}")

    n_tokens = cost(text)
    if n_tokens <= max_tokens:
        return [_Piece(heading_path, md_text(text, marked), block_ids, a1_ranges, rows,
                       n_tokens=n_tokens)]
    lines = text.split("\n")
    line_rows = line_rows() if line_rows else None
    if line_rows is not None and len(line_rows) != len(lines):
        line_rows = None
    units = [(k, u) for k, line in enumerate(lines) for u in _SENTENCE.split(line) if u.strip()]
    bodies: list[str] = []
    spans: list[list[int]] = []  # the first and last line of each body
    for k, unit in units:
        while cost(unit) > max_tokens and len(unit) > 1:
            cut = len(unit) // 2  # a single sentence beyond the budget: halve it
            while cut > 1 and cost(unit[:cut]) > max_tokens:
                cut //= 2
            bodies.append(unit[:cut])
            spans.append([k, k])
            unit = unit[cut:]
        if bodies and cost(f"{bodies[-1]} {unit}") <= max_tokens:
            bodies[-1] = f"{bodies[-1]} {unit}"
            spans[-1][1] = k
        else:
            bodies.append(unit)
            spans.append([k, k])
    if line_rows is None:
        return [_Piece(heading_path, md_text(b, marked), block_ids, a1_ranges, rows,
                       continuation=k > 0) for k, b in enumerate(bodies)]
    (block,) = blocks
    return [_Piece(heading_path, md_text(b, marked), block_ids,
                   [range_ref(line_rows[first], block.min_col, line_rows[last], block.max_col)],
                   list(range(line_rows[first], line_rows[last] + 1)), continuation=k > 0)
            for k, (b, (first, last)) in enumerate(zip(bodies, spans))]
