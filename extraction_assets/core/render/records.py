"""Records: one per data row of a table (header -> typed value, display text, role, source row and
A1 range) and one per form, built for many blocks at once (:class:`RecordSet`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, parse_cell_ref
from extraction_assets.core.arrays import in_threads, scatter
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.normalize import a1_refs, stripped_text
from extraction_assets.core.render.escape import html_texts, json_strings, md_cells, per_row, wrap


@dataclass
class Record:
    """One table row as a record; ``row`` is the 1-based sheet row, ``row_path`` its row
    header levels, outermost first (see :meth:`RecordSet._row_paths`)."""

    block_id: str
    sheet_name: str
    row: int
    a1_range: str
    role: str
    record: dict
    display: dict
    merged_from: dict
    row_path: list[str]
    computed: dict = field(default_factory=dict)


def row_path_text(row_path: Sequence[str]) -> str:
    """How a record's text leads with its row path: the levels joined by ``" > "`` where it has
    two or more, else ``""`` (a lone row label is among the record's values already)."""
    return " > ".join(row_path) if len(row_path) > 1 else ""


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


#: The StyledGrid columns a record reads (and where a value was computed, those naming it).
_RECORD_COLUMNS = ("value_type", "number_value", "iso_value", "raw_value", "display_text",
                   "merged_from")
_COMPUTED_COLUMNS = ("value_status", "ref")


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
    skipped = sorted(set(grid.hidden_rows) | set(block.skip_rows) | set(block.unit_rows))
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


def _section_headers(grid: StyledGrid, plan: _Plan) -> tuple[np.ndarray, list[list[str]]]:
    """The keys of a block's records by units section: ``(section of each record, [headers of
    section 0, 1, …])``. Section 0 (above the first units row, or the whole block) has the
    columns' headers; the section under units row ``block.unit_rows[s - 1]`` has each
    column's header with the unit that row gives it appended (``2015 > grams``), unless its
    header path already ends with it; a group row is in the section of the rows it heads."""
    block = plan.block
    keys = [[c.header for c in block.columns]]
    if not block.unit_rows or plan.first is None:
        return np.zeros(len(plan.rows), np.int64), keys
    unit_rows = sorted(block.unit_rows)
    texts = grid.table.column("display_text")
    for r in unit_rows:
        section = []
        for c in block.columns:
            p = grid.find(r, c.col)
            unit = " ".join((texts[p].as_py() or "").split()) if p is not None else ""
            section.append(c.header if c.group or not unit or c.header_levels[-1:] == [unit]
                           else f"{c.header} > {unit}")
        keys.append(section)
    section = np.searchsorted(np.array(unit_rows), plan.rows, side="right")
    # a group row takes the section of the rows it heads (a units row may come between)
    heads = np.flatnonzero(~np.isin(plan.rows, block.group_rows))
    if len(heads):
        nxt = heads[np.minimum(np.searchsorted(heads, np.arange(len(plan.rows))), len(heads) - 1)]
        section = section[nxt]
    return section, keys


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
    total rows (``block.total_rows``) get role ``total``, group-label rows (``block.group_rows``)
    role ``group``, the others ``data``; in a row-group column (``block.row_group_cols``) a
    group's label is filled down to the data rows under it, and a group column
    (``Column.group``) holds the label of the group row above each data row, ``merged_from``
    naming the label's cell. A form gives one record, cited at its first row and whole range."""

    def __init__(self, grids: list[tuple[StyledGrid, list[Block]]]):
        computed = any(pc.any(pc.equal(grid.table.column("value_status"), "computed")).as_py()
                       for grid, _ in grids)  # most workbooks: none, nothing more to gather
        copies = any(g.table.column("merged_from").null_count < g.table.num_rows for g, _ in grids)
        columns = [*_RECORD_COLUMNS, *(_COMPUTED_COLUMNS if computed else ()),
                   *(["merge_range"] if copies else [])]  # a copy names its merged range
        tables = [grid.table.select(columns) for grid, _ in grids]
        self.cells = pa.concat_tables(tables) if tables else pa.table(
            {name: pa.array([], pa.string()) for name in _RECORD_COLUMNS})
        nonblank = pc.not_equal(stripped_text(self.cells.column("display_text")), "").to_numpy(
            zero_copy_only=False) if self.cells.num_rows else np.zeros(0, bool)
        plans: list[_Plan] = []
        grids_of: list[StyledGrid] = []
        base = 0
        #: each grid's first position in :attr:`cells` (in the order given)
        self.bases: list[int] = []
        for grid, blocks in grids:
            self.bases.append(base)
            local = nonblank[base:base + len(grid)]
            for block in blocks:
                plans.append(_form_plan(grid, base, block) if block.kind == BlockKind.KEY_VALUE
                             else _table_plan(grid, base, local, block))
                grids_of.append(grid)
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
        # the keys of each block's records: one list of headers per units section
        sections = [_section_headers(grids_of[k], p) for k, p in enumerate(plans)]
        #: each record's units section in its block, and each block's keys by section
        self.sections = np.concatenate([s for s, _ in sections]) if plans else \
            np.zeros(0, np.int64)
        self.section_keys = [keys for _, keys in sections]
        header_start = np.r_[0, np.cumsum([len(keys) * widths[k]
                                             for k, (_, keys) in enumerate(sections)])]
        self.headers = pa.array([key for _, keys in sections for section in keys
                                 for key in section], pa.string())
        self.header_of = pa.array(np.concatenate(
            [header_start[k] + np.tile(np.arange(widths[k]), counts[k])
             + np.repeat(sections[k][0] * widths[k], widths[k]) for k in range(len(plans))])
            if plans else np.zeros(0, np.int64))
        #: whether each cell (by position in :attr:`cells`) is a record's own value
        self.reached = np.zeros(self.cells.num_rows, dtype=bool)
        self.reached[source[source >= 0]] = True
        roles, overrides = self._roles_and_fills(plans, source)
        self.roles = roles
        self._gather(source, overrides)
        self.row_paths = self._row_paths(plans)
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

        def texts(start: int) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
            taken = self.cells.take(pa.array(cells[start:start + _GATHER_CELLS]))
            computed = pc.if_else(
                pc.equal(taken.column("value_status").combine_chunks(), "computed"),
                taken.column("ref").combine_chunks(), pa.scalar(None, pa.string())
            ) if "ref" in taken.column_names else pa.nulls(taken.num_rows, pa.string())
            merged = pc.if_else(pc.is_valid(taken.column("merged_from")), taken.column(
                "merge_range"), pa.scalar(None, pa.string())) if "merge_range" in \
                taken.column_names else taken.column("merged_from")  # (all null without)
            return (pc.fill_null(taken.column("display_text"), "").combine_chunks(),
                    _typed_json(taken), merged.combine_chunks(), computed)

        # the cells' texts, a slice at a time (bounded intermediates of the typed values)
        parts = in_threads([partial(texts, start) for start in range(0, len(cells), _GATHER_CELLS)])
        display, values, merged, computed = ([part[k] for part in parts] for k in range(4))
        # entry k reads element slot[k] of the taken cells, or the last element: "no cell"
        slot = pa.array(np.where(present, np.cumsum(present) - 1, len(cells)))

        def spread(parts: list[pa.Array], missing) -> pa.Array:
            return pa.concat_arrays([*parts, pa.array([missing], pa.string())]).take(slot)

        self.display, self.values = spread(display, ""), spread(values, "null")
        self.computed, merged = spread(computed, None), spread(merged, None)
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

    def _row_paths(self, plans: list[_Plan]) -> list[list[str]]:
        """The row path of each record (its row header levels, outermost first): the labels of
        the group rows above it, a label replacing those of its own nesting level and deeper
        (``block.group_rows``, ``block.group_levels``: levels are compared, never used as
        positions, for a table's first labels need not be at level 0), then its values in
        ``block.row_label_cols`` (filled down where they are); a group row's path ends with
        its own label, a form's is empty."""
        out: list[list[str]] = []
        #: how many of the first levels of each row path are group labels (the rest: its own)
        self.group_depths: list[int] = []
        for k, plan in enumerate(plans):
            block, n, r0 = plan.block, len(plan.block.columns), int(self.record_start[k])
            if plan.first is None or not len(plan.rows) or not (
                    block.group_rows or block.row_label_cols):
                out.extend([[]] * len(plan.rows))  # one shared empty path, never changed
                self.group_depths.extend([0] * len(plan.rows))
                continue
            slots = [j for c in block.row_label_cols for j, column in enumerate(block.columns)
                     if column.col == c and not column.group]
            e0 = int(self.entry_start[k])
            labels = [self.display.take(pa.array(e0 + np.arange(len(plan.rows)) * n + j))
                      .to_pylist() for j in slots]
            levels = dict(zip(block.group_rows, block.group_levels or [0] * len(block.group_rows)))
            stack: list[tuple[int, str]] = []  # (level, label) of the groups over the row
            for i, row in enumerate(plan.rows.tolist()):
                if row in levels and self.roles[r0 + i] == "group":
                    label = next((t for t in self.display.slice(e0 + i * n, n).to_pylist() if t),
                                 "")
                    stack = [entry for entry in stack if entry[0] < levels[row]]
                    self.group_depths.append(len(stack))
                    stack.append((levels[row], " ".join(label.split())))
                    out.append([text for _, text in stack])
                    continue
                self.group_depths.append(len(stack))
                out.append([*(text for _, text in stack),
                            *(" ".join(column[i].split()) for column in labels if column[i])])
        return out

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
        ``lines``, ``line_array``, ``record``, ``display``, ``merged``, ``computed``): they
        are built again when asked."""
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
        if keep_valid and entries.null_count == len(entries):  # most merged_from, computed
            return pa.array(["{}"], pa.string()).take(pa.array(np.zeros(len(self.rows), np.int32)))
        keys = json_strings(self.headers)

        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            mine = entries.slice(e0, e1 - e0)
            pairs = pc.binary_join_element_wise(keys.take(self.header_of.slice(e0, e1 - e0)),
                                                pc.fill_null(value_of(mine), ""), ": ")
            if keep_valid:
                keep = pc.is_valid(mine).to_numpy(zero_copy_only=False)
                pairs, offsets = pairs.filter(pa.array(keep)), np.r_[0, np.cumsum(keep)][offsets]
            return wrap("{", per_row(pairs, offsets, ", "), "}")
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

    def computed_json(self) -> pa.Array:
        """``computed`` of each row as JSON: header -> A1 reference of each value that was
        computed because the file stored no cached value (value_status ``computed``; its
        formula is in the cell's row of ``cells``, where redaction applies)."""
        return self._cached("computed", lambda: self._keyed(json_strings, self.computed,
                                                            keep_valid=True))

    def line_array(self) -> pa.Array:
        """The GFM table line of each record (rich-text markup where a cell has some)."""
        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            return wrap("| ", per_row(md_cells(*self._shown(e0, e1)), offsets,
                                        " | "), " |")
        return self._cached("line_array", lambda: self._per_record(build))

    def lines(self) -> list[str]:
        """:meth:`line_array` as Python strings (what the chunks are cut from)."""
        return self._cached("lines", lambda: self.line_array().to_pylist())

    def html_rows(self) -> pa.Array:
        """The ``<tr>`` of each record: display text escaped, rich-text markup as it is."""
        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            markup, display = self._shown(e0, e1)
            cells = wrap("<td>", pc.coalesce(markup, html_texts(display)), "</td>")
            return wrap("<tr>", per_row(cells, offsets, ""), "</tr>")
        return self._cached("html", lambda: self._per_record(build))

    def texts(self) -> pa.Array:
        """Each record as ``Row > path; Header: value; Header: value`` (its row path first
        where it has two levels or more, empty cells left out)."""
        return self._cached("texts", self._build_texts)

    def _build_texts(self) -> pa.Array:
        labels = pc.binary_join_element_wise(self.headers, ": ", "")

        def build(e0: int, e1: int, offsets: np.ndarray) -> pa.Array:
            display = self.display.slice(e0, e1 - e0)
            keep = pc.not_equal(display, "").to_numpy(zero_copy_only=False)
            pairs = pc.binary_join_element_wise(
                labels.take(self.header_of.slice(e0, e1 - e0)), display, "").filter(
                pa.array(keep))
            return per_row(pairs, np.r_[0, np.cumsum(keep)][offsets], "; ")
        texts = self._per_record(build)
        if not any(self.group_depths) and not any(
                len(block.row_label_cols) > 1 for block in self.blocks):
            return texts  # no record has a path of two levels or more
        paths = pa.array([row_path_text(path) for path in self.row_paths], pa.string())
        return pc.if_else(pc.equal(paths, ""), texts, pc.if_else(
            pc.equal(texts, ""), paths, pc.binary_join_element_wise(paths, texts, "; ")))

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
    ``merged_from`` (the merged range the value was copied from, ``A2:A4``, or the filled-down
    group label's A1 reference; null otherwise), ``computed`` (A1 reference of a value computed
    because the file cached none; null otherwise) and ``markup`` (rich-text HTML of the cell,
    null where there is none). Iterating gives :class:`Record` objects."""

    def __init__(self, records: RecordSet, k: int):
        self.set, self.block, self.k = records, records.blocks[k], k
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

    def computed_json(self) -> pa.Array:
        """See :meth:`RecordSet.computed_json`."""
        return self._records(self.set.computed_json())

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

    def row_markdown(self, i: int) -> list[str]:
        """The Markdown cells of record ``i`` (:func:`~.escape.md_cells`: of the markup where a
        cell has some)."""
        n, at = self.n_columns, self.e0 + i * self.n_columns
        return md_cells(self.set.markup.slice(at, n), self.set.display.slice(at, n)).to_pylist()

    @property
    def row_paths(self) -> list[list[str]]:
        return self.set.row_paths[self.r0:self.r1]

    @property
    def sections(self) -> np.ndarray:
        """The units section of each record (0 above the block's first units row)."""
        return self.set.sections[self.r0:self.r1]

    def keys(self, section: int) -> list[str]:
        """The keys of the records of units ``section``: each column's header, with the unit
        of that section where the block has units rows (see :func:`_section_headers`)."""
        return self.set.section_keys[self.k][section]

    def groups_above(self, i: int) -> list[str]:
        """The labels of the group rows heading record ``i`` (outermost first; a group row's
        own label not included)."""
        return self.set.row_paths[self.r0 + i][:self.set.group_depths[self.r0 + i]]

    def __getitem__(self, i: int) -> Record:
        n, block, at = self.n_columns, self.block, self.e0 + i * self.n_columns
        headers = self.set.headers.take(self.set.header_of.slice(at, n)).to_pylist()
        values = [json.loads(v) for v in self.set.values.slice(at, n).to_pylist()]
        merged = self.set.merged_from.slice(at, n).to_pylist()
        computed = self.set.computed.slice(at, n).to_pylist()
        return Record(block.block_id, block.sheet_name, int(self.rows[i]),
                      self.a1_ranges[i].as_py(), self.roles[i], dict(zip(headers, values)),
                      dict(zip(headers, self.row_display(i))),
                      {h: m for h, m in zip(headers, merged) if m}, self.row_paths[i],
                      {h: f for h, f in zip(headers, computed) if f})

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def block_records(grid: StyledGrid, block: Block) -> TableRecords:
    """The records of one ``table`` block, or the one record of a ``key_value`` block (label ->
    typed value of its value cell, ``None`` for a label without a value, cited at the block's
    first row and whole range); see :class:`RecordSet` for the rules."""
    return RecordSet([(grid, [block])]).records(block.block_id)
