"""The Dagster ``Definitions`` of the project (loaded by ``workspace.yaml``)."""

from __future__ import annotations

from dagster import Definitions

from .assets import ALL_ASSETS
from .embedding import EmbedderResource
from .resources import DataStoreResource, LimitsResource
from .sensors import (
    inbox_sensor,
    ingest_job,
    lineage_after_failure,
    lineage_after_success,
)


def make_definitions(data_dir: str | None = None,
                     embedder: EmbedderResource | None = None) -> Definitions:
    """Definitions with the data dir (default ``$EXTRACTION_ASSETS_HOME`` or ``./data``) and
    embedder (default: the bundled local model) given."""
    storage = DataStoreResource(data_dir=data_dir) if data_dir else DataStoreResource()
    return Definitions(
        assets=ALL_ASSETS,
        jobs=[ingest_job],
        sensors=[inbox_sensor, lineage_after_success, lineage_after_failure],
        resources={
            "storage": storage,
            "embedder": embedder or EmbedderResource(),
            "limits": LimitsResource(),
        },
    )


defs = make_definitions()
