"""Build the StyledGrid of a parsed sheet (:mod:`.grid`): what each cell shows through its
number format, its typed value, resolved colours, merged ranges filled, hidden rows and columns.

Colour resolution follows ECMA-376 Part 1: ``rgb`` is ``AARRGGBB`` (§18.8.19), ``indexed``
uses the legacy palette (§18.8.27) or the workbook's own ``indexedColors``, ``theme`` indexes
the theme's colour scheme with slots 0-3 swapped to lt1, dk1, lt2, dk2 as Excel does, and
``tint`` changes the HLS luminance (``L*(1+t)`` for t<0, ``L*(1-t)+t`` for t>0, §18.3.1.15).
"""

from __future__ import annotations

import colorsys
import datetime as dt
import re
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import MAX_COL, column_letter, parse_range
from extraction_assets.core.arrays import in_threads, scatter
from extraction_assets.core.formula.evaluate import SheetComputed
from extraction_assets.core.grid import GRID_SCHEMA, StyledGrid, cell_keys
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import ParsedSheet, WorkbookStyles
from extraction_assets.core.numfmt import (
    format_text,
    format_values,
    is_date_format,
    serial_to_datetime,
)
from extraction_assets.core.ooxml.xml import text_bytes

# ECMA-376 Part 1, §18.8.27: the default indexed colour palette (indices 0..63).
DEFAULT_INDEXED_COLORS = (
    "000000 FFFFFF FF0000 00FF00 0000FF FFFF00 FF00FF 00FFFF "
    "000000 FFFFFF FF0000 00FF00 0000FF FFFF00 FF00FF 00FFFF "
    "800000 008000 000080 808000 800080 008080 C0C0C0 808080 "
    "9999FF 993366 FFFFCC CCFFFF 660066 FF8080 0066CC CCCCFF "
    "000080 FF00FF FFFF00 00FFFF 800080 800000 008080 0000FF "
    "00CCFF CCFFFF CCFFCC FFFF99 99CCFF FF99CC CC99FF FFCC99 "
    "3366FF 33CCCC 99CC00 FFCC00 FF9900 FF6600 666699 969696 "
    "003366 339966 003300 333300 993300 993366 333399 333333"
).split()
_ERROR_VALUES = {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A",
                 "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#UNKNOWN!"}


def apply_tint(rgb: str, tint: float) -> str:
    """Apply an OOXML ``tint`` to an ``RRGGBB`` colour through HLS luminance (§18.3.1.15)."""
    r, g, b = (int(rgb[i:i + 2], 16) / 255 for i in (0, 2, 4))
    h, lum, s = colorsys.rgb_to_hls(r, g, b)
    lum = lum * (1 + tint) if tint < 0 else lum * (1 - tint) + tint
    r, g, b = colorsys.hls_to_rgb(h, min(max(lum, 0.0), 1.0), s)
    return "".join(f"{round(c * 255):02X}" for c in (r, g, b))


_HEX6 = re.compile(r"[0-9A-Fa-f]{6}")


def resolve_color(spec: str | None, theme: list[str], indexed: list[str] | None) -> str | None:
    """Resolve a colour as written by the parser (``rgb:``, ``theme:N;tint:T``, ``indexed:N``)
    to ``RRGGBB``; ``None`` when absent, automatic or unresolvable (an index or tint that is
    not a number, an ``rgb`` that is not hexadecimal)."""
    try:
        return _resolve_color(spec, theme, indexed)
    except (ValueError, OverflowError):
        return None


def _resolve_color(spec: str | None, theme: list[str], indexed: list[str] | None) -> str | None:
    if not spec:
        return None
    kind, _, rest = spec.partition(":")
    if kind == "rgb":
        return rest[-6:].upper() if _HEX6.fullmatch(rest[-6:]) else None
    if kind == "indexed":
        palette = indexed or DEFAULT_INDEXED_COLORS
        idx = int(rest)
        return palette[idx] if 0 <= idx < len(palette) else None
    if kind == "theme":
        slot, _, tint_part = rest.partition(";")
        idx = int(slot)
        idx = {0: 1, 1: 0, 2: 3, 3: 2}.get(idx, idx)
        if not 0 <= idx < len(theme):
            return None
        color = theme[idx]
        if tint_part.startswith("tint:"):
            color = apply_tint(color, float(tint_part[5:]))
        return color
    return None


def typed_date(serial: float, date1904: bool) -> str:
    """ISO text of a date-formatted serial: ``YYYY-MM-DD``, ``HH:MM:SS`` (serial < 1) or a
    ``YYYY-MM-DDTHH:MM:SS`` datetime.

    Raises:
        ValueError: if the serial is outside Excel's date range.
    """
    when = serial_to_datetime(serial, date1904)
    if 0 <= serial < 1:
        return when.time().isoformat(timespec="seconds")
    if when.time() == dt.time(0):
        return when.date().isoformat()
    return when.isoformat(timespec="seconds")


#: Most cells merged ranges may fill in one sheet (a hostile ``A1:XFD1048576`` is clipped).
MAX_MERGED_AREA = 5_000_000
#: A merged range up to this many cells is filled whole; a larger one (a whole column or row
#: merged) is clipped to the extent of the sheet's cells.
MAX_UNCLIPPED_MERGE = 65_536


def _style_arrays(workbook: WorkbookStyles) -> dict[str, pa.Array]:
    """Per-style attribute arrays (index = style index), colours resolved to RRGGBB."""
    theme, indexed = workbook.theme_colors, workbook.indexed_colors
    styles = workbook.styles
    return {
        "number_format": pa.array([s.number_format for s in styles], pa.string()),
        "bold": pa.array([s.bold for s in styles], pa.bool_()),
        "italic": pa.array([s.italic for s in styles], pa.bool_()),
        "font_size": pa.array([s.font_size for s in styles], pa.float64()),
        "font_rgb": pa.array([resolve_color(s.font_color, theme, indexed) for s in styles], pa.string()),
        "fill_rgb": pa.array([resolve_color(s.fill_color, theme, indexed) for s in styles], pa.string()),
        "has_border": pa.array([s.has_border for s in styles], pa.bool_()),
        "indent": pa.array([s.indent for s in styles], pa.int32()),
        "is_date": pa.array([is_date_format(s.number_format) for s in styles], pa.bool_()),
    }


def _format_numbers(numbers: np.ndarray, codes: pa.Array, date1904: bool,
                    memo: dict[tuple[str, float], str]) -> pa.Array:
    """Display text of numeric cells under their format ``codes``: whole numbers under General
    as a batch, every other distinct (format code, value) once through :func:`format_values`
    (memoised in ``memo`` across calls), spread back to the cells with numpy."""
    out = np.empty(len(numbers), dtype=object)
    encoded = pc.dictionary_encode(codes)
    which = encoded.indices.to_numpy(zero_copy_only=False)
    for k, code in enumerate(encoded.dictionary.to_pylist()):
        cells = np.flatnonzero(which == k)
        values, inverse = np.unique(numbers[cells] + 0.0, return_inverse=True)  # -0.0 is 0.0
        texts = np.empty(len(values), dtype=object)
        rest = np.ones(len(values), dtype=bool)
        if code == "General":
            rest = (np.floor(values) != values) | (np.abs(values) >= 1e11)
            whole = np.flatnonzero(~rest)
            texts[whole] = pc.cast(pa.array(values[whole].astype(np.int64)),
                                   pa.string()).to_numpy(zero_copy_only=False)
        pending = []
        for i in np.flatnonzero(rest).tolist():
            text = memo.get((code, float(values[i])))
            if text is None:
                pending.append(i)
            texts[i] = text
        for i, text in zip(pending, format_values(values[pending].tolist(), code, date1904)):
            texts[i] = memo[(code, float(values[i]))] = text
        out[cells] = texts[inverse]
    return pa.array(out, pa.string())


def _iso_dates(numbers: np.ndarray, date1904: bool) -> pa.Array:
    """ISO text of date-formatted serials, each distinct serial converted once; null outside
    Excel's date range."""
    values, inverse = np.unique(numbers + 0.0, return_inverse=True)
    texts = []
    for number in values.tolist():
        try:
            texts.append(typed_date(number, date1904))
        except ValueError:
            texts.append(None)
    return pa.array(texts, pa.string()).take(pa.array(inverse))


def _to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _typed_columns(cells: pa.Table, codes: pa.Array, is_date: np.ndarray, date1904: bool,
                   memo: dict) -> dict[str, pa.Array]:
    """value_type, raw_value, number_value, iso_value, value_status and display_text of every
    cell, computed with Arrow kernels; only number formatting loops in Python (over distinct
    (format, value) pairs)."""
    data_type = cells.column("data_type").combine_chunks()
    values = cells.column("value").combine_chunks()
    formulas = cells.column("formula").combine_chunks()
    n = len(values)
    null = pc.is_null(values)
    uncached = pc.and_(null, pc.is_valid(formulas))
    present = pc.invert(null)

    def of_type(*names: str) -> pa.Array:
        test = pc.equal(data_type, names[0]) if len(names) == 1 else pc.is_in(
            data_type, value_set=pa.array(names))
        return pc.and_(pc.fill_null(test, False), present)

    boolean, error, iso_typed = of_type("b"), of_type("e"), of_type("d")
    text = of_type("s", "str", "inlineStr")
    numeric = np.flatnonzero(of_type("n").to_numpy(zero_copy_only=False))
    truth = pc.if_else(pc.is_in(values, value_set=pa.array(["1", "true"])), "TRUE", "FALSE")
    display = pc.if_else(boolean, truth, values)
    raw = display
    display = pc.if_else(uncached, pc.binary_join_element_wise("=", formulas, ""), display)
    display = pc.fill_null(display, "")
    vtype = pc.if_else(null, "empty", pc.if_else(boolean, "bool", pc.if_else(
        error, "error", pc.if_else(iso_typed, "date", "string"))))
    status = pc.if_else(uncached, "uncached_formula", "ok")
    if "computed" in cells.column_names:
        status = pc.if_else(cells.column("computed").combine_chunks(), "computed", status)
    iso = pc.if_else(iso_typed, values, pa.scalar(None, pa.string()))
    number = pa.nulls(n, pa.float64())
    # text under a format with literals around "@"
    styled_text = np.flatnonzero(pc.and_(text, pc.and_(pc.match_substring(codes, "@"),
                                                       pc.not_equal(codes, "@"))).to_numpy(
        zero_copy_only=False))
    if len(styled_text):
        code_list = codes.to_pylist()
        shown = values.take(pa.array(styled_text)).to_pylist()
        display = scatter(display, styled_text,
                          [format_text(v, code_list[i]) for v, i in zip(shown, styled_text.tolist())])
    if len(numeric):
        raw_numbers = values.take(pa.array(numeric))
        try:
            parsed = pc.cast(raw_numbers, pa.float64()).to_numpy(zero_copy_only=False)
            parsed_ok = np.ones(len(numeric), dtype=bool)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            floats = [_to_float(v) for v in raw_numbers.to_pylist()]
            parsed_ok = np.array([f is not None for f in floats], dtype=bool)
            parsed = np.array([np.nan if f is None else f for f in floats])
        bad = numeric[~parsed_ok]  # text in a number cell: an error literal or plain text
        if len(bad):
            words = values.take(pa.array(bad)).to_pylist()
            vtype = scatter(vtype, bad, ["error" if w.strip() in _ERROR_VALUES else "string"
                                         for w in words])
        finite = parsed_ok & np.isfinite(parsed)
        nonfinite = numeric[parsed_ok & ~np.isfinite(parsed)]
        vtype = scatter(vtype, nonfinite, ["error"] * len(nonfinite))
        display = scatter(display, nonfinite, ["#NUM!"] * len(nonfinite))
        good, numbers = numeric[finite], parsed[finite]
        number = scatter(number, good, numbers)
        good_dates = is_date[good]
        kinds = good_dates.copy()  # shown as a date (else as a number)
        display = scatter(display, good, _format_numbers(numbers, codes.take(pa.array(good)),
                                                         date1904, memo))
        dated = good[good_dates]
        if len(dated):
            isos = _iso_dates(numbers[good_dates], date1904)
            iso = scatter(iso, dated, isos)
            kinds[np.flatnonzero(good_dates)[isos.is_null().to_numpy(zero_copy_only=False)]] = False
        vtype = scatter(vtype, good, pc.if_else(pa.array(kinds), "date", "number"))
    return {"value_type": vtype, "raw_value": raw, "number_value": number, "iso_value": iso,
            "value_status": status, "display_text": display}


#: The characters Python's ``str.strip()`` removes (those for which ``str.isspace()`` is true:
#: Unicode White_Space plus the separators U+001C..U+001F), for column-wise stripping.
PY_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
                 "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def stripped_text(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``texts`` stripped as ``str.strip()`` strips them, nulls as ``""`` (one Arrow kernel)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    return pc.utf8_trim(pc.fill_null(texts, ""), characters=PY_WHITESPACE)


def a1_refs(rows: pa.Array, cols: pa.Array) -> pa.Array:
    """A1 references (``C2``...) for arrays of 1-based rows and columns, built column-wise."""
    if len(rows) == 0:
        return pa.array([], pa.string())
    top = pc.max(cols).as_py()
    letters = pa.array([""] + [column_letter(c) for c in range(1, top + 1)], pa.string())
    return pc.binary_join_element_wise(letters.take(cols), pc.cast(rows, pa.string()), "")


def normalize_sheet(sheet: ParsedSheet, workbook: WorkbookStyles,
                    cf_ranges: list[str] | None = None, budget: Budget | None = None,
                    computed: SheetComputed | None = None) -> StyledGrid:
    """Build the :class:`StyledGrid` of one parsed sheet.

    Merged ranges are propagated: every covered cell gets the top-left cell's value, display text
    and style, with ``merged_from`` set to the top-left reference; a merged range larger than
    :data:`MAX_UNCLIPPED_MERGE` cells is clipped to the area of the sheet's cells, and at most
    :data:`MAX_MERGED_AREA` cells are filled. Work is proportional to the number of cells
    plus the merged area; display text is memoised per (number format, value) in
    ``workbook.cache``, for all the sheets of the workbook. ``cf_affected`` marks cells inside
    a conditional-formatting range (``cf_ranges``, default: the sheet's own,
    :attr:`ParsedSheet.cf_ranges`). ``budget`` (the workbook's, shared by its sheets) counts
    the grid's cells and the bytes of their display text, the copies a merge fills included,
    before those are made. ``computed``: values computed for the sheet's formulas that have no
    cached value (:func:`~extraction_assets.core.formula.evaluate.compute_uncached`); those
    cells show the value, with ``value_status`` ``computed`` and their formula kept.

    Raises:
        LimitExceededError: the grid would pass ``budget``'s limits (``max_cells``,
            ``max_text_bytes``).
    """
    info = sheet.info
    grid = StyledGrid(info.index, info.name, info.visibility, info.kind,
                      info.declared_dimension, list(sheet.merged_ranges),
                      sorted(set(sheet.hidden_rows)), sorted(set(sheet.hidden_columns)),
                      sheet.frozen_pane)
    cells = sheet.cells
    if cells.num_rows == 0:
        return grid
    if computed is not None and len(computed.positions):
        cells = _with_computed(cells, computed)
    styles = workbook.cache.get("styles")
    if styles is None:
        styles = workbook.cache["styles"] = _style_arrays(workbook)
    memo = workbook.cache.setdefault("display", {})
    anchors = np.asarray([_anchor_key(ref) for ref in sheet.merged_ranges], dtype=np.int64)
    table = pa.concat_tables(in_threads([
        partial(_grid_slice, cells.slice(offset, _SLICE_CELLS), styles, workbook.date1904, memo,
                anchors)
        for offset in range(0, cells.num_rows, _SLICE_CELLS)
    ]))
    budget = budget or Budget(Limits())
    budget.add(table.num_rows, text_bytes(table.column("display_text")))
    table = _apply_merges(table, sheet.merged_ranges, budget)
    table = _flag_hidden(table, grid.hidden_rows, grid.hidden_columns)
    table = _flag_conditional(table, sheet.cf_ranges if cf_ranges is None else cf_ranges)
    grid.table = _in_order(table)
    return grid


#: Most places :func:`_in_order` inserts cells at by slicing instead of reordering the table.
_MAX_INSERTS = 64


def _in_order(table: pa.Table) -> pa.Table:
    """``table`` sorted by (row, col). A sorted run followed by a few cells to insert (the copies
    of merged cells, appended by :func:`_apply_merges`) is interleaved by zero-copy slices of
    the run when they go to at most :data:`_MAX_INSERTS` places; otherwise one ``take``."""
    keys = cell_keys(table.column("row").to_numpy(), table.column("col").to_numpy())
    unsorted = np.flatnonzero(keys[1:] <= keys[:-1])
    if not len(unsorted):
        return table
    head = int(unsorted[0]) + 1
    order = np.argsort(keys[head:], kind="stable")
    at = np.searchsorted(keys[:head], keys[head:][order])
    places = np.unique(at)
    if len(places) > _MAX_INSERTS or not np.all(np.diff(keys[head:][order]) > 0):
        return table.take(pa.array(np.argsort(keys, kind="stable")))
    tail = table.slice(head).take(pa.array(order))
    ends = np.searchsorted(at, places, side="right")
    pieces, start, done = [], 0, 0
    for place, end in zip(places.tolist(), ends.tolist()):
        pieces += [table.slice(start, place - start), tail.slice(done, end - done)]
        start, done = place, end
    pieces.append(table.slice(start, head - start))
    return pa.concat_tables(pieces)


#: Cells normalized at a time (bounds the intermediate arrays of a large sheet).
_SLICE_CELLS = 1 << 18


def _anchor_key(ref: str) -> int:
    r1, c1, _, _ = parse_range(ref)
    return r1 * (MAX_COL + 1) + c1


def _with_computed(cells: pa.Table, computed: SheetComputed) -> pa.Table:
    """``cells`` with the computed values and types in place and a ``computed`` flag column."""
    flag = np.zeros(cells.num_rows, dtype=bool)
    flag[computed.positions] = True
    for name, values in (("value", computed.values), ("data_type", computed.data_types)):
        cells = cells.set_column(cells.schema.get_field_index(name), name, scatter(
            cells.column(name).combine_chunks(), computed.positions, values))
    return cells.append_column("computed", pa.array(flag))


def _grid_slice(cells: pa.Table, styles: dict[str, pa.Array], date1904: bool, memo: dict,
                anchors: np.ndarray) -> pa.Table:
    """StyledGrid rows of a slice of parsed cells; cells that show nothing are dropped unless
    they anchor a merged range."""
    style_index = cells.column("style_index").combine_chunks()
    valid = pc.and_(pc.greater_equal(style_index, 0), pc.less(style_index, len(styles["bold"])))
    style_index = pc.if_else(valid, style_index, 0)
    attrs = {name: arr.take(style_index) for name, arr in styles.items()}
    typed = _typed_columns(cells, attrs["number_format"],
                           attrs["is_date"].to_numpy(zero_copy_only=False), date1904, memo)
    rows = cells.column("row").combine_chunks()
    cols = cells.column("col").combine_chunks()
    n = cells.num_rows
    table = pa.table({
        "row": rows, "col": cols, "ref": a1_refs(rows, cols),
        "value_type": typed["value_type"], "raw_value": typed["raw_value"],
        "number_value": typed["number_value"], "iso_value": typed["iso_value"],
        "formula": cells.column("formula"), "value_status": typed["value_status"],
        "number_format": attrs["number_format"], "display_text": typed["display_text"],
        "bold": attrs["bold"], "italic": attrs["italic"], "font_size": attrs["font_size"],
        "font_rgb": attrs["font_rgb"], "fill_rgb": attrs["fill_rgb"],
        "has_border": attrs["has_border"], "indent": attrs["indent"],
        "merged_from": pa.nulls(n, pa.string()), "merge_range": pa.nulls(n, pa.string()),
        "cf_affected": pa.array(np.zeros(n, dtype=bool)),
        "hidden": pa.array(np.zeros(n, dtype=bool)),
    }, schema=GRID_SCHEMA)
    shows = pc.or_(pc.not_equal(typed["value_type"], "empty"),
                   pc.not_equal(typed["value_status"], "ok")).to_numpy(zero_copy_only=False)
    if len(anchors):
        shows = shows | np.isin(cell_keys(rows.to_numpy(), cols.to_numpy()), anchors)
    return table if shows.all() else table.filter(pa.array(shows))


def _apply_merges(table: pa.Table, merged_ranges: list[str], budget: Budget) -> pa.Table:
    """Mark merge anchors with ``merge_range`` and add the covered cells, each a copy of its
    anchor with ``merged_from`` set (counted in ``budget`` before they are made); parsed cells
    inside a merge (other than the anchor) are replaced, as Excel shows only the anchor's value
    there."""
    if not merged_ranges or table.num_rows == 0:
        return table
    rows = table.column("row").to_numpy()
    cols = table.column("col").to_numpy()
    hi_r, hi_c = int(rows.max()), int(cols.max())
    anchors, ranges, covered, covered_anchor = [], [], [], []
    area = 0
    for ref in merged_ranges:
        r1, c1, r2, c2 = parse_range(ref)
        if r1 > hi_r or c1 > hi_c:
            continue  # nothing can be shown there
        if (r2 - r1 + 1) * (c2 - c1 + 1) > MAX_UNCLIPPED_MERGE:
            r2, c2 = min(r2, hi_r), min(c2, hi_c)  # clip to the extent of the cells
        area += (r2 - r1 + 1) * (c2 - c1 + 1)
        if area > MAX_MERGED_AREA:
            break
        j = len(anchors)
        anchors.append(r1 * (MAX_COL + 1) + c1)
        ranges.append(ref)
        for r in range(r1, r2 + 1):
            for c in range(c1 if r > r1 else c1 + 1, c2 + 1):
                covered.append(r * (MAX_COL + 1) + c)
                covered_anchor.append(j)
    if not anchors:
        return table
    covered_keys = np.asarray(covered, dtype=np.int64)
    hidden_by_merge = np.isin(cell_keys(rows, cols), covered_keys)
    if hidden_by_merge.any():
        table = table.filter(pa.array(~hidden_by_merge))
    keys = cell_keys(table.column("row").to_numpy(), table.column("col").to_numpy())
    order = np.argsort(keys, kind="stable")
    anchor_keys = np.asarray(anchors, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys[order], anchor_keys), len(keys) - 1)
    anchor_row = order[pos]
    present = keys[anchor_row] == anchor_keys
    anchored = np.flatnonzero(present)
    order_of_rows = np.argsort(anchor_row[anchored], kind="stable")
    table = table.set_column(table.schema.get_field_index("merge_range"), "merge_range", scatter(
        table.column("merge_range").combine_chunks(), anchor_row[anchored][order_of_rows],
        [ranges[j] for j in anchored[order_of_rows].tolist()]))
    which = np.asarray(covered_anchor, dtype=np.int64)
    keep = present[which]
    if not keep.any():
        return table
    covered_keys, which = covered_keys[keep], which[keep]
    shown = pc.binary_length(table.column("display_text").combine_chunks()).to_numpy(
        zero_copy_only=False)
    budget.add(len(which), int(shown[anchor_row[which]].sum()))
    copies = table.take(pa.array(anchor_row[which]))
    new_rows = pa.array((covered_keys // (MAX_COL + 1)).astype(np.int32))
    new_cols = pa.array((covered_keys % (MAX_COL + 1)).astype(np.int32))
    replaced = {
        "row": new_rows, "col": new_cols, "ref": a1_refs(new_rows, new_cols),
        "merged_from": copies.column("ref"),
        "merge_range": pa.array([ranges[j] for j in which], pa.string()),
        "formula": pa.nulls(copies.num_rows, pa.string()),
    }
    for name, values in replaced.items():
        copies = copies.set_column(copies.schema.get_field_index(name), name, values)
    shows_nothing = pc.and_(pc.equal(copies.column("value_type"), "empty"),
                            pc.equal(copies.column("value_status"), "ok"))
    return pa.concat_tables([table, copies.filter(pc.invert(shows_nothing))])


def _flag_hidden(table: pa.Table, hidden_rows: list[int], hidden_columns: list[int]) -> pa.Table:
    if not (hidden_rows or hidden_columns) or table.num_rows == 0:
        return table
    hidden = np.isin(table.column("row").to_numpy(), hidden_rows) | np.isin(
        table.column("col").to_numpy(), hidden_columns)
    return table.set_column(table.schema.get_field_index("hidden"), "hidden", pa.array(hidden))


def _flag_conditional(table: pa.Table, ranges: list[str]) -> pa.Table:
    """Set ``cf_affected`` on cells inside any conditional-formatting range."""
    if not ranges or table.num_rows == 0:
        return table
    rows = table.column("row").to_numpy()
    cols = table.column("col").to_numpy()
    inside = np.zeros(len(rows), dtype=bool)
    for ref in ranges:
        try:
            r1, c1, r2, c2 = parse_range(ref)
        except ValueError:
            continue
        inside |= (rows >= r1) & (rows <= r2) & (cols >= c1) & (cols <= c2)
    return table.set_column(table.schema.get_field_index("cf_affected"), "cf_affected",
                            pa.array(inside))
