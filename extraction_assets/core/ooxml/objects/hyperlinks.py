"""Hyperlinks (§18.3.1.47): external targets from the sheet's relationships, recorded, never
followed.
"""

from __future__ import annotations

from extraction_assets.core.model import SheetObject
from extraction_assets.core.ooxml.objects.common import (
    ObjectContext,
    strip_external,
)
from extraction_assets.core.ooxml.rels import rel_attr
from extraction_assets.core.ooxml.xml import child_elements


def read_hyperlinks(ctx: ObjectContext, el, rels: dict) -> list[SheetObject]:
    out = []
    for h in child_elements(el, "hyperlink"):
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
                target = strip_external(rel[1])
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
