"""Scanned pages and pictures of text built in code for the OCR tests: text drawn by Pillow
with a Japanese font (Debian ``fonts-ipafont-gothic``), saved as a PDF page that is one
picture (a scanner without OCR) or placed in a workbook; nothing copied from elsewhere."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

#: Fonts with Latin and Japanese glyphs, the first present is used.
JAPANESE_FONTS = ("/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf",
                  "/usr/share/fonts/truetype/fonts-japanese-gothic.ttf",
                  "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
#: The lines of the scanned inspection page, top to bottom (the last one smudged).
SCAN_LINES = ("Cooling tower inspection",
              "The cooling tower passed the pressure test on 12 March.",
              "冷却塔は三月十二日の圧力試験に合格しました。",
              "Inspector Tanaka signed 4 forms")
#: How far each letter of a squeezed line is drawn into the one before (share of the font size).
SQUEEZE = 0.22
#: The lines of the picture of :func:`picture_xlsx_bytes`.
PICTURE_LINES = ("Net sales total 1,250", "売上高の合計")


def japanese_font() -> str:
    """The path of a font with Japanese glyphs; skips the test without one."""
    for path in JAPANESE_FONTS:
        if Path(path).exists():
            return path
    pytest.skip("no Japanese font (sudo apt-get install fonts-ipafont-gothic)")


def need_tesseract() -> None:
    """Skip the test unless Tesseract with English and Japanese is installed."""
    from extraction_assets.core.ocr import find_tesseract

    found = shutil.which("tesseract") and find_tesseract()
    if not found or found.languages != "eng+jpn":
        pytest.skip("Tesseract with eng and jpn is not installed "
                    "(sudo apt-get install tesseract-ocr tesseract-ocr-jpn)")


def scanned_page(lines=SCAN_LINES, squeeze_last: bool = True):
    """An A4-ish page at 200 dpi (1654 x 2339 pixels, grayscale) with ``lines`` drawn 36
    pixels high (the first 56); when ``squeeze_last``, the last line's letters overlap (each
    drawn :data:`SQUEEZE` of the font size left of where it belongs, as a cramped hand
    writes): the words OCR is not sure of."""
    from PIL import Image, ImageDraw, ImageFont

    font_path = japanese_font()
    page = Image.new("L", (1654, 2339), 255)
    draw = ImageDraw.Draw(page)
    y = 200
    for k, text in enumerate(lines):
        size = 56 if k == 0 else 36
        font = ImageFont.truetype(font_path, size)
        if squeeze_last and k == len(lines) - 1:
            x = 160.0
            for char in text:
                draw.text((x, y), char, font=font, fill=0)
                x += draw.textlength(char, font=font) - SQUEEZE * size
        else:
            draw.text((160, y), text, font=font, fill=0)
        y += 140 if k == 0 else 100
    return page


#: The rows of the ruled table of :func:`ruled_table_page`.
TABLE_ROWS = (("Item", "Qty", "Price"), ("Widget", "12", "4.50"), ("Gadget", "7", "19.99"),
              ("Sprocket", "30", "0.75"))


def ruled_table_page():
    """A page at 200 dpi (grayscale) holding :data:`TABLE_ROWS` as a table ruled all round
    (cells 400 x 80 pixels, rules 3 pixels wide, text 36 pixels high)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(japanese_font(), 36)
    page = Image.new("L", (1654, 2339), 255)
    draw = ImageDraw.Draw(page)
    left, top, width, height = 150, 300, 400, 80
    for r, row in enumerate(TABLE_ROWS):
        for c, text in enumerate(row):
            x, y = left + c * width, top + r * height
            draw.rectangle((x, y, x + width, y + height), outline=0, width=3)
            draw.text((x + 15, y + 20), text, font=font, fill=0)
    return page


def scanned_pdf_bytes(pages: int = 1) -> bytes:
    """A PDF of ``pages`` scanned pages (:func:`scanned_page`), no text layer."""
    images = [scanned_page() for _ in range(pages)]
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=200, save_all=True, append_images=images[1:])
    return out.getvalue()


def picture_xlsx_bytes(transparent: bool = False) -> bytes:
    """A workbook whose sheet ``Summary`` holds a title in A1 and, anchored at B3, a picture
    (PNG, 520 x 140) of :data:`PICTURE_LINES` with the alt text ``Sales figure``; black text on
    a white background, or (``transparent``) on a transparent one, as logos are saved."""
    import openpyxl
    from openpyxl.drawing.image import Image as SheetImage
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(japanese_font(), 28)
    picture = Image.new("RGBA", (520, 140), (0, 0, 0, 0)) if transparent else Image.new(
        "RGB", (520, 140), "white")
    draw = ImageDraw.Draw(picture)
    for k, text in enumerate(PICTURE_LINES):
        draw.text((12, 14 + 60 * k), text, font=font, fill="black")
    png = io.BytesIO()
    picture.save(png, "PNG")
    png.seek(0)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Summary"
    ws["A1"] = "Quarterly summary"
    placed = SheetImage(png)
    ws.add_image(placed, "B3")
    placed.anchor = "B3"
    out = io.BytesIO()
    wb.save(out)
    return _with_alt_text(out.getvalue(), "Sales figure")


def _with_alt_text(data: bytes, alt_text: str) -> bytes:
    """The workbook ``data`` with its pictures' alt text (``descr``, openpyxl writes
    ``Picture``) set to ``alt_text``."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            part = source.read(item.filename)
            if item.filename.startswith("xl/drawings/drawing"):
                part = part.replace(b'descr="Picture"', f'descr="{alt_text}"'.encode())
            target.writestr(item, part)
    return out.getvalue()
