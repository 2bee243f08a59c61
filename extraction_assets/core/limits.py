"""Safety limits of one input file (:class:`Limits`) and what its sheets have used of them
(:class:`Budget`); a file past a limit is refused with
:class:`~extraction_assets.core.errors.LimitExceededError`."""

from __future__ import annotations

from dataclasses import dataclass

from extraction_assets.core.errors import LimitExceededError


@dataclass(frozen=True)
class Limits:
    """Safety limits applied to every input package (bytes are uncompressed sizes).

    Attributes:
        max_parts: most zip entries a package may hold.
        max_total_bytes: most uncompressed bytes over all parts read.
        max_part_bytes: most uncompressed bytes of one part.
        max_compression_ratio: most uncompressed/compressed ratio of a part larger than 1 MiB.
        max_sheets: most worksheets in a workbook.
        max_cells: most non-empty cells over the whole workbook, the cells merged ranges fill
            included.
        max_merged_ranges: most merged ranges on one worksheet.
        max_cell_chars: most characters of one cell's text or formula (Excel's own limit is
            32,767); a longer one is cut there, with a ``cell_text_truncated`` warning.
        max_text_bytes: most bytes (UTF-8) of cell text over the whole workbook, as the cells
            show it: shared strings counted once per cell that uses them, merged ranges'
            values once per cell they fill.
        max_styles: most entries of each list of the stylesheet (``cellXfs``, fonts, fills,
            borders, number formats...; Excel's own limit is 65,490 cell formats).
        max_tree_bytes: most bytes of XML held as an element tree: a part read whole
            (workbook, styles, comments, drawings, charts...) or what a worksheet holds outside
            its ``<sheetData>``.
        max_nesting_depth: most elements open at once in an HTML page or in an XML part of a
            Word or PowerPoint package (tables in tables, groups of shapes), and most block
            quotes and list items around one line of Markdown; checked before the document is
            parsed (Docling's work grows with the depth times the size).
        max_stream_bytes: most decoded bytes of one stream of a PDF (a page's content, an
            object stream), which PDFium holds whole; the zip limits (``max_part_bytes``,
            ``max_compression_ratio``, ``max_total_bytes``) apply to its streams too.
        max_image_pixels: most pixels (width x height) a picture of a Word or PowerPoint
            package declares in its header (Docling decodes every picture); Pillow's own
            decompression-bomb threshold.
        max_start_tag_bytes: most bytes of one start tag of an XML part (its name, attributes
            and their values; in UTF-8 for a part in UTF-16 or UTF-32), checked as the part is
            read, before an XML parser holds the tag: an element of millions of attributes
            made libxml2 hold a gigabyte. Excel's longest tags (a ``sqref`` of many ranges)
            take a few kilobytes.
        max_ocr_images: most images of one file read by OCR (scanned pages and pictures
            together; Tesseract takes 1-5 s an image); later ones get an ``ocr_skipped``
            warning.
        max_ocr_pixels: most pixels of an image handed to Tesseract: a scanned page is
            rendered at 300 dpi or less so that it fits (an A4 page at 300 dpi is 8.7
            million pixels).
    """

    max_parts: int = 10_000
    max_total_bytes: int = 4 * 1024**3
    max_part_bytes: int = 2 * 1024**3
    max_compression_ratio: float = 2_000.0
    max_sheets: int = 2_000
    max_cells: int = 50_000_000
    max_merged_ranges: int = 1_000_000
    max_cell_chars: int = 32_767
    max_text_bytes: int = 64 * 1024**2
    max_styles: int = 65_490
    max_tree_bytes: int = 16 * 1024**2
    max_nesting_depth: int = 100
    max_stream_bytes: int = 128 * 1024**2
    max_image_pixels: int = 89_478_485
    max_start_tag_bytes: int = 1024**2
    max_ocr_images: int = 500
    max_ocr_pixels: int = 40_000_000


class Budget:
    """What the sheets of one workbook have used of its :class:`Limits`: cells and bytes of
    cell text (see ``max_cells`` and ``max_text_bytes``), counted by whoever makes them (the
    worksheet reader, the merge fill of the normalizer).

    Raises:
        LimitExceededError: from :meth:`add` and :meth:`check_text` once a limit is passed.
    """

    def __init__(self, limits: Limits):
        self.limits = limits
        self.cells = 0
        self.text_bytes = 0

    def check_text(self, text_bytes: int) -> None:
        """Raise before ``text_bytes`` more bytes of text are made, if they would not fit."""
        if self.text_bytes + text_bytes > self.limits.max_text_bytes:
            raise LimitExceededError(
                f"workbook has more than {self.limits.max_text_bytes} bytes of cell text "
                "(max_text_bytes; shared strings and merged values counted in every cell that "
                "shows them)")

    def add(self, cells: int, text_bytes: int = 0) -> None:
        """Count ``cells`` more cells holding ``text_bytes`` bytes of text."""
        self.check_text(text_bytes)
        self.cells += cells
        self.text_bytes += text_bytes
        if self.cells > self.limits.max_cells:
            raise LimitExceededError(f"workbook has more than {self.limits.max_cells} cells")

    def state(self) -> tuple[int, int]:
        """What is used so far, for :meth:`restore`."""
        return self.cells, self.text_bytes

    def restore(self, state: tuple[int, int]) -> None:
        """Go back to an earlier :meth:`state` (a sheet read again from its start)."""
        self.cells, self.text_bytes = state
