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

The records of a block are built column-wise (:class:`TableRecords`): one gather of the
block's cells from the StyledGrid, then Arrow string kernels for the JSON, Markdown, HTML and
text of every row at once; Python runs per block and per chunk, not per cell.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from html import escape
from json.encoder import encode_basestring  # what json.dumps(..., ensure_ascii=False) writes
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, cell_ref, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.arrays import in_threads, scatter
from extraction_assets.core.blocks import FLOATING_KINDS, RECORD_KINDS, Block, BlockKind
from extraction_assets.core.normalize import StyledGrid, a1_refs, stripped_text


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


# -- column-wise text helpers -------------------------------------------------------------------
def _each_distinct(texts: pa.Array, fn: Callable[[str], str]) -> pa.Array:
    """``fn`` of every string of ``texts``, called once per distinct string (nulls stay null)."""
    if len(texts) == 0:
        return pa.array([], pa.string())
    encoded = pc.dictionary_encode(texts)
    mapped = pa.array([fn(t) for t in encoded.dictionary.to_pylist()], pa.string())
    return mapped.take(encoded.indices)


def _escaped(texts: pa.Array, pattern: str, fn: Callable[[str], str]) -> pa.Array:
    """``texts`` with ``fn`` applied to the strings that contain a match of the RE2 ``pattern``
    (once per distinct such string); the others, and nulls, as they are."""
    found = pc.fill_null(pc.match_substring_regex(texts, pattern), False)
    positions = np.flatnonzero(found.to_numpy(zero_copy_only=False))
    if not len(positions):
        return texts
    return scatter(texts, positions, _each_distinct(texts.take(pa.array(positions)), fn))


#: The characters ``json.dumps(..., ensure_ascii=False)`` escapes in a string (RFC 8259 §7).
_JSON_ESCAPED = r'[\x00-\x1f"\\]'
#: The characters ``html.escape`` replaces.
_HTML_ESCAPED = r"[&<>\"']"


def json_strings(texts: pa.Array) -> pa.Array:
    """Each string as a JSON string literal, as ``json.dumps(text, ensure_ascii=False)`` writes
    it (RFC 8259 §7); nulls stay null."""
    return _wrap('"', _escaped(texts, _JSON_ESCAPED, lambda t: encode_basestring(t)[1:-1]), '"')


def html_texts(texts: pa.Array) -> pa.Array:
    """:func:`html.escape` of every string (``&``, ``<``, ``>``, ``"``, ``'``); nulls stay null."""
    return _escaped(texts, _HTML_ESCAPED, escape)


#: Markdown escapes that keep a cell's text text when a chat UI renders the chunk as HTML
#: (CommonMark §2.4 backslash escapes, §6.6 raw HTML), in this order: ``\`` -> ``\\``,
#: ``[`` -> ``\[`` (no link or image, so no ``javascript:`` URL), ``<`` -> ``&lt;`` (no tag,
#: no autolink); the tags the renderings write themselves are then put back (:data:`_OWN_TAGS`).
_MD_TEXT_ESCAPES = (("\\", "\\\\"), ("[", "\\["), ("<", "&lt;"))
#: GFM table-cell escapes: those of text, ``|`` -> ``\|`` after the backslash, and line breaks
#: (CR LF, then LF) -> ``<br>``.
_MD_ESCAPES = (_MD_TEXT_ESCAPES[0], ("|", "\\|"), *_MD_TEXT_ESCAPES[1:], ("\r\n", "<br>"),
               ("\n", "<br>"))
#: The HTML the Markdown of a cell may hold: rich-text superscripts and subscripts (whose own
#: text :func:`~extraction_assets.pipeline.stages.rich_markup` escapes) and line breaks.
_OWN_TAGS = r"&lt;(/?(?:sup|sub|br)>)"


def md_cells(texts: pa.Array) -> pa.Array:
    """:func:`md_cell` of every text, with Arrow kernels."""
    for old, new in _MD_ESCAPES:
        texts = pc.replace_substring(texts, old, new)
    return pc.replace_substring_regex(texts, _OWN_TAGS, r"<\1")


def md_cell(text: str) -> str:
    """Escape text for a GFM table cell (:data:`_MD_ESCAPES`): no HTML, link or pipe of the
    text reaches the rendered table."""
    return _escape_md(text, _MD_ESCAPES)


def md_text(text: str) -> str:
    """Escape the text of a paragraph (notes, titles, forms, charts: :data:`_MD_TEXT_ESCAPES`):
    no HTML or link of the text reaches the rendered Markdown."""
    return _escape_md(text, _MD_TEXT_ESCAPES)


def _escape_md(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for old, new in escapes:
        text = text.replace(old, new)
    return re.sub(_OWN_TAGS, r"<\1", text) if "&lt;" in text else text


def _per_row(values: pa.Array, offsets: np.ndarray, separator: str) -> pa.Array:
    """``values`` joined with ``separator`` per row, row ``i`` being ``offsets[i]:offsets[i+1]``."""
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)
    return pc.binary_join(lists, separator)


def _wrap(prefix: str, values: pa.Array, suffix: str) -> pa.Array:
    return pc.binary_join_element_wise(prefix, values, suffix, "")


def _typed_json(cells: pa.Table) -> pa.Array:
    """JSON of the typed value of each StyledGrid cell (``value_type``, ``number_value``,
    ``iso_value``, ``raw_value``, ``display_text``): a number as an int when it is whole and
    below 2**53 in magnitude, else as Python writes the float; a date as its ISO text; a bool;
    an empty cell (a formula without cached value) as its display text or null; anything else
    as its raw text."""
    vtype = pc.fill_null(cells.column("value_type"), "").combine_chunks()
    number = pc.fill_null(cells.column("number_value"), 0.0).combine_chunks()
    values = number.to_numpy(zero_copy_only=False)
    whole = (np.floor(values) == values) & (np.abs(values) < 2 ** 53)
    is_number = pc.equal(vtype, "number")
    fraction = np.flatnonzero(is_number.to_numpy(zero_copy_only=False) & ~whole)
    numbers = pc.cast(pc.cast(number, pa.int64(), safe=False), pa.string())
    if len(fraction):
        mask = np.zeros(len(values), dtype=bool)
        mask[fraction] = True
        numbers = pc.replace_with_mask(numbers, pa.array(mask), pa.array(
            [repr(v) for v in values[fraction].tolist()], pa.string()))
    display = cells.column("display_text").combine_chunks()
    text = pc.if_else(pc.equal(vtype, "date"), cells.column("iso_value").combine_chunks(),
                      pc.if_else(pc.equal(vtype, "empty"),
                                 pc.if_else(pc.equal(pc.fill_null(display, ""), ""),
                                            pa.scalar(None, pa.string()), display),
                                 cells.column("raw_value").combine_chunks()))
    boolean = pc.if_else(pc.equal(cells.column("raw_value").combine_chunks(), "TRUE"),
                         "true", "false")
    out = pc.if_else(is_number, numbers, pc.if_else(
        pc.equal(vtype, "bool"), pc.fill_null(boolean, "false"), json_strings(text)))
    return pc.fill_null(out, "null")


#: The StyledGrid columns a record reads.
_RECORD_COLUMNS = ("value_type", "number_value", "iso_value", "raw_value", "display_text",
                   "merged_from")


@dataclass
class _Plan:
    """Where the records of one block come from: ``rows`` (1-based sheet rows), ``source``
    (record-major, block column by block column: the cell's position in the record set's
    table, -1 for none), ``shows`` (whether each entry's display text is not blank, one row per
    record) and, for a table, the position of each record's first shown cell (``first``)."""

    block: Block
    rows: np.ndarray
    source: np.ndarray
    shows: np.ndarray
    first: np.ndarray | None


def _table_plan(grid: StyledGrid, base: int, nonblank: np.ndarray, block: Block) -> _Plan:
    """The records of a table block: every non-blank, visible row below its header rows, rows
    repeating the header (``block.skip_rows``) left out. ``base`` is the grid's first position
    in the record set's table, ``nonblank`` says which grid cells show text."""
    n = len(block.columns)
    none = _Plan(block, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, n), bool),
                 np.zeros(0, np.int64))
    if not n:
        return none
    positions = grid.positions(block.min_row + block.header_row_count, block.min_col,
                               block.max_row, block.max_col)
    slot_of = np.full(block.max_col - block.min_col + 1, -1, np.int64)
    for j, column in enumerate(block.columns):
        if not column.group:  # a group column has no cells of its own
            slot_of[column.col - block.min_col] = j
    keys = grid.keys[positions]
    column = slot_of[keys % (MAX_COL + 1) - block.min_col]
    row = keys // (MAX_COL + 1)
    skipped = sorted(set(grid.hidden_rows) | set(block.skip_rows))
    keep = (column >= 0) & ~np.isin(row, skipped)
    positions, column, row = positions[keep], column[keep], row[keep]
    shown = nonblank[positions]
    rows = np.unique(row[shown])
    if not len(rows):
        return none
    record = np.searchsorted(rows, row)
    inside = (record < len(rows)) & (rows[np.minimum(record, len(rows) - 1)] == row)
    entry = record[inside] * n + column[inside]
    source = np.full(len(rows) * n, -1, np.int64)
    source[entry] = positions[inside] + base
    shows = np.zeros(len(rows) * n, dtype=bool)
    shows[entry] = shown[inside]
    shows = shows.reshape(len(rows), n)
    first = source[np.arange(len(rows)) * n + shows.argmax(axis=1)]
    return _Plan(block, rows, source, shows, first)


def _form_plan(grid: StyledGrid, base: int, block: Block) -> _Plan:
    """The one record of a ``key_value`` block: each label's value cell."""
    source = np.array([-1 if (p := grid.find(c.row, c.col)) is None else p + base
                       for c in block.columns], np.int64)
    return _Plan(block, np.array([block.min_row], np.int64), source,
                 np.zeros((1, len(block.columns)), bool), None)


#: Cells (entries) whose typed values and texts :class:`RecordSet` computes at a time.
_GATHER_CELLS = 1 << 18


class RecordSet:
    """The records of many blocks (tables and forms, of any sheets of one workbook), built
    together: one gather of their cells from the StyledGrids and one pass of Arrow kernels for
    the JSON, Markdown lines, HTML rows and texts of every record, whatever the number of
    blocks. ``records(block_id)`` gives a block's :class:`TableRecords`.

    Rules (per block): rows hidden in the sheet and rows repeating the header are no records;
    total rows (``block.total_rows``) get role ``total``, group-label rows
    (``block.group_rows``) role ``group``, the others ``data``; in a row-group column
    (``block.row_group_cols``) a group's label is filled down to the data rows under it,
    and a group column (``Column.group``) holds the label of the group row above each data
    row, ``merged_from`` naming the label's cell. A
    form gives one record, cited at its first row and whole range.
    """

    def __init__(self, grids: list[tuple[StyledGrid, list[Block]]]):
        tables = [grid.table.select(list(_RECORD_COLUMNS)) for grid, _ in grids]
        self.cells = pa.concat_tables(tables) if tables else pa.table(
            {name: pa.array([], pa.string()) for name in _RECORD_COLUMNS})
        nonblank = pc.not_equal(stripped_text(self.cells.column("display_text")), "").to_numpy(
            zero_copy_only=False) if self.cells.num_rows else np.zeros(0, bool)
        plans: list[_Plan] = []
        base = 0
        #: each grid's first position in :attr:`cells` (in the order given)
        self.bases: list[int] = []
        for grid, blocks in grids:
            self.bases.append(base)
            local = nonblank[base:base + len(grid)]
            for block in blocks:
                plans.append(_form_plan(grid, base, block) if block.kind == BlockKind.KEY_VALUE
                             else _table_plan(grid, base, local, block))
            base += len(grid)
        self.blocks = [p.block for p in plans]
        counts = np.array([len(p.rows) for p in plans], np.int64)
        widths = np.array([len(p.block.columns) for p in plans], np.int64)
        #: first record and first entry of each block
        self.record_start = np.r_[0, np.cumsum(counts)].astype(np.int64)
        self.entry_start = np.r_[0, np.cumsum(counts * widths)].astype(np.int64)
        self.block_of = np.repeat(np.arange(len(plans)), counts)
        self.rows = np.concatenate([p.rows for p in plans]) if plans else np.zeros(0, np.int64)
        source = np.concatenate([p.source for p in plans]) if plans else np.zeros(0, np.int64)
        # entries of record i: offsets[i]:offsets[i + 1]
        self.offsets = np.r_[0, np.cumsum(widths[self.block_of])].astype(np.int64)
        header_start = np.r_[0, np.cumsum(widths)]
        self.headers = pa.array([c.header for p in plans for c in p.block.columns], pa.string())
        self.header_of = pa.array(np.concatenate(
            [header_start[k] + np.tile(np.arange(widths[k]), counts[k]) for k in range(len(plans))])
            if plans else np.zeros(0, np.int64))
        #: whether each cell (by position in :attr:`cells`) is a record's own value
        self.reached = np.zeros(self.cells.num_rows, dtype=bool)
        self.reached[source[source >= 0]] = True
        roles, overrides = self._roles_and_fills(plans, source)
        self.roles = roles
        self._gather(source, overrides)
        self.a1_ranges = self._ranges(plans)
        self._cache: dict = {}

    def _roles_and_fills(self, plans: list[_Plan], source: np.ndarray
                         ) -> tuple[list[str], list[tuple[int, int, int]]]:
        """Roles of all records (``total`` for the block's ``total_rows``, ``group`` for its
        ``group_rows``, else ``data``) and the row-group fills: ``source`` entries copied from
        the label above, as (entries, label rows, label column)."""
        roles = np.full(len(self.rows), "data", dtype=object)
        fills: list[tuple[np.ndarray, np.ndarray, int]] = []
        for k, plan in enumerate(plans):
            if plan.first is None or not len(plan.rows):
                continue
            r0, block, n = self.record_start[k], plan.block, len(plan.block.columns)
            total = np.isin(plan.rows, block.total_rows)
            group = np.isin(plan.rows, block.group_rows) & ~total
            roles[r0:r0 + len(plan.rows)][total] = "total"
            roles[r0:r0 + len(plan.rows)][group] = "group"
            data = ~total & ~group
            e0 = self.entry_start[k]
            for j, column in enumerate(block.columns):
                if column.group:  # the label of the group row above, from its label column
                    of = next(i for i, c in enumerate(block.columns)
                              if c.col == column.col and not c.group)
                    label = group & plan.shows[:, of]
                    last = np.maximum.accumulate(np.where(label, np.arange(len(plan.rows)), -1))
                    filled = np.flatnonzero(data & (last >= 0))
                    source[e0 + filled * n + j] = source[e0 + last[filled] * n + of]
                    fills.append((e0 + filled * n + j, plan.rows[last[filled]], column.col))
                    continue
                if column.col not in block.row_group_cols:
                    continue
                label = (data | group) & plan.shows[:, j]
                last = np.maximum.accumulate(np.where(label, np.arange(len(plan.rows)), -1))
                filled = np.flatnonzero(data & ~plan.shows[:, j] & (last >= 0))
                source[e0 + filled * n + j] = source[e0 + last[filled] * n + j]
                fills.append((e0 + filled * n + j, plan.rows[last[filled]], column.col))
        return roles.tolist(), fills

    def _gather(self, source: np.ndarray, fills: list) -> None:
        present = source >= 0
        cells = source[present]

        def texts(start: int) -> tuple[pa.Array, pa.Array, pa.Array]:
            taken = self.cells.take(pa.array(cells[start:start + _GATHER_CELLS]))
            return (pc.fill_null(taken.column("display_text"), "").combine_chunks(),
                    _typed_json(taken), taken.column("merged_from").combine_chunks())

        # the cells' texts, a slice at a time (bounded intermediates of the typed values)
        parts = in_threads([partial(texts, start) for start in range(0, len(cells), _GATHER_CELLS)])
        display, values, merged = ([part[k] for part in parts] for k in range(3))
        # entry k reads element slot[k] of the taken cells, or the last element: "no cell"
        slot = pa.array(np.where(present, np.cumsum(present) - 1, len(cells)))

        def spread(parts: list[pa.Array], missing) -> pa.Array:
            return pa.concat_arrays([*parts, pa.array([missing], pa.string())]).take(slot)

        self.display = spread(display, "")
        self.values = spread(values, "null")
        merged = spread(merged, None)
        del display, values
        if fills:
            entries = np.concatenate([e for e, _, _ in fills])
            refs = a1_refs(pa.array(np.concatenate([r for _, r, _ in fills]), pa.int32()),
                           pa.array(np.concatenate([np.full(len(r), c, np.int32)
                                                    for _, r, c in fills])))
            order = np.argsort(entries, kind="stable")
            merged = scatter(merged, entries[order], refs.take(pa.array(order)))
        self.merged_from = merged
        marked = {}
        for k, block in enumerate(self.blocks):
            n = len(block.columns)
            position = {c.col: j for j, c in enumerate(block.columns)}
            rows = self.rows[self.record_start[k]:self.record_start[k + 1]]
            for ref, text in block.markup.items():
                r, c = parse_cell_ref(ref)
                i = int(np.searchsorted(rows, r))
                if c in position and i < len(rows) and rows[i] == r:
                    marked[int(self.entry_start[k]) + i * n + position[c]] = text
        entries = np.array(sorted(marked), np.int64)
        self.markup = scatter(pa.nulls(len(source), pa.string()), entries,
                              pa.array([marked[e] for e in entries.tolist()], pa.string()))

    def _ranges(self, plans: list[_Plan]) -> pa.Array:
        """The A1 range of each record: its row across the block's columns (``B3:E3``, ``B3``
        for one column), a form's whole range."""
        first = np.array([p.block.min_col for p in plans], np.int32)[self.block_of]
        last = np.array([p.block.max_col for p in plans], np.int32)[self.block_of]
        rows = pa.array(self.rows, pa.int32())
        start, end = a1_refs(rows, pa.array(first)), a1_refs(rows, pa.array(last))
        ranges = pc.if_else(pa.array(first == last), start,
                            pc.binary_join_element_wise(start, end, ":"))
        forms = [k for k, p in enumerate(plans) if p.first is None]
        return scatter(ranges, self.record_start[forms],
                       pa.array([plans[k].block.a1_range for k in forms], pa.string()))

    # -- the texts of every record --------------------------------------------------------------
    def _cached(self, name: str, build):
        if name not in self._cache:
            self._cache[name] = build()
        return self._cache[name]

    def forget(self, *names: str) -> None:
        """Drop the texts built for every record by these methods (``html``, ``texts``,
        ``lines``, ``line_array``, ``record``, ``display``, ``merged``): they are built again
        when asked."""
        for name in names:
            self._cache.pop(name, None)

    def _per_record(self, build: Callable[[int, int, np.ndarray], pa.Array]) -> pa.Array:
        """One text per record, built a run of records at a time in threads
        (:func:`~.arrays.in_threads`; bounded intermediates): ``build(e0, e1, offsets)`` gives
        the texts of the records whose entries are ``e0:e1``, record ``i`` of the run reading
        entries ``e0 + offsets[i]:e0 + offsets[i + 1]``. A run holds at most
        :data:`_GATHER_CELLS` entries (or one record)."""
        runs, r0, n_records = [], 0, len(self.rows)
        while r0 < n_records:
            r1 = int(np.searchsorted(self.offsets, self.offsets[r0] + _GATHER_CELLS, "right")) - 1
            r1 = min(max(r1, r0 + 1), n_records)
            e0, e1 = int(self.offsets[r0]), int(self.offsets[r1])
            runs.append(partial(build, e0, e1, self.offsets[r0:r1 + 1] - e0))
            r0 = r1
        parts = in_threads(runs)
        return pa.concat_arrays(parts) if parts else pa.array([], pa.string())

    def _keyed(self, value_of: Callable[[pa.Array], pa.Array], entries: pa.Array,
               keep_valid: bool = False) -> pa.Array:
        """One JSON object per record: ``{"Header": value, ...}``, each value the JSON text
        ``value_of`` gives for a slice of ``entries``; with ``keep_valid``, the entries where
        ``entries`` is null are left out."""
        keys = json_strings(self.headers)

        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            mine = entries.slice(e0, e1 - e0)
            pairs = pc.binary_join_element_wise(keys.take(self.header_of.slice(e0, e1 - e0)),
                                                pc.fill_null(value_of(mine), ""), ": ")
            if keep_valid:
                keep = pc.is_valid(mine).to_numpy(zero_copy_only=False)
                pairs, offsets = pairs.filter(pa.array(keep)), np.r_[0, np.cumsum(keep)][offsets]
            return _wrap("{", _per_row(pairs, offsets, ", "), "}")
        return self._per_record(build)

    def _shown(self, e0: int, e1: int) -> tuple[pa.Array, pa.Array]:
        """(markup, display) of entries ``e0:e1``."""
        return self.markup.slice(e0, e1 - e0), self.display.slice(e0, e1 - e0)

    def record_json(self) -> pa.Array:
        """``record`` of each row as JSON (``json.dumps(record, ensure_ascii=False)``)."""
        return self._cached("record", lambda: self._keyed(lambda values: values, self.values))

    def display_json(self) -> pa.Array:
        """``display`` of each row as JSON: header -> display text."""
        return self._cached("display", lambda: self._keyed(json_strings, self.display))

    def merged_json(self) -> pa.Array:
        """``merged_from`` of each row as JSON: header -> source reference, where there is one."""
        return self._cached("merged", lambda: self._keyed(json_strings, self.merged_from,
                                                          keep_valid=True))

    def line_array(self) -> pa.Array:
        """The GFM table line of each record (rich-text markup where a cell has some)."""
        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            return _wrap("| ", _per_row(md_cells(pc.coalesce(*self._shown(e0, e1))), offsets,
                                        " | "), " |")
        return self._cached("line_array", lambda: self._per_record(build))

    def lines(self) -> list[str]:
        """:meth:`line_array` as Python strings (what the chunks are cut from)."""
        return self._cached("lines", lambda: self.line_array().to_pylist())

    def html_rows(self) -> pa.Array:
        """The ``<tr>`` of each record: display text escaped, rich-text markup as it is."""
        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            markup, display = self._shown(e0, e1)
            cells = _wrap("<td>", pc.coalesce(markup, html_texts(display)), "</td>")
            return _wrap("<tr>", _per_row(cells, offsets, ""), "</tr>")
        return self._cached("html", lambda: self._per_record(build))

    def texts(self) -> pa.Array:
        """Each record as ``Header: value; Header: value`` (empty cells left out)."""
        return self._cached("texts", self._build_texts)

    def _build_texts(self) -> pa.Array:
        labels = pc.binary_join_element_wise(self.headers, ": ", "")

        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            display = self.display.slice(e0, e1 - e0)
            keep = pc.not_equal(display, "").to_numpy(zero_copy_only=False)
            pairs = pc.binary_join_element_wise(
                labels.take(self.header_of.slice(e0, e1 - e0)), display, "").filter(
                pa.array(keep))
            return _per_row(pairs, np.r_[0, np.cumsum(keep)][offsets], "; ")
        return self._per_record(build)

    def records(self, block_id: str) -> TableRecords:
        """The records of one block (empty when it has none)."""
        for k, block in enumerate(self.blocks):
            if block.block_id == block_id:
                return TableRecords(self, k)
        raise KeyError(block_id)

    def by_block(self) -> dict[str, TableRecords]:
        """:class:`TableRecords` of every block, by block id."""
        return {block.block_id: TableRecords(self, k) for k, block in enumerate(self.blocks)}


class TableRecords:
    """The records of one block of a :class:`RecordSet`, column-wise.

    Record ``i`` is sheet row ``rows[i]`` (1-based) with role ``roles[i]`` (``data`` or
    ``total``) and A1 range ``a1_ranges[i]``; its entry for block column ``j`` is element
    ``i * n_columns + j`` of the flat arrays: ``display`` (the display text, ``""`` where the
    row has no cell), ``values`` (JSON of the typed value, ``null`` where there is none),
    ``merged_from`` (A1 reference of the cell the value came from, merged range or filled-down
    group label; null otherwise) and ``markup`` (rich-text HTML of the cell, null where there
    is none). Iterating gives :class:`Record` objects.
    """

    def __init__(self, records: RecordSet, k: int):
        self.set, self.block = records, records.blocks[k]
        self.r0, self.r1 = int(records.record_start[k]), int(records.record_start[k + 1])
        self.e0, self.e1 = int(records.entry_start[k]), int(records.entry_start[k + 1])

    def __len__(self) -> int:
        return self.r1 - self.r0

    @property
    def n_columns(self) -> int:
        return len(self.block.columns)

    def _records(self, values: pa.Array) -> pa.Array:
        return values.slice(self.r0, len(self))

    def _entries(self, values: pa.Array) -> pa.Array:
        return values.slice(self.e0, self.e1 - self.e0)

    @property
    def rows(self) -> np.ndarray:
        return self.set.rows[self.r0:self.r1]

    @property
    def roles(self) -> list[str]:
        return self.set.roles[self.r0:self.r1]

    @property
    def a1_ranges(self) -> pa.Array:
        return self._records(self.set.a1_ranges)

    @property
    def display(self) -> pa.Array:
        return self._entries(self.set.display)

    @property
    def values(self) -> pa.Array:
        return self._entries(self.set.values)

    @property
    def merged_from(self) -> pa.Array:
        return self._entries(self.set.merged_from)

    @property
    def markup(self) -> pa.Array:
        return self._entries(self.set.markup)

    def record_json(self) -> pa.Array:
        """See :meth:`RecordSet.record_json`."""
        return self._records(self.set.record_json())

    def display_json(self) -> pa.Array:
        """See :meth:`RecordSet.display_json`."""
        return self._records(self.set.display_json())

    def merged_json(self) -> pa.Array:
        """See :meth:`RecordSet.merged_json`."""
        return self._records(self.set.merged_json())

    def lines(self) -> list[str]:
        """See :meth:`RecordSet.lines`."""
        return self.set.lines()[self.r0:self.r1]

    def line_array(self) -> pa.Array:
        """See :meth:`RecordSet.line_array`."""
        return self._records(self.set.line_array())

    def html_rows(self) -> pa.Array:
        """See :meth:`RecordSet.html_rows`."""
        return self._records(self.set.html_rows())

    def texts(self) -> pa.Array:
        """See :meth:`RecordSet.texts`."""
        return self._records(self.set.texts())

    def row_display(self, i: int) -> list[str]:
        """The display texts of record ``i``, by block column."""
        n = self.n_columns
        return self.set.display.slice(self.e0 + i * n, n).to_pylist()

    def row_shown(self, i: int) -> list[str]:
        """The texts of record ``i`` as Markdown shows them (markup where a cell has some)."""
        n, at = self.n_columns, self.e0 + i * self.n_columns
        return pc.coalesce(self.set.markup.slice(at, n), self.set.display.slice(at, n)).to_pylist()

    def __getitem__(self, i: int) -> Record:
        n, block, at = self.n_columns, self.block, self.e0 + i * self.n_columns
        headers = [c.header for c in block.columns]
        values = [json.loads(v) for v in self.set.values.slice(at, n).to_pylist()]
        merged = self.set.merged_from.slice(at, n).to_pylist()
        return Record(block.block_id, block.sheet_name, int(self.rows[i]),
                      self.a1_ranges[i].as_py(), self.roles[i], dict(zip(headers, values)),
                      dict(zip(headers, self.row_display(i))),
                      {h: m for h, m in zip(headers, merged) if m})

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def unreached_cells(sheets: list[tuple[StyledGrid, list[Block]]], record_set: RecordSet,
                    ) -> list[tuple[str, str, str, str]]:
    """Every cell that holds a value and reaches no output: ``(sheet name, A1 ref, display
    text, where)``. ``sheets`` are the visible sheets' grids with all their blocks (the grids
    in the order ``record_set`` was built from, that set holding their tables and forms).

    A non-empty cell of a shown row and column, not covered by a merge (its value is its
    anchor's), must be in a block and, there: in a table's header rows, a level of a column's
    header path (a merged header cell stands over several columns); in its data rows, a
    record's own value (a row repeating the header counts as the header); in a form, its label
    or a value; in any other block, in its text.
    """
    out: list[tuple[str, str, str, str]] = []
    for (grid, blocks), base in zip(sheets, record_set.bases):
        table = grid.table
        if not table.num_rows:
            continue
        owned = np.flatnonzero(_np_bool(pc.and_(
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
                data = ~header & ~np.isin(rows, block.skip_rows) & ~reached[inside]
                every = {level for c in block.columns for level in c.header_levels}
                every |= {c.header for c in block.columns}
                for p in inside[header].tolist():
                    if " ".join(texts[p].as_py().split()) not in every:
                        lost[p], why[p] = True, f"header cell of table {block.a1_range} " \
                            "in no column's header"
                for p in inside[data].tolist():
                    lost[p], why[p] = True, f"cell of table {block.a1_range} in no record"
            elif block.kind == BlockKind.KEY_VALUE:
                labels = {c.header for c in block.columns} | {
                    level for c in block.columns for level in c.header_levels}
                for p in inside[~reached[inside]].tolist():
                    text = texts[p].as_py().strip()
                    if text not in labels and text.rstrip(":：").strip() not in labels:
                        lost[p], why[p] = True, f"cell of form {block.a1_range} in no pair"
            else:
                for p in inside.tolist():
                    if texts[p].as_py().strip() not in block.text:
                        lost[p], why[p] = True, f"cell of {block.kind} block {block.a1_range} " \
                            "not in its text"
        for p in np.flatnonzero(lost).tolist():
            r, c = divmod(int(grid.keys[p]), MAX_COL + 1)
            out.append((grid.sheet_name, cell_ref(r, c), texts[p].as_py(),
                        why.get(p, "in no block")))
    return out


def _np_bool(values: pa.Array) -> np.ndarray:
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)


def block_records(grid: StyledGrid, block: Block) -> TableRecords:
    """The records of one ``table`` block, or the one record of a ``key_value`` block (label ->
    typed value of its value cell, ``None`` for a label without a value, cited at the block's
    first row and whole range); see :class:`RecordSet` for the rules."""
    return RecordSet([(grid, [block])]).records(block.block_id)


def form_html(block: Block, record: TableRecords) -> str:
    """A ``key_value`` block as an HTML description list (``<dl>``), all text escaped."""
    items = "".join(f"<dt>{escape(c.header_levels[0])}</dt><dd>{escape(text)}</dd>"
                    for c, text in zip(block.columns, record.row_display(0)))
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
    if block.kind in RECORD_KINDS:
        return replace(block, markup=inside)
    cells = grid.table.take(pa.array(grid.positions(block.min_row, block.min_col, block.max_row,
                                                    block.max_col)))
    lines: dict[int, list[str]] = {}
    for r, c, text, merged, hidden in zip(*(cells.column(name).to_pylist() for name in (
            "row", "col", "display_text", "merged_from", "hidden"))):
        if text and text.strip() and merged is None and not hidden:
            lines.setdefault(r, []).append(inside.get(cell_ref(r, c), text.strip()))
    return replace(block, text="\n".join(" ".join(parts) for _, parts in sorted(lines.items())))


def headings_markdown(path: list[str]) -> str:
    """ATX headings for a heading path: ``#`` the sheet, ``##`` the next level... (at most six)."""
    return _headings(tuple(path))


@lru_cache(maxsize=4096)
def _headings(path: tuple[str, ...]) -> str:
    return "\n\n".join(f"{'#' * min(level + 1, 6)} {md_cell(h)}" for level, h in enumerate(path))


def _row_line(cells: list[str]) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def _header_lines(columns: list) -> str:
    """The GFM header line and delimiter row of ``columns``."""
    return _row_line([c.header for c in columns]) + "\n|" + "|".join(" --- " for _ in columns) + "|"


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
    return joined([_header_lines(block.columns)], records.line_array())


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
    ``count_tokens_batch`` (same counts as ``count_tokens``, for a list of texts) is used for
    the rows of a table and its chunks when given.
    """
    counter = _Counter(count_tokens, count_tokens_batch)
    used = {h for b in blocks for h in b.heading_path[1:]}
    used |= {b.title for b in blocks if b.kind in RECORD_KINDS and b.title}
    pieces: list[_Piece] = []
    for block in blocks:
        if block.kind == BlockKind.TABLE:
            pieces += _table_pieces(block, records.get(block.block_id),
                                    counter, max_tokens)
        elif block.text and not (block.kind == BlockKind.TITLE and block.text in used):
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
    head = headings_markdown(block.heading_path)
    columns = block.columns
    header = _header_lines(columns)
    if records is None or not len(records):
        return [_Piece(block.heading_path, header, [block.block_id], [block.a1_range], [])]
    lines = records.lines()
    overhead = counter.one("")
    base = counter.one(f"{head}\n\n{header}")
    costs = [n - overhead + 1 for n in counter.many(lines)]
    rows = records.rows.tolist()

    def body(start: int, end: int) -> str:
        return f"{header}\n" + "\n".join(lines[start:end])

    pieces: list[_Piece] = []
    block_id = block.block_id
    for start, end, n_tokens in _runs(costs, base, max_tokens,
                                      lambda a, b: f"{head}\n\n{body(a, b)}", counter):
        if n_tokens > max_tokens and len(columns) > 1:
            pieces += _wide_row_pieces(block, records, start, counter, max_tokens)
        else:
            a1 = range_ref(rows[start], block.min_col, rows[end - 1], block.max_col)
            pieces.append(_Piece(block.heading_path, body(start, end), [block_id], [a1],
                                 rows[start:end], n_tokens=n_tokens))
    return pieces


def _wide_row_pieces(block: Block, records: TableRecords, i: int, counter: _Counter,
                     max_tokens) -> list[_Piece]:
    """Record ``i``, too large for the budget, split into column groups that each repeat the
    first column (the row key) with its header, when the key takes at most a quarter of the
    budget (a larger key is written once, in the first group)."""
    head = headings_markdown(block.heading_path)
    row = int(records.rows[i])
    shown = dict(zip((c.col for c in block.columns), records.row_shown(i)))
    display = dict(zip((c.col for c in block.columns), records.row_display(i)))

    def body(cols) -> str:
        return "\n".join([_header_lines(cols), _row_line([shown[c.col] for c in cols])])

    key_cost = counter.one(f"{head}\n\n{body(block.columns[:1])}")
    lead = block.columns[:1] if key_cost <= max_tokens // 4 else []
    rest = block.columns[len(lead):]
    overhead = counter.one("")
    # a column adds its header cell, its rule cell and its value cell to the three lines
    costs = [n - overhead + 3 for n in counter.many(
        [f"{md_cell(c.header)} | --- | {md_cell(display[c.col])}" for c in rest])]
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


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")

def _text_pieces(block: Block, count_tokens, max_tokens) -> list[_Piece]:
    """The paragraphs of a text block within the budget; the text is cut where it is plain,
    and each part counted and written escaped (:func:`md_text`)."""
    head = headings_markdown(block.heading_path)
    rows = list(range(block.min_row, block.max_row + 1))

    def cost(text: str) -> int:
        return count_tokens(f"{head}\n\n{md_text(text)}")

    n_tokens = cost(block.text)
    if n_tokens <= max_tokens:
        return [_Piece(block.heading_path, md_text(block.text), [block.block_id],
                       [block.a1_range], rows, n_tokens=n_tokens)]
    units = [u for line in block.text.split("\n") for u in _SENTENCE.split(line) if u.strip()]
    bodies: list[str] = []
    for unit in units:
        while cost(unit) > max_tokens and len(unit) > 1:
            cut = len(unit) // 2  # a single sentence beyond the budget: halve it
            while cut > 1 and cost(unit[:cut]) > max_tokens:
                cut //= 2
            bodies.append(unit[:cut])
            unit = unit[cut:]
        if bodies and cost(f"{bodies[-1]} {unit}") <= max_tokens:
            bodies[-1] = f"{bodies[-1]} {unit}"
        else:
            bodies.append(unit)
    return [_Piece(block.heading_path, md_text(b), [block.block_id], [block.a1_range], rows,
                   continuation=k > 0) for k, b in enumerate(bodies)]
