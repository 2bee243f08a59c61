"""Build the StyledGrid: what each cell shows, with resolved colours and merges.

The StyledGrid is the intermediate representation every later stage reads. One row per
non-empty cell, plus one per cell covered by a merged range (which takes the merge's top-left
value and records it in ``merged_from``). Rows and columns are 1-based.

Colour resolution follows ECMA-376 Part 1: ``rgb`` is ``AARRGGBB`` (§18.8.19), ``indexed``
uses the legacy palette (§18.8.27) or the workbook's own ``indexedColors``, ``theme`` indexes
the theme's colour scheme with slots 0-3 swapped to lt1, dk1, lt2, dk2 as Excel does, and
``tint`` changes the HLS luminance (``L*(1+t)`` for t<0, ``L*(1-t)+t`` for t>0, §18.3.1.15).
"""

from __future__ import annotations

import colorsys
import datetime as dt
from dataclasses import dataclass, field

from .a1 import cell_ref, parse_range, range_ref
from .numfmt import format_general, format_text, format_value, is_date_format, serial_to_datetime
from .ooxml import CellStyle, ParsedSheet, WorkbookStyles

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


def resolve_color(spec: str | None, theme: list[str], indexed: list[str] | None) -> str | None:
    """Resolve a colour as written by the parser (``rgb:``, ``theme:N;tint:T``, ``indexed:N``)
    to ``RRGGBB``; ``None`` when absent, automatic or unresolvable."""
    if not spec:
        return None
    kind, _, rest = spec.partition(":")
    if kind == "rgb":
        return rest[-6:].upper() if len(rest) >= 6 else None
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


GRID_COLUMNS = (
    "row", "col", "ref", "value_type", "raw_value", "number_value", "iso_value", "formula",
    "value_status", "number_format", "display_text", "bold", "italic", "font_size", "font_rgb",
    "fill_rgb", "has_border", "merged_from", "merge_range", "cf_affected", "hidden",
)


@dataclass
class StyledGrid:
    """The StyledGrid of one sheet: columnar cell data (see :data:`GRID_COLUMNS`).

    ``value_type`` is ``string``, ``number``, ``date``, ``bool``, ``error`` or ``empty`` (a
    formula with no cached value); ``value_status`` is ``ok`` or ``uncached_formula``;
    ``iso_value`` holds the ISO date/time of a date-formatted number; ``merged_from`` is the
    top-left reference of the merged range that covers the cell (``None`` for the top-left cell
    itself, which carries ``merge_range``); ``hidden`` is true when the cell's row or column is
    hidden. ``hidden_rows`` / ``hidden_columns`` are 1-based indices.
    """

    sheet_index: int
    sheet_name: str
    visibility: str
    kind: str
    declared_dimension: str | None
    merged_ranges: list[str]
    hidden_rows: list[int] = field(default_factory=list)
    hidden_columns: list[int] = field(default_factory=list)
    frozen_pane: str | None = None
    columns: dict[str, list] = field(default_factory=lambda: {c: [] for c in GRID_COLUMNS})

    def __len__(self) -> int:
        return len(self.columns["row"])

    @property
    def used_range(self) -> str | None:
        """A1 range spanning every cell of the grid, computed from the cells themselves."""
        rows, cols = self.columns["row"], self.columns["col"]
        if not rows:
            return None
        return range_ref(min(rows), min(cols), max(rows), max(cols))

    def records(self) -> list[dict]:
        """The cells as a list of dicts (one per cell), for tests and small sheets."""
        names = list(self.columns)
        return [dict(zip(names, values)) for values in zip(*self.columns.values())]


def _cell_values(t: str, value: str | None, formula: str | None, style: CellStyle,
                 date1904: bool) -> tuple[str, str | None, float | None, str | None, str, str]:
    """(value_type, raw_value, number_value, iso_value, value_status, display_text) of a cell."""
    code = style.number_format
    if value is None:
        if formula is not None:
            return "empty", None, None, None, "uncached_formula", "=" + formula
        return "empty", None, None, None, "ok", ""
    if t in ("s", "str", "inlineStr"):
        return "string", value, None, None, "ok", format_text(value, code)
    if t == "b":
        truth = value.strip() in ("1", "true")
        return "bool", "TRUE" if truth else "FALSE", None, None, "ok", "TRUE" if truth else "FALSE"
    if t == "e":
        return "error", value, None, None, "ok", value
    if t == "d":
        return "date", value, None, value, "ok", value
    try:
        number = float(value)
    except ValueError:
        if value.strip() in _ERROR_VALUES:
            return "error", value, None, None, "ok", value
        return "string", value, None, None, "ok", value
    if is_date_format(code):
        try:
            iso = typed_date(number, date1904)
        except ValueError:
            return "number", value, number, None, "ok", "#######"
        return "date", value, number, iso, "ok", format_value(number, code, date1904)
    display = format_value(number, code, date1904) if code != "General" else format_general(number)
    return "number", value, number, None, "ok", display


def normalize_sheet(sheet: ParsedSheet, workbook: WorkbookStyles) -> StyledGrid:
    """Build the :class:`StyledGrid` of one parsed sheet.

    Merged ranges are propagated: every covered cell gets the top-left cell's value, display text
    and style, with ``merged_from`` set to the top-left reference. The work is proportional to the
    number of cells plus the area of the merged ranges.
    """
    info = sheet.info
    grid = StyledGrid(info.index, info.name, info.visibility, info.kind,
                      info.declared_dimension, list(sheet.merged_ranges),
                      sorted(set(sheet.hidden_rows)), sorted(set(sheet.hidden_columns)),
                      sheet.frozen_pane)
    hidden_rows, hidden_cols = set(grid.hidden_rows), set(grid.hidden_columns)
    styles = workbook.styles
    theme, indexed = workbook.theme_colors, workbook.indexed_colors
    color_cache: dict[str | None, str | None] = {}

    def color(spec: str | None) -> str | None:
        if spec not in color_cache:
            color_cache[spec] = resolve_color(spec, theme, indexed)
        return color_cache[spec]

    anchors: dict[tuple[int, int], str] = {}
    covered: dict[tuple[int, int], tuple[int, int]] = {}
    for ref in sheet.merged_ranges:
        r1, c1, r2, c2 = parse_range(ref)
        anchors[(r1, c1)] = ref
        for r in range(r1, r2 + 1):
            for c in range(c1, c2 + 1):
                if (r, c) != (r1, c1):
                    covered[(r, c)] = (r1, c1)

    out = grid.columns
    anchor_rows: dict[tuple[int, int], dict] = {}
    for i in range(len(sheet)):
        r, c = sheet.row[i], sheet.col[i]
        if (r, c) in covered:
            continue  # a covered cell shows its merge's value, filled in below
        idx = sheet.style_index[i]
        style = styles[idx] if 0 <= idx < len(styles) else styles[0]
        vtype, raw, number, iso, status, display = _cell_values(
            sheet.data_type[i], sheet.value[i], sheet.formula[i], style, workbook.date1904)
        merge = anchors.get((r, c))
        if vtype == "empty" and status == "ok" and merge is None:
            continue
        row = dict(
            row=r, col=c, ref=cell_ref(r, c), value_type=vtype, raw_value=raw,
            number_value=number, iso_value=iso, formula=sheet.formula[i], value_status=status,
            number_format=style.number_format, display_text=display, bold=style.bold,
            italic=style.italic, font_size=style.font_size, font_rgb=color(style.font_color),
            fill_rgb=color(style.fill_color), has_border=style.has_border, merged_from=None,
            merge_range=merge, cf_affected=False, hidden=r in hidden_rows or c in hidden_cols,
        )
        if merge is not None:
            anchor_rows[(r, c)] = row
        for name in GRID_COLUMNS:
            out[name].append(row[name])
    for (r, c), (ar, ac) in covered.items():
        anchor = anchor_rows.get((ar, ac))
        if anchor is None or anchor["value_type"] == "empty" and anchor["value_status"] == "ok":
            continue
        row = dict(anchor, row=r, col=c, ref=cell_ref(r, c), merged_from=anchor["ref"],
                   merge_range=None, formula=None, hidden=r in hidden_rows or c in hidden_cols)
        for name in GRID_COLUMNS:
            out[name].append(row[name])
    _sort_grid(grid)
    return grid


def _sort_grid(grid: StyledGrid) -> None:
    """Order the grid's cells by (row, col) so outputs are deterministic."""
    cols = grid.columns
    order = sorted(range(len(cols["row"])), key=lambda i: (cols["row"][i], cols["col"][i]))
    for name in GRID_COLUMNS:
        values = cols[name]
        cols[name] = [values[i] for i in order]
