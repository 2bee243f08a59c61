"""Documents read into the same graph as workbooks: Word (``.docx``), PowerPoint (``.pptx``),
PDF, HTML and Markdown (:func:`open_document`).

A document becomes a :class:`~.layout.DocumentWorkbook`: its sections, slides or pages are
sheets laid out in reading order (:mod:`.layout`), each item declared as the block it is, so
the normalizer, the renderer, the checks and search treat it as they treat a worksheet.
Word, PowerPoint, HTML and Markdown go through Docling's backends (:mod:`.docling`, no
model, no PyTorch); PDF pages are routed and read from their text layer (:mod:`.pdf`).
"""

from __future__ import annotations

import io
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Sequence

from extraction_assets.core.documents.layout import DocumentWorkbook, Sheets
from extraction_assets.core.documents.nesting import (
    check_html_depth,
    check_markdown_depth,
    check_xml_depth,
)
from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue
from extraction_assets.core.package import PackageReader
from extraction_assets.core.sniff import Sniffed


def open_document(data: bytes, sniffed: Sniffed, limits: Limits, *,
                  filename: str | None = None, passwords: Sequence[str] = ()
                  ) -> DocumentWorkbook:
    """Read a document (``sniffed.format`` one of
    :data:`~extraction_assets.core.formats.DOCUMENT_FORMATS`) as a workbook of sheets;
    ``passwords`` open an encrypted PDF. ``filename`` is not used (every reader of the format
    table, :mod:`~extraction_assets.core.formats`, takes it).

    Raises:
        CorruptWorkbookError: the file cannot be read.
        EncryptedWorkbookError: an encrypted PDF that no password in ``passwords`` opens.
        HostileContentError: an XML part of a Word or PowerPoint package declares a DTD.
        LimitExceededError: the file passes ``limits`` (package parts and sizes, XML parts
            read whole, nesting depth, picture pixels, PDF streams, sections/slides/pages,
            cells, text).
    """
    issues: list[Issue] = []
    sheets = Sheets(limits, issues)
    started = time.perf_counter()
    if sniffed.format == "pdf":
        from extraction_assets.core.documents.pdf import open_pdf

        conversion = open_pdf(data, limits, passwords, sheets)
    else:
        from extraction_assets.core.documents.docling import convert, docling_sheets

        parts = check_package(data, limits) if sniffed.container == "zip" else []
        if sniffed.format == "html":
            check_html_depth(data, limits.max_nesting_depth)
        elif sniffed.format == "md":
            check_markdown_depth(data, limits.max_nesting_depth)
        if sniffed.format != "pptx" or any(p.lower().startswith("ppt/slides/") for p in parts):
            # (a presentation without slides is no sheet: Docling calls it invalid)
            docling_sheets(convert(data, sniffed.format, limits), sniffed.format, sheets)
        conversion = {"tool": f"Docling {_version('docling-slim')}",
                      "seconds": round(time.perf_counter() - started, 3)}
    if sniffed.has_macros:
        issues.append(Issue("parsed_sheets", None, None, "info", "macros_not_run",
                            f"the {sniffed.format} file holds a VBA project; it is never run"))
    workbook = sheets.workbook(limits, has_macros=sniffed.has_macros)
    workbook.conversion = conversion
    return workbook


def check_package(data: bytes, limits: Limits) -> list[str]:
    """Refuse a Word or PowerPoint package before Docling parses it: the package limits
    (parts, sizes, compression ratio, duplicate names), XML parts that python-docx and
    python-pptx parse whole larger than ``limits.max_tree_bytes`` or nesting deeper than
    ``limits.max_nesting_depth``, a DTD in any XML part, and a picture declaring more than
    ``limits.max_image_pixels`` (:func:`check_picture`). Returns the part names.

    Raises:
        CorruptWorkbookError, LimitExceededError, HostileContentError: see above.
    """
    with PackageReader(data, limits) as package:
        for name, size in package.sizes():
            if not name.lower().endswith((".xml", ".rels")):
                with package.open(name) as stream:
                    check_picture(stream, name, limits)
                continue
            if size > limits.max_tree_bytes:
                raise LimitExceededError(
                    f"part {name} holds {size} bytes of XML; the limit of a part read whole is "
                    f"{limits.max_tree_bytes} (max_tree_bytes)")
            with package.open(name, limits.max_tree_bytes) as stream:  # refuses a DTD
                check_xml_depth(stream, name, limits.max_nesting_depth)
        return package.names()


def check_picture(stream, name: str, limits: Limits) -> None:
    """Refuse part ``name`` (``stream``, read whole: the bytes Docling reads) when it is a
    picture Pillow reads whose header declares more than ``limits.max_image_pixels`` pixels:
    Docling decodes every picture of a Word or PowerPoint file, and a few hundred KB of PNG
    inflate to gigabytes of pixels. Only the header is read, nothing is decoded; what Pillow
    does not read as a picture is left to Docling (which skips it).

    Raises:
        LimitExceededError: the picture declares too many pixels.
    """
    from PIL import Image, UnidentifiedImageError

    data = stream.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        except Image.DecompressionBombError as exc:
            raise LimitExceededError(f"picture {name}: {exc} (max_image_pixels)") from exc
        except (UnidentifiedImageError, OSError, ValueError, EOFError, SyntaxError):
            return  # no picture Pillow reads (Docling skips it as well)
    if width * height > limits.max_image_pixels:
        raise LimitExceededError(
            f"picture {name} declares {width} x {height} pixels; the limit is "
            f"{limits.max_image_pixels} (max_image_pixels; a decompression bomb?)")


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - installed with the project
        return "?"

