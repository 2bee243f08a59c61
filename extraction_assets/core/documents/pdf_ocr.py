"""OCR of a PDF's scanned pages (route ``image_scan``: images cover the page, no text layer):
the page rendered by PDFium in grayscale at :data:`OCR_DPI` (less when the page would pass
``limits.max_ocr_pixels``), read by Tesseract (:mod:`extraction_assets.core.ocr`), and each of
Tesseract's paragraphs laid out on the page's sheet as a ``text`` block labelled ``ocr``, with
its box on the page (points from the page's top left, as pdfplumber gives them), its mean
confidence and the words below :data:`~extraction_assets.core.ocr.MIN_CONFIDENCE` (which
become ``review_items``).
"""

from __future__ import annotations

import math

from extraction_assets.core.documents.layout import SheetBuilder
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue
from extraction_assets.core.ocr import OcrParagraph, OcrSession, item_details

#: Resolution a scanned page is rendered at for OCR (Tesseract reads 300 dpi scans best).
OCR_DPI = 300


def read_scan(session: OcrSession, page, number: int, limits: Limits, issues: list[Issue]
              ) -> list[OcrParagraph] | None:
    """The paragraphs of an open pypdfium2 page (``number``, 1-based), boxes in points from
    the page's top left; ``None`` when OCR is not configured, used up or failed (said in
    ``issues``)."""
    width, height = page.get_size()
    scale = OCR_DPI / 72
    if width * height * scale * scale > limits.max_ocr_pixels:
        scale = math.sqrt(limits.max_ocr_pixels / max(width * height, 1.0))
    image = page.render(scale=scale, grayscale=True, may_draw_forms=False).to_pil()
    return session.read(image, f"page {number}", issues, f"Page {number}", scale=scale)


def lay_out(sheet: SheetBuilder, number: int, paragraphs: list[OcrParagraph],
            reader: str) -> None:
    """The OCR ``paragraphs`` of page ``number`` on its sheet, one ``text`` block each (named
    ``page N ocr paragraph K``), in Tesseract's reading order."""
    for k, paragraph in enumerate(paragraphs, start=1):
        sheet.text(paragraph.text, f"page {number} ocr paragraph {k}", "ocr",
                   **item_details([paragraph], reader))
