"""Word, PowerPoint, HTML and Markdown through Docling's declarative backends, and a
``DoclingDocument`` laid out as sheets (:func:`docling_sheets`).

Conversion (:func:`convert`) runs one backend (``MsWordDocumentBackend``,
``MsPowerpointDocumentBackend``, ``HTMLDocumentBackend``, ``MarkdownDocumentBackend``) through
Docling's ``SimplePipeline``, never its ``DocumentConverter``: that one imports every pipeline,
PyTorch's included, and these formats need no model. Remote and local fetches are off (an
HTML page's images and links are not loaded), chart images are not rendered, and nothing is
handed to LibreOffice: not a Windows metafile picture of a presentation, nor a Word
drawing, chart or picture Pillow cannot read (pictures are kept as references only).
Docling is imported on first use: a workbook ingest never loads it.

The mapping (see :mod:`.layout` for the grid):

* **Sheets**: a presentation's slides (``Slide 3``; a hidden slide is a hidden sheet), a PDF's
  pages (``Page 2``), and for Word, HTML and Markdown the document's sections: a new sheet
  starts at the title and at each heading of the document's highest heading level, named
  after it (what comes before the first is ``Document``). Page headers and footers go to a
  last sheet ``Page headers and footers``.
* **Headings**: the heading a section sheet is named after is a level-1 ``title`` block; the
  headings below it are levels 2..6 relative to it. A slide's title is level 2 under
  ``Slide N``. Every block's heading path is the sheet name and the headings above it.
* **Tables** (cells, row and column spans) are laid out as cells and merged ranges; their
  header rows are at least the rows Docling marks as column headers, more when the worksheet
  rules find them (a merged parent header over sub-headers). A caption becomes the title.
* **Lists** are one ``text`` block each (nested items indented), paragraphs, captions, code,
  footnotes and speaker notes (``Speaker notes`` heading under the slide's title) one
  ``text`` block each. A Word comment is a ``text`` block labelled ``comment``
  (``Comment by Kim: ...``) right after the paragraph it annotates (replies after it); one
  Docling links to no item (on a table cell or a list item) goes to a last sheet
  ``Comments``.
* **Pictures** are ``image`` blocks (their caption, alt text -- the drawing's ``descr`` --
  and what OCR reads in them, as text); **charts** (a picture whose
  metadata holds the chart's data, read from the chart XML by Docling) are a ``chart`` block
  (title, type, series and values as text) followed by the data as a ``table`` block
  (categories down, one column per series), so each category is a record.
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from extraction_assets.core.documents.layout import SheetBuilder, Sheets, TableCell
from extraction_assets.core.errors import CorruptWorkbookError, ExtractionError
from extraction_assets.core.limits import Budget, Limits
from extraction_assets.core.model import SheetInfo
from extraction_assets.core.ocr import MIN_SIDE_PX
from extraction_assets.core.ooxml.objects.charts import render_chart

#: Name of the sheet holding what comes before a document's first heading.
FRONT_SHEET = "Document"
#: Name of the sheet holding page headers and footers.
FURNITURE_SHEET = "Page headers and footers"
#: Heading of a slide's speaker notes.
NOTES_HEADING = "Speaker notes"
#: Name of the sheet holding the Word comments that annotate no text Docling kept (a table
#: cell's; the others follow the paragraph they annotate).
COMMENTS_SHEET = "Comments"
#: A Word comment as Docling's Word backend writes it: ``[author: Kim (K), time: 2024-05-02T
#: 10:00:00.000+00:00]: text``, each part of the prefix optional.
COMMENT_RE = re.compile(r"^(?:\[(?:author: (?P<author>.*?)(?: \((?P<initials>[^()]*)\))?)?"
                        r"(?:, )?(?:time: (?P<time>[^\]]*))?\](?::\s*|$))?(?P<text>.*)$", re.S)
#: Docling's picture classes of charts, by the chart type word :func:`render_chart` shows.
CHART_TYPES = {"bar_chart": "bar", "stacked_bar_chart": "bar", "line_chart": "line",
               "pie_chart": "pie", "scatter_chart": "scatter", "area_chart": "area",
               "radar_chart": "radar", "bubble_chart": "bubble", "stock_chart": "stock",
               "surface_chart": "surface", "doughnut_chart": "doughnut", "other_chart": "chart"}


def convert(data: bytes, fmt: str, limits: Limits) -> Any:
    """The ``DoclingDocument`` of a ``docx``, ``pptx``, ``html`` or ``md`` file's bytes.

    Raises:
        CorruptWorkbookError: the backend cannot read the file.
        UnsupportedFormatError: Docling is not installed.
    """
    backend, fmt_enum, options = _backend(fmt)
    from docling.datamodel.document import InputDocument
    from docling.datamodel.settings import DocumentLimits
    from docling.pipeline.simple_pipeline import SimplePipeline

    logging.getLogger("docling").setLevel(logging.ERROR)
    try:
        # slides past limits.max_sheets are refused when the sheets are made (Docling would
        # only call the file invalid)
        doc_limits = DocumentLimits(max_file_size=limits.max_total_bytes)
        source = InputDocument(io.BytesIO(data), fmt_enum, backend, backend_options=options,
                               filename=f"document.{fmt}", limits=doc_limits)
        if not source.valid:
            raise CorruptWorkbookError(f"the {fmt} file cannot be read by Docling")
        result = SimplePipeline(SimplePipeline.get_default_options()).execute(
            source, raises_on_error=True)
    except ExtractionError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party parser on hostile bytes
        raise CorruptWorkbookError(f"the {fmt} file cannot be read: "
                                   f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    if result.document is None:
        raise CorruptWorkbookError(f"the {fmt} file cannot be read by Docling")
    return result.document


def _backend(fmt: str):
    """Docling's backend class, input format and options for ``fmt`` (no fetch, no render)."""
    try:
        from docling.datamodel.backend_options import (
            HTMLBackendOptions,
            MarkdownBackendOptions,
            MsPowerpointBackendOptions,
            MsWordBackendOptions,
        )
        from docling.datamodel.base_models import InputFormat
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        from extraction_assets.core.errors import UnsupportedFormatError

        raise UnsupportedFormatError(f"{fmt} needs Docling (docling-slim): {exc}") from exc
    if fmt == "docx":
        return _word_backend(), InputFormat.DOCX, MsWordBackendOptions()
    if fmt == "pptx":
        return _powerpoint_backend(), InputFormat.PPTX, MsPowerpointBackendOptions()
    if fmt == "html":
        from docling.backend.html_backend import HTMLDocumentBackend

        return HTMLDocumentBackend, InputFormat.HTML, HTMLBackendOptions(
            enable_remote_fetch=False, enable_local_fetch=False, fetch_images=False)
    from docling.backend.md_backend import MarkdownDocumentBackend

    return MarkdownDocumentBackend, InputFormat.MD, MarkdownBackendOptions(
        enable_remote_fetch=False, enable_local_fetch=False, fetch_images=False)


def _word_backend():
    """Docling's Word backend, rendering nothing through LibreOffice: a DrawingML drawing, a
    chart's image or a picture Pillow cannot read would each start a LibreOffice conversion
    (DOCX to PDF to PNG) with no bound of ours; only the item's place and caption are used."""
    from docling.backend.msword_backend import MsWordDocumentBackend

    class WordBackend(MsWordDocumentBackend):
        def _convert_elements_via_docx(self, elements, element_tag=None):  # noqa: D401
            return None

        def _handle_pictures(self, drawing_blip, doc):  # noqa: D401 - the alt text kept
            refs = super()._handle_pictures(drawing_blip, doc)
            for blip, ref in zip(drawing_blip or [], refs):
                _describe(ref.resolve(doc), _word_alt_text(blip))
            return refs

        def _handle_chart(self, doc, chart_el):  # noqa: D401 - the alt text kept
            ref = super()._handle_chart(doc=doc, chart_el=chart_el)
            if ref is not None:
                _describe(ref.resolve(doc), _word_alt_text(chart_el))
            return ref

    return WordBackend


def _word_alt_text(element: Any) -> str | None:
    """The alt text of the Word drawing that is or holds ``element`` (a chart's ``w:drawing``,
    a picture's ``a:blip``): the ``descr``, else ``title``, of the ``wp:docPr`` of its inline
    or anchor (ECMA-376 Part 1 §20.4.2.5)."""
    node = element
    while node is not None and _local(node) not in ("inline", "anchor", "drawing"):
        node = node.getparent()  # from a blip up to its drawing
    for el in node.iter() if node is not None else ():
        if _local(el) == "docPr":
            return el.get("descr") or el.get("title")
    return None


def _local(element: Any) -> str:
    """The local name of an lxml element's tag ("" for a comment or processing instruction)."""
    return element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""


def _shape_alt_text(shape: Any) -> str | None:
    """The alt text of a PowerPoint shape (python-pptx): the ``descr``, else ``title``, of its
    ``cNvPr`` (ECMA-376 Part 1 §19.3.1.12)."""
    for el in shape._element.iter():
        if _local(el) == "cNvPr":
            return el.get("descr") or el.get("title")
    return None


def _describe(picture: Any, alt_text: str | None) -> None:
    """Keep ``alt_text`` as the description of a Docling ``PictureItem`` (its ``meta``)."""
    from docling_core.types.doc.document import DescriptionMetaField, PictureMeta

    text = " ".join((alt_text or "").split())
    if text:
        picture.meta = picture.meta or PictureMeta()
        picture.meta.description = DescriptionMetaField(text=text, created_by="alt text")


def _powerpoint_backend():
    """Docling's PowerPoint backend, its Windows metafile pictures left unrendered (Docling
    would start LibreOffice for each; only the picture's place and caption are used)."""
    from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend

    class PowerpointBackend(MsPowerpointDocumentBackend):
        def _rasterize_metafile(self, image_bytes: bytes):  # noqa: D401 - Docling's hook
            return None

        def _handle_pictures(self, shape, parent_slide, slide_ind, doc, slide_size,
                             fill_rid=None):  # noqa: D401 - the alt text kept
            before = len(doc.pictures)
            super()._handle_pictures(shape, parent_slide, slide_ind, doc, slide_size,
                                     fill_rid)
            if len(doc.pictures) > before:
                _describe(doc.pictures[-1], _shape_alt_text(shape))

        def _handle_chart(self, shape, parent_slide, slide_ind, doc, slide_size):  # noqa: D401
            before = len(doc.pictures)
            super()._handle_chart(shape, parent_slide, slide_ind, doc, slide_size)
            if len(doc.pictures) > before:
                _describe(doc.pictures[-1], _shape_alt_text(shape))

    return PowerpointBackend


def docling_sheets(doc: Any, fmt: str, sheets: Sheets,
                   pages: dict[int, SheetBuilder] | None = None) -> None:
    """Lay the items of a ``DoclingDocument`` out as sheets (see the module docstring): slides
    or pages for ``pptx`` and ``pdf``, sections for the other formats. ``pages`` are sheets
    already made for some pages (a PDF's digital pages): the items of other pages are then
    dropped."""
    _Walker(doc, fmt, sheets, pages).run()


class _Walker:
    """One pass over a ``DoclingDocument``'s tree in reading order."""

    def __init__(self, doc: Any, fmt: str, sheets: Sheets,
                 pages: dict[int, SheetBuilder] | None):
        from docling_core.types.doc import ContentLayer, DocItemLabel, GroupLabel

        self.doc, self.fmt, self.sheets = doc, fmt, sheets
        self.ContentLayer, self.Label, self.Group = ContentLayer, DocItemLabel, GroupLabel
        self.paged = fmt in ("pptx", "pdf")
        self.given = pages is not None
        self.by_page: dict[int, SheetBuilder] = dict(pages or {})
        # where the items of pages not given go (never part of the workbook)
        self.dropped = SheetBuilder(SheetInfo(0, "", "hidden", "page", None), sheets.limits,
                                    Budget(sheets.limits), [], sheets.styles)
        self.current: SheetBuilder | None = None
        self.furniture: list[Any] = []
        self.captions = {c.cref for item in [*doc.tables, *doc.pictures] for c in item.captions}
        levels = [item.level for item, _ in doc.iterate_items()
                  if item.label == DocItemLabel.SECTION_HEADER]
        self.top = min(levels) if levels else 1
        self.placed: set[str] = set()  # comment groups laid out already
        self.loose_comments: list[Any] = []  # comment groups annotating no text kept
        self.slide_title: dict[int, str] = {}

    # -- sheets -----------------------------------------------------------------------------
    def run(self) -> None:
        if self.paged and not self.given:
            hidden = self._hidden_pages()
            word = "Slide" if self.fmt == "pptx" else "Page"
            for page in sorted(self.doc.pages):
                self.by_page[page] = self.sheets.new(
                    f"{word} {page}", word.lower(), "hidden" if page in hidden else "visible")
        for child in self.doc.body.children:
            self._node(child.resolve(self.doc))
        if self.furniture:
            self.current = self.sheets.new(FURNITURE_SHEET, "section")
            for item in self.furniture:
                self._node(item, furniture=True)
        loose = [g for g in self.loose_comments if g.self_ref not in self.placed]
        if loose:
            sheet = self.sheets.new(COMMENTS_SHEET, "section")
            for group in loose:
                self._comment_group(group, sheet)

    def _hidden_pages(self) -> set[int]:
        """Slides whose every item is invisible (a hidden slide)."""
        seen: dict[int, bool] = {}
        for item, _ in self.doc.iterate_items(included_content_layers=set(self.ContentLayer)):
            for prov in getattr(item, "prov", []) or []:
                visible = item.content_layer != self.ContentLayer.INVISIBLE
                seen[prov.page_no] = seen.get(prov.page_no, False) or visible
        return {page for page, visible in seen.items() if not visible}

    def _sheet(self, item: Any) -> SheetBuilder:
        """The sheet an item goes to: its page's, else the current one (a first ``Document``
        sheet when there is none yet)."""
        if self.paged:
            prov = getattr(item, "prov", None)
            if prov and prov[0].page_no in self.by_page:
                self.current = self.by_page[prov[0].page_no]
            elif prov and self.given:
                return self.dropped
        if self.current is None:
            self.current = (self.by_page[min(self.by_page)] if self.by_page
                            else self.sheets.new(FRONT_SHEET, "section"))
        return self.current

    # -- items ------------------------------------------------------------------------------
    def _node(self, node: Any, furniture: bool = False) -> None:
        layer = node.content_layer
        if layer in (self.ContentLayer.FURNITURE, self.ContentLayer.BACKGROUND) and not furniture:
            self.furniture.append(node)
            return
        label = node.label
        if label == self.Group.COMMENT_SECTION:  # placed after its text, or on a last sheet
            if node.self_ref not in self.placed:
                self.loose_comments.append(node)
            return
        if label in (self.Group.LIST, self.Group.ORDERED_LIST):
            items: list[tuple[str, str]] = []
            self._list_items(node, 0, items)
            if items:
                self._sheet(node).lines(items, node.self_ref, "list")
            return
        if label == self.Group.INLINE:
            text = " ".join(t for t in (self._text(c.resolve(self.doc)) for c in node.children)
                            if t)
            self._sheet(node).text(text, node.self_ref, "paragraph")
            return
        if label in (self.Label.TITLE, self.Label.SECTION_HEADER):
            self._heading(node)
        elif label == self.Label.TABLE:
            self._table(node)
            return  # a rich cell's items are the table's children: in its cells already
        elif label in (self.Label.PICTURE, self.Label.CHART):
            self._picture(node)
        elif node.self_ref in self.captions:
            pass  # the title of its table or picture
        elif hasattr(node, "text") and label != self.Label.LIST_ITEM:
            if layer == self.ContentLayer.NOTES:
                self._notes(node)
            else:
                self._sheet(node).text(node.text, node.self_ref, str(label))
        elif label == self.Label.LIST_ITEM:
            self._sheet(node).lines([(node.marker or "-", node.text)], node.self_ref, "list")
        self._comments(node)  # right after the text they annotate
        for child in getattr(node, "children", []):
            self._node(child.resolve(self.doc), furniture)

    def _text(self, node: Any) -> str:
        return getattr(node, "text", "") or ""

    def _list_items(self, group: Any, depth: int, out: list[tuple[str, str]]) -> None:
        """The items of a list group and of the lists nested in them, in order."""
        number = 0
        for child in group.children:
            node = child.resolve(self.doc)
            if node.label in (self.Group.LIST, self.Group.ORDERED_LIST):
                self._list_items(node, depth + 1, out)
                continue
            number += 1
            marker = getattr(node, "marker", "") or ""
            if not marker:
                marker = f"{number}." if getattr(node, "enumerated", False) else "-"
            out.append(("  " * depth + marker, self._text(node)))
            for sub in getattr(node, "children", []):
                inner = sub.resolve(self.doc)
                if inner.label in (self.Group.LIST, self.Group.ORDERED_LIST):
                    self._list_items(inner, depth + 1, out)
                elif self._text(inner):
                    out.append(("  " * (depth + 1), self._text(inner)))

    def _heading(self, node: Any) -> None:
        text = " ".join(node.text.split())
        if not text:
            return
        if self.paged:
            sheet = self._sheet(node)
            if node.label == self.Label.TITLE:
                self.slide_title[sheet.info.index] = text
                sheet.heading(text, 2, node.self_ref, "title")
            else:
                sheet.heading(text, node.level + 2, node.self_ref, "section_header")
            return
        level = 0 if node.label == self.Label.TITLE else node.level - self.top + 1
        if level <= 1:  # a section of its own, named after its heading
            self.current = self.sheets.new(text, "section")
            self.current.heading(text, 1, node.self_ref, str(node.label))
        else:
            self._sheet(node).heading(text, level, node.self_ref, "section_header")

    def _comments(self, node: Any) -> None:
        """The Word comments annotating ``node`` not laid out yet, on its sheet."""
        for ref in getattr(node, "comments", None) or []:
            group = ref.resolve(self.doc)
            if group.self_ref not in self.placed:
                self._comment_group(group, self._sheet(node))

    def _comment_group(self, group: Any, sheet: SheetBuilder) -> None:
        """The comments of one of Docling's Word comment groups (a comment and its replies),
        one ``text`` block each labelled ``comment``: ``Comment by Kim: Check the invoice``,
        the author, initials and time in its details."""
        self.placed.add(group.self_ref)
        for child in group.children:
            node = child.resolve(self.doc)
            match = COMMENT_RE.match(self._text(node))
            if match is None or not match["text"].strip():
                continue
            author = (match["author"] or "").strip()
            sheet.text(f"Comment by {author}: {match['text']}" if author
                       else f"Comment: {match['text']}", node.self_ref, "comment",
                       author=author or None, initials=match["initials"] or None,
                       time=match["time"] or None)

    def _notes(self, node: Any) -> None:
        sheet = self._sheet(node)
        sheet.heading(NOTES_HEADING, 3 if sheet.info.index in self.slide_title else 2,
                      None, "notes")
        sheet.text(node.text, node.self_ref, "notes")

    def _caption(self, node: Any) -> str | None:
        texts = [self._text(c.resolve(self.doc)) for c in node.captions]
        return " ".join(t for t in texts if t) or None

    def _table(self, node: Any) -> None:
        cells, header_rows = _cells(node.data)
        self._sheet(node).table(cells, node.self_ref, header_rows, self._caption(node))

    def _picture(self, node: Any) -> None:
        caption = self._caption(node)
        meta = getattr(node, "meta", None)
        chart = getattr(meta, "tabular_chart", None) if meta is not None else None
        sheet = self._sheet(node)
        described = getattr(meta, "description", None) if meta is not None else None
        alt_text = described.text if described is not None else None
        if chart is None or chart.chart_data is None:
            read = self._ocr(node, sheet)
            text = "\n".join(t for t in (caption, alt_text, read.get("ocr_text")) if t)
            sheet.floating("image", text, node.self_ref, caption, "picture", alt_text=alt_text,
                           **read)
            return
        kinds = [CHART_TYPES.get(str(p.class_name), str(p.class_name).removesuffix("_chart"))
                 for p in (meta.classification.predictions if meta.classification else [])]
        cells, header_rows = _cells(chart.chart_data)
        rendered = render_chart(_chart_data(caption, kinds, cells))
        sheet.floating("chart", "\n".join(t for t in (rendered, alt_text) if t),
                       node.self_ref, caption, "chart", alt_text=alt_text)
        sheet.table(cells, f"{node.self_ref}/chart_data", max(header_rows, 1),
                    caption, "chart_data")


    def _ocr(self, node: Any, sheet: SheetBuilder) -> dict:
        """What OCR reads in a picture Docling decoded (``ocr_text`` and the facts of
        :func:`~extraction_assets.core.ocr.item_details`, boxes in pixels of the picture), or
        nothing."""
        image = getattr(getattr(node, "image", None), "pil_image", None)
        if image is None or min(image.size) < MIN_SIDE_PX:
            return {}
        return self.sheets.ocr.picture_details(image, f"picture {node.self_ref}",
                                               self.sheets.issues, sheet.info.name)


def _cells(data: Any) -> tuple[list[TableCell], int]:
    """A Docling ``TableData``'s cells and the number of leading rows all of whose cells are
    column headers."""
    cells = [TableCell(c.start_row_offset_idx, c.start_col_offset_idx, c.text or "",
                       max(c.end_row_offset_idx - c.start_row_offset_idx, 1),
                       max(c.end_col_offset_idx - c.start_col_offset_idx, 1))
             for c in data.table_cells]
    header_rows = 0
    while True:
        row = [c for c in data.table_cells if c.start_row_offset_idx == header_rows]
        if not row or not all(c.column_header for c in row):
            break
        header_rows += 1
    return cells, header_rows


def _chart_data(title: str | None, kinds: list[str], cells: list[TableCell]) -> dict:
    """A chart's data table (categories down column 0, a series per column, names in row 0)
    as :func:`~extraction_assets.core.ooxml.objects.charts.render_chart` reads a chart."""
    grid: dict[tuple[int, int], str] = {(c.row, c.col): c.text for c in cells}
    n_rows = max((c.row for c in cells), default=0) + 1
    n_cols = max((c.col for c in cells), default=0) + 1
    categories = [grid.get((r, 0), "") for r in range(1, n_rows)]
    series = [{"name": grid.get((0, k)) or None, "categories": categories,
               "values": [grid.get((r, k), "") for r in range(1, n_rows)]}
              for k in range(1, n_cols)]
    return {"chart_types": list(dict.fromkeys(kinds)), "title": title, "axis_titles": [],
            "series": series}
