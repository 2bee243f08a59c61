"""Charts and pictures as blocks: they float over a sheet's cells, so they are found from the
sheet's drawing objects (ECMA-376 Part 1 §20.5 anchors), not from its cells."""

from __future__ import annotations

from extraction_assets.core.a1 import parse_range
from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.model import SheetObject


def drawing_blocks(sheet_index: int, sheet_name: str, objects: list[SheetObject]) -> list[Block]:
    """``chart`` and ``image`` blocks of one sheet from its sheet objects: the A1 range of the
    drawing's anchor (from-cell to to-cell when known; ``A1`` for an absolute anchor), the
    chart's text rendering (title, series, category/value pairs) or the picture's alt text, and
    its name as title. Objects of other kinds, and anchors that are not valid A1, are skipped."""
    out = []
    for obj in objects:
        if obj.kind not in ("chart", "picture"):
            continue
        anchor = obj.ref or "A1"
        to = obj.details.get("anchor_to")
        try:
            r1, c1, _, _ = parse_range(anchor)
            r2, c2 = (parse_range(to)[2:] if to else (r1, c1))
        except ValueError:
            continue
        kind = BlockKind.CHART if obj.kind == "chart" else BlockKind.IMAGE
        out.append(Block(sheet_index, sheet_name, kind, r1, c1, max(r1, r2), max(c1, c2), 0,
                         title=obj.name, heading_path=[sheet_name], text=obj.text or obj.name or "",
                         reasons=[f"{obj.kind} anchored at {anchor}"]))
    return out
