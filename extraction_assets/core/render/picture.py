"""Pictures of a sheet's segmentation: the grid with every block drawn as a labelled rectangle,
as SVG (one file per sheet) so an auditor can see at a glance what was found."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from extraction_assets.core.a1 import column_letter, parse_range
from extraction_assets.core.blocks import KIND_FACTS

_CELL_W, _CELL_H, _MARGIN = 64, 20, 36
#: Largest drawing (pixels) before cells are scaled down.
MAX_WIDTH, MAX_HEIGHT = 1600, 2400


def segmentation_svg(sheet_name: str, used_range: str | None, blocks: list[dict]) -> str:
    """SVG text of one sheet: column letters, row numbers, grid lines (when the extent is small
    enough to read) and one ``<rect class="block KIND">`` per block with a ``KIND A1-range``
    label. ``blocks`` are rows of the ``blocks`` table (``kind``, ``min_row``, ``min_col``,
    ``max_row``, ``max_col``, ``a1_range``); rows and columns are 1-based."""
    bounds = [parse_range(used_range)] if used_range else []
    bounds += [(b["min_row"], b["min_col"], b["max_row"], b["max_col"]) for b in blocks]
    r1 = min((b[0] for b in bounds), default=1)
    c1 = min((b[1] for b in bounds), default=1)
    r2 = max((b[2] for b in bounds), default=1)
    c2 = max((b[3] for b in bounds), default=1)
    n_rows, n_cols = r2 - r1 + 1, c2 - c1 + 1
    cw = min(_CELL_W, max(2.0, (MAX_WIDTH - _MARGIN) / n_cols))
    ch = min(_CELL_H, max(1.0, (MAX_HEIGHT - _MARGIN) / n_rows))
    width, height = _MARGIN + n_cols * cw, _MARGIN + n_rows * ch

    def x(col: int) -> float:
        return _MARGIN + (col - c1) * cw

    def y(row: int) -> float:
        return _MARGIN + (row - r1) * ch

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height + 18:.0f}" '
        f'viewBox="0 0 {width:.0f} {height + 18:.0f}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(sheet_name)}: {len(blocks)} blocks</title>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height + 18:.0f}" fill="#ffffff"/>',
    ]
    if n_cols <= 60 and n_rows <= 200:
        for col in range(c1, c2 + 2):
            out.append(f'<line class="grid" x1="{x(col):.1f}" y1="{_MARGIN}" x2="{x(col):.1f}" '
                       f'y2="{height:.1f}" stroke="#d0d7de" stroke-width="0.5"/>')
        for row in range(r1, r2 + 2):
            out.append(f'<line class="grid" x1="{_MARGIN}" y1="{y(row):.1f}" x2="{width:.1f}" '
                       f'y2="{y(row):.1f}" stroke="#d0d7de" stroke-width="0.5"/>')
    step_c = max(1, int(24 / cw) + 1)
    for col in range(c1, c2 + 1, step_c):
        out.append(f'<text x="{x(col) + 2:.1f}" y="{_MARGIN - 6}" fill="#57606a">'
                   f"{column_letter(col)}</text>")
    step_r = max(1, int(14 / ch) + 1)
    for row in range(r1, r2 + 1, step_r):
        out.append(f'<text x="2" y="{y(row) + min(ch, 14) - 3:.1f}" fill="#57606a">{row}</text>')
    for b in blocks:
        facts = KIND_FACTS.get(b["kind"])
        stroke = facts.colour if facts else "#24292f"
        fill = stroke + "22"
        bx, by = x(b["min_col"]), y(b["min_row"])
        bw = (b["max_col"] - b["min_col"] + 1) * cw
        bh = (b["max_row"] - b["min_row"] + 1) * ch
        label = f"{b['kind']} {b['a1_range']}"
        out.append(f'<rect class={quoteattr("block " + b["kind"])} x="{bx:.1f}" y="{by:.1f}" '
                   f'width="{bw:.1f}" height="{bh:.1f}" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="2"><title>{escape(label)}</title></rect>')
        out.append(f'<text x="{bx + 3:.1f}" y="{by + 12:.1f}" fill="{stroke}" '
                   f'font-weight="bold">{escape(label)}</text>')
    out.append(f'<text x="2" y="{height + 14:.0f}" fill="#24292f">{escape(sheet_name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
