"""The stage registry: for each asset that writes Parquet, the tables its stage reads, the tables
it writes and how it is called. The Dagster assets, :func:`run_pipeline`, the evaluator and the
benchmark all run the stages through :data:`STAGES`, so the wiring is written once.

The embeddings (``chunk_embeddings``, written to LanceDB) are not a stage of this registry:
they need the embedder and the vector store, see :mod:`extraction_assets.search`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import pyarrow as pa

from extraction_assets.core.limits import Limits
from extraction_assets.pipeline.codecs import (
    MARKUP_COLUMNS,
    cell_markup,
    issues_table,
    marked_strings,
)
from extraction_assets.pipeline.stages import (
    StageOutput,
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


Tables = Mapping[str, pa.Table]


@dataclass(frozen=True)
class Stage:
    """One stage: the ``asset`` it materializes, a short ``label`` (the benchmark's name), the
    tables it ``reads`` (written by earlier stages) and ``writes`` (the first is its main
    table, whose rows the benchmark counts), and ``call``, which runs it on one partition.
    ``columns`` names the only columns it reads of some of its tables (the others it reads
    whole).

    ``call(workbook_hash, tables, settings)`` takes at least the tables of ``reads`` (a mapping
    that may read a table only when it is looked up) and raises :class:`~.stages.StageError`
    when the file cannot be read."""

    asset: str
    label: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    call: Callable[[str, Tables, RunSettings], StageOutput]
    columns: Mapping[str, list[str]] = field(default_factory=dict)

    def run(self, workbook_hash: str, tables: Tables, settings: RunSettings) -> StageOutput:
        """Run the stage on one partition (see :attr:`call`)."""
        return self.call(workbook_hash, tables, settings)


def _workbook(h: str, t: Tables, s: RunSettings) -> StageOutput:
    return workbook_stage(h, s.data, s.source_path, s.limits, s.passwords)


def _parse(h: str, t: Tables, s: RunSettings) -> StageOutput:
    return parse_stage(h, s.data, s.limits, s.passwords)


def _normalize(h: str, t: Tables, s: RunSettings) -> StageOutput:
    return normalize_stage(h, t["parsed_cells"], t["parsed_sheets"], t["styles"],
                           t["workbook_properties"], s.limits)


def _segment(h: str, t: Tables, s: RunSettings) -> StageOutput:
    return segment_stage(h, t["cells"], t["sheets"], t["sheet_objects"])


def _render(h: str, t: Tables, s: RunSettings) -> StageOutput:
    if s.count_tokens is None:
        raise ValueError("rendered_chunks needs count_tokens (the embedder's tokenizer)")
    marked = marked_strings(t["rich_text"])  # the cells are looked up only when some are
    return render_stage(h, s.filename, t["cells"], t["sheets"], t["blocks"], t["block_columns"],
                        s.count_tokens, s.max_tokens, s.min_tokens,
                        cell_markup(t["parsed_cells"], marked) if marked else {},
                        s.count_tokens_batch)


#: The stages in graph order.
STAGES: tuple[Stage, ...] = (
    Stage("workbook", "workbook", (), ("workbooks",), _workbook),
    Stage("parsed_sheets", "parse", (),
          ("parsed_cells", "parsed_sheets", "styles", "workbook_properties", "sheet_objects",
           "rich_text"), _parse),
    Stage("normalized_grids", "normalize",
          ("parsed_cells", "parsed_sheets", "styles", "workbook_properties"),
          ("cells", "sheets"), _normalize),
    Stage("segmented_blocks", "segment", ("cells", "sheets", "sheet_objects"),
          ("blocks", "block_columns"), _segment),
    Stage("rendered_chunks", "render",
          ("cells", "sheets", "blocks", "block_columns", "parsed_cells", "rich_text"),
          ("chunks", "records", "renderings"), _render, {"parsed_cells": MARKUP_COLUMNS}),
)
#: Each stage by the asset it materializes.
STAGE: dict[str, Stage] = {stage.asset: stage for stage in STAGES}
#: For each table a stage reads whole, the last stage (by asset) that does: a process that
#: wrote the table holds it in memory until then (see
#: :meth:`~extraction_assets.store.storage.DataStore.write_table`).
LAST_READER: dict[str, str] = {table: stage.asset for stage in STAGES for table in stage.reads
                               if table not in stage.columns}
#: The assets :func:`run_pipeline` can stop after, in graph order (``workbook`` only describes
#: the file, so the pipeline starts with ``parsed_sheets``).
PIPELINE_ASSETS = tuple(stage.asset for stage in STAGES[1:])


def run_pipeline(data: bytes, *, filename: str = "workbook.xlsx",
                 count_tokens: Callable[[str], int] | None = None, max_tokens: int = 512,
                 min_tokens: int = 0, limits: Limits | None = None,
                 count_tokens_batch: Callable[[Sequence[str]], list[int]] | None = None,
                 passwords: Sequence[str] = (),
                 until: str = "rendered_chunks") -> dict[str, pa.Table]:
    """Every stage but the embeddings, in one call and without Dagster: parse, normalize,
    segment and, when ``count_tokens`` is given, render (``count_tokens_batch``, the same counts
    for a list of texts, makes it faster). ``until`` names the last of them to run (one of
    :data:`PIPELINE_ASSETS`; default all). Returns every table by name (see
    :mod:`extraction_assets.pipeline.schemas`), the issues of all stages as
    ``extraction_issues``.

    Raises:
        StageError: the file cannot be read (typed cause in ``error``).
        ValueError: ``until`` is not one of :data:`PIPELINE_ASSETS`.
    """
    if until not in PIPELINE_ASSETS:
        raise ValueError(f"unknown stage {until!r}; choose one of {', '.join(PIPELINE_ASSETS)}")
    workbook_hash = hashlib.sha256(data).hexdigest()
    settings = RunSettings(data=data, filename=filename, limits=limits, passwords=passwords,
                           count_tokens=count_tokens, count_tokens_batch=count_tokens_batch,
                           max_tokens=max_tokens, min_tokens=min_tokens)
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
