"""The Dagster ``Definitions`` of the project (loaded by ``workspace.yaml``)."""

from __future__ import annotations

from dagster import Definitions

from extraction_assets.defs.assets import ALL_ASSETS
from extraction_assets.defs.resources import (
    DataStoreResource,
    EmbedderResource,
    LimitsResource,
    PasswordsResource,
)
from extraction_assets.defs.sensors import (
    inbox_sensor,
    ingest_job,
    lineage_after_failure,
    lineage_after_success,
)
from extraction_assets.defs.trust_resources import trust_resources


def make_definitions(data_dir: str | None = None,
                     embedder: EmbedderResource | None = None,
                     passwords: list[str] | None = None) -> Definitions:
    """Definitions with the data dir (default ``$EXTRACTION_ASSETS_HOME`` or ``./data``),
    embedder (default: the bundled local model) and workbook passwords (default:
    ``$EXTRACTION_ASSETS_PASSWORDS``, one per line) given; the trust features' resources
    from ``<data-dir>/trust.toml`` (see :func:`~.trust_resources.trust_resources`)."""
    storage = DataStoreResource(data_dir=data_dir) if data_dir else DataStoreResource()
    return Definitions(
        assets=ALL_ASSETS,
        jobs=[ingest_job],
        sensors=[inbox_sensor, lineage_after_success, lineage_after_failure],
        resources={
            "storage": storage,
            "embedder": embedder or EmbedderResource(),
            "limits": LimitsResource(),
            "passwords": PasswordsResource(passwords=list(passwords))
            if passwords else PasswordsResource(),
            **trust_resources(storage.data_dir),
        },
    )


defs = make_definitions()
