"""Documents read into the same graph as workbooks: Word (``.docx``), PowerPoint (``.pptx``),
PDF, HTML and Markdown (:func:`open_document`).

A document becomes a :class:`~.layout.DocumentWorkbook`: its sections, slides or pages are
sheets laid out in reading order (:mod:`.layout`), each item declared as the block it is, so
the normalizer, the renderer, the checks and search treat it as they treat a worksheet.
Word, PowerPoint, HTML and Markdown go through Docling's backends (:mod:`.docling`, no
model, no PyTorch); PDF pages are routed and read from their text layer (:mod:`.pdf`).
"""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Sequence

from extraction_assets.core.documents.layout import DocumentWorkbook, Sheets
from extraction_assets.core.errors import LimitExceededError
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue
from extraction_assets.core.package import PackageReader
from extraction_assets.core.sniff import Sniffed


def open_document(data: bytes, sniffed: Sniffed, limits: Limits,
                  passwords: Sequence[str] = ()) -> DocumentWorkbook:
    """Read a document (``sniffed.format`` one of
    :data:`~extraction_assets.core.sniff.DOCUMENT_FORMATS`) as a workbook of sheets.

    Raises:
        CorruptWorkbookError: the file cannot be read.
        EncryptedWorkbookError: an encrypted PDF that no password in ``passwords`` opens.
        HostileContentError: an XML part of a Word or PowerPoint package declares a DTD.
        LimitExceededError: the file passes ``limits`` (package parts and sizes, XML parts
            read whole, sections/slides/pages, cells, text).
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
    python-pptx parse whole larger than ``limits.max_tree_bytes``, and a DTD in any XML part.
    Returns the part names.

    Raises:
        CorruptWorkbookError, LimitExceededError, HostileContentError: see above.
    """
    with PackageReader(data, limits) as package:
        for name, size in package.sizes():
            if not name.lower().endswith((".xml", ".rels")):
                continue
            if size > limits.max_tree_bytes:
                raise LimitExceededError(
                    f"part {name} holds {size} bytes of XML; the limit of a part read whole is "
                    f"{limits.max_tree_bytes} (max_tree_bytes)")
            package.open(name, limits.max_tree_bytes).close()  # refuses a DTD
        return package.names()


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - installed with the project
        return "?"

