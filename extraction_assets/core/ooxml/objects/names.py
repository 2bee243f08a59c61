"""Defined names (§18.2.5/§18.2.6) and external links (§18.2.9, §18.14): recorded, never
followed.
"""

from __future__ import annotations

from typing import Any

from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    strip_external,
    xml_bool,
    xml_int,
)
from extraction_assets.core.ooxml.objects.resolve import area_ref
from extraction_assets.core.ooxml.rels import rel_attr
from extraction_assets.core.ooxml.xml import child_element, child_elements, local


def read_defined_names(ctx: ObjectContext, el, sheet_names: list[str]) -> list[SheetObject]:
    out = []
    for dn in child_elements(el, "definedName"):
        name = dn.get("name")
        refers_to = (dn.text or "").strip() or None
        local = xml_int(dn.get("localSheetId"))
        scope = sheet_names[local] if local is not None and 0 <= local < len(sheet_names) else None
        if local is not None and scope is None:
            ctx.warn("bad_defined_name_scope", f"defined name {name!r} is scoped to sheet "
                     f"index {local}, which does not exist")
        target_sheet, target_ref = area_ref(refers_to)
        out.append(SheetObject("defined_name", scope, None, name, refers_to, {
            "refers_to": refers_to, "local_sheet_id": local, "scope_sheet": scope,
            "hidden": xml_bool(dn.get("hidden"), False),
            "builtin": bool(name and name.startswith("_xlnm.")),
            "comment": dn.get("comment"), "target_sheet": target_sheet, "target_ref": target_ref,
        }))
    return out


def read_external_link(ctx: ObjectContext, index: int, part: str | None) -> SheetObject:
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
                    details["target"] = strip_external(rel[1])
            names = child_element(child, "sheetNames")
            if names is not None:
                details["sheet_names"] = [s.get("val") for s in child_elements(names, "sheetName")]
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
