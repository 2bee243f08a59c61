"""Data validations (§18.3.1.32/§18.3.1.33) and conditional formatting (§18.3.1.18, ``cfRule``
§18.3.1.10), including the Office 2010 ``x14`` copies in ``<extLst>``.
"""

from __future__ import annotations

from typing import Any

from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.xml import child_element, child_elements, local


def _formula_text(el) -> str | None:
    """Text of ``formula1`` (plain text, or an ``xm:f`` child in the x14 form)."""
    if el is None:
        return None
    f = child_element(el, "f")
    if f is not None:
        return f.text
    return el.text


def _sqref(el) -> str | None:
    sq = el.get("sqref")
    if sq is None:
        child = child_element(el, "sqref")
        sq = child.text if child is not None else None
    return " ".join(sq.split()) if sq else sq


def read_data_validation(ctx: ObjectContext, dv, source: str) -> SheetObject:
    details = {
        "type": dv.get("type") or "none",
        "operator": dv.get("operator") or ("between" if (dv.get("type") or "none") not in
                                            ("none", "list", "custom") else None),
        "formula1": _formula_text(child_element(dv, "formula1")),
        "formula2": _formula_text(child_element(dv, "formula2")),
        "allow_blank": xml_bool(dv.get("allowBlank"), False),
        "show_drop_down": xml_bool(dv.get("showDropDown"), False),
        "show_input_message": xml_bool(dv.get("showInputMessage"), False),
        "show_error_message": xml_bool(dv.get("showErrorMessage"), False),
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
        sub = child_element(rule, name)
        if sub is not None:
            extra[name] = {
                "cfvo": [{"type": c.get("type"), "val": c.get("val") if c.get("val") is not None
                          else _formula_text(c)} for c in child_elements(sub, "cfvo")],
            }
            if sub.get("iconSet"):
                extra[name]["icon_set"] = sub.get("iconSet")
    return {
        "type": rule.get("type"),
        "priority": xml_int(rule.get("priority")),
        "operator": rule.get("operator"),
        "formulas": formulas,
        "dxf_id": xml_int(rule.get("dxfId")),
        "stop_if_true": xml_bool(rule.get("stopIfTrue"), False),
        "text": rule.get("text"),
        "extra": extra,
    }


def read_conditional_format(ctx: ObjectContext, cf, source: str) -> SheetObject:
    rules = [_cf_rule(r) for r in child_elements(cf, "cfRule")]
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
        "rules": rules, "pivot": xml_bool(cf.get("pivot"), False), "source": source,
    })


def read_ext_objects(ctx: ObjectContext, ext_lst) -> list[SheetObject]:
    """Office 2010 ``x14`` data validations and conditional formats held in ``<extLst>``."""
    out = []
    for ext in child_elements(ext_lst, "ext"):
        for block in ext:
            if not isinstance(block.tag, str):
                continue
            name = local(block.tag)
            if name == "conditionalFormattings":
                for cf in child_elements(block, "conditionalFormatting"):
                    out.append(read_conditional_format(ctx, cf, "x14"))
            elif name == "dataValidations":
                for dv in child_elements(block, "dataValidation"):
                    out.append(read_data_validation(ctx, dv, "x14"))
    return out
