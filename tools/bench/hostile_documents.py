"""Hostile documents of issue #34 (Word, PDF, HTML, Markdown), each built in a few lines:
nesting depth, decompression bombs and a PDF page tree PDFium cannot walk. Recipes as in
:mod:`tools.bench.hostile_recipes` (``build(scale) -> (file name, bytes)``, deterministic).
"""

from __future__ import annotations

from itertools import chain
from xml.sax.saxutils import escape

from tools.bench.hostile_recipes import (
    REL_NS,
    XML_DECL,
    Part,
    Recipe,
    package,
    part_blocks,
    relationships,
    repeated,
)

# -- issue #34 (documents): nesting depth, decompression bombs, PDF structure -----------------
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_DOCX_CT = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"


def nested_html(scale: float) -> tuple[str, bytes]:
    """#34-1. 100,000 nested ``<div>`` (1.1 MB of HTML)."""
    n = int(100_000 * scale)
    return "nested_html.html", b"".join(chain(
        [b"<html><body><p>before</p>"], repeated(b"<div>", 5 * n), [b"deep"],
        repeated(b"</div>", 6 * n), [b"</body></html>"]))


def nested_markdown(scale: float) -> tuple[str, bytes]:
    """#34-1. A list nested 1,000 levels deep (an item per level, each indented two more
    columns) and a line inside 100,000 block quotes (1.1 MB of Markdown)."""
    levels = int(1_000 * scale ** 0.5)
    items = "".join("  " * k + f"- item {k}\n" for k in range(levels)).encode()
    return "nested_markdown.md", b"".join(chain(
        [b"# Nested\n\n", items, b"\n"], repeated(b">", int(100_000 * scale)), [b" deep\n"]))


def docx(body: Part, *, media: dict[str, bytes] | None = None, rels: str = "") -> bytes:
    """A Word package whose ``<w:body>`` holds ``body`` (may be streamed); ``media`` are parts
    under ``word/media/`` and ``rels`` the relationships of the document part."""
    head = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.'
            'org/package/2006/content-types"><Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
            'ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/>'
            f'<Override PartName="/word/document.xml" ContentType="{_DOCX_CT}"/></Types>'),
        "_rels/.rels": relationships(("rId1", "officeDocument", "word/document.xml")),
        "word/document.xml": chain([f'{XML_DECL}<w:document xmlns:w="{_W}" xmlns:r="{REL_NS}" '
                                    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/'
                                    'main"><w:body>'.encode()], part_blocks(body),
                                   [b"</w:body></w:document>"]),
        "word/_rels/document.xml.rels": rels or relationships(),
    }
    return package({**head, **{f"word/media/{k}": v for k, v in (media or {}).items()}})


def _paragraph(text: str) -> str:
    return f"<w:p><w:r><w:t>{escape(text)}</w:t></w:r></w:p>"


def nested_docx_tables(scale: float) -> tuple[str, bytes]:
    """#34-1. Tables nested 50,000 deep in a Word document (each in the one cell of the one
    above)."""
    n = int(50_000 * scale)
    return "nested_docx_tables.docx", docx(chain(
        [_paragraph("before").encode()], repeated(_TABLE_START, len(_TABLE_START) * n),
        [_paragraph("deep").encode()], repeated(_TABLE_END, len(_TABLE_END) * n)))


#: A Word table of one column and the start of its one cell, and their end.
_TABLE_START = b'<w:tbl><w:tblPr/><w:tblGrid><w:gridCol w:w="2000"/></w:tblGrid><w:tr><w:tc>'
_TABLE_END = b"</w:tc></w:tr></w:tbl>"


def png(width: int, height: int) -> bytes:
    """A white 8-bit grey PNG of ``width`` x ``height`` pixels, deflated a row at a time."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    deflate, row, out = zlib.compressobj(9), b"\x00" + b"\xff" * width, []
    for _ in range(height):
        out.append(deflate.compress(row))
    out.append(deflate.flush())
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                              0, 0, 0))
            + chunk(b"IDAT", b"".join(out)) + chunk(b"IEND", b""))


def png_bomb(scale: float) -> tuple[str, bytes]:
    """#34-2. A Word document showing a PNG of 12,000 x 12,000 grey pixels (144 MB decoded,
    under Pillow's own refusal at 179 M pixels) deflated to 140 KB."""
    side = max(1, int(12_000 * scale ** 0.5))
    drawing = ('<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
               'drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/>'
               '<wp:docPr id="1" name="Picture 1"/><a:graphic><a:graphicData uri="http://'
               'schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://'
               'schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="1"'
               ' name="bomb.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:embed='
               '"rIdImg"/></pic:blipFill><pic:spPr/></pic:pic></a:graphicData></a:graphic>'
               '</wp:inline></w:drawing></w:r></w:p>')
    return "png_bomb.docx", docx(_paragraph("a picture:") + drawing,
                                 media={"bomb.png": png(side, side)},
                                 rels=relationships(("rIdImg", "image", "media/bomb.png")))


def pdf(objects: list[Part], root: int = 1) -> bytes:
    """A PDF of ``objects`` (numbered from 1; each the text between ``obj`` and ``endobj``,
    may be streamed) with its cross-reference table; ``root`` is the catalog's number."""
    out, offsets, size = [b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"], [], 15
    for number, body in enumerate(objects, start=1):
        offsets.append(size)
        for block in chain([f"{number} 0 obj\n".encode()], part_blocks(body), [b"\nendobj\n"]):
            out.append(block)
            size += len(block)
    xref = "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    out.append(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n{xref}trailer\n<< /Size "
               f"{len(objects) + 1} /Root {root} 0 R >>\nstartxref\n{size}\n%%EOF\n".encode())
    return b"".join(out)


def _pdf_page(contents: int, parent: int = 2) -> str:
    return (f"<< /Type /Page /Parent {parent} 0 R /MediaBox [0 0 612 792] /Contents "
            f"{contents} 0 R /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
            "/BaseFont /Helvetica >> >> >> >>")


def pdf_stream_bomb(scale: float) -> tuple[str, bytes]:
    """#34-2. A page whose content stream inflates to 500 MB of spaces (510 KB of PDF)."""
    import zlib

    deflate = zlib.compressobj(9)
    text = b"BT /F1 12 Tf 72 720 Td (a page of spaces) Tj ET\n"
    body = [deflate.compress(text)]
    body += [deflate.compress(block) for block in repeated(b" ", int(500e6 * scale))]
    body.append(deflate.flush())
    data = b"".join(body)
    return "pdf_stream_bomb.pdf", pdf([
        "<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _pdf_page(4), [f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode(),
                       data, b"\nendstream"]])


def pdf_self_kid(scale: float) -> tuple[str, bytes]:
    """#34-6. A ``/Pages`` node that lists itself among its kids (and a page of text)."""
    text = b"BT /F1 12 Tf 72 720 Td (a page) Tj ET"
    return "pdf_self_kid.pdf", pdf([
        "<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        _pdf_page(4), [f"<< /Length {len(text)} >>\nstream\n".encode(), text,
                       b"\nendstream"]])


#: The recipes of issue #34 on documents (nesting depth, decompression bombs, PDF structure).
DOCUMENT_RECIPES: dict[str, Recipe] = {
    "nested_html": Recipe(nested_html, "limit_exceeded"),
    "nested_markdown": Recipe(nested_markdown, "limit_exceeded"),
    "nested_docx_tables": Recipe(nested_docx_tables, "limit_exceeded"),
    "png_bomb": Recipe(png_bomb, "limit_exceeded"),
    "pdf_stream_bomb": Recipe(pdf_stream_bomb, "limit_exceeded"),
    "pdf_self_kid": Recipe(pdf_self_kid, "corrupt_workbook"),
}
