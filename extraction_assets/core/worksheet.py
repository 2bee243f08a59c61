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
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, cell_ref, column_index, column_letter, parse_cell_ref
from extraction_assets.core.arrays import scatter
from extraction_assets.core.container import Budget
from extraction_assets.core.errors import CorruptWorkbookError, LimitExceededError

XML_OPTS = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def syntax_error_message(exc: etree.XMLSyntaxError) -> str:
    """libxml2's message of an XML syntax error with its line and column (e.g. ``Opening and
    ending tag mismatch: v line 3 and c, line 3, column 41``), without the ``(<string>, line
    3)`` that lxml appends to name the parser's input rather than the part."""
    return exc.msg or str(exc)


#: Arrow schema of the cells read from a worksheet (rows and columns 1-based).
CELL_SCHEMA = pa.schema([
    ("row", pa.int32()), ("col", pa.int32()), ("data_type", pa.string()),
    ("value", pa.string()), ("formula", pa.string()), ("formula_kind", pa.string()),
    ("style_index", pa.int32()), ("string_index", pa.int32()),
])

_BLOCK_BYTES = 1 << 22
_BATCH_CELLS = 1 << 16
#: Characters of text the tree reader collects before it makes a batch of its cells.
_BATCH_CHARS = 1 << 20
#: Most bytes of one element of ``<sheetData>`` (a cell, a row's start tag) the fast reader
#: holds while it waits for its end; a larger one is read by the tree reader.
_MAX_ELEMENT_BYTES = 1 << 24
_PREFIX = rb"(?:[A-Za-z_][\w.-]*:)?"
_SHEETDATA_OPEN = re.compile(rb"<(" + _PREFIX + rb")sheetData(?=[\s/>])[^>]*?(/?)>")
_ESCAPE_RE = re.compile(r"_x([0-9A-Fa-f]{4})_")


def text_bytes(values: pa.Array) -> int:
    """Bytes (UTF-8) of the strings of ``values``, nulls counting nothing."""
    return pc.sum(pc.binary_length(values)).as_py() or 0


def local(tag) -> str:
    """Local name of a Clark-notation tag (``{ns}c`` -> ``c``); ``""`` for comments and PIs."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def unescape_xstring(text: str) -> str:
    """Decode the ``_xHHHH_`` escapes of an OOXML string (ST_Xstring, ECMA-376 Part 1 §22.9.2.19)."""
    if "_x" not in text:
        return text
    return _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def rich_text(si) -> str:
    """Text of a ``<si>``/``<is>`` element: plain ``<t>`` or rich-text runs ``<r><t>`` joined.

    Phonetic runs (``<rPh>``, ECMA-376 §18.4.6) and phonetic properties are excluded: they are
    reading aids, not cell text.
    """
    parts = []
    for child in si:
        tag = local(child.tag)
        if tag == "t":
            parts.append(child.text or "")
        elif tag == "r":
            for t in child:
                if local(t.tag) == "t":
                    parts.append(t.text or "")
    return unescape_xstring("".join(parts))


_REF_RE = re.compile(
    r"(?<![A-Za-z0-9_.\"'])(\$?)([A-Za-z]{1,3})(\$?)(\d{1,7})(?![A-Za-z0-9_(])"
)


def translate_formula(formula: str, d_row: int, d_col: int) -> str:
    """Shift the relative A1 references of a shared formula to a dependent cell.

    Implements the shared-formula rule of ECMA-376 Part 1, §18.3.1.40: a dependent cell's formula
    is the master's with every relative row/column offset moved by the distance between the two
    cells; ``$``-anchored parts stay. References inside string literals are left alone; a
    reference shifted off the sheet becomes ``#REF!``.
    """
    if not d_row and not d_col:
        return formula

    def shift(m: re.Match) -> str:
        col_abs, letters, row_abs, digits = m.groups()
        try:
            col = column_index(letters)
        except ValueError:
            return m.group(0)
        row = int(digits)
        if not col_abs:
            col += d_col
        if not row_abs:
            row += d_row
        if not (1 <= col <= MAX_COL and 1 <= row <= MAX_ROW):
            return "#REF!"
        return f"{col_abs}{column_letter(col)}{row_abs}{row}"

    pieces = re.split(r'("(?:[^"]|"")*")', formula)
    return "".join(p if i % 2 else _REF_RE.sub(shift, p) for i, p in enumerate(pieces))


class _Issues:
    """Collects (ref, code, message) problems of one sheet; a problem that can repeat for
    every cell is tallied and becomes one item, naming how many and the first (:meth:`close`)."""

    def __init__(self):
        self.items: list[tuple[str | None, str, str]] = []
        self._tallies: dict[str, list] = {}

    def add(self, ref: str | None, code: str, message: str) -> None:
        self.items.append((ref, code, message))

    def tally(self, code: str, count: int, first: str, what: str) -> None:
        """Count ``count`` cells under ``code``, ``first`` being the reference of the first;
        ``what`` says what happened to them, e.g. ``cells outside the sheet skipped``."""
        self._tallies.setdefault(code, [0, first, what])[0] += count

    def close(self) -> None:
        """Turn the tallies into items."""
        for code, (n, first, what) in self._tallies.items():
            self.items.append((first, code, f"{what}: {n} (the first at {first})"))
        self._tallies = {}


class _CellSink:
    """Columnar accumulator of cells, flushed into Arrow record batches; every batch is
    counted in the workbook's :class:`~.container.Budget` (cells and bytes of text)."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.batches: list[pa.RecordBatch] = []
        self._reset()

    def _reset(self) -> None:
        self.row, self.col, self.data_type, self.value = [], [], [], []
        self.formula, self.formula_kind, self.style_index = [], [], []
        self.string_index = []
        self.pending_chars = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """Add a batch of cells built column-wise (kept in order with appended cells)."""
        self.flush()
        self.budget.add(batch.num_rows, text_bytes(batch.column("value")))
        self.batches.append(batch)

    def append(self, row, col, data_type, value, formula, formula_kind, style_index,
               string_index) -> None:
        self.row.append(row)
        self.col.append(col)
        self.data_type.append(data_type)
        self.value.append(value)
        self.formula.append(formula)
        self.formula_kind.append(formula_kind)
        self.style_index.append(style_index)
        self.string_index.append(string_index)
        self.pending_chars += len(value) if value else 0
        if len(self.row) >= _BATCH_CELLS or self.pending_chars > _BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        if not self.row:
            return
        self.budget.check_text(self.pending_chars)  # before the texts are copied into Arrow
        batch = pa.record_batch([
            pa.array(self.row, pa.int32()), pa.array(self.col, pa.int32()),
            pa.array(self.data_type, pa.string()), pa.array(self.value, pa.string()),
            pa.array(self.formula, pa.string()), pa.array(self.formula_kind, pa.string()),
            pa.array(self.style_index, pa.int32()), pa.array(self.string_index, pa.int32()),
        ], schema=CELL_SCHEMA)
        self.budget.add(batch.num_rows, text_bytes(batch.column("value")))
        self.batches.append(batch)
        self._reset()

    def table(self) -> pa.Table:
        self.flush()
        return pa.Table.from_batches(self.batches, schema=CELL_SCHEMA)


class _Formulas:
    """Shared-formula masters of one sheet (§18.3.1.40) and translation for dependents."""

    def __init__(self):
        self.masters: dict[str, tuple[str, int, int]] = {}

    def resolve(self, kind: str | None, si: str | None, text: str | None, row: int,
                col: int) -> str | None:
        if kind != "shared" or si is None:
            return text
        if text:
            self.masters[si] = (text, row, col)
            return text
        master = self.masters.get(si)
        if master is None:
            return text
        base, brow, bcol = master
        return translate_formula(base, row - brow, col - bcol)


class _Fallback(Exception):
    """The fast reader met something it does not read exactly; use the tree reader."""


class _NullTarget:
    """A parser target with no callbacks: libxml2 checks well-formedness without a tree."""

    def close(self) -> None:
        return None


class _BlockThreads:
    """Work on the blocks of a part in :attr:`threads` threads of its own, started when the
    part's first read fills a whole block (:data:`_BLOCK_BYTES`; the blocks of a smaller part
    are worked on in place, with no thread); on exit the threads end, queued work cancelled."""

    threads = 1
    name = "block"

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._inline: bool | None = None
        self._pending: deque = deque()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def start(self, first_read: int) -> None:
        """Decide, from the size of the part's first read (bytes), whether to use threads."""
        if self._inline is None:
            self._inline = first_read < _BLOCK_BYTES
            if not self._inline:
                self._pool = ThreadPoolExecutor(max_workers=self.threads,
                                                thread_name_prefix=self.name)


class _Checker(_BlockThreads):
    """libxml2's well-formedness check of a part fed block by block, run in a thread of its
    own (lxml releases the GIL while it parses) so that it overlaps the cell extraction. The
    parser is made and used in one thread only; at most :data:`_CHECK_AHEAD` blocks wait.
    :meth:`feed` and :meth:`close` raise :class:`_Fallback` once a block was not well-formed.
    """

    name = "xml-check"

    def __init__(self) -> None:
        super().__init__()
        self._parser = None

    def _checking(self) -> etree.XMLParser:
        """The parser, made in the thread that uses it."""
        if self._parser is None:
            self._parser = etree.XMLParser(target=_NullTarget(), **XML_OPTS)
        return self._parser

    def _feed(self, block: bytes) -> None:
        self._checking().feed(block)

    def _close(self) -> None:
        self._checking().close()

    def _run(self, step, *args) -> None:
        if self._inline:
            try:
                step(*args)
            except etree.XMLSyntaxError as exc:
                raise _Fallback() from exc
        else:
            self._pending.append(self._pool.submit(step, *args))

    def _settle(self, keep: int) -> None:
        while len(self._pending) > keep:
            try:
                self._pending.popleft().result()
            except etree.XMLSyntaxError as exc:
                raise _Fallback() from exc  # the tree reader keeps the cells before the fault

    def feed(self, block: bytes) -> None:
        """Check ``block`` (raising if it, or an earlier block, failed the check)."""
        self.start(len(block))
        self._run(self._feed, block)
        self._settle(_CHECK_AHEAD)

    def wait(self) -> None:
        """Wait for the blocks fed so far (raising if one failed the check)."""
        self._settle(0)

    def close(self) -> None:
        """End the document and wait for the verdict."""
        self.start(0)
        self._run(self._close)
        self._settle(0)


#: Blocks :class:`_Checker` may have queued before the reader waits for it.
_CHECK_AHEAD = 2


class _CellRuns(_BlockThreads):
    """The canonical cells of a part's runs of whole rows (:func:`_canonical_cells`), extracted
    by two threads while the reader goes on, and handed back in order with at most
    :data:`_RUNS_AHEAD` runs waiting."""

    threads = 2
    name = "cells"

    def put(self, run: bytes, prefix: bytes):
        """Queue ``run``; yields the (run, extracted cells or ``None``) that are due, in order."""
        if self._pool is None:
            yield run, _canonical_cells(run, prefix)
            return
        self._pending.append((run, self._pool.submit(_canonical_cells, run, prefix)))
        while len(self._pending) > _RUNS_AHEAD:
            run, future = self._pending.popleft()
            yield run, future.result()

    def drain(self):
        """Yields the runs still waiting, in order."""
        while self._pending:
            run, future = self._pending.popleft()
            yield run, future.result()


#: Runs of rows extracted ahead of the reader (memory: at most this many blocks of
#: :data:`_BLOCK_BYTES` and their cells).
_RUNS_AHEAD = 2


#: The fields of a cell as extracted from its XML (binary): column letters, row digits, ``s``
#: (style index), ``t`` (data type) and the inner XML; an attribute that is absent is ``b""``.
_CELL_FIELDS = ("letters", "digits", "s", "t", "inner")


@lru_cache(maxsize=16)
def _canonical_cell_regex(prefix: bytes) -> str:
    """RE2 pattern of a cell in the canonical form (attribute order r, s, t as Excel and most
    writers write it), matched against the text that follows ``<c `` up to the next cell: the
    inner XML runs to the piece's only ``</c>``."""
    p = re.escape(prefix.decode("ascii"))
    return (r'^r="(?P<letters>[A-Z]{1,3})(?P<digits>\d{1,7})"(?: s="(?P<s>\d+)")?'
            r'(?: t="(?P<t>\w+)")?(?: (?:cm|vm|ph)="[^"<>]*")*\s*'
            r"(?:/>|>(?P<inner>(?s:.*))</" + p + r"c>)")


def _canonical_cells(data: bytes, prefix: bytes) -> pa.StructArray | None:
    """The cells of a run of whole ``<row>`` and ``<c>`` elements, extracted by Arrow's RE2
    kernels (they release the GIL, so blocks are read by several threads): a struct array of
    :data:`_CELL_FIELDS`, or ``None`` when the run is not in canonical form (a comment, CDATA
    or processing instruction, a ``<c`` followed by another white space, a cell whose
    attributes are in another order or quoted otherwise). Cells written with a reference
    alone (``<c r="B2"/>``: no value, formula or style) are dropped first: they show nothing."""
    run = pa.array([data], pa.binary())
    if pc.match_substring_regex(run, _UNSAFE_REGEX)[0].as_py():
        return None
    opening = b"<" + prefix + b"c"
    run = pc.replace_substring_regex(run, re.escape(opening.decode("ascii"))
                                     + r' r="[A-Z]{1,3}\d{1,7}"\s*/>', "")
    pieces = pc.list_flatten(pc.split_pattern(run, opening + b" ")).slice(1)
    tags = pc.count_substring_regex(run, re.escape(opening.decode("ascii")) + r"[\s/>]")
    if len(pieces) != tags[0].as_py():
        return None
    cells = pc.extract_regex(pieces, _canonical_cell_regex(prefix))
    return None if cells.null_count else cells


@lru_cache(maxsize=16)
def _generic_cell_pattern(prefix: bytes) -> re.Pattern:
    """Any attribute order and quoting; slower, used when the canonical form does not fit."""
    p = re.escape(prefix)
    q = rb"[\"']"
    return re.compile(
        rb"<" + p + rb"c(?=[\s/>])"
        rb"(?:(?=[^>]*?\sr\s*=\s*" + q + rb"([A-Za-z]{1,3})(\d{1,7})" + q + rb"))?"
        rb"(?:(?=[^>]*?\ss\s*=\s*" + q + rb"(\d+)" + q + rb"))?"
        rb"(?:(?=[^>]*?\st\s*=\s*" + q + rb"(\w+)" + q + rb"))?"
        rb"[^>]*?(?:/>|>(.*?)</" + p + rb"c\s*>)",
        re.S,
    )


@lru_cache(maxsize=16)
def _tag_pattern(prefix: bytes) -> re.Pattern:
    return re.compile(rb"<" + re.escape(prefix) + rb"c(?=[\s/>])")


@lru_cache(maxsize=16)
def _row_tag_pattern(prefix: bytes) -> re.Pattern:
    return re.compile(rb"<" + re.escape(prefix) + rb"row(?=\s)([^>]*)>")


#: Largest style index a cell keeps (``style_index`` is int32); a larger one is no style there
#: is, and reads as the default, 0.
_MAX_STYLE = 2**31 - 1
#: What happens to a cell beyond the sheet's last row or column (an issue's text).
_OUTSIDE = f"cells outside the sheet (beyond {column_letter(MAX_COL)}{MAX_ROW}) skipped"


def _column_or_zero(letters: str) -> int:
    """:func:`~.a1.column_index` of ``letters``, 0 when they are no column of a sheet."""
    try:
        return column_index(letters)
    except ValueError:
        return 0


def _last_start(buf: bytearray, tags: tuple[bytes, ...]) -> int:
    """Where the last start tag of one of ``tags`` (``<row``, ``<c``: followed by white space,
    ``/`` or ``>``) in ``buf`` begins; 0 when none does after the first byte. What comes before
    it is whole elements."""
    best = 0
    for tag in tags:
        end = len(buf)
        while (at := buf.rfind(tag, best + 1, end)) > 0:
            follow = buf[at + len(tag): at + len(tag) + 1]
            if follow and follow in b" \t\r\n/>":
                best = at
                break
            end = at
    return best


_ROW_ATTR_R = re.compile(rb"\sr\s*=\s*[\"'](\d+)[\"']")
_ROW_HIDDEN = re.compile(rb"\shidden\s*=\s*[\"'](?:1|true)[\"']")
_ROW_CUSTOM_HEIGHT = re.compile(rb"\scustomHeight\s*=\s*[\"'](?:1|true)[\"']")
_ROW_HEIGHT = re.compile(rb"\sht\s*=\s*[\"']([\d.]+)[\"']")
_UNSAFE = (b"<![CDATA[", b"<!--", b"<?")
_UNSAFE_REGEX = "|".join(re.escape(token.decode("ascii")) for token in _UNSAFE)
#: An inline string with one plain ``<t>`` (what openpyxl and most libraries write).
_INLINE_TEXT_PATTERN = r'^<is><t(?: xml:space="preserve")?>(?P<text>[^<]*)</t></is>$'
_ENCODING = re.compile(rb"<\?xml[^>]*encoding\s*=\s*[\"']([\w.-]+)")


class WorksheetReader:
    """Read one worksheet part.

    Args:
        stream_factory: opens the part afresh (the tree reader may need a second pass).
        shared_strings: the workbook's shared string table.
        budget: what the workbook's sheets have used of its limits; the cells of this sheet
            are counted in it (see :class:`~.container.Budget`).
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
        self.issues = _Issues()

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
            except _Fallback:
                self.budget.restore(used)
                self.hidden_rows = []
                self.row_heights = {}
                self.issues = _Issues()
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
        """Record a hidden row and a custom row height (points, §18.3.1.73 ``ht``)."""
        if hidden:
            self.hidden_rows.append(row)
        if height is not None:
            try:
                self.row_heights[row] = float(height)
            except ValueError:
                self.issues.add(f"{row}:{row}", "bad_row_height", f"row height {height!r} is not a number")

    # -- shared value handling ------------------------------------------------------------------
    def _shared_string(self, raw: str, row: int, col: int) -> str | None:
        try:
            idx = int(raw)
        except ValueError:
            idx = -1
        if 0 <= idx < len(self.strings):
            return self.strings[idx]
        self.issues.add(cell_ref(row, col), "bad_shared_string_index",
                        f"shared string index {raw!r} does not exist")
        return None

    # -- fast reader ----------------------------------------------------------------------------
    def _read_fast(self) -> None:
        with _Checker() as checker:
            try:
                state, head, tail = self._extract(checker)
            except (_Fallback, LimitExceededError):
                checker.wait()  # a syntax error in what was read so far comes first
                raise
            checker.close()
        if state != "tail":
            raise _Fallback()
        if any(token in head or token in tail for token in _UNSAFE[:2]):
            raise _Fallback()
        try:
            self.frame = etree.fromstring(bytes(head) + bytes(tail), etree.XMLParser(**XML_OPTS))
        except etree.XMLSyntaxError as exc:
            raise _Fallback() from exc

    def _extract(self, checker: _Checker) -> tuple[str, bytearray, bytearray]:
        """Stream the part: every block goes to ``checker`` and, inside ``<sheetData>``, its
        whole elements (rows and cells: a run ends where the last ``<row`` or ``<c`` of the
        data read so far starts) to :class:`_CellRuns`; returns the final state and the frame's
        head and tail bytes (the cells are in ``self.cells``).

        Raises:
            LimitExceededError: head and tail together exceed ``max_tree_bytes``.
            _Fallback: an element of ``<sheetData>`` exceeds :data:`_MAX_ELEMENT_BYTES`.
        """
        sink = _CellSink(self.budget)
        formulas = _Formulas()
        head = bytearray()
        tail = bytearray()
        buf = bytearray()
        state = "head"
        prefix = b""
        starts = ()
        data_end = b""
        with self._open() as stream, _CellRuns() as runs:
            def cells(run: bytes) -> None:
                for data, extracted in runs.put(run, prefix):
                    self._cells_fast(data, extracted, prefix, sink, formulas)

            for block in iter(lambda: stream.read(_BLOCK_BYTES), b""):
                checker.feed(block)
                runs.start(len(block))
                if state == "head":
                    head += block
                    if not head.lstrip().startswith(b"<"):
                        raise _Fallback()  # a byte-order mark or another encoding
                    declared = _ENCODING.search(head[:256])
                    if declared and declared.group(1).lower() not in (b"utf-8", b"utf8"):
                        raise _Fallback()
                    m = _SHEETDATA_OPEN.search(head)
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
                        cut = _last_start(buf, starts)
                        if cut:
                            cells(bytes(buf[:cut]))
                            del buf[:cut]
                        elif len(buf) > _MAX_ELEMENT_BYTES:
                            raise _Fallback()
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
                    sink: _CellSink, formulas: _Formulas) -> None:
        """Add the cells of a run of rows (``extracted``: its canonical cells, ``None`` when it
        is not in canonical form) to ``sink``; hidden rows and custom row heights are noted."""
        if not data:
            return
        if extracted is None:
            if any(token in data for token in _UNSAFE):
                raise _Fallback()
            n_tags = len(_tag_pattern(prefix).findall(data))  # any white space after "<c"
            matches = _generic_cell_pattern(prefix).findall(data)
            if len(matches) != n_tags:
                raise _Fallback()
            extracted = pa.StructArray.from_arrays(
                [pa.array(field, pa.binary()) for field in zip(*matches)]
                if matches else [pa.array([], pa.binary())] * len(_CELL_FIELDS),
                names=list(_CELL_FIELDS))
        if b"hidden" in data or b"customHeight" in data:
            for attrs in _row_tag_pattern(prefix).findall(data):
                hidden = _ROW_HIDDEN.search(attrs)
                height = _ROW_CUSTOM_HEIGHT.search(attrs) and _ROW_HEIGHT.search(attrs)
                if not (hidden or height):
                    continue
                r = _ROW_ATTR_R.search(attrs)
                if r is None:
                    raise _Fallback()
                self._row_facts(int(r.group(1)), bool(hidden),
                                height.group(1).decode() if height else None)
        if len(extracted):
            sink.add(self._batch(extracted, prefix, formulas))

    def _batch(self, extracted: pa.StructArray, prefix: bytes,
               formulas: _Formulas) -> pa.RecordBatch:
        """Columnar cells of one run's extracted fields, computed with Arrow kernels; only cells
        with formulas, rich inline text, entities or bad shared-string indices go through
        Python."""
        if pc.min(pc.binary_length(extracted.field("letters"))).as_py() == 0:
            raise _Fallback()  # a cell without a reference: its position comes from the tree
        letter_codes = pc.dictionary_encode(extracted.field("letters"))
        cols = pa.array([_column_or_zero(x.decode()) for x in
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
                              _OUTSIDE)
            extracted = extracted.filter(inside)
            rows, cols = rows.filter(inside), cols.filter(inside)
        letters, digits, styles, types, raw = (extracted.field(name) for name in _CELL_FIELDS)
        styles = pc.cast(styles, pa.string())
        styles = pc.cast(pc.if_else(pc.equal(styles, ""), "0", styles), pa.int64())
        styles = pc.cast(pc.if_else(pc.greater(styles, _MAX_STYLE), 0, styles), pa.int32())
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
                                                      _INLINE_TEXT_PATTERN), [0])
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

    def _resolve_shared_strings(self, values: pa.Array, types: pa.Array, rows: pa.Array,
                                cols: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(values, string_index): the indices of ``t="s"`` cells replaced by their shared
        strings, and the index kept apart (bad index -> null value and a
        ``bad_shared_string_index`` issue)."""
        shared = pc.fill_null(pc.and_(pc.equal(types, "s"), pc.is_valid(values)), False)
        if not pc.any(shared).as_py():
            return values, pa.nulls(len(values), pa.int32())
        texts = self.strings_array
        digits = pc.fill_null(pc.utf8_is_digit(values), False)
        idx = pc.cast(pc.if_else(pc.and_(shared, digits), values, "-1"), pa.int64())
        ok = pc.and_(pc.greater_equal(idx, 0), pc.less(idx, len(texts)))
        if self._string_bytes is None:
            self._string_bytes = pc.binary_length(texts)
        # a string used by many cells is copied into each: counted before it is
        self.budget.check_text(pc.sum(self._string_bytes.take(
            pc.if_else(pc.and_(shared, ok), idx, pa.scalar(None, pa.int64())))).as_py() or 0)
        resolved = texts.take(pc.if_else(ok, idx, 0))
        out = pc.if_else(pc.and_(shared, ok), resolved, values)
        bad = np.flatnonzero(pc.and_(shared, pc.invert(ok)).to_numpy(zero_copy_only=False))
        for i in bad.tolist():
            self._shared_string(values[i].as_py(), rows[i].as_py(), cols[i].as_py())
        if len(bad):
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
            raise _Fallback() from exc
        return cell_children(el, data_type)

    # -- tree reader ----------------------------------------------------------------------------
    def _read_tree(self) -> None:
        sink = _CellSink(self.budget)
        formulas = _Formulas()
        current_row = 0
        last_col = 0
        with self._open() as raw:
            stream = _FrameBytes(raw, self._check_frame)
            context = etree.iterparse(stream, events=("start", "end"),
                                      tag=("{*}row", "{*}c", "{*}sheetData"), **XML_OPTS)
            try:
                for event, el in context:
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
                                          _OUTSIDE)
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
                        string_index = int(value) if value.strip().isdigit() else None
                        value = self._shared_string(value, row, col)
                        if value is None:
                            string_index = None
                    if value is None and formula is None and style in (None, "0"):
                        continue
                    if any(len(text) > self.max_chars for text in (value or "", formula or "")):
                        self.issues.tally("cell_text_truncated", 1, cell_ref(row, col),
                                          self._truncated)
                        value = value[:self.max_chars] if value is not None else None
                        formula = formula[:self.max_chars] if formula is not None else None
                    style_index = int(style or 0)
                    sink.append(row, col, data_type, value, formula, kind,
                                style_index if style_index <= _MAX_STYLE else 0, string_index)
            except etree.XMLSyntaxError as exc:
                self.cells = sink.table()
                raise CorruptWorkbookError(
                    f"worksheet is not well-formed XML: {syntax_error_message(exc)}") from exc
            except ValueError as exc:
                self.cells = sink.table()
                raise CorruptWorkbookError(f"worksheet has an invalid value: {exc}") from exc
            self.frame = context.root
        self.cells = sink.table()


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
