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
limits skips that object and appends an :class:`~extraction_assets.core.model.Issue` (stage
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

from extraction_assets.core.model import CellValue, SheetObject
from extraction_assets.core.ooxml.objects.comments import read_comments
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    guarded,
)
from extraction_assets.core.ooxml.objects.drawings import DrawingReader
from extraction_assets.core.ooxml.objects.hyperlinks import read_hyperlinks
from extraction_assets.core.ooxml.objects.names import read_defined_names, read_external_link
from extraction_assets.core.ooxml.objects.pivots import read_pivot_table
from extraction_assets.core.ooxml.objects.resolve import CellResolver
from extraction_assets.core.ooxml.objects.tables import read_table
from extraction_assets.core.ooxml.objects.validation import (
    read_conditional_format,
    read_data_validation,
    read_ext_objects,
)
from extraction_assets.core.ooxml.rels import rel_attr
from extraction_assets.core.ooxml.xml import child_element, child_elements, local
from extraction_assets.core.package import PackageReader


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
        issues: a list receiving an :class:`~extraction_assets.core.model.Issue` per skipped object.

    Returns:
        Comments (sorted by cell), hyperlinks, data validations, conditional formats, tables,
        then drawing objects (charts and pictures) in drawing order. ``<legacyDrawing>`` (VML) is
        not read: it only holds the comment boxes and form controls' shapes.
    """
    ctx = ObjectContext(reader, sheet_name, issues)
    resolver = CellResolver(ctx, sheet_name, sheet_part, shared_strings, cell_value)
    rels = ctx.rels(sheet_part)
    out: list[SheetObject] = []
    out += guarded(ctx, "comments", lambda: read_comments(ctx, rels))
    children = [c for c in worksheet if isinstance(c.tag, str)] if worksheet is not None else []
    by_name: dict[str, list] = {}
    for c in children:
        by_name.setdefault(local(c.tag), []).append(c)
    for el in by_name.get("hyperlinks", []):
        out += guarded(ctx, "hyperlinks", lambda e=el: read_hyperlinks(ctx, e, rels))
    for el in by_name.get("dataValidations", []):
        out += guarded(ctx, "data validations", lambda e=el: [
            read_data_validation(ctx, dv, "main") for dv in child_elements(e, "dataValidation")])
    for el in by_name.get("conditionalFormatting", []):
        out += guarded(ctx, "conditional formatting",
                      lambda e=el: [read_conditional_format(ctx, e, "main")])
    for el in by_name.get("extLst", []):
        out += guarded(ctx, "extension list", lambda e=el: read_ext_objects(ctx, e))
    # tables (§18.3.1.95 tableParts), plus table relationships no tablePart names
    table_parts: list[str] = []
    for el in by_name.get("tableParts", []):
        for tp in child_elements(el, "tablePart"):
            part = ctx.target(rels, rel_attr(tp), ("table",), "tablePart")
            if part and part not in table_parts:
                table_parts.append(part)
    for rtype, target in rels.values():
        if rtype == "table" and target not in table_parts and not target.startswith("external:"):
            table_parts.append(target)
    for part in table_parts:
        out += guarded(ctx, f"table {part}", lambda p=part: read_table(ctx, p))
    # pivot tables: the sheet's relationships of type pivotTable (§18.10, Part 1 §12.3.11)
    for rtype, target in sorted(rels.values()):
        if rtype == "pivotTable" and not target.startswith("external:"):
            out += guarded(ctx, f"pivot table {target}", lambda p=target: read_pivot_table(ctx, p))
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
        out += guarded(ctx, f"drawing {part}",
                      lambda p=part: DrawingReader(ctx, p, resolver).read())
    return out


def read_chartsheet_objects(reader: PackageReader, chartsheet_part: str, sheet_name: str,
                            cell_value: CellValue | None = None,
                            issues: list | None = None,
                            shared_strings: list[str] | None = None) -> list[SheetObject]:
    """The charts (and any picture) of a chartsheet (§18.3.1.12 ``chartsheet``).

    The chartsheet's ``<drawing>`` names a drawing part, usually with one ``absoluteAnchor``, so
    ``ref`` is ``None``. Arguments are as for :func:`read_sheet_objects`.
    """
    ctx = ObjectContext(reader, sheet_name, issues)
    resolver = CellResolver(ctx, sheet_name, None, shared_strings, cell_value)

    def run() -> list[SheetObject]:
        root = ctx.load(chartsheet_part, "chartsheet part")
        if root is None:
            return []
        rels = ctx.rels(chartsheet_part)
        parts = []
        for el in child_elements(root, "drawing"):
            part = ctx.target(rels, rel_attr(el), ("drawing",), "chartsheet drawing")
            if part and part not in parts:
                parts.append(part)
        out: list[SheetObject] = []
        for part in parts:
            out += guarded(ctx, f"drawing {part}",
                          lambda p=part: DrawingReader(ctx, p, resolver).read())
        return out

    return guarded(ctx, f"chartsheet {chartsheet_part}", run)


def read_workbook_objects(reader: PackageReader, workbook_part: str, workbook_root,
                          issues: list | None = None) -> list[SheetObject]:
    """Defined names (§18.2.6) and external links (§18.2.9, §18.14) of the workbook part.

    A sheet-scoped name (``localSheetId``) carries its scope sheet as ``sheet_name``. An external
    link's target (a path or URL of another workbook) is recorded from the external link part's
    relationships; nothing outside the package is opened.
    """
    ctx = ObjectContext(reader, None, issues)
    if workbook_root is None:
        return []

    def run() -> list[SheetObject]:
        sheets_el = child_element(workbook_root, "sheets")
        sheet_names = [s.get("name") or "" for s in child_elements(sheets_el, "sheet")] \
            if sheets_el is not None else []
        out: list[SheetObject] = []
        for el in child_elements(workbook_root, "definedNames"):
            out += guarded(ctx, "defined names", lambda e=el: read_defined_names(ctx, e, sheet_names))
        rels = ctx.rels(workbook_part)
        seen: list[str] = []
        index = 0
        for el in child_elements(workbook_root, "externalReferences"):
            for er in child_elements(el, "externalReference"):
                index += 1
                part = ctx.target(rels, rel_attr(er), ("externalLink",), "externalReference")
                if part:
                    seen.append(part)
                out += guarded(ctx, f"external link {part}",
                              lambda i=index, p=part: [read_external_link(ctx, i, p)])
        for rtype, target in rels.values():
            if rtype == "externalLink" and target not in seen:
                index += 1
                out += guarded(ctx, f"external link {target}",
                              lambda i=index, p=target: [read_external_link(ctx, i, p)])
        return out

    return guarded(ctx, "workbook objects", run)
