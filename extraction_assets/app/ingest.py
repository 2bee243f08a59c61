"""Ingest files in-process: register each file's content hash as a partition and materialize the
asset graph for it on a local Dagster instance under ``<data-dir>/dagster``.

Used by the ``extraction-assets`` CLI and by tests; one file's failure never stops the others.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Callable, Iterable, Iterator

from dagster import AssetRecordsFilter, AssetSelection, DagsterInstance, materialize
from dagster._core.errors import DagsterExecutionInterruptedError
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from filelock import FileLock

from extraction_assets.app.instance_storage import PooledSqliteStorage
from extraction_assets.app.workers import start_forkserver
from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.definitions import make_definitions
from extraction_assets.defs.lineage import export_lineage
from extraction_assets.defs.partitions import add_partition_keys, workbook_partitions
from extraction_assets.defs.resources import EmbedderResource
from extraction_assets.store.storage import DataDirError, DataStore

QUIET_LOGGERS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

#: ``error`` of an ``interrupted`` result whose run was stopped, and of one never started
INTERRUPTED_RUN = ("stopped by an interrupt; the same command run again redoes what it did not "
                   "write")
NOT_STARTED = "not started: interrupted"


def open_instance(store: DataStore) -> DagsterInstance:
    """The Dagster instance of a data dir: SQLite storage under ``<data-dir>/dagster`` (or what
    a ``dagster.yaml`` placed in that folder configures, e.g. Postgres). Dagster's SQLite
    storage is opened as :class:`~extraction_assets.app.instance_storage.PooledSqliteStorage`: the
    same files, with connections kept open. Telemetry is off; a file lock serializes the
    creation of a new instance's schema across processes."""
    store.dagster_home.mkdir(parents=True, exist_ok=True)
    ref = InstanceRef.from_dir(str(store.dagster_home.absolute()),
                               overrides={"telemetry": {"enabled": False}})
    if (ref.storage_data.module_name, ref.storage_data.class_name) == (
            DagsterSqliteStorage.__module__, DagsterSqliteStorage.__name__):
        ref = ref._replace(storage_data=ConfigurableClassData(
            PooledSqliteStorage.__module__, PooledSqliteStorage.__name__,
            ref.storage_data.config_yaml))
    # several processes opening a new instance at once race to create its SQLite schema
    with FileLock(str(store.dagster_home / ".instance.lock"), timeout=600):
        return DagsterInstance.from_ref(ref)


@dataclass
class IngestResult:
    """Outcome of one file. ``status``: ``success``; ``failed``; ``duplicate`` (same bytes as an
    earlier file of the same call, named in ``error``); ``unchanged`` (every selected asset is
    already materialized for this content with the current code versions); ``unreadable``
    (``refresh`` only: the file failed with a typed input error before); ``interrupted`` (an
    interrupt, Ctrl-C or SIGTERM, stopped its run, whose ``run_id`` is set, or came before it
    started). Counts are the rows of the partition's tables."""

    path: str
    workbook_hash: str
    status: str
    run_id: str | None = None
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def _count(store: DataStore, table: str, workbook_hash: str) -> int:
    try:
        return store.read_table(table, workbook_hash).num_rows
    except FileNotFoundError:
        return 0


def _error_issues(store: DataStore, workbook_hash: str) -> int:
    """``extraction_issues`` of severity ``error`` that any asset recorded for one partition
    (e.g. a worksheet that is not well-formed XML: its cells after the fault are missing)."""
    folder = store.table_path("extraction_issues", workbook_hash).parent
    return sum(store.read_table("extraction_issues", workbook_hash, asset=path.parent.name)
               .column("severity").to_pylist().count("error")
               for path in sorted(folder.glob(f"*/{workbook_hash}.parquet")))


def summarize(store: DataStore, workbook_hash: str) -> dict[str, int]:
    """Sheets, tables, records and chunks written for one partition, and its ``errors``
    (issues of severity ``error``: the file was read, but not all of it)."""
    sheets = _count(store, "sheets", workbook_hash)
    try:
        kinds = store.read_table("blocks", workbook_hash).column("kind").to_pylist()
    except FileNotFoundError:
        kinds = []
    return {"sheets": sheets, "tables": kinds.count("table"),
            "records": _count(store, "records", workbook_hash),
            "chunks": _count(store, "chunks", workbook_hash),
            "errors": _error_issues(store, workbook_hash)}


def _error_chain(error) -> Iterator:
    """A Dagster ``SerializableErrorInfo`` and its causes, outermost first (none for ``None``)."""
    while error is not None:
        yield error
        error = error.cause


def _interrupted(result) -> bool:
    """Whether a failed run was stopped by an interrupt: a step or the run itself (e.g. while
    its resources were set up) failed with Dagster's ``DagsterExecutionInterruptedError``,
    which its in-process executor raises on SIGINT or SIGTERM."""
    for event in result.all_events:
        error = (event.step_failure_data.error if event.is_step_failure
                 else event.job_failure_data.error if event.is_job_failure else None)
        if any(e.cls_name == DagsterExecutionInterruptedError.__name__
               for e in _error_chain(error)):
            return True
    return False


def _failure_message(result) -> str:
    """One line naming the failed asset and the root cause of its failure."""
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data and data.user_failure_data.description:
                return f"{event.step_key}: {data.user_failure_data.description}"
            chain = list(_error_chain(data.error))
            if chain:
                root = chain[-1]
                lines = [line for line in root.message.strip().splitlines() if line.strip()]
                return f"{event.step_key}: {' '.join(lines[-2:]) if lines else root.cls_name}"
    return "run failed"


def stale_assets(instance: DagsterInstance, workbook_hash: str, assets=ALL_ASSETS) -> list:
    """The assets (in graph order) to re-materialize for a partition: from the first one whose
    latest materialization is missing, carries another code version than the current one, or is
    older than its upstream asset's (e.g. chunks re-made with ``--until``), through everything
    downstream of it. Empty when the partition is up to date."""
    upstream_time = 0.0
    for position, asset in enumerate(assets):
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=asset.key, asset_partitions=[workbook_hash]), limit=1
        ).records
        version = (records[0].asset_materialization.tags or {}).get("dagster/code_version") \
            if records else None
        if (version != asset.code_versions_by_key[asset.key]
                or records[0].timestamp < upstream_time):
            return list(assets[position:])
        upstream_time = records[0].timestamp
    return []


def _materialize(instance: DagsterInstance, store: DataStore, resources: dict, path: str,
                 workbook_hash: str, selection: AssetSelection, run_config: dict,
                 tags: dict[str, str]) -> IngestResult:
    """One Dagster run (in-process executor) of the selected assets for one partition, then its
    lineage rows. A run whose lineage cannot be written (e.g. the disk is full) is ``failed``:
    the next ingest writes the lineage of a partition that has none."""
    run = materialize(
        ALL_ASSETS, selection=selection, partition_key=workbook_hash, instance=instance,
        resources=resources, run_config=run_config, raise_on_error=False, tags=tags,
    )
    try:
        export_lineage(instance, store, workbook_hash)
    except Exception as exc:  # noqa: BLE001 - the disk full, the views locked: say so, go on
        unwritten = f"its lineage was not written: {error_line(exc)}"
    else:
        unwritten = None
    if not run.success and _interrupted(run):
        return IngestResult(path, workbook_hash, "interrupted", run.run_id, INTERRUPTED_RUN)
    if run.success and not unwritten:
        return IngestResult(path, workbook_hash, "success", run.run_id,
                            counts=summarize(store, workbook_hash))
    error = "; ".join(e for e in (None if run.success else _failure_message(run), unwritten) if e)
    return IngestResult(path, workbook_hash, "failed", run.run_id, error,
                        summarize(store, workbook_hash))


def error_line(exc: BaseException) -> str:
    """``Type: message`` of an exception on one line: its message's first line (SQLAlchemy's
    errors add one pointing to their documentation)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _unchanged(instance: DagsterInstance, store: DataStore, path: str,
               workbook_hash: str) -> IngestResult:
    """The result of a partition that is up to date; its lineage rows are written first when it
    has none (a run whose lineage write failed, e.g. on a full disk)."""
    if not store.table_path("lineage", workbook_hash).exists():
        try:
            export_lineage(instance, store, workbook_hash)
        except Exception as exc:  # noqa: BLE001 - still up to date; the lineage is what failed
            return IngestResult(path, workbook_hash, "failed", error="up to date, but its "
                                f"lineage was not written: {error_line(exc)}")
    return IngestResult(path, workbook_hash, "unchanged", counts=summarize(store, workbook_hash))


def _source_tags(path: Path) -> dict[str, str]:
    return {"extraction_assets/source_path": str(path.resolve())}


#: What a worker process of :func:`ingest_paths` keeps between files.
_WORKER: dict = {}


def _note_interrupt(signum: int, frame) -> None:
    """A worker's SIGINT handler between runs."""
    _WORKER["interrupted"] = True


def _watch_main_process(pid: int) -> None:
    """End this worker when the ingest process ``pid`` ends without stopping it (``kill -9``):
    a daemon thread waits on the process (a pidfd on Linux, else a poll each second), then
    sends this worker SIGTERM, which stops a run in progress as an interrupt (Dagster records
    the run as failed) and ends an idle worker, and exits after :data:`_ORPHAN_GRACE_S` in any
    case. The forkserver ends once its last worker has."""
    def wait() -> None:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # not Linux, or the process is gone already
            while _alive(pid):
                time.sleep(1.0)
        else:
            select.select([fd], [], [])
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(_ORPHAN_GRACE_S)
        os._exit(1)

    threading.Thread(target=wait, name="watch-ingest", daemon=True).start()


#: Seconds an orphaned worker's run has to stop after SIGTERM before the worker exits anyway.
_ORPHAN_GRACE_S = 10.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, under another user
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _start_worker(data_dir: str, embedder: dict | None, passwords: list[str] | None,
                  selected: list[str], run_config: dict, main_pid: int) -> None:
    _watch_main_process(main_pid)
    # an interrupt (Ctrl-C reaches the whole process group) between files is only noted: the
    # next file handed to this worker is then not started (see _worker_materialize)
    signal.signal(signal.SIGINT, _note_interrupt)
    embedder_resource = EmbedderResource(**embedder) if embedder else None
    loading = ((embedder_resource or EmbedderResource()).load_tokenizer_in_background()
               if "rendered_chunks" in selected else None)  # while the instance is opened
    store = DataStore(data_dir)
    instance = open_instance(store)
    # closed when the worker exits (a multiprocessing worker runs these finalizers, not atexit):
    # the kept SQLite connections checkpoint and remove their write-ahead logs
    Finalize(instance, instance.dispose, exitpriority=10)
    resources = make_definitions(str(store.root), embedder_resource, passwords).resources
    if loading:
        loading.join()
    _WORKER.update(store=store, instance=instance, run_config=run_config, resources=resources,
                   selection=AssetSelection.assets(
                       *[a for a in ALL_ASSETS if a.key.path[-1] in selected]))


def _worker_ready() -> None:
    """Submitted once per worker process when the pool starts, so that its start-up runs while
    the main process checks the files."""


def _worker_materialize(path: str, workbook_hash: str) -> IngestResult:
    w = _WORKER
    # while this file runs an interrupt stops it: Dagster's executor catches it during the
    # steps, and KeyboardInterrupt does elsewhere (creating the run, exporting its lineage)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if w.pop("interrupted", False):
            return IngestResult(path, workbook_hash, "interrupted", error=NOT_STARTED)
        return _materialize(w["instance"], w["store"], w["resources"], path, workbook_hash,
                            w["selection"], w["run_config"], _source_tags(Path(path)))
    except KeyboardInterrupt:
        return IngestResult(path, workbook_hash, "interrupted", error=INTERRUPTED_RUN)
    except Exception as exc:  # noqa: BLE001 - one file's failure never stops the others
        return IngestResult(path, workbook_hash, "failed", error=error_line(exc))
    finally:
        signal.signal(signal.SIGINT, _note_interrupt)
        # Dagster's executor gives SIGTERM the SIGINT handler when a run ends; the pool stops
        # a worker with SIGTERM when another one died
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def _worker_pool(size: int, store: DataStore, embedder: EmbedderResource | None,
                 passwords: list[str] | None, selected: list,
                 run_config: dict) -> Iterator[ProcessPoolExecutor | None]:
    """``size`` worker processes for :func:`ingest_paths` (``None`` when ``size`` is 0), started
    at once. They fork from a server process that imported Dagster and the stages
    (:func:`~extraction_assets.app.workers.start_forkserver`), not from this one, which runs
    Dagster's and LanceDB's threads (LanceDB is imported after the fork)."""
    if size < 1:
        yield None
        return
    with ProcessPoolExecutor(
            max_workers=size, mp_context=start_forkserver(), initializer=_start_worker,
            initargs=(str(store.root), embedder.model_dump() if embedder else None, passwords,
                      [a.key.path[-1] for a in selected], run_config, os.getpid())) as pool:
        for _ in range(size):  # the pool forks one process per task while none is idle
            pool.submit(_worker_ready)
        yield pool


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
) -> list[IngestResult]:
    """Materialize the asset graph for every file in ``paths``, one partition per content hash.

    Every file is hashed first; the hashes that are not partitions yet are added in batches
    (:func:`~extraction_assets.defs.partitions.add_partition_keys`). Files with the same bytes are
    processed once. A partition whose selected assets are all materialized with the current
    code versions is left alone unless ``force``. ``passwords`` are tried on password-protected
    files (default: ``$EXTRACTION_ASSETS_PASSWORDS``). ``until`` names the last asset to
    materialize (default: all six). ``jobs`` > 1 materializes that many partitions at once:
    this process and ``jobs - 1`` worker processes each take the next file as they finish one
    (the workers start as soon as the files are hashed when one of them is new to the data dir,
    so that their start-up runs while the files are checked), every run on the same instance
    and data dir (their writes meet on the file locks of the DuckDB views and the LanceDB
    table). ``on_result`` is called after each file (for progress output; in completion
    order). A missing or unreadable file is a ``failed`` result, not an error. An interrupt
    (Ctrl-C, SIGTERM) stops the runs in progress and starts no further file: those files are
    ``interrupted`` results, and a later ingest of the same files redoes only them.
    Returns one result per file, in the order given.

    Raises:
        ValueError: ``until`` is not one of the six asset names, or ``jobs`` < 1.
    """
    names = [a.key.path[-1] for a in ALL_ASSETS]
    if until is not None and until not in names:
        raise ValueError(f"unknown asset {until!r}; choose one of {', '.join(names)}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    paths = [Path(p) for p in paths]
    store = DataStore(data_dir)
    selected = ALL_ASSETS[: names.index(until) + 1] if until else ALL_ASSETS
    run_config: dict = dict(QUIET_LOGGERS)
    if max_tokens:
        run_config["ops"] = {"rendered_chunks": {"config": {"max_tokens": max_tokens}}}
    results: dict[int, IngestResult] = {}
    seen: dict[str, str] = {}
    reporting = threading.Lock()
    stop = threading.Event()  # set by an interrupt: no further file is started

    def done(k: int, result: IngestResult) -> None:
        if result.status == "interrupted":
            stop.set()
        with reporting:
            results[k] = result
            if on_result:
                on_result(result)

    with ExitStack() as stack:
        if "rendered_chunks" in names[:len(selected)]:  # loaded while the files are checked
            # joined on the way out, also with nothing to run: see load_tokenizer_in_background
            stack.callback((embedder or EmbedderResource()).load_tokenizer_in_background().join)
        registered: list[tuple[Path, str | None, str | None]] = []  # path, hash, read error
        first_seen = False
        for path in paths:
            try:
                workbook_hash, new_source = store.register_source(path)
                registered.append((path, workbook_hash, None))
                first_seen |= new_source
            except DataDirError as exc:
                registered.append((path, None, str(exc)))
            except OSError as exc:
                registered.append((path, None, f"cannot read file: {exc.strerror or exc}"))

        def start_workers(files: int) -> ProcessPoolExecutor | None:
            return stack.enter_context(_worker_pool(min(jobs, files) - 1, store, embedder,
                                                    passwords, selected, run_config))

        # a file new to the data dir will run: the workers start now, while the instance is
        # opened and the files are checked; otherwise only once the checks found work
        early = first_seen or force
        pool = start_workers(len(registered)) if early else None
        todo: deque[tuple[int, Path, str]] = deque()
        with open_instance(store) as instance:
            new = set(add_partition_keys(instance, [h for _, h, _ in registered if h]))
            for k, (path, workbook_hash, error) in enumerate(registered):
                if workbook_hash is None:
                    done(k, IngestResult(str(path), "", "failed", error=error))
                elif workbook_hash in seen:
                    done(k, IngestResult(str(path), workbook_hash, "duplicate",
                                         error=f"same bytes as {seen[workbook_hash]}",
                                         counts=summarize(store, workbook_hash)))
                else:
                    seen[workbook_hash] = str(path)
                    if (workbook_hash not in new and not force
                            and not stale_assets(instance, workbook_hash, selected)):
                        done(k, _unchanged(instance, store, str(path), workbook_hash))
                    else:
                        todo.append((k, path, workbook_hash))
            if not early:
                pool = start_workers(len(todo))
            taking = threading.Lock()

            def take() -> tuple[int, Path, str] | None:
                with taking:
                    return todo.popleft() if todo and not stop.is_set() else None

            def feed() -> None:  # keeps one worker process busy
                while (item := take()) is not None:
                    k, path, workbook_hash = item
                    try:
                        result = pool.submit(_worker_materialize, str(path), workbook_hash).result()
                    except Exception as exc:  # noqa: BLE001 - a worker that died fails its file
                        result = IngestResult(str(path), workbook_hash, "failed",
                                              error=f"worker process failed: {exc}")
                    done(k, result)

            feeders = [threading.Thread(target=feed, daemon=True)
                       for _ in range(min(jobs, len(todo)) - 1)]
            for feeder in feeders:
                feeder.start()
            # this process materializes partitions too, with its instance and definitions
            resources = make_definitions(str(store.root), embedder, passwords).resources
            selection = AssetSelection.assets(*selected)
            item = None
            try:
                while (item := take()) is not None:
                    k, path, workbook_hash = item
                    try:
                        result = _materialize(instance, store, resources, str(path),
                                              workbook_hash, selection, run_config,
                                              _source_tags(path))
                    except Exception as exc:  # noqa: BLE001 - one file never stops the others
                        result = IngestResult(str(path), workbook_hash, "failed",
                                              error=error_line(exc))
                    done(k, result)
                    item = None
            except KeyboardInterrupt:  # outside the part of a run where Dagster catches it
                stop.set()
                if item is not None and item[0] not in results:
                    done(item[0], IngestResult(str(item[1]), item[2], "interrupted",
                                               error=INTERRUPTED_RUN))
            for feeder in feeders:
                feeder.join()
            for k, path, workbook_hash in todo:
                done(k, IngestResult(str(path), workbook_hash, "interrupted", error=NOT_STARTED))
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
    (``--until``). Partitions that are up to date are reported ``unchanged``; those whose file
    cannot be read (a typed error of the ``workbook`` or ``parsed_sheets`` asset, which then
    has no materialization) are reported ``unreadable`` and not retried. An interrupt (Ctrl-C)
    stops the run in progress, reported ``interrupted``, and the refresh with it."""
    store = DataStore(data_dir)
    resources = make_definitions(str(store.root), embedder).resources
    results = []
    with ExitStack() as stack:
        # loaded while the stale assets are looked up; joined on the way out
        stack.callback(resources["embedder"].load_tokenizer_in_background().join)
        instance = stack.enter_context(open_instance(store))
        for workbook_hash in sorted(instance.get_dynamic_partitions(workbook_partitions.name)):
            stale = stale_assets(instance, workbook_hash)
            try:
                path = store.source_of(workbook_hash)["source_path"]
            except KeyError:
                path = workbook_hash
            if not stale:
                result = _unchanged(instance, store, path, workbook_hash)
            elif error := _input_error(instance, store, workbook_hash, stale[0]):
                result = IngestResult(path, workbook_hash, "unreadable", error=error)
            else:
                try:
                    result = _materialize(instance, store, resources, path, workbook_hash,
                                          AssetSelection.assets(*stale), dict(QUIET_LOGGERS),
                                          {"extraction_assets/refresh": "stale"})
                except Exception as exc:  # noqa: BLE001 - one partition never stops the others
                    result = IngestResult(path, workbook_hash, "failed",
                                          error=error_line(exc))
            results.append(result)
            if on_result:
                on_result(result)
            if result.status == "interrupted":
                break
    return results
