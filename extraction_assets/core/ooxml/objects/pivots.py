"""Pivot tables (§18.10.1.73 ``pivotTableDefinition``): where Excel drew them and how their
rows are laid out.
"""

from __future__ import annotations

from extraction_assets.core.a1 import parse_range, range_ref
from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.xml import child_element, child_elements


def read_pivot_table(ctx: ObjectContext, part: str) -> list[SheetObject]:
    """One pivot table part (§18.10.1.73 ``pivotTableDefinition``): its ``location``
    (§18.10.1.49), fields and the type of each body row (``rowItems``, §18.10.1.84)."""
    root = ctx.load_once(part, "pivot table part")
    if root is None:
        return []
    location = child_element(root, "location")
    ref = _clean_range(location.get("ref")) if location is not None else None
    if not ref:
        ctx.warn("malformed_part", f"pivot table part {part} has no location; not used")
        return []

    def count(name: str) -> int:
        el = child_element(root, name)
        return len(child_elements(el, "field")) if el is not None else 0

    data_el = child_element(root, "dataFields")
    items_el = child_element(root, "rowItems")
    details = {
        "first_header_row": xml_int(location.get("firstHeaderRow"), 0),
        "first_data_row": xml_int(location.get("firstDataRow"), 0),
        "first_data_col": xml_int(location.get("firstDataCol"), 0),
        "row_page_count": xml_int(location.get("rowPageCount"), 0),
        "col_page_count": xml_int(location.get("colPageCount"), 0),
        "row_fields": count("rowFields"),
        "col_fields": count("colFields"),
        "data_fields": [d.get("name") for d in child_elements(data_el, "dataField")]
        if data_el is not None else [],
        "row_grand_totals": xml_bool(root.get("rowGrandTotals"), True),
        "col_grand_totals": xml_bool(root.get("colGrandTotals"), True),
        "row_items": [i.get("t") or "data" for i in child_elements(items_el, "i")]
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
