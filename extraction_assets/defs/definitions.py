"""The Dagster ``Definitions`` of the project (loaded by ``workspace.yaml``)."""

from __future__ import annotations

import os

from dagster import Definitions, ExecutorDefinition

from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.catalog import files_catalog
from extraction_assets.defs.io_manager import IO_MANAGER_KEY, TablesIOManagerFactory, tables_read
from extraction_assets.defs.resources import (
    DataStoreResource,
    EmbedderResource,
    LimitsResource,
    PasswordsResource,
)
from extraction_assets.defs.sensors import (
    ENV_CELERY_BROKER,
    full_text_index_after_success,
    inbox_sensor,
    ingest_job,
    lineage_after_failure,
    lineage_after_success,
)
from extraction_assets.defs.trust_resources import trust_resources


def celery_executor_def(broker: str) -> ExecutorDefinition:
    """Dagster's Celery executor (``dagster-celery``) on ``broker``, which is also the result
    backend. A task is acknowledged once its step is done and given back to the queue when its
    worker is lost (``task_acks_late``, ``task_reject_on_worker_lost``), so a step whose worker
    was killed runs again on another one; the broker gives an unacknowledged task to another
    worker after ``visibility_timeout`` seconds (Redis; default 3600, above any step's time:
    ``$EXTRACTION_ASSETS_CELERY_VISIBILITY_TIMEOUT``)."""
    from dagster_celery import celery_executor

    timeout = int(os.environ.get("EXTRACTION_ASSETS_CELERY_VISIBILITY_TIMEOUT", "3600"))
    return celery_executor.configured({
        "broker": broker, "backend": broker,
        "config_source": {"task_acks_late": True, "task_reject_on_worker_lost": True,
                          "worker_prefetch_multiplier": 1,
                          "broker_transport_options": {"visibility_timeout": timeout}},
    }, name="celery")


def make_definitions(data_dir: str | None = None,
                     embedder: EmbedderResource | None = None,
                     passwords: list[str] | None = None,
                     celery_broker: str | None = None) -> Definitions:
    """Definitions with the data dir (default ``$EXTRACTION_ASSETS_HOME`` or ``./data``),
    embedder (default: the bundled local model), workbook passwords (default:
    ``$EXTRACTION_ASSETS_PASSWORDS``, one per line), the trust features' resources from
    ``<data-dir>/trust.toml`` (see :func:`~.trust_resources.trust_resources`) and, with
    ``celery_broker``, the jobs' steps run by Celery workers (default: Dagster's in-process or
    multiprocess executor, chosen by run config)."""
    storage = DataStoreResource(data_dir=data_dir) if data_dir else DataStoreResource()
    return Definitions(
        assets=[*ALL_ASSETS, files_catalog],
        jobs=[ingest_job],
        sensors=[inbox_sensor, lineage_after_success, lineage_after_failure,
                 full_text_index_after_success],
        resources={
            "storage": storage,
            IO_MANAGER_KEY: TablesIOManagerFactory(data_dir=storage.data_dir,
                                                   held_tables=tables_read(ALL_ASSETS)),
            "embedder": embedder or EmbedderResource(),
            "limits": LimitsResource(),
            "passwords": PasswordsResource(passwords=list(passwords))
            if passwords else PasswordsResource(),
            **trust_resources(storage.data_dir),
        },
        executor=celery_executor_def(celery_broker) if celery_broker else None,
    )


defs = make_definitions(celery_broker=os.environ.get(ENV_CELERY_BROKER) or None)
