"""PDF: each page routed from its text layer and images, then read as text or left for OCR.

**Routing** (:func:`route_page`): a page's text layer characters (PDFium's count) and the share
of the page its image objects cover decide its route:

* ``digital``: at least :data:`MIN_TEXT_CHARS` characters, images under
  :data:`SCAN_COVERAGE` of the page;
* ``low_text``: fewer characters, images under :data:`SCAN_COVERAGE` (a cover page, a
  drawing with labels);
* ``ocr_scan``: images cover the page and a text layer is there too (a scan that some
  software already ran OCR on);
* ``image_scan``: images cover the page, (almost) no text (a scan without OCR).

Each page's route, characters and image coverage are a ``pdf_page`` object of its sheet
(``Page N``); the file's verdict is the route all pages share, else ``mixed``.

**Reading**: the text layer of ``digital``, ``low_text`` and ``ocr_scan`` pages is read with
pypdfium2 (PDFium): its text runs grouped into lines (runs overlapping vertically), lines into
paragraphs (a gap larger than :data:`PARAGRAPH_GAP` font sizes, or another font size),
top to bottom, one ``text`` block per paragraph. Tables on ``digital`` and ``low_text`` pages
are found with pdfplumber (:mod:`.pdf_tables`: ruled and unruled) and laid out as ``table``
blocks where they stand, their text taken out of the paragraphs. When Docling's layout models
are configured (:data:`MODELS_ENV` names their folder) and installed, the digital pages are
read by Docling's standard PDF pipeline instead (tables structured by its model, headings
found), with OCR off. ``image_scan`` pages, and the pictures of ``low_text`` pages, are read
by Tesseract when it is installed (:mod:`.pdf_ocr`, issue ``ocr_read``); without it scanned
pages give an ``info`` issue ``ocr_not_configured``: nothing is invented.

The document information's ``Creator`` and ``Producer`` are kept in the conversion facts (the
``workbooks`` view's ``creator`` and ``producer``, with the verdict as ``pdf_route``); a PDF
made by Word, PowerPoint or Excel gets an ``info`` issue ``office_export``.

Encrypted PDFs are opened with the configured passwords (``encrypted`` otherwise); a file
or page PDFium cannot load is ``corrupt_workbook``.

**Streams** (:func:`check_streams`): PDFium inflates a stream whole when it reads it (a
page's content, an object stream), so before PDFium sees the file every Flate stream is
inflated here, a block at a time and kept nowhere, against the zip limits
(``max_part_bytes``, ``max_compression_ratio``, ``max_total_bytes``) and
``max_stream_bytes`` (a 510 KB file whose content inflates to 500 MB of spaces took 1.3 GB).
"""

from __future__ import annotations

import os
import re
import time
import zlib
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from extraction_assets.core.documents.layout import SheetBuilder, Sheets
from extraction_assets.core.documents.pdf_ocr import PageOcr, lay_out, unread_pictures
from extraction_assets.core.errors import (
    CorruptWorkbookError,
    EncryptedWorkbookError,
    LimitExceededError,
    one_line,
)
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue, SheetObject
from extraction_assets.core.ocr import (
    MIN_CONFIDENCE,
    OcrParagraph,
    OcrSession,
    OcrSetup,
    item_details,
)

#: Fewest text-layer characters of a page read as text (fewer: ``low_text`` or ``image_scan``).
MIN_TEXT_CHARS = 100
#: Share of the page (0..1) image objects must cover for a scan (``ocr_scan``/``image_scan``).
SCAN_COVERAGE = 0.5
#: A vertical gap between two lines larger than this many font sizes starts a paragraph.
PARAGRAPH_GAP = 1.0
#: Two lines whose font sizes differ by more than this share are in different paragraphs.
SIZE_CHANGE = 0.1
#: Environment variable naming the folder of Docling's layout and table models (the
#: ``artifacts_path`` of its PDF pipeline); unset, PDFs are read from their text layer only.
MODELS_ENV = "EXTRACTION_ASSETS_DOCLING_MODELS"
#: A character more than this many font heights right of the one before starts another run
#: (pages read character by character, :func:`text_runs`).
RUN_GAP = 1.0
#: Pages with more of PDFium's text runs than this are read character by character: asking
#: each run's text by its box scans the page each time (a page of 127,000 characters in 22,000
#: runs took 26 s, one of 500,000 characters minutes).
MAX_BOXED_RUNS = 3_000
#: Lines above a text run it may still belong to (runs come sorted by their top edge).
LINES_LOOKED_BACK = 4
#: PDFium's load error for a wrong or missing password (``FPDF_ERR_PASSWORD``).
ERR_PASSWORD = 4
#: Most characters kept of the creator or producer a PDF's document information names.
MAX_INFO_CHARS = 200
#: Office applications a PDF's creator or producer may name -> the file the PDF was saved
#: from (``office_export``).
OFFICE_APPS = {"PowerPoint": "presentation (.pptx)", "Word": "document (.docx)",
               "Excel": "workbook (.xlsx)"}
#: Cells per side of the raster the image coverage is measured on.
COVERAGE_RASTER = 100
ROUTES = ("digital", "low_text", "ocr_scan", "image_scan")
#: The ``stream`` keyword and its end of line (ISO 32000-1 §7.3.8.1): a stream's data follows.
STREAM_START = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
#: Filters a stream may chain (``/Filter [/FlateDecode /FlateDecode]``); each one more is
#: inflated here the same way.
MAX_FLATE_LAYERS = 4
#: Bytes fed to, and taken from, an inflater at a time.
INFLATE_STEP = 1 << 16
#: Streams smaller than this are not judged by their compression ratio (as in the zip reader).
RATIO_FLOOR = 1024**2


@dataclass
class PageFacts:
    """A page's size as shown (points), text-layer characters, image coverage (0..1), vector
    paths, whether its text is shown sideways (a ``/Rotate`` turning horizontal text) and
    route."""

    number: int
    width: float
    height: float
    chars: int
    image_coverage: float
    paths: int = 0
    sideways: bool = False
    pictures: tuple = ()  # (left, bottom, right, top) of its images, of a page not turned

    @property
    def route(self) -> str:
        return route_page(self.chars, self.image_coverage)


def route_page(chars: int, image_coverage: float) -> str:
    """The route of a page (see the module docstring)."""
    if image_coverage >= SCAN_COVERAGE:
        return "ocr_scan" if chars >= MIN_TEXT_CHARS else "image_scan"
    return "digital" if chars >= MIN_TEXT_CHARS else "low_text"


def open_pdf(data: bytes, limits: Limits, passwords: Sequence[str], sheets: Sheets) -> dict:
    """Read a PDF's pages into ``sheets`` (one ``Page N`` sheet each); returns the conversion
    facts (tool, layout, seconds, pages per route, verdict, and the ``creator`` and
    ``producer`` of its document information when it names them).

    Raises:
        EncryptedWorkbookError: the PDF needs a password and none of ``passwords`` opens it.
        CorruptWorkbookError: PDFium cannot load the file.
        LimitExceededError: more pages than ``limits.max_sheets`` (or text past the limits).
    """
    import pypdfium2 as pdfium

    started = time.perf_counter()
    check_streams(data, limits)
    pdf, password = _load(pdfium, data, passwords)
    session = sheets.ocr
    ocr = PageOcr(session, limits, sheets.issues)
    try:
        if len(pdf) > limits.max_sheets:
            raise LimitExceededError(f"the PDF has {len(pdf)} pages; the limit is "
                                     f"{limits.max_sheets} (max_sheets)")
        made_by = _made_by(pdf)
        pages: list[tuple[PageFacts, list]] = []
        for i in range(len(pdf)):
            try:
                page = pdf[i]
                try:
                    pages.append(_read_page(page, i + 1))
                    fact = pages[-1][0]
                    if fact.route == "image_scan" and session.tesseract is not None:
                        ocr.scan(page, i + 1)
                    elif fact.route == "low_text" and fact.pictures:
                        ocr.pictures(page, i + 1, fact.pictures)  # or say OCR is not set up
                finally:
                    page.close()
            except pdfium.PdfiumError as exc:  # a page tree or page PDFium cannot read
                raise CorruptWorkbookError(f"page {i + 1} of the PDF cannot be read: "
                                           f"{one_line(exc)}") from exc
        read = ocr.results()
    finally:
        ocr.close()
        pdf.close()
    facts = [fact for fact, _ in pages]
    scanned = {f.number: read[f.number] for f in facts
               if f.route == "image_scan" and f.number in read}
    pictures = {n: found for n, found in read.items() if n not in scanned}
    digital = {f.number for f in facts if f.route == "digital"}
    structured = _docling_pages(data, limits, sheets.issues) if digital else None
    tables = {} if structured is not None else _tables(data, password, facts, sheets.issues)
    builders = []
    for fact, runs in pages:
        sheet = sheets.new(f"Page {fact.number}", "page")
        builders.append(sheet)
        sheet.objects.append(SheetObject(
            "pdf_page", sheet.info.name, None, f"page {fact.number}", fact.route,
            {"route": fact.route, "chars": fact.chars,
             "image_coverage": round(fact.image_coverage, 3),
             "width_pt": round(fact.width, 1), "height_pt": round(fact.height, 1)}))
        if fact.number in scanned:
            lay_out(sheet, fact.number, scanned[fact.number], session.tesseract.label)
        elif structured is None or fact.number not in digital:
            _text_layer(sheet, fact, runs, tables.get(fact.number, []),
                        pictures.get(fact.number, []), session)
    if structured is not None:
        from extraction_assets.core.documents.docling import docling_sheets

        docling_sheets(structured, "pdf", sheets,
                       {b.info.index: b for b in builders if b.info.index in digital})
    scans = [f.number for f in facts if f.route == "image_scan"]
    if scans and session.tesseract is None and session.setup.problem:
        session.available(f"page {', '.join(map(str, scans))}", sheets.issues)
    _route_issues(facts, sheets.issues, scanned,
                  session.setup if scans else None)  # Tesseract looked up only for scans
    _office_issue(made_by, sheets.issues)
    sheets.issues += filter(None, [unread_pictures(facts)])
    routes = [f.route for f in facts]
    verdict = routes[0] if routes and len(set(routes)) == 1 else ("mixed" if routes else "empty")
    return {"tool": f"pypdfium2 {pdfium.version.PYPDFIUM_INFO}",
            "layout": "Docling" if structured is not None else "text layer and pdfplumber tables",
            "seconds": round(time.perf_counter() - started, 3),
            "pages": {route: routes.count(route) for route in ROUTES if route in routes},
            "verdict": verdict, **made_by}


def _made_by(pdf) -> dict[str, str]:
    """The ``creator`` and ``producer`` the PDF's document information names (ISO 32000-1
    §14.3.3), control characters dropped, each cut at :data:`MAX_INFO_CHARS`."""
    out = {}
    for key in ("Creator", "Producer"):
        value = pdf.get_metadata_value(key)[:4 * MAX_INFO_CHARS]
        value = "".join(ch for ch in value if ch.isprintable()).strip()
        if value:
            out[key.lower()] = value[:MAX_INFO_CHARS]
    return out


def _office_issue(made_by: dict[str, str], issues: list[Issue]) -> None:
    """An ``info`` issue ``office_export`` when the PDF was made by Word, PowerPoint or Excel:
    the file it was saved from keeps what the PDF lost (tables, slides, notes, cell values)."""
    named = " ".join(made_by.values()).lower()
    for app, suffix in OFFICE_APPS.items():
        if re.search(rf"\b{app.lower()}\b", named):
            issues.append(Issue("parsed_sheets", None, None, "info", "office_export",
                                f"the PDF was made by {app} "
                                f"({made_by.get('creator') or made_by.get('producer')}): the "
                                f"{suffix} it was saved from is read better, when you have it"))
            return


def _tables(data: bytes, password: str | None, facts: list[PageFacts], issues: list[Issue]
            ) -> dict:
    """The tables of the text-layer pages (:func:`~.pdf_tables.find_tables`) by page number.
    A page whose text is shown sideways (a ``/Rotate`` turning horizontal text: its tables
    would come out transposed) or over the bounds of the search is left out with an ``info``
    issue ``tables_not_searched`` saying why; a page pdfplumber cannot lay out, or a file
    pdfminer cannot parse, gives a ``warning`` ``pdf_tables_failed`` (their text is still
    read)."""
    from extraction_assets.core.documents import pdf_tables

    searched: list[int] = []
    skipped: dict[str, list[int]] = {}
    for f in facts:
        if f.route not in ("digital", "low_text") or not f.chars:
            continue
        why = ("text shown sideways" if f.sideways else
               f"more than {pdf_tables.MAX_PAGE_CHARS} characters"
               if f.chars > pdf_tables.MAX_PAGE_CHARS else
               f"more than {pdf_tables.MAX_PAGE_PATHS} vector paths"
               if f.paths > pdf_tables.MAX_PAGE_PATHS else None)
        if why:
            skipped.setdefault(why, []).append(f.number)
        else:
            searched.append(f.number)
    found: dict = {}
    if searched:
        try:
            found, too_long, failed = pdf_tables.find_tables(data, password, searched)
        except Exception as exc:  # noqa: BLE001 - pdfminer's errors on damaged files are many
            issues.append(Issue("parsed_sheets", None, None, "warning", "pdf_tables_failed",
                                f"pdfplumber could not read the PDF ({type(exc).__name__}: "
                                f"{one_line(exc)[:200]}): tables not structured, text read "
                                "as paragraphs"))
            too_long, failed = [], []
        if too_long:
            skipped[f"more than {pdf_tables.MAX_PAGE_CONTENT_BYTES} bytes of content"] = too_long
        if failed:
            issues.append(Issue(
                "parsed_sheets", None, None, "warning", "pdf_tables_failed",
                f"page {', '.join(map(str, failed))}: pdfplumber could not lay the page out "
                "for tables: its text is read as paragraphs"))
    if skipped:
        said = "; ".join(f"page {', '.join(map(str, pages))}: {why}"
                         for why, pages in skipped.items())
        issues.append(Issue("parsed_sheets", None, None, "info", "tables_not_searched",
                            f"{said}: tables not searched, the text is read as paragraphs"))
    return found


def check_streams(data: bytes, limits: Limits) -> None:
    """Refuse a PDF one of whose streams inflates past the limits, before PDFium reads it.

    Every ``stream`` keyword's data that starts as zlib data (FlateDecode, ISO 32000-1
    §7.4.4) is inflated a block at a time up to its end, the output of each layer fed to the
    next when it is zlib data again (a chain of Flate filters, up to
    :data:`MAX_FLATE_LAYERS`), and counted, never kept. Work is linear in the bytes
    inflated, which the limits bound. Streams of an encrypted PDF are not readable here
    (PDFium decrypts them).

    Raises:
        LimitExceededError: a stream inflates past ``limits.max_stream_bytes`` or
            ``limits.max_part_bytes``, or past ``limits.max_compression_ratio`` times its
            compressed bytes (beyond :data:`RATIO_FLOOR`), or all streams together past
            ``limits.max_total_bytes``.
    """
    total = 0
    for match in STREAM_START.finditer(data):
        total += _inflated_size(data, match.end(), total, limits)


def _inflated_size(data: bytes, start: int, total: int, limits: Limits) -> int:
    """Bytes the Flate stream at ``data[start:]`` inflates to through every layer of Flate it
    holds (0 when it is no zlib data); ``total`` is what the streams before it inflated to."""
    most, which = min((limits.max_stream_bytes, "max_stream_bytes"),
                      (limits.max_part_bytes, "max_part_bytes"))
    consumed = [0]  # compressed bytes inflated so far
    blocks = _inflated((data[at:at + INFLATE_STEP]
                        for at in range(start, len(data), INFLATE_STEP)), consumed)
    for _ in range(MAX_FLATE_LAYERS - 1):
        first = next(blocks, b"")
        blocks = chain([first], blocks)
        if not _zlib_header(first):
            break
        blocks = _inflated(blocks)  # a chain of Flate filters: inflated again
    size = 0
    for block in blocks:
        size += len(block)
        if size > most:
            raise LimitExceededError(
                f"a stream of the PDF at byte {start} inflates beyond {most} bytes "
                f"({which}: PDFium holds a stream whole)")
        if size > RATIO_FLOOR and size > limits.max_compression_ratio * max(consumed[0], 1):
            raise LimitExceededError(
                f"a stream of the PDF at byte {start} has compression ratio "
                f"{size / max(consumed[0], 1):.0f}; the limit is "
                f"{limits.max_compression_ratio:.0f} (max_compression_ratio; a bomb?)")
        if total + size > limits.max_total_bytes:
            raise LimitExceededError(f"the PDF's streams inflate beyond "
                                     f"{limits.max_total_bytes} bytes in total (max_total_bytes)")
    return size


def _inflated(blocks: Iterable[bytes], consumed: list[int] | None = None) -> Iterator[bytes]:
    """The zlib data of ``blocks`` inflated, in pieces of at most :data:`INFLATE_STEP` bytes,
    up to its end (what follows is not read); nothing when it is no zlib data, and no more
    from where it is damaged (PDFium stops there too). ``consumed[0]`` counts the bytes of
    ``blocks`` inflated so far."""
    inflater = zlib.decompressobj()
    for block in blocks:
        pending = block
        while pending:
            try:
                piece = inflater.decompress(pending, INFLATE_STEP)
            except zlib.error:
                return
            if consumed is not None:  # at the end, what is left is after the zlib data
                left = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                consumed[0] += len(pending) - len(left)
            if piece:
                yield piece
            if inflater.eof:
                return
            pending = inflater.unconsumed_tail


def _zlib_header(head: bytes) -> bool:
    """Whether ``head`` starts as zlib data (RFC 1950 §2.2: deflate, a checked header)."""
    return (len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7
            and (head[0] << 8 | head[1]) % 31 == 0)


def _load(pdfium, data: bytes, passwords: Sequence[str]):
    """The open ``PdfDocument`` and the first password that opens it (``None``: none
    needed)."""
    for password in [None, *passwords]:
        try:
            return pdfium.PdfDocument(data, password=password), password
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) != ERR_PASSWORD:
                raise CorruptWorkbookError(f"the PDF cannot be loaded: {exc}") from exc
    raise EncryptedWorkbookError("the PDF is encrypted: password required" if not passwords
                                 else "the PDF is encrypted and no configured password opens it")


def _read_page(page, number: int) -> tuple[PageFacts, list]:
    """A page's facts and the text runs of its text layer (see :func:`paragraphs`)."""
    import pypdfium2.raw as raw

    width, height = page.get_size()
    text_page = page.get_textpage()
    try:
        chars = text_page.count_chars()
        rects = text_page.count_rects()
        if rects > MAX_BOXED_RUNS:
            runs = text_runs(text_page, chars)
        else:  # PDFium's own runs, each one's text asked by its box (each ask scans the page)
            runs = []
            for k in range(rects):
                left, bottom, right, top = text_page.get_rect(k)
                text = text_page.get_text_bounded(left, bottom, right, top).strip()
                if text:
                    first = text_page.get_index((left + right) / 2, (bottom + top) / 2,
                                                right - left, top - bottom)
                    size = (raw.FPDFText_GetFontSize(text_page, first) if first is not None
                            else 0.0)
                    runs.append((left, bottom, right, top, size, text))
    finally:
        text_page.close()
    boxes, paths = [], 0
    for obj in page.get_objects(filter=(raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_PATH)):
        if obj.type == raw.FPDF_PAGEOBJ_IMAGE:
            boxes.append(obj.get_bounds())
        else:
            paths += 1
    coverage = image_coverage(boxes, width, height)
    rotation = page.get_rotation() % 360
    long = [r for r in runs if len(r[5]) >= 3]
    sideways = rotation != 0 and 2 * sum(r[2] - r[0] > r[3] - r[1] for r in long) >= len(long)
    if rotation and not sideways:  # drawn turned so that it reads upright as shown
        runs = [_as_shown(run, rotation, width, height) for run in runs]
    return PageFacts(number, width, height, chars, coverage, paths, sideways,
                     () if rotation else tuple(boxes)), runs


def _as_shown(run: tuple, rotation: int, width: float, height: float) -> tuple:
    """A text run's box (PDF user space, y up) in the page as shown after its ``/Rotate`` of
    90, 180 or 270 degrees clockwise (``width`` x ``height``: the size as shown; PDF 32000-1
    §7.7.3.3); the mediabox is taken to start at 0, 0."""
    left, bottom, right, top, size, text = run
    w, h = (height, width) if rotation in (90, 270) else (width, height)  # as stored
    box = {90: (bottom, w - right, top, w - left),
           180: (w - right, h - top, w - left, h - bottom),
           270: (h - top, left, h - bottom, right)}[rotation]
    return (*box, size, text)


def text_runs(text_page, chars: int) -> list[tuple[float, float, float, float, float, str]]:
    """The text runs ``(left, bottom, right, top, font size, text)`` of a PDFium text page of
    ``chars`` characters, each character read once (linear in the page; for pages of more
    than :data:`MAX_BOXED_RUNS` of PDFium's runs): characters between white space,
    cut where the next one is on another line or more than :data:`RUN_GAP` font heights away
    (the height of its loose box: a font size of 1 may be scaled by the text matrix)."""
    import pypdfium2.raw as raw

    runs: list[list] = []
    open_run = False
    for i in range(chars):
        ch = chr(raw.FPDFText_GetUnicode(text_page, i))
        if ch.isspace() or not ch.isprintable():
            open_run = False
            continue
        left, bottom, right, top = text_page.get_charbox(i, loose=True)
        size = raw.FPDFText_GetFontSize(text_page, i)
        if open_run:
            run = runs[-1]
            overlap = min(top, run[3]) - max(bottom, run[1])
            em = max(top - bottom, size, 1.0)  # the font's box: sizes may be 1 and scaled
            if (overlap >= 0.5 * min(top - bottom, run[3] - run[1])
                    and -0.5 * em <= left - run[2] <= RUN_GAP * em):
                run[2], run[1], run[3] = max(run[2], right), min(run[1], bottom), max(run[3], top)
                run[5].append(ch)
                continue
        runs.append([left, bottom, right, top, size, [ch]])
        open_run = True
    return [(r[0], r[1], r[2], r[3], r[4], "".join(r[5])) for r in runs]


def image_coverage(boxes: list[tuple[float, float, float, float]], width: float,
                   height: float) -> float:
    """Share of a ``width`` x ``height`` page (0..1) that the ``(left, bottom, right, top)``
    boxes cover together (overlaps counted once), measured on a
    :data:`COVERAGE_RASTER`-square raster."""
    if not boxes or width <= 0 or height <= 0:
        return 0.0
    n = COVERAGE_RASTER
    mask = np.zeros((n, n), dtype=bool)
    for left, bottom, right, top in boxes:
        x1, x2 = (int(np.clip(v / width * n, 0, n)) for v in (min(left, right), max(left, right)))
        y1, y2 = (int(np.clip(v / height * n, 0, n)) for v in (min(bottom, top), max(bottom, top)))
        mask[y1:max(y2, y1), x1:max(x2, x1)] = True
    return float(mask.mean())


def paragraphs(runs: list[tuple[float, float, float, float, float, str]]
               ) -> list[tuple[float, str]]:
    """Text runs ``(left, bottom, right, top, font size, text)`` in PDF coordinates (points, y
    up) as paragraphs ``(top, text)``, top to bottom: runs overlapping vertically by half the
    smaller height are one line (left to right); a line starts a paragraph when the gap above
    it exceeds :data:`PARAGRAPH_GAP` times its font size, or its font size differs from the
    line above's by more than :data:`SIZE_CHANGE` (a heading)."""
    lines: list[list] = []  # [bottom, top, size, [(left, text)]]
    for left, bottom, right, top, size, text in sorted(runs, key=lambda r: (-r[3], r[0])):
        for line in reversed(lines[-LINES_LOOKED_BACK:]):
            overlap = min(top, line[1]) - max(bottom, line[0])
            if overlap >= 0.5 * min(top - bottom, line[1] - line[0]):
                line[3].append((left, text))
                line[0], line[1] = min(bottom, line[0]), max(top, line[1])
                line[2] = max(size, line[2])
                break
        else:
            lines.append([bottom, top, size, [(left, text)]])
    lines.sort(key=lambda line: -line[1])
    out: list[tuple[float, list[str]]] = []
    above = None
    for bottom, top, size, parts in lines:
        size = size or max(top - bottom, 1.0)
        if (above is None or above[0] - top > PARAGRAPH_GAP * max(size, above[1])
                or abs(size - above[1]) > SIZE_CHANGE * max(size, above[1])):
            out.append((top, []))
        out[-1][1].append(" ".join(t for _, t in sorted(parts)))
        above = (bottom, size)
    return [(top, " ".join(p)) for top, p in out]


def _text_layer(sheet: SheetBuilder, fact: PageFacts, runs: list, tables: list,
                read: list[OcrParagraph], session: OcrSession) -> None:
    """A page's paragraphs, tables (:class:`~.pdf_tables.PdfTable`) and the paragraphs OCR
    ``read`` in its pictures on its sheet, top to bottom; the runs inside a table are its
    cells, not paragraphs."""
    if fact.route == "image_scan":
        return  # nothing to read: see the ocr_not_configured issue
    boxes = [_pdf_box(t.bbox, fact.height) for t in tables]
    kept = [r for r in runs if not any(b[0] <= (r[0] + r[2]) / 2 <= b[2]
                                       and b[1] <= (r[1] + r[3]) / 2 <= b[3] for b in boxes)]
    items = [(top, 1, k, text) for k, (top, text) in enumerate(paragraphs(kept), start=1)]
    items += [(box[3], 0, k, table) for k, (box, table) in enumerate(zip(boxes, tables), start=1)]
    items += [(fact.height - p.box[1], 2, k, p) for k, p in enumerate(read, start=1)]
    for _, kind, k, item in sorted(items, key=lambda i: (-i[0], i[1], i[2])):
        if kind == 1:
            sheet.text(item, f"page {fact.number} paragraph {k}", "text_layer")
        elif kind == 2:
            sheet.text(item.text, f"page {fact.number} picture paragraph {k}", "ocr",
                       **item_details([item], session.tesseract.label))
        else:
            sheet.table(item.cells, f"page {fact.number} table {k}", item.header_rows,
                        label=f"{item.ruling} table")


def _pdf_box(bbox: tuple[float, float, float, float], height: float
             ) -> tuple[float, float, float, float]:
    """pdfplumber's ``(x0, top, x1, bottom)`` (y down from the page's top) as PDF coordinates
    ``(left, bottom, right, top)`` (y up) on a page ``height`` points high."""
    x0, top, x1, bottom = bbox
    return x0, height - bottom, x1, height - top


def _route_issues(facts: list[PageFacts], issues: list[Issue], scanned: dict[int, list],
                  setup: OcrSetup | None) -> None:
    """One ``info`` issue per route that needs saying, naming its pages; scanned pages read
    by OCR (``scanned``) get ``ocr_read``, those left unread because OCR is not configured
    ``ocr_not_configured`` (a failed or skipped page has its ``warning`` already, a
    misconfigured OCR its ``ocr_misconfigured``)."""
    def pages(route: str) -> str:
        return ", ".join(str(f.number) for f in facts if f.route == route and (
            route != "image_scan" or setup is not None and setup.tesseract is None
            and not setup.problem))

    if scanned:
        empty = [n for n, found in scanned.items() if not found]
        issues.append(Issue("parsed_sheets", None, None, "info", "ocr_read", (
            f"page {', '.join(map(str, scanned))}: scanned pages (images cover the page) "
            f"without a text layer read by OCR ({setup.tesseract.label}); words below "
            f"confidence {MIN_CONFIDENCE:.0f} are kept and listed in review_items" + (
                f"; no text found on page {', '.join(map(str, empty))} (blank, a picture, "
                "or too blurred to read)" if empty else ""))))

    said = {
        "low_text": ("low_text", f"fewer than {MIN_TEXT_CHARS} characters of text layer: "
                                 "what there is is read as text"),
        "ocr_scan": ("ocr_text_layer", "scanned pages (images cover the page) with a text "
                                       "layer made by OCR software: that text layer is read"),
        "image_scan": ("ocr_not_configured", "scanned pages (images cover the page) without a "
                                             "text layer: OCR is not configured (install "
                                             "Tesseract: see the README's set-up; ingest "
                                             "reads the file again once it is), no text "
                                             "read"),
    }
    for route, (code, message) in said.items():
        listed = pages(route)
        if listed:
            issues.append(Issue("parsed_sheets", None, None, "info", code,
                                f"page {listed}: {message}"))


def models_path() -> Path | None:
    """The folder of Docling's models named by :data:`MODELS_ENV`, when set and present."""
    value = os.environ.get(MODELS_ENV, "").strip()
    return Path(value) if value and Path(value).is_dir() else None


def _docling_pages(data: bytes, limits: Limits, issues: list[Issue]):
    """The ``DoclingDocument`` of the PDF (its digital pages are used) by Docling's standard
    PDF pipeline (layout and table models from :func:`models_path`, OCR off), or ``None`` when
    no model folder is configured, or (with a ``warning`` ``docling_models_unavailable``) when
    Docling's PDF pipeline cannot run here."""
    path = models_path()
    if path is None:
        if os.environ.get(MODELS_ENV, "").strip():
            issues.append(Issue("parsed_sheets", None, None, "warning",
                                "docling_models_unavailable",
                                f"{MODELS_ENV} names no folder: PDF read from its text layer"))
        return None
    try:
        import io

        from docling.datamodel.base_models import DocumentStream, InputFormat
        from docling.datamodel.pipeline_options import PdfPipelineOptions
        from docling.document_converter import DocumentConverter, PdfFormatOption
    except ImportError as exc:
        issues.append(Issue("parsed_sheets", None, None, "warning", "docling_models_unavailable",
                            f"{MODELS_ENV} is set but Docling's PDF pipeline is not installed "
                            f"({exc}; pip install 'extraction-assets[documents-models]'): "
                            "PDF read from its text layer"))
        return None
    options = PdfPipelineOptions(artifacts_path=str(path), do_ocr=False,
                                 do_table_structure=True, enable_remote_services=False)
    converter = DocumentConverter(format_options={InputFormat.PDF: PdfFormatOption(
        pipeline_options=options)})
    try:
        result = converter.convert(DocumentStream(name="document.pdf", stream=io.BytesIO(data)),
                                   max_num_pages=limits.max_sheets, raises_on_error=True)
    except Exception as exc:  # noqa: BLE001 - models missing or failing: the text layer remains
        issues.append(Issue("parsed_sheets", None, None, "warning", "docling_models_unavailable",
                            f"Docling's PDF pipeline failed ({type(exc).__name__}: "
                            f"{str(exc)[:200]}): PDF read from its text layer"))
        return None
    return result.document
