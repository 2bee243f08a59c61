"""The machinery of the fast worksheet reader (see :mod:`.worksheet`): blocks of the part read in
threads, the well-formedness check, runs of whole rows, the canonical and generic cell
patterns, shared formulas and the columnar cell sink.
"""

from __future__ import annotations

import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree

from extraction_assets.core.a1 import MAX_COL, MAX_ROW, column_index, column_letter
from extraction_assets.core.limits import Budget
from extraction_assets.core.model import CELL_SCHEMA
from extraction_assets.core.ooxml.xml import XML_OPTS, text_bytes

BLOCK_BYTES = 1 << 22
_BATCH_CELLS = 1 << 16
#: Characters of text the tree reader collects before it makes a batch of its cells.
_BATCH_CHARS = 1 << 20
#: Most bytes of one element of ``<sheetData>`` (a cell, a row's start tag) the fast reader
#: holds while it waits for its end; a larger one is read by the tree reader.
MAX_ELEMENT_BYTES = 1 << 24
_PREFIX = rb"(?:[A-Za-z_][\w.-]*:)?"
SHEETDATA_OPEN = re.compile(rb"<(" + _PREFIX + rb")sheetData(?=[\s/>])[^>]*?(/?)>")
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


class SheetIssues:
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


class CellSink:
    """Columnar accumulator of cells, flushed into Arrow record batches; every batch is
    counted in the workbook's :class:`~extraction_assets.core.limits.Budget` (cells and bytes of text)."""

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


class SharedFormulas:
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


class TreeFallback(Exception):
    """The fast reader met something it does not read exactly; use the tree reader."""


class _NullTarget:
    """A parser target with no callbacks: libxml2 checks well-formedness without a tree."""

    def close(self) -> None:
        return None


class _BlockThreads:
    """Work on the blocks of a part in :attr:`threads` threads of its own, started when the
    part's first read fills a whole block (:data:`BLOCK_BYTES`; the blocks of a smaller part
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
            self._inline = first_read < BLOCK_BYTES
            if not self._inline:
                self._pool = ThreadPoolExecutor(max_workers=self.threads,
                                                thread_name_prefix=self.name)


class WellFormedChecker(_BlockThreads):
    """libxml2's well-formedness check of a part fed block by block, run in a thread of its
    own (lxml releases the GIL while it parses) so that it overlaps the cell extraction. The
    parser is made and used in one thread only; at most :data:`_CHECK_AHEAD` blocks wait.
    :meth:`feed` and :meth:`close` raise :class:`TreeFallback` once a block was not well-formed.
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
                raise TreeFallback() from exc
        else:
            self._pending.append(self._pool.submit(step, *args))

    def _settle(self, keep: int) -> None:
        while len(self._pending) > keep:
            try:
                self._pending.popleft().result()
            except etree.XMLSyntaxError as exc:
                raise TreeFallback() from exc  # the tree reader keeps the cells before the fault

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


#: Blocks :class:`WellFormedChecker` may have queued before the reader waits for it.
_CHECK_AHEAD = 2


class CellRuns(_BlockThreads):
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
#: :data:`BLOCK_BYTES` and their cells).
_RUNS_AHEAD = 2
#: The fields of a cell as extracted from its XML (binary): column letters, row digits, ``s``
#: (style index), ``t`` (data type) and the inner XML; an attribute that is absent is ``b""``.
CELL_FIELDS = ("letters", "digits", "s", "t", "inner")


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
    :data:`CELL_FIELDS`, or ``None`` when the run is not in canonical form (a comment, CDATA
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
def generic_cell_pattern(prefix: bytes) -> re.Pattern:
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
def tag_pattern(prefix: bytes) -> re.Pattern:
    return re.compile(rb"<" + re.escape(prefix) + rb"c(?=[\s/>])")


@lru_cache(maxsize=16)
def row_tag_pattern(prefix: bytes) -> re.Pattern:
    return re.compile(rb"<" + re.escape(prefix) + rb"row(?=\s)([^>]*)>")


#: Largest style index a cell keeps (``style_index`` is int32); a larger one is no style there
#: is, and reads as the default, 0.
MAX_STYLE = 2**31 - 1
#: What happens to a cell beyond the sheet's last row or column (an issue's text).
OUTSIDE = f"cells outside the sheet (beyond {column_letter(MAX_COL)}{MAX_ROW}) skipped"


def column_or_zero(letters: str) -> int:
    """:func:`~.a1.column_index` of ``letters``, 0 when they are no column of a sheet."""
    try:
        return column_index(letters)
    except ValueError:
        return 0


def last_start(buf: bytearray, tags: tuple[bytes, ...]) -> int:
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


ROW_ATTR_R = re.compile(rb"\sr\s*=\s*[\"'](\d+)[\"']")
ROW_HIDDEN = re.compile(rb"\shidden\s*=\s*[\"'](?:1|true)[\"']")
ROW_CUSTOM_HEIGHT = re.compile(rb"\scustomHeight\s*=\s*[\"'](?:1|true)[\"']")
ROW_HEIGHT = re.compile(rb"\sht\s*=\s*[\"']([\d.]+)[\"']")
UNSAFE = (b"<![CDATA[", b"<!--", b"<?")
_UNSAFE_REGEX = "|".join(re.escape(token.decode("ascii")) for token in UNSAFE)
#: An inline string with one plain ``<t>`` (what openpyxl and most libraries write).
INLINE_TEXT_PATTERN = r'^<is><t(?: xml:space="preserve")?>(?P<text>[^<]*)</t></is>$'
ENCODING = re.compile(rb"<\?xml[^>]*encoding\s*=\s*[\"']([\w.-]+)")
