"""The vector-index benchmark in its smallest form, so the harness cannot rot: a few thousand
synthetic units through every phase, JSON out. Nothing here is timed; it checks that every
phase ran, that the index was built and folded, and the counts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tools.bench.vectors import SyntheticUnits, app

pytestmark = pytest.mark.slow  # runs the benchmark


def test_synthetic_units_are_deterministic_unit_vectors_with_texts():
    units = SyntheticUnits(2_000, dim=96, seed=3)
    h, rows, vectors = units.partition(1, 50)
    again = SyntheticUnits(2_000, dim=96, seed=3).partition(1, 50)
    assert (h, rows) == again[:2] and np.array_equal(vectors, again[2])
    assert vectors.shape == (50, 96) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert len({row["unit_id"] for row in rows}) == 50
    assert {row["workbook_hash"] for row in rows} == {h}
    assert " > " in rows[0]["text"] and ": " in rows[0]["text"]
    [(vector, text)] = units.queries(1)
    assert vector.shape == (96,) and " of " in text and " in " in text


def test_smallest_vector_bench_run_measures_every_phase(tmp_path):
    out = tmp_path / "vectors.json"
    result = CliRunner().invoke(app, [
        "--units", "3000", "--partitions", "3", "--fresh", "300", "--queries", "3",
        "--workdir", str(tmp_path / "work"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    results = json.loads(out.read_text())
    assert (results["units"], results["fresh_units"], results["queries"]) == (3000, 300, 3)
    for phase in ("write", "brute", "build", "indexed", "fresh", "fold", "folded"):
        assert results[phase]["seconds"] > 0, phase
    for phase in ("brute", "indexed", "fresh", "folded"):
        for mode in ("hybrid", "vector"):
            latency = results[phase][mode]
            assert 0 < latency["median_ms"] <= latency["p95_ms"] <= latency["max_ms"]
    for phase in ("indexed", "fresh", "folded"):
        assert results[phase]["recall_at_10"] >= 0.95
    assert results["fresh"]["unindexed_rows"] == 300 and results["folded"]["unindexed_rows"] == 0
    assert results["fresh"]["fresh_found"] == 1.0
    [target] = results["targets"]  # below 1M units, only the recall applies
    assert target.startswith("met: recall@10 >= 0.95")
