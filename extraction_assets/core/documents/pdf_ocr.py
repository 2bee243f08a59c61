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
from dataclasses import replace

from extraction_assets.core.documents.layout import SheetBuilder
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue
from extraction_assets.core.ocr import OcrParagraph, OcrSession, item_details

#: Resolution a scanned page is rendered at for OCR (Tesseract reads 300 dpi scans best).
OCR_DPI = 300


#: Pictures of a ``low_text`` page smaller than this many points on a side are not read (a
#: logo, an icon, a rule drawn as an image).
MIN_PICTURE_PT = 36.0
#: Most pictures of one ``low_text`` page read, the largest first.
MAX_PAGE_PICTURES = 20


def read_scan(session: OcrSession, page, number: int, limits: Limits, issues: list[Issue]
              ) -> list[OcrParagraph] | None:
    """The paragraphs of an open pypdfium2 page (``number``, 1-based), boxes in points from
    the page's top left; ``None`` when OCR is not configured, used up or failed (said in
    ``issues``)."""
    image, scale = _rendered(page, limits)
    return session.read(image, f"page {number}", issues, f"Page {number}", scale=scale)


def read_pictures(session: OcrSession, page, number: int, boxes: list[tuple], limits: Limits,
                  issues: list[Issue]) -> list[OcrParagraph]:
    """The paragraphs of the pictures of an open pypdfium2 page (``number``, 1-based, shown
    unturned) whose ``(left, bottom, right, top)`` boxes (PDF points, y up) are at least
    :data:`MIN_PICTURE_PT` a side (the :data:`MAX_PAGE_PICTURES` largest), each read in the
    page as rendered (so what is drawn over it counts), boxes in points from the page's top
    left, top to bottom."""
    height = page.get_size()[1]
    boxes = sorted((b for b in boxes if min(b[2] - b[0], b[3] - b[1]) >= MIN_PICTURE_PT),
                   key=lambda b: (b[0] - b[2]) * (b[3] - b[1]))[:MAX_PAGE_PICTURES]
    if not boxes:
        return []
    image, scale = _rendered(page, limits)
    out: list[OcrParagraph] = []
    for k, (left, bottom, right, top) in enumerate(sorted(boxes, key=lambda b: -b[3]), 1):
        x, y = max(left, 0.0), max(height - top, 0.0)
        crop = image.crop((round(x * scale), round(y * scale), round(right * scale),
                           round((height - bottom) * scale)))
        found = session.read(crop, f"page {number} picture {k}", issues, f"Page {number}",
                             scale=scale) or []
        out += [shifted(p, x, y) for p in found]
    return out


def shifted(paragraph: OcrParagraph, dx: float, dy: float) -> OcrParagraph:
    """``paragraph`` with its boxes and its words' moved by ``(dx, dy)`` (rounded)."""
    def move(box: tuple) -> tuple[int, int, int, int]:
        return (round(box[0] + dx), round(box[1] + dy), round(box[2] + dx), round(box[3] + dy))

    return replace(paragraph, box=move(paragraph.box),
                   words=tuple(replace(w, box=move(w.box)) for w in paragraph.words))


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
