"""Ingest files: register each file's content hash as a partition and materialize the asset graph
for it through Dagster, on the instance under ``<data-dir>/dagster``.

Files are materialized in batches: one Dagster run per batch of partitions (a range of partition
keys, which every asset step materializes partition by partition; see
:func:`~extraction_assets.defs.assets.common.materialize_partitions`), so that a folder of small
files does not pay a run's fixed cost per file. ``jobs`` runs at a time: one run in this process
(Dagster's in-process executor), or several, each step in a process of Dagster's multiprocess
executor, or on Celery workers (``dagster-celery``). One file's failure never stops the others.
Each file's result line takes its counts from the materializations' metadata in Dagster's event
log (:class:`~extraction_assets.defs.lineage.Lineage`), read with the lineage after each run.

Used by the ``extraction-assets`` CLI and by tests.
"""

from __future__ import annotations

import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dagster import (
    AssetRecordsFilter,
    AssetSelection,
    DagsterInstance,
    materialize,
)
from filelock import FileLock

from extraction_assets.core.ocr import ocr_setup
from extraction_assets.defs.assets import ALL_ASSETS, chunk_embeddings
from extraction_assets.defs.catalog import CatalogFile, record_files
from extraction_assets.defs.definitions import make_definitions
from extraction_assets.defs.lineage import export_lineage, latest_counts
from extraction_assets.defs.partitions import (
    PARTITION_TAG,
    RANGE_TAGS,
    add_partition_keys,
    files_per_run,
    partition_positions,
    workbook_partitions,
)
from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.defs.sensors import FILENAME_TAG, file_tags
from extraction_assets.store.integrity import (
    outputs_gone,
    quarantine_damaged,
    quarantined,
    summarize,
)
from extraction_assets.store.storage import (
    INSTANCE_YAML,
    DataDirError,
    DataStore,
)

QUIET_LOGGERS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

#: ``error`` of an ``interrupted`` result whose run was stopped, and of one never started
INTERRUPTED_RUN = ("stopped by an interrupt; the same command run again redoes what it did not "
                   "write")
NOT_STARTED = "not started: interrupted"

#: A batch (one run) holds files of at most this many bytes in all, and at most
#: :data:`BATCH_FILES` files; a larger file runs alone, so that its run names it.
BATCH_BYTES = 8 * 1024 * 1024
BATCH_FILES = 250

#: Run tag counting the files of a run of several.
FILES_TAG = "extraction_assets/files"


def open_instance(store: DataStore) -> DagsterInstance:
    """The Dagster instance of a data dir, as ``<data-dir>/dagster/dagster.yaml`` configures it:
    SQLite storage under that folder by default (the file is written with telemetry off when
    missing), Postgres or a run queue when the file says so. A file lock serializes the creation
    of a new instance's schema across processes."""
    home = store.dagster_home.absolute()
    home.mkdir(parents=True, exist_ok=True)
    # several processes opening a new instance at once race to create its SQLite schema
    with FileLock(str(home / ".instance.lock"), timeout=600):
        config = home / "dagster.yaml"
        if not config.exists():
            config.write_text(INSTANCE_YAML)
        return DagsterInstance.from_config(str(home))


@dataclass
class IngestResult:
    """Outcome of one file. ``status``: ``success``; ``failed``; ``duplicate`` (same bytes as an
    earlier file of the same call, named in ``error``); ``unchanged`` (every selected asset is
    already materialized for this content with the current code versions); ``unreadable``
    (``refresh`` only: the file failed with a typed input error before); ``interrupted`` (an
    interrupt, Ctrl-C or SIGTERM, stopped its run, whose ``run_id`` is set, or came before it
    started); ``damaged`` (files of the partition do not read: moved to the quarantine, named
    in ``error``; ``extraction-assets repair`` rebuilds them). Counts are the rows of the
    partition's tables. ``run_id`` is the run that materialized the file (shared by the files
    of one batch)."""

    path: str
    workbook_hash: str
    status: str
    run_id: str | None = None
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def _no_counts(workbook_hash: str) -> dict[str, int]:
    """No counts: the event log was not read."""
    return {}


def _error_chain(error) -> Iterator:
    """A Dagster ``SerializableErrorInfo`` and its causes, outermost first (none for ``None``)."""
    while error is not None:
        yield error
        error = error.cause


def _interrupted(result) -> bool:
    """Whether a failed run was stopped by an interrupt: a step or the run itself (e.g. while
    its resources were set up) failed with Dagster's ``DagsterExecutionInterruptedError``,
    which its executors raise on SIGINT or SIGTERM (or with a ``KeyboardInterrupt``)."""
    for event in result.all_events:
        error = (event.step_failure_data.error if event.is_step_failure
                 else event.job_failure_data.error if event.is_job_failure else None)
        if any(e.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt")
               for e in _error_chain(error)):
            return True
    return False


def _failure(result) -> tuple[str, str | None]:
    """One line naming the failed asset and the root cause of its failure, and the partition
    the failure names (metadata ``partition`` of the step's :class:`dagster.Failure`; ``None``
    when the run failed outside any partition)."""
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            user = data.user_failure_data
            partition = user.metadata.get("partition") if user else None
            partition = partition.value if partition is not None else None
            if user and user.description:
                return f"{event.step_key}: {user.description}", partition
            chain = list(_error_chain(data.error))
            if chain:
                root = chain[-1]
                lines = [line for line in root.message.strip().splitlines() if line.strip()]
                return (f"{event.step_key}: {' '.join(lines[-2:]) if lines else root.cls_name}",
                        partition)
    return "run failed", None


def stale_assets(instance: DagsterInstance, workbook_hash: str, assets=ALL_ASSETS,
                 store: DataStore | None = None) -> list:
    """The assets (in graph order) to re-materialize for a partition: from the first one whose
    latest materialization is missing, carries another code version than the current one, is
    older than its upstream asset's (e.g. chunks re-made with ``--until``), read pictures or
    scans with another OCR setup (:func:`ocr_outdated`), or (given the ``store``) whose Parquet
    files were deleted, through everything downstream of it. Empty when the partition is up to
    date."""
    upstream_time = 0.0
    for position, asset in enumerate(assets):
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=[workbook_hash]), limit=1
        ).records
        version = (records[0].asset_materialization.tags or {}).get("dagster/code_version") \
            if records else None
        metadata = records[0].asset_materialization.metadata if records else {}
        if (version != asset.code_versions_by_key[asset.key]
                or records[0].timestamp < upstream_time
                or (store is not None and outputs_gone(store, workbook_hash, metadata))
                or ocr_outdated(metadata)):
            return list(assets[position:])
        upstream_time = records[0].timestamp
    return []


def ocr_outdated(metadata: dict) -> bool:
    """Whether a materialization read pictures or scanned pages with another OCR setup than
    the one configured now (its ``ocr`` metadata, :attr:`~extraction_assets.core.ocr.OcrSetup
    .label`: Tesseract installed since, its languages or timeout changed)."""
    if "ocr" not in metadata:
        return False
    recorded = getattr(metadata["ocr"], "value", metadata["ocr"])
    return recorded != ocr_setup().label


def error_line(exc: BaseException) -> str:
    """``Type: message`` of an exception on one line: its message's first line (SQLAlchemy's
    errors add one pointing to their documentation)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _unchanged(instance: DagsterInstance, store: DataStore, path: str,
               workbook_hash: str, footers_checked: bool = False) -> IngestResult:
    """The result of a partition that is up to date; its lineage rows are written first when it
    has none (a run whose lineage write failed, e.g. on a full disk). A partition with files
    in the quarantine is ``damaged`` instead (:func:`damaged_result`), also one whose file
    footers are found damaged now (they are moved there, out of the views; not read again
    when ``footers_checked``)."""
    if not footers_checked:
        quarantine_damaged(store, [workbook_hash])
    if damaged := damaged_result(store, path, workbook_hash):
        return damaged
    if not store.table_path("lineage", workbook_hash).exists():
        try:
            export_lineage(instance, store, [workbook_hash])
        except Exception as exc:  # noqa: BLE001 - still up to date; the lineage is what failed
            return IngestResult(path, workbook_hash, "failed", error="up to date, but its "
                                f"lineage was not written: {error_line(exc)}")
    return IngestResult(path, workbook_hash, "unchanged",
                        counts=latest_counts(instance, workbook_hash))


def damaged_result(store: DataStore, path: str, workbook_hash: str) -> IngestResult | None:
    """The ``damaged`` result of a partition whose files were moved to the quarantine and not
    written again since (:func:`~extraction_assets.store.integrity.quarantined`), naming
    them; ``None`` when it has none."""
    reasons = quarantined(store, workbook_hash)
    if not reasons:
        return None
    return IngestResult(path, workbook_hash, "damaged", error="; ".join(reasons)
                        + " (damaged: moved to the quarantine; `extraction-assets repair` "
                        "rebuilds it)", counts=summarize(store, workbook_hash))


@dataclass
class _Item:
    """A file to materialize: its index in the results, path (shown), content hash, the assets
    to materialize and its size in bytes (for batching)."""

    k: int
    path: str
    workbook_hash: str
    assets: tuple
    size: int = 0


def plan_batches(items: list[_Item], order: dict[str, int], jobs: int = 1,
                 batch_bytes: int = BATCH_BYTES, batch_files: int = BATCH_FILES) -> list[list]:
    """Cut the files to materialize into batches, each one Dagster run over a range of
    partition keys: files with the same assets to materialize whose keys are consecutive in the
    partitions' order (``order``: key -> position), at most ``batch_files`` files and
    ``batch_bytes`` bytes a batch (a larger file alone), and with ``jobs`` > 1 about an equal
    share of all the bytes (a file joins a batch when at least half of it fits in the share),
    so that ``jobs`` runs side by side get work of about the same size and no short batch is
    left to run alone at the end. Returns the batches in the partitions' order."""
    limit = -(-sum(item.size for item in items) // jobs)
    batches: list[list[_Item]] = []
    groups: dict[tuple, list[_Item]] = {}
    for item in items:
        groups.setdefault(item.assets, []).append(item)
    for group in groups.values():
        group.sort(key=lambda item: order[item.workbook_hash])
        batch: list[_Item] = []
        for item in group:
            size = sum(i.size for i in batch)
            if batch and (order[item.workbook_hash] != order[batch[-1].workbook_hash] + 1
                          or len(batch) >= batch_files
                          or size + item.size > batch_bytes
                          or (jobs > 1 and size + item.size / 2 > limit)):
                batches.append(batch)
                batch = []
            batch.append(item)
        if batch:
            batches.append(batch)
    return sorted(batches, key=lambda b: order[b[0].workbook_hash])


def run_tags(batch: list, store: DataStore) -> dict[str, str]:
    """The tags of a batch's run: the partition (one file) or the range of partition keys, and
    the file's ``source_path`` and ``filename`` (several files: ``filename`` lists them, as far
    as 2,000 characters, and ``files`` counts them)."""
    first, last = batch[0].workbook_hash, batch[-1].workbook_hash
    if len(batch) == 1:
        return {PARTITION_TAG: first, **file_tags(store, first)}
    names = ", ".join(Path(item.path).name for item in batch)
    return {RANGE_TAGS[0]: first, RANGE_TAGS[1]: last, FILES_TAG: str(len(batch)),
            FILENAME_TAG: names if len(names) <= 2000 else names[:1997] + "..."}


class _Runner:
    """Runs batches one after the other in this process (Dagster's in-process executor) on one
    instance and data dir."""

    def __init__(self, instance: DagsterInstance, store: DataStore,
                 embedder: EmbedderResource | None, passwords: list[str] | None,
                 run_config: dict):
        self.instance, self.store, self.run_config = instance, store, run_config
        self.resources = make_definitions(str(store.root), embedder, passwords).resources

    def run(self, batch: list[_Item]):
        """One Dagster run of the batch's assets over its partitions; returns its result."""
        return materialize(ALL_ASSETS, selection=AssetSelection.assets(*batch[0].assets),
                           instance=self.instance, resources=self.resources,
                           run_config=self.run_config, tags=run_tags(batch, self.store),
                           raise_on_error=False)

    def outcome(self, batch: list[_Item]) -> tuple[list[IngestResult], list[_Item]]:
        """Run a batch; returns the results of its files and the files to run again: when the
        run failed on one partition (its step's failure names it), that file is ``failed`` and
        the others, whose step Dagster then recorded as failed too, go again without it."""
        result = self.run(batch)
        hashes = [item.workbook_hash for item in batch]
        try:  # the lineage read from the event log also gives the counts of the result lines
            counts = export_lineage(self.instance, self.store, hashes).counts
            unwritten = None
        except Exception as exc:  # noqa: BLE001 - the disk full, the views locked: say so, go on
            unwritten = f"its lineage was not written: {error_line(exc)}"
            counts = _no_counts
        run_id = result.run_id
        if not result.success and _interrupted(result):
            return [IngestResult(i.path, i.workbook_hash, "interrupted", run_id, INTERRUPTED_RUN)
                    for i in batch], []
        if result.success:
            return [IngestResult(i.path, i.workbook_hash, "failed" if unwritten else "success",
                                 run_id, unwritten, counts(i.workbook_hash))
                    for i in batch], []
        message, partition = _failure(result)
        error = "; ".join(e for e in (message, unwritten) if e)
        if len(batch) > 1 and partition in hashes:
            failed = batch[hashes.index(partition)]
            return [IngestResult(failed.path, partition, "failed", run_id, error,
                                 counts(partition))], \
                [i for i in batch if i is not failed]
        return [IngestResult(i.path, i.workbook_hash, "failed", run_id, error,
                             counts(i.workbook_hash)) for i in batch], []


def materialize_batches(runner: _Runner, items: list[_Item],
                        done: Callable[[int, IngestResult], None], stop: threading.Event,
                        batch_files: int = BATCH_FILES) -> None:
    """Materialize ``items`` in this process, batch after batch (:func:`plan_batches` with
    ``batch_files``); the files of a batch that failed on one partition are planned again
    (their stale assets). ``done`` gets each file's result; after ``stop`` is set (an
    interrupt) no run starts and the files left are ``interrupted`` (:data:`NOT_STARTED`)."""
    order = partition_positions(runner.instance, [item.workbook_hash for item in items])
    queue = deque(plan_batches(items, order, batch_files=batch_files))
    while queue and not stop.is_set():
        batch = queue.popleft()
        try:
            results, again = runner.outcome(batch)
        except KeyboardInterrupt:  # outside the part of a run where Dagster catches it
            stop.set()
            results, again = [IngestResult(i.path, i.workbook_hash, "interrupted",
                                           error=INTERRUPTED_RUN) for i in batch], []
        except Exception as exc:  # noqa: BLE001 - one batch's failure never stops the others
            results, again = [IngestResult(i.path, i.workbook_hash, "failed",
                                           error=error_line(exc)) for i in batch], []
        for result in results:
            done(next(i.k for i in batch if i.workbook_hash == result.workbook_hash), result)
        retry = []
        for item in again:
            assets = stale_assets(runner.instance, item.workbook_hash, list(item.assets),
                                  runner.store)
            if assets:
                retry.append(_Item(item.k, item.path, item.workbook_hash, tuple(assets),
                                   item.size))
            else:
                done(item.k, IngestResult(item.path, item.workbook_hash, "success", counts=(
                    latest_counts(runner.instance, item.workbook_hash))))
        queue.extendleft(reversed(plan_batches(retry, order, batch_files=batch_files)))
    for batch in queue:
        for item in batch:
            done(item.k, IngestResult(item.path, item.workbook_hash, "interrupted",
                                      error=NOT_STARTED))


def _run_config(max_tokens: int | None) -> dict:
    run_config: dict = dict(QUIET_LOGGERS)
    if max_tokens:
        run_config["ops"] = {"rendered_chunks": {"config": {"max_tokens": max_tokens}}}
    return run_config


def ingest_paths(
    paths: Iterable[str | Path],
    data_dir: str | Path,
    embedder: EmbedderResource | None = None,
    max_tokens: int | None = None,
    until: str | None = None,
    on_result: Callable[[IngestResult], None] | None = None,
    force: bool = False,
    passwords: list[str] | None = None,
    jobs: int = 1,
    celery_broker: str | None = None,
    batch_files: int | None = None,
    on_stopping: Callable[[], None] | None = None,
) -> list[IngestResult]:
    """Materialize the asset graph for every file in ``paths``, one partition per content hash.

    Every file is hashed first; the hashes that are not partitions yet are added in batches
    (:func:`~extraction_assets.defs.partitions.add_partition_keys`). Files with the same bytes are
    processed once. A partition whose selected assets are all materialized with the current
    code versions is left alone unless ``force``; of a partition known before, only the stale
    assets and those after them are materialized (:func:`stale_assets`). ``passwords`` are
    tried on password-protected files (default: ``$EXTRACTION_ASSETS_PASSWORDS``). ``until``
    names the last asset to materialize (default: all six).

    The files are materialized in batches, one Dagster run each, of at most ``batch_files``
    files (default :data:`BATCH_FILES`; :func:`plan_batches`): fewer files a run report progress
    and keep finished work after an interrupt sooner, more pay Dagster's cost per run less
    often. ``jobs`` = 1 runs them one after the other in this process; ``jobs`` > 1 runs that
    many at a time, each step in a process of Dagster's multiprocess executor (or on the Celery
    workers of ``celery_broker``, e.g. ``redis://host:6379/0``), every run on the same instance
    and data dir (their writes meet on the file locks of the DuckDB views and the LanceDB
    table). ``on_result`` is called after each file (for progress output; in completion order:
    the files of a batch when its run ends). A missing or unreadable file, or a folder, is a
    ``failed`` result. An interrupt (Ctrl-C, SIGTERM) stops the runs in progress and starts
    no further run: those files are ``interrupted`` results, and a later ingest of the same
    files redoes only them; with ``jobs`` > 1, ``on_stopping`` is called when the runs got the
    interrupt (their steps in progress then end). At the end, every file with a content hash
    but an ``interrupted`` one goes into the ``files`` catalog of the UI (its name, hash, status
    and run; one event per file, none for an ``unchanged`` one the catalog holds: see
    :func:`~extraction_assets.defs.catalog.record_files`). Returns one result per file, in the
    order given.

    Raises:
        ValueError: ``until`` is not one of the six asset names, or ``jobs`` or
            ``batch_files`` < 1.
    """
    names = [a.key.path[-1] for a in ALL_ASSETS]
    if until is not None and until not in names:
        raise ValueError(f"unknown asset {until!r}; choose one of {', '.join(names)}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if batch_files is not None and batch_files < 1:
        raise ValueError(f"batch_files must be >= 1, got {batch_files}")
    paths = [Path(p) for p in paths]
    store = DataStore(data_dir)
    selected = tuple(ALL_ASSETS[: names.index(until) + 1] if until else ALL_ASSETS)
    results: dict[int, IngestResult] = {}
    seen: dict[str, str] = {}
    reporting = threading.Lock()
    stop = threading.Event()  # set by an interrupt: no further run is started

    def done(k: int, result: IngestResult) -> None:
        if result.status == "interrupted":
            stop.set()
        with reporting:
            results[k] = result
            if on_result:
                on_result(result)

    # loaded while the files are checked; joined on the way out, also with nothing to run
    loading = ((embedder or EmbedderResource()).load_tokenizer_in_background()
               if "rendered_chunks" in names[:len(selected)] else None)
    try:
        registered: list[tuple[Path, str | None, str | None]] = []  # path, hash, read error
        for path in paths:
            try:
                registered.append((path, store.register_source(path)[0], None))
            except DataDirError as exc:
                registered.append((path, None, str(exc)))
            except IsADirectoryError:
                registered.append((path, None, "a folder, not a file: pass the files in it, "
                                               f"e.g. {path / '*.xlsx'}"))
            except OSError as exc:
                registered.append((path, None, f"cannot read file: {exc.strerror or exc}"))
        todo: list[_Item] = []
        with open_instance(store) as instance:
            new = set(add_partition_keys(instance, [h for _, h, _ in registered if h]))
            for k, (path, workbook_hash, error) in enumerate(registered):
                if workbook_hash is None:
                    done(k, IngestResult(str(path), "", "failed", error=error))
                elif workbook_hash in seen:
                    first = seen[workbook_hash]
                    same = Path(first).resolve() == path.resolve()
                    done(k, IngestResult(str(path), workbook_hash, "duplicate",
                                         error="the same file given twice" if same
                                         else f"same bytes as {first}",
                                         counts=latest_counts(instance, workbook_hash)))
                else:
                    seen[workbook_hash] = str(path)
                    stale = (selected if workbook_hash in new or force else
                             tuple(stale_assets(instance, workbook_hash, list(selected), store)))
                    if not stale:
                        done(k, _unchanged(instance, store, str(path), workbook_hash))
                    else:  # a known file: only its stale assets and what follows them
                        todo.append(_Item(k, str(path), workbook_hash, stale,
                                          store.blob_path(workbook_hash).stat().st_size))
            if batch_files is None:  # one file a run once the instance holds many keys
                batch_files = files_per_run(store.partition_count(), len(todo), BATCH_FILES)
            if todo and (jobs > 1 or celery_broker):
                fan_out(instance, store, todo, jobs, embedder, passwords, max_tokens,
                        celery_broker, done, batch_files, on_stopping)
            elif todo:
                runner = _Runner(instance, store, embedder, passwords, _run_config(max_tokens))
                materialize_batches(runner, todo, done, stop, batch_files=batch_files)
            record_files(instance, [CatalogFile(r.path, r.workbook_hash, r.status, r.run_id)
                                    for r in results.values()
                                    if r.workbook_hash and r.status != "interrupted"],
                         {r.workbook_hash for r in results.values() if r.status != "unchanged"})
        if todo and chunk_embeddings in selected:
            fold_full_text_index(store)
    finally:
        if loading:
            loading.join()
    return [results[k] for k in sorted(results)]


#: The assets that read the file itself, and the normalizer that fills its merged ranges
#: within the limits: a typed error of theirs is the file's, not the code's.
_READING_ASSETS = ALL_ASSETS[:3]


def _input_error(instance: DagsterInstance, store: DataStore, workbook_hash: str,
                 asset) -> str | None:
    """``code: message`` of the typed error with which ``asset``, one of
    :data:`_READING_ASSETS` (``workbook``: e.g. encrypted, not a spreadsheet; ``parsed_sheets``:
    e.g. a shared string table that is not well-formed XML; ``normalized_grids``: merged ranges
    filling more text than the limit), failed for the partition and was never materialized;
    ``None`` otherwise (an error issue of a materialized asset is a file read in part)."""
    if asset not in _READING_ASSETS:
        return None
    try:
        issues = store.read_table("extraction_issues", workbook_hash,
                                  asset=asset.key.path[-1]).to_pylist()
    except FileNotFoundError:
        return None
    errors = [i for i in issues if i["severity"] == "error"]
    # the instance is asked only about an asset that recorded an error (stale_assets just
    # fetched its latest materialization, but says only that it is stale)
    if not errors or instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=[workbook_hash]),
            limit=1).records:
        return None
    return f"{errors[0]['code']}: {errors[0]['message']}"


def refresh_stale(
    data_dir: str | Path,
    embedder: EmbedderResource | None = None,
    on_result: Callable[[IngestResult], None] | None = None,
) -> list[IngestResult]:
    """Re-materialize, for every known partition, only its stale assets (see
    :func:`stale_assets`): after a code version is bumped, or when an ingest stopped early
    (``--until``), and the LanceDB units of partitions whose rows are missing or damaged (see
    :func:`~extraction_assets.app.verify.units_to_rebuild`), in batches as
    :func:`ingest_paths` does. Parquet files whose footer does not read are moved to the
    quarantine first (:func:`~extraction_assets.store.integrity.quarantine_damaged`): their
    partitions are reported ``damaged`` and left for ``repair``. Partitions that are up to
    date are reported ``unchanged``; those whose file cannot be read (a typed error of the
    ``workbook`` or ``parsed_sheets`` asset, which then has no materialization) are reported
    ``unreadable`` and not retried. An interrupt (Ctrl-C) stops the run in progress, reported
    ``interrupted``, and the refresh with it (the partitions not started are ``interrupted``
    with :data:`NOT_STARTED`, and not passed to ``on_result``). Returns the results in
    partition key order."""
    from extraction_assets.app.verify import rebuild_warehouse, units_to_rebuild

    store = DataStore(data_dir)
    results: dict[int, IngestResult] = {}
    stop = threading.Event()

    def done(k: int, result: IngestResult) -> None:
        if result.status == "interrupted":
            stop.set()
        results[k] = result
        if on_result and result.error != NOT_STARTED:
            on_result(result)

    loading = (embedder or EmbedderResource()).load_tokenizer_in_background()
    try:
        quarantine_damaged(store)  # a damaged file leaves the views; its partition is skipped
        rebuild_warehouse(store)  # a DuckDB file that does not open holds only the views
        with open_instance(store) as instance:
            todo: list[_Item] = []
            keys = sorted(instance.get_dynamic_partitions(workbook_partitions.name))
            units_lost = units_to_rebuild(instance, store, keys)[0]
            for k, workbook_hash in enumerate(keys):
                stale = stale_assets(instance, workbook_hash, store=store)
                if not stale and workbook_hash in units_lost:
                    stale = [chunk_embeddings]  # its LanceDB rows are gone or damaged
                try:
                    path = store.source_of(workbook_hash)["source_path"]
                except KeyError:
                    path = workbook_hash
                if damaged := damaged_result(store, path, workbook_hash):
                    done(k, damaged)
                elif not stale:
                    done(k, _unchanged(instance, store, path, workbook_hash, True))
                elif error := _input_error(instance, store, workbook_hash, stale[0]):
                    done(k, IngestResult(path, workbook_hash, "unreadable", error=error))
                else:
                    blob = store.blob_path(workbook_hash)
                    todo.append(_Item(k, path, workbook_hash, tuple(stale),
                                      blob.stat().st_size if blob.exists() else 0))
            if todo:
                runner = _Runner(instance, store, embedder, None, _run_config(None))
                materialize_batches(runner, todo, done, stop,
                                    files_per_run(len(keys), len(todo), BATCH_FILES))
        fold_full_text_index(store)  # also what an interrupted ingest left unfolded
    finally:
        loading.join()
    return [results[k] for k in sorted(results)]


def fold_full_text_index(store: DataStore) -> None:
    """Fold the retrieval units the runs just ended wrote into the LanceDB full-text index
    (:meth:`~extraction_assets.search.vectors.VectorStore.fold_index`), so that a search scores
    them on the same scale as the others; nothing without a LanceDB folder. A failure is a
    ``RuntimeWarning`` (the files are ingested; a later ``refresh`` folds them)."""
    if not store.lancedb_uri.exists():
        return
    from extraction_assets.search.vectors import VectorStore

    try:
        VectorStore(store.lancedb_uri).fold_index()
    except Exception as exc:  # noqa: BLE001 - the files are in; say what is left to do
        warnings.warn(f"the full-text index was not brought up to date ({error_line(exc)}); "
                      "`extraction-assets refresh` does it", RuntimeWarning, stacklevel=2)


def fan_out(instance: DagsterInstance, store: DataStore, items: list[_Item], jobs: int,
            embedder: EmbedderResource | None, passwords: list[str] | None,
            max_tokens: int | None, celery_broker: str | None,
            done: Callable[[int, IngestResult], None], batch_files: int = BATCH_FILES,
            on_stopping: Callable[[], None] | None = None) -> None:
    """Materialize ``items`` in batches of at most ``batch_files`` files, ``jobs`` at a time,
    through Dagster's executors (see :mod:`extraction_assets.app.batches`); ``done`` gets each
    file's result as its batch reports it."""
    from extraction_assets.app.batches import run_batches

    order = partition_positions(instance, [item.workbook_hash for item in items])
    batches = plan_batches(items, order, jobs, batch_files=batch_files)
    run_batches(instance, store, batches, jobs, embedder, passwords, max_tokens, celery_broker,
                done, on_stopping)
