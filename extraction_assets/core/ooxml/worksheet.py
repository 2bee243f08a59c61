"""Reading one worksheet part (ECMA-376 Part 1, §18.3.1.99) into columnar cells.

Two readers share one output:

* the **fast reader** streams the part in blocks, checks well-formedness with libxml2 (a parser
  with no tree and no Python callbacks, in a thread of its own that overlaps the extraction),
  and extracts the ``<c>`` elements of each run of whole ``<row>`` elements with Arrow's RE2
  kernels (split at every ``<c ``, one anchored pattern per cell), in two threads while the next
  block is read (the kernels release the GIL). A run not in Excel's canonical form is matched by
  a slower pattern that takes any attribute order and quoting. It only accepts runs it can read
  exactly: the number of cells matched must equal the number of ``<c`` start tags, and a run
  holding CDATA, comments or processing instructions, or a cell without an ``r`` reference, is
  handed to the other reader;
* the **tree reader** (``lxml.etree.iterparse``, elements cleared as soon as they are read) reads
  anything XML allows.

Both keep memory proportional to the sheet's non-empty cells: empty ``<row>`` elements and the
declared ``<dimension>`` cost nothing. The rest of the worksheet (everything but
``<sheetData>``: columns, panes, merged ranges, conditional formats, hyperlinks...) is returned
as a small element tree, the sheet's *frame*.
"""

from __future__ import annotations

import html
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, cell_ref, parse_cell_ref
from extraction_assets.core.arrays import scatter
from extraction_assets.core.errors import CorruptWorkbookError, LimitExceededError
from extraction_assets.core.limits import Budget
from extraction_assets.core.model import CELL_SCHEMA
from extraction_assets.core.ooxml import sheet_cells
from extraction_assets.core.ooxml.sheet_cells import (
    CELL_FIELDS,
    ENCODING,
    INLINE_TEXT_PATTERN,
    MAX_ELEMENT_BYTES,
    MAX_STYLE,
    OUTSIDE,
    ROW_ATTR_R,
    ROW_CUSTOM_HEIGHT,
    ROW_HEIGHT,
    ROW_HIDDEN,
    SHEETDATA_OPEN,
    UNSAFE,
    CellRuns,
    CellSink,
    SharedFormulas,
    SheetIssues,
    TreeFallback,
    WellFormedChecker,
    column_or_zero,
    generic_cell_pattern,
    last_start,
    row_tag_pattern,
    tag_pattern,
)
from extraction_assets.core.ooxml.xml import (
    XML_OPTS,
    local,
    pull_events,
    rich_text,
    syntax_error_message,
    unescape_xstring,
)

#: Most digits of a style or shared-string index cast to int64 (19 digits may not fit it).
_STYLE_DIGITS = 18
#: What happens to a cell whose style index is no style (an issue's text).
BAD_STYLE = f"cells whose style index is not a number up to {MAX_STYLE} read with the default style"
#: What happens to a ``t="s"`` cell whose index names no shared string (an issue's text).
BAD_STRING_INDEX = "cells whose shared string index names no shared string left empty"


class WorksheetReader:
    """Read one worksheet part.

    Args:
        stream_factory: opens the part afresh (the tree reader may need a second pass).
        shared_strings: the workbook's shared string table.
        budget: what the workbook's sheets have used of its limits; the cells of this sheet
            are counted in it (see :class:`~extraction_assets.core.limits.Budget`).
        strings_array: the shared strings as an Arrow array (built on first use when omitted).

    After :meth:`read`: ``cells`` (Arrow table, :data:`CELL_SCHEMA`), ``frame`` (the worksheet
    element without its cells), ``hidden_rows``, ``row_heights`` (custom heights in points by
    1-based row) and ``issues`` ((ref, code, message) tuples).
    When the part is damaged, ``cells`` holds the cells read before the fault and ``frame`` is
    ``None``. A cell outside the sheet (beyond ``XFD1048576``) is skipped, a text or formula
    longer than ``max_cell_chars`` is cut there; each gives a warning naming how many cells and
    the first.
    """

    def __init__(self, stream_factory, shared_strings: list[str], budget: Budget,
                 strings_array: pa.Array | None = None):
        self._open = stream_factory
        self.strings = shared_strings
        self._strings_array = strings_array
        self._string_bytes: pa.Array | None = None
        self.budget = budget
        self.max_chars = budget.limits.max_cell_chars
        self.cells: pa.Table | None = None
        self.frame = None
        self.hidden_rows: list[int] = []
        self.row_heights: dict[int, float] = {}
        self.issues = SheetIssues()

    def read(self) -> None:
        """Read the part with the fast reader, or the tree reader when needed.

        Raises:
            CorruptWorkbookError: the part is not well-formed XML or holds invalid values.
            LimitExceededError: more cells or text than the budget allows, or more than
                ``max_tree_bytes`` of XML outside ``<sheetData>``.
        """
        used = self.budget.state()
        try:
            try:
                self._read_fast()
            except TreeFallback:
                self.budget.restore(used)
                self.hidden_rows = []
                self.row_heights = {}
                self.issues = SheetIssues()
                self._read_tree()
        finally:
            self.issues.close()

    @property
    def strings_array(self) -> pa.Array:
        """The shared strings as an Arrow array (built once when not given)."""
        if self._strings_array is None:
            self._strings_array = pa.array(self.strings, pa.string())
        return self._strings_array

    def _row_facts(self, row: int, hidden: bool, height: str | None) -> None:
        """Record a hidden row and a custom row height (points, §18.3.1.73 ``ht``) of a row of
        the sheet (a row number outside 1..:data:`MAX_ROW` has no row to record: its cells are
        skipped as outside the sheet)."""
        if not 1 <= row <= MAX_ROW:
            return
        if hidden:
            self.hidden_rows.append(row)
        if height is not None:
            try:
                self.row_heights[row] = float(height)
            except ValueError:
                self.issues.add(f"{row}:{row}", "bad_row_height", f"row height {height!r} is not a number")

    # -- shared value handling ------------------------------------------------------------------
    def _shared_string(self, raw: str, row: int, col: int) -> str | None:
        """The shared string ``raw`` names; ``None`` when it names none (any text, a number
        past 64 bits included), tallied as ``bad_shared_string_index``."""
        idx = int(raw) if _decimal(raw.strip()) else -1
        if 0 <= idx < len(self.strings):
            return self.strings[idx]
        self.issues.tally("bad_shared_string_index", 1, cell_ref(row, col), BAD_STRING_INDEX)
        return None

    # -- fast reader ----------------------------------------------------------------------------
    def _read_fast(self) -> None:
        with WellFormedChecker() as checker:
            try:
                state, head, tail = self._extract(checker)
            except (TreeFallback, LimitExceededError):
                checker.wait()  # a syntax error in what was read so far comes first
                raise
            checker.close()
        if state != "tail":
            raise TreeFallback()
        if any(token in head or token in tail for token in UNSAFE[:2]):
            raise TreeFallback()
        try:
            self.frame = etree.fromstring(bytes(head) + bytes(tail), etree.XMLParser(**XML_OPTS))
        except etree.XMLSyntaxError as exc:
            raise TreeFallback() from exc

    def _extract(self, checker: WellFormedChecker) -> tuple[str, bytearray, bytearray]:
        """Stream the part: every block goes to ``checker`` and, inside ``<sheetData>``, its
        whole elements (rows and cells: a run ends where the last ``<row`` or ``<c`` of the
        data read so far starts) to :class:`CellRuns`; returns the final state and the frame's
        head and tail bytes (the cells are in ``self.cells``).

        Raises:
            LimitExceededError: head and tail together exceed ``max_tree_bytes``.
            TreeFallback: an element of ``<sheetData>`` exceeds :data:`MAX_ELEMENT_BYTES`.
        """
        sink = CellSink(self.budget)
        formulas = SharedFormulas()
        head = bytearray()
        tail = bytearray()
        buf = bytearray()
        state = "head"
        prefix = b""
        starts = ()
        data_end = b""
        with self._open() as stream, CellRuns() as runs:
            def cells(run: bytes) -> None:
                for data, extracted in runs.put(run, prefix):
                    self._cells_fast(data, extracted, prefix, sink, formulas)

            for block in iter(lambda: stream.read(sheet_cells.BLOCK_BYTES), b""):
                checker.feed(block)
                runs.start(len(block))
                if state == "head":
                    head += block
                    if not head.lstrip().startswith(b"<"):
                        raise TreeFallback()  # a byte-order mark or another encoding
                    declared = ENCODING.search(head[:256])
                    if declared and declared.group(1).lower() not in (b"utf-8", b"utf8"):
                        raise TreeFallback()
                    m = SHEETDATA_OPEN.search(head)
                    if m is None:
                        self._check_frame(len(head))
                        continue
                    prefix = m.group(1)
                    starts = (b"<" + prefix + b"row", b"<" + prefix + b"c")
                    data_end = b"</" + prefix + b"sheetData>"
                    rest = bytes(head[m.end():])
                    del head[m.start():]
                    if m.group(2):
                        state = "tail"
                        tail += rest
                        self._check_frame(len(head) + len(tail))
                        continue
                    state = "data"
                    block = rest
                if state == "data":
                    buf += block
                    end = buf.find(data_end)
                    if end >= 0:
                        cells(bytes(buf[:end]))
                        tail += buf[end + len(data_end):]
                        buf = bytearray()
                        state = "tail"
                    else:
                        cut = last_start(buf, starts)
                        if cut:
                            cells(bytes(buf[:cut]))
                            del buf[:cut]
                        elif len(buf) > MAX_ELEMENT_BYTES:
                            raise TreeFallback()
                        continue
                elif state == "tail":
                    tail += block
                self._check_frame(len(head) + len(tail))
            for data, extracted in runs.drain():
                self._cells_fast(data, extracted, prefix, sink, formulas)
        self.cells = sink.table()
        return state, head, tail

    def _check_frame(self, n_bytes: int) -> None:
        """Raise once the part holds more than ``max_tree_bytes`` outside ``<sheetData>`` (what
        :attr:`frame` is parsed from)."""
        limit = self.budget.limits.max_tree_bytes
        if n_bytes > limit:
            raise LimitExceededError(
                f"the worksheet holds more than {limit} bytes of XML outside <sheetData>")

    def _cells_fast(self, data: bytes, extracted: pa.StructArray | None, prefix: bytes,
                    sink: CellSink, formulas: SharedFormulas) -> None:
        """Add the cells of a run of rows (``extracted``: its canonical cells, ``None`` when it
        is not in canonical form) to ``sink``; hidden rows and custom row heights are noted."""
        if not data:
            return
        if extracted is None:
            if any(token in data for token in UNSAFE):
                raise TreeFallback()
            n_tags = len(tag_pattern(prefix).findall(data))  # any white space after "<c"
            matches = generic_cell_pattern(prefix).findall(data)
            if len(matches) != n_tags:
                raise TreeFallback()
            extracted = pa.StructArray.from_arrays(
                [pa.array(field, pa.binary()) for field in zip(*matches)]
                if matches else [pa.array([], pa.binary())] * len(CELL_FIELDS),
                names=list(CELL_FIELDS))
        if b"hidden" in data or b"customHeight" in data:
            for attrs in row_tag_pattern(prefix).findall(data):
                hidden = ROW_HIDDEN.search(attrs)
                height = ROW_CUSTOM_HEIGHT.search(attrs) and ROW_HEIGHT.search(attrs)
                if not (hidden or height):
                    continue
                r = ROW_ATTR_R.search(attrs)
                if r is None:
                    raise TreeFallback()
                self._row_facts(int(r.group(1)), bool(hidden),
                                height.group(1).decode() if height else None)
        if len(extracted):
            sink.add(self._batch(extracted, prefix, formulas))

    def _batch(self, extracted: pa.StructArray, prefix: bytes,
               formulas: SharedFormulas) -> pa.RecordBatch:
        """Columnar cells of one run's extracted fields, computed with Arrow kernels; only cells
        with formulas, rich inline text, entities or bad shared-string indices go through
        Python."""
        if pc.min(pc.binary_length(extracted.field("letters"))).as_py() == 0:
            raise TreeFallback()  # a cell without a reference: its position comes from the tree
        letter_codes = pc.dictionary_encode(extracted.field("letters"))
        cols = pa.array([column_or_zero(x.decode()) for x in
                         letter_codes.dictionary.to_pylist()], pa.int32())
        cols = cols.take(letter_codes.indices)
        rows = pc.cast(pc.cast(extracted.field("digits"), pa.string()), pa.int32())
        inside = pc.and_(pc.and_(pc.greater(cols, 0), pc.greater(rows, 0)),
                         pc.less_equal(rows, MAX_ROW))
        if not pc.all(inside).as_py():
            outside = pc.invert(inside)
            first = extracted.filter(outside)[0]
            self.issues.tally("cell_outside_sheet", pc.sum(outside).as_py(),
                              (first["letters"].as_py() + first["digits"].as_py()).decode(),
                              OUTSIDE)
            extracted = extracted.filter(inside)
            rows, cols = rows.filter(inside), cols.filter(inside)
        letters, digits, styles, types, raw = (extracted.field(name) for name in CELL_FIELDS)
        styles = self._style_ids(pc.cast(styles, pa.string()), rows, cols)
        types = pc.cast(types, pa.string())
        types = pc.if_else(pc.equal(types, ""), "n", types)
        inner = pc.cast(raw, pa.string())
        simple = pc.and_(pc.and_(pc.starts_with(inner, "<v>"), pc.ends_with(inner, "</v>")),
                         pc.equal(pc.count_substring(inner, "<"), 2))
        sliced = pc.utf8_slice_codeunits(inner, 3, -4)
        values = pc.if_else(pc.and_(simple, pc.not_equal(sliced, "")), sliced, None)
        n = len(extracted)
        other = np.flatnonzero(pc.and_(pc.invert(simple), pc.greater(
            pc.binary_length(inner), 0)).to_numpy(zero_copy_only=False))
        complex_rows = other
        if len(other):  # inline strings with one plain <t> are read column-wise too
            inline = pc.struct_field(pc.extract_regex(inner.take(pa.array(other)),
                                                      INLINE_TEXT_PATTERN), [0])
            found = pc.is_valid(inline).to_numpy(zero_copy_only=False)
            texts = inline.filter(pa.array(found))
            values = scatter(values, other[found],
                             pc.if_else(pc.equal(texts, ""), None, texts))
            complex_rows = other[~found]
        formula = pa.nulls(n, pa.string())
        kind = pa.nulls(n, pa.string())
        if len(complex_rows):
            parsed = []
            at = pa.array(complex_rows)
            for xml, row, col, data_type in zip(
                    raw.take(at).to_pylist(), rows.take(at).to_pylist(),
                    cols.take(at).to_pylist(), types.take(at).to_pylist()):
                value, text, formula_kind, si = self._inner(xml, prefix, data_type)
                parsed.append((value, formulas.resolve(formula_kind, si, text, row, col),
                               formula_kind))
            values = scatter(values, complex_rows, pa.array([p[0] for p in parsed], pa.string()))
            formula = scatter(formula, complex_rows, pa.array([p[1] for p in parsed], pa.string()))
            kind = scatter(kind, complex_rows, pa.array([p[2] for p in parsed], pa.string()))
        escaped = np.flatnonzero(pc.fill_null(pc.or_(pc.match_substring(values, "&"),
                                                     pc.match_substring(values, "_x")),
                                              False).to_numpy(zero_copy_only=False))
        if len(escaped):
            fixed = [unescape_xstring(html.unescape(v)) for v in values.take(pa.array(escaped)).to_pylist()]
            values = scatter(values, escaped, pa.array(fixed, pa.string()))
        values = self._cut_long(values, rows, cols)
        formula = self._cut_long(formula, rows, cols)
        values, string_index = self._resolve_shared_strings(values, types, rows, cols)
        keep = pc.or_(pc.or_(pc.is_valid(values), pc.is_valid(formula)), pc.not_equal(styles, 0))
        batch = pa.record_batch([rows, cols, types, values, formula, kind, styles, string_index],
                                schema=CELL_SCHEMA)
        return batch.filter(keep)

    def _style_ids(self, styles: pa.Array, rows: pa.Array, cols: pa.Array) -> pa.Array:
        """The ``s`` attributes (digits or ``""``, as extracted) as int32 style indices: ``""``
        is 0, and so is an index past :data:`MAX_STYLE` (any number of digits, 64 bits and
        more included), tallied as ``bad_style``."""
        digits = pc.utf8_length(styles)
        fits = pc.less_equal(digits, _STYLE_DIGITS)  # cast to int64 only what fits it
        ids = pc.cast(pc.if_else(pc.and_(fits, pc.greater(digits, 0)), styles, "0"), pa.int64())
        bad = pc.or_(pc.invert(fits), pc.greater(ids, MAX_STYLE))
        if pc.any(bad).as_py():
            at = pc.index(bad, True).as_py()
            self.issues.tally("bad_style", pc.sum(bad).as_py(),
                              cell_ref(rows[at].as_py(), cols[at].as_py()), BAD_STYLE)
            ids = pc.if_else(bad, 0, ids)
        return pc.cast(ids, pa.int32())

    def _resolve_shared_strings(self, values: pa.Array, types: pa.Array, rows: pa.Array,
                                cols: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(values, string_index): the indices of ``t="s"`` cells replaced by their shared
        strings, and the index kept apart (an index naming no string, a number past 64 bits
        included -> null value, tallied as ``bad_shared_string_index``)."""
        shared = pc.fill_null(pc.and_(pc.equal(types, "s"), pc.is_valid(values)), False)
        if not pc.any(shared).as_py():
            return values, pa.nulls(len(values), pa.int32())
        texts = self.strings_array
        digits = pc.fill_null(pc.and_(pc.ascii_is_decimal(values),  # past int64: bad
                                      pc.less_equal(pc.utf8_length(values), _STYLE_DIGITS)),
                              False)
        idx = pc.cast(pc.if_else(pc.and_(shared, digits), values, "-1"), pa.int64())
        ok = pc.and_(pc.greater_equal(idx, 0), pc.less(idx, len(texts)))
        if self._string_bytes is None:
            self._string_bytes = pc.binary_length(texts)
        # a string used by many cells is copied into each: counted before it is
        self.budget.check_text(pc.sum(self._string_bytes.take(
            pc.if_else(pc.and_(shared, ok), idx, pa.scalar(None, pa.int64())))).as_py() or 0)
        resolved = texts.take(pc.if_else(ok, idx, pa.scalar(None, pa.int64())))
        out = pc.if_else(pc.and_(shared, ok), resolved, values)
        bad = np.flatnonzero(pc.and_(shared, pc.invert(ok)).to_numpy(zero_copy_only=False))
        if len(bad):
            first = int(bad[0])
            self.issues.tally("bad_shared_string_index", len(bad),
                              cell_ref(rows[first].as_py(), cols[first].as_py()), BAD_STRING_INDEX)
            where = np.zeros(len(values), dtype=bool)
            where[bad] = True
            out = pc.if_else(pa.array(where), pa.scalar(None, pa.string()), out)
        index = pc.if_else(pc.and_(shared, ok), pc.cast(idx, pa.int32()), pa.scalar(None, pa.int32()))
        return out, index

    def _cut_long(self, texts: pa.Array, rows: pa.Array, cols: pa.Array) -> pa.Array:
        """``texts`` with those longer than ``max_cell_chars`` cut there (tallied)."""
        long = pc.fill_null(pc.greater(pc.utf8_length(texts), self.max_chars), False)
        if not pc.any(long).as_py():
            return texts
        at = pc.index(long, True).as_py()
        self.issues.tally("cell_text_truncated", pc.sum(long).as_py(),
                          cell_ref(rows[at].as_py(), cols[at].as_py()), self._truncated)
        return pc.if_else(long, pc.utf8_slice_codeunits(texts, 0, self.max_chars), texts)

    @property
    def _truncated(self) -> str:
        return f"texts or formulas longer than {self.max_chars} characters cut there"

    def _inner(self, inner: bytes, prefix: bytes, data_type: str):
        """(value, formula, formula kind, shared index) of the inner XML of a cell of type
        ``data_type`` (see :func:`cell_children`)."""
        ns = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"
        decl = b' xmlns:' + prefix[:-1] + b'="' + ns + b'"' if prefix else b' xmlns="' + ns + b'"'
        try:
            el = etree.fromstring(b"<" + prefix + b"c" + decl + b">" + inner + b"</" + prefix + b"c>",
                                  etree.XMLParser(**XML_OPTS))
        except etree.XMLSyntaxError as exc:
            raise TreeFallback() from exc
        return cell_children(el, data_type)

    def _style_id(self, style: str | None, row: int, col: int) -> int:
        """The style index of an ``s`` attribute read by the tree reader: 0 when absent, and
        0 tallied as ``bad_style`` when it is no index up to :data:`MAX_STYLE` (see
        :meth:`_style_ids`)."""
        if style is None:
            return 0
        if _decimal(style) and len(style) <= _STYLE_DIGITS and int(style) <= MAX_STYLE:
            return int(style)
        self.issues.tally("bad_style", 1, cell_ref(row, col), BAD_STYLE)
        return 0

    # -- tree reader ----------------------------------------------------------------------------
    def _read_tree(self) -> None:
        sink = CellSink(self.budget)
        formulas = SharedFormulas()
        current_row = 0
        last_col = 0
        with self._open() as raw:
            stream = _FrameBytes(raw, self._check_frame)
            parser = etree.XMLPullParser(events=("start", "end"),
                                         tag=("{*}row", "{*}c", "{*}sheetData"), **XML_OPTS)
            try:
                for event, el in pull_events(parser, stream):
                    tag = local(el.tag)
                    if tag == "sheetData":
                        stream.inside = event == "start"
                        continue
                    if event == "start":
                        if tag == "row":
                            r = el.get("r")
                            current_row = int(r) if r else current_row + 1
                            last_col = 0
                            custom = el.get("customHeight") in ("1", "true")
                            self._row_facts(current_row, el.get("hidden") in ("1", "true"),
                                            el.get("ht") if custom else None)
                        continue
                    if stream.inside:  # a row's cells, or the rows, already read
                        _drop_earlier(el)
                    if tag == "row":
                        el.clear()
                        continue
                    ref = el.get("r")
                    try:
                        row, col = parse_cell_ref(ref) if ref else (current_row, last_col + 1)
                    except ValueError:
                        row = col = 0
                    if not (1 <= row <= MAX_ROW and 1 <= col <= MAX_COL):
                        self.issues.tally("cell_outside_sheet", 1, ref or f"R{row}C{col}",
                                          OUTSIDE)
                        el.clear()
                        continue
                    last_col = col
                    data_type = el.get("t") or "n"
                    value, formula, kind, si = cell_children(el, data_type)
                    formula = formulas.resolve(kind, si, formula, row, col)
                    style = el.get("s")
                    el.clear()
                    string_index = None
                    if data_type == "s" and value is not None:
                        string_index = int(value) if _decimal(value.strip()) else None
                        value = self._shared_string(value, row, col)
                        if value is None:
                            string_index = None
                    style_index = self._style_id(style, row, col)
                    if value is None and formula is None and style_index == 0:
                        continue
                    if any(len(text) > self.max_chars for text in (value or "", formula or "")):
                        self.issues.tally("cell_text_truncated", 1, cell_ref(row, col),
                                          self._truncated)
                        value = value[:self.max_chars] if value is not None else None
                        formula = formula[:self.max_chars] if formula is not None else None
                    sink.append(row, col, data_type, value, formula, kind, style_index,
                                string_index)
                self.frame = parser.close()
            except etree.XMLSyntaxError as exc:
                self.cells = sink.table()
                raise CorruptWorkbookError(
                    f"worksheet is not well-formed XML: {syntax_error_message(exc)}") from exc
            except ValueError as exc:
                self.cells = sink.table()
                raise CorruptWorkbookError(f"worksheet has an invalid value: {exc}") from exc
        self.cells = sink.table()


def _decimal(text: str) -> bool:
    """Whether ``text`` is ASCII digits only (``"²"`` and ``"٣"`` are digits to
    :meth:`str.isdigit` but no index of a file: ``int`` refuses the first)."""
    return text.isascii() and text.isdecimal()


def _drop_earlier(el) -> None:
    """Delete the siblings before ``el`` (elements read and cleared already), so that a long
    row or sheet holds no more than the element being read."""
    parent = el.getparent()
    if parent is not None:
        while el.getprevious() is not None:
            del parent[0]


class _FrameBytes:
    """A part's stream for the tree reader that counts the bytes read outside ``<sheetData>``
    (``inside`` is set as the parser's events tell where it starts and ends, so a block
    either side may be counted wrongly) and hands their total to ``check`` after each read."""

    def __init__(self, stream: IO[bytes], check):
        self._stream = stream
        self._check = check
        self.inside = False
        self._outside = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        if not self.inside:
            self._outside += len(data)
            self._check(self._outside)
        return data


def cell_children(el, data_type: str | None = None
                  ) -> tuple[str | None, str | None, str | None, str | None]:
    """(value, formula, formula kind, shared index) from a ``<c>`` element's children.

    ``data_type`` is the cell's ``t`` attribute: an empty ``<v/>`` of a ``t="str"`` cell is a
    cached empty string (a formula whose result is ``""``, §18.3.1.96), of any other type a
    missing value (openpyxl writes ``<v></v>`` for a formula it has not calculated)."""
    value = formula = kind = si = None
    for child in el:
        tag = local(child.tag)
        if tag == "v":
            value = child.text or ("" if data_type == "str" else None)
        elif tag == "f":
            kind = child.get("t") or "normal"
            formula = child.text
            si = child.get("si")
        elif tag == "is":
            value = rich_text(child)
    return value, formula, kind, si


def open_stream(reader, part: str):
    """A factory opening ``part`` of a PackageReader (for :class:`WorksheetReader`)."""
    def factory() -> IO[bytes]:
        return reader.open(part)
    return factory
