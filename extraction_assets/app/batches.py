"""``ingest --jobs N`` and ``--celery-broker``: batches of files materialized side by side by
Dagster's own executors.

One Dagster run, ``ingest_batches``, fans out one step per batch (``DynamicOut``); its executor
runs ``N`` steps at a time, each in a process of Dagster's multiprocess executor (forked from
its forkserver, with this module preloaded), or as a task on Celery workers. Each step
materializes its batch as an ordinary run of the asset graph in its own process
(:func:`~extraction_assets.app.ingest.materialize_batches`) and reports its files' results as
the metadata of its output (``results``), which the command reads from the step output events
of the instance's event log as they come.
Dagster runs at most one run at a time in a process: two runs started in threads of one
process can deadlock on the logging module's locks (Dagster configures logging for every run).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from dagster import (
    DagsterInstance,
    DynamicOut,
    DynamicOutput,
    JobDefinition,
    MetadataValue,
    Output,
    RunsFilter,
    build_reconstructable_job,
    execute_job,
    job,
    op,
)

from extraction_assets.app.ingest import (
    INTERRUPTED_RUN,
    NOT_STARTED,
    QUIET_LOGGERS,
    IngestResult,
    _Item,
    _run_config,
    _Runner,
    materialize_batches,
)
from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.resources import ENV_PASSWORDS, EmbedderResource
from extraction_assets.store.storage import DataStore

#: The metadata key of a batch step's output that holds its files' results (each an
#: ``IngestResult``'s fields and its index ``k``).
RESULTS_KEY = "results"
#: Run tag of the ``ingest_batches`` run of one command (a fresh id), to find it.
INGEST_TAG = "extraction_assets/ingest"
#: Seconds between two reads of the run's log.
POLL_S = 0.3

_ASSETS = {a.key.path[-1]: a for a in ALL_ASSETS}


@op(out=DynamicOut(dict), description="One output per batch of files.")
def plan(context):
    """The batches of the run's config (``ops: {plan: {config: {work: JSON}}}``), each with
    the settings every step needs."""
    work = json.loads(context.op_config["work"])
    for n, batch in enumerate(work["batches"]):
        yield DynamicOutput({**work["settings"], "items": batch}, mapping_key=_mapping_key(n))


def _mapping_key(n: int) -> str:
    """The mapping key of the ``n``-th batch (0-based)."""
    return f"batch_{n}"


def _step_key(n: int) -> str:
    """The key of the step that materializes the ``n``-th batch (0-based)."""
    return f"{materialize_batch.name}[{_mapping_key(n)}]"


@op(description="Materialize one batch of files: one run of the asset graph in this process.")
def materialize_batch(context, batch: dict) -> Output[int]:
    """Run :func:`~extraction_assets.app.ingest.materialize_batches` on the batch; the output
    (the number of files) carries their results as metadata (:data:`RESULTS_KEY`)."""
    store = DataStore(batch["data_dir"])
    embedder = EmbedderResource(**batch["embedder"]) if batch["embedder"] else None
    items = [_Item(i["k"], i["path"], i["workbook_hash"],
                   tuple(_ASSETS[name] for name in i["assets"]), i["size"])
             for i in batch["items"]]

    results: list[dict] = []

    def done(k: int, result: IngestResult) -> None:
        results.append({"k": k, **asdict(result)})

    runner = _Runner(context.instance, store, embedder, None, _run_config(batch["max_tokens"]))
    materialize_batches(runner, items, done, threading.Event())
    return Output(len(items), metadata={RESULTS_KEY: MetadataValue.json(results)})


def batches_job(celery_broker: str | None = None) -> JobDefinition:
    """The ``ingest_batches`` job: :func:`plan`, then :func:`materialize_batch` mapped over the
    batches; with ``celery_broker``, Dagster's Celery executor (see
    :func:`~extraction_assets.defs.definitions.celery_executor_def`), else the multiprocess
    one (its ``max_concurrent`` in the run config)."""
    from extraction_assets.defs.definitions import celery_executor_def

    executor = celery_executor_def(celery_broker) if celery_broker else None

    @job(name="ingest_batches", executor_def=executor,
         description="Materialize batches of files side by side (ingest --jobs N).")
    def ingest_batches():
        plan().map(materialize_batch)

    return ingest_batches


def _tells_interrupt(event) -> bool:
    """Whether a Dagster event of the run says it was interrupted: the multiprocess executor's
    engine event on a termination signal (metadata ``steps_interrupted``; a step process the
    signal reached while starting then fails as a crash, not an interrupt), or a failure
    whose message names the interrupt (the Celery executor, a step's ``KeyboardInterrupt``)."""
    if event.is_engine_event and "steps_interrupted" in event.engine_event_data.metadata:
        return True
    return event.is_failure and "Interrupt" in (event.message or "")


def run_batches(instance: DagsterInstance, store: DataStore, batches: list[list[_Item]],
                jobs: int, embedder: EmbedderResource | None, passwords: list[str] | None,
                max_tokens: int | None, celery_broker: str | None,
                done: Callable[[int, IngestResult], None],
                on_stopping: Callable[[], None] | None = None) -> None:
    """Execute the ``ingest_batches`` run in this thread (so that Dagster's executor gets the
    Ctrl-C) while a thread reads the files' results from its log and passes each to ``done``;
    files with no result when the run ends are ``interrupted`` after an interrupt (with
    :data:`INTERRUPTED_RUN` when their batch's step had started, else :data:`NOT_STARTED`),
    else ``failed`` with the run's error. ``on_stopping`` is called once when the run's log
    says it got an interrupt (its steps in progress then end)."""
    if passwords:  # the batches' processes read them from the environment, never the run
        os.environ[ENV_PASSWORDS] = "\n".join(passwords)
    settings = {"data_dir": str(Path(store.root).absolute()),
                "embedder": embedder.model_dump() if embedder else None,
                "max_tokens": max_tokens or 0}
    work = {"settings": settings, "batches": [
        [{"k": i.k, "path": i.path, "workbook_hash": i.workbook_hash, "size": i.size,
          "assets": [a.key.path[-1] for a in i.assets]} for i in batch] for batch in batches]}
    run_config: dict = {"ops": {"plan": {"config": {"work": json.dumps(work)}}},
                        **QUIET_LOGGERS}
    if not celery_broker:
        run_config["execution"] = {"config": {"multiprocess": {
            "max_concurrent": jobs,
            "start_method": {"forkserver": {"preload_modules": [__name__]}}}}}
    tag = uuid.uuid4().hex
    reported: dict[int, str] = {}  # index -> status
    started: set[str] = set()  # step keys of the batches whose step started
    stopping = threading.Event()  # set once on_stopping was called
    finished = threading.Event()

    def report() -> None:
        run_id, cursor = None, None  # read on from the last event seen, never the whole log
        while True:
            last = finished.is_set()
            if run_id is None:
                runs = instance.get_runs(filters=RunsFilter(tags={INGEST_TAG: tag}), limit=1)
                run_id = runs[0].run_id if runs else None
            page = instance.get_records_for_run(run_id, cursor=cursor) if run_id else None
            if page is not None:
                cursor = page.cursor
            for entry in (r.event_log_entry for r in (page.records if page else ())):
                if entry.dagster_event and entry.dagster_event.is_step_start:
                    started.add(entry.dagster_event.step_key)
                if (on_stopping and not stopping.is_set() and entry.dagster_event
                        and _tells_interrupt(entry.dagster_event)):
                    stopping.set()
                    on_stopping()
                if entry.dagster_event and entry.dagster_event.is_successful_output:
                    meta = entry.dagster_event.step_output_data.metadata
                    for data in meta[RESULTS_KEY].value if RESULTS_KEY in meta else ():
                        data = dict(data)
                        k = data.pop("k")
                        if k not in reported:
                            reported[k] = data["status"]
                            done(k, IngestResult(**data))
            if page is not None and page.has_more:
                continue
            if last:
                return
            finished.wait(POLL_S)

    reader = threading.Thread(target=report, name="ingest-results", daemon=True)
    reader.start()
    error = "the run of the batches failed"
    try:
        job = build_reconstructable_job(__name__, "batches_job",
                                        reconstructable_kwargs={"celery_broker": celery_broker})
        result = execute_job(job, instance, run_config=run_config, tags={INGEST_TAG: tag},
                             raise_on_error=False)
        interrupted = not result.success and any(map(_tells_interrupt, result.all_events))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        finished.set()
        reader.join()
    interrupted = interrupted or "interrupted" in reported.values()
    for n, batch in enumerate(batches):
        stopped = INTERRUPTED_RUN if _step_key(n) in started else NOT_STARTED
        for item in batch:
            if item.k not in reported:
                done(item.k, IngestResult(item.path, item.workbook_hash, "interrupted",
                                          error=stopped) if interrupted else
                     IngestResult(item.path, item.workbook_hash, "failed", error=error))
