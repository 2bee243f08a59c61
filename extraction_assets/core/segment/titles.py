"""Titles of tables and the heading path of every block."""

from __future__ import annotations

from extraction_assets.core.blocks import RECORD_KINDS, Block, BlockKind
from extraction_assets.core.segment.rules import NOTE_RE, is_unit, reads_as_sentence


def attach_titles(blocks: list[Block]) -> dict[int, Block]:
    """Make a title line just above a table or form (<= 2 rows up, columns overlapping) its
    title, and a unit line there (or a text block whose ``unit`` is set: a caption's unit) its
    unit; make a lone cell that reads as a note or a unit line,
    or, without being a table's title, sits just under a table or reads as a sentence
    (:func:`reads_as_sentence`), ``text``. Returns {id(title block): its table}."""
    for block in blocks:
        if block.kind != BlockKind.TITLE or block.level is not None:
            continue
        if NOTE_RE.match(block.text):
            block.kind = BlockKind.TEXT
            block.reasons.append("note marker: text, not a title")
        elif is_unit(block.text):
            block.kind = BlockKind.TEXT
            block.reasons.append("unit line: text, not a title")
    tables = [b for b in blocks if b.kind in RECORD_KINDS]
    used: dict[int, Block] = {}

    def near_above(b: Block, table: Block) -> bool:
        return (b.max_row < table.min_row and table.min_row - b.max_row <= 2
                and not (b.max_col < table.min_col or b.min_col > table.max_col))

    for block in tables:
        candidates = [b for b in blocks if b.kind == BlockKind.TITLE and near_above(b, block)]
        if candidates:
            title = max(candidates, key=lambda b: (b.max_row, -b.min_col))
            block.title = title.text
            used[id(title)] = block
            block.reasons.append(f"title from {title.a1_range}")
        units = [b for b in blocks if b.kind == BlockKind.TEXT and near_above(b, block)
                 and (b.unit or is_unit(b.text))]
        if units:
            block.unit = units[-1].unit or units[-1].text
            block.reasons.append(f"unit line {units[-1].a1_range}: {block.unit}")
    for block in blocks:
        if block.kind != BlockKind.TITLE or block.level is not None or id(block) in used:
            continue
        above = [t for t in tables if t.max_row < block.min_row and block.min_row - t.max_row <= 2
                 and not (block.max_col < t.min_col or block.min_col > t.max_col)]
        if above:
            block.kind = BlockKind.TEXT
            block.reasons.append(f"note under the table {above[-1].a1_range}")
        elif reads_as_sentence(block.text):
            block.kind = BlockKind.TEXT
            block.reasons.append("a sentence: text, not a title")
    return used


def heading_paths(blocks: list[Block], titles: dict[int, Block]) -> None:
    """``heading_path`` of every block: sheet name, the nearest headings above (a heading
    replaces those of its level and deeper), then a table's own title if not in the path; a
    heading that only repeats the one before it (a title equal to the sheet name, case and
    spaces aside) is left out.

    A heading applies to blocks below it that reach its first column or further right; a
    heading that is a table's title applies only to blocks overlapping that table's columns
    (the title of a table on the left does not head a table on the right)."""
    headings = sorted((b for b in blocks if b.level is not None), key=lambda b: (b.min_row, b.min_col))
    scope: dict[int, tuple[int, float]] = {}
    for h in headings:
        table = titles.get(id(h))
        if table is None:
            scope[id(h)] = (h.min_col, float("inf"))
        else:
            scope[id(h)] = (min(h.min_col, table.min_col), max(h.max_col, table.max_col))
    for block in blocks:
        stack: list[Block] = []
        for h in headings:
            lo, hi = scope[id(h)]
            if h is block or h.max_row >= block.min_row or block.max_col < lo or block.min_col > hi:
                continue
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
        if block.level is not None:
            while stack and stack[-1].level >= block.level:
                stack.pop()
            stack.append(block)
        path = [block.sheet_name] + [h.text for h in stack]
        if block.kind in RECORD_KINDS and block.title and block.title not in path[1:]:
            path.append(block.title)
        block.heading_path = [t for i, t in enumerate(path)
                              if i == 0 or _same_heading(t) != _same_heading(path[i - 1])]
        if block.kind in RECORD_KINDS and len(path) > 1:
            block.reasons.append("heading path " + " / ".join(path))


def _same_heading(text: str) -> str:
    """``text`` as compared with its neighbour in a heading path: case and spaces aside."""
    return " ".join(text.split()).casefold()
