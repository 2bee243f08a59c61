"""Sweep a corpus through the whole asset graph but the embeddings, each file in a child process
with a time limit, and tell how each file ended.

Every file listed in ``CORPUS_DIR/MANIFEST.tsv`` (column ``corpus_path``) goes through the
``workbook``, ``parsed_sheets``, ``normalized_grids``, ``segmented_blocks`` and
``rendered_chunks`` stages (:func:`~extraction_assets.pipeline.stages.workbook_stage` and
:func:`~extraction_assets.pipeline.run_pipeline`, tokens counted by the bundled model's tokenizer).
A file ends as ``success``, as the code of a typed :class:`~.core.errors.ExtractionError`
(``not_a_spreadsheet``, ``corrupt_workbook``, ``encrypted``, ``hostile_content``,
``limit_exceeded``, ``unsupported_format``), or as a fault: ``error`` (any other exception),
``timeout`` (over the time limit; the child is killed) or ``crashed`` (the child died). A fault
never harms another file.

    python -m tools.sweep [CORPUS_DIR] [--timeout SECONDS] [--jobs N] [--json OUT]

prints a table of file -> outcome and seconds and a count per outcome; the exit code is 1 when
any file ended as a fault, 2 when there is no manifest.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections import Counter
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, Optional, Sequence

import typer
from pebble import ProcessExpired, ProcessPool
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from extraction_assets.core.errors import ExtractionError, one_line
from extraction_assets.pipeline import PIPELINE_ASSETS, StageError, run_pipeline
from extraction_assets.pipeline.stages import workbook_stage
from extraction_assets.search.embedding import LocalEmbedder
from tools.paths import shared_dir

#: Outcomes that are faults of the extraction, not typed refusals of a bad file: the sweep fails
#: when any file ends so.
FAULTS = ("error", "timeout", "crashed")
#: The codes of the typed errors a bad input file may end with.
TYPED_CODES = tuple(sorted(cls.code for cls in ExtractionError.__subclasses__()))
#: Default time limit per file, seconds.
DEFAULT_TIMEOUT = 120.0
#: Row counts reported for a file that succeeds.
COUNTED_TABLES = ("parsed_sheets", "sheets", "blocks", "records", "chunks")


@dataclass
class SweepResult:
    """How one file ended.

    Attributes:
        file: the path as listed in the manifest (relative to the corpus dir).
        outcome: ``success``, a typed error code (:data:`TYPED_CODES`) or a fault
            (:data:`FAULTS`).
        seconds: time spent on the file in its child process (the limit for ``timeout``;
            ``None`` for ``error`` and ``crashed``).
        message: the typed error's message (one line), ``Class: message`` of another
            exception on one line, or how the child ended; empty on success.
        counts: rows of the :data:`COUNTED_TABLES` that the stages run produced, on success.
    """

    file: str
    outcome: str
    seconds: Optional[float]
    message: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def fault(self) -> bool:
        """True when the file ended in an untyped exception, a timeout or a crash."""
        return self.outcome in FAULTS


def manifest_files(corpus_dir: str | os.PathLike) -> list[str]:
    """The ``corpus_path`` column of ``corpus_dir/MANIFEST.tsv`` (tab-separated, one header
    line), in manifest order.

    Raises:
        FileNotFoundError: there is no ``MANIFEST.tsv``.
        KeyError: the manifest has no ``corpus_path`` column.
    """
    lines = (Path(corpus_dir) / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    if "corpus_path" not in header:
        raise KeyError("MANIFEST.tsv has no corpus_path column")
    column = header.index("corpus_path")
    return [line.split("\t")[column] for line in lines[1:] if line.strip()]


def _warm_up() -> None:
    """Load the tokenizer once per child process, before its first file."""
    LocalEmbedder().count_tokens("")


def run_file(path: str, until: str = "rendered_chunks",
             max_tokens: int = 512) -> tuple[str, str, float, dict[str, int]]:
    """Run one file through the ``workbook`` stage and :func:`~.run_pipeline` up to
    ``until`` (default: every stage but the embeddings), in this process.

    Returns ``(outcome, message, seconds, counts)``: ``("success", "", s, rows by table)`` or
    ``(code, message, s, {})`` for a typed error; ``counts`` has the tables of
    :data:`COUNTED_TABLES` that the stages run produce and, when the records were built,
    ``lost_values``: the ``value_not_in_output`` issues (cells whose value reaches no output).
    Any other exception propagates.
    """
    start = time.perf_counter()
    data = Path(path).read_bytes()
    try:
        workbook_stage(hashlib.sha256(data).hexdigest(), data, path)
        embedder = LocalEmbedder()
        tables = run_pipeline(data, filename=Path(path).name, until=until, max_tokens=max_tokens,
                              count_tokens=embedder.count_tokens,
                              count_tokens_batch=embedder.count_tokens_batch)
    except StageError as exc:
        return exc.error.code, exc.error.message, time.perf_counter() - start, {}
    counts = {name: tables[name].num_rows for name in COUNTED_TABLES if name in tables}
    if "records" in tables:
        codes = tables["extraction_issues"].column("code").to_pylist()
        counts["lost_values"] = codes.count("value_not_in_output")
    return "success", "", time.perf_counter() - start, counts


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def sweep(files: Sequence[str], corpus_dir: str | os.PathLike, timeout: float = DEFAULT_TIMEOUT,
          jobs: int | None = None, until: str = "rendered_chunks",
          on_result: Callable[[SweepResult], None] | None = None) -> list[SweepResult]:
    """Run each of ``files`` (paths relative to ``corpus_dir``) through :func:`run_file` (up to
    the stage ``until``, default every stage but the embeddings) in a pool of ``jobs`` child
    processes (default: the CPU count); a child that exceeds ``timeout`` seconds on a file is
    killed and replaced, as is one that dies. ``on_result`` is called as each file ends (in
    completion order). Returns one result per file, in the order given.

    Raises:
        ValueError: ``timeout`` <= 0, ``jobs`` < 1 or ``until`` is not one of
            :data:`~.stages.PIPELINE_ASSETS`.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    if jobs is None:
        jobs = os.cpu_count() or 1
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if until not in PIPELINE_ASSETS:
        raise ValueError(f"unknown stage {until!r}; choose one of {', '.join(PIPELINE_ASSETS)}")
    root = Path(corpus_dir)
    results: dict[str, SweepResult] = {}
    # children fork from a clean server process that has imported the stages, whatever
    # threads the caller (pytest, Dagster) runs; a replaced child starts in about a second
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([run_pipeline.__module__, LocalEmbedder.__module__])
    with ProcessPool(max_workers=jobs, initializer=_warm_up, context=context) as pool:
        # largest files first, so that no long file starts last while the other children idle
        futures = {pool.schedule(run_file, args=(str(root / name), until), timeout=timeout): name
                   for name in sorted(files, key=lambda name: -_size(root / name))}
        for future in as_completed(futures):
            name = futures[future]
            try:
                outcome, message, seconds, counts = future.result()
                result = SweepResult(name, outcome, seconds, message, counts)
            except FutureTimeout:
                result = SweepResult(name, "timeout", timeout, f"killed after {timeout:g} s")
            except ProcessExpired as exc:
                result = SweepResult(name, "crashed", None,
                                     f"child process died (exit code {exc.exitcode})")
            except Exception as exc:  # noqa: BLE001 - any untyped failure is reported
                result = SweepResult(name, "error", None,
                                     one_line(f"{type(exc).__name__}: {exc}", None))
            results[name] = result
            if on_result:
                on_result(result)
    return [results[name] for name in files]


def summary(results: Sequence[SweepResult]) -> dict[str, int]:
    """Number of files per outcome, most frequent first."""
    return dict(Counter(r.outcome for r in results).most_common())


#: The choices of ``--until``.
Stage = Enum("Stage", {name: name for name in PIPELINE_ASSETS}, type=str)


def _table(results: Sequence[SweepResult]) -> Table:
    table = Table(title="corpus sweep")
    table.add_column("file", overflow="fold")
    table.add_column("outcome")
    table.add_column("seconds", justify="right")
    table.add_column("detail", overflow="fold")
    for r in results:
        style = "red" if r.fault else "green" if r.outcome == "success" else "yellow"
        detail = r.message or ", ".join(f"{k}={v}" for k, v in r.counts.items())
        table.add_row(r.file, f"[{style}]{r.outcome}[/]",
                      "-" if r.seconds is None else f"{r.seconds:.2f}", detail)
    return table


def main(
    corpus_dir: Optional[Path] = typer.Argument(
        None, help="Folder with MANIFEST.tsv (default: $EXTRACTION_ASSETS_CORPUS or "
                   "../shared/corpus)."),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", min=0.001,
                                  help="Time limit per file, seconds."),
    jobs: Optional[int] = typer.Option(None, "--jobs", min=1,
                                       help="Child processes at once (default: CPU count)."),
    until: Stage = typer.Option(Stage.rendered_chunks, "--until",
                                help="Last stage to run (default: every stage but the "
                                     "embeddings)."),
    json_out: Optional[Path] = typer.Option(None, "--json",
                                            help="Also write the results as JSON here."),
) -> None:
    """Sweep every file of a corpus manifest through the asset graph (embeddings excepted)."""
    corpus = corpus_dir or shared_dir("corpus")
    console = Console()
    try:
        files = manifest_files(corpus)
    except (FileNotFoundError, KeyError) as exc:
        console.print(f"[red]no usable manifest in {corpus}: {exc}")
        raise typer.Exit(code=2)
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task("sweeping", total=len(files))

        def advance(result: SweepResult) -> None:
            progress.update(task, advance=1, description=result.file)

        results = sweep(files, corpus, timeout, jobs, until.value, on_result=advance)
    console.print(_table(results))
    counts = summary(results)
    console.print("  ".join(f"{outcome}: {n}" for outcome, n in counts.items()))
    if json_out:
        json_out.write_text(json.dumps({"corpus": str(corpus), "timeout": timeout,
                                        "summary": counts,
                                        "results": [asdict(r) for r in results]},
                                       indent=1, ensure_ascii=False), encoding="utf-8")
    faults = [r for r in results if r.fault]
    if faults:
        console.print(f"[red]{len(faults)} files ended in an untyped error, a timeout or a crash")
        raise typer.Exit(code=1)


if __name__ == "__main__":
    # the module's own functions, not __main__'s, go to the child processes
    from tools.sweep import main as sweep_main

    typer.run(sweep_main)
