"""The stage registry: for each asset, the tables its stage writes and how it is called. The
Dagster assets, :func:`run_pipeline`, the evaluator and the
benchmark all run the stages through :data:`STAGES`, so the wiring is written once.

The last stage, ``chunk_embeddings``, writes no Parquet: it hands the retrieval units to the
``index_units`` of its :class:`RunSettings`, which embeds them into LanceDB (see
:mod:`extraction_assets.search`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

import extraction_assets.pipeline.trust as trust
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Workbook
from extraction_assets.core.sniff import sniff
from extraction_assets.core.trust.headers import HeaderDetector, uses_rules
from extraction_assets.core.trust.redact import RedactionPolicy
from extraction_assets.pipeline.codecs import (
    cell_markup,
    issues_table,
    marked_strings,
)
from extraction_assets.pipeline.stages import (
    StageOutput,
    embed_stage,
    normalize_stage,
    parse_stage,
    render_stage,
    segment_stage,
    workbook_stage,
)


@dataclass(frozen=True)
class RunSettings:
    """What the stages of one file need besides its tables.

    Attributes:
        data: the file's bytes (read by ``workbook`` and ``parsed_sheets``).
        source_path: where the file was found (the ``workbooks`` row).
        filename: the name records cite (``rendered_chunks``).
        limits: safety limits (default :class:`~extraction_assets.core.limits.Limits`).
        passwords: passwords tried on an encrypted file, in order.
        count_tokens: the embedder's token count of one text; ``rendered_chunks`` needs it.
        count_tokens_batch: the same for a list of texts (faster), optional.
        max_tokens: most tokens of a chunk.
        min_tokens: chunks smaller than this are merged with their neighbours under one heading.
        conversions: a folder where LibreOffice's conversions are kept between the stages
            that open the file (``None``: each converts again).
        redaction: what is redacted before rendering (default: nothing), see
            :class:`~extraction_assets.core.trust.redact.RedactionPolicy`.
        colour_tags: active colour mappings, ``RRGGBB -> tag`` (``status: overdue``).
        header_detector: who decides ambiguous header rows (default: the rules).
        dual_read_max_cells: compare the values with python-calamine's read of the bytes up
            to this many parsed cells (``review_items``); 0: no dual read.
        opened: the file as the ``workbook`` stage opened it from ``data``
            (``StageOutput.opened``): ``parsed_sheets`` reads it (and closes it) instead of
            opening the file again.
        index_units: ``index_units(workbook_hash, units)`` embeds a partition's retrieval
            units and stores them, replacing its rows (``chunk_embeddings`` needs it; e.g.
            :func:`~extraction_assets.search.retrieval.index_units` bound to a vector store
            and an embedder, see :func:`~extraction_assets.search.retrieval.indexer`).
    """

    data: bytes = b""
    source_path: str = ""
    filename: str = "workbook.xlsx"
    limits: Limits | None = None
    passwords: Sequence[str] = ()
    count_tokens: Callable[[str], int] | None = None
    count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None
    max_tokens: int = 512
    min_tokens: int = 0
    conversions: Path | None = None
    redaction: RedactionPolicy | None = None
    colour_tags: Mapping[str, str] | None = None
    header_detector: HeaderDetector | None = None
    dual_read_max_cells: int = 0
    opened: Workbook | None = None
    index_units: Callable[[str, list[dict]], Any] | None = None


Tables = Mapping[str, pa.Table]


@dataclass(frozen=True)
class Stage:
    """One stage: the ``asset`` it materializes, a short ``label`` (the benchmark's name), the
    tables it ``writes`` (the first is its main table, whose rows the benchmark counts) and
    ``call``, which runs it on one partition.

    ``call(workbook_hash, tables, settings)`` takes the tables of earlier stages it reads by
    name (a mapping that may read a table only when it is looked up; the Dagster assets
    declare what each reads as their inputs) and raises :class:`~.stages.StageError` when the
    file cannot be read."""

    asset: str
    label: str
    writes: tuple[str, ...]
    call: Callable[[str, Tables, RunSettings], StageOutput]

    def run(self, workbook_hash: str, tables: Tables, settings: RunSettings) -> StageOutput:
        """Run the stage on one partition (see :attr:`call`)."""
        return self.call(workbook_hash, tables, settings)


def _workbook(h: str, t: Tables, s: RunSettings) -> StageOutput:
    return workbook_stage(h, s.data, s.source_path, s.limits, s.passwords, s.conversions)


def _parse(h: str, t: Tables, s: RunSettings) -> StageOutput:
    out = parse_stage(h, s.data, s.limits, s.passwords, s.conversions, s.opened)
    review, issues = trust.review_items(
        h, s.data, sniff(s.data).format, out.tables["parsed_cells"], out.tables["parsed_sheets"],
        out.tables["sheet_objects"],
        out.tables["workbook_properties"].column("date_system")[0].as_py() == 1904,
        s.redaction, s.dual_read_max_cells, any(i.severity == "error" for i in out.issues))
    out.tables["parsed_cells"], out.tables["rich_text"] = trust.redact_parsed(
        out.tables["parsed_cells"], out.tables["rich_text"], s.redaction)
    out.tables["review_items"] = review
    out.issues += issues
    return out


def _normalize(h: str, t: Tables, s: RunSettings) -> StageOutput:
    out = normalize_stage(h, t["parsed_cells"], t["parsed_sheets"], t["styles"],
                          t["workbook_properties"], s.limits)
    out.tables["cells"] = trust.redact_cells(out.tables["cells"], s.redaction)
    out.tables["colour_legends"] = trust.colour_legends(
        h, t["parsed_cells"], t["parsed_sheets"], t["styles"], t["workbook_properties"],
        out.tables["cells"])
    return out


def _segment(h: str, t: Tables, s: RunSettings) -> StageOutput:
    out = segment_stage(h, t["cells"], t["sheets"], t["sheet_objects"])
    out.tables["blocks"] = trust.redact_blocks(out.tables["blocks"], s.redaction)
    if not uses_rules(s.header_detector):
        tables, issues = trust.refine_blocks(h, t["cells"], t["sheets"], out.tables,
                                             s.header_detector)
        out.tables.update(tables)
        out.issues += issues
    return out


def _render(h: str, t: Tables, s: RunSettings) -> StageOutput:
    if s.count_tokens is None:
        raise ValueError("rendered_chunks needs count_tokens (the embedder's tokenizer)")
    marked = marked_strings(t["rich_text"])  # the cells are looked up only when some are
    cells, markup, issues = trust.prepare_render(
        t["cells"], t["blocks"], t["block_columns"], s.redaction, s.colour_tags,
        cell_markup(t["parsed_cells"], marked) if marked else {})
    out = render_stage(h, s.filename, cells, t["sheets"], t["blocks"], t["block_columns"],
                       s.count_tokens, s.max_tokens, s.min_tokens, markup, s.count_tokens_batch)
    out.issues[:0] = issues
    return out


def _embed(h: str, t: Tables, s: RunSettings) -> StageOutput:
    if s.index_units is None or s.count_tokens_batch is None:
        raise ValueError("chunk_embeddings needs index_units and count_tokens_batch")
    return embed_stage(h, s.filename, s.source_path, t["chunks"], t["record_units"],
                       t["blocks"], s.count_tokens_batch, s.index_units)


#: The stages in graph order.
STAGES: tuple[Stage, ...] = (
    Stage("workbook", "workbook", ("workbooks",), _workbook),
    Stage("parsed_sheets", "parse",
          ("parsed_cells", "parsed_sheets", "styles", "workbook_properties", "sheet_objects",
           "rich_text", "review_items"), _parse),
    Stage("normalized_grids", "normalize", ("cells", "sheets", "formula_refs", "colour_legends"),
          _normalize),
    Stage("segmented_blocks", "segment", ("blocks", "block_columns"), _segment),
    Stage("rendered_chunks", "render", ("chunks", "records", "record_units", "renderings"),
          _render),
    Stage("chunk_embeddings", "embed", (), _embed),
)
#: Each stage by the asset it materializes.
STAGE: dict[str, Stage] = {stage.asset: stage for stage in STAGES}
#: The assets :func:`run_pipeline` can stop after, in graph order (``workbook`` only describes
#: the file, so the pipeline starts with ``parsed_sheets``).
PIPELINE_ASSETS = tuple(stage.asset for stage in STAGES[1:])


def run_pipeline(data: bytes, *, filename: str = "workbook.xlsx",
                 count_tokens: Callable[[str], int] | None = None, max_tokens: int = 512,
                 min_tokens: int = 0, limits: Limits | None = None,
                 count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None,
                 passwords: Sequence[str] = (), until: str = "rendered_chunks",
                 index_units: Callable[[str, list[dict]], Any] | None = None,
                 **trust_settings) -> dict[str, pa.Table]:
    """The stages of one file in one call and without Dagster: parse, normalize, segment,
    when ``count_tokens`` is given render (``count_tokens_batch``, the same counts for a list
    of texts, makes it faster), and, with ``until="chunk_embeddings"``, the retrieval units
    (cited by ``filename``) handed to ``index_units`` (see :class:`RunSettings`; it needs
    ``count_tokens_batch``). ``until`` names the last stage to run (one of
    :data:`PIPELINE_ASSETS`; default ``rendered_chunks``). ``trust_settings`` are the
    :class:`RunSettings` of the trust features (``redaction``, ``colour_tags``,
    ``header_detector``, ``dual_read_max_cells``; default: none of them). Returns every table
    by name (see :mod:`extraction_assets.pipeline.schemas`), the issues of all stages as
    ``extraction_issues``.

    Raises:
        StageError: the file cannot be read (typed cause in ``error``).
        ValueError: ``until`` is not one of :data:`PIPELINE_ASSETS`, or is
            ``chunk_embeddings`` without ``index_units`` and the token counts.
        TypeError: an unknown keyword in ``trust_settings``.
        VectorStoreError: the vector store holds vectors of another model or dimension.
    """
    if until not in PIPELINE_ASSETS:
        raise ValueError(f"unknown stage {until!r}; choose one of {', '.join(PIPELINE_ASSETS)}")
    if until == "chunk_embeddings" and None in (index_units, count_tokens, count_tokens_batch):
        raise ValueError("chunk_embeddings needs index_units, count_tokens and "
                         "count_tokens_batch")
    workbook_hash = hashlib.sha256(data).hexdigest()
    settings = RunSettings(data=data, source_path=filename, filename=filename, limits=limits,
                           passwords=passwords, count_tokens=count_tokens,
                           count_tokens_batch=count_tokens_batch, max_tokens=max_tokens,
                           min_tokens=min_tokens, index_units=index_units, **trust_settings)
    tables: dict[str, pa.Table] = {}
    issues = []
    for stage in STAGES[1:PIPELINE_ASSETS.index(until) + 2]:
        if stage.asset == "rendered_chunks" and count_tokens is None:
            break
        output = stage.run(workbook_hash, tables, settings)
        tables.update(output.tables)
        issues += output.issues
    tables["extraction_issues"] = issues_table(workbook_hash, issues)
    return tables
