"""The cells a chart series refers to, resolved without following any link: through a resolver
of the caller's, or by streaming the referenced worksheet parts of the same package.
"""

from __future__ import annotations

import re
from typing import Iterable

from lxml import etree

from extraction_assets.core.a1 import cell_ref, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.errors import ExtractionError
from extraction_assets.core.model import CellValue
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    clean_ref,
    find_sheet_parts,
    find_sheet_state,
    find_workbook_part,
    json_value,
    package_cache,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.strings import read_shared_strings
from extraction_assets.core.ooxml.worksheet import cell_children
from extraction_assets.core.ooxml.xml import XML_OPTS, local

#: Most cells resolved through the cell resolver for one chart.
MAX_RESOLVED_CELLS = 10_000
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


def area_ref(formula: str | None) -> tuple[str | None, str | None]:
    """(sheet, A1 range) of a formula naming exactly one plain area, else (None, None)."""
    areas = _parse_areas(formula, None)
    if not areas or len(areas) != 1:
        return None, None
    sheet, bounds = areas[0]
    return sheet, range_ref(*bounds)


class CellResolver:
    """Values of referenced cells: the caller's ``cell_value`` or a stream of the sheet part."""

    def __init__(self, ctx: ObjectContext, sheet_name: str | None, sheet_part: str | None,
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
            part = find_sheet_parts(self.ctx).get(sheet)
        for ref in refs:
            self._cache[(sheet, ref)] = None
        if not part or not self.ctx.reader.has(part):
            return
        if find_sheet_state(self.ctx, sheet) != "visible":
            self._hidden(f"the {find_sheet_state(self.ctx, sheet)} sheet {sheet!r}")
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
                        if xml_bool(el.get("hidden"), False):
                            hidden_cols.append((xml_int(el.get("min"), 0), xml_int(el.get("max"), 0)))
                        continue
                    if local(el.tag) == "row":
                        el.clear()
                        parent = el.getparent()
                        while el.getprevious() is not None:
                            del parent[0]
                        continue
                    ref = clean_ref(el.get("r"))
                    if ref in remaining:
                        col = parse_cell_ref(ref)[1]
                        row_el = el.getparent()
                        if (row_el is not None and xml_bool(row_el.get("hidden"), False)) or any(
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
        cache = package_cache(self.ctx.reader)
        if "shared_strings" not in cache:
            part = None
            for rtype, target in self.ctx.rels(find_workbook_part(self.ctx)).values():
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
            return [json_value(self._cache.get(c)) for c in cells]
        out = []
        for sheet, ref in cells:
            try:
                out.append(json_value(self.cell_value(sheet, ref)))
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
        idx = xml_int(v, -1)
        return strings[idx] if 0 <= idx < len(strings) else None
    if t == "b":
        return v.strip() in ("1", "true")
    try:
        return float(v)
    except ValueError:
        return v
