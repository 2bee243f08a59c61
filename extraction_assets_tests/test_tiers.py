"""The fast tier's rule can fail: a test marked neither ``slow`` nor ``integration`` that starts a
process or a Dagster run fails, even when the code under test catches the error; an
``integration`` test is left out of ``-m "not slow"``. Shown on a small test file run by pytest
itself (``pytester``, in this process) with this suite's conftest hooks."""

from __future__ import annotations

import pytest

CONFTEST = """
from extraction_assets_tests.conftest import (
    pytest_collection_modifyitems, pytest_runtest_call, pytest_runtest_setup)
"""

TESTS = """
import multiprocessing
import subprocess
import sys

import pytest
from dagster import asset, materialize


@asset
def one() -> int:
    return 1


def test_runs_a_command():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_catches_the_refusal():
    try:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    except BaseException:
        pass


def test_starts_a_worker_process():
    multiprocessing.get_context("spawn").Process(target=print).start()


def test_materializes_an_asset():
    assert materialize([one]).success


def test_reads_a_file(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    assert (tmp_path / "a.txt").read_text() == "x"


@pytest.mark.integration
def test_marked_integration():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""

MARKERS = """
[pytest]
markers =
    slow: slow
    integration: integration
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A folder holding the small test file, a conftest with this suite's hooks and the markers."""
    pytester.makeini(MARKERS)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_small=TESTS)
    return pytester


def test_the_fast_tier_fails_a_test_that_starts_a_process_or_a_dagster_run(suite):
    result = suite.runpytest("-m", "not slow", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4, deselected=1)
    result.stdout.fnmatch_lines_random([
        "*test_runs_a_command started a process (Popen.__init__) in the fast tier*",
        "*test_catches_the_refusal started a process (Popen.__init__) in the fast tier*",
        "*test_starts_a_worker_process started a process (*) in the fast tier*",
        "*test_materializes_an_asset started a Dagster run (DagsterInstance.create_run*",
    ])


def test_integration_tests_are_slow_tests_too(suite):
    slow = suite.runpytest("-m", "slow", "--collect-only", "-q", "-p", "no:cacheprovider")
    slow.stdout.fnmatch_lines(["test_small.py::test_marked_integration", "1/6 tests collected*"])
