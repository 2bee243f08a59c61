"""The ``extraction-assets`` command line: ingest, search, demo and ui; colours and review
(:mod:`.trust_cli`)."""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import tempfile
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from extraction_assets.app.trust_cli import colours_app, review_app
from extraction_assets.core.render.escape import printable
from extraction_assets.core.render.units import PLACE_SEPARATOR
from extraction_assets.search.vectors import MODES
from extraction_assets.store.storage import (
    ENV_HOME,
    INSTANCE_YAML,
    DataDirError,
    DataStore,
    default_data_dir,
    writing,
)

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Turn spreadsheets into tables, records, chunks and embeddings "
                       "(a Dagster asset graph).")
app.add_typer(colours_app, name="colours")
app.add_typer(review_app, name="review")
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

#: Modules a command imports before it materializes partitions (see :func:`import_for_runs`):
#: Dagster, the asset graph with the stages, and pandas, which pyarrow imports in a run's first
#: ``Table.from_pylist`` (~0.3 s).
RUN_MODULES = ["dagster", "extraction_assets.app.ingest", "pandas"]


def import_for_runs() -> None:
    """Import :data:`RUN_MODULES` with the garbage collector paused, then move every object
    the process has made so far into the collector's permanent generation (:func:`gc.freeze`)
    and resume collecting.

    Dagster's modules make ~110,000 tracked objects, which every full collection would
    otherwise traverse: during the imports, and again several times per Dagster run. Frozen,
    they are never traversed (``ingest`` of 8 files of 50,000 cells: 10.5 s instead of
    11.2 s, medians of 9 runs alternating with and without). Frozen objects are never freed,
    so this is for what lives as long as the process: call it before the first run.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        for name in RUN_MODULES:
            importlib.import_module(name)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def shown(text) -> str:
    """:func:`printable` text escaped for rich markup, so that a name like ``[/b]`` in a path,
    a sheet or a message prints as it is instead of raising ``MarkupError``."""
    return escape(printable(str(text)))


DataDir = typer.Option(None, "--data-dir", help=f"Data folder (default: ${ENV_HOME} or ./data).")
Provider = typer.Option("local", "--provider", help="Embedder: 'local' (bundled model) or 'openai'.")
Model = typer.Option(None, "--model", help="Embedding model name (openai provider).")
BaseUrl = typer.Option(None, "--base-url", help="OpenAI-compatible server URL (openai provider).")


class AssetName(str, Enum):
    """The six assets, in graph order (choices of ``--until``)."""

    workbook = "workbook"
    parsed_sheets = "parsed_sheets"
    normalized_grids = "normalized_grids"
    segmented_blocks = "segmented_blocks"
    rendered_chunks = "rendered_chunks"
    chunk_embeddings = "chunk_embeddings"


def _data_dir(value: Optional[Path]) -> Path:
    root = value.expanduser().resolve() if value else default_data_dir()
    if root.exists() and not root.is_dir():
        err_console.print(f"--data-dir {shown(root)} is a file, not a folder")
        raise typer.Exit(code=2)
    return root


def _writable(root: Path) -> Path:
    """``root``, made and checked writable (a file can be created in it): a data dir that is
    read-only or not permitted is one line on stderr and exit code 1, before anything runs.

    Raises:
        typer.Exit: the data dir cannot be written.
    """
    try:
        with writing(root):
            root.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=root):
                pass
    except DataDirError as exc:
        err_console.print(shown(exc), highlight=False)
        raise typer.Exit(code=1) from None
    return root


def _stopped(exc: Exception) -> None:
    """Say in one line why a command stopped (the data dir's disk full, its instance's
    database unwritable...) and exit with code 1; a ``trust.toml`` that cannot be used is a
    usage error (code 2).

    Raises:
        typer.Exit: always.
    """
    from extraction_assets.app.ingest import error_line
    from extraction_assets.defs.trust_resources import TrustConfigError

    if isinstance(exc, TrustConfigError):
        err_console.print(shown(str(exc)), highlight=False)
        raise typer.Exit(code=2)
    message = str(exc) if isinstance(exc, DataDirError) else error_line(exc)
    err_console.print(f"stopped: {shown(message)}", highlight=False)
    raise typer.Exit(code=1)


def _embedder(provider: str, model: Optional[str], base_url: Optional[str]):
    """The embedder resource of ``--provider``, ``--model`` and ``--base-url``; values its
    fields refuse (e.g. a provider other than ``local`` or ``openai``), and a ``--model`` or
    ``--base-url`` the local provider does not take, are a usage error (exit code 2) in one
    line, not a traceback or a failure of every file; so is ``openai`` without its API key.
    """
    from pydantic import ValidationError

    from extraction_assets.defs.resources import EmbedderResource

    try:
        resource = EmbedderResource(provider=provider, model=model, base_url=base_url)
    except ValidationError as exc:
        _refused(exc)
    # built at once (no request is sent): checks model, URL and the API key up front
    _built(resource.get_embedder, provider)
    return resource


def _query_embedder(provider: str, model: str | None, base_url: str | None):
    """The embedder of ``--provider``, ``--model`` and ``--base-url`` that ``search`` embeds
    its queries with: the same checks and usage errors as :func:`_embedder`, without the
    Dagster resource (importing Dagster would add ~0.5 s to every search).
    :func:`~extraction_assets.search.embedding.make_embedder`'s defaults are the resource's."""
    from pydantic import TypeAdapter, ValidationError

    from extraction_assets.search.embedding import Provider, make_embedder

    try:
        TypeAdapter(Provider).validate_python(provider)
    except ValidationError as exc:
        _refused(exc, "provider")
    return _built(lambda: make_embedder(provider, model, base_url=base_url), provider)


def _refused(exc, option: str | None = None) -> None:
    """Print the errors of a pydantic ``ValidationError`` of the embedder's options, one line
    each naming its option (the field of the error, else ``option``), and exit with code 2.

    Raises:
        typer.Exit: always.
    """
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else option
        prefix = f"--{name.replace('_', '-')}: " if name else ""
        err_console.print(f"{prefix}{error['msg']}", highlight=False, markup=False)
    raise typer.Exit(code=2) from None


def _built(build, provider: str):
    """The embedder ``build()`` returns; a configuration it refuses (a ``ValueError``, or an
    ``EmbeddingError`` such as a missing API key) is a usage error in one line.

    Raises:
        typer.Exit: code 2 when ``build()`` refused the configuration.
    """
    from extraction_assets.search.embedding import EmbeddingError

    try:
        return build()
    except (ValueError, EmbeddingError) as exc:
        hint = " (--provider openai takes --model and --base-url)" if provider == "local" else ""
        err_console.print(f"{exc}{hint}", highlight=False, markup=False)
        raise typer.Exit(code=2) from None


def _print_result(result, earlier_version: bool = False) -> None:
    """One line per file or partition: status, path, counts or the error. ``earlier_version``:
    not the latest content of its path (``refresh``; ``ingest --force`` would not redo it)."""
    path = shown(result.path) + (" (an earlier version)" if earlier_version else "")
    error = shown(result.error or "")
    c = result.counts
    counts = (f"sheets={c.get('sheets', 0)} tables={c.get('tables', 0)} "
              f"records={c.get('records', 0)} chunks={c.get('chunks', 0)}")
    if c.get("errors"):  # read, but not all of it: the issues say what is missing
        counts += (f"  [red]errors={c['errors']}[/] (read in part: the extraction_issues view "
                   "says what, its rows of severity 'error')")
    if c.get("over_budget"):  # a heading path or one cell longer than --max-tokens
        counts += (f"  [yellow]over_budget={c['over_budget']}[/] (chunks over the token budget: a "
                   "heading or cell past --max-tokens; extraction_issues 'chunk_over_budget')")
    computed, kept = c.get("formulas_computed", 0), c.get("formulas_not_computed", 0)
    if computed or kept:  # formulas stored without a cached value
        counts += f"  formulas computed={computed}" + (
            f" [yellow]not computed={kept}[/] (kept as text: extraction_issues)" if kept else "")
    if c.get("ocr_unread"):  # pictures or scans OCR could not read (or is not set up for)
        counts += f"  [yellow]ocr_unread={c['ocr_unread']}[/] (extraction_issues 'ocr_*')"
    if c.get("damaged"):  # files that did not read when counted: quarantined
        counts += (f"  [red]damaged={c['damaged']}[/] (files moved to the quarantine; "
                   "`extraction-assets repair` rebuilds them)")
    if result.status == "failed":
        line = f"[red]failed[/]    {path}  {error}"
    elif result.status == "damaged":
        line = f"[red]damaged[/]   {path}  {error}"
    elif result.status == "duplicate":
        line = f"[yellow]duplicate[/] {path}  {error}"
    elif result.status == "interrupted":
        line = f"[yellow]interrupted[/] {path}  {error}"
    elif result.status == "unreadable":
        line = f"[yellow]unreadable[/] {path}  {error} (not retried)"
    elif result.status == "unchanged":
        line = (f"[cyan]unchanged[/] {path}  {counts}  "
                f"partition={result.workbook_hash[:12]} (up to date"
                + ("" if earlier_version else "; ingest --force redoes it") + ")")
    else:
        line = f"[green]success[/]   {path}  {counts}  partition={result.workbook_hash[:12]}"
    console.print(line, highlight=False)


def _run_ingest(paths: list[Path], data_dir: Path, embedder, until: Optional[str],
                max_tokens: Optional[int], force: bool = False,
                passwords: Optional[list[str]] = None, jobs: int = 1,
                celery_broker: Optional[str] = None,
                batch_files: Optional[int] = None) -> int:
    """Ingest with a progress bar and one line per file; returns the number of failures.

    Raises:
        typer.Exit: code 130 after an interrupt (Ctrl-C), with one line saying how many files
            were not finished.
    """
    from extraction_assets.app.ingest import NOT_STARTED, ingest_paths

    failed = 0
    settled = 0  # files with an outcome other than interrupted
    with Progress(TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as progress:
        task = progress.add_task("ingest", total=len(paths))

        def report(result) -> None:
            nonlocal failed, settled
            failed += result.status in ("failed", "damaged")
            settled += result.status != "interrupted"
            if result.error != NOT_STARTED:
                _print_result(result)
            progress.advance(task)

        try:
            ingest_paths(paths, data_dir, embedder, max_tokens=max_tokens, until=until,
                         on_result=report, force=force, passwords=passwords, jobs=jobs,
                         celery_broker=celery_broker, batch_files=batch_files,
                         on_stopping=lambda: err_console.print(
                             "stopping: the runs in progress end their current step; no "
                             "further file is started", highlight=False))
        except KeyboardInterrupt:  # outside the runs (e.g. while the files are hashed)
            pass
        except Exception as exc:  # noqa: BLE001 - outside any file: one line, not a traceback
            _stopped(exc)
    if settled < len(paths):
        _exit_interrupted(len(paths) - settled, len(paths))
    return failed


def _exit_interrupted(unfinished: int, files: int) -> None:
    """Say how many files an interrupt left unfinished and exit with code 130.

    Raises:
        typer.Exit: always.
    """
    err_console.print(f"interrupted: {unfinished} of {files} files not finished; run the same "
                      "command again to finish them", highlight=False)
    raise typer.Exit(code=130)


@app.command()
def ingest(
    # readable=False: an unreadable file is a failed file of the batch, not a usage error
    paths: list[Path] = typer.Argument(..., readable=False, help="Workbook files to ingest."),
    data_dir: Optional[Path] = DataDir,
    until: Optional[AssetName] = typer.Option(
        None, "--until", help="Last asset to materialize, e.g. rendered_chunks (skips the embeddings)."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=32,
                                             help="Chunk budget in tokens (default 512)."),
    force: bool = typer.Option(False, "--force",
                               help="Re-materialize partitions that are already up to date."),
    password: Optional[list[str]] = typer.Option(
        None, "--password", help="Password for protected workbooks (repeatable; default: the "
                                 "lines of $EXTRACTION_ASSETS_PASSWORDS)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1,
                             help="Dagster runs at once, each a batch of files whose steps "
                                  "run in processes of their own (e.g. the CPU count for many "
                                  "files; memory grows with it)."),
    celery_broker: Optional[str] = typer.Option(
        None, "--celery-broker", envvar="EXTRACTION_ASSETS_CELERY_BROKER",
        help="Run the steps on Celery workers of this broker (e.g. redis://host:6379/0) "
             "instead of this machine; --jobs runs at a time."),
    batch_files: Optional[int] = typer.Option(
        None, "--batch-files", min=1,
        help="Most files in one Dagster run (default 250; fewer: progress shows and finished "
             "work is kept sooner after Ctrl-C; more: less cost per run)."),
    provider: str = Provider, model: Optional[str] = Model, base_url: Optional[str] = BaseUrl,
) -> None:
    """Add a partition per file content hash and materialize the asset graph for each file.

    Exit code 1 when any file failed (the others are still processed); 130 after Ctrl-C,
    which stops the runs in progress and starts no further file.
    """
    try:
        import_for_runs()
    except KeyboardInterrupt:  # Ctrl-C before any file was looked at
        _exit_interrupted(len(paths), len(paths))
    failed = _run_ingest(paths, _writable(_data_dir(data_dir)),
                         _embedder(provider, model, base_url),
                         until.value if until else None, max_tokens, force, password or None,
                         jobs, celery_broker, batch_files)
    if failed:
        raise typer.Exit(code=1)


@app.command(short_help="Re-materialize only what is stale (a bumped code version, an "
                        "ingest stopped early with --until).")
def refresh(
    data_dir: Optional[Path] = DataDir,
    provider: str = Provider, model: Optional[str] = Model, base_url: Optional[str] = BaseUrl,
) -> None:
    """Re-materialize only what is stale in every partition (a bumped code version, or an
    ingest stopped early with --until). Files that could not be read at all are listed as
    unreadable and not retried; partitions with damaged files are listed as damaged (see
    `repair`). LanceDB units that are missing or damaged are written again. Exit code 1 when
    a partition failed or is damaged; 130 after Ctrl-C, which stops the run in progress and
    the refresh."""
    root = _writable(_data_dir(data_dir))
    failed = 0

    def report(result) -> None:
        nonlocal failed
        failed += result.status in ("failed", "damaged")
        _print_result(result, result.workbook_hash in superseded)

    try:
        embedder = _embedder(provider, model, base_url)  # imports Dagster (~1.5 s)
        import_for_runs()
        from extraction_assets.app.ingest import refresh_stale

        superseded = DataStore(root).superseded_hashes()
        results = refresh_stale(root, embedder, on_result=report)
        interrupted = any(r.status == "interrupted" for r in results)
    except KeyboardInterrupt:  # between runs (e.g. while importing or looking up stale assets)
        interrupted = True
    except Exception as exc:  # noqa: BLE001 - outside any partition: one line, not a traceback
        _stopped(exc)
    if interrupted:
        err_console.print("interrupted: run refresh again to finish", highlight=False)
        raise typer.Exit(code=130)
    if failed:
        raise typer.Exit(code=1)


#: How ``search`` ranks the retrieval units (choices of ``--mode``).
SearchMode = Enum("SearchMode", {mode: mode for mode in MODES}, type=str)


@app.command(short_help="Top chunks for a query, with file, sheet, A1 ranges, heading path "
                        "and the row that matched.")
def search(
    query: Optional[str] = typer.Argument(None, help="What to look for."),
    data_dir: Optional[Path] = DataDir,
    k: int = typer.Option(5, "-k", min=1, help="Number of units to return."),
    mode: SearchMode = typer.Option(
        MODES[0], "--mode",
        help="hybrid: words and vectors fused; vector: embeddings only; text: full text only."),
    queries: Optional[Path] = typer.Option(
        None, "--queries", help="Answer every line of this file (one query a line) in one "
                                "process, instead of QUERY."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    all_versions: bool = typer.Option(
        False, "--all-versions",
        help="Also search earlier versions of a file (same path, other content)."),
    provider: str = Provider, model: Optional[str] = Model, base_url: Optional[str] = BaseUrl,
) -> None:
    """Top chunks for a query, ranked by their own text and their table rows', with file,
    sheet, A1 ranges, heading path and the row that matched. Only the latest version of each
    file path is searched unless --all-versions is given. With --queries FILE, each line is a
    query (--json then prints one JSON object a line: the query and its results)."""
    from extraction_assets.search.embedding import EmbeddingError
    from extraction_assets.search.retrieval import Searcher
    from extraction_assets.search.vectors import DamagedIndexError

    if (query is None) == (queries is None):
        err_console.print("give a QUERY or --queries FILE (not both)")
        raise typer.Exit(code=2)
    if query is not None and not query.strip():
        err_console.print("QUERY is empty: say what to look for")
        raise typer.Exit(code=2)
    try:
        asked = [query] if queries is None else [
            line.strip() for line in queries.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        err_console.print(f"cannot read --queries {queries}: {exc}", highlight=False)
        raise typer.Exit(code=2) from None
    store = DataStore(_data_dir(data_dir))
    if not store.root.is_dir():
        err_console.print(f"no data dir at {shown(store.root)}: ingest some files first (or pass "
                          "--data-dir)")
        raise typer.Exit(code=1)
    if _index_lost(store):
        err_console.print(f"the vector index of {shown(store.root)} is missing or damaged, but "
                          "files were embedded: run `extraction-assets repair` to rebuild it")
        raise typer.Exit(code=1)
    if not store.lancedb_uri.is_dir():
        err_console.print(f"no vectors in {shown(store.root)}: ingest some files first, or embed "
                          "those ingested with --until by `refresh` (or pass --data-dir)")
        raise typer.Exit(code=1)
    embedder = None if mode.value == "text" else _query_embedder(provider, model, base_url)
    try:  # the embedder is asked per query (a server may fail it)
        searcher = Searcher(store.root, embedder, all_versions=all_versions)
        if mode.value != "vector" and (unindexed := searcher.vectors.unindexed_rows()):
            err_console.print(
                f"note: {unindexed} units are not in the full-text index yet (an ingest running "
                "or stopped early): their text scores are on another scale until "
                "`extraction-assets refresh` folds them in", highlight=False)
        for text in asked:
            _print_answer(text, searcher.search(text, k, mode.value), as_json,
                          queries is not None, searcher)
    except EmbeddingError as exc:
        err_console.print(f"cannot embed the query: {shown(exc)}")
        raise typer.Exit(code=1) from None
    except DamagedIndexError as exc:
        err_console.print(shown(exc), highlight=False)
        raise typer.Exit(code=1) from None


def _index_lost(store: DataStore) -> bool:
    """Whether the LanceDB table of retrieval units is gone while partitions were embedded
    (``chunk_embeddings`` wrote their ``extraction_issues`` file): not a data dir to ingest
    into first, but one to ``repair``."""
    from extraction_assets.search.vectors import TABLE_NAME

    embedded = store.parquet_dir / "extraction_issues" / "chunk_embeddings"
    return (not (store.lancedb_uri / f"{TABLE_NAME}.lance").is_dir()
            and embedded.is_dir() and any(embedded.glob("*.parquet")))


def _print_answer(text: str, results: list[dict], as_json: bool, many: bool,
                  searcher) -> None:
    """One query's results: JSON (a list; with ``many``, one line holding the query and its
    results) or hits as text (with ``many``, under a ``query:`` line).

    Raises:
        typer.Exit: code 1 when a single query found nothing.
    """
    if as_json:
        typer.echo(json.dumps({"query": text, "results": results}, ensure_ascii=False) if many
                   else json.dumps(results, ensure_ascii=False, indent=2))
        return
    if not results and not many:
        err_console.print(f"no units in {shown(searcher.vectors.uri)}: ingest some files first, "
                          "or `refresh` to index those ingested before"
                          if searcher.vectors.count() == 0 else "nothing found")
        raise typer.Exit(code=1)
    if many:
        console.print(f"[bold]query:[/] {shown(text)}" + ("" if results else "  (nothing found)"),
                      highlight=False)
    _print_hits(results)


def _print_hits(results: list[dict]) -> None:
    """The hits of one query: rank, score, file, sheet, ranges and heading path, the row that
    answers (when the chunk holds table rows) and the cell the query names, then the first six
    non-empty lines of the chunk."""
    for rank, r in enumerate(results, start=1):
        console.print(
            f"[bold]{rank}.[/] {r['score']:.3f}  [cyan]{shown(r['filename'])}[/] "
            f"sheet [cyan]{shown(r['sheet'])}[/] range {shown(', '.join(r['a1_ranges']))}\n"
            # a title's line breaks would start a line of their own under the hit
            f"   heading: {shown(' > '.join(' '.join(h.split()) for h in r['heading_path']))}",
            highlight=False,
            soft_wrap=True)
        if r["record"]:
            console.print(f"   row {r['record']['a1_range']}: "
                          + printable(r['record']['text'].split(PLACE_SEPARATOR, 1)[-1]),
                          highlight=False, soft_wrap=True, markup=False)
        if r.get("cell"):
            cell = r["cell"]
            console.print(f"   cell {cell['ref'] or '?'} ({printable(cell['header'])}): "
                          + printable(cell["value"]), highlight=False, soft_wrap=True,
                          markup=False)
        lines = [line for line in r["text"].splitlines() if line.strip()][:6]
        console.print("\n".join("   " + printable(line) for line in lines), highlight=False,
                      soft_wrap=True, markup=False)


@app.command()
def demo(data_dir: Optional[Path] = DataDir) -> None:
    """Write the bundled sample workbooks and ingest them with the local embedder."""
    import_for_runs()
    from extraction_assets.app.samples import write_samples

    root = _writable(_data_dir(data_dir))
    paths = write_samples(root / "samples")
    DataStore(root).inbox.mkdir(parents=True, exist_ok=True)
    console.print(f"wrote {len(paths)} sample workbooks to {shown(root / 'samples')}")
    failed = _run_ingest(paths, root, _embedder("local", None, None), None, None)
    command = sys.argv[0] if sys.argv[0].endswith("extraction-assets") else "extraction-assets"
    console.print(
        f"\nDuckDB views: {shown(DataStore(root).warehouse_path)}\n"
        f"try: {shown(command)} search 'revenue of top products'"
        + (f" --data-dir {shown(root)}" if data_dir else ""), highlight=False, soft_wrap=True,
    )
    if failed:
        raise typer.Exit(code=1)


@app.command()
def ui(data_dir: Optional[Path] = DataDir,
       port: int = typer.Option(3000, "--port", help="Port of the Dagster UI.")) -> None:
    """Start the Dagster UI (dagster dev) on this data dir's instance."""
    root = _data_dir(data_dir)
    store = DataStore(root)
    store.dagster_home.mkdir(parents=True, exist_ok=True)
    store.inbox.mkdir(parents=True, exist_ok=True)
    config = store.dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    env = dict(os.environ, DAGSTER_HOME=str(store.dagster_home), **{ENV_HOME: str(root)})
    os.chdir(store.dagster_home)
    os.execve(sys.executable, [sys.executable, "-m", "dagster", "dev", "-m",
                               "extraction_assets.defs.definitions", "-p", str(port)], env)


@app.command(short_help="Check every partition's files, LanceDB units and stored bytes "
                        "against what was materialized.")
def verify(data_dir: Optional[Path] = DataDir) -> None:
    """Check the data dir: every Parquet file reads in full with the contract's schema and
    holds the rows its materialization recorded, LanceDB holds each partition's chunk and
    record units, each stored file's bytes hash to its partition key. Prints one line per
    damage (partition, file, kind, detail) and exits 1, or a summary line and exits 0.
    Writes nothing: `repair` rebuilds what it names."""
    from extraction_assets.app.verify import Tally
    from extraction_assets.app.verify import verify as check

    root = _data_dir(data_dir)
    if not root.is_dir():
        err_console.print(f"no data dir at {shown(root)} (pass --data-dir)")
        raise typer.Exit(code=1)
    tally, damaged = Tally(), 0
    try:
        for damage in check(root, tally):
            damaged += 1
            console.print(f"[red]damaged[/] {damage.workbook_hash[:12] or '-':12}  "
                          f"{shown(damage.name)}  {damage.kind}: {shown(damage.detail)}",
                          highlight=False)
    except Exception as exc:  # noqa: BLE001 - outside any partition: one line, not a traceback
        _stopped(exc)
    if damaged:
        err_console.print(f"{damaged} damaged: `extraction-assets repair` rebuilds what can be "
                          "rebuilt", highlight=False)
        raise typer.Exit(code=1)
    console.print(f"ok: {tally.partitions} partitions, {tally.files} files, {tally.units} "
                  "LanceDB units checked; nothing damaged", highlight=False)


@app.command(short_help="Rebuild the damaged partitions that `verify` names, from their "
                        "stored bytes.")
def repair(
    data_dir: Optional[Path] = DataDir,
    provider: str = Provider, model: Optional[str] = Model, base_url: Optional[str] = BaseUrl,
) -> None:
    """Move damaged files to <data-dir>/quarantine and re-materialize, per damaged
    partition, the first damaged asset and everything downstream of it from the partition's
    stored bytes (copied again from its source path when they are damaged and the path
    still holds them); a LanceDB table that does not read is rebuilt. One line per damaged
    partition. Exit code 1 when a partition is unrecoverable or its rebuild failed."""
    if not _data_dir(data_dir).is_dir():  # a mistyped path: no new data dir
        err_console.print(f"no data dir at {shown(_data_dir(data_dir))} (pass --data-dir)")
        raise typer.Exit(code=1)
    root = _writable(_data_dir(data_dir))
    bad = 0

    def report(result) -> None:
        nonlocal bad
        bad += result.status != "repaired"
        colour = "green" if result.status == "repaired" else "red"
        what = ", ".join(sorted({f"{d.name} ({d.kind})" for d in result.damage}))
        redone = f"  re-materialized {', '.join(result.assets)}" if result.assets else ""
        console.print(f"[{colour}]{result.status}[/] {shown(result.path)}  {shown(what)}"
                      f"{redone}" + (f"  {shown(result.detail)}" if result.detail else ""),
                      highlight=False)

    try:
        embedder = _embedder(provider, model, base_url)
        import_for_runs()
        from extraction_assets.app.verify import repair as rebuild

        results = rebuild(root, embedder, on_result=report)
    except Exception as exc:  # noqa: BLE001 - outside any partition: one line, not a traceback
        _stopped(exc)
    if not results:
        console.print("nothing damaged", highlight=False)
    if bad:
        raise typer.Exit(code=1)


def main() -> None:
    """Entry point of the ``extraction-assets`` command.

    On the way out it moves every object to the garbage collector's permanent generation
    (:func:`gc.freeze`): the interpreter then skips the collections it would run over Dagster's
    modules at exit (~1 s after an ingest). Exit handlers and stream flushes still run.
    """
    try:
        app()
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
