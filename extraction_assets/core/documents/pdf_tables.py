"""Tables on the text-layer pages of a PDF, found with pdfplumber (pdfminer.six; no model).

**Ruled tables** are pdfplumber's table finder with its ``lines`` strategy: the page's lines and
rectangles cut it into cells; a cell spanning several columns or rows of the grid becomes a
merged range. A box with one cell (a framed paragraph) is no table.

**Unruled tables** (columns kept apart by white space only) are found here first, since
pdfplumber's ``text`` strategy run over a whole page makes a table of its prose too: the
page's words (outside ruled tables) are grouped into lines, each line cut into segments where
two words are more than :data:`COLUMN_GAP` font sizes apart. A run of at least
:data:`MIN_ROWS` lines of two or more segments, each within :data:`LINE_GAP` line heights of
the one above, is a table area when some x-range stays white on every line of it (a column
gap) and its segments are short (median :data:`MAX_CELL_WORDS` words or fewer: two columns of
prose are no table). Within that area pdfplumber's ``text`` strategy places the cells; two
columns a word crosses are one column, and empty rows and columns are dropped.

Either kind's leading rows set in a bold font (and not every row) are its declared header
rows; otherwise the segmenter's header rules decide, as on a worksheet.

Every count here is bounded: a page with more than :data:`MAX_PAGE_CHARS` text-layer
characters or :data:`MAX_PAGE_PATHS` vector paths is not searched (an ``info`` issue says
so), and pdfminer's work is bounded by the stream limits checked before it runs.
"""

from __future__ import annotations

import io
import statistics
from dataclasses import dataclass
from typing import Sequence

from extraction_assets.core.documents.layout import TableCell

#: Two words of a line more than this many font sizes apart are in different segments
#: (prose spaces words about a quarter of its font size apart, justified lines under one).
COLUMN_GAP = 1.0
#: Fewest lines of two or more segments an unruled table takes (a header and two rows).
MIN_ROWS = 3
#: A line more than this many line heights below the one above ends the table above it.
LINE_GAP = 2.0
#: Most words the median segment of an unruled table has (longer: columns of prose).
MAX_CELL_WORDS = 6
#: Pages with more text-layer characters than this are not searched for tables.
MAX_PAGE_CHARS = 30_000
#: Pages with more vector paths than this are not searched for tables (a drawing).
MAX_PAGE_PATHS = 5_000
#: Font name parts that mark a bold face (``Helvetica-Bold``, ``Arial,Black``).
BOLD_MARKS = ("bold", "black", "heavy", "semibold", "demi")


@dataclass
class PdfTable:
    """A table found on a page: its box in pdfplumber's coordinates (points from the page's
    top-left: ``x0``, ``top``, ``x1``, ``bottom``), its cells (0-based offsets, spans), the
    header rows its bold leading rows declare, and ``ruling`` (``ruled`` or ``unruled``)."""

    bbox: tuple[float, float, float, float]
    cells: list[TableCell]
    header_rows: int
    ruling: str


def find_tables(data: bytes, password: str | None, pages: Sequence[int]
                ) -> dict[int, list[PdfTable]]:
    """The tables of the given 1-based ``pages`` of a PDF (opened with ``password``), top to
    bottom, by page number (pages without tables are left out).

    Raises:
        Exception: whatever pdfminer raises on a file it cannot parse (the caller reads the
            page's text layer alone then).
    """
    import pdfplumber

    found: dict[int, list[PdfTable]] = {}
    with pdfplumber.open(io.BytesIO(data), password=password or "",
                         pages=list(pages)) as pdf:
        for page in pdf.pages:
            tables = page_tables(page)
            if tables:
                found[page.page_number] = tables
            page.close()
    return found


def page_tables(page) -> list[PdfTable]:
    """The tables of one pdfplumber page, top to bottom (see the module docstring)."""
    tables = []
    for table in page.find_tables({"vertical_strategy": "lines",
                                   "horizontal_strategy": "lines"}):
        cells = _ruled_cells(table)
        if cells is not None:
            tables.append(PdfTable(tuple(table.bbox), cells,
                                   _bold_rows(page, table), "ruled"))
    words = [w for w in page.extract_words(extra_attrs=["size", "fontname"])
             if not any(_inside(w, t.bbox) for t in tables)]
    for area in _unruled_areas(words):
        table = _unruled_table(page, area)
        if table is not None:
            tables.append(table)
    return sorted(tables, key=lambda t: (t.bbox[1], t.bbox[0]))


def _inside(word: dict, bbox: Sequence[float]) -> bool:
    x = (word["x0"] + word["x1"]) / 2
    y = (word["top"] + word["bottom"]) / 2
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def _ruled_cells(table) -> list[TableCell] | None:
    """The cells of a ruled table with their spans over the grid its cell edges make, or
    ``None`` when the grid is a single row or column."""
    xs = sorted({round(v, 1) for c in table.cells for v in (c[0], c[2])})
    ys = sorted({round(v, 1) for c in table.cells for v in (c[1], c[3])})
    if len(xs) < 3 or len(ys) < 3:
        return None
    texts = {}
    for row, extracted in zip(table.rows, table.extract()):
        for bbox, text in zip(row.cells, extracted):
            if bbox is not None:
                texts[tuple(bbox)] = text or ""
    cells = []
    for bbox in table.cells:
        c1, c2 = xs.index(round(bbox[0], 1)), xs.index(round(bbox[2], 1))
        r1, r2 = ys.index(round(bbox[1], 1)), ys.index(round(bbox[3], 1))
        cells.append(TableCell(r1, c1, texts.get(tuple(bbox), ""), r2 - r1, c2 - c1))
    return cells


def _lines(words: list[dict]) -> list[list[dict]]:
    """Words grouped into lines (overlapping vertically by half the smaller height), each left
    to right, the lines top to bottom."""
    lines: list[list[dict]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        line = lines[-1] if lines else None
        if line is not None:
            top, bottom = min(w["top"] for w in line), max(w["bottom"] for w in line)
            overlap = min(bottom, word["bottom"]) - max(top, word["top"])
            if overlap >= 0.5 * min(bottom - top, word["bottom"] - word["top"]):
                line.append(word)
                continue
        lines.append([word])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _segments(line: list[dict]) -> list[list[dict]]:
    """A line's words cut where two neighbours are more than :data:`COLUMN_GAP` font sizes
    apart."""
    out = [[line[0]]]
    for before, word in zip(line, line[1:]):
        size = max(before["size"], word["size"], 1.0)
        if word["x0"] - before["x1"] > COLUMN_GAP * size:
            out.append([])
        out[-1].append(word)
    return out


def _unruled_areas(words: list[dict]) -> list[list[list[dict]]]:
    """Runs of lines that may be an unruled table (see the module docstring), each as its
    lines of words."""
    areas: list[list[list[dict]]] = []
    run: list[list[dict]] = []
    for line in _lines(words):
        many = len(_segments(line)) >= 2
        if run and many:
            above = run[-1]
            height = max(w["bottom"] - w["top"] for w in above)
            if min(w["top"] for w in line) - max(w["bottom"] for w in above) > LINE_GAP * height:
                areas.append(run)
                run = []
        if many:
            run.append(line)
        else:
            areas.append(run)
            run = []
    areas.append(run)
    return [area for area in areas if len(area) >= MIN_ROWS and _has_gap(area)
            and statistics.median(len(s) for line in area for s in _segments(line))
            <= MAX_CELL_WORDS]


def _has_gap(area: list[list[dict]]) -> bool:
    """Whether some x-range between the area's leftmost and rightmost word is white on every
    line."""
    spans = sorted((w["x0"], w["x1"]) for line in area for w in line)
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 > reach:
            return True
        reach = max(reach, x1)
    return False


def _unruled_table(page, area: list[list[dict]]) -> PdfTable | None:
    """The table pdfplumber's ``text`` strategy makes of an area's words, its columns joined
    where a word crosses them and its empty rows and columns dropped; ``None`` when fewer than
    two columns are left."""
    words = [w for line in area for w in line]
    bbox = (min(w["x0"] for w in words), min(w["top"] for w in words),
            max(w["x1"] for w in words), max(w["bottom"] for w in words))
    region = page.crop(bbox, strict=False)
    table = region.find_table({"vertical_strategy": "text", "horizontal_strategy": "text",
                               "min_words_vertical": 2})
    if table is None:
        return None
    xs = sorted({c[0] for c in table.cells} | {c[2] for c in table.cells})
    # a column edge a word crosses is no edge
    edges = [xs[0], *(x for x in xs[1:-1]
                      if not any(w["x0"] < x - 0.5 and w["x1"] > x + 0.5 for w in words)),
             xs[-1]]
    rows: list[list[str]] = []
    bold: list[bool] = []
    for line in area:
        texts = [""] * (len(edges) - 1)
        for word in line:
            middle = (word["x0"] + word["x1"]) / 2
            k = max(0, min(len(texts) - 1,
                           sum(1 for x in edges[1:-1] if x <= middle)))
            texts[k] = f"{texts[k]} {word['text']}".strip()
        rows.append(texts)
        bold.append(all(_is_bold(w["fontname"]) for w in line))
    used = [k for k in range(len(edges) - 1) if any(r[k] for r in rows)]
    if len(used) < 2:
        return None
    cells = [TableCell(i, j, row[k]) for i, row in enumerate(rows)
             for j, k in enumerate(used) if row[k]]
    return PdfTable(bbox, cells, _leading(bold), "unruled")


def _bold_rows(page, table) -> int:
    """The leading rows of a ruled table whose characters are all bold (0 when every row is)."""
    bold = []
    for row in table.rows:
        chars = [c for c in page.crop(row.bbox, strict=False).chars if c["text"].strip()]
        bold.append(bool(chars) and all(_is_bold(c["fontname"]) for c in chars))
    return _leading(bold)


def _leading(bold: list[bool]) -> int:
    n = 0
    while n < len(bold) and bold[n]:
        n += 1
    return n if n < len(bold) else 0


def _is_bold(fontname: str) -> bool:
    name = fontname.split("+")[-1].lower()
    return any(mark in name for mark in BOLD_MARKS)
