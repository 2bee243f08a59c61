"""The trust features on the stages' Arrow tables: redaction, colour legends and tags, the dual
read and the header detector seam. :mod:`.registry` calls these around the stages of
:mod:`.stages`, so each stage function stays as it is.

* ``parsed_sheets``: :func:`redact_parsed` (unless the policy keeps raw values) and
  :func:`review_items` (the second read of the bytes and the doubtful OCR words, table
  ``review_items``).
* ``normalized_grids``: :func:`redact_cells` on the StyledGrid's ``cells`` and
  :func:`colour_legends` (table ``colour_legends``).
* ``segmented_blocks``: :func:`refine_blocks` when a header detector other than the rules
  is configured.
* ``rendered_chunks``: :func:`prepare_render` (column rules, the per-block counts of
  redacted cells and the colour tags) on the cells every record, rendering and chunk is
  built from.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import parse_range
from extraction_assets.core.formats import OOXML_FORMATS
from extraction_assets.core.grid import cell_keys
from extraction_assets.core.model import Issue
from extraction_assets.core.normalize import resolve_color
from extraction_assets.core.segment.headings import detect_heading_levels
from extraction_assets.core.trust.colour import (
    SWATCH_TEXT,
    TAG_CLOSE,
    TAG_OPEN,
    LegendEntry,
    SheetColours,
    colour_clusters,
    find_legends,
    in_ranges,
    key_of,
)
from extraction_assets.core.trust.dual_read import compare_sheet, second_read
from extraction_assets.core.trust.headers import HeaderDetector, refine_headers
from extraction_assets.core.trust.redact import (
    MARKER_RE,
    RedactionPolicy,
    marker_counts,
    redact_array,
    redact_with,
)
from extraction_assets.pipeline.codecs import (
    block_tables,
    blocks_from_tables,
    grids_from_tables,
    table,
)

#: Most cells a review table lists one by one (the rest are counted in one issue).
MAX_REVIEW_ITEMS = 10_000
#: Priority of a doubtful OCR word in ``review_items``: after the dual read's conflicts (1)
#: and one-sided values (2).
OCR_PRIORITY = 3


def _set(t: pa.Table, name: str, values) -> pa.Table:
    return t.set_column(t.schema.get_field_index(name), name, values)


def _mask(n: int, positions: np.ndarray) -> pa.Array:
    mask = np.zeros(n, bool)
    mask[positions] = True
    return pa.array(mask)


# -- redaction --------------------------------------------------------------------------------
def redact_parsed(parsed_cells: pa.Table, rich_text: pa.Table, policy: RedactionPolicy | None
                  ) -> tuple[pa.Table, pa.Table]:
    """``parsed_cells`` and ``rich_text`` with the built-in rules applied to every value,
    formula and shared string (a redacted value becomes text, ``data_type`` ``str``), unless
    the policy keeps raw values (``keep_raw_values``) or has no built-in rule."""
    if policy is None or not policy.value_rules or policy.keep_raw_values:
        return parsed_cells, rich_text
    rules = policy.value_rules
    values, changed = redact_array(parsed_cells.column("value"), rules)
    if len(changed):
        parsed_cells = _set(parsed_cells, "value", values)
        parsed_cells = _set(parsed_cells, "data_type", pc.if_else(
            _mask(parsed_cells.num_rows, changed), "str",
            parsed_cells.column("data_type").combine_chunks()))
    formulas, changed = redact_array(parsed_cells.column("formula"), rules)
    if len(changed):
        parsed_cells = _set(parsed_cells, "formula", formulas)
    texts, changed = redact_array(rich_text.column("text"), rules)
    if len(changed):
        rich_text = _set(_set(rich_text, "text", texts), "runs", pc.if_else(
            _mask(rich_text.num_rows, changed), "[]", rich_text.column("runs").combine_chunks()))
    return parsed_cells, rich_text


def redact_cells(cells: pa.Table, policy: RedactionPolicy | None) -> pa.Table:
    """StyledGrid ``cells`` with the built-in rules applied to display text, raw value and
    formula; a redacted number or date becomes text (its number and ISO value dropped)."""
    if policy is None or not policy.value_rules or not cells.num_rows:
        return cells
    rules = policy.value_rules
    display, shown = redact_array(cells.column("display_text"), rules)
    _, held = redact_array(cells.column("raw_value"), rules)
    formula, written = redact_array(cells.column("formula"), rules)
    if len(written):
        cells = _set(cells, "formula", formula)
    changed = np.union1d(shown, held)
    if not len(changed):
        return cells
    return _shown_as_text(cells, _mask(cells.num_rows, changed), display)


def redact_blocks(blocks: pa.Table, policy: RedactionPolicy | None) -> pa.Table:
    """``blocks`` with the built-in rules applied to each block's ``text`` and ``title``: the
    text of a block that is not made of the sheet's cells (a document's paragraph or list, a
    chart's series, a picture's alt text) reaches the chunks from there, not from ``cells``."""
    if policy is None or not policy.value_rules or not blocks.num_rows:
        return blocks
    for name in ("text", "title"):
        values, changed = redact_array(blocks.column(name), policy.value_rules)
        if len(changed):
            blocks = _set(blocks, name, values)
    return blocks


def _shown_as_text(cells: pa.Table, mask: pa.Array, display: pa.Array) -> pa.Table:
    """``cells`` showing ``display``, and in the rows of ``mask`` (redacted cells) holding it
    as their text value: raw value the display text, type ``string``, no number or ISO
    value."""
    cells = _set(cells, "display_text", display)
    cells = _set(cells, "raw_value", pc.if_else(mask, display,
                                                cells.column("raw_value").combine_chunks()))
    cells = _set(cells, "value_type", pc.if_else(
        mask, "string", cells.column("value_type").combine_chunks()))
    for name in ("number_value", "iso_value"):
        column = cells.column(name).combine_chunks()
        cells = _set(cells, name, pc.if_else(mask, pa.scalar(None, column.type), column))
    return cells


def _column_rule_cells(cells: pa.Table, blocks: pa.Table, block_columns: pa.Table,
                       policy: RedactionPolicy) -> pa.Table:
    """Apply the policy's column rules to the data cells of the table columns whose header
    matches (a form's value cell by its label)."""
    if not policy.columns or not block_columns.num_rows:
        return cells
    spans = {b["block_id"]: b for b in blocks.select(
        ["block_id", "sheet_name", "min_row", "max_row", "header_row_count"]).to_pylist()}
    sheet = cells.column("sheet_name").cast(pa.string()).to_numpy(zero_copy_only=False)
    rows = cells.column("row").to_numpy()
    cols = cells.column("col").to_numpy()
    display = cells.column("display_text").to_pylist()
    changed: dict[int, str] = {}
    for column in block_columns.select(["block_id", "col", "header", "row"]).to_pylist():
        rules = [r for r in policy.columns if r.header_matches(column["header"])]
        if not rules:
            continue
        span = spans[column["block_id"]]
        if column["row"] is not None:  # a form's label/value pair
            r1 = r2 = column["row"]
        else:
            r1, r2 = span["min_row"] + span["header_row_count"], span["max_row"]
        for p in np.flatnonzero((sheet == span["sheet_name"]) & (cols == column["col"])
                                & (rows >= r1) & (rows <= r2)).tolist():
            text = changed.get(p, display[p] or "")
            for rule in rules:
                text = redact_with(text, rule)
            if text != (display[p] or ""):
                changed[p] = text
    if not changed:
        return cells
    positions = np.array(sorted(changed), np.int64)
    mask = _mask(cells.num_rows, positions)
    texts = pa.array([changed[p] for p in positions.tolist()], pa.string())
    display = pc.replace_with_mask(cells.column("display_text").combine_chunks(), mask, texts)
    return _shown_as_text(cells, mask, display)


def redaction_issues(cells: pa.Table, blocks: pa.Table) -> list[Issue]:
    """One ``info`` issue ``redacted_values`` per block holding redacted cells: how many
    cells, and how many matches of each rule (never a value)."""
    marked = cells.filter(pc.match_substring_regex(pc.fill_null(cells.column("display_text"), ""),
                                                   MARKER_RE.pattern))
    if not marked.num_rows:
        return []
    marked = marked.filter(pc.is_null(marked.column("merged_from")))  # copies: not cells
    sheets = np.array(marked.column("sheet_name").cast(pa.string()).to_pylist(), object)
    rows, cols = marked.column("row").to_numpy(), marked.column("col").to_numpy()
    texts = marked.column("display_text").to_pylist()
    issues = []
    for b in blocks.select(["sheet_name", "kind", "min_row", "min_col", "max_row", "max_col",
                            "a1_range"]).to_pylist():
        inside = np.flatnonzero((sheets == b["sheet_name"]) & (rows >= b["min_row"])
                                & (rows <= b["max_row"]) & (cols >= b["min_col"])
                                & (cols <= b["max_col"]))
        n = len(inside)
        if n:
            rules = sum((marker_counts(texts[i]) for i in inside.tolist()), Counter())
            detail = ", ".join(f"{rule}: {k}" for rule, k in sorted(rules.items()))
            issues.append(Issue("rendered_chunks", b["sheet_name"], b["a1_range"], "info",
                                "redacted_values",
                                f"{n} cell{'s' if n > 1 else ''} redacted in this {b['kind']} "
                                f"block ({detail})"))
    return issues


# -- colours ----------------------------------------------------------------------------------
def colour_legends(workbook_hash: str, parsed_cells: pa.Table, parsed_sheets: pa.Table,
                   styles: pa.Table, properties: pa.Table, cells: pa.Table) -> pa.Table:
    """The ``colour_legends`` table: every legend entry of the workbook's visible sheets
    (:func:`~extraction_assets.core.trust.colour.find_legends`; swatches are read from the
    parsed cells, as a swatch shows nothing and is in no StyledGrid), with the size of its
    colour's cluster in the workbook (non-empty cells outside / inside conditional-format
    ranges). A colour gets one entry, from the first legend listing it."""
    props = properties.to_pylist()[0]
    fills = pa.array([resolve_color(spec, props["theme_colors"] or [], props["indexed_colors"])
                      for spec in styles.sort_by("style_index").column("fill_color").to_pylist()],
                     pa.string())
    found = []
    for sheet in parsed_sheets.sort_by("sheet_index").to_pylist():
        if sheet["visibility"] == "visible" and len(fills):
            found += _sheet_legends(sheet, parsed_cells, fills, cells)
    rows, seen = [], set()
    clusters = colour_clusters(cells) if found else {}
    for entry in found:
        if entry.fill_rgb in seen:
            continue
        seen.add(entry.fill_rgb)
        n, cf = clusters.get(entry.fill_rgb, (0, 0))
        rows.append(dict(workbook_hash=workbook_hash, sheet_name=entry.sheet_name,
                         fill_rgb=entry.fill_rgb, key=entry.key, label=entry.label,
                         tag=entry.tag, swatch_ref=entry.swatch_ref,
                         label_ref=entry.label_ref, n_cells=n, n_cf_cells=cf))
    return table("colour_legends", rows)


def _sheet_legends(sheet: dict, parsed_cells: pa.Table, fills: pa.Array, cells: pa.Table
                   ) -> list[LegendEntry]:
    """The legend entries of one sheet (a ``parsed_sheets`` row): its swatch candidates are
    its filled parsed cells that show nothing (or a symbol) outside conditional-format
    ranges; only the texts around them are looked up in the StyledGrid ``cells``."""
    mine = parsed_cells.filter(pc.and_(
        pc.equal(parsed_cells.column("sheet_index"), sheet["sheet_index"]),
        pc.is_valid(parsed_cells.column("style_index"))))
    index = mine.column("style_index").to_numpy(zero_copy_only=False)
    fill = fills.take(pa.array(np.where((index >= 0) & (index < len(fills)), index, 0)))
    blank = pc.or_kleene(pc.is_null(mine.column("value")),
                   pc.match_substring_regex(mine.column("value"), SWATCH_TEXT))
    candidate = pc.fill_null(pc.and_(pc.is_valid(fill), blank), False)
    mine, fill = mine.filter(candidate), fill.filter(candidate)
    r = mine.column("row").to_numpy().astype(np.int64)
    c = mine.column("col").to_numpy().astype(np.int64)
    ranges = []
    for ref in sheet["cf_ranges"] or []:
        try:
            ranges.append(parse_range(ref))
        except ValueError:
            continue
    keep = ~in_ranges(r, c, ranges)
    if not keep.any():
        return []
    r, c = r[keep], c[keep]
    near = np.concatenate([cell_keys(r, c + 1), cell_keys(r - 1, c), cell_keys(r - 1, c + 1)])
    grid = cells.filter(pc.equal(cells.column("sheet_index"), sheet["sheet_index"]))
    grid = grid.filter(pa.array(np.isin(cell_keys(grid.column("row").to_numpy(),
                                                  grid.column("col").to_numpy()), near)))
    text_at = {key_of(gr, gc): t for gr, gc, t, hidden in zip(  # a hidden label is no legend
        grid.column("row").to_pylist(), grid.column("col").to_pylist(),
        grid.column("display_text").to_pylist(), grid.column("hidden").to_pylist())
        if t and not hidden}
    texts = [v or "" for v in mine.column("value").filter(pa.array(keep)).to_pylist()]
    return find_legends(SheetColours(sheet["sheet_name"], r, c,
                                     fill.filter(pa.array(keep)).to_pylist(), texts, text_at))


def tag_cells(cells: pa.Table, tags: Mapping[str, str]) -> pa.Table:
    """StyledGrid ``cells`` whose non-empty cells with a fill in ``tags`` (``RRGGBB -> tag``)
    and outside conditional-format ranges show their tag after their text: ``INV-7
    ⟦status: overdue⟧``. Typed values are left as they are."""
    if not tags or not cells.num_rows:
        return cells
    keys = sorted(tags)
    fill = cells.column("fill_rgb").combine_chunks()
    labels = pa.array([tags[k] for k in keys], pa.string()).take(
        pc.index_in(fill, value_set=pa.array(keys, pa.string())))
    tagged = pc.fill_null(pc.and_(pc.and_(
        pc.is_valid(labels), pc.invert(pc.fill_null(cells.column("cf_affected"), False))),
        pc.not_equal(pc.fill_null(cells.column("display_text"), ""), "")), False)
    if not pc.any(tagged).as_py():
        return cells
    display = cells.column("display_text").combine_chunks()
    shown = pc.if_else(tagged, pc.binary_join_element_wise(display, labels, TAG_OPEN), display)
    shown = pc.if_else(tagged, pc.binary_join_element_wise(shown, TAG_CLOSE, ""), shown)
    return _set(cells, "display_text", shown)


def draft_issues(drafts: list[dict]) -> list[Issue]:
    """One ``info`` issue ``colour_mapping_unconfirmed`` per draft mapping (rows of the
    ``colour_mappings`` registry): its colour tags no cell until a person confirms it."""
    return [Issue("rendered_chunks", d["sheet_name"], d["swatch_ref"], "info",
                  "colour_mapping_unconfirmed",
                  f"fill #{d['fill_rgb']} means {d['tag']!r} by the legend, but mapping "
                  f"{d['mapping_id']} (version {d['version']}) is a draft: no cell is tagged "
                  f"until it is confirmed (extraction-assets colours confirm {d['mapping_id']})")
            for d in drafts]


def prepare_render(cells: pa.Table, blocks: pa.Table, block_columns: pa.Table,
                   policy: RedactionPolicy | None, tags: Mapping[str, str] | None,
                   markup: dict[tuple[str, str], str]
                   ) -> tuple[pa.Table, dict[tuple[str, str], str], list[Issue]]:
    """The cells records, renderings and chunks are built from: the policy's column rules
    applied, the per-block ``redacted_values`` issues counted, then the colour ``tags``
    shown. Rich-text ``markup`` of a redacted cell is dropped (it would show the value)."""
    if policy is not None and policy.columns:
        cells = _column_rule_cells(cells, blocks, block_columns, policy)
    issues = redaction_issues(cells, blocks) if policy is not None and policy.active else []
    if issues and markup:
        marked = cells.filter(pc.match_substring_regex(
            pc.fill_null(cells.column("display_text"), ""), MARKER_RE.pattern))
        gone = set(zip(marked.column("sheet_name").to_pylist(), marked.column("ref").to_pylist()))
        markup = {k: v for k, v in markup.items() if k not in gone}
    return tag_cells(cells, tags or {}), markup, issues


# -- the review items: the dual read and doubtful OCR words ---------------------------------
def review_items(workbook_hash: str, data: bytes, file_format: str, parsed_cells: pa.Table,
                 parsed_sheets: pa.Table, sheet_objects: pa.Table, date1904: bool,
                 policy: RedactionPolicy | None, max_cells: int, damaged: bool = False
                 ) -> tuple[pa.Table, list[Issue]]:
    """The ``review_items`` table: the cells of the dual read (:func:`_dual_read`) and the
    words OCR read with a confidence under
    :data:`~extraction_assets.core.ocr.MIN_CONFIDENCE` (:func:`_doubtful_words`), at most
    :data:`MAX_REVIEW_ITEMS` (most urgent first; a ``warning`` ``review_items_capped`` says
    how many there were), values redacted by the policy's built-in rules. Ids are the sha256
    of the partition, sheet, cell, reason, values and box (16 hex digits), so a re-run keeps
    them."""
    items, issues = _dual_read(data, file_format, parsed_cells, parsed_sheets, date1904,
                               max_cells, damaged)
    items += _doubtful_words(sheet_objects)
    if len(items) > MAX_REVIEW_ITEMS:
        issues.append(Issue("parsed_sheets", None, None, "warning", "review_items_capped",
                            f"{len(items)} cells or words need review; the first "
                            f"{MAX_REVIEW_ITEMS} are in review_items"))
        items = sorted(items, key=lambda i: i["priority"])[:MAX_REVIEW_ITEMS]
    for item in items:
        first, second = item["first_value"], item["second_value"]
        if policy is not None and policy.value_rules:
            item["first_value"], item["second_value"] = (
                redact_array(pa.array([v], pa.string()), policy.value_rules)[0][0].as_py()
                for v in (first, second))
        key = "\x1f".join([workbook_hash, item["sheet_name"], item["ref"], item["reason"],
                           first or "", second or "", str(item.get("bbox") or "")])
        item.update(workbook_hash=workbook_hash,
                    item_id=hashlib.sha256(key.encode()).hexdigest()[:16])
    return table("review_items", items), issues


def _dual_read(data: bytes, file_format: str, parsed_cells: pa.Table, parsed_sheets: pa.Table,
               date1904: bool, max_cells: int, damaged: bool) -> tuple[list[dict], list[Issue]]:
    """Each worksheet's parsed cells compared with python-calamine's read of the same bytes
    (:func:`~extraction_assets.core.trust.dual_read.compare_sheet`); none when ``max_cells``
    is 0 (no dual read). Only OOXML workbooks
    (:data:`~extraction_assets.core.formats.OOXML_FORMATS`) are compared (other formats are
    read by calamine or LibreOffice already); a workbook over ``max_cells`` parsed cells, or
    one calamine cannot read, gets an ``info`` issue instead (not when our own read already
    reported the file ``damaged``: the error issue says it)."""
    if not max_cells or file_format not in OOXML_FORMATS:
        return [], []
    if parsed_cells.num_rows > max_cells:
        return [], [Issue("parsed_sheets", None, None, "info", "dual_read_skipped",
                          f"{parsed_cells.num_rows} cells, over the dual read's limit of "
                          f"{max_cells}: values not compared with a second read")]
    read = _sheets_read(parsed_sheets)
    area = _dense_area(parsed_cells, read.values())
    if area > DENSE_FACTOR * max_cells:
        return [], [Issue("parsed_sheets", None, None, "info", "dual_read_skipped",
                          f"the sheets span {area} cells from A1, over {DENSE_FACTOR} x the "
                          f"dual read's limit of {max_cells} (it reads them as dense "
                          "rectangles): values not compared with a second read")]
    try:
        theirs = second_read(data, read)
    except Exception as exc:  # noqa: BLE001 - calamine's own error types
        failed = Issue("parsed_sheets", None, None, "info", "dual_read_failed",
                       f"python-calamine cannot read the workbook: {exc}"[:300])
        return [], [] if damaged else [failed]
    items = []
    for sheet in parsed_sheets.to_pylist():
        if sheet["sheet_name"] not in read or sheet["sheet_name"] not in theirs:
            continue
        mine = parsed_cells.filter(pc.equal(parsed_cells.column("sheet_index"),
                                            sheet["sheet_index"]))
        items += [dict(sheet_name=i.sheet_name, row=i.row, col=i.col, ref=i.ref,
                       reason=i.reason, priority=i.priority, first_read="extraction-assets",
                       first_value=i.first_value, second_read="python-calamine",
                       second_value=i.second_value)
                  for i in compare_sheet(sheet["sheet_name"], mine, theirs[sheet["sheet_name"]],
                                         date1904)]
    return items, []


def _doubtful_words(sheet_objects: pa.Table) -> list[dict]:
    """One item (reason ``ocr_low_confidence``, priority :data:`OCR_PRIORITY`) per word of an
    OCR paragraph or picture (its object's ``ocr_doubtful`` details) below Tesseract's
    confidence threshold: the word as ``first_value``, read by ``ocr_reader``, its
    ``confidence`` and ``bbox`` (points on a PDF page, pixels of a picture), at the cell or
    anchor of its object."""
    items = []
    with_words = pc.fill_null(pc.match_substring(sheet_objects.column("details"),
                                                 '"ocr_doubtful": [['), False)
    for obj in sheet_objects.filter(with_words).to_pylist():  # most objects have none
        details = json.loads(obj["details"])
        try:
            row, col, _, _ = parse_range(obj["ref"] or "")
        except ValueError:
            row = col = None
        for text, confidence, *box in details.get("ocr_doubtful", []):
            items.append(dict(sheet_name=obj["sheet_name"], row=row, col=col, ref=obj["ref"],
                              reason="ocr_low_confidence", priority=OCR_PRIORITY,
                              first_read=details.get("ocr_reader"), first_value=text,
                              second_read=None, second_value=None,
                              confidence=float(confidence), bbox=box))
    return items


#: How many times the dual read's ``max_cells`` the dense rectangles calamine makes of the
#: sheets read (rows x columns from A1, :func:`_dense_area`) may span: a sheet of two cells,
#: A1 and XFD1048576, is 17 billion cells to it.
DENSE_FACTOR = 10


def _sheets_read(parsed_sheets: pa.Table) -> dict[str, int]:
    """The worksheets the dual read compares, by name -> sheet index: the first sheet of each
    worksheet part (a sheet sharing an earlier sheet's part has no cells of its own, see
    ``shared_sheet_part``: calamine would read the part again for it)."""
    read: dict[str, int] = {}
    parts: set[str] = set()
    for sheet in parsed_sheets.select(["sheet_index", "sheet_name", "kind", "part"]).to_pylist():
        part = (sheet["part"] or "").lower()
        if sheet["kind"] == "worksheet" and part not in parts:
            parts.add(part)
            read[sheet["sheet_name"]] = sheet["sheet_index"]
    return read


def _dense_area(parsed_cells: pa.Table, sheet_indexes) -> int:
    """Cells of the rectangles from A1 to each sheet's last row and column (of ``parsed_cells``),
    summed over ``sheet_indexes``: what calamine's dense read of them holds."""
    if not parsed_cells.num_rows:
        return 0
    wanted = pc.is_in(parsed_cells.column("sheet_index"), pa.array(list(sheet_indexes), pa.int32()))
    by_sheet = parsed_cells.filter(wanted).group_by("sheet_index").aggregate(
        [("row", "max"), ("col", "max")])
    rows = by_sheet.column("row_max").to_numpy().astype(np.int64)
    cols = by_sheet.column("col_max").to_numpy().astype(np.int64)
    return int((rows * cols).sum())


# -- the header detector seam -----------------------------------------------------------------
def refine_blocks(workbook_hash: str, cells: pa.Table, sheets: pa.Table,
                  tables: dict[str, pa.Table], detector: HeaderDetector
                  ) -> tuple[dict[str, pa.Table], list[Issue]]:
    """``blocks`` and ``block_columns`` of ``tables`` with the ambiguous tables' header rows
    decided by ``detector`` (see :func:`~extraction_assets.core.trust.headers.refine_headers`);
    a failed consultation is a ``warning`` issue ``header_detector_failed``."""
    blocks = blocks_from_tables(tables["blocks"], tables["block_columns"])
    grids = [g for g in grids_from_tables(cells, sheets) if g.visibility == "visible"]
    headings = detect_heading_levels(grids)
    issues = []
    for grid in grids:
        mine = [b for b in blocks if b.sheet_index == grid.sheet_index]
        for message in refine_headers(grid, mine, detector, headings):
            issues.append(Issue("segmented_blocks", grid.sheet_name, None, "warning",
                                "header_detector_failed", message))
    return block_tables(workbook_hash, blocks), issues
