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
    (``list<CELL_TYPE>``)."""

    index: np.ndarray
    text: pa.Array
    cells: pa.Array


def _collapsed(texts: pa.Array) -> pa.Array:
    """Each text with its whitespace runs made one space and stripped (``" ".join(t.split())``)."""
    return pc.utf8_trim(pc.replace_substring_regex(texts, _WHITESPACE_RUN, " "),
                        characters=" ")


def _own_labels(records: RecordSet, entry_record: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Which entries show one of their record's row-path labels (whitespace collapsed)."""
    paths = pa.array(records.row_paths, pa.list_(pa.string()))
    labels = pc.list_flatten(paths)
    label = np.zeros(len(entry_record), bool)
    if not len(labels):
        return label
    has_path = pc.list_value_length(paths).to_numpy(zero_copy_only=False) > 0
    candidates = np.flatnonzero(shown & has_path[entry_record])
    if not len(candidates):
        return label
    owner = pc.cast(pc.list_parent_indices(paths), pa.string())
    keys = pc.binary_join_element_wise(owner, labels, "\x1f")
    texts = _collapsed(records.display.take(pa.array(candidates)))
    asked = pc.binary_join_element_wise(
        pc.cast(pa.array(entry_record[candidates]), pa.string()), texts, "\x1f")
    label[candidates] = pc.is_in(asked, value_set=keys).to_numpy(zero_copy_only=False)
    return label


def _entry_refs(records: RecordSet, entry_record: np.ndarray) -> pa.Array:
    """The A1 reference of each entry's cell: its column's cell in the record's row (a form's
    field: the field's own cell), ``""`` for a group column."""
    cols, rows, group = [], [], []
    for k, block in enumerate(records.blocks):
        count = int(records.record_start[k + 1] - records.record_start[k])
        cols.append(np.tile([c.col for c in block.columns], count))
        group.append(np.tile([c.group for c in block.columns], count))
        if block.kind == BlockKind.KEY_VALUE:
            rows.append(np.tile([c.row or block.min_row for c in block.columns], count))
        else:
            rows.append(np.full(count * len(block.columns), -1))
    if not cols:
        return pa.array([], pa.string())
    row = np.concatenate(rows).astype(np.int64)
    row = np.where(row < 0, records.rows[entry_record], row)
    refs = a1_refs(pa.array(row, pa.int32()), pa.array(np.concatenate(cols), pa.int32()))
    return pc.if_else(pa.array(np.concatenate(group).astype(bool)), "", refs)


def record_units(records: RecordSet, places: Sequence[str]) -> RecordUnits:
    """The record units of ``records`` (see the module's rules), ``places[k]`` the place of
    block ``k`` of ``records.blocks`` (:func:`block_place`)."""
    widths = np.diff(records.offsets)
    entry_record = np.repeat(np.arange(len(records.rows)), widths)
    shown = pc.not_equal(stripped_text(records.display), "").to_numpy(zero_copy_only=False)
    keep = shown & ~_own_labels(records, entry_record, shown)
    keep &= ~np.array([role == "group" for role in records.roles], bool)[entry_record]
    kept_of = np.bincount(entry_record[keep], minlength=len(records.rows))
    index = np.flatnonzero(kept_of)
    if not len(index):
        return RecordUnits(index, pa.array([], pa.string()), pa.array([], pa.list_(CELL_TYPE)))
    entries = pa.array(np.flatnonzero(keep))
    headers = records.headers.take(records.header_of.take(entries))
    values = records.display.take(entries)
    offsets = np.r_[0, np.cumsum(kept_of[index])]
    pairs = per_row(pc.binary_join_element_wise(headers, values, ": "), offsets, "; ")
    paths = pa.array([" > ".join(records.row_paths[i]) for i in index.tolist()], pa.string())
    body = pc.if_else(pc.equal(paths, ""), pairs, pc.binary_join_element_wise(paths, pairs, "; "))
    place = pa.array(places, pa.string()).take(pa.array(records.block_of[index]))
    text = pc.if_else(pc.equal(place, ""), body,
                      pc.binary_join_element_wise(place, body, PLACE_SEPARATOR))
    refs = _entry_refs(records, entry_record).take(entries)
    cells = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(
        [refs, headers, values], fields=list(CELL_TYPE)))
    return RecordUnits(index, text, cells)
