"""The search benchmark in its smallest form, so the harness cannot rot: a data dir made of
three generated layouts, one timed run of each mode. Nothing here is timed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from extraction_assets.store.storage import DataStore
from tools.bench.search import app

pytestmark = pytest.mark.slow  # ingests, then runs the search command as processes


def test_search_bench_makes_its_data_dir_and_times_the_command(tmp_path):
    data_dir, out = tmp_path / "data", tmp_path / "search.json"
    result = CliRunner().invoke(app, [str(data_dir), "--files", "3", "--repeat", "1",
                                      "--mode", "text", "--mode", "hybrid", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert len(list((data_dir / "layouts").glob("layout_*.xlsx"))) == 3
    assert DataStore(data_dir).lancedb_uri.is_dir()
    results = json.loads(out.read_text())
    assert (results["files"], results["repeat"]) == (3, 1) and results["ingest_s"] > 0
    assert list(results["runs"]) == ["ours"] and list(results["runs"]["ours"]) == ["text",
                                                                                   "hybrid"]
    for run in results["runs"]["ours"].values():
        assert len(run["walls_s"]) == 1 and run["wall_s"] > 0 and run["cpu_s"] > 0
        assert 50 < run["peak_rss_mb"] < 4000  # the interpreter, LanceDB, the model
    assert results["target"]["hybrid_wall_s"] == results["runs"]["ours"]["hybrid"]["wall_s"]
    assert "target: first hybrid answer <= 3 s" in result.output
