"""Timed runs in this process: our stages one by one, and the reference readers.

Each measurement collects garbage, resets the process's peak resident set size (VmHWM, through
``/proc/self/clear_refs``; Linux only, ``None`` elsewhere) and times one call with
:func:`time.perf_counter`. A stage's peak is the process's high-water mark while that stage ran:
it includes what the process already held (interpreter, libraries, the tokenizer, the outputs
of earlier stages), so the largest stage peak is the peak of the whole run.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import io
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from extraction_assets.pipeline import STAGES as PIPELINE_STAGES
from extraction_assets.pipeline import RunSettings
from extraction_assets.search.embedding import LocalEmbedder

#: The chunk budget and merge floor of the ``rendered_chunks`` asset's defaults.
MAX_TOKENS, MIN_TOKENS = 512, 64
#: The registry's stages that make "hash -> chunks" (everything before the embeddings).
_CHUNK_STAGES = PIPELINE_STAGES[1:-1]
#: Our stages in order (``hash``, then the registry's labels, the last ``embed``); ``hash`` ..
#: ``render`` together are "hash -> chunks".
STAGES = ("hash", *(stage.label for stage in PIPELINE_STAGES[1:]))
#: Stages that make "hash -> chunks" (everything before the embeddings).
TO_CHUNKS = STAGES[:-1]


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@dataclass
class Timing:
    """One timed call: wall ``seconds``, process peak RSS in MB (``None`` when unknown) and
    ``rows``: what the call produced (cells read, rows of the stage's main table...)."""

    seconds: float
    peak_rss_mb: float | None
    rows: int


def timed(fn: Callable[[], Any], rows: Callable[[Any], int]) -> tuple[Any, Timing]:
    """Run ``fn()`` once; returns its result and a :class:`Timing` (``rows(result)``)."""
    gc.collect()
    _reset_peak()
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    return result, Timing(seconds, _peak_mb(), rows(result))


# -- reference readers ------------------------------------------------------------------------
def read_calamine(data: bytes) -> int:
    """python-calamine reading every value of every sheet; returns the non-empty cell count."""
    from python_calamine import CalamineWorkbook

    workbook = CalamineWorkbook.from_filelike(io.BytesIO(data))
    cells = 0
    for name in workbook.sheet_names:
        for row in workbook.get_sheet_by_name(name).to_python():
            cells += sum(1 for v in row if v != "")
    return cells


def read_openpyxl(data: bytes) -> int:
    """openpyxl in read-only mode reading every cached value; returns the non-empty cell count."""
    from openpyxl import load_workbook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        return sum(1 for sheet in workbook.worksheets
                   for row in sheet.iter_rows(values_only=True)
                   for v in row if v is not None and v != "")
    finally:
        workbook.close()


def docling_available() -> bool:
    """Whether Docling's Excel backend can be imported (the ``bench-docling`` extra)."""
    return importlib.util.find_spec("docling") is not None


def docling_markdown(data: bytes, filename: str) -> str:
    """Docling's Excel backend conversion of a workbook's bytes plus its Markdown export.

    The backend is called as Docling's ``SimplePipeline`` does for declarative formats (its
    ``convert()``); ``DocumentConverter`` itself is not used because in docling-slim 2.143 it
    imports the speech pipeline, which needs torch, even for spreadsheets.
    """
    from docling.backend.msexcel_backend import MsExcelDocumentBackend
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = InputDocument(path_or_stream=io.BytesIO(data), format=InputFormat.XLSX,
                               backend=MsExcelDocumentBackend, filename=filename)
        return source._backend.convert().export_to_markdown()


def convert_docling(data: bytes, filename: str) -> int:
    """:func:`docling_markdown`'s length in characters (what the benchmark times)."""
    return len(docling_markdown(data, filename))


# -- our stages -------------------------------------------------------------------------------
def untimed(fn: Callable[[], Any], rows: Callable[[Any], int]) -> tuple[Any, Timing]:
    """Run ``fn()`` once, as :func:`timed` but without collecting garbage or reading the peak
    (for many small files, where those would cost more than the stages)."""
    start = time.perf_counter()
    result = fn()
    return result, Timing(time.perf_counter() - start, None, 0)


def run_stages(data: bytes, filename: str, embedder: LocalEmbedder,
               timer=timed) -> tuple[dict[str, Timing], dict, list[str]]:
    """Run hash, parse, normalize, segment and render ("hash -> chunks") on one workbook, each
    timed by ``timer`` (:func:`timed` or :func:`untimed`); render counts tokens with
    ``embedder``'s tokenizer as the ``rendered_chunks`` asset does, at its defaults (512 max,
    64 min).

    Returns (timings by stage name, counts: ``records``, ``chunks``, ``tokens`` of all
    chunks, the chunk texts). Raises :class:`~extraction_assets.pipeline.stages.StageError` when the
    file cannot be read.
    """
    timings: dict[str, Timing] = {}
    workbook_hash, timings["hash"] = timer(lambda: hashlib.sha256(data).hexdigest(), lambda _: 1)
    settings = RunSettings(data=data, filename=filename, count_tokens=embedder.count_tokens,
                           count_tokens_batch=embedder.count_tokens_batch,
                           max_tokens=MAX_TOKENS, min_tokens=MIN_TOKENS)
    tables: dict = {}
    for stage in _CHUNK_STAGES:
        output, timings[stage.label] = timer(
            partial(stage.run, workbook_hash, tables, settings),
            lambda out, main=stage.writes[0]: out.tables[main].num_rows)
        tables.update(output.tables)
    rendered = output
    chunks = rendered.tables["chunks"]
    counts = {"records": rendered.tables["records"].num_rows, "chunks": chunks.num_rows,
              "tokens": sum(chunks.column("n_tokens").to_pylist())}
    return timings, counts, chunks.column("text").to_pylist()


def run_embed(embedder: LocalEmbedder, texts: list[str]) -> Timing:
    """``embedder.embed(texts)`` (in its batches), timed; ``rows`` = texts embedded."""
    return timed(lambda: embedder.embed(texts), len)[1]


def stages_wall(paths: list[Path]) -> float:
    """Wall seconds of hash -> chunks over ``paths``, one file after the other in this process
    (after one untimed warm-up file and the tokenizer's load): the stages alone, what an ingest
    of the same files adds Dagster, Parquet and the views to."""
    embedder = LocalEmbedder()
    embedder.count_tokens("")
    run_stages(paths[0].read_bytes(), paths[0].name, embedder, untimed)
    start = time.perf_counter()
    for path in paths:
        run_stages(path.read_bytes(), path.name, embedder, untimed)
    return time.perf_counter() - start
