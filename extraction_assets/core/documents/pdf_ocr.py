"""OCR of a PDF's scanned pages (route ``image_scan``: images cover the page, no text layer)
and of the pictures of its ``low_text`` pages (a page of little text and a picture of a table,
say): the page rendered by PDFium in grayscale at :data:`OCR_DPI` (less when the page would
pass ``limits.max_ocr_pixels``), the whole page or each picture's area read by Tesseract
(:mod:`extraction_assets.core.ocr`), and each of Tesseract's paragraphs laid out on the page's
sheet as a ``text`` block labelled ``ocr``, with its box on the page (points from the page's
top left, as pdfplumber gives them), its mean confidence and the words below
:data:`~extraction_assets.core.ocr.MIN_CONFIDENCE` (which become ``review_items``).
"""

from __future__ import annotations

import math
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from extraction_assets.core.documents.layout import SheetBuilder
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue
from extraction_assets.core.ocr import OcrError, OcrParagraph, OcrSession, failed, item_details

#: Resolution a scanned page is rendered at for OCR (Tesseract reads 300 dpi scans best).
OCR_DPI = 300


#: Tesseract processes one PDF's OCR runs at once (pages are independent; each process uses one
#: core).
OCR_WORKERS = max(1, min(4, os.cpu_count() or 1))
#: Pictures of a ``low_text`` page smaller than this many points on a side are not read (a
#: logo, an icon, a rule drawn as an image).
MIN_PICTURE_PT = 36.0
#: Most pictures of one ``low_text`` page read, the largest first.
MAX_PAGE_PICTURES = 20


class PageOcr:
    """The OCR of a PDF's scanned pages and ``low_text`` pictures, at most
    :data:`OCR_WORKERS` Tesseract processes at once and at most twice as many rendered images
    held: :meth:`scan` and :meth:`pictures` take an open page while the file is read, in page
    order; :meth:`results` gives each page's paragraphs (boxes in points from the page's top
    left) and says each failure in ``issues``, in page order (the same for the same bytes)."""

    def __init__(self, session: OcrSession, limits: Limits, issues: list[Issue]):
        self.session, self.limits, self.issues = session, limits, issues
        self.pool: ThreadPoolExecutor | None = None
        self.pending: deque = deque()  # (page, what, offset, future)
        self.read: dict[int, list[OcrParagraph]] = {}

    def scan(self, page, number: int) -> None:
        """OCR of the whole page ``number`` (1-based), an ``image_scan`` page."""
        what = f"page {number}"
        if self.session.claim(what, self.issues, f"Page {number}"):
            image, scale = _rendered(page, self.limits)
            self._submit(number, what, image, scale, (0.0, 0.0))

    def pictures(self, page, number: int, boxes: list[tuple]) -> None:
        """OCR of the pictures of page ``number`` (shown unturned) whose ``(left, bottom,
        right, top)`` boxes (PDF points, y up) are at least :data:`MIN_PICTURE_PT` a side
        (the :data:`MAX_PAGE_PICTURES` largest), each read in the page as rendered (what is
        drawn over it counts), top to bottom."""
        height = page.get_size()[1]
        boxes = sorted((b for b in boxes if min(b[2] - b[0], b[3] - b[1]) >= MIN_PICTURE_PT),
                       key=lambda b: (b[0] - b[2]) * (b[3] - b[1]))[:MAX_PAGE_PICTURES]
        self.read.setdefault(number, [])
        image = None
        for k, (left, bottom, right, top) in enumerate(sorted(boxes, key=lambda b: -b[3]), 1):
            what = f"page {number} picture {k}"
            if not self.session.claim(what, self.issues, f"Page {number}"):
                continue
            if image is None:
                image, scale = _rendered(page, self.limits)
            x, y = max(left, 0.0), max(height - top, 0.0)
            crop = image.crop((round(x * scale), round(y * scale), round(right * scale),
                               round((height - bottom) * scale)))
            self._submit(number, what, crop, scale, (x, y))

    def _submit(self, number: int, what: str, image, scale: float,
                offset: tuple[float, float]) -> None:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(OCR_WORKERS, thread_name_prefix="ocr")
        future = self.pool.submit(self.session.tesseract.read, image, scale)
        self.pending.append((number, what, offset, future))
        while len(self.pending) > 2 * OCR_WORKERS:
            self._collect()

    def _collect(self) -> None:
        number, what, (dx, dy), future = self.pending.popleft()
        try:
            found = future.result()
        except OcrError as exc:
            self.issues.append(failed(exc, what, f"Page {number}"))
            return
        self.read.setdefault(number, []).extend(shifted(p, dx, dy) for p in found)

    def results(self) -> dict[int, list[OcrParagraph]]:
        """Each page's paragraphs, once every image is read (a scanned page whose OCR failed
        is not in it)."""
        while self.pending:
            self._collect()
        return self.read

    def close(self) -> None:
        """Stop the workers (those reading finish within Tesseract's timeout)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def unread_pictures(facts: list) -> Issue | None:
    """The ``info`` issue ``pictures_not_read`` naming the ``digital`` pages (of ``facts``,
    the reader's page facts) with a picture of at least :data:`MIN_PICTURE_PT` a side: their
    text layer is read, their pictures are not (a screenshot of a table stays unread)."""
    pages = [f.number for f in facts if f.route == "digital" and any(
        min(b[2] - b[0], b[3] - b[1]) >= MIN_PICTURE_PT for b in f.pictures)]
    if not pages:
        return None
    return Issue("parsed_sheets", None, None, "info", "pictures_not_read",
                 f"page {', '.join(map(str, pages))}: pictures on pages with a text layer are "
                 "not read by OCR (the text layer is)")


def shifted(paragraph: OcrParagraph, dx: float, dy: float) -> OcrParagraph:
    """``paragraph`` with its words' boxes (so its own) moved by ``(dx, dy)`` (rounded)."""
    def move(box: tuple) -> tuple[int, int, int, int]:
        return (round(box[0] + dx), round(box[1] + dy), round(box[2] + dx), round(box[3] + dy))

    return replace(paragraph, words=tuple(replace(w, box=move(w.box)) for w in paragraph.words))


def _rendered(page, limits: Limits):
    """``(image, scale)``: the page rendered in grayscale at :data:`OCR_DPI`, or at the scale
    (pixels a point) that keeps it within ``limits.max_ocr_pixels``."""
    width, height = page.get_size()
    scale = OCR_DPI / 72
    if width * height * scale * scale > limits.max_ocr_pixels:
        scale = math.sqrt(limits.max_ocr_pixels / max(width * height, 1.0))
    return page.render(scale=scale, grayscale=True, may_draw_forms=False).to_pil(), scale


def lay_out(sheet: SheetBuilder, number: int, paragraphs: list[OcrParagraph],
            reader: str) -> None:
    """The OCR ``paragraphs`` of page ``number`` on its sheet, one ``text`` block each (named
    ``page N ocr paragraph K``), in Tesseract's reading order."""
    for k, paragraph in enumerate(paragraphs, start=1):
        sheet.text(paragraph.text, f"page {number} ocr paragraph {k}", "ocr",
                   **item_details([paragraph], reader))
