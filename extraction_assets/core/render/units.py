"""Record units: the text each record is searched by, built once, with the records.

A record's **retrieval text** names where the row stands and what each value is::

    Sheet > Heading > Table title — Row > path; Header: value; Header: value

its *place* (the block's heading path, then its title where the path does not end with it,
joined by ``" > "``), then its row path (row-group labels and row label, joined by ``" > "``)
and the ``Header: value`` pairs of its non-blank values, all joined by ``"; "``. A value that
is one of the row's own labels (its text, whitespace collapsed, is in the row path) is left
out of the pairs: a label is said once, in the path. A group label row (role ``group``) and a
row with no value but its labels are no units: their words lead the row paths of the rows
under them.

Each unit also carries its value **cells** (``{"ref", "header", "value"}``: A1 reference,
header path, display text) for the search's answer; the reference is the cell in the record's
row (a form's field: the value cell itself), ``""`` for a group column (the label of the group
row above, no cell of the row's own). Everything is built column-wise with Arrow kernels, for
every record of a :class:`~.records.RecordSet` at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.normalize import PY_WHITESPACE, a1_refs, stripped_text
from extraction_assets.core.render.escape import per_row
from extraction_assets.core.render.records import RecordSet

#: between a record's place (heading path, title) and its values
PLACE_SEPARATOR = " — "
#: the type of a unit's value cell: A1 reference, header path, display text
CELL_TYPE = pa.struct([("ref", pa.string()), ("header", pa.string()), ("value", pa.string())])
#: the same in memory, the header paths dictionary-encoded (one copy of each, not one a cell)
CELL_MEMORY_TYPE = pa.struct([("ref", pa.string()),
                              ("header", pa.dictionary(pa.int32(), pa.string())),
                              ("value", pa.string())])
#: a run of the characters ``str.split()`` splits on
_WHITESPACE_RUN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PY_WHITESPACE) + "]+"


def block_place(block: Block) -> str:
    """Where a block's records stand: its heading path, then its title when the path does
    not end with it, joined by ``" > "``."""
    place = list(block.heading_path)
    if block.title and (not place or place[-1] != block.title):
        place.append(block.title)
    return " > ".join(place)


@dataclass
class RecordUnits:
    """The record units of a :class:`~.records.RecordSet`: ``index`` (int64, the position of
    each unit's record in the set, ascending), its retrieval ``text`` and value ``cells``
    (``list<CELL_MEMORY_TYPE>``)."""

    index: np.ndarray
    text: pa.Array
    cells: pa.Array


def _collapsed(texts: pa.Array) -> pa.Array:
    """Each text with its whitespace runs made one space and stripped (``" ".join(t.split())``)."""
    return pc.utf8_trim(pc.replace_substring_regex(texts, _WHITESPACE_RUN, " "),
                        characters=" ")


def _own_labels(paths: list[list[str]], display: pa.Array, entry_record: np.ndarray,
                shown: np.ndarray) -> np.ndarray:
    """Which entries show one of their record's row-path labels (whitespace collapsed):
    ``paths`` of the records, ``display`` and ``entry_record`` (index into ``paths``) of the
    entries."""
    label = np.zeros(len(entry_record), bool)
    lists = pa.array(paths, pa.list_(pa.string()))
    labels = pc.list_flatten(lists)
    if not len(labels):
        return label
    has_path = pc.list_value_length(lists).to_numpy(zero_copy_only=False) > 0
    candidates = np.flatnonzero(shown & has_path[entry_record])
    if not len(candidates):
        return label
    keys = pc.binary_join_element_wise(pc.cast(pc.list_parent_indices(lists), pa.string()),
                                       labels, "\x1f")
    asked = pc.binary_join_element_wise(
        pc.cast(pa.array(entry_record[candidates]), pa.string()),
        _collapsed(display.take(pa.array(candidates))), "\x1f")
    label[candidates] = pc.is_in(asked, value_set=keys).to_numpy(zero_copy_only=False)
    return label


def _entry_cells(records: RecordSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sheet row and column of each entry's cell (its column's cell in the record's row;
    a form's field: the field's own cell) and whether its column is a group column."""
    cols, rows, group = [], [], []
    for k, block in enumerate(records.blocks):
        count = int(records.record_start[k + 1] - records.record_start[k])
        cols.append(np.tile(np.array([c.col for c in block.columns], np.int32), count))
        group.append(np.tile(np.array([c.group for c in block.columns], bool), count))
        if block.kind == BlockKind.KEY_VALUE:
            rows.append(np.tile(np.array([c.row or block.min_row for c in block.columns],
                                         np.int32), count))
        else:
            rows.append(np.repeat(records.rows[records.record_start[k]:
                                               records.record_start[k + 1]].astype(np.int32),
                                  len(block.columns)))
    if not cols:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, bool)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(group)


def record_units(records: RecordSet, places: Sequence[str]) -> RecordUnits:
    """The record units of ``records`` (see the module's rules), ``places[k]`` the place of
    block ``k`` of ``records.blocks`` (:func:`block_place`). Built a run of records at a time
    (at most :data:`_RUN_ENTRIES` entries, or one record): bounded intermediates."""
    rows, cols, group_column = _entry_cells(records)
    place = pa.array(places, pa.string())
    group_row = np.array([role == "group" for role in records.roles], bool)
    offsets, parts = records.offsets, []
    r0, n_records = 0, len(records.rows)
    while r0 < n_records:
        r1 = int(np.searchsorted(offsets, offsets[r0] + _RUN_ENTRIES, "right")) - 1
        r1 = min(max(r1, r0 + 1), n_records)
        parts.append(_run_units(records, r0, r1, place, rows, cols, group_column, group_row))
        r0 = r1
    if not parts:
        return RecordUnits(np.zeros(0, np.int64), pa.array([], pa.string()),
                           pa.array([], pa.list_(CELL_MEMORY_TYPE)))
    return RecordUnits(np.concatenate([p.index for p in parts]),
                       pa.concat_arrays([p.text for p in parts]),
                       pa.concat_arrays([p.cells for p in parts]))


#: Entries (cells of records) whose units :func:`record_units` builds at a time.
_RUN_ENTRIES = 1 << 17


def _run_units(records: RecordSet, r0: int, r1: int, place: pa.Array, rows: np.ndarray,
               cols: np.ndarray, group_column: np.ndarray, group_row: np.ndarray
               ) -> RecordUnits:
    """The units of records ``r0:r1`` (see :func:`record_units`)."""
    e0, e1 = int(records.offsets[r0]), int(records.offsets[r1])
    display = records.display.slice(e0, e1 - e0)
    entry_record = np.repeat(np.arange(r1 - r0), np.diff(records.offsets[r0:r1 + 1]))
    shown = pc.not_equal(stripped_text(display), "").to_numpy(zero_copy_only=False)
    keep = shown & ~_own_labels(records.row_paths[r0:r1], display, entry_record, shown)
    keep &= ~group_row[r0:r1][entry_record]
    kept_of = np.bincount(entry_record[keep], minlength=r1 - r0)
    index = np.flatnonzero(kept_of)
    entries = np.flatnonzero(keep)
    if not len(index):
        return RecordUnits(index, pa.array([], pa.string()),
                           pa.array([], pa.list_(CELL_MEMORY_TYPE)))
    taken = pa.array(entries)
    header_of = pc.cast(records.header_of.slice(e0, e1 - e0).take(taken), pa.int32())
    headers = records.headers.take(header_of)
    values = display.take(taken)
    offsets = np.r_[0, np.cumsum(kept_of[index])]
    pairs = per_row(pc.binary_join_element_wise(headers, values, ": "), offsets, "; ")
    paths = pa.array([" > ".join(records.row_paths[r0 + i]) for i in index.tolist()],
                     pa.string())
    body = pc.if_else(pc.equal(paths, ""), pairs, pc.binary_join_element_wise(paths, pairs, "; "))
    where = place.take(pa.array(records.block_of[r0 + index]))
    text = pc.if_else(pc.equal(where, ""), body,
                      pc.binary_join_element_wise(where, body, PLACE_SEPARATOR))
    at = e0 + entries
    refs = pc.if_else(pa.array(group_column[at]), "",
                      a1_refs(pa.array(rows[at]), pa.array(cols[at])))
    cells = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(
        [refs, pa.DictionaryArray.from_arrays(header_of, records.headers), values],
        fields=list(CELL_MEMORY_TYPE)))
    return RecordUnits(index + r0, text, cells)
