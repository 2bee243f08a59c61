"""Excel tables (ListObjects, ECMA-376 Part 1 §18.5.1.2 ``table``)."""

from __future__ import annotations

from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.xml import child_element, child_elements


def read_table(ctx: ObjectContext, part: str) -> list[SheetObject]:
    """One ListObject part (§18.5.1.2 ``table``)."""
    root = ctx.load_once(part, "table part")
    if root is None:
        return []
    cols_el = child_element(root, "tableColumns")
    column_details = []
    for col in child_elements(cols_el, "tableColumn") if cols_el is not None else []:
        calc = child_element(col, "calculatedColumnFormula")
        column_details.append({
            "name": col.get("name"),
            "totals_row_function": col.get("totalsRowFunction"),
            "totals_row_label": col.get("totalsRowLabel"),
            "calculated_formula": calc.text if calc is not None else None,
        })
    style = child_element(root, "tableStyleInfo")
    name = root.get("name") or root.get("displayName")
    ref = root.get("ref")
    columns = [c["name"] for c in column_details]
    details = {
        "display_name": root.get("displayName"),
        "id": xml_int(root.get("id")),
        "header_row_count": xml_int(root.get("headerRowCount"), 1),
        "totals_row_count": xml_int(root.get("totalsRowCount"), 0),
        "totals_row_shown": xml_bool(root.get("totalsRowShown"), True),
        "columns": columns,
        "column_details": column_details,
        "table_type": root.get("tableType") or "worksheet",
        "style": style.get("name") if style is not None else None,
        "has_autofilter": child_element(root, "autoFilter") is not None,
        "part": part,
    }
    text = f"Table {details['display_name'] or name} {ref or ''}".rstrip()
    if columns:
        text += ": " + " | ".join(c or "" for c in columns)
    return [SheetObject("table", ctx.sheet_name, ref.replace("$", "") if ref else ref, name,
                        text, details)]
