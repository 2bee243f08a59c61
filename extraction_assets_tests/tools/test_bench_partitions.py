"""The partitions benchmark in its smallest form, so the harness cannot rot: two small prepared
instances, two workbooks, one timed ingest (a Dagster run per file) into a copy of each.
Nothing here is timed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from extraction_assets.app.ingest import open_instance
from extraction_assets.defs.catalog import file_names
from extraction_assets.defs.partitions import workbook_partitions
from extraction_assets.store.storage import DataStore
from tools.bench.partitions import app, random_keys

pytestmark = pytest.mark.integration  # runs the ingest command as processes


def test_partitions_bench_registers_the_keys_then_times_ingests_into_copies(tmp_path):
    work, out = tmp_path / "work", tmp_path / "partitions.json"
    result = CliRunner().invoke(app, ["--keys", "40", "--fresh-keys", "3", "--files", "2",
                                      "--rows", "5", "--repeat", "1", "--until", "workbook",
                                      "--batch-files", "1",
                                      "--work-dir", str(work), "--json", str(out)])
    assert result.exit_code == 0, result.output
    results = json.loads(out.read_text())
    assert set(results["register_s"]) == {"fresh", "loaded"}
    for name, n in (("fresh", 3), ("loaded", 40)):
        run = results["runs"][name]
        assert len(run["walls_s"]) == 1 and run["wall_s"] > 0 and run["cpu_s"] > 0
        assert list(run["steps_s"]) == ["workbook"] and run["runs"] == 2  # a run per file
        # the prepared folder keeps only its registered keys: each ingest went into a copy
        with open_instance(DataStore(work / f"{name}-{n}")) as instance:
            assert (instance.get_dynamic_partitions(workbook_partitions.name)
                    == random_keys(n, seed=n))
            assert len(instance.get_dynamic_partitions(file_names.name)) == n
            assert not instance.get_run_records()
    assert results["ratio"] == round(results["runs"]["loaded"]["wall_s"]
                                     / results["runs"]["fresh"]["wall_s"], 2)
    assert "target" not in results  # only at 100,000 keys
    assert "ratio loaded / fresh" in result.output
    assert len(set(random_keys(1000))) == 1000 and random_keys(3) == random_keys(3)
