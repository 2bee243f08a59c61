"""Shared fixtures: where the shared corpus, cases and labelled sets are, and one ingest of the
samples; the test tiers (``integration`` implies ``slow``) and the fast tier's guard."""

from __future__ import annotations

import multiprocessing.util
import os
import platform
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dagster import DagsterInstance

from extraction_assets.core.ocr import TESSERACT_ENV
from tools.paths import shared_dir

pytest_plugins = ["pytester"]  # test_tiers.py runs pytest on a small test file

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


# -- Test tiers ---------------------------------------------------------------------------------
# ``pytest -m "not slow"`` is the fast tier: no Dagster run, no process. A test that runs the asset
# graph or starts a process is marked ``integration`` (pyproject's markers say what each means);
# every integration test is also ``slow``, so ``-m "not slow"`` leaves both out. In a test marked
# neither, starting a Dagster run or a process fails the test, naming what it started.

#: What a test in the fast tier may not start: ``(owner, attribute, what it starts)``.
FAST_TIER_FORBIDS = (
    (DagsterInstance, "create_run_for_job", "a Dagster run"),
    (DagsterInstance, "create_run", "a Dagster run"),
    (subprocess.Popen, "__init__", "a process"),
    (os, "fork", "a process"),
    (os, "posix_spawn", "a process"),
    (os, "posix_spawnp", "a process"),
    (os, "system", "a process"),
    (multiprocessing.util, "spawnv_passfds", "a process"),
)


def refusal(item: pytest.Item, started: str) -> str:
    """The failure of a fast test ``item`` that started ``started`` (e.g. ``a process
    (Popen.__init__)``)."""
    return (f"{item.nodeid} started {started} in the fast tier: mark it @pytest.mark.integration "
            "(see pyproject's markers)")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Ask for the processor's name once, before the guard is on: the standard library runs
    ``uname -p`` for it once per process, on Docling's or the OpenAI client's first call."""
    platform.processor()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every ``integration`` test ``slow`` too, before ``-m`` selects (``tryfirst``)."""
    for item in items:
        if item.get_closest_marker("integration") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


@contextmanager
def fast_tier_guard(item: pytest.Item) -> Iterator[list[str]]:
    """While a test marked neither ``slow`` nor ``integration`` sets up or runs, each entry point
    of :data:`FAST_TIER_FORBIDS` fails it instead of starting anything (and OCR is off: Tesseract
    is a process); yields the list of what it
    tried to start, so that a failure the code under test caught still fails the test."""
    tried: list[str] = []
    if item.get_closest_marker("slow") or item.get_closest_marker("integration"):
        yield tried
        return

    def forbid(what: str, name: str):
        def refuse(*args, **kwargs):
            tried.append(f"{what} ({name})")
            pytest.fail(refusal(item, tried[-1]), pytrace=False)
        return refuse

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TESSERACT_ENV, "off")  # OCR is a process: the fast tier reads without it
        for owner, attribute, what in FAST_TIER_FORBIDS:
            if hasattr(owner, attribute):
                name = f"{getattr(owner, '__name__', owner)}.{attribute}"
                patch.setattr(owner, attribute, forbid(what, name))
        yield tried


def guarded(item: pytest.Item):
    """Run one phase (setup or call) of ``item`` under :func:`fast_tier_guard`."""
    with fast_tier_guard(item) as tried:
        result = yield
    if tried:
        pytest.fail(refusal(item, ", ".join(tried)), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """The fixtures a fast test sets up (``samples_ingest`` too) are guarded like its body."""
    return (yield from guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A fast test's body runs under :func:`fast_tier_guard`."""
    return (yield from guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    """A fast test's fixtures are torn down under :func:`fast_tier_guard` too (a ``monkeypatch``
    undone there restores what the guard had set, which the guard then undoes)."""
    return (yield from guarded(item))
