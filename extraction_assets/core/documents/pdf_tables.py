"""Tables on the text-layer pages of a PDF, found with pdfplumber (pdfminer.six; no model).

**Ruled tables** are pdfplumber's table finder with its ``lines`` strategy: the page's lines and
rectangles cut it into cells; a cell spanning several columns or rows of the grid becomes a
merged range. A grid with fewer than two rows of text in two cells is no table (a chart's bars,
a form's boxes, a framed paragraph). A grid row holding several text lines without rules
between them is cut into a row a line (:func:`_unruled_rows`).

**Unruled tables** (columns kept apart by white space only) are found here, since pdfplumber's
``text`` strategy run over a whole page makes a table of its prose too: the page's words
(outside ruled tables) are grouped into lines, each line cut into segments where two words are
more than :data:`COLUMN_GAP` font sizes apart. A run of lines of two or more segments, each
within :data:`LINE_GAP` line heights of the one above (up to :data:`MAX_SOFT_LINES` lines of
one segment between them: wrapped cells, section labels), cut where a gap is
:data:`RELATIVE_GAP` times the run's median (unless both sides keep the same columns: rows
grouped by spacing), is a table when it has :data:`MIN_ROWS` such lines and is no prose
(:func:`_prose`). Its columns are kept apart by the x-ranges white on every such line
(:func:`_corridors`); a header line whose words sit too close for segments is taken in above a
data row; header lines are shaped (group labels span, wrapped header text joins); a line that
is the wrapped rest of a row joins it.

Either kind's leading rows set in a bold font and holding no number (and not every row) are its
declared header rows (a bold row of totals is no header); otherwise the segmenter's header
rules decide, as on a worksheet.

Every count here is bounded: a page with more than :data:`MAX_PAGE_CHARS` text-layer
characters, :data:`MAX_PAGE_PATHS` vector paths or :data:`MAX_PAGE_CONTENT_BYTES` of content
is not searched (an ``info`` issue says so); the stream limits are checked before. The
constants were set on generated pages of the tuning fold of ``tools.pdf_tables_eval`` and on
40 real PDFs; the held-apart figures are in the README.
"""

from __future__ import annotations

import bisect
import io
import re
import statistics
from collections import Counter
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
#: A line further below the one above than this many times the run's median gap between
#: lines starts another table (two tables one under the other).
RELATIVE_GAP = 1.8
#: Narrowest white x-range (font sizes) that keeps two columns of an unruled table apart.
MIN_CORRIDOR = 0.5
#: Most words the median segment of an unruled table has (longer: columns of prose).
MAX_CELL_WORDS = 6
#: Share of an area's segments starting in lower case above which it is prose.
MAX_LOWER_SHARE = 0.5
#: Most lines above an area taken as its header lines when their words are too close for
#: segments but stay within its columns.
MAX_HEADER_LINES = 2
#: Most one-segment lines in a row kept inside an unruled table (wrapped cells, labels).
MAX_SOFT_LINES = 2
#: A year as a header names a column by it (``2023``), not a value.
YEAR_RE = re.compile(r"^(?:19|20)\d\d$")
#: Currency signs a report may set apart from their amounts (``$   12,450``).
CURRENCY_SIGNS = ("$", "€", "£", "¥")
#: Pages with more text-layer characters than this are not searched for tables.
MAX_PAGE_CHARS = 30_000
#: Pages with more vector paths than this are not searched for tables (a drawing).
MAX_PAGE_PATHS = 5_000
#: Pages whose content streams (with the forms they draw) decode to more bytes than this are
#: not searched: pdfminer interprets them at about 0.5 MB/s.
MAX_PAGE_CONTENT_BYTES = 2 * 1024**2
#: Deepest nesting of form XObjects counted in a page's content.
MAX_FORM_DEPTH = 4
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
                ) -> tuple[dict[int, list[PdfTable]], list[int], list[int]]:
    """The tables of the given 1-based ``pages`` of a PDF (opened with ``password``), top to
    bottom, by page number (pages without tables are left out); the pages not searched
    because their content passes :data:`MAX_PAGE_CONTENT_BYTES`; the pages whose search
    failed (an error on one page leaves the others searched).

    Raises:
        Exception: whatever pdfminer raises on a file it cannot open (the caller reads the
            pages' text layer alone then).
    """
    import pdfplumber

    found: dict[int, list[PdfTable]] = {}
    skipped, failed = [], []
    with pdfplumber.open(io.BytesIO(data), password=password or "",
                         pages=list(pages)) as pdf:
        for page in pdf.pages:
            try:
                if content_bytes(page.page_obj) > MAX_PAGE_CONTENT_BYTES:
                    skipped.append(page.page_number)
                elif tables := page_tables(page):
                    found[page.page_number] = tables
            except Exception:  # noqa: BLE001 - one page pdfminer cannot lay out: the others go on
                failed.append(page.page_number)
            page.close()
    return found, skipped, failed


def content_bytes(page_obj) -> int:
    """Decoded bytes of a pdfminer page's content streams and of the form XObjects it draws
    (nested up to :data:`MAX_FORM_DEPTH`, each counted once): what pdfminer interprets to lay
    the page out. Pictures are not counted (their pixels are not interpreted)."""
    from pdfminer.pdftypes import PDFStream, resolve1

    total, seen = 0, set()
    todo = [(resolve1(c), 0) for c in page_obj.contents or []]
    todo += [(page_obj.resources, 0)]
    while todo:
        obj, depth = todo.pop()
        if isinstance(obj, PDFStream):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            total += len(obj.get_data() or b"")
            obj = obj.attrs.get("Resources")
        resources = resolve1(obj)
        xobjects = resolve1(resources.get("XObject")) if isinstance(resources, dict) else None
        if isinstance(xobjects, dict) and depth < MAX_FORM_DEPTH:
            for ref in xobjects.values():
                form = resolve1(ref)
                if isinstance(form, PDFStream) and _name(form.attrs.get("Subtype")) == "Form":
                    todo.append((form, depth + 1))
        if total > MAX_PAGE_CONTENT_BYTES:
            break
    return total


def _name(value) -> str:
    return getattr(value, "name", str(value))


def page_tables(page) -> list[PdfTable]:
    """The tables of one pdfplumber page, top to bottom (see the module docstring)."""
    tables = []
    words = page.extract_words(extra_attrs=["size", "fontname"])
    for table in page.find_tables({"vertical_strategy": "lines",
                                   "horizontal_strategy": "lines"}):
        inside = [w for w in words if _inside(w, table.bbox)]
        cells = _ruled_cells(table, inside)
        if cells is not None:
            tables.append(PdfTable(tuple(table.bbox), cells, _bold_rows(table, inside), "ruled"))
    words = [w for w in words if not any(_inside(w, t.bbox) for t in tables)]
    for area, soft in _unruled_areas(words):
        table = _unruled_table(area, soft)
        if table is not None:
            tables.append(table)
    return sorted(tables, key=lambda t: (t.bbox[1], t.bbox[0]))


def _inside(word: dict, bbox: Sequence[float]) -> bool:
    x = (word["x0"] + word["x1"]) / 2
    y = (word["top"] + word["bottom"]) / 2
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def _ruled_cells(table, words: list[dict]) -> list[TableCell] | None:
    """The cells of a ruled table (``words`` the page's words inside it) with their spans over
    the grid its cell edges make, a row drawn without rules between its lines cut into rows
    (:func:`_unruled_rows`); ``None`` when the grid is a single row or column or fewer than
    two of its rows have text in two cells."""
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
    filled = Counter(c.row for c in cells if c.text.strip())
    if sum(1 for n in filled.values() if n >= 2) < 2:
        return None  # a grid of boxes, a chart's bars, a framed paragraph: no two rows of data
    return _unruled_rows(cells, words, xs, ys)


def _unruled_rows(cells: list[TableCell], words: list[dict], xs: list[float],
                  ys: list[float]) -> list[TableCell]:
    """A ruled grid's rows that hold several lines of text drawn without rules between them
    (a body whose rows have no rules, a block of rows under one spanning cell) cut into one
    row per text line, the words placed by the grid's columns; a line filling at most half as
    many cells as the row above is joined to it (a wrapped cell). A row is cut only when no
    word of it crosses a column rule and two or more of its lines fill two or more cells; a
    row with a cell spanning rows is kept whole."""
    n_cols = len(xs) - 1
    inner = xs[1:-1]
    parts: dict[int, list[list[str]]] = {}
    for r in range(len(ys) - 1):
        if any(c.row <= r < c.row + c.row_span and c.row_span != 1 for c in cells):
            continue
        band = [w for w in words if ys[r] <= (w["top"] + w["bottom"]) / 2 <= ys[r + 1]]
        if any(w["x0"] < x - 0.5 and w["x1"] > x + 0.5 for w in band for x in inner):
            continue
        rows: list[list[str]] = []
        for line in _lines(band):
            texts = [""] * n_cols
            for word in line:
                k = min(max(bisect.bisect(xs, (word["x0"] + word["x1"]) / 2) - 1, 0), n_cols - 1)
                texts[k] = f"{texts[k]} {word['text']}".strip()
            filled = [k for k, text in enumerate(texts) if text]
            if rows and 2 * len(filled) <= sum(1 for t in rows[-1] if t):
                for k in filled:
                    rows[-1][k] = f"{rows[-1][k]} {texts[k]}".strip()
            else:
                rows.append(texts)
        if sum(1 for texts in rows if sum(1 for t in texts if t) >= 2) >= 2:
            parts[r] = rows
    if not parts:
        return cells
    offset = [0]
    for r in range(len(ys) - 1):
        offset.append(offset[-1] + len(parts.get(r, [[]])))
    out = [TableCell(offset[c.row], c.col, c.text, offset[c.row + c.row_span] - offset[c.row],
                     c.col_span) for c in cells if c.row not in parts]
    for r, rows in parts.items():
        out += [TableCell(offset[r] + i, k, text) for i, texts in enumerate(rows)
                for k, text in enumerate(texts) if text]
    return out


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


def _unruled_areas(words: list[dict]) -> list[tuple[list[list[dict]], list[bool]]]:
    """Runs of lines that may be an unruled table (see the module docstring), each as its
    lines of words and which of them are soft (one segment, kept because lines of two or
    more segments follow: a wrapped cell, a section label)."""
    lines = _lines(words)
    runs: list[list[int]] = [[]]
    soft: set[int] = set()
    pending: list[int] = []
    for i, line in enumerate(lines):
        last = (pending or runs[-1] or [None])[-1]
        near = last is not None and _gap(lines[last], line) <= LINE_GAP * _height(line)
        if len(_segments(line)) < 2:
            if runs[-1] and near and len(pending) < MAX_SOFT_LINES:
                pending.append(i)
            else:
                _close(runs, pending, lines, soft)
                pending = []
        elif runs[-1] and near:
            runs[-1] += pending + [i]
            soft.update(pending)
            pending = []
        else:
            _close(runs, pending, lines, soft)
            runs[-1].append(i)
            pending = []
    _close(runs, pending, lines, soft)
    areas = []
    taken = -1  # the last line of the area above
    for run in (part for run in runs for part in _split(lines, run, soft)):
        while run and (run[0] in soft
                       or _segments(lines[run[0]])[0][-1]["text"].endswith(":")):
            run = run[1:]  # "Name: value" lines above a table are not its rows
        hard = [lines[i] for i in run if i not in soft]
        if len(hard) < MIN_ROWS or _prose(hard):
            continue
        first = run[0]
        while (first - 1 > taken and run[0] - first < MAX_HEADER_LINES
               and any(_numeric(w["text"]) for w in lines[first][1:])
               and _header_line(lines[first - 1], lines[first], hard)):
            first -= 1
        area = list(range(first, run[-1] + 1))
        areas.append(([lines[i] for i in area], [i in soft for i in area]))
        taken = run[-1]
    return areas


def _close(runs: list[list[int]], pending: list[int], lines: list[list[dict]],
           soft: set[int]) -> None:
    """End the run being built (and start an empty one): the one-segment lines just after it
    that start right of its first column (the wrapped end of its last row) are taken in as
    soft lines; others (a paragraph after the table) are not."""
    run = runs[-1]
    if run:
        left = min(w["x0"] for i in run for w in lines[i])
        for i in pending:
            if lines[i][0]["x0"] <= left + lines[i][0]["size"]:
                break
            run.append(i)
            soft.add(i)
    runs.append([])


def _split(lines: list[list[dict]], run: list[int], soft: set[int]) -> list[list[int]]:
    """A run of line indexes cut where the white gap between two lines is more than
    :data:`RELATIVE_GAP` times the run's median gap, unless the line below the gap is a data
    row (a number after its first word) and the lines on both sides keep their columns apart
    together (as many white column gaps over both as over either: rows grouped by spacing);
    cut: two tables one under the other, a paragraph's last line above a table."""
    if len(run) < 3:
        return [run]
    gaps = [_gap(lines[a], lines[b]) for a, b in zip(run, run[1:])]
    most = RELATIVE_GAP * max(statistics.median(gaps), 0.1 * _height(lines[run[0]]))
    parts = [[run[0]]]
    for i, gap in zip(run[1:], gaps):
        if gap > most:
            parts.append([])
        parts[-1].append(i)
    joined = [parts[0]]
    for part in parts[1:]:
        above, below = ([lines[i] for i in p if i not in soft] for p in (joined[-1], part))
        if not above or not below:
            joined.append(part)
            continue
        if (any(_numeric(w["text"]) for w in below[0][1:])
                and len(_corridors(above + below)) >= max(len(_corridors(above)),
                                                          len(_corridors(below)))):
            joined[-1] = joined[-1] + part
        else:
            joined.append(part)
    return joined


def _numeric(text: str) -> bool:
    """Whether a word is a number, amount, percentage or date (digits, no letters)."""
    return any(ch.isdigit() for ch in text) and not any(ch.isalpha() for ch in text)


def _gap(above: list[dict], line: list[dict]) -> float:
    return min(w["top"] for w in line) - max(w["bottom"] for w in above)


def _height(line: list[dict]) -> float:
    return max(w["bottom"] - w["top"] for w in line)


def _prose(area: list[list[dict]]) -> bool:
    """Whether an area's segments read as prose (never when half its lines or more have a
    segment that is one number): their median is longer than
    :data:`MAX_CELL_WORDS` words, or more than :data:`MAX_LOWER_SHARE` of those of two or more
    words start in lower case (a sentence going on from the line above; table cells start in
    capitals or digits, or are single words such as units)."""
    if 2 * sum(1 for line in area if any(len(s) == 1 and _numeric(s[0]["text"])
                                         for s in _segments(line))) >= len(area):
        return False  # half the lines or more have numbers standing alone: data
    segments = [s for line in area for s in _segments(line)]
    phrases = [s for s in segments if len(s) >= 2]  # one-word cells may be lower case (units)
    lower = sum(1 for s in phrases if s[0]["text"][:1].islower())
    return (statistics.median(len(s) for s in segments) > MAX_CELL_WORDS
            or lower > MAX_LOWER_SHARE * len(phrases))


def _header_line(line: list[dict], below: list[dict], area: list[list[dict]]) -> bool:
    """Whether the line above an area that starts with a data row (a number after its first
    word) is a header line of its table although its words are too close for segments (a
    tight header) or it stands further apart: right above it (within :data:`LINE_GAP` line
    heights), its pieces (:func:`_pieces`) in two or more of the area's columns, none
    covering a white gap between columns (a title), none a number, its first word not in
    lower case (a sentence's last line)."""
    if (_gap(line, below) > LINE_GAP * _height(line) or line[0]["text"][:1].islower()
            or any(_numeric(w["text"]) for w in line)):
        return False
    corridors = _corridors(area)
    columns = set()
    for piece in _pieces(line):
        first, last = _columns(piece, corridors)
        if first != last:
            return False
        columns.add(first)
    return len(columns) >= 2


def _corridors(lines: list[list[dict]]) -> list[tuple[float, float]]:
    """The x-ranges at least :data:`MIN_CORRIDOR` font sizes wide that are white on every one
    of ``lines`` between its leftmost and rightmost word, left to right."""
    spans = sorted((w["x0"], w["x1"], w["size"]) for line in lines for w in line)
    out = []
    reach = spans[0][1]
    for x0, x1, size in spans[1:]:
        if x0 - reach >= MIN_CORRIDOR * max(size, 1.0):
            out.append((reach, x0))
        reach = max(reach, x1)
    return out


def _columns(word: dict, corridors: list[tuple[float, float]]) -> tuple[int, int]:
    """The first and last 0-based column a word (or piece: ``x0``, ``x1``) takes between
    ``corridors``: the column of its middle, widened over each corridor it covers whole (a
    header spanning columns)."""
    middle = (word["x0"] + word["x1"]) / 2
    column = sum(1 for left, right in corridors if (left + right) / 2 < middle)
    before = sum(1 for left, _ in corridors[:column] if word["x0"] <= left)
    after = sum(1 for _, right in corridors[column:] if word["x1"] >= right)
    return column - before, column + after


def _header_only_columns_joined(area: list[list[dict]], corridors: list[tuple[float, float]]
                                ) -> list[tuple[float, float]]:
    """``corridors`` without each one between a column only the first line uses and a
    neighbour it does not use (a header set left over numbers set right: one column)."""
    used = [{_columns(piece, corridors)[0] for piece in _pieces(line)} for line in area]
    rest = set().union(*used[1:])
    dropped = set()
    for k in used[0] - rest:
        if k < len(corridors) and k + 1 not in used[0]:
            dropped.add(k)  # the corridor right of column k
        elif k > 0 and k - 1 not in used[0]:
            dropped.add(k - 1)
    return [c for i, c in enumerate(corridors) if i not in dropped]


def _unruled_table(area: list[list[dict]], soft: list[bool]) -> PdfTable | None:
    """The table an area's lines make: columns kept apart by the x-ranges white on every line
    of two or more segments (on every such line but the first when that keeps more apart: a
    header cell spanning columns is a merged cell), one row a line; a line that leaves the
    first column empty (or starts in lower case) and is soft, or fills at most half as many
    cells as the row above without a number (a total line keeps its row), is joined to the
    nearest row (a wrapped cell; above it when as near); ``None`` when no column gap is found
    or most cells of the first column end in a colon (``Name: value`` lines)."""
    hard = [line for line, s in zip(area, soft) if not s]
    corridors = _corridors(hard)
    below = _corridors(hard[1:])
    if len(below) > len(corridors):
        corridors = below
    corridors = _header_only_columns_joined(hard, corridors)
    if not corridors:
        return None
    rows = [_row_cells(line, corridors) for line in area]
    kept: list[int] = []
    for i, is_soft in enumerate(soft):
        if 0 in rows[i] and not rows[i][0][1][0]["text"][:1].islower():
            kept.append(i)  # a row, or a section label
        elif not is_soft and not (kept and 2 * len(rows[i]) <= len(rows[kept[-1]])
                                  and not _has_number(rows[i])):
            kept.append(i)  # a row with its first cell empty (a value filled down, a total)
    tops = [min(w["top"] for w in line) for line in area]
    for i in (i for i in range(len(area)) if i not in kept):
        target = min(kept, key=lambda k: (round(abs(tops[k] - tops[i]), 1), k > i, abs(k - i)))
        for first, (last, words) in rows[i].items():
            cell = rows[target].setdefault(first, [last, []])
            cell[1] = cell[1] + words if target < i else words + cell[1]
    kept = _header_lines_shaped(rows, kept)
    cells, bold = [], []
    for n, i in enumerate(kept):
        cells += [TableCell(n, first, " ".join(w["text"] for w in words), 1, last - first + 1)
                  for first, (last, words) in sorted(rows[i].items())]
        bold.append(all(_is_bold(w["fontname"]) for w in area[i])
                    and not any(_numeric(w["text"]) for w in area[i]))
    labels = [c.text for c in cells if c.col == 0]
    if 2 * sum(text.endswith(":") for text in labels) > len(labels):
        return None
    words = [w for line in area for w in line]
    bbox = (min(w["x0"] for w in words), min(w["top"] for w in words),
            max(w["x1"] for w in words), max(w["bottom"] for w in words))
    return PdfTable(bbox, cells, _leading(bold), "unruled")


def _row_cells(line: list[dict], corridors: list[tuple[float, float]]) -> dict[int, list]:
    """A line's cells between ``corridors``: first column -> ``[last column, words]``, its
    pieces (:func:`_pieces`) placed by :func:`_columns`, those whose columns meet in one
    cell."""
    row: dict[int, list] = {}
    for piece in _pieces(line):
        first, last = _columns(piece, corridors)
        start = max((k for k in row if k <= first <= row[k][0]), default=None)
        if start is None:
            row[first] = [last, piece["words"]]
        else:
            row[start][0] = max(row[start][0], last)
            row[start][1] += piece["words"]
    return row


def _pieces(line: list[dict]) -> list[dict]:
    """A line's words grouped where they stand closer than :data:`MIN_CORRIDOR` font sizes
    (as words of one cell; no column gap is that narrow), a currency sign set apart with the
    number after it (placed by the number), each ``{"x0", "x1", "words"}``."""
    pieces: list[dict] = []
    for word in line:
        if pieces and (word["x0"] - pieces[-1]["x1"] < MIN_CORRIDOR * max(word["size"], 1.0)
                       or [w["text"] for w in pieces[-1]["words"]] in ([c] for c in
                                                                       CURRENCY_SIGNS)):
            pieces[-1]["x1"] = max(pieces[-1]["x1"], word["x1"])
            pieces[-1]["words"].append(word)
        else:
            pieces.append({"x0": word["x0"], "x1": word["x1"], "words": [word]})
    for piece in pieces:  # a sign alone before its number is placed by the number
        if len(piece["words"]) > 1 and piece["words"][0]["text"] in CURRENCY_SIGNS:
            piece["x0"] = piece["words"][1]["x0"]
    return pieces


def _has_number(row: dict[int, list], years: bool = True) -> bool:
    """Whether a line's cells (:func:`_row_cells`) hold a word that is a number (not counting
    years 1900-2099 unless ``years``: a header line over years' columns)."""
    return any(_numeric(w["text"]) and (years or not YEAR_RE.match(w["text"]))
               for _, words in row.values() for w in words)


def _header_lines_shaped(rows: list[dict[int, list]], kept: list[int]) -> list[int]:
    """The leading lines of an unruled table before its first data line (one with a first
    cell and a number other than a year, filling half the columns or more; at most
    :data:`MAX_HEADER_LINES` + 2), shaped: a cell of one column beside an empty one (filled on
    the line below), centred nearer the middle of the two columns' data than of its own
    column's, spans the pair (a group label centred over two columns); then a header line
    whose cells each take one column, fewer than the line below and all columns it has, is
    joined into that line (a header cell's text wrapped over lines). Returns the lines left."""
    n_cols = 1 + max(last for row in rows for last, _ in row.values())
    header = []
    for i in kept[:MAX_HEADER_LINES + 2]:
        if 0 in rows[i] and 2 * len(rows[i]) >= n_cols and _has_number(rows[i], years=False):
            break  # a data line: a label and numbers (years over columns are header)
        header.append(i)

    spans: dict[int, list[float]] = {}  # column -> [left, right] of its data cells
    for row in (rows[i] for i in kept if i not in header):
        for first, (last, words) in row.items():
            if first == last:
                span = spans.setdefault(first, [words[0]["x0"], words[0]["x1"]])
                span[0] = min(span[0], *(w["x0"] for w in words))
                span[1] = max(span[1], *(w["x1"] for w in words))

    def centre(columns: set[int]) -> float:
        return (min(spans[k][0] for k in columns) + max(spans[k][1] for k in columns)) / 2

    for upper, lower in zip(header, header[1:]):
        row, below = rows[upper], rows[lower]
        taken = {k for first, (last, _) in row.items() for k in range(first, last + 1)}
        for first, (last, words) in list(row.items()):
            if last != first:
                continue
            mine = (min(w["x0"] for w in words) + max(w["x1"] for w in words)) / 2
            for pair in ((first - 1, first), (first, first + 1)):
                other = pair[0] if pair[1] == first else pair[1]
                if (other in spans and first in spans and other not in taken and other in below
                        and abs(mine - centre(set(pair))) < abs(mine - centre({first}))):
                    del row[first]
                    row[pair[0]] = [pair[1], words]
                    taken.add(other)
                    break
    left = list(kept)
    for upper, lower in zip(header, header[1:]):
        row, below = rows[upper], rows[lower]
        if len(row) < len(below) and all(last == first and first in below
                                         and below[first][0] == first
                                         for first, (last, _) in row.items()):
            for first, (_, words) in row.items():
                below[first][1] = words + below[first][1]
            left.remove(upper)
    return left


def _bold_rows(table, words: list[dict]) -> int:
    """The leading rows of a ruled table (``words`` the page's words inside it, each of one
    font) whose words are all bold and none a number (0 when every row is such a row)."""
    bold = []
    for row in table.rows:
        row_words = [w for w in words if _inside(w, row.bbox)]
        bold.append(bool(row_words) and all(_is_bold(w["fontname"]) and not _numeric(w["text"])
                                            for w in row_words))
    return _leading(bold)


def _leading(bold: list[bool]) -> int:
    n = 0
    while n < len(bold) and bold[n]:
        n += 1
    return n if n < len(bold) else 0


def _is_bold(fontname: str) -> bool:
    name = fontname.split("+")[-1].lower()
    return any(mark in name for mark in BOLD_MARKS)
