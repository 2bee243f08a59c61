"""Objects of a SpreadsheetML package that are not cell values (ECMA-376 Part 1).

A worksheet carries, next to its ``<sheetData>``, objects a reader of the cells alone never sees:

* **comments** – legacy notes of the comments part (§18.7) and Office 2019+ *threaded comments*
  with their replies and the workbook's person list ([MS-XLSX] §2.1.7.1/§2.1.7.2, the
  ``threadedComments`` and ``persons`` parts);
* **hyperlinks** (§18.3.1.47, ``<hyperlinks>``), external targets coming from the sheet's
  relationships (ECMA-376 Part 2, §9.3) – recorded, never followed;
* **data validations** (§18.3.1.32/§18.3.1.33) and **conditional formatting** (§18.3.1.18,
  ``cfRule`` §18.3.1.10), including the Office 2010 ``x14`` copies held in ``<extLst>``;
* **tables** (ListObjects, §18.5.1.2) referenced by ``<tableParts>`` (§18.3.1.95);
* **pivot tables** (§18.10.1.73 ``pivotTableDefinition``) related to the sheet: where Excel
  drew them and how their rows are laid out (header rows, row label columns, totals);
* **charts** (DrawingML charts, §21.2.2.27 ``chartSpace``) and **pictures** (§20.5.2.25
  ``pic``) placed by the sheet's drawing part (SpreadsheetML drawing, §20.5; anchors
  §20.5.2.33 ``twoCellAnchor``, §20.5.2.24 ``oneCellAnchor``, §20.5.2.1 ``absoluteAnchor``);
  Office 2016 ``chartEx`` charts (waterfall, treemap...) are read in a reduced form.

At workbook level: **defined names** (§18.2.5/§18.2.6) and **external links** (§18.2.9
``externalReference``, §18.14 ``externalLink``) – the target of an external link is recorded,
the external workbook is never opened and no URL is ever fetched.

Every object becomes one :class:`SheetObject`. Reading is best effort and never raises on bad
input: a missing part, a relationship id that does not exist, malformed XML, a part declaring a
DTD (:class:`~extraction_assets.core.errors.HostileContentError`) or a part beyond the package
limits skips that object and appends an :class:`~extraction_assets.core.ooxml.Issue` (stage
``parsed_sheets``) to the ``issues`` list given by the caller.

Kind-specific ``details`` keys (stable; every value is JSON-serialisable):

``comment``
    ``author`` (str|None), ``created`` (ISO time of a threaded comment, else None), ``replies``
    (list of ``{"author", "created", "text"}`` in document order), ``threaded`` (bool),
    ``resolved`` (bool for a threaded comment's ``done`` flag, else None). When a cell has both a
    legacy and a threaded comment only the threaded one is returned.
``hyperlink``
    ``target`` (external URL / path or internal part from the relationship, None when the link
    has no relationship), ``location`` (in-workbook location such as ``Sheet2!A1``; also taken
    from a ``#fragment`` relationship target), ``display``, ``tooltip``.
``data_validation``
    ``type``, ``operator`` (``between`` when omitted, None for ``list``/``custom``/``none``),
    ``formula1``, ``formula2``, ``allow_blank``, ``show_drop_down`` (as
    written: ``True`` means Excel *hides* the in-cell list), ``show_input_message``,
    ``show_error_message``, ``error_style``, ``error_title``, ``error``, ``prompt_title``,
    ``prompt``, ``source`` (``main`` or ``x14``).
``conditional_format``
    ``rules`` – list of ``{"type", "priority", "operator", "formulas", "dxf_id",
    "stop_if_true", "text", "extra"}`` (``extra`` holds ``timePeriod``, ``rank``, colour-scale /
    data-bar / icon-set thresholds...), ``pivot`` (bool), ``source`` (``main`` or ``x14``).
``table``
    ``display_name``, ``id``, ``header_row_count`` (default 1), ``totals_row_count`` (default 0),
    ``totals_row_shown`` (default True), ``columns`` (names in order), ``column_details``
    (``{"name", "totals_row_function", "totals_row_label", "calculated_formula"}``),
    ``table_type``, ``style``, ``has_autofilter``, ``part``.
``pivot_table``
    ``first_header_row``, ``first_data_row``, ``first_data_col`` (0-based offsets from the top-left
    cell of the ``location`` range, §18.10.1.49), ``row_page_count``, ``col_page_count``,
    ``row_fields`` and ``col_fields`` (counts; the data field ``-2`` counts among the column
    fields), ``data_fields`` (their names), ``row_grand_totals``, ``col_grand_totals`` (default
    True), ``row_items`` (one entry per row of the body from ``first_data_row``: the item type
    ``t`` of §18.10.1.44, ``data`` for an ordinary row, e.g. ``default`` for a subtotal and
    ``grand`` for the grand total), ``part``.
``chart``
    ``anchor``, ``anchor_to``, ``anchor_type``, ``frame_name``, ``alt_text``, ``chart_part``,
    ``chart_types`` (e.g. ``["bar"]``; ``barChart``/``bar3DChart`` -> ``bar``, ``lineChart`` ->
    ``line``, ``pieChart`` -> ``pie``, chartEx layouts such as ``waterfall``), ``title``,
    ``axis_titles``, ``series`` – list of ``{"name", "chart_type", "categories", "values",
    "name_ref", "categories_ref", "values_ref", "source"}`` where ``source`` is ``cache`` (the
    chart's own cache), ``cells`` (resolved from the referenced cells), ``literal`` or ``none``.
``picture``
    ``anchor``, ``anchor_to``, ``anchor_type``, ``alt_text`` (``descr``), ``title``, ``hidden``,
    ``media_part``, ``external_target`` (a linked, not embedded, picture: never fetched),
    ``content_type``, ``extension``, ``size_bytes``, ``sha256``, ``width_px``, ``height_px``
    (from PNG/JPEG/GIF/BMP headers), ``display_size_emu`` (``[cx, cy]`` or None).
``defined_name``
    ``refers_to``, ``local_sheet_id``, ``scope_sheet``, ``hidden``, ``builtin`` (``_xlnm.``
    names such as ``_xlnm.Print_Area``), ``comment``, ``target_sheet``, ``target_ref`` (when the
    name refers to one plain area).
``external_link``
    ``index`` (the ``[n]`` used in formulas), ``part``, ``target``, ``link_type``
    (``externalBook``, ``ddeLink`` or ``oleLink``), ``sheet_names``, ``dde_service``,
    ``dde_topic``, ``prog_id``.
"""

from __future__ import annotations

import hashlib
import math
import posixpath
import re
import struct
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from lxml import etree

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, cell_ref, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.container import PackageReader
from extraction_assets.core.errors import ExtractionError, HostileContentError, LimitExceededError
from extraction_assets.core.parts import Issue, parse_part, read_rels, read_shared_strings, rel_attr
from extraction_assets.core.worksheet import XML_OPTS, cell_children, local, rich_text

__all__ = [
    "SheetObject",
    "read_sheet_objects",
    "read_chartsheet_objects",
    "read_workbook_objects",
]

STAGE = "parsed_sheets"
#: Most points kept per chart series (a cache may declare any ``ptCount``).
MAX_POINTS = 100_000
#: Most cells resolved through the cell resolver for one chart.
MAX_RESOLVED_CELLS = 10_000
#: Points per series shown in a chart's text rendering.
MAX_RENDER_POINTS = 200
#: Bytes of an image kept to read its dimensions from the header.
_IMAGE_HEAD = 256 * 1024
_EMU_PER_PX = 9525

CellValue = Callable[[str, str], object]


@dataclass
class SheetObject:
    """One non-cell object of a workbook.

    Attributes:
        kind: ``comment``, ``hyperlink``, ``data_validation``, ``conditional_format``,
            ``table``, ``chart``, ``picture``, ``defined_name`` or ``external_link``.
        sheet_name: the sheet holding the object; ``None`` for workbook-level objects (a
            sheet-scoped defined name carries its scope sheet).
        ref: A1 cell or range: the cell of a comment/hyperlink, the ``sqref`` of a data
            validation or conditional format (may be a space-separated list), a table's range,
            the top-left ``from`` cell of a drawing anchor (``None`` for an absolute anchor).
        name: table name, chart title (or frame name), picture name, defined name, link target.
        text: readable text: comment (+ replies), hyperlink display/target, chart rendering
            (title and category/value pairs), picture alt text, defined name formula...
        details: JSON-serialisable kind-specific data; keys are listed in the module docstring.
    """

    kind: str
    sheet_name: str | None
    ref: str | None
    name: str | None
    text: str | None
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The object as a plain dict (JSON-serialisable)."""
        return asdict(self)


# --------------------------------------------------------------------------- plumbing


class _Ctx:
    """Reader, issue sink and sheet name shared by the helpers of one call."""

    def __init__(self, reader: PackageReader, sheet_name: str | None, issues: list | None):
        self.reader = reader
        self.sheet_name = sheet_name
        self.issues = issues if issues is not None else []

    def warn(self, code: str, message: str, ref: str | None = None,
             severity: str = "warning") -> None:
        self.issues.append(Issue(STAGE, self.sheet_name, ref, severity, code, message))

    def _failed(self, part: str, exc: BaseException, what: str) -> None:
        if isinstance(exc, HostileContentError):
            self.warn("hostile_content", f"{what} {part} refused: {exc.message}",
                      severity="error")
        elif isinstance(exc, LimitExceededError):
            self.warn("limit_exceeded", f"{what} {part} skipped: {exc.message}", severity="error")
        elif isinstance(exc, ExtractionError):
            self.warn("malformed_part", f"{what} {part} skipped: {exc.message}")
        else:
            self.warn("malformed_part", f"{what} {part} skipped: {type(exc).__name__}: {exc}")

    def load(self, part: str | None, what: str = "part"):
        """Parse an optional XML part; ``None`` (and an issue) when it cannot be read."""
        if not part:
            return None
        if part.startswith("external:"):
            self.warn("external_part", f"{what} points outside the package ({part[9:]}); "
                      "not read")
            return None
        if not self.reader.has(part):
            self.warn("missing_part", f"{what} {part} is missing from the package")
            return None
        try:
            return parse_part(self.reader, part)
        except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
            self._failed(part, exc, what)
            return None

    def rels(self, part: str | None) -> dict[str, tuple[str, str]]:
        """Relationships of ``part`` ({} and an issue when the rels part is unreadable)."""
        if not part:
            return {}
        try:
            return read_rels(self.reader, part)
        except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
            self._failed(part, exc, "relationships of")
            return {}

    def target(self, rels: dict, rid: str | None, expected: Iterable[str], what: str,
               ref: str | None = None) -> str | None:
        """Target part of relationship ``rid`` (of one of the ``expected`` types) or None."""
        if not rid:
            self.warn("bad_relationship", f"{what} has no relationship id", ref)
            return None
        rel = rels.get(rid)
        if rel is None:
            self.warn("bad_relationship", f"{what} refers to relationship {rid!r}, which does "
                      "not exist", ref)
            return None
        rtype, target = rel
        expected = tuple(expected)
        if expected and rtype not in expected:
            self.warn("bad_relationship", f"{what} relationship {rid!r} has type {rtype!r}, "
                      f"expected {'/'.join(expected)}", ref)
            return None
        return target


def _guard(ctx: _Ctx, what: str, fn: Callable[[], list], ref: str | None = None) -> list:
    """Run one reader step; an unexpected failure becomes an issue instead of an exception."""
    try:
        return fn()
    except (ExtractionError, etree.LxmlError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, OSError, struct.error, OverflowError, RecursionError) as exc:
        if isinstance(exc, (HostileContentError, LimitExceededError)):
            ctx._failed(what, exc, "object")
        else:
            ctx.warn("object_read_failed", f"{what}: {type(exc).__name__}: {exc}", ref)
        return []


def _children(el, name: str) -> list:
    return [c for c in el if isinstance(c.tag, str) and local(c.tag) == name]


def _child(el, name: str):
    if el is None:
        return None
    for c in el:
        if isinstance(c.tag, str) and local(c.tag) == name:
            return c
    return None


def _path(el, *names: str):
    for name in names:
        el = _child(el, name)
        if el is None:
            return None
    return el


def _bool(value: str | None, default: bool | None = None) -> bool | None:
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "on")


def _int(value: str | None, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        try:
            return int(float(value))
        except (ValueError, OverflowError):
            return default


def _strip_external(target: str) -> str:
    """A relationship target as written (``external:`` marks TargetMode="External")."""
    return target[9:] if target.startswith("external:") else target


def _clean_ref(ref: str | None) -> str | None:
    """Normalise a cell reference (``$A$1`` -> ``A1``); unparseable refs are kept as written."""
    if not ref:
        return ref
    try:
        return cell_ref(*parse_cell_ref(ref))
    except ValueError:
        return ref.strip()


def _ref_key(ref: str | None) -> tuple:
    try:
        r, c = parse_cell_ref((ref or "").split(":")[0].split(" ")[0])
        return (0, r, c)
    except ValueError:
        return (1, 0, 0)


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return format(v, ".15g")
    return str(v)


_PKG_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _pkg(reader) -> dict:
    """Per-package cache (workbook part, persons, content types, sheet parts)."""
    try:
        cache = _PKG_CACHE.get(reader)
        if cache is None:
            cache = {}
            _PKG_CACHE[reader] = cache
        return cache
    except TypeError:  # not weak-referenceable
        return {}


def _workbook_part(ctx: _Ctx) -> str:
    cache = _pkg(ctx.reader)
    if "workbook_part" not in cache:
        part = None
        for rtype, target in ctx.rels("").values() if ctx.reader.has("_rels/.rels") else []:
            if rtype == "officeDocument" and not target.startswith("external:"):
                part = target
        cache["workbook_part"] = part if part and ctx.reader.has(part) else "xl/workbook.xml"
    return cache["workbook_part"]


def _persons(ctx: _Ctx) -> dict[str, str]:
    """Person id -> display name from the workbook's ``persons`` part ([MS-XLSX] §2.1.7.2)."""
    cache = _pkg(ctx.reader)
    if "persons" in cache:
        return cache["persons"]
    persons: dict[str, str] = {}
    wb = _workbook_part(ctx)
    parts = [t for rt, t in ctx.rels(wb).values()
             if rt == "person" and not t.startswith("external:")]
    if not parts:
        parts = [n for n in ctx.reader.names() if n.lower().startswith("xl/persons/")
                 and n.lower().endswith(".xml")]
    for part in parts:
        root = ctx.load(part, "persons part")
        if root is None:
            continue
        for p in root.iter("{*}person"):
            if p.get("id"):
                persons[p.get("id")] = p.get("displayName") or p.get("userId") or ""
    cache["persons"] = persons
    return persons


def _content_types(ctx: _Ctx) -> tuple[dict[str, str], dict[str, str]]:
    """(extension -> content type, part name -> content type) of ``[Content_Types].xml``."""
    cache = _pkg(ctx.reader)
    if "content_types" not in cache:
        defaults: dict[str, str] = {}
        overrides: dict[str, str] = {}
        if ctx.reader.has("[Content_Types].xml"):
            root = ctx.load("[Content_Types].xml", "content types part")
            for el in root if root is not None else []:
                if not isinstance(el.tag, str):
                    continue
                if local(el.tag) == "Default" and el.get("Extension"):
                    defaults[el.get("Extension").lower()] = el.get("ContentType") or ""
                elif local(el.tag) == "Override" and el.get("PartName"):
                    overrides[el.get("PartName").lstrip("/").lower()] = el.get("ContentType") or ""
        cache["content_types"] = (defaults, overrides)
    return cache["content_types"]


def _sheet_parts(ctx: _Ctx) -> dict[str, str]:
    """Sheet name -> worksheet part, for resolving chart references to other sheets."""
    cache = _pkg(ctx.reader)
    if "sheet_parts" not in cache:
        out: dict[str, str] = {}
        states: dict[str, str] = {}
        wb = _workbook_part(ctx)
        root = ctx.load(wb, "workbook part") if ctx.reader.has(wb) else None
        rels = ctx.rels(wb) if root is not None else {}
        for el in root.iter("{*}sheet") if root is not None else []:
            rel = rels.get(rel_attr(el) or "")
            if el.get("name"):
                states[el.get("name")] = el.get("state") or "visible"
            if rel and not rel[1].startswith("external:") and el.get("name"):
                out[el.get("name")] = rel[1]
        cache["sheet_parts"], cache["sheet_states"] = out, states
    return cache["sheet_parts"]


def _sheet_state(ctx: _Ctx, sheet: str) -> str:
    """The visibility of a sheet by name (§18.18.68: ``visible``, ``hidden``, ``veryHidden``)."""
    _sheet_parts(ctx)
    return _pkg(ctx.reader).get("sheet_states", {}).get(sheet, "visible")


# --------------------------------------------------------------------------- cell references

_AREA_SPLIT = re.compile(r"""('(?:[^']|'')*'|[^,'])+""")


def _parse_areas(formula: str | None, default_sheet: str | None
                 ) -> list[tuple[str | None, tuple[int, int, int, int]]] | None:
    """Areas of a chart reference formula (``'My Sheet'!$A$2:$A$4``, unions in parentheses).

    Returns ``None`` for what cannot be resolved: defined names, whole rows/columns, external
    workbook references (``[1]Sheet1!A1``).
    """
    if not formula:
        return None
    text = formula.strip().lstrip("=").strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    areas = []
    for m in _AREA_SPLIT.finditer(text):
        piece = m.group(0).strip()
        if not piece:
            continue
        sheet = default_sheet
        if "!" in piece:
            sheet_part, _, rng = piece.rpartition("!")
            sheet_part = sheet_part.strip()
            if sheet_part.startswith("'") and sheet_part.endswith("'") and len(sheet_part) >= 2:
                sheet_part = sheet_part[1:-1].replace("''", "'")
            if "[" in sheet_part or not sheet_part:
                return None
            sheet = sheet_part
        else:
            rng = piece
        try:
            areas.append((sheet, parse_range(rng.replace("$", "").strip())))
        except ValueError:
            return None
    return areas or None


def _area_ref(formula: str | None) -> tuple[str | None, str | None]:
    """(sheet, A1 range) of a formula naming exactly one plain area, else (None, None)."""
    areas = _parse_areas(formula, None)
    if not areas or len(areas) != 1:
        return None, None
    sheet, bounds = areas[0]
    return sheet, range_ref(*bounds)


class _Resolver:
    """Values of referenced cells: the caller's ``cell_value`` or a stream of the sheet part."""

    def __init__(self, ctx: _Ctx, sheet_name: str | None, sheet_part: str | None,
                 shared_strings: list[str] | None, cell_value: CellValue | None):
        self.ctx = ctx
        self.sheet_name = sheet_name
        self.sheet_part = sheet_part
        self.shared_strings = shared_strings
        self.cell_value = cell_value
        self._cache: dict[tuple[str, str], object] = {}
        self._warned_callback = False

    def _cells(self, formula: str | None) -> list[tuple[str, str]] | None:
        areas = _parse_areas(formula, self.sheet_name)
        if not areas:
            return None
        cells: list[tuple[str, str]] = []
        for sheet, (r1, c1, r2, c2) in areas:
            if sheet is None:
                return None
            if (r2 - r1 + 1) * (c2 - c1 + 1) + len(cells) > MAX_RESOLVED_CELLS:
                self.ctx.warn("chart_range_too_large",
                              f"chart reference {formula!r} covers more than "
                              f"{MAX_RESOLVED_CELLS} cells; not resolved")
                return None
            for r in range(r1, r2 + 1):
                for c in range(c1, c2 + 1):
                    cells.append((sheet, cell_ref(r, c)))
        return cells

    def prefetch(self, formulas: Iterable[str | None]) -> None:
        """Read, in one pass per sheet part, the cells the given formulas refer to."""
        if self.cell_value is not None:
            return
        wanted: dict[str, set[str]] = {}
        for f in formulas:
            for sheet, ref in self._cells(f) or []:
                if (sheet, ref) not in self._cache:
                    wanted.setdefault(sheet, set()).add(ref)
        for sheet, refs in wanted.items():
            self._stream(sheet, refs)

    def _stream(self, sheet: str, refs: set[str]) -> None:
        """Read the values of the cells ``refs`` of ``sheet`` from its part. Cells that are
        hidden (a hidden or very hidden sheet, a hidden row or column) stay ``None``, with a
        ``chart_hidden_source`` warning: hidden content never reaches a chart's text."""
        part = self.sheet_part if sheet == self.sheet_name and self.sheet_part else None
        if part is None:
            part = _sheet_parts(self.ctx).get(sheet)
        for ref in refs:
            self._cache[(sheet, ref)] = None
        if not part or not self.ctx.reader.has(part):
            return
        if _sheet_state(self.ctx, sheet) != "visible":
            self._hidden(f"the {_sheet_state(self.ctx, sheet)} sheet {sheet!r}")
            return
        strings = self.shared_strings
        if strings is None:
            strings = self._shared_strings()
        remaining = set(refs)
        hidden_cols: list[tuple[int, int]] = []
        skipped = 0
        try:
            with self.ctx.reader.open(part) as stream:
                for _, el in etree.iterparse(stream, events=("end",),
                                             tag=("{*}c", "{*}row", "{*}col"), **XML_OPTS):
                    if local(el.tag) == "col":
                        if _bool(el.get("hidden"), False):
                            hidden_cols.append((_int(el.get("min"), 0), _int(el.get("max"), 0)))
                        continue
                    if local(el.tag) == "row":
                        el.clear()
                        parent = el.getparent()
                        while el.getprevious() is not None:
                            del parent[0]
                        continue
                    ref = _clean_ref(el.get("r"))
                    if ref in remaining:
                        col = parse_cell_ref(ref)[1]
                        row_el = el.getparent()
                        if (row_el is not None and _bool(row_el.get("hidden"), False)) or any(
                                a <= col <= b for a, b in hidden_cols):
                            skipped += 1
                        else:
                            self._cache[(sheet, ref)] = _cell_from_xml(el, strings)
                        remaining.discard(ref)
                        if not remaining:
                            break
        except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
            self.ctx._failed(part, exc, "cells for a chart of")
        if skipped:
            self._hidden(f"{skipped} cells in hidden rows or columns of sheet {sheet!r}")

    def _hidden(self, where: str) -> None:
        self.ctx.warn("chart_hidden_source", f"a chart without cached values refers to {where}; "
                      "those values are not read (hidden content is in no block)")

    def _shared_strings(self) -> list[str]:
        cache = _pkg(self.ctx.reader)
        if "shared_strings" not in cache:
            part = None
            for rtype, target in self.ctx.rels(_workbook_part(self.ctx)).values():
                if rtype == "sharedStrings":
                    part = target
            try:
                cache["shared_strings"] = read_shared_strings(self.ctx.reader, part)
            except (ExtractionError, etree.LxmlError, ValueError, OSError) as exc:
                self.ctx._failed(part or "sharedStrings", exc, "shared strings")
                cache["shared_strings"] = []
        return cache["shared_strings"]

    def values(self, formula: str | None) -> list | None:
        """Values of the cells a formula refers to (row-major), or None when unresolvable."""
        cells = self._cells(formula)
        if cells is None:
            return None
        if self.cell_value is None:
            self.prefetch([formula])
            return [_json_value(self._cache.get(c)) for c in cells]
        out = []
        for sheet, ref in cells:
            try:
                out.append(_json_value(self.cell_value(sheet, ref)))
            except Exception as exc:  # the caller's resolver: any failure is its own
                if not self._warned_callback:
                    self.ctx.warn("cell_resolver_failed",
                                  f"cell resolver failed on {sheet}!{ref}: "
                                  f"{type(exc).__name__}: {exc}")
                    self._warned_callback = True
                out.append(None)
        return out


def _cell_from_xml(el, strings: list[str]):
    """The typed value of a ``<c>`` element (read like the worksheet reader reads it)."""
    t = el.get("t") or "n"
    v, _, _, _ = cell_children(el, t)
    if v is None or t in ("inlineStr", "str", "e", "d"):
        return v
    if t == "s":
        idx = _int(v, -1)
        return strings[idx] if 0 <= idx < len(strings) else None
    if t == "b":
        return v.strip() in ("1", "true")
    try:
        return float(v)
    except ValueError:
        return v


# --------------------------------------------------------------------------- comments


def _legacy_comments(ctx: _Ctx, part: str) -> list[SheetObject]:
    """Comments of a legacy comments part (§18.7.6 ``comments``, §18.7.3 ``comment``)."""
    root = ctx.load(part, "comments part")
    if root is None:
        return []
    authors_el = _child(root, "authors")
    authors = ([a.text or "" for a in _children(authors_el, "author")]
               if authors_el is not None else [])
    list_el = _child(root, "commentList")
    out = []
    for c in _children(list_el, "comment") if list_el is not None else []:
        ref = _clean_ref(c.get("ref"))
        aid = _int(c.get("authorId"))
        author = authors[aid] if aid is not None and 0 <= aid < len(authors) else None
        text_el = _child(c, "text")
        text = rich_text(text_el) if text_el is not None else ""
        out.append(SheetObject("comment", ctx.sheet_name, ref, None, text, {
            "author": author, "created": None, "replies": [], "threaded": False,
            "resolved": None,
        }))
    return out


def _threaded_comments(ctx: _Ctx, part: str) -> list[SheetObject]:
    """Threads of a ``threadedComments`` part ([MS-XLSX] §2.1.7.1), replies in order."""
    root = ctx.load(part, "threaded comments part")
    if root is None:
        return []
    persons = _persons(ctx)
    entries = []
    for tc in root.iter("{*}threadedComment"):
        text_el = _child(tc, "text")
        entries.append({
            "id": tc.get("id"), "parent": tc.get("parentId"), "ref": _clean_ref(tc.get("ref")),
            "author": persons.get(tc.get("personId") or "") or None,
            "created": tc.get("dT"), "text": (text_el.text or "") if text_el is not None else "",
            "done": _bool(tc.get("done"), False),
        })
    roots = {e["id"]: e for e in entries if not e["parent"] and e["id"]}
    threads: list[tuple[dict, list[dict]]] = []
    by_root: dict[str, list[dict]] = {}
    for e in entries:
        if e["parent"] and e["parent"] in roots:
            by_root.setdefault(e["parent"], []).append(e)
        else:
            if e["parent"]:
                ctx.warn("orphan_reply", f"threaded reply {e['id']} names a missing parent "
                         f"{e['parent']}", e["ref"])
            replies: list[dict] = []
            if e["id"]:
                replies = by_root.setdefault(e["id"], [])
            threads.append((e, replies))
    out = []
    for root_e, replies in threads:
        rep = [{"author": r["author"], "created": r["created"], "text": r["text"]}
               for r in replies]
        lines = [root_e["text"]] + [
            (f"Reply by {r['author']}: " if r["author"] else "Reply: ") + r["text"] for r in rep]
        out.append(SheetObject("comment", ctx.sheet_name, root_e["ref"], None, "\n".join(lines), {
            "author": root_e["author"], "created": root_e["created"], "replies": rep,
            "threaded": True, "resolved": bool(root_e["done"]),
        }))
    return out


def _comments(ctx: _Ctx, rels: dict) -> list[SheetObject]:
    legacy: list[SheetObject] = []
    threaded: list[SheetObject] = []
    for rtype, target in rels.values():
        if rtype == "comments":
            legacy.extend(_guard(ctx, f"comments {target}",
                                 lambda t=target: _legacy_comments(ctx, t)))
        elif rtype == "threadedComment":
            threaded.extend(_guard(ctx, f"threaded comments {target}",
                                   lambda t=target: _threaded_comments(ctx, t)))
    threaded_refs = {o.ref for o in threaded}
    out = threaded + [o for o in legacy if o.ref not in threaded_refs]
    out.sort(key=lambda o: _ref_key(o.ref))
    return out


# --------------------------------------------------------------------------- hyperlinks


def _hyperlinks(ctx: _Ctx, el, rels: dict) -> list[SheetObject]:
    out = []
    for h in _children(el, "hyperlink"):
        ref = h.get("ref")
        ref = ref.replace("$", "") if ref else ref
        rid = rel_attr(h)
        target = None
        if rid:
            rel = rels.get(rid)
            if rel is None:
                ctx.warn("bad_relationship",
                         f"hyperlink refers to relationship {rid!r}, which does not exist", ref)
            else:
                target = _strip_external(rel[1])
        location = h.get("location")
        if not location and target and target.startswith("#"):
            location = target[1:]  # a same-document fragment written as a relationship target
        display = h.get("display")
        dest = target or location
        if display and dest and display != dest:
            text = f"{display} ({dest})"
        else:
            text = display or dest
        out.append(SheetObject("hyperlink", ctx.sheet_name, ref, None, text, {
            "target": target, "location": location, "display": display,
            "tooltip": h.get("tooltip"),
        }))
    return out


# --------------------------------------------------------------------------- validations


def _formula_text(el) -> str | None:
    """Text of ``formula1`` (plain text, or an ``xm:f`` child in the x14 form)."""
    if el is None:
        return None
    f = _child(el, "f")
    if f is not None:
        return f.text
    return el.text


def _sqref(el) -> str | None:
    sq = el.get("sqref")
    if sq is None:
        child = _child(el, "sqref")
        sq = child.text if child is not None else None
    return " ".join(sq.split()) if sq else sq


def _data_validation(ctx: _Ctx, dv, source: str) -> SheetObject:
    details = {
        "type": dv.get("type") or "none",
        "operator": dv.get("operator") or ("between" if (dv.get("type") or "none") not in
                                            ("none", "list", "custom") else None),
        "formula1": _formula_text(_child(dv, "formula1")),
        "formula2": _formula_text(_child(dv, "formula2")),
        "allow_blank": _bool(dv.get("allowBlank"), False),
        "show_drop_down": _bool(dv.get("showDropDown"), False),
        "show_input_message": _bool(dv.get("showInputMessage"), False),
        "show_error_message": _bool(dv.get("showErrorMessage"), False),
        "error_style": dv.get("errorStyle") or "stop",
        "error_title": dv.get("errorTitle"),
        "error": dv.get("error"),
        "prompt_title": dv.get("promptTitle"),
        "prompt": dv.get("prompt"),
        "source": source,
    }
    parts = [details["type"]]
    if details["operator"] and details["type"] not in ("list", "custom", "none"):
        parts.append(details["operator"])
    parts += [f for f in (details["formula1"], details["formula2"]) if f]
    text = " ".join(parts)
    if details["prompt"]:
        text += f" — {details['prompt']}"
    return SheetObject("data_validation", ctx.sheet_name, _sqref(dv), None, text, details)


_CF_EXTRA = ("timePeriod", "rank", "percent", "bottom", "aboveAverage", "equalAverage",
             "stdDev", "id")


def _cf_rule(rule) -> dict:
    extra: dict[str, Any] = {k: rule.get(k) for k in _CF_EXTRA if rule.get(k) is not None}
    formulas = [f.text or "" for f in rule if local(f.tag) in ("formula", "f")]
    for name in ("colorScale", "dataBar", "iconSet"):
        sub = _child(rule, name)
        if sub is not None:
            extra[name] = {
                "cfvo": [{"type": c.get("type"), "val": c.get("val") if c.get("val") is not None
                          else _formula_text(c)} for c in _children(sub, "cfvo")],
            }
            if sub.get("iconSet"):
                extra[name]["icon_set"] = sub.get("iconSet")
    return {
        "type": rule.get("type"),
        "priority": _int(rule.get("priority")),
        "operator": rule.get("operator"),
        "formulas": formulas,
        "dxf_id": _int(rule.get("dxfId")),
        "stop_if_true": _bool(rule.get("stopIfTrue"), False),
        "text": rule.get("text"),
        "extra": extra,
    }


def _conditional_format(ctx: _Ctx, cf, source: str) -> SheetObject:
    rules = [_cf_rule(r) for r in _children(cf, "cfRule")]
    sqref = _sqref(cf)
    desc = []
    for r in rules:
        bits = [r["type"] or "rule"]
        if r["operator"]:
            bits.append(r["operator"])
        bits += r["formulas"]
        if r["text"]:
            bits.append(repr(r["text"]))
        desc.append(" ".join(bits))
    text = f"{sqref}: " + "; ".join(desc) if sqref else "; ".join(desc)
    return SheetObject("conditional_format", ctx.sheet_name, sqref, None, text, {
        "rules": rules, "pivot": _bool(cf.get("pivot"), False), "source": source,
    })


def _ext_objects(ctx: _Ctx, ext_lst) -> list[SheetObject]:
    """Office 2010 ``x14`` data validations and conditional formats held in ``<extLst>``."""
    out = []
    for ext in _children(ext_lst, "ext"):
        for block in ext:
            if not isinstance(block.tag, str):
                continue
            name = local(block.tag)
            if name == "conditionalFormattings":
                for cf in _children(block, "conditionalFormatting"):
                    out.append(_conditional_format(ctx, cf, "x14"))
            elif name == "dataValidations":
                for dv in _children(block, "dataValidation"):
                    out.append(_data_validation(ctx, dv, "x14"))
    return out


# --------------------------------------------------------------------------- tables


def _table(ctx: _Ctx, part: str) -> list[SheetObject]:
    """One ListObject part (§18.5.1.2 ``table``)."""
    root = ctx.load(part, "table part")
    if root is None:
        return []
    cols_el = _child(root, "tableColumns")
    column_details = []
    for col in _children(cols_el, "tableColumn") if cols_el is not None else []:
        calc = _child(col, "calculatedColumnFormula")
        column_details.append({
            "name": col.get("name"),
            "totals_row_function": col.get("totalsRowFunction"),
            "totals_row_label": col.get("totalsRowLabel"),
            "calculated_formula": calc.text if calc is not None else None,
        })
    style = _child(root, "tableStyleInfo")
    name = root.get("name") or root.get("displayName")
    ref = root.get("ref")
    columns = [c["name"] for c in column_details]
    details = {
        "display_name": root.get("displayName"),
        "id": _int(root.get("id")),
        "header_row_count": _int(root.get("headerRowCount"), 1),
        "totals_row_count": _int(root.get("totalsRowCount"), 0),
        "totals_row_shown": _bool(root.get("totalsRowShown"), True),
        "columns": columns,
        "column_details": column_details,
        "table_type": root.get("tableType") or "worksheet",
        "style": style.get("name") if style is not None else None,
        "has_autofilter": _child(root, "autoFilter") is not None,
        "part": part,
    }
    text = f"Table {details['display_name'] or name} {ref or ''}".rstrip()
    if columns:
        text += ": " + " | ".join(c or "" for c in columns)
    return [SheetObject("table", ctx.sheet_name, ref.replace("$", "") if ref else ref, name,
                        text, details)]


# --------------------------------------------------------------------------- pivot tables


def _pivot_table(ctx: _Ctx, part: str) -> list[SheetObject]:
    """One pivot table part (§18.10.1.73 ``pivotTableDefinition``): its ``location``
    (§18.10.1.49), fields and the type of each body row (``rowItems``, §18.10.1.84)."""
    root = ctx.load(part, "pivot table part")
    if root is None:
        return []
    location = _child(root, "location")
    ref = _clean_range(location.get("ref")) if location is not None else None
    if not ref:
        ctx.warn("malformed_part", f"pivot table part {part} has no location; not used")
        return []

    def count(name: str) -> int:
        el = _child(root, name)
        return len(_children(el, "field")) if el is not None else 0

    data_el = _child(root, "dataFields")
    items_el = _child(root, "rowItems")
    details = {
        "first_header_row": _int(location.get("firstHeaderRow"), 0),
        "first_data_row": _int(location.get("firstDataRow"), 0),
        "first_data_col": _int(location.get("firstDataCol"), 0),
        "row_page_count": _int(location.get("rowPageCount"), 0),
        "col_page_count": _int(location.get("colPageCount"), 0),
        "row_fields": count("rowFields"),
        "col_fields": count("colFields"),
        "data_fields": [d.get("name") for d in _children(data_el, "dataField")]
        if data_el is not None else [],
        "row_grand_totals": _bool(root.get("rowGrandTotals"), True),
        "col_grand_totals": _bool(root.get("colGrandTotals"), True),
        "row_items": [i.get("t") or "data" for i in _children(items_el, "i")]
        if items_el is not None else [],
        "part": part,
    }
    name = root.get("name")
    return [SheetObject("pivot_table", ctx.sheet_name, ref, name,
                        f"Pivot table {name or ''} {ref}".replace("  ", " "), details)]


def _clean_range(ref: str | None) -> str | None:
    """An A1 range as written with ``$`` removed, or None when it is not a valid range."""
    if not ref:
        return None
    try:
        return range_ref(*parse_range(ref.replace("$", "").strip()))
    except ValueError:
        return None


# --------------------------------------------------------------------------- drawings

_ANCHORS = ("twoCellAnchor", "oneCellAnchor", "absoluteAnchor")


def _anchor_cell(el) -> str | None:
    if el is None:
        return None
    col = _int((_child(el, "col").text if _child(el, "col") is not None else None))
    row = _int((_child(el, "row").text if _child(el, "row") is not None else None))
    if col is None or row is None or not (0 <= col < MAX_COL and 0 <= row < MAX_ROW):
        return None
    return cell_ref(row + 1, col + 1)


def _ext_emu(el) -> list[int] | None:
    if el is None:
        return None
    cx, cy = _int(el.get("cx")), _int(el.get("cy"))
    if cx is None or cy is None:
        return None
    return [cx, cy]


class _DrawingReader:
    """Charts and pictures of one SpreadsheetML drawing part (§20.5.2.35 ``wsDr``)."""

    def __init__(self, ctx: _Ctx, part: str, resolver: _Resolver):
        self.ctx = ctx
        self.part = part
        self.resolver = resolver
        self.rels: dict = {}

    def read(self) -> list[SheetObject]:
        root = self.ctx.load(self.part, "drawing part")
        if root is None:
            return []
        self.rels = self.ctx.rels(self.part)
        out: list[SheetObject] = []
        for anchor in self._anchors(root):
            out.extend(_guard(self.ctx, f"drawing anchor in {self.part}",
                              lambda a=anchor: self._anchor(a)))
        return out

    def _anchors(self, root) -> list:
        found = []
        for el in root:
            if not isinstance(el.tag, str):
                continue
            name = local(el.tag)
            if name in _ANCHORS:
                found.append(el)
            elif name == "AlternateContent":
                branches = _children(el, "Choice") + _children(el, "Fallback")
                for branch in branches:
                    inner = [c for c in branch if local(c.tag) in _ANCHORS]
                    if inner:
                        found.extend(inner)
                        break
        return found

    def _anchor(self, anchor) -> list[SheetObject]:
        kind = local(anchor.tag)
        info = {
            "anchor": _anchor_cell(_child(anchor, "from")),
            "anchor_to": _anchor_cell(_child(anchor, "to")) if kind == "twoCellAnchor" else None,
            "anchor_type": kind,
            "ext": _ext_emu(_child(anchor, "ext")),
        }
        out: list[SheetObject] = []
        for el in anchor:
            if isinstance(el.tag, str):
                out.extend(self._content(el, info, 0))
        return out

    def _content(self, el, info: dict, depth: int) -> list[SheetObject]:
        if depth > 32:
            return []
        name = local(el.tag)
        if name == "graphicFrame":
            return self._frame(el, info)
        if name == "pic":
            return self._picture(el, info)
        if name == "grpSp":
            out = []
            for child in el:
                if isinstance(child.tag, str):
                    out.extend(self._content(child, info, depth + 1))
            return out
        if name == "AlternateContent":
            for branch in _children(el, "Choice") + _children(el, "Fallback"):
                out = []
                for child in branch:
                    if isinstance(child.tag, str):
                        out.extend(self._content(child, info, depth + 1))
                if out:
                    return out
        return []

    @staticmethod
    def _nv(el, nv_name: str) -> dict:
        c = _path(el, nv_name, "cNvPr")
        if c is None:
            return {"name": None, "descr": None, "title": None, "hidden": False}
        return {"name": c.get("name"), "descr": c.get("descr"), "title": c.get("title"),
                "hidden": _bool(c.get("hidden"), False)}

    def _frame(self, frame, info: dict) -> list[SheetObject]:
        nv = self._nv(frame, "nvGraphicFramePr")
        chart_el = None
        for el in frame.iter():
            if isinstance(el.tag, str) and local(el.tag) == "chart" and rel_attr(el):
                chart_el = el
                break
        if chart_el is None:
            return []
        ref = info["anchor"]
        part = self.ctx.target(self.rels, rel_attr(chart_el), ("chart", "chartEx"),
                               f"chart frame {nv['name']!r}", ref)
        if part is None:
            return []
        rtype = self.rels[rel_attr(chart_el)][0]
        data = (_read_chartex if rtype == "chartEx" else _read_chart)(
            self.ctx, part, self.resolver)
        if data is None:
            return []
        details = {
            "anchor": info["anchor"], "anchor_to": info["anchor_to"],
            "anchor_type": info["anchor_type"], "frame_name": nv["name"],
            "alt_text": nv["descr"], "chart_part": part, **data,
        }
        return [SheetObject("chart", self.ctx.sheet_name, ref, data["title"] or nv["name"],
                            _render_chart(data), details)]

    def _picture(self, pic, info: dict) -> list[SheetObject]:
        nv = self._nv(pic, "nvPicPr")
        ref = info["anchor"]
        blip = None
        blip_fill = _child(pic, "blipFill")
        if blip_fill is not None:
            blip = _child(blip_fill, "blip")
        details: dict[str, Any] = {
            "anchor": info["anchor"], "anchor_to": info["anchor_to"],
            "anchor_type": info["anchor_type"], "alt_text": nv["descr"], "title": nv["title"],
            "hidden": nv["hidden"], "media_part": None, "external_target": None,
            "content_type": None, "extension": None, "size_bytes": None, "sha256": None,
            "width_px": None, "height_px": None,
            "display_size_emu": info["ext"] or _ext_emu(_path(pic, "spPr", "xfrm", "ext")),
        }
        if details["display_size_emu"] == [0, 0]:
            details["display_size_emu"] = None
        rid = rel_attr(blip, "embed") if blip is not None else None
        link = rel_attr(blip, "link") if blip is not None else None
        if rid:
            part = self.ctx.target(self.rels, rid, ("image",), f"picture {nv['name']!r}", ref)
            if part and part.startswith("external:"):
                details["external_target"] = part[9:]
            elif part:
                details["media_part"] = part
                _image_facts(self.ctx, part, details)
        elif link:
            rel = self.rels.get(link)
            if rel is None:
                self.ctx.warn("bad_relationship", f"linked picture refers to relationship "
                              f"{link!r}, which does not exist", ref)
            else:
                details["external_target"] = _strip_external(rel[1])
        else:
            self.ctx.warn("picture_without_image", f"picture {nv['name']!r} has no image "
                          "relationship", ref)
        if details["external_target"]:
            ext = posixpath.splitext(details["external_target"])[1]
            details["extension"] = ext.lstrip(".").lower() or None
        return [SheetObject("picture", self.ctx.sheet_name, ref, nv["name"],
                            nv["descr"] or nv["title"], details)]


def _image_facts(ctx: _Ctx, part: str, details: dict) -> None:
    """Content type, size, sha256 and pixel size of an embedded image (read under the limits)."""
    ext = posixpath.splitext(part)[1].lstrip(".").lower() or None
    details["extension"] = ext
    defaults, overrides = _content_types(ctx)
    details["content_type"] = overrides.get(part.lower()) or (defaults.get(ext) if ext else None)
    if not ctx.reader.has(part):
        ctx.warn("missing_part", f"image {part} is missing from the package")
        return
    digest = hashlib.sha256()
    head = bytearray()
    size = 0
    try:
        with ctx.reader.open(part) as stream:
            while True:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                digest.update(chunk)
                size += len(chunk)
                if len(head) < _IMAGE_HEAD:
                    head += chunk[: _IMAGE_HEAD - len(head)]
    except (ExtractionError, OSError, ValueError) as exc:
        ctx._failed(part, exc, "image")
        return
    details["size_bytes"] = size
    details["sha256"] = digest.hexdigest()
    sniffed, wh = _image_header(bytes(head))
    if not details["content_type"] and sniffed:
        details["content_type"] = sniffed
    if wh:
        details["width_px"], details["height_px"] = wh


def _image_header(data: bytes) -> tuple[str | None, tuple[int, int] | None]:
    """(content type, (width, height)) from a PNG, JPEG, GIF or BMP header; cheap, no decoding."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            w, h = struct.unpack(">II", data[16:24])
            return "image/png", (w, h)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", data[6:10])
            return "image/gif", (w, h)
        if data.startswith(b"BM") and len(data) >= 26:
            w, h = struct.unpack("<ii", data[18:26])
            return "image/bmp", (abs(w), abs(h))
        if data.startswith(b"\xff\xd8"):
            i = 2
            while i + 9 < len(data):
                if data[i] != 0xFF:
                    i += 1
                    continue
                marker = data[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                    i += 1 if marker == 0xFF else 2
                    continue
                length = struct.unpack(">H", data[i + 2:i + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", data[i + 5:i + 9])
                    return "image/jpeg", (w, h)
                if length < 2:
                    break
                i += 2 + length
            return "image/jpeg", None
        if data[:4] in (b"\x01\x00\x00\x00",) and data[40:44] == b" EMF":
            return "image/x-emf", None
    except struct.error:
        pass
    return None, None


# --------------------------------------------------------------------------- charts


def _chart_type(tag: str) -> str:
    """``barChart``/``bar3DChart`` -> ``bar``, ``lineChart`` -> ``line``, ``ofPieChart`` -> ``ofPie``.

    The plot groups are the ``*Chart`` children of ``plotArea`` (§21.2.2.145).
    """
    base = tag[:-5] if tag.endswith("Chart") else tag
    return base.replace("3D", "")


def _para_text(rich) -> str:
    """Text of a DrawingML text body (``a:p`` paragraphs of ``a:r``/``a:fld`` runs)."""
    paras = []
    for p in rich.iter("{*}p"):
        runs = []
        for r in p:
            if isinstance(r.tag, str) and local(r.tag) in ("r", "fld"):
                t = _child(r, "t")
                runs.append(t.text or "" if t is not None else "")
        paras.append("".join(runs))
    return " ".join(s for s in paras if s).strip()


class _Series:
    """A chart data source (§21.2.2.x ``strRef``/``numRef``/``strLit``/``numLit``)."""

    __slots__ = ("formula", "values", "source")

    def __init__(self, formula=None, values=None, source="none"):
        self.formula = formula
        self.values = values
        self.source = source


def _cache_points(cache, numeric: bool, count: int | None = None) -> list:
    """Points of a ``strCache``/``numCache``/literal/``lvl`` by ``idx`` (missing ones None)."""
    count_el = _child(cache, "ptCount")
    if count_el is not None:
        count = _int(count_el.get("val"))
    pts: dict[int, Any] = {}
    for pt in _children(cache, "pt"):
        idx = _int(pt.get("idx"))
        v = _child(pt, "v")
        if idx is None or idx < 0 or idx >= MAX_POINTS or v is None:
            continue
        value: Any = v.text
        if numeric and value is not None:
            try:
                value = float(value)
            except ValueError:
                pass
        pts[idx] = _json_value(value)
    n = count if count is not None and count >= 0 else (max(pts) + 1 if pts else 0)
    n = min(n, MAX_POINTS)
    if pts and max(pts) >= n and count is None:
        n = min(max(pts) + 1, MAX_POINTS)
    return [pts.get(i) for i in range(n)]


def _data_source(el) -> _Series:
    """The reference formula and cached points of ``tx``/``cat``/``val``/``xVal``/``yVal``."""
    if el is None:
        return _Series()
    for child in el:
        if not isinstance(child.tag, str):
            continue
        name = local(child.tag)
        if name in ("strRef", "numRef", "multiLvlStrRef"):
            f = _child(child, "f")
            formula = f.text.strip() if f is not None and f.text else None
            cache = None
            for c in child:
                if isinstance(c.tag, str) and local(c.tag) in ("strCache", "numCache",
                                                                "multiLvlStrCache"):
                    cache = c
            count = None
            if cache is not None and local(cache.tag) == "multiLvlStrCache":
                # the first level is the one next to the axis (§21.2.2.102 multiLvlStrCache)
                count_el = _child(cache, "ptCount")
                count = _int(count_el.get("val")) if count_el is not None else None
                cache = _child(cache, "lvl")
            if cache is not None:
                points = _cache_points(cache, local(cache.tag) == "numCache", count)
                if points:
                    return _Series(formula, points, "cache")
            return _Series(formula, None, "none")
        if name in ("strLit", "numLit"):
            return _Series(None, _cache_points(child, name == "numLit"), "literal")
        if name == "v":
            return _Series(None, [child.text], "literal")
    return _Series()


def _resolve(series: _Series, resolver: _Resolver) -> _Series:
    if series.values is None and series.formula:
        values = resolver.values(series.formula)
        if values is not None:
            return _Series(series.formula, values, "cells")
    return series


def _title(title_el, resolver: _Resolver) -> str | None:
    if title_el is None:
        return None
    tx = _child(title_el, "tx")
    if tx is None:
        return None
    rich = _child(tx, "rich")
    if rich is not None:
        return _para_text(rich) or None
    src = _resolve(_data_source(tx), resolver)
    if src.values:
        return " ".join(_fmt(v) for v in src.values if v is not None) or None
    return None


def _read_chart(ctx: _Ctx, part: str, resolver: _Resolver) -> dict | None:
    """Types, title, axis titles and series of a DrawingML chart part (§21.2.2.27)."""
    root = ctx.load(part, "chart part")
    if root is None:
        return None
    chart = _child(root, "chart")
    plot = _child(chart, "plotArea")
    specs = []
    types: list[str] = []
    for group in plot if plot is not None else []:
        if not isinstance(group.tag, str):
            continue
        gname = local(group.tag)
        if not gname.endswith("Chart"):
            continue
        ctype = _chart_type(gname)
        if ctype not in types:
            types.append(ctype)
        for ser in _children(group, "ser"):
            cat_el = _child(ser, "cat")
            val_el = _child(ser, "val")
            if cat_el is None and val_el is None:
                cat_el, val_el = _child(ser, "xVal"), _child(ser, "yVal")
            order_el = _child(ser, "order")
            order = _int(order_el.get("val")) if order_el is not None else None
            specs.append((ctype, order, _data_source(_child(ser, "tx")), _data_source(cat_el),
                          _data_source(val_el)))
    formulas = [s.formula for spec in specs for s in spec[2:] if s.values is None and s.formula]
    title_src = _data_source(_path(chart, "title", "tx"))
    if title_src.values is None and title_src.formula:
        formulas.append(title_src.formula)
    resolver.prefetch(formulas)
    series = []
    for ctype, order, tx, cat, val in sorted(
            specs, key=lambda s: (s[1] is None, s[1] if s[1] is not None else 0)):
        tx, cat, val = _resolve(tx, resolver), _resolve(cat, resolver), _resolve(val, resolver)
        name = " ".join(_fmt(v) for v in tx.values if v is not None) if tx.values else None
        series.append({
            "name": name or None, "chart_type": ctype,
            "categories": cat.values or [], "values": val.values or [],
            "name_ref": tx.formula, "categories_ref": cat.formula, "values_ref": val.formula,
            "source": val.source,
        })
    title_el = _child(chart, "title") if chart is not None else None
    title = _title(title_el, resolver)
    auto_deleted = _bool(_path(chart, "autoTitleDeleted").get("val"), True) \
        if _path(chart, "autoTitleDeleted") is not None else False
    if title is None and title_el is not None and len(series) == 1 and not auto_deleted:
        title = series[0]["name"]
    axis_titles = []
    for ax in plot if plot is not None else []:
        if isinstance(ax.tag, str) and local(ax.tag) in ("catAx", "valAx", "dateAx", "serAx"):
            t = _title(_child(ax, "title"), resolver)
            if t:
                axis_titles.append(t)
    return {"chart_types": types, "title": title, "axis_titles": axis_titles, "series": series}


def _read_chartex(ctx: _Ctx, part: str, resolver: _Resolver) -> dict | None:
    """A reduced reading of an Office 2016 ``chartEx`` part (waterfall, treemap, funnel...)."""
    root = ctx.load(part, "chartEx part")
    if root is None:
        return None
    data: dict[str, dict[str, _Series]] = {}
    for d in root.iter("{*}data"):
        dims: dict[str, _Series] = {}
        for dim in d:
            if not isinstance(dim.tag, str) or local(dim.tag) not in ("strDim", "numDim"):
                continue
            f = _child(dim, "f")
            lvl = _child(dim, "lvl")
            values = _cache_points(lvl, local(dim.tag) == "numDim") if lvl is not None else None
            dims.setdefault(dim.get("type") or "val", _Series(
                f.text.strip() if f is not None and f.text else None, values or None,
                "cache" if values else "none"))
        data[d.get("id") or str(len(data))] = dims
    chart = _child(root, "chart")
    title_el = _child(chart, "title")
    title = None
    if title_el is not None:
        rich = _path(title_el, "tx", "rich")
        v = _path(title_el, "tx", "txData", "v")
        if rich is not None:
            title = _para_text(rich) or None
        elif v is not None:
            title = v.text or None
    types: list[str] = []
    series = []
    for ser in root.iter("{*}series"):
        ctype = ser.get("layoutId") or "chartEx"
        if ctype not in types:
            types.append(ctype)
        did = _path(ser, "dataId")
        dims = data.get(did.get("val") if did is not None else "0", {})
        cat = _resolve(dims.get("cat", _Series()), resolver)
        val = _resolve(dims.get("val", dims.get("size", _Series())), resolver)
        name_v = _path(ser, "tx", "txData", "v")
        name_f = _path(ser, "tx", "txData", "f")
        series.append({
            "name": name_v.text if name_v is not None else None, "chart_type": ctype,
            "categories": cat.values or [], "values": val.values or [],
            "name_ref": name_f.text if name_f is not None else None,
            "categories_ref": cat.formula, "values_ref": val.formula, "source": val.source,
        })
    return {"chart_types": types, "title": title, "axis_titles": [], "series": series}


def _render_chart(data: dict) -> str:
    """Readable text: title, type(s) and each series' category/value pairs."""
    types = ", ".join(data["chart_types"]) or "unknown"
    head = f'Chart "{data["title"]}" ({types})' if data["title"] else f"Chart ({types})"
    lines = [head]
    if data["axis_titles"]:
        lines.append("Axes: " + "; ".join(data["axis_titles"]))
    for i, s in enumerate(data["series"], 1):
        name = s["name"] or f"Series {i}"
        values = s["values"]
        cats = s["categories"]
        pairs = []
        for j, v in enumerate(values[:MAX_RENDER_POINTS]):
            label = _fmt(cats[j]) if j < len(cats) and cats[j] is not None else str(j + 1)
            pairs.append(f"{label} = {_fmt(v)}")
        more = ""
        if len(values) > MAX_RENDER_POINTS:
            more = f"; … ({len(values) - MAX_RENDER_POINTS} more)"
        lines.append(f'Series "{name}": ' + ("; ".join(pairs) or "(no data)") + more)
    return "\n".join(lines)


# --------------------------------------------------------------------------- public API


def read_sheet_objects(reader: PackageReader, sheet_part: str, sheet_name: str, worksheet,
                       shared_strings: list[str] | None = None,
                       cell_value: CellValue | None = None,
                       issues: list | None = None) -> list[SheetObject]:
    """The non-cell objects of one worksheet.

    Args:
        reader: the package.
        sheet_part: the worksheet's part name (its relationships are read).
        sheet_name: the sheet's tab name (recorded on every object and issue).
        worksheet: the lxml root of the worksheet part; only its children other than
            ``<sheetData>`` are read (``conditionalFormatting``, ``dataValidations``,
            ``hyperlinks``, ``tableParts``, ``drawing``, ``extLst``). ``None`` reads only what the
            relationships reach (comments, tables, drawings).
        shared_strings: the shared string table, used when chart references are resolved from
            the package's own cells (no ``cell_value`` given); ``None`` reads it when needed.
        cell_value: optional ``(sheet_name, a1_ref) -> value`` resolver for chart series without
            a cache. Without it the referenced worksheet parts are streamed for those cells.
        issues: a list receiving an :class:`Issue` per skipped object.

    Returns:
        Comments (sorted by cell), hyperlinks, data validations, conditional formats, tables,
        then drawing objects (charts and pictures) in drawing order. ``<legacyDrawing>`` (VML) is
        not read: it only holds the comment boxes and form controls' shapes.
    """
    ctx = _Ctx(reader, sheet_name, issues)
    resolver = _Resolver(ctx, sheet_name, sheet_part, shared_strings, cell_value)
    rels = ctx.rels(sheet_part)
    out: list[SheetObject] = []
    out += _guard(ctx, "comments", lambda: _comments(ctx, rels))
    children = [c for c in worksheet if isinstance(c.tag, str)] if worksheet is not None else []
    by_name: dict[str, list] = {}
    for c in children:
        by_name.setdefault(local(c.tag), []).append(c)
    for el in by_name.get("hyperlinks", []):
        out += _guard(ctx, "hyperlinks", lambda e=el: _hyperlinks(ctx, e, rels))
    for el in by_name.get("dataValidations", []):
        out += _guard(ctx, "data validations", lambda e=el: [
            _data_validation(ctx, dv, "main") for dv in _children(e, "dataValidation")])
    for el in by_name.get("conditionalFormatting", []):
        out += _guard(ctx, "conditional formatting",
                      lambda e=el: [_conditional_format(ctx, e, "main")])
    for el in by_name.get("extLst", []):
        out += _guard(ctx, "extension list", lambda e=el: _ext_objects(ctx, e))
    # tables (§18.3.1.95 tableParts), plus table relationships no tablePart names
    table_parts: list[str] = []
    for el in by_name.get("tableParts", []):
        for tp in _children(el, "tablePart"):
            part = ctx.target(rels, rel_attr(tp), ("table",), "tablePart")
            if part and part not in table_parts:
                table_parts.append(part)
    for rtype, target in rels.values():
        if rtype == "table" and target not in table_parts and not target.startswith("external:"):
            table_parts.append(target)
    for part in table_parts:
        out += _guard(ctx, f"table {part}", lambda p=part: _table(ctx, p))
    # pivot tables: the sheet's relationships of type pivotTable (§18.10, Part 1 §12.3.11)
    for rtype, target in sorted(rels.values()):
        if rtype == "pivotTable" and not target.startswith("external:"):
            out += _guard(ctx, f"pivot table {target}", lambda p=target: _pivot_table(ctx, p))
    # drawings (§18.3.1.36 drawing)
    drawing_parts: list[str] = []
    for el in by_name.get("drawing", []):
        part = ctx.target(rels, rel_attr(el), ("drawing",), "drawing")
        if part and part not in drawing_parts:
            drawing_parts.append(part)
    if worksheet is None:
        drawing_parts += [t for rt, t in rels.values() if rt == "drawing"
                          and not t.startswith("external:") and t not in drawing_parts]
    for part in drawing_parts:
        out += _guard(ctx, f"drawing {part}",
                      lambda p=part: _DrawingReader(ctx, p, resolver).read())
    return out


def read_chartsheet_objects(reader: PackageReader, chartsheet_part: str, sheet_name: str,
                            cell_value: CellValue | None = None,
                            issues: list | None = None,
                            shared_strings: list[str] | None = None) -> list[SheetObject]:
    """The charts (and any picture) of a chartsheet (§18.3.1.12 ``chartsheet``).

    The chartsheet's ``<drawing>`` names a drawing part, usually with one ``absoluteAnchor``, so
    ``ref`` is ``None``. Arguments are as for :func:`read_sheet_objects`.
    """
    ctx = _Ctx(reader, sheet_name, issues)
    resolver = _Resolver(ctx, sheet_name, None, shared_strings, cell_value)

    def run() -> list[SheetObject]:
        root = ctx.load(chartsheet_part, "chartsheet part")
        if root is None:
            return []
        rels = ctx.rels(chartsheet_part)
        parts = []
        for el in _children(root, "drawing"):
            part = ctx.target(rels, rel_attr(el), ("drawing",), "chartsheet drawing")
            if part and part not in parts:
                parts.append(part)
        out: list[SheetObject] = []
        for part in parts:
            out += _guard(ctx, f"drawing {part}",
                          lambda p=part: _DrawingReader(ctx, p, resolver).read())
        return out

    return _guard(ctx, f"chartsheet {chartsheet_part}", run)


def _defined_names(ctx: _Ctx, el, sheet_names: list[str]) -> list[SheetObject]:
    out = []
    for dn in _children(el, "definedName"):
        name = dn.get("name")
        refers_to = (dn.text or "").strip() or None
        local = _int(dn.get("localSheetId"))
        scope = sheet_names[local] if local is not None and 0 <= local < len(sheet_names) else None
        if local is not None and scope is None:
            ctx.warn("bad_defined_name_scope", f"defined name {name!r} is scoped to sheet "
                     f"index {local}, which does not exist")
        target_sheet, target_ref = _area_ref(refers_to)
        out.append(SheetObject("defined_name", scope, None, name, refers_to, {
            "refers_to": refers_to, "local_sheet_id": local, "scope_sheet": scope,
            "hidden": _bool(dn.get("hidden"), False),
            "builtin": bool(name and name.startswith("_xlnm.")),
            "comment": dn.get("comment"), "target_sheet": target_sheet, "target_ref": target_ref,
        }))
    return out


def _external_link(ctx: _Ctx, index: int, part: str | None) -> SheetObject:
    """One external link part (§18.14.7): its target is recorded, never opened."""
    details: dict[str, Any] = {
        "index": index, "part": part, "target": None, "link_type": None, "sheet_names": [],
        "dde_service": None, "dde_topic": None, "prog_id": None,
    }
    root = ctx.load(part, "external link part") if part else None
    if root is not None:
        rels = ctx.rels(part)
        for child in root:
            if not isinstance(child.tag, str):
                continue
            kind = local(child.tag)
            if kind not in ("externalBook", "ddeLink", "oleLink"):
                continue
            details["link_type"] = kind
            rid = rel_attr(child)
            if rid:
                rel = rels.get(rid)
                if rel is None:
                    ctx.warn("bad_relationship", f"external link {part} refers to relationship "
                             f"{rid!r}, which does not exist")
                else:
                    details["target"] = _strip_external(rel[1])
            names = _child(child, "sheetNames")
            if names is not None:
                details["sheet_names"] = [s.get("val") for s in _children(names, "sheetName")]
            details["dde_service"] = child.get("ddeService")
            details["dde_topic"] = child.get("ddeTopic")
            details["prog_id"] = child.get("progId")
            break
    if kind_target := details["target"]:
        text = kind_target
    elif details["dde_service"]:
        text = f"{details['dde_service']}|{details['dde_topic'] or ''}"
    else:
        text = None
    return SheetObject("external_link", None, None, text, text, details)


def read_workbook_objects(reader: PackageReader, workbook_part: str, workbook_root,
                          issues: list | None = None) -> list[SheetObject]:
    """Defined names (§18.2.6) and external links (§18.2.9, §18.14) of the workbook part.

    A sheet-scoped name (``localSheetId``) carries its scope sheet as ``sheet_name``. An external
    link's target (a path or URL of another workbook) is recorded from the external link part's
    relationships; nothing outside the package is opened.
    """
    ctx = _Ctx(reader, None, issues)
    if workbook_root is None:
        return []

    def run() -> list[SheetObject]:
        sheets_el = _child(workbook_root, "sheets")
        sheet_names = [s.get("name") or "" for s in _children(sheets_el, "sheet")] \
            if sheets_el is not None else []
        out: list[SheetObject] = []
        for el in _children(workbook_root, "definedNames"):
            out += _guard(ctx, "defined names", lambda e=el: _defined_names(ctx, e, sheet_names))
        rels = ctx.rels(workbook_part)
        seen: list[str] = []
        index = 0
        for el in _children(workbook_root, "externalReferences"):
            for er in _children(el, "externalReference"):
                index += 1
                part = ctx.target(rels, rel_attr(er), ("externalLink",), "externalReference")
                if part:
                    seen.append(part)
                out += _guard(ctx, f"external link {part}",
                              lambda i=index, p=part: [_external_link(ctx, i, p)])
        for rtype, target in rels.values():
            if rtype == "externalLink" and target not in seen:
                index += 1
                out += _guard(ctx, f"external link {target}",
                              lambda i=index, p=target: [_external_link(ctx, i, p)])
        return out

    return _guard(ctx, "workbook objects", run)
