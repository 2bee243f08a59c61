"""Streaming reader of SpreadsheetML packages (``.xlsx`` / ``.xlsm``, Transitional and Strict).

The reader walks the package the way ECMA-376 Part 1 describes it: ``_rels/.rels`` names the
workbook part (§12.3.23), the workbook part lists the sheets and their relationships (§18.2.27),
the shared string table (§18.4.9) and the stylesheet (§18.8.39) are read once, and each worksheet
part (§18.3.1.99) is parsed with ``lxml.etree.iterparse``: elements are cleared as soon as they
are read, so memory grows with the non-empty cells of the sheet being read, never with the
declared ``<dimension>`` or with empty ``<row>`` elements.

Namespaces are matched by local name, so Strict OOXML (``purl.oclc.org``) and non-standard
prefixes read the same as Transitional. No DTD is loaded, no entity is resolved and no network
access is made by the XML parser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

import pyarrow as pa

from extraction_assets.core.a1 import MAX_COL, cell_ref, parse_cell_ref, parse_range, range_ref
from extraction_assets.core.errors import CorruptWorkbookError, LimitExceededError
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import Issue, ParsedSheet, SheetInfo, Workbook
from extraction_assets.core.ooxml.objects import (
    read_chartsheet_objects,
    read_sheet_objects,
    read_workbook_objects,
)
from extraction_assets.core.ooxml.rels import parse_part, read_rels, rel_attr
from extraction_assets.core.ooxml.strings import RichString, read_shared_strings
from extraction_assets.core.ooxml.styles import read_styles, read_theme_colors
from extraction_assets.core.ooxml.worksheet import WorksheetReader, open_stream
from extraction_assets.core.ooxml.xml import local
from extraction_assets.core.package import PackageReader
from extraction_assets.core.sniff import Sniffed

REL_OFFICE_DOCUMENT = "officeDocument"


@dataclass(kw_only=True)
class OoxmlWorkbook(Workbook):
    """A workbook read from its OOXML package (ECMA-376): the workbook-level facts plus a lazy,
    per-sheet cell stream.

    Use :meth:`iter_sheets` to read the sheets one at a time; only the current sheet's cells are
    held in memory. The shared string table is read on first use (:attr:`shared_strings`), so
    a caller that needs only the workbook-level facts (sheet list, date system, flags) does
    not parse it.
    """

    reader: PackageReader
    #: the shared string table's part (``xl/sharedStrings.xml`` as the workbook's
    #: relationships name it), ``None`` when the package has none
    shared_strings_part: str | None

    def iter_sheets(self) -> Iterator[ParsedSheet]:
        """Yield one :class:`ParsedSheet` per sheet, in workbook order.

        Chartsheets, dialog sheets and sheets whose part is missing yield no cells. A worksheet
        whose XML is damaged yields the cells read so far and records an ``extraction_issues``
        row instead of failing the workbook. A sheet whose part an earlier sheet already read
        (two ``<sheet>`` entries sharing one part, which Excel never writes) yields no cells and
        a ``shared_sheet_part`` warning. Each sheet's objects (comments, hyperlinks,
        validations, conditional formats, tables, charts, pictures) are in ``sheet.objects``;
        a damaged optional part becomes an issue, never an exception.

        Raises:
            LimitExceededError: more cells than ``limits.max_cells`` or more bytes of cell text
                than ``limits.max_text_bytes`` in the workbook, more merged ranges than
                ``limits.max_merged_ranges`` or more than ``limits.max_tree_bytes`` of XML
                outside the cells on one sheet.
            CorruptWorkbookError, HostileContentError: the shared string table cannot be read
                (see :attr:`shared_strings`; it is read before the first sheet, since every
                worksheet depends on it).
        """
        self.shared_strings  # noqa: B018 - read (or refused) before the first sheet
        budget = Budget(self.limits)
        read_by: dict[str, str] = {}
        for info in self.sheets:
            sheet = ParsedSheet(info)
            if info.part and info.part.lower() in read_by:
                self.issues.append(Issue(
                    "parsed_sheets", info.name, None, "warning", "shared_sheet_part",
                    f"sheet {info.name!r} has the part of sheet {read_by[info.part.lower()]!r} "
                    f"({info.part}); it is read once, for that sheet"))
            elif info.kind == "worksheet" and info.part and self.reader.has(info.part):
                read_by[info.part.lower()] = info.name
                frame = None
                try:
                    frame = self._read_worksheet(sheet, budget)
                except CorruptWorkbookError as exc:
                    self.issues.append(
                        Issue("parsed_sheets", info.name, None, "error", exc.code, exc.message)
                    )
                sheet.objects = read_sheet_objects(self.reader, info.part, info.name, frame,
                                                   self.shared_strings, issues=self.issues)
            elif info.kind == "chartsheet" and info.part and self.reader.has(info.part):
                read_by[info.part.lower()] = info.name
                sheet.objects = read_chartsheet_objects(self.reader, info.part, info.name,
                                                        issues=self.issues,
                                                        shared_strings=self.shared_strings)
            elif info.kind == "worksheet":
                self.issues.append(
                    Issue("parsed_sheets", info.name, None, "warning", "missing_sheet_part",
                          f"sheet {info.name!r} has no readable worksheet part")
                )
            yield sheet

    @cached_property
    def shared_strings(self) -> list[str]:
        """The shared string table (ECMA-376 Part 1 §18.4.9, ``sst``), read on first use: a
        :class:`~.strings.SharedStrings`, empty when there is no such part.

        A string longer than ``limits.max_cell_chars`` is cut there, with a
        ``cell_text_truncated`` warning.

        Raises:
            CorruptWorkbookError: the part is not well-formed XML.
            HostileContentError: the part declares a DTD.
        """
        strings = read_shared_strings(self.reader, self.shared_strings_part)
        if strings.truncated:
            self.issues.append(Issue(
                "parsed_sheets", None, None, "warning", "cell_text_truncated",
                f"{len(strings.truncated)} shared strings longer than "
                f"{self.limits.max_cell_chars} characters cut there (the first is string "
                f"{strings.truncated[0]})"))
        return strings

    @property
    def rich_strings(self) -> list[RichString]:
        """The shared strings that have rich-text runs (§18.4.4) or phonetic runs (§18.4.6),
        in index order (see :class:`~.strings.RichString`); empty when none."""
        return getattr(self.shared_strings, "rich", [])

    @cached_property
    def shared_strings_array(self) -> pa.Array:
        """The shared string table as an Arrow array (built once per workbook)."""
        return pa.array(self.shared_strings, pa.string())

    def close(self) -> None:
        """Release the package."""
        self.reader.close()

    def _read_worksheet(self, sheet: ParsedSheet, budget: Budget):
        """Read a worksheet's cells and facts into ``sheet``; returns its frame element."""
        name = sheet.info.name
        reader = WorksheetReader(open_stream(self.reader, sheet.info.part), self.shared_strings,
                                 budget, self.shared_strings_array)
        try:
            reader.read()
        finally:
            for ref, code, message in reader.issues.items:
                self.issues.append(Issue("parsed_sheets", name, ref, "warning", code, message))
            if reader.cells is not None:
                sheet.cells = reader.cells
            sheet.hidden_rows = sorted(set(reader.hidden_rows))
            sheet.row_heights = dict(sorted(reader.row_heights.items()))
        self._read_frame(sheet, reader.frame)
        return reader.frame

    def _read_frame(self, sheet: ParsedSheet, frame) -> None:
        """Sheet facts from the worksheet element without its cells."""
        name = sheet.info.name
        hidden_columns: set[int] = set()
        for el in frame.iter():
            if not isinstance(el.tag, str):
                continue
            tag = local(el.tag)
            if tag == "mergeCell":
                ref = el.get("ref")
                try:
                    sheet.merged_ranges.append(range_ref(*parse_range(ref or "")))
                except ValueError:
                    self.issues.append(Issue("parsed_sheets", name, ref, "warning",
                                             "bad_merged_range", f"merged range {ref!r} is not valid"))
                if len(sheet.merged_ranges) > self.limits.max_merged_ranges:
                    raise LimitExceededError(
                        f"sheet {name!r} has more than {self.limits.max_merged_ranges} merged ranges")
            elif tag == "dimension":
                sheet.info.declared_dimension = el.get("ref")
            elif tag == "col":
                try:
                    first = max(int(el.get("min") or 1), 1)
                    last = min(int(el.get("max") or first), MAX_COL)
                    width = float(el.get("width")) if el.get("width") else None
                except ValueError:
                    continue
                if el.get("hidden") in ("1", "true"):
                    hidden_columns.update(range(first, last + 1))
                if width is not None and math.isfinite(width) and first <= last:
                    sheet.column_widths.append((first, last, width))
            elif tag == "pane" and el.get("state") in ("frozen", "frozenSplit"):
                try:
                    sheet.frozen_pane = _frozen_cell(el)
                except (ValueError, OverflowError):
                    self.issues.append(Issue(
                        "parsed_sheets", name, None, "warning", "bad_pane",
                        "the frozen pane names no cell of the sheet (topLeftCell "
                        f"{el.get('topLeftCell')!r}, xSplit {el.get('xSplit')!r}, ySplit "
                        f"{el.get('ySplit')!r}); not used"))
        sheet.hidden_columns = sorted(hidden_columns)


def _frozen_cell(pane) -> str:
    """The top-left scrolling cell of a frozen ``<pane>`` (§18.3.1.66): ``topLeftCell``, else
    the cell after the ``ySplit`` rows and ``xSplit`` columns frozen.

    Raises:
        ValueError, OverflowError: it is no cell of a sheet.
    """
    ref = pane.get("topLeftCell") or cell_ref(int(float(pane.get("ySplit") or 0)) + 1,
                                              int(float(pane.get("xSplit") or 0)) + 1)
    return cell_ref(*parse_cell_ref(ref))


SHEET_KINDS = {
    "worksheet": "worksheet", "chartsheet": "chartsheet", "dialogsheet": "dialogsheet",
    "xlMacrosheet": "macrosheet", "xlIntlMacrosheet": "macrosheet",
}


def open_ooxml(data: bytes, sniffed: Sniffed, limits: Limits, *, filename: str | None = None,
               passwords: Sequence[str] = ()) -> OoxmlWorkbook:
    """Open an OOXML package (``xlsx``/``xlsm``, decrypted already) and read its workbook-level
    parts: the sheet list, styles, theme colours and workbook objects (cells are read per sheet
    by :meth:`OoxmlWorkbook.iter_sheets`). ``sniffed.has_macros`` marks a VBA project found by
    the sniffer; ``filename`` and ``passwords`` are not used (every reader of the format table,
    :mod:`~extraction_assets.core.formats`, takes them).

    Raises:
        CorruptWorkbookError: missing ``[Content_Types].xml`` or workbook part, malformed
            workbook-level XML.
        HostileContentError: a part declares a DTD.
        LimitExceededError: the package or the sheet list exceeds ``limits``.
    """
    reader = PackageReader(data, limits)
    try:
        return _read_package(reader, sniffed.has_macros, limits)
    except BaseException:
        reader.close()
        raise


def _read_package(reader: PackageReader, has_macros: bool, limits: Limits) -> OoxmlWorkbook:
    if not reader.has("[Content_Types].xml"):
        raise CorruptWorkbookError("the package has no [Content_Types].xml part")
    workbook_part = None
    for rtype, target in read_rels(reader, "").values() if reader.has("_rels/.rels") else []:
        if rtype == REL_OFFICE_DOCUMENT and not target.startswith("external:"):
            workbook_part = target
    if workbook_part is None or not reader.has(workbook_part):
        workbook_part = "xl/workbook.xml"
    if not reader.has(workbook_part):
        raise CorruptWorkbookError("the package has no workbook part (xl/workbook.xml)")
    root = parse_part(reader, workbook_part)
    rels = read_rels(reader, workbook_part)
    by_type: dict[str, str] = {}
    for rtype, target in rels.values():
        by_type.setdefault(rtype, target)
    issues: list[Issue] = []
    date1904 = False
    sheets: list[SheetInfo] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = local(el.tag)
        if tag == "workbookPr" and "date1904" in el.attrib:  # not x15:workbookPr's
            date1904 = el.get("date1904") in ("1", "true")
        elif tag == "sheet":
            if len(sheets) >= limits.max_sheets:
                raise LimitExceededError(f"workbook has more than {limits.max_sheets} sheets")
            rid = rel_attr(el)
            rtype, target = rels.get(rid or "", ("", None))
            kind = SHEET_KINDS.get(rtype, "worksheet" if target else "unknown")
            name = el.get("name") or f"Sheet{len(sheets) + 1}"
            if target is None:
                issues.append(Issue("parsed_sheets", name, None, "warning", "missing_sheet_part",
                                    f"sheet {name!r} has no relationship to a sheet part"))
            sheets.append(SheetInfo(
                index=len(sheets) + 1, name=name, visibility=el.get("state") or "visible",
                kind=kind, part=target if target and not target.startswith("external:") else None,
            ))
    styles, indexed = read_styles(reader, by_type.get("styles"), issues)
    objects = read_workbook_objects(reader, workbook_part, root, issues=issues)
    return OoxmlWorkbook(
        reader=reader, sheets=sheets, styles=styles, objects=objects,
        shared_strings_part=by_type.get("sharedStrings"),
        date1904=date1904, theme_colors=read_theme_colors(reader, by_type.get("theme")),
        indexed_colors=indexed, has_macros=has_macros or "vbaProject" in by_type,
        has_external_links="externalLink" in by_type, issues=issues, limits=limits,
    )
