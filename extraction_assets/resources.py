"""Dagster resources: where the data dir is (the embedder resource is in :mod:`.embedding`)."""

from __future__ import annotations

import os

from dagster import ConfigurableResource
from pydantic import Field

from extraction_assets.core.container import Limits
from extraction_assets.storage import DataStore, default_data_dir

#: Environment variable holding workbook passwords, one per line.
ENV_PASSWORDS = "EXTRACTION_ASSETS_PASSWORDS"


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
    max_cell_chars: int = Limits.max_cell_chars
    max_text_bytes: int = Limits.max_text_bytes
    max_styles: int = Limits.max_styles
    max_tree_bytes: int = Limits.max_tree_bytes

    def limits(self) -> Limits:
        """The configured :class:`~.core.container.Limits`."""
        return Limits(**self.model_dump())


def _passwords_from_env() -> list[str]:
    value = os.environ.get(ENV_PASSWORDS, "")
    return [p for p in value.split("\n") if p]


class PasswordsResource(ConfigurableResource):
    """Passwords tried, in order, on password-protected workbooks (never logged or stored).
    Default: the lines of ``$EXTRACTION_ASSETS_PASSWORDS``; without any, an encrypted workbook
    fails its partition as ``encrypted`` ("password required")."""

    passwords: list[str] = Field(default_factory=_passwords_from_env,
                                 description="Workbook passwords to try, in order.")
