"""Dagster resources: where the data dir is (the embedder resource is in :mod:`.embedding`)."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from .core.container import Limits
from .storage import DataStore, default_data_dir


class DataStoreResource(ConfigurableResource):
    """The data dir holding the content-addressed store, Parquet tables, DuckDB views and
    LanceDB vectors. Defaults to ``$EXTRACTION_ASSETS_HOME`` or ``./data``."""

    data_dir: str = Field(default_factory=lambda: str(default_data_dir()),
                          description="Folder of all outputs (absolute or relative to the cwd).")

    def store(self) -> DataStore:
        """A :class:`~extraction_assets.storage.DataStore` for the configured folder."""
        return DataStore(self.data_dir)


class LimitsResource(ConfigurableResource):
    """Safety limits applied to every input file (see :class:`~.core.container.Limits`)."""

    max_parts: int = Limits.max_parts
    max_total_bytes: int = Limits.max_total_bytes
    max_part_bytes: int = Limits.max_part_bytes
    max_compression_ratio: float = Limits.max_compression_ratio
    max_sheets: int = Limits.max_sheets
    max_cells: int = Limits.max_cells
    max_merged_ranges: int = Limits.max_merged_ranges

    def limits(self) -> Limits:
        """The configured :class:`~.core.container.Limits`."""
        return Limits(**self.model_dump())
