"""Dagster resources: the data dir, the safety limits, workbook passwords and the embedder."""

from __future__ import annotations

import os
import threading
from typing import Any

from dagster import ConfigurableResource
from pydantic import Field, PrivateAttr

from extraction_assets.core.limits import Limits
from extraction_assets.search.embedding import (
    Embedder,
    Provider,
    make_embedder,
    tokenizer_loader,
)
from extraction_assets.store.storage import DataStore, default_data_dir

#: Environment variable holding workbook passwords, one per line.
ENV_PASSWORDS = "EXTRACTION_ASSETS_PASSWORDS"


class DataStoreResource(ConfigurableResource):
    """The data dir holding the content-addressed store, Parquet tables, DuckDB views and
    LanceDB vectors. Defaults to ``$EXTRACTION_ASSETS_HOME`` or ``./data``."""

    data_dir: str = Field(default_factory=lambda: str(default_data_dir()),
                          description="Folder of all outputs (absolute or relative to the cwd).")

    def store(self) -> DataStore:
        """A :class:`~extraction_assets.store.storage.DataStore` for the configured folder."""
        return DataStore(self.data_dir)


class LimitsResource(ConfigurableResource):
    """Safety limits applied to every input file (see :class:`~extraction_assets.core.limits.Limits`)."""

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
    max_nesting_depth: int = Limits.max_nesting_depth
    max_stream_bytes: int = Limits.max_stream_bytes
    max_image_pixels: int = Limits.max_image_pixels
    max_start_tag_bytes: int = Limits.max_start_tag_bytes
    max_ocr_images: int = Limits.max_ocr_images
    max_ocr_pixels: int = Limits.max_ocr_pixels

    def limits(self) -> Limits:
        """The configured :class:`~extraction_assets.core.limits.Limits`."""
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


class EmbedderResource(ConfigurableResource):
    """The configured :class:`~extraction_assets.search.embedding.Embedder` (built by
    :func:`~extraction_assets.search.embedding.make_embedder`).

    ``provider="local"`` (default) gives the bundled USE multilingual v3 model (512 dims, no
    network); ``model`` must then be ``None`` or its name, ``dimensions`` ``None`` or 512, and
    ``base_url`` unset; ``api_key_env`` and ``tokenizer_encoding`` are ignored.
    ``provider="openai"`` gives an embedder for OpenAI, Azure OpenAI or an OpenAI-compatible
    server at ``base_url``; the API key is read from the environment variable ``api_key_env``
    (``""`` = no key needed).

    Use ``get_embedder()`` in an asset; the embedder is built once per resource instance.
    Raises ``ValueError`` for contradictory config and ``EmbeddingError`` for a missing API key
    variable.
    """

    provider: Provider = Field(
        default="local",
        description="'local' (USE multilingual v3, in-process) or 'openai' (OpenAI-compatible API).")
    model: str | None = Field(
        default=None, description="Model/deployment name; openai default 'text-embedding-3-small'.")
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL incl. /v1 (openai provider only).")
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key; '' for servers that need no key.")
    dimensions: int | None = Field(
        default=None,
        description="Requested vector length (openai text-embedding-3); None = model default.")
    batch_size: int = Field(default=64, description="Texts per forward pass / HTTP request.")
    tokenizer_encoding: str = Field(
        default="cl100k_base", description="bpe_openai encoding for token counting (openai provider).")
    max_input_tokens: int | None = Field(
        default=None,
        description="Per-input token limit; None = provider default (openai 8191, local none).")

    _embedder: Any = PrivateAttr(default=None)

    def load_tokenizer_in_background(self) -> threading.Thread:
        """Start loading this configuration's tokenizer in a daemon thread and return the
        thread (:func:`~extraction_assets.search.embedding.tokenizer_loader`: ~0.4 s for the
        local model, whose ``sentencepiece`` library reads it without holding the GIL, so it
        overlaps the caller's own work on another core). A failure (e.g. an unknown encoding)
        is left for the first real use to raise and report. Join the thread before the
        process exits: an interpreter that exits while the C++ library is still reading aborts
        (``terminate called without an active exception``)."""
        load = tokenizer_loader(self.provider, self.tokenizer_encoding)

        def run() -> None:
            try:
                load()
            except Exception:  # noqa: BLE001 - raised again, and reported, where it is used
                pass

        thread = threading.Thread(target=run, name="tokenizer-load", daemon=True)
        thread.start()
        return thread

    def get_embedder(self) -> Embedder:
        """Build (once per resource instance) and return the configured embedder."""
        if self._embedder is None:
            self._embedder = make_embedder(
                self.provider, self.model, base_url=self.base_url, api_key_env=self.api_key_env,
                dimensions=self.dimensions, batch_size=self.batch_size,
                tokenizer_encoding=self.tokenizer_encoding,
                max_input_tokens=self.max_input_tokens)
        return self._embedder
