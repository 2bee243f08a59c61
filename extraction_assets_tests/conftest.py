"""Shared fixtures: where the shared corpus, cases and labelled sets are, and one ingest of the
samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.paths import shared_dir

CORPUS = shared_dir("corpus")
CASES = shared_dir("cases")
LABELLED = shared_dir("labelled")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus (``$EXTRACTION_ASSETS_CORPUS``, default ``../shared/corpus``)."""
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    """The shared acceptance cases (``$EXTRACTION_ASSETS_CASES``, default ``../shared/cases``)."""
    if not (CASES / "EXPECTED.md").exists():
        pytest.skip(f"cases not found at {CASES}")
    return CASES


@pytest.fixture(scope="session")
def labelled_dir() -> Path:
    """The human-labelled sets (``$EXTRACTION_ASSETS_LABELLED``, default ``../shared/labelled``)."""
    if not (LABELLED / "deco" / "truth.json").exists():
        pytest.skip(f"labelled sets not found at {LABELLED}")
    return LABELLED


@pytest.fixture(scope="session")
def samples_ingest(tmp_path_factory):
    """The bundled samples ingested once through the real asset graph into a temp data dir."""
    from extraction_assets.app.ingest import ingest_paths
    from extraction_assets.app.samples import write_samples

    root = tmp_path_factory.mktemp("samples-data")
    paths = write_samples(root / "samples")
    results = ingest_paths(paths, root)
    return root, paths, results
