"""The header-row detector seam: who decides how many header rows an ambiguous table has.

The default is the segmenter's own rules (:mod:`extraction_assets.core.segment.header`):
deterministic, offline, nothing sent anywhere. A :class:`HeaderDetector` can be given instead
(e.g. :class:`~.llm_headers.OpenAIHeaderDetector`); it is asked only about **ambiguous**
tables, and sees only their first :data:`SAMPLE_ROWS` rows (display text, each cell cut at
:data:`SAMPLE_CHARS` characters). A table is ambiguous when the rules found no header row, or
when the first row under the header holds only text, as the header does (the types of the
values do not tell header from data). Excel tables (ListObjects) and pivot tables declare
their header rows and are never ambiguous.

Whatever the detector answers is stamped in the block's ``reasons`` with its
:attr:`~HeaderDetector.version`, so a table whose header came from a model says so.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from extraction_assets.core.blocks import Block, BlockKind
from extraction_assets.core.grid import StyledGrid
from extraction_assets.core.segment.context import SheetContext
from extraction_assets.core.segment.header import set_header_rows
from extraction_assets.core.segment.headings import HeadingMap
from extraction_assets.core.segment.rows import mark_data_rows
from extraction_assets.core.segment.rules import MAX_HEADER_ROWS

#: Rows of an ambiguous table a detector sees.
SAMPLE_ROWS = 6
#: Characters of one cell a detector sees.
SAMPLE_CHARS = 80
#: Version of the segmenter's own rules as a detector.
RULES_VERSION = "rules/1"


@runtime_checkable
class HeaderDetector(Protocol):
    """Decides the header rows of an ambiguous table from its first rows.

    ``version`` names the implementation and its model (stamped in provenance);
    ``header_rows(rows)`` gets the first rows (lists of display texts, ``""`` for an empty
    cell; at most :data:`SAMPLE_ROWS`) and returns how many of them are header rows (0 to
    ``min(4, len(rows) - 1)``), or ``None`` to keep the rules' decision. It may raise any
    exception: the rules' decision is then kept and the failure reported."""

    @property
    def version(self) -> str: ...

    def header_rows(self, rows: list[list[str]]) -> int | None: ...


class RulesHeaderDetector:
    """The default detector: the segmenter's rules, which have already decided (never
    overrides, never consulted)."""

    version = RULES_VERSION

    def header_rows(self, rows: list[list[str]]) -> int | None:
        return None


def uses_rules(detector: HeaderDetector | None) -> bool:
    """Whether ``detector`` is the default (the rules alone)."""
    return detector is None or isinstance(detector, RulesHeaderDetector)


def _declared(block: Block) -> bool:
    return any(r.startswith(("Excel table (ListObject)", "pivot table ")) for r in block.reasons)


def sample_rows(ctx: SheetContext, block: Block, n: int = SAMPLE_ROWS) -> list[list[str]]:
    """The first ``n`` rows of a block as display texts (``""`` for an empty cell), each cut
    at :data:`SAMPLE_CHARS` characters."""
    out = []
    for r in range(block.min_row, min(block.max_row, block.min_row + n - 1) + 1):
        row = []
        for c in range(block.min_col, block.max_col + 1):
            p = ctx.find(r, c)
            row.append("" if p is None else ctx.text(p)[:SAMPLE_CHARS])
        out.append(row)
    return out


def is_ambiguous(ctx: SheetContext, block: Block) -> bool:
    """Whether a table's header rows are ambiguous (see the module docstring)."""
    if block.kind != BlockKind.TABLE or _declared(block) or block.max_row <= block.min_row:
        return False
    if block.header_row_count == 0:
        return True
    first = block.min_row + block.header_row_count
    if first > block.max_row:
        return False
    cells = ctx.cells_in(first, block.min_col, first, block.max_col)
    return bool(len(cells)) and bool(ctx.is_str[cells].all())


def refine_headers(grid: StyledGrid, blocks: list[Block], detector: HeaderDetector,
                   headings: HeadingMap | None = None) -> list[str]:
    """Ask ``detector`` about each ambiguous table of one sheet's ``blocks`` (changed in
    place): a different answer rebuilds the table's columns and data rows with that many
    header rows. Every consulted table gets a reason naming the detector's version and its
    answer. Returns one message per failed consultation (the rules' decision kept)."""
    ctx = SheetContext(grid, headings)
    failures = []
    for block in blocks:
        if not is_ambiguous(ctx, block):
            continue
        rows = sample_rows(ctx, block)
        try:
            answer = detector.header_rows(rows)
        except Exception as exc:  # noqa: BLE001 - any failure of the seam keeps the rules
            failures.append(f"{block.sheet_name}!{block.a1_range}: header detector "
                            f"{detector.version} failed: {type(exc).__name__}: {exc}"[:300])
            continue
        limit = min(MAX_HEADER_ROWS, block.max_row - block.min_row, len(rows) - 1)
        if answer is None or not 0 <= answer <= limit:
            block.reasons.append(f"header detector {detector.version}: answer {answer!r} "
                                 f"not used; {block.header_row_count} header rows by the rules")
            continue
        block.reasons.append(f"header detector {detector.version}: {answer} header rows "
                             f"(the rules found {block.header_row_count}), from the first "
                             f"{len(rows)} rows")
        if answer != block.header_row_count:
            block.columns, block.skip_rows, block.total_rows = [], [], []
            block.group_rows, block.row_group_cols = [], []
            set_header_rows(ctx, block, answer)
            mark_data_rows(ctx, block)
    return failures
